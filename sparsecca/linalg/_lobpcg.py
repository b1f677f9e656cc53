"""LOBPCG on the pencil (C_xy C_yy^-1 C_xy^T, C_xx): the iteration of the 'lobpcg' strategy.

K a = omega C a, K = Ct Ct^T, Ct = C_xy W_y^T, C = C_xx, is Eq. 11 with b eliminated (b =
W_y^T Ct^T a / sqrt(omega)), so the wanted a are its top eigenvectors; the iteration needs
one product with C per step for the new block W = T (K X - C X Theta) (T the
preconditioner of ``xinv``), and none of the inner block CG solves of 'full' / 'krylov'
(Knyazev 2001).  When it stops is the business of :class:`._stopping.StoppingMonitor`.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np
import scipy.linalg as la

from ._errors import FactorizationError
from ._precision import in_precision
from ._result import _check_rank
from ._rsvd import randomized_svd
from ._stopping import StoppingMonitor, _Stalled
from ._strategies import (
    _approx_of,
    _dense_whitened_cross,
    _keeps_dense,
    _top_eigh,
    _WhitenedCross,
)
from ._threads import run_pair, small_blas, tall_matmul, tall_tmatmul
from ._thresholds import active

__all__ = ["WarmBlock", "lobpcg_fits"]

def lobpcg_fits(d1, d2, k, p=None):
    """Whether 'auto' picks LOBPCG: a block of m = min(k + p, d2) columns with 4 m <= d1
    (the basis [X, W, P] must stay thin); p defaults to :func:`reduced_cca`'s."""
    p = _default_oversamples(k) if p is None else int(p)
    return 4 * min(k + p, d2) <= d1


