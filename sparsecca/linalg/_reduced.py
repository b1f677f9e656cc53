"""The reduced (whitened) eigenproblem of Eq. 14-15 and its a-posteriori checks.

With W_x, W_y whiteners (W^T W = C^-1; W_y = L^-1 for Cyy = L L^T) the generalized
eigenproblem of Eq. 11 becomes the SVD of

    T = W_x C_xy W_y^T,   T = U diag(s) V^T,   omega = s^2,  b = W_y^T v,  a = W_x^T u,

equivalently the symmetric d2 x d2 problem  G = W_y C_xy^T C_xx^-1 C_xy W_y^T = V diag(omega) V^T
with a = C_xx^-1 C_xy b / sqrt(omega) (Eq. 15).  The strategies:

``full``, ``dual``, ``operator``, ``krylov``: the direct strategies and block Davidson on
              G (:mod:`._strategies`, which describes them).
``lobpcg``    an iterative ``xinv`` without inner solves: LOBPCG (Knyazev 2001) on the
              d1 x d1 pencil (C_xy C_yy^-1 C_xy^T, C_xx), whose top eigenpairs are (omega,
              a), preconditioned by the low-rank-plus-diagonal inverse of C_xx.  One C_xx
              product per iteration for the whole block instead of a block CG solve per
              Krylov expansion, so far fewer products with C_xx than 'krylov' needs.

Every result is finished by a Rayleigh-Ritz step in the exact metrics (so A^T Cxx A = I and
B^T Cyy B = I hold to rounding whatever the solver) and carries the residual norms of the
pencil of Eq. 11, an a-posteriori bound on the error of each correlation.

This module validates and dispatches: the direct strategies and 'krylov' are in
:mod:`._strategies`, the LOBPCG iteration in :mod:`._lobpcg`, its stopping and hand-over
rules in :mod:`._stopping` (where a hand-over goes: :func:`_dispatch`), the result and its
finishing step in :mod:`._result`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse.linalg import LinearOperator

from .._params import check_bool, check_float
from ._errors import RankDeficientError, SolverToleranceError
from ._inverse import RegularizedInverse
from ._lobpcg import WarmBlock, _default_oversamples, _lobpcg, _SinglePrecisionLoss, lobpcg_fits
from ._result import (
    CCAResult,
    _achieved_rank,
    _apply,
    _check_rank,
    _check_residuals,
    _finalize,
)
from ._stopping import _Stalled
from ._strategies import _dual_ready, solve_direct
from ._threads import small_blas
from ._thresholds import active, applied
from ._validation import (
    check_choice,
    check_n_components,
    check_positive_int,
    check_tolerance,
)

__all__ = ["CCAResult", "SolverToleranceError", "reduced_cca"]

STRATEGIES = ("auto", "full", "dual", "operator", "krylov", "lobpcg")


@dataclass
class SolveOptions:
    """The options of one :func:`reduced_cca` solve that the strategies read (validated).

    ``fallback``: a stall hands over to 'full' (set by 'auto'); ``krylov_start``: the
    :class:`._strategies.KrylovWarm` 'krylov' starts from (None: a randomized start)."""

    tol: float
    oversamples: int
    n_iter: object = "auto"
    random_state: object = None
    approx_xinv: object = None
    callback: object = None
    omega_max: float | None = None
    certify: bool = False
    fallback: bool = False
    krylov_start: object = None


def _check_reduced_cca(xinv, yinv, cross, n_components, strategy, oversamples, n_iter, tol,
                       random_state, approx_xinv, start, callback, omega_max, exact,
                       certify):
    """The arguments of :func:`reduced_cca`: O(1) checks of kinds, shapes, tau, centring and
    row counts (the three operators must describe one pair of views).  Returns (k, the
    strategy, the start, SolveOptions)."""
    for name, inv in (("xinv", xinv), ("yinv", yinv)):
        if not isinstance(inv, RegularizedInverse):
            raise TypeError(f"{name} must be a RegularizedInverse, got {type(inv).__name__}")
    if not isinstance(cross, LinearOperator):
        hint = (" (wrap an array with scipy.sparse.linalg.aslinearoperator)"
                if hasattr(cross, "shape") else "")
        raise TypeError(f"cross must be a (d1, d2) LinearOperator such as CrossCovariance, "
                        f"got {type(cross).__name__}{hint}")
    d1, d2 = xinv.shape[0], yinv.shape[0]
    if tuple(cross.shape) != (d1, d2):
        raise ValueError(f"cross has shape {tuple(cross.shape)}; xinv is {d1} x {d1} and "
                         f"yinv {d2} x {d2}, so cross must be ({d1}, {d2})")
    # one tau on both sides: the Rayleigh-Ritz metrics, the residuals and the bounds of
    # the solvers all use xinv's (two taus gave B^T Cyy B != I and wrong correlations)
    if xinv.tau != yinv.tau:
        raise ValueError(f"xinv.tau ({xinv.tau:g}) and yinv.tau ({yinv.tau:g}) must be equal")
    fx, fy = xinv.factor, yinv.factor
    cross_center = getattr(cross, "center", None)  # a CrossCovariance; other operators: None
    if fx.center != fy.center or cross_center not in (None, fx.center):
        raise ValueError(f"xinv, yinv and cross must all be centred or all uncentred, got "
                         f"center={fx.center} (xinv), {fy.center} (yinv)"
                         + ("" if cross_center is None else f", {cross_center} (cross)"))
    n_cross = getattr(cross, "n_samples", None)
    if fx.n_samples != fy.n_samples or n_cross not in (None, fx.n_samples):
        raise ValueError(f"xinv has {fx.n_samples} samples, yinv {fy.n_samples}"
                         + ("" if n_cross is None else f", cross {n_cross}")
                         + ": all must come from the same rows")
    k = check_n_components(n_components, d1, d2)
    p = None if oversamples is None else check_positive_int(oversamples, "oversamples",
                                                             minimum=0)
    check_tolerance(tol, "tol")
    if omega_max is not None:
        check_float("omega_max", omega_max, 0.0, strict=True)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {callback!r}")
    if exact is not None and (not callable(exact) if not isinstance(exact, RegularizedInverse)
                              else exact.method != "dense"):
        raise TypeError(f"exact must be None, a 'dense' RegularizedInverse of C_xx or a "
                        f"callable returning one, got {type(exact).__name__}"
                        + (f" (method={exact.method!r})"
                           if isinstance(exact, RegularizedInverse) else ""))
    if yinv.method == "iterative":
        raise ValueError("yinv must be a 'dense' or 'randomized' RegularizedInverse (the "
                         "reduced problem whitens C_yy), got method='iterative'")
    opts = SolveOptions(tol=tol, oversamples=_default_oversamples(k) if p is None else p,
                        n_iter=n_iter, random_state=random_state, approx_xinv=approx_xinv,
                        callback=callback, omega_max=omega_max,
                        certify=check_bool("certify", certify))
    strategy = check_choice(strategy, "strategy", STRATEGIES)
    return k, strategy, _check_start(start, d1, d2), opts


def solve_reduced(xinv, yinv, cross, k, strategy, opts, start=None, exact=None):
    """:func:`reduced_cca` on arguments validated by the caller (``opts``: SolveOptions;
    ``strategy`` one of STRATEGIES, which this resolves and checks against the inverses)."""
    strategy = _check_strategy(xinv, yinv, cross, k, opts, strategy)
    return _dispatch(xinv, yinv, cross, k, strategy, start, opts, exact)


def _check_strategy(xinv, yinv, cross, k, opts, strategy):
    """The strategy 'auto' picks (setting ``opts.fallback``), or the one asked for if it
    applies."""
    d1, d2 = cross.shape
    p = opts.oversamples
    if strategy == "auto":
        # the dense reference is always exact ('full'); a direct (randomized) inverse makes
        # the Galerkin matrix cheap while d2 is moderate; with block CG, solving for all d2
        # columns only pays when d2 is not much larger than the k + p of the Krylov block
        if xinv.method == "dense":
            return "dual" if _dual_ready(xinv, yinv, cross) else "full"
        if xinv.method == "randomized":
            return "full" if d2 <= active().full_max_d2 else "krylov"
        # LOBPCG on the pencil (no inner solves), falling back to 'full' if it stalls
        # (saturated, clustered correlations); 'full' when the block would not be thin
        # (LOBPCG is the fastest of the three where it fits: docs/engine.md)
        opts.fallback = d2 <= active().full_max_d2
        return "lobpcg" if lobpcg_fits(d1, d2, k, p) else "full"
    if strategy == "dual" and not _dual_ready(xinv, yinv, cross):
        raise ValueError("strategy='dual' needs a 'dense' inverse of C_xx in its dual (n x n) "
                         "form (n < d1), a 'dense' inverse of C_yy and a cross-covariance "
                         "X^T M with the rows of M")
    if strategy == "lobpcg" and not (xinv.method in ("iterative", "randomized")
                                     and lobpcg_fits(d1, d2, k, p)):
        raise ValueError(f"strategy='lobpcg' needs an iterative or randomized xinv (its "
                         f"low-rank factor is the preconditioner) and a block of k + p = "
                         f"{min(k + p, d2)} columns with 4 (k + p) <= d1 = {d1}")
    if strategy == "operator" and xinv.method == "iterative":
        raise ValueError("strategy='operator' needs a whitener of C_xx; an iterative xinv "
                         "supports strategy='full' or 'krylov'")
    return strategy


def _check_start(start, d1, d2):
    """``start`` of :func:`reduced_cca`: a WarmBlock of this problem or a finite (d1, b)
    array (as float64), or None."""
    if isinstance(start, WarmBlock):
        if start.X.shape[0] != d1 or start.MX.shape[0] != d2:
            raise ValueError(f"start must be a WarmBlock of a ({d1}, {d2}) problem, got one of "
                             f"({start.X.shape[0]}, {start.MX.shape[0]})")
    elif start is not None:
        start = np.asarray(start, dtype=np.float64)
        if start.ndim != 2 or start.shape[0] != d1 or not np.all(np.isfinite(start)):
            raise ValueError(f"start must be a finite (d1, b) = ({d1}, b) array, got shape "
                             f"{start.shape}")
    return start


def _dispatch(xinv, yinv, cross, k, strategy, start, opts, exact):
    """Solve with ``strategy`` (validated), through the hand-over of a LOBPCG that stalls
    or is slow, and finish (:func:`_finalize`)."""
    d2 = cross.shape[1]
    width = d2 if strategy in ("full", "dual") else min(d2, k + opts.oversamples)
    info = {}
    with small_blas(width):
        A, B, omega, n_cg, strategy, xinv, handed = _handing_over(
            xinv, yinv, cross, k, strategy, start, opts, info, exact)
        if handed is not None:
            info["rescued_after"] = handed
        omega = np.asarray(omega)[:k]
        try:
            _check_rank(omega, k)
        except RankDeficientError as exc:
            raise _achieved_rank(exc, A, B, omega, xinv, yinv, cross) from None
        x_images = None
        if "lobpcg_block" in info:
            # the next solve's start, with images that also finish this one (A is its first
            # k columns): the product with X that _finalize needs, for all m columns
            Xb = np.asarray(info["lobpcg_block"], dtype=np.float64)
            images = info.pop("lobpcg_images", None)
            GX, MX = ((xinv.covariance._gram_matmat(Xb), _apply(cross, Xb, adjoint=True))
                      if images is None else images)
            info["lobpcg_warm"] = WarmBlock(Xb, GX, MX, cross)
            x_images = (GX[:, :k], MX[:, :k])
        res = _finalize(A, B, xinv, yinv, cross, x_images=x_images)
        # again in the exact metrics: a model's rounding can lift the Ritz values of a
        # rank-deficient C_xy above the cut, which the achieved correlations then show to
        # be noise (30 training sentences: 32 'nonzero' model values, 2 achieved ~1e-27)
        _check_rank(res.correlations ** 2, k)
    res.__dict__.update(strategy=strategy, n_iter=n_cg, raw_eigenvalues=omega, **info)
    if opts.omega_max is not None:
        # the final correlations are achieved values (singular values of a compression of
        # the whitened C_xy): lower bounds of the exact ones, which omega_max caps
        res.__dict__["ceiling_error"] = float(max(
            1.0 - float(res.correlations[k - 1]) / np.sqrt(opts.omega_max), 0.0))
    return res


def _handing_over(xinv, yinv, cross, k, strategy, start, opts, info, exact):
    """(A, B, omega, n_cg, strategy, xinv, handed_after): the solve and its one hand-over.

    :class:`._stopping.StoppingMonitor` decides when LOBPCG hands over; this chooses where
    to: a LOBPCG under the low-rank model with ``exact`` given (the dense factor of C_xx,
    or a callable ``exact(steps)`` forming it) resumes from its block with the dense factor
    as preconditioner (``handed_after``: the steps before, also when block CG follows);
    otherwise, and when the resumed run hands over again, 'auto' (``opts.fallback``)
    solves by 'full'.  The ``xinv`` returned is the inverse the result was solved with
    (preconditioned by the factor once handed over); ``xinv`` itself is left unchanged."""
    dense = (exact if strategy == "lobpcg" and xinv.method != "dense"
             and not xinv.exact_preconditioner else None)
    full = "full" if opts.fallback else None
    try:
        A, B, omega, n_cg = _solve(xinv, yinv, cross, k, strategy, opts, start, info,
                                   handover="dense" if dense is not None else full)
        return A, B, omega, n_cg, strategy, xinv, None
    except _Stalled as exc:
        # (not the exception itself: its traceback would keep the iteration's blocks)
        steps, block = exc.n_cg, exc.block
    _clear_lobpcg(info)
    handed = None
    if dense is not None:
        handed = steps
        xinv = xinv.with_exact(dense if isinstance(dense, RegularizedInverse)
                               else dense(steps))
        try:
            A, B, omega, n_cg = _solve(xinv, yinv, cross, k, strategy, opts, block, info,
                                       handover=full)
            return A, B, omega, n_cg + steps, strategy, xinv, handed
        except _Stalled as again:
            steps += again.n_cg
        _clear_lobpcg(info)
    del block
    A, B, omega, n_cg = _solve(xinv, yinv, cross, k, "full", opts)
    return A, B, omega, n_cg + steps, "full", xinv, handed


def _clear_lobpcg(info):
    for key in [key for key in info if key.startswith("lobpcg_")]:
        del info[key]


def _solve(xinv, yinv, cross, k, strategy, opts, start=None, info=None, handover=None):
    """(A, B, omega, n_cg) of one strategy (LOBPCG's stats into ``info``; ``handover``:
    where a LOBPCG that stalls or is slow would go, None for nowhere)."""
    Wy = yinv.inv_sqrt()
    if strategy != "lobpcg":
        return solve_direct(xinv, Wy, yinv, cross, k, strategy, opts, info)
    kw = dict(start=start, handover=handover, callback=opts.callback,
              omega_max=opts.omega_max, certify=opts.certify)
    p, tol = opts.oversamples, opts.tol
    try:
        A, B, omega, n_cg, stats = _lobpcg(xinv, Wy, cross, k, p, tol, **kw)
    except _SinglePrecisionLoss:
        # float32 blocks lost C_xx (how close to the edge depends on the BLAS kernels'
        # rounding): the same iteration in float64 before giving up
        A, B, omega, n_cg, stats = _lobpcg(xinv, Wy, cross, k, p, tol, single=False, **kw)
    if info is not None:
        info.update(stats)
    return A, B, omega, n_cg


def reduced_cca(xinv, yinv, cross, n_components, *, strategy="auto", oversamples=None,
                n_iter="auto", tol=1e-8, random_state=None, approx_xinv=None, start=None,
                callback=None, omega_max=None, exact=None, certify=False, self_check="warn",
                thresholds=None):
    """Solve Eq. 14-15 given fitted inverse operators and a cross-covariance (the low-level
    entry point: repeated solves with different C_xy = X^T M and the same inverses).

    Parameters
    ----------
    xinv : RegularizedInverse of C_xx (any method)
    yinv : RegularizedInverse of C_yy ('dense' or 'randomized'), as ``xinv`` in tau,
        centring and samples;  cross : (d1, d2) LinearOperator, C_xy (:class:`CrossCovariance`)
    n_components : int in [1, min(d1, d2)]
    strategy : {'auto', 'full', 'dual', 'operator', 'krylov', 'lobpcg'}
        'auto': dense ``xinv``: 'dual' in its dual (n x n) form, else 'full'; randomized:
        'full' while d2 <= ``full_max_d2``, else 'krylov'; iterative: 'lobpcg' when its
        block is thin (falling back to 'full' if it stalls and d2 <= ``full_max_d2``),
        else 'full'.  'lobpcg' also takes a randomized ``xinv`` (its preconditioner).
    oversamples : int, optional
        Extra directions of the randomized SVD / Krylov / LOBPCG block (max(10, k // 2)).
    n_iter : int or 'auto', the power iterations of the randomized SVD ('operator')
    tol : float
        'krylov', 'lobpcg': stop at relative Ritz residuals of sqrt(tol) and squared
        residuals over the gap of tol.
    random_state : None, int, numpy Generator or RandomState
    approx_xinv : RegularizedInverse, optional
        'krylov': a cheap whitener for the starting subspace (default: the preconditioner).
    start : (d1, b) array or WarmBlock, optional
        'lobpcg': a starting block, e.g. ``CCAResult.lobpcg_warm`` of a solve at a
        neighbouring tau (with its tau-independent images).  With b >= k + p it replaces
        the model's own guess, narrower it joins it; only the number of steps depends on it.
    callback : callable, optional
        'lobpcg': ``callback(step, residual, error)`` at each convergence check (the largest
        relative Ritz residual and the error estimate, stopping at sqrt(tol) and tol).
    omega_max : float, optional
        A known cap of every eigenvalue (plain CCA: 1 / (1 - tau)^2): LOBPCG also stops
        once its k-th Ritz value is within tol / 2 of it; the result has ``ceiling_error``.
    exact : RegularizedInverse or callable, optional
        'lobpcg' under the low-rank model: the 'dense' inverse of C_xx (same factor and
        tau), or a callable ``exact(steps)`` that forms it, which preconditions LOBPCG
        from its block on once LOBPCG hands over (it stalls, or the rate of its last
        ``lobpcg_handover_window`` steps predicts more than ``lobpcg_handover_steps``
        further steps; :mod:`sparsecca.linalg._stopping`).  ``xinv`` is left unchanged.
    certify : bool, default False
        'lobpcg' under the low-rank model: a passed stopping test is checked again in the
        exact C_xx^-1 norm (:mod:`sparsecca.linalg._stopping`).
    self_check : {'warn', 'raise', 'off'}, default 'warn'
        For 'full', 'dual' and 'operator': when the a-posteriori error estimate max_j
        residual_norms[j] / correlations[j] (or ``ceiling_error``) exceeds ``tol``, warn
        (RuntimeWarning) or raise (:class:`SolverToleranceError`); exact for a 'dense'
        inverse of C_xx, an upper bound for a 'randomized' one.  'off': the caller tests.
    thresholds : Thresholds, optional
        The numeric thresholds of the solve (None: the ones in force).

    Returns
    -------
    CCAResult
        For 'lobpcg' also ``lobpcg_block`` (the final (d1, k + p) block, ``lobpcg_dtype``),
        ``lobpcg_warm`` (it as a :class:`WarmBlock`), ``lobpcg_converged``, ``lobpcg_residual``
        and ``lobpcg_error`` (the stopping quantities at exit), ``rescued_after`` (the steps
        after which ``exact`` took over), with ``certify`` ``certify_steps`` and
        ``norm_ratio``; for 'krylov' ``krylov_warm``.

    Raises
    ------
    TypeError, ValueError
        For arguments of the wrong kind or shape, or operators of other taus, centring or rows.
    RankDeficientError
        If C_xy has fewer than ``n_components`` nonzero correlations.
    SolverToleranceError
        With ``self_check='raise'``, when the residual test fails (see ``self_check``).

    Warns
    -----
    RuntimeWarning
        When 'krylov' or 'lobpcg' stops without meeting its stopping test, and
        (``self_check='warn'``) when a direct strategy's residuals miss ``tol``.

    References
    ----------
    J. Jagarlamudi and H. Daume III (2012), NAACL-HLT 2012, pp. 699-709 (Eq. 11, 14, 15);
    A. V. Knyazev (2001), SIAM J. Sci. Comput. 23(2), 517-541 (LOBPCG).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import CrossCovariance
    >>> from sparsecca.linalg._inverse import RegularizedInverse
    >>> from sparsecca.linalg._reduced import reduced_cca
    >>> X = sp.random(300, 80, density=0.1, format="csr", random_state=0)
    >>> Y = sp.random(300, 6, density=0.3, format="csr", random_state=1)
    >>> tau, cross = 0.1, CrossCovariance(X, Y)
    >>> yinv = RegularizedInverse(Y, tau, "dense")
    >>> res = reduced_cca(RegularizedInverse(X, tau, "dense"), yinv, cross, 2)
    >>> res.strategy
    'full'
    >>> A, B, omega = res
    >>> Cxx = (1 - tau) * (X.T @ X).toarray() + tau * np.eye(80)
    >>> bool(np.allclose(A.T @ Cxx @ A, np.eye(2)))
    True

    LOBPCG with an iterative inverse (a rank-5 preconditioner) agrees to its tolerance:

    >>> xinv = RegularizedInverse(X, tau, "iterative", rank=5, random_state=0)
    >>> fast = reduced_cca(xinv, yinv, cross, 2, tol=1e-8, random_state=0)
    >>> fast.strategy
    'lobpcg'
    >>> bool(np.allclose(fast.correlations, res.correlations, rtol=1e-6))
    True
    """
    with applied(thresholds):
        k, strategy, start, opts = _check_reduced_cca(
            xinv, yinv, cross, n_components, strategy, oversamples, n_iter, tol, random_state,
            approx_xinv, start, callback, omega_max, exact, certify)
        self_check = check_choice(self_check, "self_check", ("warn", "raise", "off"))
        res = solve_reduced(xinv, yinv, cross, k, strategy, opts, start, exact)
        if self_check != "off" and res.strategy in ("full", "dual", "operator"):
            _check_residuals(res, tol, xinv, self_check)
        return res


