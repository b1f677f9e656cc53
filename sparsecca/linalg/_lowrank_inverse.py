"""The low-rank-plus-diagonal model of C^-1, and the two inverses built on it.

From a rank-r factor G ~ V diag(lam) V^T of G = Xc^T Xc (:meth:`GramFactor.lowrank`):

    tail='identity':  C^-1 ~ V diag(1/((1-tau) lam + tau)) V^T + (I - V V^T) / tau
    tail='diagonal':  C ~ (1-tau) (V diag(lam) V^T + diag(e)) + tau I,  inverted by Woodbury

(:class:`_LowRankModel`).  :class:`LowRankInverse` ('randomized') is the model itself;
:class:`IterativeInverse` solves with C exactly (block CG) and is preconditioned by it.
"""

from __future__ import annotations

import copy
from contextlib import nullcontext

import numpy as np
import scipy.linalg as la
import scipy.linalg.blas as blas
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from ._block_cg import _block_cg
from ._errors import SingularCovarianceError
from ._gram import _as_block
from ._inverse_base import RegularizedInverse, _Whitener
from ._precision import in_precision
from ._threads import small_blas, tall_matmul, tall_tmatmul, wide_blas
from ._thresholds import active
from ._validation import check_block

__all__ = ["IterativeInverse", "LowRankInverse"]


