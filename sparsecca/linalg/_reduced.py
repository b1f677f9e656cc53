"""The reduced (whitened) eigenproblem of Eq. 14-15 and its a-posteriori checks.

With W_x, W_y whiteners (W^T W = C^-1; W_y = L^-1 for Cyy = L L^T) the generalized
eigenproblem of Eq. 11 becomes the SVD of

    T = W_x C_xy W_y^T,   T = U diag(s) V^T,   omega = s^2,  b = W_y^T v,  a = W_x^T u,

equivalently the symmetric d2 x d2 problem  G = W_y C_xy^T C_xx^-1 C_xy W_y^T = V diag(omega) V^T
with a = C_xx^-1 C_xy b / sqrt(omega) (Eq. 15).  Three strategies:

``full``      Z = C_xx^-1 (C_xy W_y^T) for all d2 columns, then a dense eigh of the d2 x d2
              Galerkin matrix (C_xy W_y^T)^T Z -- for d2 up to a few thousand.
``dual``      n < d1: C_xx^-1 through the Cholesky factor of the n x n (1 - tau) Xc Xc^T +
              tau I, the d2 x d2 Galerkin matrix from an (n x d2) block; with n < d2 too
              the whole problem is an r x r eigenproblem in n-space (linear-kernel CCA).
``operator``  randomized SVD of T as a LinearOperator (needs a whitener of C_xx); fast but
              only as accurate as the randomized SVD of a slowly decaying spectrum allows.
``krylov``    block Krylov-Schur (Davidson) iteration on G with the C_xx^-1 products of
              ``xinv``, started from the operator solution (with the preconditioner as
              whitener for an iterative ``xinv``), run until the Ritz residuals meet
              sqrt(tol) -- for d2 too large for ``full``.
``lobpcg``    an iterative ``xinv`` without inner solves: LOBPCG (Knyazev 2001) on the
              d1 x d1 pencil (C_xy C_yy^-1 C_xy^T, C_xx), whose top eigenpairs are (omega,
              a), preconditioned by the low-rank-plus-diagonal inverse of C_xx.  One C_xx
              product per iteration for the whole block instead of a block CG solve per
              Krylov expansion, so far fewer products with C_xx than 'krylov' needs.

Every result is finished by a Rayleigh-Ritz step in the exact metrics (so A^T Cxx A = I and
B^T Cyy B = I hold to rounding whatever the solver) and carries the residual norms of the
pencil of Eq. 11, an a-posteriori bound on the error of each correlation.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._params import check_bool, check_float
from ._errors import FactorizationError, RankDeficientError, SolverToleranceError
from ._gram import CrossCovariance, RegularizedGram
from ._inverse import RegularizedInverse
from ._rsvd import _orth, _project_out, randomized_svd
from ._threads import run_pair, small_blas, tall_matmul, tall_tmatmul
from ._thresholds import active, applied
from ._validation import (
    check_choice,
    check_n_components,
    check_positive_int,
    check_tolerance,
)

__all__ = ["CCAResult", "SolverToleranceError", "reduced_cca"]

STRATEGIES = ("auto", "full", "dual", "operator", "krylov", "lobpcg")



class CCAResult(tuple):
    """Projections of one regularised CCA solve; unpacks as ``A, B, omega``.

    Returned by :func:`reduced_cca`, :meth:`CCAEngine.solve` and :func:`cca_path`; not
    meant to be built by hand.  The three arrays are the tuple's items, everything else is
    an attribute (the solvers add diagnostics such as ``error_estimate`` or
    ``lobpcg_converged`` where they apply).

    Attributes
    ----------
    x_weights : (d1, k) float64 ndarray
        A, columns a_j with A^T Cxx A = I.
    y_weights : (d2, k) float64 ndarray
        B, columns b_j with B^T Cyy B = I.
    eigenvalues : (k,) float64 ndarray
        omega of Eq. 14, descending.
    correlations : (k,) float64 ndarray
        sqrt(omega) = a_j^T Cxy b_j (can exceed 1 when tau > 0; at most 1 / (1 - tau) for
        plain CCA).
    residual_norms : (k,) float64 ndarray
        Norm of the Eq. 11 residual of (a_j, b_j) in the C^-1 metric: there is an exact
        sqrt(omega) within this distance of ``correlations[j]`` (an upper bound for
        'randomized' / 'iterative', where C_xx^-1 is bounded by 1 / tau).
    tau : float
    solver, strategy : str
        The solver (set by :class:`CCAEngine`) and the strategy of :func:`reduced_cca`.
    rank : int
        Rank of the randomized factor of X (0 for 'dense').
    n_iter : int
        For an iterative ``xinv``: LOBPCG steps, or block CG iterations (sum over solves;
        both when LOBPCG fell back to 'full').

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg import CCAEngine, CCAResult
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 8))
    >>> Y = X[:, :4] + 0.5 * rng.standard_normal((100, 4))
    >>> res = CCAEngine(X, Y).solve(Y, tau=0.1, n_components=2)
    >>> isinstance(res, CCAResult)
    True
    >>> A, B, omega = res
    >>> A.shape, B.shape, omega.shape
    ((8, 2), (4, 2), (2,))
    >>> res.x_weights is A
    True
    >>> bool(np.allclose(res.correlations ** 2, omega))
    True
    >>> res.solver, res.strategy
    ('dense', 'full')
    """

    def __new__(cls, x_weights, y_weights, eigenvalues, **info):
        self = super().__new__(cls, (x_weights, y_weights, eigenvalues))
        self.__dict__.update(info)
        return self

    @property
    def x_weights(self):
        return self[0]

    @property
    def y_weights(self):
        return self[1]

    @property
    def eigenvalues(self):
        return self[2]

    def __repr__(self):
        k = self[0].shape[1]
        return (f"CCAResult(k={k}, tau={getattr(self, 'tau', None)}, "
                f"solver={getattr(self, 'solver', None)!r}, "
                f"correlations[:3]={np.round(self.correlations[:3], 6).tolist()})")


def _dense_cross(cross):
    """C_xy as a dense (d1, d2) array (read-only: it may be the operator's cached copy).

    A :class:`CrossCovariance` with sparse factors is formed from their rows (no n x d2
    dense intermediate, see ``CrossCovariance.dense_product``); other operators by products
    with identity columns, in chunks.
    """
    d1, d2 = cross.shape
    xd, m = getattr(cross, "_x", None), getattr(cross, "_m", None)
    if xd is not None and not (xd.sparse and sp.issparse(m)):
        # a dense factor: one dense product Xc^T M
        return xd.rmatmat(m.toarray() if sp.issparse(m) else m)
    if _sparse_cross(cross):
        return cross.toarray(max_dim=max(d1, d2))
    out = np.empty((d1, d2))
    step = max(1, min(d2, 512))
    for j in range(0, d2, step):
        E = np.zeros((d2, min(step, d2 - j)))
        E[np.arange(j, j + E.shape[1]), np.arange(E.shape[1])] = 1.0
        out[:, j:j + E.shape[1]] = cross @ E
    return out


def _dense_whitened_cross(cross, Wy, chunk_bytes=8 * 2**20, dtype=np.float64):
    """Ct = C_xy W_y^T as a dense (d1, d2) array of ``dtype``, built by row blocks so that
    the only full-size array is Ct itself (not C_xy and a transposed copy besides), unless
    the operator keeps a small dense C_xy anyway (a tau grid whitens it once per tau).

    Each block of ``chunk_bytes`` is whitened in place (larger blocks, copied twice in the
    solve, raise the fit's peak memory)."""
    d1, d2 = cross.shape
    if not _sparse_cross(cross):
        return np.ascontiguousarray(Wy.matmat(_dense_cross(cross).T).T, dtype=dtype)
    u, v = cross.rank_one()
    out = np.empty((d1, d2), dtype=dtype)
    step = max(1, int(chunk_bytes // (8 * max(d2, 1))))
    for lo in range(0, d1, step):
        hi = min(d1, lo + step)
        blk = cross.dense_rows(lo, hi)
        if np.any(u):
            blk -= np.outer(u[lo:hi], v)
        out[lo:hi] = Wy.apply_to_rows(blk)
    return out


def _top_eigh(H, k):
    """Top-k eigenpairs of a symmetric matrix, descending."""
    H = 0.5 * (H + H.T)
    m = H.shape[0]
    with small_blas(0):
        if k < m and m > active().eigh_full_max and 4 * k < m:
            w, V = la.eigh(H, subset_by_index=[m - k, m - 1], check_finite=False)
        else:
            w, V = la.eigh(H, driver="evd", check_finite=False)
            w, V = w[m - k:], V[:, m - k:]
    return w[::-1], V[:, ::-1]


def _check_reduced_cca(xinv, yinv, cross, n_components, oversamples, tol, omega_max,
                       callback, on_stall, rescue_cost):
    """The arguments of :func:`reduced_cca`: O(1) checks of kinds, shapes, tau, centring and
    row counts (the three operators must describe one pair of views).  Returns (k, p)."""
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
    if rescue_cost is not None:
        check_float("rescue_cost", rescue_cost, 0.0, strict=False)
    for name, fn in (("callback", callback), ("on_stall", on_stall)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{name} must be callable or None, got {fn!r}")
    return k, p


def reduced_cca(xinv, yinv, cross, n_components, *, strategy="auto", oversamples=None,
                n_iter="auto", tol=1e-8, random_state=None, approx_xinv=None, start=None,
                callback=None, omega_max=None, on_stall=None, rescue_cost=None,
                certify=False, self_check="warn", thresholds=None):
    """Solve Eq. 14-15 given fitted inverse operators and a cross-covariance.

    This is the low-level entry point: the rerankers call it repeatedly with different
    cross-covariance factors M (C_xy = X^T M) but the same fitted ``xinv`` / ``yinv``.

    Parameters
    ----------
    xinv : RegularizedInverse of C_xx (any method)
    yinv : RegularizedInverse of C_yy ('dense' or 'randomized': a whitener is needed), with
        the tau, the centring and the number of samples of ``xinv``
    cross : (d1, d2) LinearOperator, C_xy (e.g. :class:`CrossCovariance`, whose centring
        and number of samples must match the inverses')
    n_components : int in [1, min(d1, d2)]
    strategy : {'auto', 'full', 'dual', 'operator', 'krylov', 'lobpcg'}
        'auto': for a dense ``xinv`` 'dual' when it is in its dual (n x n) form (n < d1),
        else 'full'; for a randomized one 'full' while d2 <= 2500, else 'krylov'; for an
        iterative one 'lobpcg' when its block is thin (:func:`lobpcg_fits`), else 'full'
        ('lobpcg' falls back to 'full' if it stalls and d2 <= 2500, after ``on_stall``'s
        dense factor, if any, did not help).  'lobpcg' also takes a randomized ``xinv``
        (its factor preconditions the exact pencil).
    oversamples : int, optional
        Extra directions for the randomized SVD / Krylov / LOBPCG block (default
        max(10, k // 2)).
    n_iter : int or 'auto'
        Power iterations of the randomized SVD ('operator').
    tol : float
        'krylov', 'lobpcg': stop when every relative Ritz residual of the first k pairs is
        below sqrt(tol) and their squared residual over the spectral gap below tol.
    random_state : None, int, numpy Generator or RandomState
    approx_xinv : RegularizedInverse, optional
        'krylov': a cheap whitenable approximation of C_xx^-1 for the starting subspace
        (default: the low-rank preconditioner inside an iterative ``xinv``).
    start : (d1, b) array or WarmBlock, optional
        'lobpcg': a starting block, e.g. the one a solve at a neighbouring tau ended with
        (``CCAResult.lobpcg_block``, or ``CCAResult.lobpcg_warm``: the same block with its
        tau-independent images, which spare the products with it).  With b >= k + p it
        replaces the model's own guess (a neighbouring problem's Ritz block is the better
        start, and the guess costs a Galerkin matrix); narrower, it is added to the guess.
        Only the number of steps depends on it: LOBPCG stops at the same tolerance either
        way.
    callback : callable, optional
        'lobpcg': called as ``callback(step, residual, error)`` at each convergence check
        (``step`` LOBPCG steps taken so far; ``residual`` the largest relative Ritz residual
        of the first k pairs, stopping at sqrt(tol); ``error`` its squared-residual estimate
        of the correlations' relative error, stopping at tol).  For progress reports.
    omega_max : float, optional
        An upper bound of every eigenvalue omega that the caller knows.  Plain CCA with one
        tau on both sides has 1 / (1 - tau)^2: a^T C_xy b <= ||Xc a|| ||Yc b|| <=
        sqrt(a^T Cxx a b^T Cyy b) / (1 - tau).  Ritz values are lower bounds of the
        eigenvalues, so once the k-th is within the bound, every correlation is known to
        that accuracy: LOBPCG then also stops when 1 - sqrt(theta_k / omega_max) <= tol / 2
        (saturated clusters, whose residuals converge slowly), and the result carries
        ``ceiling_error``, the same bound from the final correlations.
    on_stall : callable, optional
        'lobpcg' under the low-rank-plus-diagonal preconditioner of an iterative or
        randomized ``xinv``: called as ``on_stall(steps)`` when LOBPCG stalls (its largest
        residual gained less than 2x in ``lobpcg_stall_window`` steps; or, given
        ``rescue_cost``, when it is too slow), it returns a 'dense'
        RegularizedInverse of the same C_xx (or None).  LOBPCG then resumes from its stalled
        block preconditioned by it (``xinv.use_exact``: the residuals are also measured in
        the exact norm from then on) before any fallback to 'full'.  The model's norm
        understates the exact one on text views with nearly collinear features, and a
        stalled LOBPCG is where that shows (docs/engine.md).
    rescue_cost : float, optional
        With ``on_stall``: the modelled seconds of its dense factor (s^3 / 3 / ``factor_flops``
        for a factor of order s, as the engine passes; 0 when it is at hand).  LOBPCG then
        also hands over before it stalls, once the rate of its last ``lobpcg_switch_window``
        steps predicts more steps than the factor and a resumed solve cost, both in the
        flop model of this module (``sparse_flops``, ``dense_flops``): the stall test alone hands
        over late, after many slow steps.  The decision uses modelled costs, not clocks, so
        a fit is reproducible.
    certify : bool, default False
        'lobpcg' under the low-rank-plus-diagonal preconditioner: before it stops, check its
        stopping test with the residuals measured in the exact C_xx^-1 norm instead of the
        model's, which understates it (in squared norm from a little on independent count
        features to over an order of magnitude for some columns of text views; see
        docs/engine.md).  Preconditioned CG on C_xx Z = R, started from the model's solve,
        gives a lower and an upper bound of each ||r||^2_{C^-1} (:func:`_exact_norm_bounds`):
        LOBPCG stops once the upper bounds meet the test, and goes on, its norms scaled by
        the measured ratio, when the lower bounds fail it.  ``lobpcg_error`` is then that of
        the upper bounds.  Costs a few to some tens of products with C_xx per check
        (``certify_steps``).  When a failed check's lower bounds are no better than half
        those of a check ``certify_stall_steps`` or more steps earlier, the exact norms do not
        fall under the model's preconditioning: LOBPCG stops unconverged with a warning (or,
        when it may raise a stall, hands it to ``on_stall``'s dense factor or the
        fallback).

    self_check : {'warn', 'raise', 'off'}, default 'warn'
        For the strategies without a stopping test of their own ('full', 'dual',
        'operator'): when the a-posteriori error estimate max_j residual_norms[j] /
        correlations[j] (tightened by ``ceiling_error`` when ``omega_max`` is given)
        exceeds ``tol``, warn (RuntimeWarning) or raise (:class:`SolverToleranceError`).
        The estimate is exact for a 'dense' inverse of C_xx and an upper bound for a
        'randomized' one, whose model of C_xx^-1 can leave the correlations well below the
        exact ones.  'off' is for a caller that applies its own test (:class:`SparseCCA`).
        'krylov' and 'lobpcg' warn on their own stopping tests.
    thresholds : Thresholds, optional
        The numeric thresholds of the solve (None: the instance in force, by default the
        defaults).

    Returns
    -------
    CCAResult
        For 'lobpcg' also ``lobpcg_block``, the final (d1, k + p) block in LOBPCG's working
        precision (``lobpcg_dtype``), ``lobpcg_warm``, that block as a :class:`WarmBlock`
        (the best start of a neighbouring solve), ``lobpcg_converged``, and the final
        ``lobpcg_residual`` (largest relative Ritz residual of the first k pairs) and
        ``lobpcg_error`` (its squared residual over the gap, at least its last step's rise
        over ``lobpcg_jump_ratio``: the estimated relative error of the correlations, half that
        of omega), ``rescued_after``, the steps after
        which ``on_stall``'s dense factor took over, when it did, and with ``certify``
        ``certify_steps`` (preconditioned CG steps of the exact-norm checks) and
        ``norm_ratio`` (the largest exact-over-model squared norm ratio they measured).

    Raises
    ------
    TypeError, ValueError
        For arguments of the wrong kind or shape, and for operators that do not describe
        one pair of views (different taus, centring or rows).
    RankDeficientError
        If C_xy has fewer than ``n_components`` nonzero correlations.

    SolverToleranceError
        With ``self_check='raise'``, when the residual test fails (see ``self_check``).

    Warns
    -----
    RuntimeWarning
        When an iterative strategy ('krylov', 'lobpcg') stops without meeting its stopping
        test (iteration limit, or ``certify`` finding that the exact norms do not fall), and
        (``self_check='warn'``) when a direct strategy's residuals miss ``tol``.

    Notes
    -----
    With whiteners W_x, W_y (W^T W = C^-1) the generalised eigenproblem of Eq. 11,

        C_xy b = sqrt(omega) C_xx a,   C_xy^T a = sqrt(omega) C_yy b,

    is the SVD of T = W_x C_xy W_y^T, or the symmetric eigenproblem of W_y C_xy^T C_xx^-1
    C_xy W_y^T (Eq. 14), with a = C_xx^-1 C_xy b / sqrt(omega) (Eq. 15).  Every strategy
    ends with a Rayleigh-Ritz step in the exact metrics, so A^T C_xx A = I and B^T C_yy B
    = I hold to rounding, the correlations are achieved values (lower bounds of the exact
    ones), and ``residual_norms`` bound their errors a posteriori.

    References
    ----------
    J. Jagarlamudi and H. Daume III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709 (Eq. 11, 14, 15).
    A. V. Knyazev, "Toward the optimal preconditioned eigensolver: locally optimal block
    preconditioned conjugate gradient method", SIAM J. Sci. Comput. 23(2), 517-541, 2001.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import CrossCovariance, RegularizedInverse, reduced_cca
    >>> X = sp.random(300, 80, density=0.1, format="csr", random_state=0)
    >>> Y = sp.random(300, 6, density=0.3, format="csr", random_state=1)
    >>> tau = 0.1
    >>> yinv = RegularizedInverse(Y, tau, "dense")
    >>> cross = CrossCovariance(X, Y)
    >>> res = reduced_cca(RegularizedInverse(X, tau, "dense"), yinv, cross, 2)
    >>> res.strategy
    'full'
    >>> A, B, omega = res
    >>> Xd = X.toarray()
    >>> Cxx = (1 - tau) * Xd.T @ Xd + tau * np.eye(80)
    >>> bool(np.allclose(A.T @ Cxx @ A, np.eye(2)))
    True

    LOBPCG with an iterative inverse (preconditioned by a rank-5 factor) agrees to its
    tolerance:

    >>> xinv = RegularizedInverse(X, tau, "iterative", rank=5, random_state=0)
    >>> fast = reduced_cca(xinv, yinv, cross, 2, tol=1e-8, random_state=0)
    >>> fast.strategy
    'lobpcg'
    >>> bool(np.allclose(fast.correlations, res.correlations, rtol=1e-6))
    True
    """
    with applied(thresholds):
        return _reduced_cca(xinv, yinv, cross, n_components, strategy, oversamples, n_iter,
                            tol, random_state, approx_xinv, start, callback, omega_max,
                            on_stall, rescue_cost, certify, self_check)


def _reduced_cca(xinv, yinv, cross, n_components, strategy, oversamples, n_iter, tol,
                 random_state, approx_xinv, start, callback, omega_max, on_stall, rescue_cost,
                 certify, self_check):
    k, p = _check_reduced_cca(xinv, yinv, cross, n_components, oversamples, tol, omega_max,
                              callback, on_stall, rescue_cost)
    certify = check_bool("certify", certify)
    self_check = check_choice(self_check, "self_check", ("warn", "raise", "off"))
    d1, d2 = cross.shape
    n_cg = 0
    fallback = False
    strategy = check_choice(strategy, "strategy", STRATEGIES)
    if yinv.method == "iterative":
        raise ValueError("yinv must be a 'dense' or 'randomized' RegularizedInverse (the "
                         "reduced problem whitens C_yy), got method='iterative'")
    p = _default_oversamples(k) if p is None else p
    if strategy == "auto":
        # the dense reference is always exact ('full'); a direct (randomized) inverse makes
        # the Galerkin matrix cheap while d2 is moderate; with block CG, solving for all d2
        # columns only pays when d2 is not much larger than the k + p of the Krylov block
        if xinv.method == "dense":
            strategy = "dual" if _dual_ready(xinv, yinv, cross) else "full"
        elif xinv.method == "randomized":
            strategy = "full" if d2 <= active().full_max_d2 else "krylov"
        else:
            # LOBPCG on the pencil (no inner solves), falling back to 'full' if it stalls
            # (saturated, clustered correlations); 'full' when the block would not be thin
            # (LOBPCG is the fastest of the three where it fits: docs/engine.md)
            strategy = "lobpcg" if lobpcg_fits(d1, d2, k, p) else "full"
            fallback = d2 <= active().full_max_d2
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
    if isinstance(start, WarmBlock):
        if start.X.shape[0] != d1 or start.MX.shape[0] != d2:
            raise ValueError(f"start must be a WarmBlock of a ({d1}, {d2}) problem, got one of "
                             f"({start.X.shape[0]}, {start.MX.shape[0]})")
    elif start is not None:
        start = np.asarray(start, dtype=np.float64)
        if start.ndim != 2 or start.shape[0] != d1 or not np.all(np.isfinite(start)):
            raise ValueError(f"start must be a finite (d1, b) = ({d1}, b) array, got shape "
                             f"{start.shape}")
    width = d2 if strategy in ("full", "dual") else min(d2, k + p)
    info = {}
    # a stall under the model's preconditioner is handed to on_stall before any fallback
    rescue = (on_stall is not None and strategy == "lobpcg" and xinv.method != "dense"
              and not xinv.exact_preconditioner)
    stalled_steps = 0

    def attempt(raise_stalled, start, budget=None):
        return _solve(xinv, yinv, cross, k, p, strategy, n_iter, tol, random_state,
                      approx_xinv, raise_stalled, start, info, callback, omega_max, budget,
                      certify)

    with small_blas(width):
        try:
            try:
                budget = (_switch_budget(xinv, cross, min(k + p, d2), rescue_cost)
                          if rescue and rescue_cost is not None else None)
                A, B, omega, n_cg = attempt(fallback or rescue, start, budget)
            except _Stalled as exc:
                exact = on_stall(exc.n_cg) if rescue else None
                if exact is None and fallback and not exc.slow:
                    raise
                # resumed from the stalled block (without the dense factor only because
                # on_stall had asked for the stall to be raised, or LOBPCG was merely slow:
                # it goes on under the model, and a real stall still falls back)
                if exact is not None:
                    xinv.use_exact(exact)
                stalled_steps = exc.n_cg
                _clear_lobpcg(info)
                A, B, omega, n_cg = attempt(fallback and (exact is not None or exc.slow),
                                            exc.block)
                n_cg += stalled_steps
                if exact is not None:
                    info["rescued_after"] = stalled_steps
        except _Stalled as exc:
            strategy = "full"
            A, B, omega, n_cg = _solve(xinv, yinv, cross, k, p, strategy, n_iter, tol,
                                       random_state, approx_xinv, False)
            n_cg += exc.n_cg + stalled_steps
            _clear_lobpcg(info)
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
            GX, MX = ((xinv.covariance.gram_matmat(Xb), cross.rmatmat(Xb)) if images is None
                      else images)
            info["lobpcg_warm"] = WarmBlock(Xb, GX, MX, cross)
            x_images = (GX[:, :k], MX[:, :k])
        res = _finalize(A, B, xinv, yinv, cross, x_images=x_images)
        # again in the exact metrics: a model's rounding can lift the Ritz values of a
        # rank-deficient C_xy above the cut, which the achieved correlations then show to
        # be noise (30 training sentences: 32 'nonzero' model values, 2 achieved ~1e-27)
        _check_rank(res.correlations ** 2, k)
    res.__dict__.update(strategy=strategy, n_iter=n_cg, raw_eigenvalues=omega, **info)
    if omega_max is not None:
        # the final correlations are achieved values (singular values of a compression of
        # the whitened C_xy): lower bounds of the exact ones, which omega_max caps
        res.__dict__["ceiling_error"] = float(max(
            1.0 - float(res.correlations[k - 1]) / np.sqrt(omega_max), 0.0))
    if self_check != "off" and strategy in ("full", "dual", "operator"):
        _check_residuals(res, tol, xinv, self_check)
    return res


def _check_residuals(res, tol, xinv, how):
    """The self-check of a direct solve: its relative error estimate against ``tol``."""
    c = np.maximum(np.abs(res.correlations), 1e-300)
    err = float(np.max(res.residual_norms / c))
    if "ceiling_error" in res.__dict__:
        err = min(err, res.ceiling_error)
    res.__dict__["error_estimate"] = err
    if err <= tol:
        return
    j = int(np.argmax(res.residual_norms / c))
    msg = (f"reduced_cca: estimated relative error {err:.3g} of the correlations > tol = "
           f"{tol:g} (strategy '{res.strategy}', {xinv.method} inverse of C_xx; component "
           f"{j}: correlation {float(res.correlations[j]):.4g}, residual norm "
           f"{float(res.residual_norms[j]):.3g}): the correlations are lower bounds of the "
           f"exact ones. Use a 'dense' or 'iterative' inverse of C_xx (or a larger rank)")
    if how == "raise":
        raise SolverToleranceError(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=3)


class _Stalled(Exception):
    """LOBPCG stalled (or, with ``rescue_cost``, was too slow) after ``n_cg`` steps;
    ``block`` is its Ritz block then (float64)."""

    def __init__(self, n_cg, block=None, slow=False):
        self.n_cg = n_cg
        self.block = None if block is None else np.asarray(block, dtype=np.float64)
        self.slow = slow  # progressing, too slowly for the factor at hand


def _clear_lobpcg(info):
    for key in [key for key in info if key.startswith("lobpcg_")]:
        del info[key]


def _solve_input_side(xinv, Wy, cross, k):
    """Eq. 14-15 by a d1 x d1 eigenproblem, for a dense C_xx^-1 and d1 < d2.

    T = W_x C_xy W_y^T (W^T W = C^-1 for both whiteners) is d1 x d2: the Galerkin matrix
    T^T T of 'full' (d2 x d2) and T T^T (d1 x d1) share their nonzero eigenvalues omega,
    with T^T u / sqrt(omega) = v for T T^T u = omega u.  So a = W_x^T u and b = W_y^T T^T u
    (Eq. 15 up to the scales _finalize fixes), and the eigendecomposition, the fit's
    O(d^3) step, is of the smaller side (with many output features the d2 x d2 problem
    would dominate the fit whatever d1).
    """
    Wx = xinv.inv_sqrt()
    # C_xy W_y^T by row blocks, then W_x from the left; both d1 x d2 blocks are held briefly
    T = Wx.matmat(_dense_whitened_cross(cross, Wy))
    omega, U = _top_eigh(T @ T.T, k)
    B = Wy.rmatmat(T.T @ U)
    del T
    return Wx.rmatmat(U), B, omega


def _solve(xinv, yinv, cross, k, p, strategy, n_iter, tol, random_state, approx_xinv,
           fallback=False, start=None, info=None, callback=None, omega_max=None,
           switch_budget=None, certify=False):
    Wy = yinv.inv_sqrt()
    n_cg = 0
    d1, d2 = cross.shape
    if strategy == "full" and xinv.method == "randomized" and _sparse_cross(cross):
        # Galerkin matrix straight from the stored C_xy (minus its rank-one centring term:
        # the operator's kept dense X^T M when small, else the sparse one) and the
        # low-rank-plus-diagonal form of C_xx^-1 (no whitened d1 x d2 block): the
        # rerankers' repeated solves
        u, v = cross.rank_one()
        kept = getattr(cross, "kept_product", None)
        G = xinv.sandwich(kept() if kept is not None else cross.tosparse(copy=False), u, v)
        A, B, omega = _from_galerkin(G, xinv, Wy, cross, k)
    elif strategy == "dual":
        A, B, omega = _solve_dual(xinv, yinv, Wy, cross, k)
    elif strategy == "full" and xinv.method == "dense" and d1 < d2:
        A, B, omega = _solve_input_side(xinv, Wy, cross, k)
    elif strategy == "full":
        Cxy = _dense_cross(cross)
        Ct = np.ascontiguousarray(Wy.matmat(Cxy.T).T)  # C_xy W_y^T, (d1, d2)
        del Cxy
        Z, R = xinv.solve_with_residual(Ct)
        n_cg += getattr(xinv, "n_iter_", 0)
        # variational estimate of Ct^T Cxx^-1 Ct: its error -E^T Cxx E is second order in
        # the error E of Z (and a lower bound); R = 0 for the direct inverses
        H = Ct.T @ Z
        if xinv.method == "iterative":
            H += Z.T @ R
        del R
        omega, Vk = _top_eigh(H, k)
        B = Wy.rmatmat(Vk)
        A = Z @ Vk  # Eq. 15 up to the 1 / sqrt(omega) that _finalize's normalisation applies
        del Z, Ct
    elif strategy == "operator":
        Wx = xinv.inv_sqrt()
        T = _WhitenedCross(Wx, cross, Wy)
        U, s, Vt = randomized_svd(T, k, oversamples=p, n_iter=n_iter, random_state=random_state)
        A = Wx.rmatmat(U)
        B = Wy.rmatmat(Vt.T)  # a = W_x^T u carries Eq. 15's 1 / sqrt(omega) already
        omega = s * s
    elif strategy == "lobpcg":
        kw = dict(start=start, raise_stalled=fallback, callback=callback,
                  omega_max=omega_max, switch_budget=switch_budget, certify=certify)
        try:
            A, B, omega, n_cg, stats = _lobpcg(xinv, Wy, cross, k, p, tol, **kw)
        except _SinglePrecisionLoss:
            # float32 blocks lost C_xx (how close to the edge depends on the BLAS kernels'
            # rounding): the same iteration in float64 before giving up
            A, B, omega, n_cg, stats = _lobpcg(xinv, Wy, cross, k, p, tol, single=False, **kw)
        if info is not None:
            info.update(stats)
    else:
        A, B, omega, n_cg = _krylov(xinv, Wy, cross, k, p, tol, random_state, approx_xinv,
                                    max_expansions=30 if fallback else 100,
                                    raise_stalled=fallback)
    return A, B, omega, n_cg


def lobpcg_fits(d1, d2, k, p=None):
    """Whether 'auto' picks LOBPCG: a block of m = min(k + p, d2) columns with 4 m <= d1
    (the basis [X, W, P] must stay thin); p defaults to :func:`reduced_cca`'s."""
    p = _default_oversamples(k) if p is None else int(p)
    return 4 * min(k + p, d2) <= d1


def _default_oversamples(k):
    return max(10, k // 2)





def _lobpcg_error_name():
    """What LOBPCG's error estimate is, for its warnings."""
    return (f"squared residual over the gap, at least the last step's rise / "
            f"{active().lobpcg_jump_ratio:g}")


class WarmBlock:
    """A solve's final LOBPCG block with its tau-independent images: the next solve's start.

    ``C_xx(tau) X = (1 - tau) GX + tau X`` and ``C_xy^T X = MX`` for any tau, so a solve at
    another tau (a grid) forms its first Rayleigh-Ritz step, and, when that already meets
    the tolerance, its final one, without a product with X or M (a warm solve of a grid
    typically needs no step or a few).  ``MX`` belongs to one cross-covariance operator (weakly
    referenced): a solve with another M (the rerankers) forms its own.

    Attributes
    ----------
    X : (d1, m) float64, the block;  GX : (d1, m) float64, Xc^T Xc X;
    MX : (d2, m) float64, C_xy^T X
    """

    __slots__ = ("X", "GX", "MX", "_cross")

    def __init__(self, X, GX, MX, cross):
        self.X, self.GX, self.MX = X, GX, MX
        try:
            self._cross = weakref.ref(cross)
        except TypeError:
            self._cross = lambda: None

    def cross_image(self, cross):
        """MX when it is the image under ``cross``, else None."""
        return self.MX if self._cross() is cross else None


def dense_factor_cost(size):
    """Modelled seconds of a dense Cholesky factor of order ``size`` (``rescue_cost``)."""
    return float(size) ** 3 / 3.0 / active().factor_flops


def _switch_budget(xinv, cross, m, rescue_cost):
    """The predicted LOBPCG steps beyond which handing over to a dense factor of modelled
    cost ``rescue_cost`` (seconds) pays: the factor and active().lobpcg_switch_steps resumed steps,
    in modelled steps under the model, times active().lobpcg_switch_margin.  A step is modelled as
    a product with C_xx (sparse: 4 nnz(X) m flops) and the two with C_xy W_y^T (4 d1 d2 m,
    BLAS-3); a resumed step adds the two triangular solves with the factor, of order
    s = min(n, d1) (4 s^2 m).  The rate of the last steps predicts too few steps rather
    than too many, as LOBPCG slows down (several times too few have been seen: see
    docs/engine.md), so the margin of 0.5 counts them double."""
    d1, d2 = cross.shape
    f = xinv.factor
    size = min(f.n_samples - int(f.center), d1)
    t = active()
    step = 4.0 * f._src.nnz * m / t.sparse_flops + 4.0 * d1 * d2 * m / t.dense_flops
    resumed = step + 4.0 * size * size * m / t.dense_flops
    return t.lobpcg_switch_margin * (float(rescue_cost) + t.lobpcg_switch_steps * resumed) / step


def _predicted_steps(history, thresh, window=None):
    """Steps LOBPCG still needs to bring its largest relative residual (``history``, one
    value per step so far) to ``thresh`` at the geometric rate of its best value over the
    last ``window`` steps (inf without progress)."""
    w = active().lobpcg_switch_window if window is None else window
    best = np.minimum.accumulate(np.asarray(history, dtype=np.float64))
    if best[-1] <= thresh:
        return 0.0
    rate = (best[-1] / best[-1 - w]) ** (1.0 / w)
    return np.inf if rate >= 1.0 else float(np.log(best[-1] / thresh) / -np.log(rate))


class _SinglePrecisionLoss(FactorizationError):
    """LOBPCG's float32 blocks lost C_xx (see :func:`_lobpcg`): :func:`_solve` retries
    in float64."""


def _lobpcg(xinv, Wy, cross, k, p, tol, start=None, raise_stalled=False, callback=None,
            omega_max=None, switch_budget=None, certify=False, single=True):
    """Top-k eigenpairs of the pencil (K, C), K = Ct Ct^T, Ct = C_xy W_y^T, C = C_xx, by LOBPCG.

    K a = omega C a is Eq. 11 with b eliminated (b = W_y^T Ct^T a / sqrt(omega)), so the
    wanted a are its top eigenvectors; the iteration needs one product with C per step for
    the new block W = T (K X - C X Theta) (T the preconditioner of ``xinv``), and none of
    the inner block CG solves of 'full' / 'krylov'.  The C- and K-images of the basis
    [X, W, P] are carried along (K only through Ct^T S, a d2 x 3m block), and each
    Rayleigh-Ritz step orthonormalises the basis in the C metric by an eigendecomposition
    of its normalised Gram matrix that drops dependent directions (the SVQB basis
    selection of Stathopoulos & Wu 2002, which keeps LOBPCG stable once residuals are tiny).

    Stops when, for the first k Ritz pairs, ||r||_T / theta <= sqrt(tol) and
    max(||r||_T^2 / (2 gap theta_k), rise / ``lobpcg_jump_ratio``) <= tol (the correlations
    are sqrt(theta); rise is the largest relative rise of a wanted correlation in the last
    step, which flags a gap estimate not settled yet), with the
    residual measured in the preconditioner's norm (T ~ C^-1: exact when ``xinv`` was
    given the dense inverse by ``use_exact``; the low-rank model's norm can understate
    ||r||_{C^-1} several-fold on text views) and the gap taken to the
    block's last Ritz value (the p buffer pairs stand for the spectrum beyond the wanted
    cluster); looser than 'krylov''s gap to theta_{k+1} when the correlations are
    clustered, and checked against the dense solver in the tests and benchmarks rather
    than proved.  With ``certify`` (and the model as T) a passed test is checked again with
    bounds of the exact norms (:func:`_exact_norm_bounds`); a failed check scales the
    model's norms by the exact-over-model ratio it measured for the following steps.

    At tol >= ``lobpcg_single_tol`` (the randomized solver's 1e-3) the blocks, their images and
    the C_yy factor's triangular solves are float32, and so are the products with sparse
    factors (accumulated in float32: ~2x faster; centred ones while the mean does not
    dominate the data, ``_covariance_as`` / ``_cross_as``); the Rayleigh-Ritz
    eigenproblems stay float64, and _finalize redoes the last one in float64 in the exact
    metrics.

    Returns
    -------
    A : (d1, k), B : (d2, k), theta : (k,) Ritz values (omega), n_iter : int (iterations),
    stats : dict with ``lobpcg_block`` (d1, m), the final Ritz block (a warm start for a
        neighbouring problem), ``lobpcg_converged``, ``lobpcg_residual`` and
        ``lobpcg_error`` (the two stopping quantities at exit), and ``lobpcg_images``: the
        float64 (GX, MX) of a :class:`WarmBlock` for the final block when a warm start
        took no step (None otherwise)
    """
    d1, d2 = cross.shape
    m = min(k + p, d2)
    maxiter = active().lobpcg_maxiter
    C = xinv.covariance
    precond = xinv.precondition
    wdt = np.float32 if single and tol >= active().lobpcg_single_tol else np.float64

    def cast(Z):
        return np.ascontiguousarray(Z, dtype=wdt)

    warm = None
    if isinstance(start, WarmBlock):
        warm, start = (start, None) if start.X.shape[1] >= m else (None, start.X)
    dense_ct = 8 * d1 * d2 <= active().lobpcg_dense_ct_bytes and d2 <= active().full_max_d2
    if dense_ct and warm is not None and _keeps_dense(cross):
        # a warm solve takes 0-2 steps: whitening a d2-row block per product with the kept
        # dense X^T M costs less than whitening all d1 rows of C_xy once
        dense_ct = False
    if dense_ct:
        Ctd = _dense_whitened_cross(cross, Wy, dtype=wdt)  # (d1, d2)

        def ct(U):
            return tall_matmul(Ctd, cast(U))

        def ctT(V):
            return tall_tmatmul(Ctd, cast(V))
    else:
        # C_yy's factor applied to the d2-row side, C_xy in the working precision
        # (CrossCovariance.matmat_as): through X^T M when the operator keeps it dense (formed
        # here, so that the start's products use it too; rows split over both cores), else
        # through the factors
        Ctd = None
        Wyw = Wy.single() if wdt == np.float32 else Wy
        if _keeps_dense(cross):
            cross.dense_product_as(wdt)

        def ct(U):
            return _cross_as(cross, cast(Wyw.rmatmat(U)), wdt)

        def ctT(V):
            return cast(Wyw.matmat(_cross_as(cross, cast(V), wdt, transpose=True)))

    images = None
    if warm is not None:
        # the previous block in this tau's metrics from its images, in float64: if no step
        # follows, the images of the new block are exact too and finish the solve
        MX = warm.cross_image(cross)
        MX = cross.rmatmat(warm.X) if MX is None else MX
        X, CX, UX, theta, _, images = _rayleigh_ritz(
            [warm.X], [C.from_gram_image(warm.GX, warm.X)], [Wy.matmat(MX)], m,
            extra=([warm.GX], [MX]))
    else:
        # start: the top m eigenvectors of the preconditioner's Galerkin matrix Ct^T T Ct
        # (formed when Ct is dense at hand; a randomized SVD of the whitened operator
        # otherwise), or a given block
        if start is not None and start.shape[1] >= m:
            X = start
        elif Ctd is not None:
            # by row chunks: no second d1 x d2 array (it nearly doubled the peak memory)
            _, V0 = _top_eigh(xinv.lowrank_galerkin(Ctd), m)
            X = precond(ct(V0))
        else:
            # one pass of the range finder, no power iteration: sharpening the start
            # towards the model's own top subspace costs LOBPCG steps on the exact pencil
            # (the model's subspace is not the exact one; docs/engine.md)
            Wx = _approx_of(xinv).inv_sqrt()
            _, _, Vt = randomized_svd(_WhitenedCross(Wx, cross, Wyw, work=wdt), m,
                                      oversamples=min(p, d2 - m), n_iter=0, random_state=0)
            X = precond(ct(np.ascontiguousarray(Vt.T)))
        if start is not None and 0 < start.shape[1] < m:
            X = np.hstack([X, start])
        X = cast(X)
        CX = _covariance_as(C, X, wdt)
        UX = ctT(X)
        X, CX, UX, theta, _ = _rayleigh_ritz([X], [CX], [UX], m)
    # K = Ct Ct^T has rank <= rank(C_xy): fewer than k nonzero Ritz values means fewer than
    # k nonzero correlations (the start T Ct V0 has rank min(m, rank K))
    _check_rank(np.concatenate([theta, np.zeros(max(k - theta.size, 0))]), k)
    P = CP = UP = None
    thresh = np.sqrt(tol)
    history = []
    it = 0
    converged = False
    rel = np.full(theta.size, np.inf)
    quad = np.inf
    last = None  # the wanted Ritz values at the previous check
    # certify: the exact norms are checked only under the model (the exact factor's norm is
    # exact); ``scale`` is the exact-over-model squared norm ratio the last check measured
    check_exact = certify and not xinv.exact_preconditioner
    scale = 1.0
    n_pcg = 0
    checks = []  # (step, the exact-norm estimate's lower bound) of each failed check
    futile = None
    while it < maxiter:
        if theta.size < k or (omega_max is not None
                              and theta[k - 1] > omega_max * (1.0 + active().lobpcg_cap_slack)):
            # fewer than k independent Ritz vectors after a step (the rank of C_xy was
            # checked at the start), or a Ritz value above the cap that bounds every
            # eigenvalue: the working precision has lost C_xx (a tau far below the scale
            # of X^T X: a rank-300 X with ||X^T X|| = 5e6 at tau = 1e-6 'converged' to
            # correlations of 0.67 for 0.92, with a negative error estimate)
            error = _SinglePrecisionLoss if wdt == np.float32 else FactorizationError
            raise error(
                f"LOBPCG broke down after {it} steps ({_breakdown(theta, k, omega_max)}): "
                f"C_xx is too ill-conditioned for its {np.dtype(wdt).name} blocks at this "
                f"tau; use solver='dense' or 'iterative', or a larger tau")
        R = ct(UX)
        R -= CX * theta
        W = precond(R)
        rn = _preconditioned_norms(R, W)
        if scale > 1.0:
            rn = rn * np.sqrt(scale)
        rel = rn / np.maximum(np.abs(theta), 1e-300)
        # the p buffer pairs absorb a cluster straddling k: the wanted Ritz values are off by
        # about ||r||^2 over the gap to the rest of the spectrum, past the block (cluster
        # form of the Temple bound), estimated by the last Ritz value
        mm = theta.size  # < m when the basis lost dependent directions
        gap = theta[k - 1] - theta[mm - 1] if mm > k else theta[k - 1]
        # relative error of the correlations sqrt(omega): half that of omega
        over_gap = 0.5 / max(float(gap), 1e-300) / max(float(theta[k - 1]), 1e-300)
        quad = float(rn[:k].max()) ** 2 * over_gap
        floor = 0.0
        if last is not None:
            # Ritz values only rise: a rise far above the estimate means the gap is not
            # settled yet (lobpcg_jump_ratio)
            rise = 0.5 * float(np.max((theta[:k] - last) / np.maximum(theta[:k], 1e-300)))
            floor = rise / active().lobpcg_jump_ratio
            quad = max(quad, floor)
        last = theta[:k].copy()
        if callback is not None:
            callback(it, float(rel[:k].max()), quad)
        if rel[:k].max() <= thresh and quad <= tol:
            if not check_exact:
                converged = True
                break
            tk = np.maximum(np.abs(theta[:k]), 1e-300)
            test = _StoppingTest(tk, thresh, over_gap, floor, tol)
            lower, upper, steps, verdict = _exact_norm_bounds(
                C, precond, R[:, :k], W[:, :k], xinv.tau, wdt, test.judge)
            n_pcg += steps
            model2 = np.maximum(rn[:k] ** 2 / scale, 1e-300)
            scale = max(scale, float(np.max(lower / model2)))
            if verdict:
                converged = True
                rn = np.sqrt(upper)
                rel = rn / tk
                quad = test.error(upper)
                break
            # refuted or undecided: go on with the model's norms scaled by the measured ratio,
            # unless the exact norms do not fall at all while the model's do (this happens
            # on large text views: the lower bounds can stay put over many checks)
            low = test.error(lower)
            earlier = [q for i, q in checks if i <= it - active().certify_stall_steps]
            checks.append((it, low))
            if earlier and low > 0.5 * min(earlier):
                futile = low
                if raise_stalled:
                    raise _Stalled(it, X)
                quad = low
                break
        del R
        if omega_max is not None:
            # the Ritz values are lower bounds of the eigenvalues and omega_max caps them:
            # the correlations are certified once the k-th is close enough to the cap (half
            # of tol: room for the rounding of float32 blocks)
            ceiling = 1.0 - np.sqrt(max(float(theta[k - 1]), 0.0) / omega_max)
            if ceiling <= 0.5 * tol:
                converged = True
                quad = min(quad, ceiling)
                break
        # in the model's norm: a scale raised by a failed exact-norm check is no stall
        history.append(float(rel[:k].max()) / np.sqrt(scale))
        # the largest residual is not monotone (a Ritz vector entering the top k restarts
        # it), and plateaus of 10-20 steps precede steady progress: stalled means less
        # than 2x in the last lobpcg_stall_window steps (slow but steady progress, 2x per
        # few tens of steps, still beats the block CG fallback)
        w = active().lobpcg_stall_window
        if raise_stalled and len(history) >= w + 20 and min(history[-w:]) > 0.5 * min(
                history[:-w]):
            raise _Stalled(it, X)
        # a dense factor at hand (on_stall): hand over as soon as the steps this rate still
        # needs cost more than it (see reduced_cca's rescue_cost)
        if (switch_budget is not None and len(history) > active().lobpcg_switch_window
                and _predicted_steps(history, thresh / np.sqrt(scale)) > switch_budget):
            raise _Stalled(it, X, slow=True)
        # columns converged far beyond the target leave the search block, and so do the
        # null directions of K (theta ~ 0: a cross-covariance of rank < k + p), whose
        # residual directions are noise; when none is left the basis cannot improve
        # (under certify every column stays: a column far past the model's target has not
        # passed the exact norm's)
        live = (check_exact | (rel > active().lobpcg_active_ratio * thresh)) & (
            theta > 1e-12 * max(float(theta[0]), 1e-300))
        if not live.any():
            converged = True
            break
        if images is not None:  # a step follows: on in the working precision
            X, CX, UX, images = cast(X), cast(CX), cast(UX), None
        W = cast(W[:, live])
        if Ctd is not None:
            # the sparse C W (scipy releases the GIL) overlaps the dense Ct^T W
            CW, UW = run_pair(lambda W=W: _covariance_as(C, W, wdt), lambda W=W: Ctd.T @ W)
        else:
            # in turn: each splits its sparse products over both cores, and Ct^T W's
            # triangular solve takes both BLAS threads (overlapped, each side would run on
            # one core, which was slower)
            CW = _covariance_as(C, W, wdt)
            UW = ctT(W)
        blocks = ([X, W], [CX, CW], [UX, UW])
        if P is not None:
            blocks = tuple(b + [q[:, live]] for b, q in zip(blocks, (P, CP, UP)))
        X, CX, UX, theta, (P, CP, UP) = _rayleigh_ritz(*blocks, m)
        it += 1
    if not converged:
        if raise_stalled:
            raise _Stalled(it, X)
        if futile is not None:
            why = (f"LOBPCG stopped after {it} steps: certify's check in the exact C_xx^-1 "
                   f"norm found the error estimate no smaller than {futile:.3g} (tol = "
                   f"{tol:g}) over the last {active().certify_stall_steps} or more steps, "
                   f"while the "
                   f"low-rank model's norm fell; the model preconditions the exact norm too "
                   f"poorly here. Use solver='iterative' or preconditioner='dense' for a "
                   f"certified solve")
        else:
            why = (f"LOBPCG did not meet its stopping test in {maxiter} iterations: "
                   f"{_unmet(float(rel[:k].max()), thresh, quad, tol, _lobpcg_error_name())}")
        warnings.warn(why, RuntimeWarning, stacklevel=3)
    A = X[:, :k]
    B = Wy.rmatmat(UX[:, :k])  # b = W_y^T Ct^T a (Eq. 15 up to the scale _finalize fixes)
    stats = dict(lobpcg_block=X, lobpcg_converged=converged,
                 lobpcg_residual=float(rel[:k].max()), lobpcg_error=quad,
                 lobpcg_images=images, lobpcg_dtype=np.dtype(wdt))
    if check_exact:
        stats.update(certify_steps=n_pcg, norm_ratio=scale)
    return A, B, theta[:k], it, stats




class _StoppingTest:
    """LOBPCG's stopping test at one step, on squared residual norms n2 (k,): the relative
    residuals sqrt(n2) / theta against ``thresh`` and the error estimate
    max(max(n2) over_gap, floor) against ``tol``."""

    def __init__(self, theta, thresh, over_gap, floor, tol):
        self.theta, self.thresh, self.over_gap = theta, thresh, over_gap
        self.floor, self.tol = floor, tol

    def error(self, n2):
        """The error estimate of squared norms n2."""
        return max(float(n2.max()) * self.over_gap, self.floor)

    def judge(self, n2, bound):
        """``judge`` of :func:`_exact_norm_bounds`: upper bounds that pass the test certify
        (True), lower bounds that fail it refute (False), anything else leaves the check
        undecided (None)."""
        ok = (float(np.sqrt(n2 / self.theta ** 2).max()) <= self.thresh
              and self.error(n2) <= self.tol)
        if bound == "upper":
            return True if ok else None
        return None if ok else False


def _exact_norm_bounds(C, precond, R, W, tau, dtype, judge, maxsteps=None):
    """Lower and upper bounds of ||r_i||^2_{C^-1} per column of R, by preconditioned CG.

    For any Z, q = 2 r^T z - z^T C z = ||r||^2_{C^-1} - ||z - C^-1 r||^2_C is a lower
    bound, and with s = r - C z, ||r||^2_{C^-1} = q + s^T C^-1 s <= q + ||s||^2 / tau
    (C = (1 - tau) G + tau I >= tau I): both tighten as CG on C Z = R converges.  Started
    from W = T R (T the preconditioner, which also preconditions CG).  ``judge(n2, bound)``
    gets the bounds after each step ('lower' first, then 'upper') and returns True
    (certified), False (refuted) or None (go on).

    Returns
    -------
    lower, upper : (b,) float64;  steps : int;  verdict : True, False or None (undecided
    after ``maxsteps``)
    """
    maxsteps = active().certify_maxsteps if maxsteps is None else maxsteps
    R = np.ascontiguousarray(R, dtype=dtype)
    Z = np.array(W, dtype=dtype)
    CZ = _covariance_as(C, Z, dtype)
    S = R - CZ
    P = None
    rz = None
    steps = 0
    while True:
        lower = np.maximum(2.0 * np.einsum("ij,ij->j", R, Z, dtype=np.float64)
                           - np.einsum("ij,ij->j", Z, CZ, dtype=np.float64), 0.0)
        verdict = judge(lower, "lower")
        upper = (lower + np.einsum("ij,ij->j", S, S, dtype=np.float64) / tau if tau > 0
                 else np.full_like(lower, np.inf))
        if verdict is None:
            verdict = judge(upper, "upper")
        if verdict is not None or steps >= maxsteps:
            return lower, upper, steps, verdict
        Q = np.asarray(precond(S), dtype=dtype)
        rz_new = np.einsum("ij,ij->j", S, Q, dtype=np.float64)
        P = Q if P is None else Q + P * (rz_new / np.maximum(rz, 1e-300)).astype(dtype)
        rz = rz_new
        CP = _covariance_as(C, P, dtype)
        pcp = np.einsum("ij,ij->j", P, CP, dtype=np.float64)
        alpha = np.where(pcp > 0, rz / np.maximum(pcp, 1e-300), 0.0).astype(dtype)
        Z += P * alpha
        CZ += CP * alpha
        S -= CP * alpha
        steps += 1


def _breakdown(theta, k, omega_max):
    """What shows that LOBPCG broke down (see _lobpcg)."""
    if theta.size < k:
        return f"{theta.size} independent Ritz vectors for {k} components"
    return (f"Ritz value {float(theta[k - 1]):.6g} above the cap {omega_max:.6g} on every "
            f"eigenvalue")


def _preconditioned_norms(R, W):
    """||r_i||_T = sqrt(r_i^T T r_i) per column, W = T R; inf where that is negative
    beyond rounding: T is then not positive definite in the working precision (C_xx too
    ill-conditioned for it, e.g. a tau far below the scale of X^T X), and the residual is
    unknown, not zero."""
    q = (R * W).sum(axis=0)
    rn = np.sqrt(np.maximum(q, 0.0))
    neg = np.flatnonzero(q < 0)
    if neg.size:  # (rare: the rounding bound only for these columns)
        Rn, Wn = R[:, neg], W[:, neg]
        bound = 10.0 * np.finfo(R.dtype).eps * np.sqrt((Rn * Rn).sum(axis=0)
                                                        * (Wn * Wn).sum(axis=0))
        rn[neg[q[neg] < -bound]] = np.inf
    return rn


def _unmet(residual, thresh, error, tol, what="squared residual over the gap"):
    """Both parts of the iterative solvers' stopping test, the failed one(s) marked: with
    clustered correlations the residual can meet its target while the squared residual over
    a tiny gap does not."""
    def part(name, value, target):
        return f"{name} {value:.3g} ({'above' if value > target else 'within'} {target:.2g})"

    return (part("relative residual", residual, thresh) + ", "
            + part(f"error estimate ({what})", error, tol))


def _covariance_as(C, V, dtype):
    """C V in the working precision ``dtype`` (accumulated in it where C can: see
    :meth:`RegularizedGram.matmat_as`)."""
    if isinstance(C, RegularizedGram):
        return C.matmat_as(V, dtype)
    return np.ascontiguousarray(C.matmat(V), dtype=dtype)


def _cross_as(cross, V, dtype, transpose=False):
    """C_xy V (C_xy^T V with ``transpose``) in the working precision ``dtype`` (see
    :meth:`CrossCovariance.matmat_as`; any other operator's product is rounded)."""
    if isinstance(cross, CrossCovariance):
        return cross.matmat_as(V, dtype, transpose)
    return np.ascontiguousarray(cross.rmatmat(V) if transpose else cross.matmat(V), dtype=dtype)


def _rayleigh_ritz(S, CS, US, m, extra=()):
    """Top-m Ritz pairs of (K, C) on the span of the blocks S = [X, W, P] (lists of (d, b_i)).

    CS, US are the blocks' images C S and Ct^T S (the carried images drift from the exact
    ones by rounding, so every Gram block is formed, X^T C X included).  Returns the new X,
    C X, Ct^T X (d x m), the Ritz values, and (P, CP, UP): the part of the Ritz vectors
    outside the first block (LOBPCG's implicit search direction; None for a single block).
    With ``extra`` (further lists of images of the blocks, e.g. tau-independent ones), a
    sixth item holds their images of the new X.
    """
    nb = [b.shape[1] for b in S]
    off = np.concatenate([[0], np.cumsum(nb)])
    tot = off[-1]
    G = np.empty((tot, tot))
    for i in range(len(S)):
        for j in range(i, len(S)):
            blk = tall_tmatmul(S[i], CS[j])
            G[off[i]:off[i + 1], off[j]:off[j + 1]] = blk
            G[off[j]:off[j + 1], off[i]:off[i + 1]] = blk.T
    Ucat = np.hstack(US) if len(US) > 1 else US[0]
    H = np.asarray(Ucat.T @ Ucat, dtype=np.float64)
    # C-orthonormalise the basis: eigendecomposition of its diagonally scaled Gram matrix
    dg = np.sqrt(np.maximum(np.diag(G), 1e-300))
    Gn = G / dg[:, None] / dg[None, :]
    with small_blas(0):
        lam, Q = la.eigh(0.5 * (Gn + Gn.T), driver="evd", check_finite=False)
    single = S[0].dtype == np.float32
    keep = lam > (active().lobpcg_drop_single if single else active().lobpcg_drop) * lam.max()
    Z = (Q[:, keep] / np.sqrt(lam[keep])) / dg[:, None]  # basis coefficients, (tot, r)
    Hr = Z.T @ H @ Z
    theta, Yr = _top_eigh(0.5 * (Hr + Hr.T), min(m, Z.shape[1]))
    Cf = (Z @ Yr).astype(S[0].dtype)  # (tot, m), in the blocks' precision
    first = nb[0]

    def combine(blocks):
        # P = W c_W + P c_P first, then X = X c_X + P (one pass over the wide blocks)
        rest = None
        for b, lo, hi in zip(blocks[1:], off[1:-1], off[2:]):
            part = tall_matmul(b, Cf[lo:hi])
            if rest is None:
                rest = part
            else:
                rest += part
        head = tall_matmul(blocks[0], Cf[:first])
        if rest is not None:
            head += rest
        return head, rest

    Xn, Pn = combine(S)
    CXn, CPn = combine(CS)
    UXn, UPn = combine(US)
    if extra:
        return Xn, CXn, UXn, theta, (Pn, CPn, UPn), [combine(e)[0] for e in extra]
    return Xn, CXn, UXn, theta, (Pn, CPn, UPn)


def _is_dual(inv):
    return inv.method == "dense" and getattr(inv, "dense_space", None) == "dual"


def _dual_ready(xinv, yinv, cross):
    """C_xx^-1 dense in its dual (n x n) form, C_yy^-1 dense (either form), and C_xy =
    Xc^T M with M at hand."""
    if not (_is_dual(xinv) and yinv.method == "dense"):
        return False
    m = getattr(cross, "_m", None)
    return m is not None and m.shape[0] == xinv.factor.n_samples == yinv.factor.n_samples


def _from_galerkin(H0, xinv, Wy, cross, k):
    """Projections from the unwhitened Galerkin matrix H0 = C_xy^T C_xx^-1 C_xy (d2 x d2).

    The top-k eigenvectors V_k of W_y H0 W_y^T give b = W_y^T v and a = C_xx^-1 C_xy b (Eq.
    15 up to the scale _finalize fixes).
    """
    H = Wy.matmat(np.ascontiguousarray(Wy.matmat(H0).T))  # W_y (.) W_y^T
    omega, Vk = _top_eigh(H, k)
    B = Wy.rmatmat(Vk)
    return xinv.matmat(cross.matmat(B)), B, omega


def _solve_dual(xinv, yinv, Wy, cross, k):
    """Eq. 14-15 through the dual (n x n) form of C_xx^-1, for n < d1.

    With Kc = Xc Xc^T and L the Cholesky factor of (1 - tau) Kc + tau I (held by ``xinv``),
    Xc C_xx^-1 Xc^T = (I - tau (L L^T)^-1) / (1 - tau), so the Galerkin matrix is
    C_xy^T C_xx^-1 C_xy = (M^T M - tau Z^T Z) / (1 - tau) with Z = L^-1 M, whitened by C_yy's
    factor: no d1 x d2 block, no eigendecomposition of Kc.

    With n < d2 as well (C_yy^-1 dual too) the whole problem is solved in n-space (kernel
    CCA with linear kernels): with Xc = U_x diag(sqrt(l_x)) V_x^T, Xc C_xx^-1 Xc^T =
    U_x G_x U_x^T, G_x = diag(l_x / ((1 - tau) l_x + tau)), so the nonzero omega are the
    eigenvalues of the r x r matrix G_x^1/2 U_x^T (M C_yy^-1 M^T) U_x G_x^1/2 (r <= n), with
    M C_yy^-1 M^T formed in n-space from the dual form of C_yy^-1.  Then b = C_yy^-1 M^T U_x
    G_x^1/2 u and a = C_xx^-1 C_xy b: O(n^2 r) instead of a d2 x d2 problem.
    """
    tau = xinv.tau
    M = cross._m
    if not _is_dual(yinv):
        Md = M.toarray() if sp.issparse(M) else np.asarray(M)
        Md = np.asarray(Md, dtype=np.float64)
        with small_blas(Md.shape[1]):
            if tau == 1.0:  # C_xx = I: M^T Kc M
                H = Md.T @ (xinv.factor._src.dense_outer_gram() @ Md)
            else:
                Z = la.solve_triangular(xinv._dual_chol, Md, lower=True, check_finite=False)
                H = Md.T @ Md
                H -= tau * (Z.T @ Z)
                del Z
                H /= 1.0 - tau
        del Md
        return _from_galerkin(H, xinv, Wy, cross, k)
    Ux, lx, _ = xinv.factor.dual_eigh()
    gx = np.sqrt(lx / ((1.0 - tau) * lx + tau))
    W = Ux * gx  # U_x G_x^1/2, (n, r_x)
    _, ly, Vy = yinv.factor.dual_eigh()
    ty = yinv.tau
    MV = np.asarray(M @ Vy, dtype=np.float64)  # (n, r_y)
    if sp.issparse(M):
        MM = np.asarray((M @ M.T).toarray(), dtype=np.float64)
    else:
        M64 = np.asarray(M, dtype=np.float64)
        MM = M64 @ M64.T
    # M C_yy^-1 M^T, C_yy^-1 = V_y diag(1 / ((1 - tau) l_y + tau)) V_y^T + (I - V_y V_y^T) / tau
    # (tau > 0 here: with tau = 0 and n < d2 the dual inverse already refused a singular C_yy)
    N = (MV / ((1.0 - ty) * ly + ty)) @ MV.T
    N += (MM - MV @ MV.T) / ty
    H = W.T @ N @ W
    omega, Uk = _top_eigh(H, min(k, H.shape[0]))
    B = yinv.matmat(np.asarray(M.T @ (W @ Uk), dtype=np.float64))
    A = xinv.matmat(cross.matmat(B))
    return A, B, omega


def _keeps_dense(cross):
    """Whether ``cross`` is a CrossCovariance that keeps a dense X^T M for its products."""
    keeps = getattr(cross, "_keeps_dense", None)
    return keeps is not None and keeps()


def _sparse_cross(cross):
    """True for a CrossCovariance with sparse factors (C_xy = sparse - rank one)."""
    if not (hasattr(cross, "tosparse") and hasattr(cross, "rank_one")):
        return False
    xd, m = getattr(cross, "_x", None), getattr(cross, "_m", None)
    return xd is None or (xd.sparse and sp.issparse(m))


class _WhitenedCross(LinearOperator):
    """T = W_x C_xy W_y^T as a (d1, d2) operator.

    ``work`` float32 runs the C_xy products (and whatever W_y does: pass its single
    precision copy) in float32, for a starting guess that LOBPCG refines; the results are
    float64 either way.
    """

    def __init__(self, Wx, cross, Wy, work=np.float64):
        self.Wx, self.cross, self.Wy = Wx, cross, Wy
        self.work = np.dtype(work)
        super().__init__(dtype=np.float64, shape=cross.shape)

    def _matmat(self, V):
        V = np.ascontiguousarray(self.Wy.rmatmat(np.asarray(V)), dtype=self.work)
        return self.Wx.matmat(np.asarray(_cross_as(self.cross, V, self.work), dtype=np.float64))

    def _rmatmat(self, U):
        U = np.ascontiguousarray(self.Wx.rmatmat(np.asarray(U)), dtype=self.work)
        return np.asarray(self.Wy.matmat(_cross_as(self.cross, U, self.work, transpose=True)),
                          dtype=np.float64)

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _rmatvec(self, u):
        return self._rmatmat(np.asarray(u).reshape(-1, 1)).reshape(-1)

    def _adjoint(self):
        return _WhitenedCrossT(self)


class _WhitenedCrossT(LinearOperator):
    def __init__(self, T):
        self.T_ = T
        super().__init__(dtype=np.float64, shape=(T.shape[1], T.shape[0]))

    def _matmat(self, U):
        return self.T_._rmatmat(U)

    def _rmatmat(self, V):
        return self.T_._matmat(V)

    def _matvec(self, u):
        return self.T_._rmatvec(u)

    def _rmatvec(self, v):
        return self.T_._matvec(v)


def _krylov(xinv, Wy, cross, k, p, tol, random_state, approx_xinv, max_expansions=100,
            raise_stalled=False):
    """Block Davidson (Krylov-Schur restarted) on G = W_y C_xy^T C_xx^-1 C_xy W_y^T.

    Each expansion solves C_xx Z = C_xy W_y^T V for the new block only (block CG); the
    variational form Ct^T Z + Z^T (Ct - C_xx Z) is used for the Rayleigh-Ritz matrix so that
    the solve error perturbs the Ritz values only to second order.  (Loosening the early
    solves -- inexact Davidson -- was tried and stagnated at the early solves' accuracy.)
    """
    d1, d2 = cross.shape
    m = min(k + p, d2)
    approx = _approx_of(xinv) if approx_xinv is None else approx_xinv
    # starting subspace from the cheap whitened operator
    T = _WhitenedCross(approx.inv_sqrt(), cross, Wy)
    _, _, Vt = randomized_svd(T, m, oversamples=min(p, d2 - m), n_iter=2,
                              random_state=random_state)
    n_cg = 0

    def apply(V):
        nonlocal n_cg
        Ct = cross.matmat(Wy.rmatmat(V))
        Z, R = xinv.solve_with_residual(Ct)
        n_cg += getattr(xinv, "n_iter_", 0)
        GV = Wy.matmat(cross.rmatmat(Z))
        return Ct, Z, R, GV

    def rr_matrix(Ct, Z, R):
        H = Ct.T @ Z + Z.T @ R  # = Ct^T C^-1 Ct - E^T C E for the solve error E
        return 0.5 * (H + H.T)

    V = _orth(np.ascontiguousarray(Vt.T))
    Ct, Z, R, GV = apply(V)
    max_basis = max(3 * m, m + 2 * k)
    thresh = np.sqrt(tol)
    history = []
    for _ in range(max_expansions):
        theta, S = _top_eigh(rr_matrix(Ct, Z, R), min(m, V.shape[1]))
        Xr = V @ S
        GX = GV @ S
        Res = GX[:, :k] - Xr[:, :k] * theta[:k]
        rn = np.linalg.norm(Res, axis=0)
        rel = rn / np.maximum(np.abs(theta[:k]), 1e-300)
        # the Ritz values of the wanted block are off by about ||r||^2 / gap, the gap to the
        # rest of the spectrum (estimated by the next Ritz value): with saturated, clustered
        # correlations (text views at a small tau: gaps of order 1e-5) sqrt(tol) residuals
        # are not enough
        gap = (theta[k - 1] - theta[k]) if theta.size > k else theta[k - 1]
        quad = float(rn.max()) ** 2 / max(float(gap), 1e-300) / max(float(theta[k - 1]), 1e-300)
        if rel.max() <= thresh and quad <= tol:
            break
        history.append(float(rel.max()))
        if raise_stalled and len(history) >= 8 and min(history[-4:]) > 0.5 * min(history[:-4]):
            raise _Stalled(n_cg)  # less than 2x progress in 4 expansions
        if V.shape[1] + k > max_basis:  # thick restart on the Ritz block
            V, GV, Z, Ct, R = Xr, GX, Z @ S, Ct @ S, R @ S
        W = _project_out(Res.copy(), V)
        nrm = np.linalg.norm(W, axis=0)
        W = W[:, nrm > 1e-12 * max(float(nrm.max()), 1e-300)]
        if W.shape[1] == 0:
            break
        W = _orth(_project_out(W, V))
        Ctw, Zw, Rw, GW = apply(W)
        V = np.hstack([V, W])
        GV = np.hstack([GV, GW])
        Z = np.hstack([Z, Zw])
        Ct = np.hstack([Ct, Ctw])
        R = np.hstack([R, Rw])
    else:
        if raise_stalled:
            raise _Stalled(n_cg)
        warnings.warn(f"the Krylov iteration did not meet its stopping test: "
                      f"{_unmet(float(rel.max()), thresh, quad, tol)}", RuntimeWarning,
                      stacklevel=3)
    theta, S = _top_eigh(rr_matrix(Ct, Z, R), k)
    B = Wy.rmatmat(V @ S)
    A = Z @ S
    return A, B, theta, n_cg


def _achieved_rank(exc, A, B, omega, xinv, yinv, cross):
    """The RankDeficientError to raise for ``exc``: its rank counted again from the
    achieved correlations of the components it kept (a model's rounding can count noise:
    see the check after _finalize), so that the n_components it advises is accepted."""
    r = min(exc.rank, int(np.asarray(omega).size), A.shape[1], B.shape[1])
    if r < 1:
        return exc
    try:
        s = _finalize(A[:, :r], B[:, :r], xinv, yinv, cross).correlations
    except FactorizationError:  # dependent projections: already noise among them
        return exc
    return RankDeficientError(_nonzero(s * s), exc.n_components)


def _nonzero(omega):
    """How many of ``omega`` are (numerically) nonzero: above 1e-12 of the largest."""
    top = float(np.max(omega)) if omega.size else 0.0
    return int(np.sum(omega > max(top, 1e-300) * 1e-12)) if top > 0 else 0


def _check_rank(omega, k):
    """Refuse components with (numerically) zero correlation instead of returning noise."""
    r = _nonzero(omega)
    if r < k:
        raise RankDeficientError(r, k)


def _approx_of(xinv):
    """A whitenable cheap approximation of a RegularizedInverse: a 'randomized' one itself;
    for an iterative one its preconditioner as a 'randomized' inverse sharing the same
    low-rank factor."""
    if xinv.method != "iterative":
        return xinv
    return RegularizedInverse(xinv.factor, xinv.tau, method="randomized", rank=xinv.rank_,
                              tail="diagonal")


def _finalize(A, B, xinv, yinv, cross, x_images=None):
    """Rayleigh-Ritz in the exact metrics, sorting, signs and a-posteriori residuals.

    Within span(A) x span(B) the best pairs are A Rx^-1 U, B Ry^-1 W from the SVD
    U S W^T = Rx^-T (A^T C_xy B) Ry^-1 (Rx, Ry Cholesky factors of A^T Cxx A, B^T Cyy B):
    exactly Cxx- and Cyy-orthonormal, and their correlations S are achieved values (for an
    exact subspace they are the canonical correlations).  ``x_images`` = (Xc^T Xc A,
    C_xy^T A) in float64, when at hand, replaces the products with A.

    The tall blocks (d1 rows) are touched by a few products only: the covariance images
    C A = (1 - tau) G A + tau A are never formed, the column scaling and the signs go into
    the small transforms, and the result also carries ``projection_moments`` =
    (||Xc a_j||^2, ||Yc b_j||^2, a_j^T C_xy b_j), (k,) each, from the k x k blocks (Xc, Yc
    centred when the covariances are): the second moments of the training projections.
    """
    tau = xinv.covariance.tau
    k = A.shape[1]
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if x_images is None:
        GA = xinv.covariance.gram_matmat(A)
        CyxA = None
    else:
        GA = np.asarray(x_images[0], dtype=np.float64)
        CyxA = np.asarray(x_images[1], dtype=np.float64)
    GB = yinv.gram_matmat(B)
    # the products with tall blocks split their rows over both cores (BLAS is held to one
    # thread in the fast solvers)
    AGA, BGB = tall_tmatmul(A, GA), tall_tmatmul(B, GB)
    Gx = (1.0 - tau) * AGA + tau * tall_tmatmul(A, A)  # A^T Cxx A
    Gy = (1.0 - tau) * BGB + tau * tall_tmatmul(B, B)
    # columns scaled to unit C-norm first so that the dependence test below is scale-free
    sa = 1.0 / np.sqrt(np.maximum(np.diag(Gx), 1e-300))
    sb = 1.0 / np.sqrt(np.maximum(np.diag(Gy), 1e-300))
    CxyB = cross.matmat(B)
    if CyxA is None:
        CyxA = cross.rmatmat(A)
    K = tall_tmatmul(A, CxyB)
    Rx, okx = _safe_chol(Gx * np.outer(sa, sa))
    Ry, oky = _safe_chol(Gy * np.outer(sb, sb))
    if not (okx and oky):
        raise FactorizationError(
            "the computed projections are linearly dependent in the covariance metric "
            "(n_components exceeds the rank of the cross-covariance?); reduce "
            "n_components or increase tau")
    Ks = K * np.outer(sa, sb)
    Kw = la.solve_triangular(Rx, la.solve_triangular(Ry, Ks.T, trans="T").T, trans="T")
    U, s, Wt = la.svd(Kw)
    Tx = sa[:, None] * la.solve_triangular(Rx, U)  # A Tx: the new A
    Ty = sb[:, None] * la.solve_triangular(Ry, Wt.T)
    A = tall_matmul(A, Tx)
    # deterministic signs: largest-magnitude entry of each a_j positive
    idx = np.argmax(np.abs(A), axis=0)
    sg = np.sign(A[idx, np.arange(k)])
    sg[sg == 0] = 1.0
    A *= sg
    Tx *= sg
    Ty *= sg
    B = tall_matmul(B, Ty)
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
        raise FactorizationError("non-finite projections: the factorisation broke down")
    # residual of Eq. 11 for z = (a; b): r_a = C_xy b - s Cxx a, r_b = C_yx a - s Cyy b,
    # with Cxx a = (1 - tau) G a + tau a
    ra = tall_matmul(CxyB, Ty)
    ra -= tall_matmul(GA, Tx * ((1.0 - tau) * s))
    ra -= A * (tau * s)
    rb = tall_matmul(CyxA, Tx)
    rb -= tall_matmul(GB, Ty * ((1.0 - tau) * s))
    rb -= B * (tau * s)
    rna = _inv_norm2(xinv, ra)
    rnb = _inv_norm2(yinv, rb)
    resid = np.sqrt(0.5 * (rna + rnb))
    moments = (np.einsum("ij,ik,kj->j", Tx, AGA, Tx), np.einsum("ij,ik,kj->j", Ty, BGB, Ty),
               np.einsum("ij,ik,kj->j", Tx, K, Ty))
    return CCAResult(A, B, s * s, correlations=s, residual_norms=resid, tau=xinv.tau,
                     rank=getattr(xinv, "rank_", 0), projection_moments=moments)


def _safe_chol(G):
    G = 0.5 * (G + G.T)
    try:
        R = la.cholesky(G, lower=False, check_finite=False)
    except la.LinAlgError:
        return None, False
    d = np.abs(np.diag(R))
    if d.min() <= 1e-7 * d.max():
        return None, False
    return R, True


def _inv_norm2(inv, R):
    """Column-wise ||r||^2_{C^-1}: exact for a dense inverse (or one preconditioned by
    it), bounded by ||r||^2 / tau (C >= tau I) otherwise."""
    if inv.method == "dense":
        return np.maximum((R * inv.matmat(R)).sum(axis=0), 0.0)
    if inv.exact_preconditioner:
        return np.maximum((R * inv.precondition(R)).sum(axis=0), 0.0)
    if inv.tau > 0:
        return np.einsum("ij,ij->j", R, R) / inv.tau
    return (R * inv._lowrank_inverse(R)).sum(axis=0)
