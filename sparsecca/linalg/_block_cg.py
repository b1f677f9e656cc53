"""Block preconditioned conjugate gradients (:func:`block_cg`)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as la

from ._errors import FactorizationError
from ._gram import _as_block
from ._result import _apply
from ._threads import small_blas
from ._validation import check_positive_int, check_tolerance

__all__ = ["block_cg"]


def _chol_or_none(G):
    """Lower Cholesky factor of a small SPD matrix, or None if it is (nearly) singular."""
    try:
        L = la.cholesky(G, lower=True, check_finite=False)
    except la.LinAlgError:
        return None
    d = np.diag(L)
    if not np.all(np.isfinite(d)) or d.min() ** 2 <= 1e-13 * G.shape[0] * d.max() ** 2:
        return None
    return L


def block_cg(A, B, *, M=None, X0=None, rtol=1e-8, maxiter=500):
    """Block preconditioned conjugate gradients for A X = B, A symmetric positive definite.

    Each iteration applies A to one block of search directions, A-orthonormalised by a
    small eigendecomposition (directions that have become linearly dependent -- converged
    or redundant right-hand sides -- are dropped instead of breaking the recurrence), and
    conjugated against the previous block.  Columns that meet ``rtol`` leave the search block.
    Started from zero the iterate is a Galerkin approximation: B^T X = X^T A X, so B^T X
    approaches B^T A^-1 B from below with an error quadratic in the A-norm error of X.

    Parameters
    ----------
    A : (d, d) operator / array, symmetric positive definite
    B : (d, m) or (d,) right-hand sides
    M : (d, d) operator, optional
        Symmetric positive definite preconditioner (an approximation of A^-1).
    X0 : (d, m) initial guess, optional
    rtol : float in (0, 1)
        Stop when every column has ||r||_M <= rtol ||b||_M.
    maxiter : int >= 0

    Returns
    -------
    X : (d, m) (or (d,)) float64
    info : dict with 'n_iter', 'residuals' (final relative residual per column),
        'converged' (bool), 'history' (max relative residual per iteration) and
        'residual_block' (the final residual B - A X)

    Raises
    ------
    TypeError, ValueError
        For arguments of the wrong kind or shape, or non-finite B or X0.
    FactorizationError
        If A is found not to be positive definite (a non-positive curvature direction), or
        M (b^T M b <= 0 for a nonzero right-hand side b).

    Warns
    -----
    RuntimeWarning
        If ``rtol`` is not reached in ``maxiter`` iterations.

    References
    ----------
    D. P. O'Leary, "The block conjugate gradient algorithm and related methods", Linear
    Algebra and its Applications 29, 293-322, 1980.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg._inverse import block_cg
    >>> rng = np.random.default_rng(0)
    >>> F = rng.standard_normal((60, 30))
    >>> A = F.T @ F + 0.1 * np.eye(30)
    >>> B = rng.standard_normal((30, 3))
    >>> X, info = block_cg(A, B, rtol=1e-10)
    >>> X.shape, info["converged"]
    ((30, 3), True)
    >>> bool(np.allclose(A @ X, B))
    True

    With the exact inverse as preconditioner one iteration suffices:

    >>> X, info = block_cg(A, B, M=np.linalg.inv(A), rtol=1e-10)
    >>> info["n_iter"]
    1
    """
    B, one_d, X0, rtol, maxiter = _check_block_cg(A, B, M, X0, rtol, maxiter)
    with small_blas(B.shape[1]):
        X, info = _block_cg(A, B, M, X0, rtol, maxiter)
    return (X[:, 0] if one_d else X), info


def _check_block_cg(A, B, M, X0, rtol, maxiter):
    """The arguments of :func:`block_cg`: B as a finite (d, m) float64 block (and whether it
    was 1-D), X0 as (d, m) or None, rtol and maxiter; O(d m), once per call."""
    try:
        B, one_d = _as_block(B)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"B must be a (d,) or (d, m) real array, got {type(B).__name__} "
                        f"({exc})") from None
    if B.ndim != 2:
        raise ValueError(f"B must be a (d,) or (d, m) array, got shape {B.shape}")
    if not np.all(np.isfinite(B)):
        raise ValueError("B must contain only finite values")
    d = B.shape[0]
    for name, op in (("A", A), ("M", M)):
        if op is None and name == "M":
            continue
        shape = getattr(op, "shape", None)
        if shape is None or not hasattr(op, "__matmul__"):
            raise TypeError(f"{name} must be a (d, d) array or LinearOperator, got "
                            f"{type(op).__name__}")
        if tuple(shape) != (d, d):
            raise ValueError(f"{name} must be (d, d) = ({d}, {d}) like the rows of B, got "
                             f"shape {tuple(shape)}")
    if X0 is not None:
        X0 = np.asarray(X0, dtype=np.float64)
        want = (d,) if one_d else B.shape
        if X0.shape != want and not (one_d and X0.shape == B.shape):
            raise ValueError(f"X0 must have the shape of B, {want}, got {X0.shape}")
        if not np.all(np.isfinite(X0)):
            raise ValueError("X0 must contain only finite values")
    rtol = check_tolerance(rtol, "rtol")
    maxiter = check_positive_int(maxiter, "maxiter", minimum=0)
    return B, one_d, X0, rtol, maxiter


def _block_cg(A, B, M, X0, rtol, maxiter):
    d, m = B.shape

    def Aop(V):
        return np.asarray(_apply(A, V), dtype=np.float64)

    def Mop(V):
        return np.asarray(M @ V, dtype=np.float64) if M is not None else V.copy()

    if X0 is None:
        X = np.zeros_like(B)
        R = B.copy()
    else:
        X = np.array(X0, dtype=np.float64).reshape(d, m)
        R = B - Aop(X)
    MB = Mop(B)
    bmb = (B * MB).sum(axis=0)
    if not np.all(bmb > 0):
        # b^T M b <= 0 for b != 0 (M zero or indefinite) would read as a zero residual and
        # "converge" at once; b = 0 columns are legitimately 0
        bad = ~(bmb > 0) & np.any(B != 0, axis=0)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise FactorizationError(f"the preconditioner M is not positive definite (b^T M b "
                                     f"= {bmb[j]:.3g} <= 0 for column {j} of B)")
    bnorm = np.sqrt(np.maximum(bmb, 0.0))
    bnorm[bnorm == 0] = 1.0
    Z = MB if X0 is None else Mop(R)
    res = np.sqrt(np.maximum((R * Z).sum(axis=0), 0.0)) / bnorm
    history = [float(res.max()) if m else 0.0]
    Pp = APp = Lp = None
    it = 0
    converged = bool(res.max() <= rtol) if m else True
    while not converged and it < maxiter:
        P = Z[:, res > rtol]
        if Pp is not None:  # conjugate against the previous block
            P -= Pp @ la.cho_solve((Lp, True), APp.T @ P, check_finite=False)
        AP = Aop(P)
        Gm = P.T @ AP
        Gm = 0.5 * (Gm + Gm.T)
        L = _chol_or_none(Gm)
        if L is None:
            # the block lost rank (converged or redundant columns): keep an A-orthonormal
            # basis of what is left instead of breaking down
            with small_blas(0):
                w, U = la.eigh(Gm, check_finite=False)
            wmax = float(w.max()) if w.size else 0.0
            if wmax <= 0 or not np.isfinite(wmax):
                raise FactorizationError(
                    "block CG found a direction of non-positive curvature: the operator is "
                    "not positive definite (singular covariance? use tau > 0)")
            keep = w > wmax * 1e-13 * Gm.shape[0]
            S = U[:, keep] / np.sqrt(w[keep])
            P = P @ S
            AP = AP @ S
            L = np.eye(P.shape[1])
        alpha = la.cho_solve((L, True), P.T @ R, check_finite=False)
        X += P @ alpha
        R -= AP @ alpha
        Z = Mop(R)
        res = np.sqrt(np.maximum((R * Z).sum(axis=0), 0.0)) / bnorm
        it += 1
        history.append(float(res.max()))
        if not np.all(np.isfinite(res)):
            raise FactorizationError("block CG produced non-finite residuals")
        converged = bool(res.max() <= rtol)
        Pp, APp, Lp = P, AP, L
    if not converged:
        warnings.warn(f"block CG did not reach rtol={rtol:g} in {maxiter} iterations "
                      f"(max relative residual {res.max():.3g})", RuntimeWarning,
                      stacklevel=2)
    info = {"n_iter": it, "residuals": res, "converged": converged, "history": history,
            "residual_block": R}
    return X, info

