"""The direct strategies of the reduced problem ('full', 'dual', 'operator') and 'krylov'.

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

Also the dense and operator forms of C_xy W_y^T and the working-precision products that
:mod:`._lobpcg` shares.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from ._inverse import RegularizedInverse
from ._precision import in_precision
from ._result import _apply
from ._rsvd import _orth, _project_out, randomized_svd
from ._stopping import _Stalled, _unmet
from ._threads import small_blas
from ._thresholds import active


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
        return cross._toarray()
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


def _is_dual(inv):
    return inv.method == "dense" and getattr(inv, "dense_space", None) == "dual"


def _dual_ready(xinv, yinv, cross):
    """C_xx^-1 dense in its dual (n x n) form, C_yy^-1 dense (either form), and C_xy =
    Xc^T M with M at hand."""
    if not (_is_dual(xinv) and yinv.method == "dense"):
        return False
    m = getattr(cross, "_m", None)
    return m is not None and m.shape[0] == xinv.factor.n_samples == yinv.factor.n_samples


def _approx_of(xinv):
    """A whitenable cheap approximation of a RegularizedInverse: a 'randomized' one itself;
    for an iterative one its preconditioner as a 'randomized' inverse sharing the same
    low-rank factor."""
    if xinv.method != "iterative":
        return xinv
    return RegularizedInverse._trusted(xinv.factor, xinv.tau, "randomized", rank=int(xinv.rank_),
                                       tail="diagonal", max_dim=active().dense_max_dim)


def solve_direct(xinv, Wy, yinv, cross, k, strategy, opts, info=None):
    """(A, B, omega, n_cg) of the strategies other than 'lobpcg' (``opts``: SolveOptions;
    ``opts.fallback``: 'krylov' raises _Stalled instead of going on; ``opts.krylov_start``:
    its :class:`KrylovWarm` start, and ``info`` receives the next one)."""
    n_cg = 0
    d1, d2 = cross.shape
    if strategy == "full" and xinv.method == "randomized" and _sparse_cross(cross):
        # Galerkin matrix straight from the stored C_xy (minus its rank-one centring term:
        # the operator's kept dense X^T M when small, else the sparse one) and the
        # low-rank-plus-diagonal form of C_xx^-1 (no whitened d1 x d2 block): the
        # rerankers' repeated solves
        u, v = cross.rank_one()
        kept = getattr(cross, "kept_product", None)
        G = xinv._sandwich(kept() if kept is not None else cross.tosparse(copy=False), u, v)
        A, B, omega = _from_galerkin(G, xinv, Wy, cross, k)
    elif strategy == "dual":
        A, B, omega = _solve_dual(xinv, yinv, Wy, cross, k)
    elif strategy == "full" and xinv.method == "dense" and d1 < d2:
        A, B, omega = _solve_input_side(xinv, Wy, cross, k)
    elif strategy == "full":
        A, B, omega, n_cg = _solve_full(xinv, Wy, cross, k)
    elif strategy == "operator":
        Wx = xinv.inv_sqrt()
        T = _WhitenedCross(Wx, cross, Wy)
        U, s, Vt = randomized_svd(T, k, oversamples=opts.oversamples, n_iter=opts.n_iter,
                                  random_state=opts.random_state)
        A = Wx.rmatmat(U)
        B = Wy.rmatmat(Vt.T)  # a = W_x^T u carries Eq. 15's 1 / sqrt(omega) already
        omega = s * s
    else:
        A, B, omega, n_cg = _krylov(xinv, Wy, cross, k, opts.oversamples, opts.tol,
                                    opts.random_state, opts.approx_xinv,
                                    max_expansions=30 if opts.fallback else 100,
                                    raise_stalled=opts.fallback, start=opts.krylov_start,
                                    info=info)
    return A, B, omega, n_cg


def _solve_full(xinv, Wy, cross, k):
    """'full' through the products of ``xinv``: Z = C_xx^-1 Ct for all d2 columns."""
    Cxy = _dense_cross(cross)
    Ct = np.ascontiguousarray(Wy.matmat(Cxy.T).T)  # C_xy W_y^T, (d1, d2)
    del Cxy
    Z, R = xinv._solve_blocks(Ct, None)
    n_cg = getattr(xinv, "n_iter_", 0)
    # variational estimate of Ct^T Cxx^-1 Ct: its error -E^T Cxx E is second order in
    # the error E of Z (and a lower bound); R = 0 for the direct inverses
    H = Ct.T @ Z
    if xinv.method == "iterative":
        H += Z.T @ R
    del R
    omega, Vk = _top_eigh(H, k)
    B = Wy.rmatmat(Vk)
    A = Z @ Vk  # Eq. 15 up to the 1 / sqrt(omega) that _finalize's normalisation applies
    return A, B, omega, n_cg


def _from_galerkin(H0, xinv, Wy, cross, k):
    """Projections from the unwhitened Galerkin matrix H0 = C_xy^T C_xx^-1 C_xy (d2 x d2).

    The top-k eigenvectors V_k of W_y H0 W_y^T give b = W_y^T v and a = C_xx^-1 C_xy b (Eq.
    15 up to the scale _finalize fixes).
    """
    H = Wy.matmat(np.ascontiguousarray(Wy.matmat(H0).T))  # W_y (.) W_y^T
    omega, Vk = _top_eigh(H, k)
    B = Wy.rmatmat(Vk)
    return xinv._matmat(_apply(cross, B)), B, omega


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


class _WhitenedCross(LinearOperator):
    """T = W_x C_xy W_y^T as a (d1, d2) operator.

    ``work`` float32 runs the C_xy and W_y products in float32 (each cast once, with
    :func:`._precision.in_precision`), for a starting guess that LOBPCG refines; the results
    are float64 either way.
    """

    def __init__(self, Wx, cross, Wy, work=np.float64):
        self.Wx = Wx
        self.cross, self.Wy = in_precision(cross, work), in_precision(Wy, work)
        super().__init__(dtype=np.float64, shape=cross.shape)

    def _matmat(self, V):
        V = np.ascontiguousarray(self.Wy.rmatmat(np.asarray(V)))
        return self.Wx.matmat(np.asarray(self.cross._matmat(V), dtype=np.float64))

    def _rmatmat(self, U):
        U = np.ascontiguousarray(self.Wx.rmatmat(np.asarray(U)))
        return np.asarray(self.Wy.matmat(self.cross._rmatmat(U)), dtype=np.float64)

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


@dataclass
class KrylovWarm:
    """The Ritz block ``V`` (d2, m) a 'krylov' solve ended with (whitened by its C_yy
    whitener at ``tau``), the next solve's starting subspace.  Used as it is at another tau
    too: there it starts closer than the block mapped through the new whitener."""

    tau: float
    V: np.ndarray

    def start_for(self, m):
        """The block as a start of a solve with ``m`` columns, or None when narrower."""
        return None if self.V.shape[1] < m else self.V[:, :m]


def _krylov_start(xinv, Wy, cross, m, p, random_state, approx_xinv, start):
    """The orthonormal (d2, m) starting subspace: ``start`` when given, else a randomized
    SVD of the whitened C_xy through a cheap whitener of C_xx."""
    d2 = cross.shape[1]
    if start is None:
        approx = _approx_of(xinv) if approx_xinv is None else approx_xinv
        T = _WhitenedCross(approx.inv_sqrt(), cross, Wy)
        _, _, Vt = randomized_svd(T, m, oversamples=min(p, d2 - m), n_iter=2,
                                  random_state=random_state)
        start = Vt.T
    return _orth(np.array(start, dtype=np.float64, order="C"))


def _krylov(xinv, Wy, cross, k, p, tol, random_state, approx_xinv, max_expansions=100,
            raise_stalled=False, start=None, info=None):
    """Block Davidson (Krylov-Schur restarted) on G = W_y C_xy^T C_xx^-1 C_xy W_y^T.

    Each expansion solves C_xx Z = C_xy W_y^T V for the new block only (block CG); the
    variational form Ct^T Z + Z^T (Ct - C_xx Z) is used for the Rayleigh-Ritz matrix so that
    the solve error perturbs the Ritz values only to second order.  (Loosening the early
    solves -- inexact Davidson -- was tried and stagnated at the early solves' accuracy.)
    With a direct ``xinv`` (no solve error) the Rayleigh-Ritz matrix V^T G V is grown by the
    new block's columns instead.  Only the residuals of the Ritz pairs that have not met
    the stopping test expand the basis (soft locking).  ``start``: a :class:`KrylovWarm` of
    an earlier solve replaces the randomized starting subspace; ``info`` receives this
    solve's as 'krylov_warm'.
    """
    d1, d2 = cross.shape
    m = min(k + p, d2)
    direct = xinv.method != "iterative"
    V = _krylov_start(xinv, Wy, cross, m, p, random_state, approx_xinv,
                      None if start is None else start.start_for(m))
    n_cg = 0

    def apply(V):
        nonlocal n_cg
        Ct = _apply(cross, Wy.rmatmat(V))
        if direct:
            Z, R = xinv._matmat(Ct), None
        else:
            Z, R = xinv._solve_blocks(Ct, None)
            n_cg += getattr(xinv, "n_iter_", 0)
        GV = Wy.matmat(_apply(cross, Z, adjoint=True))
        return Ct, Z, R, GV

    def rr_matrix():
        if direct:
            return H
        Hv = Ct.T @ Z + Z.T @ R  # = Ct^T C^-1 Ct - E^T C E for the solve error E
        return 0.5 * (Hv + Hv.T)

    Ct, Z, R, GV = apply(V)
    H = V.T @ GV
    H = 0.5 * (H + H.T)
    if direct:
        Ct = None  # only the variational form needs it
    max_basis = max(3 * m, m + 2 * k)
    thresh = np.sqrt(tol)
    history = []
    for _ in range(max_expansions):
        theta, S = _top_eigh(rr_matrix(), min(m, V.shape[1]))
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
            V, GV, Z, H = Xr, GX, Z @ S, np.diag(theta)
            if not direct:
                Ct, R = Ct @ S, R @ S
        # the residuals of the pairs still open, by either test (soft locking)
        open_ = (rel > thresh) | (rn ** 2 / max(float(gap), 1e-300)
                                  / max(float(theta[k - 1]), 1e-300) > tol)
        W = _project_out(Res[:, open_], V)
        nrm = np.linalg.norm(W, axis=0)
        W = W[:, nrm > 1e-12 * max(float(nrm.max()), 1e-300)]
        if W.shape[1] == 0:
            break
        W = _orth(_project_out(W, V))
        Ctw, Zw, Rw, GW = apply(W)
        if direct:
            Hvw, Hww = V.T @ GW, W.T @ GW
            H = np.block([[H, Hvw], [Hvw.T, 0.5 * (Hww + Hww.T)]])
        else:
            Ct, R = np.hstack([Ct, Ctw]), np.hstack([R, Rw])
        V = np.hstack([V, W])
        GV = np.hstack([GV, GW])
        Z = np.hstack([Z, Zw])
    else:
        if raise_stalled:
            raise _Stalled(n_cg)
        warnings.warn(f"the Krylov iteration did not meet its stopping test: "
                      f"{_unmet(float(rel.max()), thresh, quad, tol)}", RuntimeWarning,
                      stacklevel=3)
    theta, S = _top_eigh(rr_matrix(), min(m, V.shape[1]))
    Xr = V @ S
    if info is not None:
        info["krylov_warm"] = KrylovWarm(xinv.tau, Xr)
    return Z @ S[:, :k], Wy.rmatmat(Xr[:, :k]), theta[:k], n_cg