def _default_oversamples(k):
    return max(10, k // 2)


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


class _SinglePrecisionLoss(FactorizationError):
    """LOBPCG's float32 blocks lost C_xx (see :func:`_lobpcg`): :func:`_solve` retries
    in float64."""


def _lobpcg(xinv, Wy, cross, k, p, tol, start=None, handover=None, callback=None,
            omega_max=None, certify=False, single=True):
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
    given the dense inverse by ``with_exact``; the low-rank model's norm can understate
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
    dominate the data).  The run casts its operators once, at its start
    (:func:`._precision.in_precision`).  The Rayleigh-Ritz eigenproblems stay float64,
    and _finalize redoes the last one in float64 in the exact metrics.

    ``handover`` (None, 'full' or 'dense': where the caller hands a stalled or slow run
    over to, see :class:`._stopping.StoppingMonitor`): unless None, a run that stops
    unconverged raises :class:`._stopping._Stalled` with its block instead of warning.

    Returns
    -------
    A : (d1, k), B : (d2, k), theta : (k,) Ritz values (omega), n_iter : int (iterations),
    stats : dict with ``lobpcg_block`` (d1, m), the final Ritz block (a warm start for a
        neighbouring problem), ``lobpcg_converged``, ``lobpcg_residual`` and
        ``lobpcg_error`` (the two stopping quantities at exit), and ``lobpcg_images``: the
        float64 (GX, MX) of a :class:`WarmBlock` for the final block when a warm start
        took no step (None otherwise)
    """
    m = min(k + p, cross.shape[1])
    wdt = np.float32 if single and tol >= active().lobpcg_single_tol else np.float64
    warm = None
    if isinstance(start, WarmBlock):
        warm, start = (start, None) if start.X.shape[1] >= m else (None, start.X)
    ops = _Products(xinv, Wy, cross, wdt, warm)
    X, CX, UX, theta, images = ops.start_block(xinv, Wy, cross, m, p, start, warm)
    # K = Ct Ct^T has rank <= rank(C_xy): fewer than k nonzero Ritz values means fewer than
    # k nonzero correlations (the start T Ct V0 has rank min(m, rank K))
    _check_rank(np.concatenate([theta, np.zeros(max(k - theta.size, 0))]), k)
    # certify: the exact norms are checked only under the model (the exact factor's norm is
    # exact)
    exact = certify and not xinv.exact_preconditioner
    monitor = StoppingMonitor(k, tol, omega_max=omega_max, handover=handover,
                              callback=callback)
    C, precond = xinv.covariance, xinv._precondition
    P = CP = UP = None
    it = 0
    while not monitor.at_limit(it):
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
        R = ops.ct(UX)
        R -= CX * theta
        W = precond(R)
        if exact:
            monitor.certify = (lambda judge, R=R, W=W: _exact_norm_bounds(
                C, precond, R[:, :k], W[:, :k], xinv.tau, wdt, judge))
        if monitor.report(it, theta, _preconditioned_norms(R, W)):
            break
        del R
        live = monitor.live(theta)
        if monitor.reason is not None:
            break
        if images is not None:  # a step follows: on in the working precision
            X, CX, UX, images = ops.cast(X), ops.cast(CX), ops.cast(UX), None
        W = ops.cast(W[:, live])
        CW, UW = ops.images(W)
        blocks = ([X, W], [CX, CW], [UX, UW])
        if P is not None:
            blocks = tuple(b + [q[:, live]] for b, q in zip(blocks, (P, CP, UP)))
        X, CX, UX, theta, (P, CP, UP) = _rayleigh_ritz(*blocks, m)
        it += 1
    if not monitor.converged and handover is not None:
        raise _Stalled(it, X)
    if not monitor.converged:
        warnings.warn(monitor.why(it), RuntimeWarning, stacklevel=3)
    A = X[:, :k]
    B = Wy.rmatmat(UX[:, :k])  # b = W_y^T Ct^T a (Eq. 15 up to the scale _finalize fixes)
    stats = dict(lobpcg_block=X, lobpcg_converged=monitor.converged,
                 lobpcg_residual=monitor.residual, lobpcg_error=monitor.error,
                 lobpcg_images=images, lobpcg_dtype=np.dtype(wdt))
    if exact:
        stats.update(certify_steps=monitor.certify_steps, norm_ratio=monitor.norm_ratio)
    return A, B, theta[:k], it, stats


class _Products:
    """The products of one LOBPCG run in its working precision ``wdt``: Ct U, Ct^T V and
    the images (C W, Ct^T W) of a new block.

    Ct = C_xy W_y^T is formed densely while it takes at most ``lobpcg_dense_ct_bytes`` and
    d2 <= ``full_max_d2`` (and the solve is not a warm one through the kept dense X^T M);
    otherwise C_yy's factor is applied to the d2-row side, C_xy in the working precision.
    """

    def __init__(self, xinv, Wy, cross, wdt, warm):
        d1, d2 = cross.shape
        # the one cast of the run: its operators with their products in wdt
        self.wdt = wdt
        self.C, self.cross = in_precision(xinv.covariance, wdt), in_precision(cross, wdt)
        t = active()
        dense_ct = 8 * d1 * d2 <= t.lobpcg_dense_ct_bytes and d2 <= t.full_max_d2
        if dense_ct and warm is not None and _keeps_dense(cross):
            # a warm solve takes 0-2 steps: whitening a d2-row block per product with the
            # kept dense X^T M costs less than whitening all d1 rows of C_xy once
            dense_ct = False
        self.Ctd = self.Wyw = None
        if dense_ct:
            self.Ctd = _dense_whitened_cross(cross, Wy, dtype=wdt)
            return
        self.Wyw = in_precision(Wy, wdt)
        if _keeps_dense(cross):
            # through X^T M when the operator keeps it dense (formed here, so that the
            # start's products use it too; rows split over both cores)
            cross._dense_in(wdt)

    def cast(self, Z):
        return np.ascontiguousarray(Z, dtype=self.wdt)

    def ct(self, U):
        if self.Ctd is not None:
            return tall_matmul(self.Ctd, self.cast(U))
        return self.cross._matmat(self.cast(self.Wyw.rmatmat(U)))

    def ctT(self, V):
        if self.Ctd is not None:
            return tall_tmatmul(self.Ctd, self.cast(V))
        return self.cast(self.Wyw.matmat(self.cross._rmatmat(self.cast(V))))

    def images(self, W):
        """(C W, Ct^T W) of a new block W."""
        if self.Ctd is not None:
            # the sparse C W (scipy releases the GIL) overlaps the dense Ct^T W
            return run_pair(lambda: self.C._matmat(W),
                            lambda: self.Ctd.T @ W)
        # in turn: each splits its sparse products over both cores, and Ct^T W's
        # triangular solve takes both BLAS threads (overlapped, each side would run on
        # one core, which was slower)
        return self.C._matmat(W), self.ctT(W)

    def start_block(self, xinv, Wy, cross, m, p, start, warm):
        """The first Ritz block: (X, CX, UX, theta, images), ``images`` the float64
        (GX, MX) of a warm start's block (None otherwise)."""
        C = self.C
        if warm is not None:
            # the previous block in this tau's metrics from its images, in float64: if no
            # step follows, the images of the new block are exact too and finish the solve
            MX = warm.cross_image(cross)
            MX = cross.rmatmat(warm.X) if MX is None else MX
            X, CX, UX, theta, _, images = _rayleigh_ritz(
                [warm.X], [xinv.covariance._combine(warm.GX, warm.X)], [Wy.matmat(MX)], m,
                extra=([warm.GX], [MX]))
            return X, CX, UX, theta, images
        # start: the top m eigenvectors of the preconditioner's Galerkin matrix Ct^T T Ct
        # (formed when Ct is dense at hand; a randomized SVD of the whitened operator
        # otherwise), or a given block
        precond = xinv._precondition
        if start is not None and start.shape[1] >= m:
            X = start
        elif self.Ctd is not None:
            # by row chunks: no second d1 x d2 array (it nearly doubled the peak memory)
            _, V0 = _top_eigh(xinv._lowrank_galerkin(self.Ctd), m)
            X = precond(self.ct(V0))
        else:
            # one pass of the range finder, no power iteration: sharpening the start
            # towards the model's own top subspace costs LOBPCG steps on the exact pencil
            # (the model's subspace is not the exact one; docs/engine.md)
            Wx = _approx_of(xinv).inv_sqrt()
            _, _, Vt = randomized_svd(_WhitenedCross(Wx, cross, self.Wyw, work=self.wdt), m,
                                      oversamples=min(p, cross.shape[1] - m), n_iter=0,
                                      random_state=0)
            X = precond(self.ct(np.ascontiguousarray(Vt.T)))
        if start is not None and 0 < start.shape[1] < m:
            X = np.hstack([X, start])
        X = self.cast(X)
        X, CX, UX, theta, _ = _rayleigh_ritz([X], [C._matmat(X)],
                                             [self.ctT(X)], m)
        return X, CX, UX, theta, None


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
    C = in_precision(C, dtype)
    CZ = C._matmat(Z)
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
        CP = C._matmat(P)
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