class _LowRankModel:
    """T = S (I - U K^-1 U^T) S ~ C^-1 from V, lam (S = diag(delta)^-1/2, delta the tail's
    variance; U and the r x r core K by the tail, see the module notes): its products, its
    Galerkin matrices and the factors of its whitener."""

    def __init__(self, factor, tau, name, tail, V, lam):
        f = factor
        r = V.shape[1]
        if tau == 0.0 and f.range_error_ == 0.0 and f.rank_ < f.n_features:
            raise SingularCovarianceError(
                f"{name} is singular with tau = 0: the data have rank {f.rank_} < "
                f"d = {f.n_features}; use tau > 0 (e.g. tau = 1e-3)")
        if r == f.n_features:
            self._full(tau, name, V, lam)
            return
        e = f._tail_diagonal(r) if tail == "diagonal" else np.zeros(f.n_features)
        delta = (1.0 - tau) * e + tau
        # e = colsq - diag(V lam V^T) carries rounding of order d eps colsq: a tail at that
        # level is zero variance, and whether it lands on +0 or just above it depends on the
        # BLAS, so test against the working-precision floor, not against 0
        floor = f.n_features * np.finfo(np.float64).eps * f.colsq if tau == 0.0 else 0.0
        if not np.all(delta > floor):
            raise SingularCovarianceError(
                f"the low-rank model of {name} is singular with tau = {tau:g} (an "
                f"unresolved direction has zero variance); use tau > 0 (e.g. tau = 1e-3)")
        gam2 = (1.0 - tau) * lam
        self.isd = 1.0 / np.sqrt(delta)  # delta^-1/2
        if tail == "identity" or np.ptp(delta) == 0:
            # W' = V diag(sqrt((1-tau) lam / delta)) has orthogonal columns: closed forms
            self.P = np.ascontiguousarray(V)
            self.g2 = gam2 / delta[0]
            self.Wp = None
        else:
            # W' = diag(delta)^-1/2 V diag(sqrt((1-tau) lam)); C^-1 by Woodbury through the
            # Cholesky factor of the r x r core I + W'^T W' (one d r^2 product per tau: a
            # tau grid pays little beyond the shared factor).  The symmetric whitener needs
            # the SVD of W' and is formed on first use.
            with small_blas(r):
                Wp = V * np.sqrt(gam2) * self.isd[:, None]
                core = tall_tmatmul(Wp, Wp)  # rows split over both cores
                core[np.diag_indices_from(core)] += 1.0
                self.core_chol = la.cholesky(core, lower=True, check_finite=False)
            self.Wp = np.ascontiguousarray(Wp)
            self.P = None
            self.g2 = None

    def _full(self, tau, name, V, lam):
        """The closed form for a basis V of all d features: the model is C itself, with no
        tail (its diagonal is rounding, which at tau = 0 would read as zero variance).

        C = V diag(g) V^T with g = (1 - tau) lam + tau, written as c (I + V diag(g / c - 1)
        V^T) for c = min(g), so that the identity-tail closed form serves it.
        """
        g = (1.0 - tau) * lam + tau
        c = float(g.min())
        # relative to the largest eigenvalue: at tau = 0 a rank-deficient X leaves rounding
        if not c > lam.size * np.finfo(np.float64).eps * max(float(g.max()), 0.0):
            advice = ("use tau > 0 (e.g. tau = 1e-3)" if tau == 0 else
                      "rescale or centre the columns of X, or raise tau")
            raise SingularCovarianceError(
                f"{name} is singular with tau = {tau:g} (its smallest eigenvalue is "
                f"{c:.3g}, at the rounding level of its largest, {float(g.max()):.3g}); "
                f"{advice}")
        self.isd = np.full(V.shape[0], 1.0 / np.sqrt(c))
        self.P = np.ascontiguousarray(V)
        self.g2 = g / c - 1.0
        self.Wp = None

    def basis(self):
        """U of T = S (I - U K^-1 U^T) S: P (orthonormal, identity tail) or W'."""
        return self.P if self.Wp is None else self.Wp

    def core_solve(self, Q):
        """K^-1 Q for the r x r core of the Woodbury form (diagonal for the identity tail,
        the Cholesky factor of I + W'^T W' otherwise)."""
        if self.Wp is None:
            return (self.g2 / (1.0 + self.g2))[:, None] * Q
        return la.cho_solve((self.core_chol, True), Q, check_finite=False)

    def apply(self, B):
        """T B (the Woodbury inverse of the model), a new (d, b) float64 block."""
        Bs = B * self.isd[:, None]
        U = self.basis()
        with small_blas(min(U.shape[1], B.shape[1])):
            Bs -= tall_matmul(U, self.core_solve(tall_tmatmul(U, Bs)))
        Bs *= self.isd[:, None]
        return Bs

    def whitener_factors(self):
        """(P, g2) with W' = P diag(sqrt(g2)) Q^T (thin SVD), for the symmetric whitener."""
        if self.P is None:
            with small_blas(self.Wp.shape[1]):
                Qv, Rv = la.qr(self.Wp, mode="economic", check_finite=False)
                Us, g, _ = la.svd(Rv, check_finite=False)
                self.P = np.ascontiguousarray(Qv @ Us)
            self.g2 = g * g
        return self.P, self.g2

    def galerkin(self, B, chunk_bytes):
        """B^T T B from row chunks of a dense (d, c) B (see ``lowrank_galerkin``)."""
        d, c = B.shape
        U = self.basis()
        G = np.zeros((c, c))
        UtSB = np.zeros((U.shape[1], c))
        step = max(1, int(chunk_bytes // (8 * max(c, 1))))
        with small_blas(c):
            for lo in range(0, d, step):
                hi = min(d, lo + step)
                SB = B[lo:hi] * self.isd[lo:hi, None]
                G += SB.T @ SB
                UtSB += U[lo:hi].T @ SB
            G -= UtSB.T @ self.core_solve(UtSB)
        return 0.5 * (G + G.T)

    def sandwich(self, B, u, v):
        """B^T T B for B = Bs - u v^T, arguments checked (see ``LowRankInverse.sandwich``)."""
        d, m = B.shape
        U = self.basis()
        if sp.issparse(B):
            F = (sp.diags(self.isd) @ sp.csr_matrix(B, dtype=np.float64)).tocsc()
            t = active()
            dense = (F.nnz >= t.sandwich_dense_min_density * d * m
                     and 8 * d * m <= t.sandwich_dense_max_bytes)
        else:
            F, dense = None, True
        if dense:
            # a cross-covariance with residuals is 10-20% dense: BLAS syrk on the dense block
            # beats scipy's sparse product with its dense-ish (m, m) result, and U^T F as a
            # dense product beats the sparse one by more
            if F is None:  # one Fortran-ordered copy, scaled in place (B may be read-only)
                Fd = np.array(B, dtype=np.float64, order="F")
                Fd *= self.isd[:, None]
            else:
                Fd = np.asfortranarray(F.toarray())
            # a large syrk takes both cores even where the fast solvers pin BLAS
            wide = (wide_blas() if d * m * m >= active().sandwich_wide_min_flops
                    else nullcontext())
            with small_blas(m), wide:
                G = blas.dsyrk(1.0, Fd, trans=1, lower=0)
            G = np.triu(G) + np.triu(G, 1).T
            Q = tall_tmatmul(U, Fd)  # (r, m); the Fortran-ordered block as it is
            fs_of = Fd
        else:
            G = np.asarray((F.T @ F).toarray(), dtype=np.float64)
            Q = np.asarray(F.T @ U).T  # (r, m)
            fs_of = F
        if u is not None and np.any(u):
            su = np.asarray(u, dtype=np.float64) * self.isd
            v = np.asarray(v, dtype=np.float64)
            fs = np.asarray(fs_of.T @ su).ravel()  # F^T S u, (m,)
            G -= np.outer(fs, v) + np.outer(v, fs)
            G += float(su @ su) * np.outer(v, v)
            Q -= np.outer(U.T @ su, v)
        with small_blas(Q.shape[0]):
            G -= Q.T @ self.core_solve(Q)
        return 0.5 * (G + G.T)


class _ModelInverse(RegularizedInverse):
    """What the two low-rank-model inverses share: the model (``model``, ``rank_``), its
    Galerkin matrices, and the preconditioner -- the model, or, in a copy made by
    :meth:`with_exact`, a dense inverse."""

    def _set_model(self, V, lam):
        self.rank_ = V.shape[1]
        self._exact = None  # a 'dense' inverse preconditioning this one (with_exact)
        self.model = _LowRankModel(self.factor, self.tau, self.name, self.tail, V, lam)

    def _lowrank_inverse(self, B):
        """T B for the low-rank-plus-diagonal model T of C^-1 (Woodbury), float64."""
        return self.model.apply(B)

    def lowrank_galerkin(self, B, chunk_bytes=64 * 2**20):
        """B^T T B for the low-rank-plus-diagonal model T of C^-1 and a dense (d, c) B.

        Formed from row chunks of B (about ``chunk_bytes`` each) through the Woodbury form
        T = S (I - U K^-1 U^T) S, so no second (d, c) array is allocated.  Returns a
        symmetric (c, c) float64 array.
        """
        check_block(B, "B", self.shape[0], vector=False)
        return self._lowrank_galerkin(B, chunk_bytes)

    def _lowrank_galerkin(self, B, chunk_bytes=64 * 2**20):
        return self.model.galerkin(B, chunk_bytes)

    def with_exact(self, exact):
        """A copy of this inverse preconditioned by ``exact``, a 'dense' RegularizedInverse
        of the same C, instead of the low-rank-plus-diagonal model (None: by the model),
        sharing this one's factors; this inverse is unchanged.

        The model's products are unchanged (a 'randomized' inverse stays the model): only
        :meth:`precondition` -- LOBPCG's preconditioner, block CG's, and the norm in which
        residuals are measured -- becomes exact.  Worth it when the dense factor is cheap
        beside the rest of the solve (see ``CCAEngine``).

        Parameters
        ----------
        exact : RegularizedInverse or None
            method='dense', of the same GramFactor and tau.

        Returns
        -------
        RegularizedInverse
            Of this one's class and method.

        Raises
        ------
        TypeError
            If ``exact`` is neither None nor a RegularizedInverse.
        ValueError
            If ``exact`` is not a 'dense' inverse of the same GramFactor and tau.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> from sparsecca.linalg import GramFactor, RegularizedInverse
        >>> X = sp.random(200, 30, density=0.2, format="csr", random_state=0)
        >>> f = GramFactor(X, random_state=0)
        >>> inv = RegularizedInverse(f, 0.3, "randomized", rank=5)
        >>> exact = inv.with_exact(RegularizedInverse(f, 0.3, "dense"))
        >>> exact.exact_preconditioner, inv.exact_preconditioner
        (True, False)
        """
        if exact is not None:
            if not isinstance(exact, RegularizedInverse):
                raise TypeError(f"exact must be None or a 'dense' RegularizedInverse of the "
                                f"same GramFactor and tau, got {type(exact).__name__}")
            if (exact.method != "dense" or exact.shape != self.shape
                    or exact.tau != self.tau or exact.factor is not self.factor):
                raise ValueError("with_exact needs a 'dense' RegularizedInverse of the same "
                                 "GramFactor and tau")
        other = copy.copy(self)
        other._exact = exact
        return other

    @property
    def exact_preconditioner(self) -> bool:
        """Whether :meth:`precondition` applies the exact C^-1 (see :meth:`with_exact`)."""
        return self._exact is not None

    def precondition(self, B):
        """T B for the preconditioner T ~ C^-1: the exact inverse of a :meth:`with_exact`
        copy (in B's precision: float32 blocks get a float32 factor), else the
        low-rank-plus-diagonal model.  (d, b), float64 unless B is float32 and T exact; B a
        (d, b) array (a ValueError otherwise)."""
        check_block(B, "B", self.shape[0], vector=False)
        return self._precondition(B)

    def _precondition(self, B):
        """:meth:`precondition` of a (d, b) array B (unchecked: the engine's)."""
        if self._exact is not None:
            work = np.float32 if B.dtype == np.float32 else np.float64
            return in_precision(self._exact, work)._matmat(B)
        return self.model.apply(B)


class LowRankInverse(_ModelInverse):
    """The randomized low-rank-plus-diagonal model of C^-1
    (``RegularizedInverse(X, tau, 'randomized')``; see the module notes).

    Built by :class:`RegularizedInverse`, whose parameters it takes.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg._inverse import RegularizedInverse
    >>> X = np.random.default_rng(0).standard_normal((100, 8)) @ np.ones((8, 30))
    >>> inv = RegularizedInverse(X, 0.5, "randomized", rank=10, random_state=0)
    >>> type(inv).__name__, inv.rank_ <= 10
    ('LowRankInverse', True)
    >>> C = 0.5 * X.T @ X + 0.5 * np.eye(30)
    >>> bool(np.allclose(inv @ np.eye(30), np.linalg.inv(C)))  # rank(X) <= 10: exact
    True
    """

    method = "randomized"

    def _build(self, *, rank=None, tol=None, **_ignored):
        f, tau = self.factor, self.tau
        if rank is None and tol is not None:
            if tau == 0.0:
                raise ValueError("tol needs tau > 0 for method='randomized' (the bound "
                                 "scales with 1/tau), got tau = 0")
            # (1 - tau) ||E|| / tau <= tol
            V, lam = f._lowrank_of(None, tol * tau / max(1.0 - tau, 1e-300), max_rank=4096)
        else:
            V, lam = f._lowrank_of(256 if rank is None else rank, None)
        self._set_model(V, lam)

    def _matmat(self, B):
        return self.model.apply(_as_block(B)[0])

    def sandwich(self, B, u=None, v=None):
        """B^T C^-1 B for B = Bs - u v^T (Bs (d, m), sparse or dense; u, v an optional
        rank-one term, the centring of a cross-covariance), as a dense (m, m) array.

        With C^-1 = S (I - U K^-1 U^T) S (S = diag(delta)^-1/2, see ``_lowrank_inverse``) and
        F = S B, B^T C^-1 B = F^T F - (U^T F)^T K^-1 (U^T F): a sparse product (or a BLAS
        syrk on a dense or dense-enough block) and O(nnz(B) r + m^2 r) dense work.
        """
        d, m = check_block(B, "B", self.shape[0], vector=False)
        if (u is None) != (v is None):
            raise ValueError(f"u and v go together (the rank-one term u v^T); got "
                             f"{'u without v' if v is None else 'v without u'}")
        if u is not None and (np.shape(u) != (d,) or np.shape(v) != (m,)):
            raise ValueError(f"u and v must have shapes (d,) = ({d},) and (m,) = ({m},), got "
                             f"{np.shape(u)} and {np.shape(v)}")
        return self._sandwich(B, u, v)

    def _sandwich(self, B, u=None, v=None):
        return self.model.sandwich(B, u, v)

    def inv_sqrt(self):
        """A whitener W (d x d operator) with W^T W = C^-1 of the model (so W C W^T = I):
        the symmetric C^-1/2 with tail='identity', (I + W'W'^T)^-1/2 diag(delta)^-1/2
        with tail='diagonal'."""
        return _LowRankWhitener(self)


class _LowRankWhitener(_Whitener):
    """W with W^T W = T for the model T of a :class:`LowRankInverse`."""

    def _matmat(self, B):
        B, _ = _as_block(B)
        model = self.inv.model
        Bs = B * model.isd[:, None]
        P, g2 = model.whitener_factors()
        h = 1.0 - 1.0 / np.sqrt(1.0 + g2)
        return Bs - P @ (h[:, None] * (P.T @ Bs))

    def _rmatmat(self, U):
        U, _ = _as_block(U)
        model = self.inv.model
        P, g2 = model.whitener_factors()
        h = 1.0 - 1.0 / np.sqrt(1.0 + g2)
        out = U - P @ (h[:, None] * (P.T @ U))
        return out * model.isd[:, None]


class IterativeInverse(_ModelInverse):
    """C^-1 to a relative residual tolerance by block conjugate gradients, preconditioned by
    the low-rank-plus-diagonal model (``RegularizedInverse(X, tau, 'iterative')``).

    Built by :class:`RegularizedInverse`, whose parameters it takes.

    Attributes
    ----------
    rtol, maxiter : block CG's tolerance and iteration limit
    n_iter_ : int, block CG iterations of the last solve
    last_info_ : dict, the last solve's 'n_iter', 'converged', 'residuals' and 'chunks'

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg._inverse import RegularizedInverse
    >>> X = np.random.default_rng(0).standard_normal((100, 30))
    >>> inv = RegularizedInverse(X, 0.2, "iterative", rank=4, tol=1e-10, random_state=0)
    >>> type(inv).__name__
    'IterativeInverse'
    >>> C = 0.8 * X.T @ X + 0.2 * np.eye(30)
    >>> bool(np.allclose(inv @ np.eye(30), np.linalg.inv(C))), inv.last_info_["converged"]
    (True, True)
    """

    method = "iterative"

    def _build(self, *, rank=None, tol=None, maxiter=None, **_ignored):
        self.rtol = 1e-8 if tol is None else tol
        self.maxiter = 500 if maxiter is None else maxiter
        if self.tau == 0.0:
            self._check_tau0()
        V, lam = self.factor._lowrank_of(active().precond_rank if rank is None else rank, None)
        self._set_model(V, lam)

    def _check_tau0(self):
        f = self.factor
        if np.any(f.colsq <= 0):
            why = "a feature is constant zero"
        elif f.n_samples - int(f.center) < f.n_features:
            why = f"n = {f.n_samples} rows cannot span d = {f.n_features} features"
        else:
            return
        raise SingularCovarianceError(f"{self.name} is singular with tau = 0 ({why}); "
                                      f"use tau > 0 (e.g. tau = 1e-3)")

    def _matmat(self, B):
        return self._solve_blocks(B, None)[0]

    def chunk_width(self, m):
        """Block CG width for ``m`` right-hand sides.

        A wide block converges in few iterations (its Krylov space grows by the width per
        step) but costs O(d * width^2) dense work per iteration; more than
        ``Thresholds.chunk_max`` columns are split into equal chunks of at most that many.
        """
        n_chunks = -(-m // active().chunk_max)
        return -(-m // n_chunks)

    def _solve_blocks(self, B, X0):
        """(Z, R) of :meth:`solve_with_residual` as (d, b) blocks (arguments checked)."""
        B, _ = _as_block(B)
        Z = np.empty_like(B)
        R = np.empty_like(B)
        w = self.chunk_width(B.shape[1])
        M = _Preconditioner(self)  # of this inverse (a with_exact copy has its own)
        self.n_iter_ = 0
        infos = []
        for j in range(0, B.shape[1], w):
            sl = slice(j, min(j + w, B.shape[1]))
            x0 = None if X0 is None else np.asarray(X0).reshape(B.shape)[:, sl]
            # the operators and settings are the inverse's own, checked at construction
            with small_blas(sl.stop - sl.start):
                Zc, info = _block_cg(self.covariance, np.ascontiguousarray(B[:, sl]),
                                     M, x0, self.rtol, self.maxiter)
            Z[:, sl] = Zc
            R[:, sl] = info.pop("residual_block")
            self.n_iter_ += info["n_iter"]
            infos.append(info)
        self.last_info_ = {
            "n_iter": self.n_iter_, "converged": all(i["converged"] for i in infos),
            "residuals": np.concatenate([i["residuals"] for i in infos]),
            "chunks": len(infos)}
        return Z, R

    def inv_sqrt(self):
        """Not available: 'iterative' provides C^-1 products only.

        Raises
        ------
        NotImplementedError
            Always (the reduced problem does not need a whitener on this path).
        """
        raise NotImplementedError("method='iterative' provides C^-1 products only; use "
                                  "method='dense' or 'randomized' for a whitener")


class _Preconditioner(LinearOperator):
    """``inv.precondition`` as an operator, float64: block CG's M (the low-rank-plus-diagonal
    model, or the exact inverse of a ``with_exact`` copy)."""

    def __init__(self, inv):
        self.inv = inv
        super().__init__(dtype=np.float64, shape=inv.shape)

    def _matmat(self, B):
        return self.inv._precondition(np.asarray(B, dtype=np.float64))

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)
