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
import functools
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["DEFAULT_THRESHOLDS", "Thresholds", "active", "applied", "with_own_thresholds"]


@dataclass(frozen=True)
class Thresholds:
    """The engine's numeric thresholds (sizes, ratios, step counts); see docs/engine.md.

    Every field has the default the engine is tuned with; pass an instance with some
    fields changed (:meth:`replace`) to a solver's ``thresholds`` argument.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg import CCAEngine, Thresholds
    >>> t = Thresholds().replace(auto_dense_max=4)
    >>> t.auto_dense_max, Thresholds().auto_dense_max
    (4, 8000)
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((50, 6)), rng.standard_normal((50, 3))
    >>> CCAEngine(X, Y).solver_, CCAEngine(X, Y, thresholds=t).solver_
    ('dense', 'iterative')
    """

    # -- solver choice (CCAEngine / SparseCCA) ---------------------------------------------
    #: 'auto' solves densely while min(n, d1) is at most this (O(min(n, d1)^3) flops, d^2
    #: memory): up to it a dense factorisation takes seconds, where an iterative solve on
    #: text views with nearly collinear features can need hundreds of iterations
    auto_dense_max: int = 8000
    #: C_yy is whitened by a dense Cholesky up to this many output features
    y_dense_max: int = 10_000
    #: rank of the low-rank whitener of a C_yy beyond ``y_dense_max`` (``lowrank_y``)
    lowrank_y_rank: int = 2048
    #: default rank of the iterative solver's preconditioner (block CG / LOBPCG; the second
    #: for LOBPCG when n > d1)
    precond_rank: int = 128
    precond_rank_lobpcg: int = 32
    #: smallest rank of the randomized factor when it preconditions LOBPCG (max(this, 2 k))
    randomized_refine_rank: int = 128
    #: first rank of the randomized model that is solved as it is (doubled until tol)
    randomized_start_rank: int = 256
    #: LOBPCG is preconditioned by the exact (dense Cholesky) inverse of C_xx instead of the
    #: low-rank-plus-diagonal model while its factor, of size min(n, d1), is at most this
    #: and no larger than C_yy's factor or ``exact_precond_small`` ...
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
    #: 'auto' uses the full Galerkin matrix up to this many output features
    full_max_d2: int = 2500
    #: the top-k eigenpairs of a symmetric matrix come from a full divide-and-conquer eigh up
    #: to this order (or for k >= order / 4), from the MRRR subset beyond
    eigh_full_max: int = 400
    #: LOBPCG steps before it gives up (and hands over, if it can)
    lobpcg_maxiter: int = 300
    #: LOBPCG counts as stalled after less than 2x progress of its largest relative
    #: residual over this many steps
    lobpcg_stall_window: int = 40
    #: the hand-over to the dense factor of C_xx: once this many steps have run, LOBPCG
    #: under the low-rank model hands over when the geometric rate of its best residual
    #: over the last this many steps predicts more than ``lobpcg_handover_steps`` further
    #: steps (a count of steps: no machine's speed enters the rule)
    lobpcg_handover_window: int = 15
    lobpcg_handover_steps: int = 17
    #: LOBPCG's dense C_xy W_y^T is kept up to this size (and d2 <= ``full_max_d2``)
    lobpcg_dense_ct_bytes: int = 512 * 2**20
    #: directions of the LOBPCG basis whose normalised Gram eigenvalue falls below this are
    #: dropped (numerically dependent); the second for float32 blocks
    lobpcg_drop: float = 1e-10
    lobpcg_drop_single: float = 1e-5
    #: LOBPCG keeps its blocks in float32 when tol >= this (it stops at relative residuals
    #: of sqrt(tol), far above float32 rounding; _finalize redoes the last step in float64)
    lobpcg_single_tol: float = 1e-4
    #: a step that raises a wanted correlation by more than this many times the error
    #: estimate means the gap is not settled (the estimate counts as the rise over it)
    lobpcg_jump_ratio: float = 10.0
    #: relative margin by which a Ritz value may exceed omega_max before LOBPCG counts as
    #: broken down (the rounding of float32 blocks)
    lobpcg_cap_slack: float = 1e-3
    #: columns whose relative residual is below this times the target leave the search block
    lobpcg_active_ratio: float = 1e-2
    #: preconditioned CG steps of one exact-norm check (certify) before it is undecided
    certify_maxsteps: int = 40
    #: certify gives up when a failed check's lower bound is above half that of a check at
    #: least this many LOBPCG steps earlier
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


def with_own_thresholds(method):
    """Decorate a public method to run under ``self.thresholds`` (None: keep the current)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with applied(self.thresholds):
            return method(self, *args, **kwargs)

    return wrapper
