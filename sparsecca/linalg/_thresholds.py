"""Every numeric threshold of the engine, in one frozen dataclass.

The engine's rules (which solver ``'auto'`` picks, when LOBPCG stops or hands over, when a
product is split over threads, when BLAS is held to one thread, ...) read their limits
from the :class:`Thresholds` of the solve in progress.  A public entry point takes a
``thresholds`` argument (``None``: the defaults) and makes it the active instance for the
duration of the call with :func:`applied`; the code below it reads :func:`active`.  Tests
pass their own instance (``Thresholds(lobpcg_maxiter=5)``) instead of patching module
constants.

The active instance lives in a :class:`contextvars.ContextVar`, so concurrent solves in
different threads each see their own; :mod:`._threads` runs the worker half of a split
product in the caller's context.
"""

from __future__ import annotations

import contextvars
import dataclasses
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["DEFAULT_THRESHOLDS", "Thresholds", "active", "applied"]


@dataclass(frozen=True)
class Thresholds:
    """The engine's numeric thresholds (sizes, ratios, step counts); see docs/engine.md.

    Every field has the default the engine is tuned with; pass an instance with some
    fields changed (:meth:`replace`) to a solver's ``thresholds`` argument.

    Examples
    --------
    >>> from sparsecca.linalg._thresholds import Thresholds, active, applied
    >>> t = Thresholds().replace(lobpcg_maxiter=5)
    >>> with applied(t):
    ...     active().lobpcg_maxiter
    5
    >>> active().lobpcg_maxiter
    300
    """

    # -- solver choice (CCAEngine / SparseCCA) ---------------------------------------------
    #: 'auto' factors C_xx densely up to this many input features
    auto_dense_max: int = 8000
    #: C_yy is whitened by a dense Cholesky up to this many output features
    y_dense_max: int = 10_000
    #: default rank of the iterative solver's preconditioner (block CG / LOBPCG)
    precond_rank: int = 128
    precond_rank_lobpcg: int = 32
    #: smallest rank of the randomized factor when it preconditions LOBPCG (max(this, 2 k))
    randomized_refine_rank: int = 128
    #: the exact (dense) preconditioner is used up to this factor size ...
    exact_precond_max: int = 8192
    #: ... and always up to this one (its cost is negligible beside any solve)
    exact_precond_small: int = 2048
    #: default relative accuracy of the correlations, per solver
    tol_randomized: float = 1e-3
    tol_iterative: float = 1e-7
    #: _training_correlations computes directly when the mean would cancel more than this
    #: share of a projection's second moment
    moment_cancel_max: float = 1.0 - 1e-6

    # -- covariance products (_gram) -------------------------------------------------------
    pair_split_max_bytes: int = 64 * 2**20
    pair_output_split_min_flops: float = 1e8
    single_centred_max_amplification: float = 100.0
    centring_min_digits: int = 8
    centre_block_bytes: int = 32 * 2**20
    dense_max_dim: int = 20_000
    dense_cross_cache_bytes: int = 64 * 2**20

    # -- inverse operators (_inverse) ------------------------------------------------------
    chunk_max: int = 512
    sandwich_wide_min_flops: float = 1e9
    sandwich_dense_min_density: float = 0.05
    sandwich_dense_max_bytes: int = 256 * 2**20
    dense_single_thread_min: int = 16_000

    # -- the reduced problem (_reduced) ----------------------------------------------------
    full_max_d2: int = 2500
    eigh_full_max: int = 400
    lobpcg_maxiter: int = 300
    lobpcg_stall_window: int = 40
    lobpcg_switch_window: int = 15
    lobpcg_switch_steps: int = 10
    lobpcg_switch_margin: float = 0.5
    sparse_flops: float = 4e9
    dense_flops: float = 6e10
    factor_flops: float = 3e10
    lobpcg_dense_ct_bytes: int = 512 * 2**20
    lobpcg_drop: float = 1e-10
    lobpcg_single_tol: float = 1e-4
    lobpcg_drop_single: float = 1e-5
    lobpcg_jump_ratio: float = 10.0
    lobpcg_cap_slack: float = 1e-3
    certify_maxsteps: int = 40
    certify_stall_steps: int = 20

    # -- randomized SVD (_rsvd) ------------------------------------------------------------
    krylov_block: int = 16
    krylov_auto_basis: int = 3
    krylov_max_basis: int = 10
    subspace_max_iter: int = 32
    single_products_tol: float = 1e-4
    reorth_ratio: float = 0.5

    # -- threads (_threads) ----------------------------------------------------------------
    #: dense work whose narrow dimension is at most this runs on one BLAS thread
    small_blas_max: int = 4096
    #: products smaller than this many multiply-adds are not split over threads
    split_min_flops: int = 2_000_000

    def replace(self, **changes) -> Thresholds:
        """A copy with ``changes`` applied (unknown names raise ``TypeError``)."""
        return dataclasses.replace(self, **changes)


DEFAULT_THRESHOLDS = Thresholds()

_ACTIVE: contextvars.ContextVar[Thresholds] = contextvars.ContextVar(
    "sparsecca_linalg_thresholds", default=DEFAULT_THRESHOLDS)


def active() -> Thresholds:
    """The thresholds of the solve in progress (the defaults outside any)."""
    return _ACTIVE.get()


def check_thresholds(thresholds) -> Thresholds | None:
    """``thresholds`` if it is ``None`` or a :class:`Thresholds`, else ``TypeError``."""
    if thresholds is not None and not isinstance(thresholds, Thresholds):
        raise TypeError("thresholds must be None or a sparsecca.linalg.Thresholds, got "
                        f"{type(thresholds).__name__}")
    return thresholds


@contextmanager
def applied(thresholds: Thresholds | None):
    """Make ``thresholds`` the active instance inside the block (``None``: keep the current)."""
    if thresholds is None:
        yield active()
        return
    token = _ACTIVE.set(check_thresholds(thresholds))
    try:
        yield thresholds
    finally:
        _ACTIVE.reset(token)
