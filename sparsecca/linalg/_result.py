"""The result of a solve (:class:`CCAResult`) and the step that finishes every strategy.

:func:`_finalize` redoes the Rayleigh-Ritz step in the exact metrics (so A^T Cxx A = I and
B^T Cyy B = I hold to rounding whatever the solver) and attaches the residual norms of
the pencil of Eq. 11, an a-posteriori bound on the error of each correlation.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as la

from ._errors import FactorizationError, RankDeficientError, SolverToleranceError
from ._threads import tall_matmul, tall_tmatmul
from ._validation import ShapeCheckedOperator

__all__ = ["CCAResult"]

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
        GA = xinv.covariance._gram_matmat(A)
        CyxA = None
    else:
        GA = np.asarray(x_images[0], dtype=np.float64)
        CyxA = np.asarray(x_images[1], dtype=np.float64)
    GB = yinv._gram_matmat(B)
    # the products with tall blocks split their rows over both cores (BLAS is held to one
    # thread in the fast solvers)
    AGA, BGB = tall_tmatmul(A, GA), tall_tmatmul(B, GB)
    Gx = (1.0 - tau) * AGA + tau * tall_tmatmul(A, A)  # A^T Cxx A
    Gy = (1.0 - tau) * BGB + tau * tall_tmatmul(B, B)
    # columns scaled to unit C-norm first so that the dependence test below is scale-free
    sa = 1.0 / np.sqrt(np.maximum(np.diag(Gx), 1e-300))
    sb = 1.0 / np.sqrt(np.maximum(np.diag(Gy), 1e-300))
    CxyB = _apply(cross, B)
    if CyxA is None:
        CyxA = _apply(cross, A, adjoint=True)
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
        if inv.dense_space == "primal":
            # C = L L^T: r^T C^-1 r = ||L^-1 r||^2, one triangular solve instead of two
            W = inv.inv_sqrt().matmat(R)
            return np.einsum("ij,ij->j", W, W)
        return np.maximum((R * inv._matmat(R)).sum(axis=0), 0.0)
    if inv.exact_preconditioner:
        return np.maximum((R * inv._precondition(R)).sum(axis=0), 0.0)
    if inv.tau > 0:
        return np.einsum("ij,ij->j", R, R) / inv.tau
    return (R * inv._lowrank_inverse(R)).sum(axis=0)


def _nonzero(omega):
    """How many of ``omega`` are (numerically) nonzero: above 1e-12 of the largest."""
    top = float(np.max(omega)) if omega.size else 0.0
    return int(np.sum(omega > max(top, 1e-300) * 1e-12)) if top > 0 else 0


def _check_rank(omega, k):
    """Refuse components with (numerically) zero correlation instead of returning noise."""
    r = _nonzero(omega)
    if r < k:
        raise RankDeficientError(r, k)


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


def _apply(op, V, adjoint=False):
    """op V (op^T V with ``adjoint``) for a 2-D array V: the package's operators without
    their operand check (the engine's blocks have the shape), any other operator by its
    public product (``op @ V``: also an array or sparse matrix; op^T V: a LinearOperator)."""
    if isinstance(op, ShapeCheckedOperator):
        return op._rmatmat(V) if adjoint else op._matmat(V)
    return op.rmatmat(V) if adjoint else op @ V
