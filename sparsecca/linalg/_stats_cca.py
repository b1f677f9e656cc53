"""Regularised CCA from streamed statistics: :func:`cca_from_stats`."""

from __future__ import annotations

from ._gram import CrossCovariance, GramStats
from ._inverse import GramFactor, RegularizedInverse
from ._lobpcg import _default_oversamples
from ._randomized_solve import _error_estimate
from ._reduced import SolveOptions, solve_reduced
from ._thresholds import applied, check_thresholds
from ._validation import (
    check_n_components,
    check_random_state,
    check_tau,
    check_tolerance,
)

__all__ = ["cca_from_stats"]


def cca_from_stats(xstats, ystats, cross, n_components, tau, *, tol=1e-8, random_state=None,
                   thresholds=None):
    """Regularised CCA from the sufficient statistics of a corpus streamed in row blocks.

    C_xx is inverted by block conjugate gradients preconditioned by a low-rank-plus-diagonal
    factor of X^T X (products with the sparse Gram matrix only), C_yy by a dense Cholesky
    factor; the reduced problem is solved to ``tol`` (as ``solver='iterative'`` of
    :class:`CCAEngine`).  The block sums are exact, so the result equals the fit on the
    stacked rows.

    Parameters
    ----------
    xstats, ystats : GramStats
        The statistics of X and Y (:meth:`GramStats.from_blocks`), of the same rows.
    cross : CrossCovariance
        X^T Y of the same rows (:meth:`CrossCovariance.from_blocks`); its ``center`` sets
        the centring of the whole problem.
    n_components : int in [1, min(d1, d2)]
    tau : float in [0, 1]
        C = (1 - tau) Xc^T Xc + tau I for both views.
    tol : float in (0, 1), default 1e-8
        Relative accuracy target of the correlations (the conjugate gradient solves stop at
        relative residuals of sqrt(tol) / 10).
    random_state : None, int, numpy Generator or RandomState
        Seed of the randomized preconditioner.
    thresholds : Thresholds, optional
        The engine's numeric thresholds (None: the ones in force).

    Returns
    -------
    CCAResult
        Unpacking as ``A, B, omega``; ``correlations``, ``n_iter`` (the conjugate gradient
        iterations) and ``error_estimate`` among its attributes.

    Raises
    ------
    TypeError
        If ``xstats`` or ``ystats`` is not a GramStats, or ``cross`` not a CrossCovariance.
    ValueError
        If the three do not describe the same rows (sizes, sample counts), or for a bad
        ``n_components``, ``tau`` or ``tol``.

    See Also
    --------
    SparseCCA : the same problem from the data matrices.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import CrossCovariance, GramStats, SparseCCA, cca_from_stats
    >>> X = sp.random(400, 30, density=0.2, format="csr", random_state=0)
    >>> Y = sp.random(400, 8, density=0.4, format="csr", random_state=1)
    >>> halves = [(X[:200], Y[:200]), (X[200:], Y[200:])]
    >>> xstats = GramStats.from_blocks(x for x, _ in halves)
    >>> ystats = GramStats.from_blocks(y for _, y in halves)
    >>> cross = CrossCovariance.from_blocks(halves, center=True)
    >>> res = cca_from_stats(xstats, ystats, cross, 3, tau=0.5, random_state=0)
    >>> ref = SparseCCA(3, tau=0.5, center=True, solver="dense").fit(X, Y)
    >>> bool(np.allclose(res.correlations, ref.correlations_, rtol=1e-6))
    True
    """
    for name, stats in (("xstats", xstats), ("ystats", ystats)):
        if not isinstance(stats, GramStats):
            raise TypeError(f"{name} must be a GramStats, got {type(stats).__name__}")
    if not isinstance(cross, CrossCovariance):
        raise TypeError(f"cross must be a CrossCovariance, got {type(cross).__name__}")
    d1, d2 = xstats.n_features, ystats.n_features
    if tuple(cross.shape) != (d1, d2):
        raise ValueError(f"cross has shape {tuple(cross.shape)}; xstats has {d1} features and "
                         f"ystats {d2}, so cross must be ({d1}, {d2})")
    n = {xstats.n_samples, ystats.n_samples, getattr(cross, "n_samples", xstats.n_samples)}
    if len(n) != 1:
        raise ValueError(f"xstats has {xstats.n_samples} samples, ystats {ystats.n_samples}, "
                         f"cross {cross.n_samples}: all must come from the same rows")
    k = check_n_components(n_components, d1, d2)
    tau = check_tau(tau)
    tol = check_tolerance(tol, "tol")
    rng = check_random_state(random_state)
    center = bool(cross.center)
    with applied(check_thresholds(thresholds)):
        xinv = RegularizedInverse._trusted(GramFactor(xstats, center=center, random_state=rng),
                                           tau, "iterative", name="Cxx",
                                           tol=max(tol ** 0.5 / 10.0, 1e-14))
        yinv = RegularizedInverse._trusted(GramFactor(ystats, center=center, name="Y"), tau,
                                           "dense", name="Cyy")
        opts = SolveOptions(tol=tol, oversamples=_default_oversamples(k), random_state=rng)
        res = solve_reduced(xinv, yinv, cross, k, "auto", opts)
    res.__dict__.update(solver="iterative", error_estimate=_error_estimate(res))
    return res
