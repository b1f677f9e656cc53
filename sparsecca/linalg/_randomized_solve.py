"""The randomized solver of :class:`._engine.CCAEngine`: its low-rank model of C_xx, solved
as it is or refined by LOBPCG on the exact pencil until the error estimate meets tol."""

from __future__ import annotations

import time
import warnings

import numpy as np

from ._lobpcg import lobpcg_fits
from ._preconditioning import _preconditioner_used
from ._thresholds import active

__all__ = []


def solve_randomized(self, cross, yinv, tau, k, strategy, omega_max=None):
    """The low-rank-plus-ridge model of C_xx, corrected until the error estimate <= tol.

    The model's own solve is exact when the rank exhausts X and accurate when the
    spectrum of X^T X decays.  Count data decay slowly: at ranks in the thousands the
    model's correlations are still far off, and even an exact Rayleigh-Ritz step on the
    top few thousand singular directions of both views leaves them percents off (the
    canonical directions of rare, deterministic features lie in the tail; see
    docs/engine.md).  So, when the block is thin (:func:`lobpcg_fits`) and the rank does
    not exhaust X, LOBPCG on the exact pencil, preconditioned by the model and started
    from the model's solution, runs until the error estimate meets ``tol`` (no step at
    all when the model already does).  Otherwise, or with ``adaptive_rank=False`` or an
    explicit strategy other than 'lobpcg', the model is solved as it is and its rank
    doubles up to ``max_rank`` until the a-posteriori bound meets ``tol``.
    """
    f = self.xfactor
    cap = min(self.max_rank, f.n_samples, f.n_features)
    d1, d2 = self.n_merged_features_, self.Y.shape[1]
    refine = strategy == "lobpcg" or (self.adaptive_rank and strategy == "auto"
                                      and lobpcg_fits(d1, d2, k))
    # as a preconditioner the factor need not be large (a larger one saves hardly any
    # LOBPCG step and costs more than the steps it saves)
    t = active()
    r = min(cap, max(t.randomized_refine_rank if refine else t.randomized_start_rank, 2 * k))
    r = r if self.adaptive_rank else cap
    # resume from the rank an earlier solve (other tau or M) ended with
    r = min(cap, max(r, getattr(self, "_last_rank", 0)))
    history = []
    if refine and f.rank_ < r:
        # a preconditioner needs the dominant subspace only roughly: one pass of the
        # range finder, no power iteration (which would cost time and save no LOBPCG
        # step)
        t0 = time.perf_counter()
        f._lowrank_of(r, None, block_size=r, n_iter=0)
        self._say(f"randomized factor of X^T X: rank {f.rank_} in "
                  f"{time.perf_counter() - t0:.1f} s")
    while True:
        if refine:
            # the factor is formed above; the model is solved as it is only when exact
            exhausted = f.range_error_ == 0.0 and r >= f.rank_
            if not exhausted:
                break
        xinv = self._x_inverse(tau, rank=r)
        exhausted = f.range_error_ == 0.0 and xinv.rank_ >= f.rank_
        res = self._reduce(xinv, yinv, cross, k, strategy, tau, omega_max, refine=False)
        err = _error_estimate(res)
        history.append((xinv.rank_, err))
        if err <= self.tol or exhausted or r >= cap:
            break
        r = min(2 * r, cap)
    self._last_rank = r
    n_refine = 0
    if refine and not exhausted:
        # the factor with the diagonal tail: the identity tail (the model's choice when
        # n < d1, exact on the null space of X) preconditions LOBPCG poorly (on text
        # views it may not converge in lobpcg_maxiter steps where the diagonal tail does
        # in tens)
        xinv = self._precondition_exactly(self._x_inverse(tau, rank=r, tail="diagonal"),
                                          tau)
        # LOBPCG's start is the block of the previous solve (a tau grid), or else the
        # model's solution (the top eigenvectors of its Galerkin matrix, or a
        # randomized SVD of its whitened operator)
        res = self._reduce(xinv, yinv, cross, k, "lobpcg", tau, omega_max)
        self._keep_warm(res)
        n_refine = res.n_iter
        err = _error_estimate(res)
        history.append((xinv.rank_, err))
    if err > self.tol:
        if exhausted:
            # the model spans X, but its 1/tau tail magnifies the factor's rounding (a
            # rank-12 X at tau = 1e-10: 4e-3 off, estimate 0.11; at 1e-14 garbage)
            why = (f"although its low-rank model spans X (rank {xinv.rank_}): at tau = "
                   f"{tau:g} the model's 1/tau tail magnifies the rounding of its factor. "
                   f"Use solver='dense' or 'iterative', or a larger tau")
        else:
            what = ("after LOBPCG refinement" if refine else
                    f"at the largest allowed rank {xinv.rank_} (max_rank)")
            why = (f"{what}; the correlations are lower bounds of the exact ones. Use "
                   f"solver='iterative' for an exact solve or raise max_rank")
        warnings.warn(f"randomized solver: estimated relative error {err:.3g} > tol = "
                      f"{self.tol:g} {why}", RuntimeWarning, stacklevel=3)
    res.__dict__.update(solver="randomized", error_estimate=err, rank_history=history,
                        preconditioner=_preconditioner_used(xinv, res),
                        exact=exhausted, n_refine=n_refine)
    return res


def _rel_err(res):
    c = np.maximum(np.abs(res.correlations), 1e-300)
    return float(np.max(res.residual_norms / c))


def _error_estimate(res):
    """The first-order bound, tightened by LOBPCG's squared residual over the gap once
    LOBPCG converged (unconverged, its residual test failed and the quadratic estimate
    alone would understate the error), and by the ceiling of plain CCA's correlations
    (``ceiling_error``: a bound, not an estimate) when it is smaller."""
    err = _rel_err(res)
    if res.__dict__.get("lobpcg_converged", False):
        err = min(err, res.lobpcg_error)
    if "ceiling_error" in res.__dict__:
        err = min(err, res.ceiling_error)
    return err
