"""The dense inverse: a Cholesky factor of C (primal) or of the dual n x n matrix.

C^-1 for C = (1 - tau) Xc^T Xc + tau I, exact: the Cholesky factor of the d x d matrix, or,
when n < d, of the n x n matrix (1 - tau) Xc Xc^T + tau I, with C^-1 by Woodbury (the
eigendecomposition of Xc Xc^T, the exact SVD of Xc, gives the symmetric whitener).
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

import numpy as np
import scipy.linalg as la

from ._errors import FactorizationError, SingularCovarianceError
from ._gram import _as_block
from ._inverse_base import RegularizedInverse, _Whitener
from ._precision import rounded
from ._threads import small_blas, wide_blas
from ._thresholds import active
from ._validation import check_dense_size

__all__ = ["DenseInverse"]


class DenseInverse(RegularizedInverse):
    """C^-1 by a dense Cholesky factor (``RegularizedInverse(X, tau, 'dense')``).

    Built by :class:`RegularizedInverse`, whose parameters it takes.

    Attributes
    ----------
    dense_space : {'primal', 'dual'}
        The factor of C (d x d) or of the dual n x n matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg._inverse import RegularizedInverse
    >>> X = np.random.default_rng(0).standard_normal((20, 50))
    >>> inv = RegularizedInverse(X, 0.5, "dense")
    >>> type(inv).__name__, inv.dense_space
    ('DenseInverse', 'dual')
    >>> C = 0.5 * X.T @ X + 0.5 * np.eye(50)
    >>> bool(np.allclose(inv @ np.eye(50), np.linalg.inv(C)))
    True
    """

    method = "dense"

    def _build(self, *, dense_space="auto", max_dim=None, **_ignored):
        f, tau, d = self.factor, self.tau, self.factor.n_features
        self._single_factor = None  # float32 copy of the factor (_factor(np.float32))
        if dense_space == "auto":
            dense_space = "dual" if (f.has_rows and f.n_samples < d) else "primal"
        self.dense_space = dense_space
        primal = dense_space == "primal"
        order = d if primal else f.n_samples
        if max_dim is not None:  # the engine's dense inverses: its own size rule
            check_dense_size((order, order), max_dim,
                             f"{'covariance' if primal else 'dual (n x n) matrix of'} "
                             f"{self.name}", "; method='randomized' or 'iterative' never "
                             "forms it", dim="d" if primal else "n")
        if primal:
            G = f._dense_gram()
            # the factor's cached Gram matrix is scaled into a new array, one formed for
            # this inverse alone is factored in place
            self._chol = _regularized_cholesky(G, tau, self.name, overwrite=G is not f._dense)
            return
        if tau == 0.0:
            raise SingularCovarianceError(
                f"{self.name} is singular with tau = 0: the data have rank at most "
                f"n = {f.n_samples} < d = {d}; use tau > 0 (e.g. tau = 1e-3)")
        # C^-1 = (I - (1 - tau) Xc^T K^-1 Xc) / tau cancels ~(1 - tau) ||G|| / tau digits;
        # the primal factor's pivot test in its terms (its smallest eigenvalue is tau when
        # n < d): below, the solve returns noise
        level = d * np.finfo(np.float64).eps * (
            (1.0 - tau) * float(np.max(f.colsq, initial=0.0)) + tau)
        if tau <= level:
            raise SingularCovarianceError(
                f"{self.name} is singular to working precision with tau = {tau:g}: "
                f"tau is below the rounding level d * eps * max diag = {level:.3g} "
                f"of a covariance whose data have rank < d; use tau >= {10 * level:.1g}")
        # Cholesky of the n x n (1 - tau) Xc Xc^T + tau I: C^-1 by Woodbury, n^3 / 3 flops
        # (BLAS-3) where the dual eigendecomposition (needed only for the symmetric
        # whitener, computed on demand) costs several times more
        self._dual_chol = _regularized_cholesky(f._src.dense_outer_gram(), tau,
                                                f"the dual form of {self.name}")

    def _factor(self, dtype=np.float64):
        """The Cholesky factor: of C ('primal') or of the dual n x n matrix
        (1 - tau) Xc Xc^T + tau I; in float32 a copy made once (float32 solves, whiteners)."""
        L = self._chol if self.dense_space == "primal" else self._dual_chol
        if dtype != np.float32:
            return L
        if self._single_factor is None:
            self._single_factor = L.astype(np.float32)
        return self._single_factor

    def _solve(self, B, L):
        """C^-1 B through ``L``, :meth:`_factor` in either precision, in L's precision."""
        if self.dense_space == "primal":
            with _dense_threads(L.shape[0]):
                return la.cho_solve((L, True), B, check_finite=False)
        # C^-1 = (I - (1 - tau) Xc^T ((1 - tau) Xc Xc^T + tau I)^-1 Xc) / tau
        tau = self.tau
        src = self.factor._src
        with _dense_threads(L.shape[0]):
            T = la.cho_solve((L, True), np.asarray(src.matmat(B), dtype=L.dtype),
                             check_finite=False)
        return (B - (1.0 - tau) * np.asarray(src.rmatmat(T), dtype=L.dtype)) / tau

    def _matmat(self, B):
        B, _ = _as_block(B)
        return self._solve(B, self._factor())

    def _product_in(self, B, dtype, transpose=False):
        """C^-1 B in ``dtype`` (:func:`._precision.in_precision`): through the factor's copy
        in ``dtype`` (float32: half the flops' time; rounding ~ cond(L) * 6e-8, enough for a
        preconditioner).  C is symmetric: ``transpose`` changes nothing."""
        return self._solve(B, self._factor(dtype))

    def inv_sqrt(self):
        """A whitener W (d x d operator) with W^T W = C^-1 (so W C W^T = I).

        'primal': W = L^-1 from C = L L^T (triangular, not symmetric); 'dual': the
        symmetric C^-1/2.
        """
        return _DenseWhitener(self)


class _DenseWhitener(_Whitener):
    """W with W^T W = C^-1 for a :class:`DenseInverse`."""

    def _matmat(self, B):
        B, _ = _as_block(B)
        inv = self.inv
        if inv.dense_space == "primal":
            return _triangular_solve(inv._chol, B, "N")
        _, lam, V = inv.factor.dual_eigh()
        tau = inv.tau
        C = V.T @ B
        out = V @ (C / np.sqrt((1.0 - tau) * lam + tau)[:, None])
        if tau > 0:
            out += (B - V @ C) / np.sqrt(tau)
        return out

    def _rmatmat(self, U):
        U, _ = _as_block(U)
        inv = self.inv
        if inv.dense_space == "primal":
            return _triangular_solve(inv._chol, U, "T")
        return self._matmat(U)

    def _product_in(self, B, dtype, transpose=False):
        """W B (W^T B with ``transpose``) in ``dtype`` (:func:`._precision.in_precision`): the
        primal factor solves with its copy in ``dtype`` (kept by the inverse for its next
        whitener and solves); the dual form computes in float64 and rounds."""
        if self.inv.dense_space != "primal":
            return rounded(self, B, dtype, transpose)
        return _triangular_solve(self.inv._factor(dtype), B, "T" if transpose else "N")

    def apply_to_rows(self, R):
        """Overwrite the rows of R with (W R^T)^T, R a (r, d) C-contiguous float64 block.

        The dense primal form solves in place (R^T is the Fortran-ordered block LAPACK
        works on), where ``matmat(R.T).T`` holds two more copies of R.
        """
        inv = self.inv
        if inv.dense_space != "primal":
            return super().apply_to_rows(R)
        out = _triangular_solve(inv._chol, R.T, "N", overwrite=True)
        if not np.shares_memory(out, R):  # LAPACK worked on a copy after all
            R[...] = out.T
        return R


def _triangular_solve(L, B, trans, overwrite=False):
    """L^-1 B (trans 'N') or L^-T B ('T') for a lower triangular d x d factor L, on the BLAS
    threads its size calls for (see _dense_threads); ``overwrite`` lets LAPACK
    solve in B itself when B's layout and dtype allow it."""
    with _dense_threads(L.shape[0]):
        return la.solve_triangular(L, B, lower=True, trans=trans, overwrite_b=overwrite,
                                   check_finite=False)


def _wide(d):
    """Both cores for a solve with a d x d factor too large for small_blas (see wide_blas)."""
    t = active()
    return wide_blas() if t.small_blas_max < d < t.dense_single_thread_min else nullcontext()


@contextmanager
def _dense_threads(d):
    """BLAS threads for work with a d x d dense factor: one for small (see small_blas) and
    for very large factors (``Thresholds.dense_single_thread_min``: OpenBLAS 0.3.x's threaded
    Cholesky has crashed (SIGSEGV) on a covariance of order 30,000 with two threads, see
    docs/engine.md), both cores in between, also inside a pinned region (_wide)."""
    with small_blas(0 if d >= active().dense_single_thread_min else d), _wide(d):
        yield


def _regularized_cholesky(G, tau, name="C", overwrite=True):
    """Lower Cholesky factor of (1 - tau) G + tau I, with a loud failure when singular.

    ``overwrite``: G is scaled and factored in place, else (1 - tau) G is formed in one pass
    (not a copy and a pass).  G is symmetric, so a C-ordered G is factored as its transpose,
    the Fortran-ordered view of the same memory: LAPACK works in place instead of on a
    transposed copy (d^2 more memory, and a transposition that costs a fair share of the
    factorisation).
    """
    d = G.shape[0]
    if overwrite:
        G *= 1.0 - tau
    else:
        G = G * (1.0 - tau)
    C = G.T if G.flags.c_contiguous and not G.flags.f_contiguous else G
    C[np.diag_indices_from(C)] += tau
    scale = float(np.max(np.diag(C))) if d else 1.0
    try:
        with _dense_threads(d):
            L = la.cholesky(C, lower=True, overwrite_a=True, check_finite=False)
    except la.LinAlgError as exc:
        if tau == 0.0:
            raise SingularCovarianceError(
                f"{name} is singular with tau = 0 (Cholesky failed: {exc}); use tau > 0 "
                f"(e.g. tau = 1e-3)") from None
        raise FactorizationError(f"Cholesky of {name} failed with tau = {tau}: {exc}") from None
    dmin = float(np.min(np.abs(np.diag(L)))) ** 2
    # a pivot below d * eps * max diag means C is singular to working precision: the solve
    # would amplify rounding by more than 1/eps, so refuse instead of returning noise
    if not np.isfinite(dmin) or dmin <= d * np.finfo(np.float64).eps * max(scale, 1e-300):
        if tau == 0.0:
            raise SingularCovarianceError(
                f"{name} is singular to working precision with tau = 0 (smallest pivot "
                f"{dmin:.3g}, largest diagonal {scale:.3g}); use tau > 0 (e.g. tau = 1e-3)")
        raise FactorizationError(f"{name} is numerically singular with tau = {tau} "
                                 f"(smallest pivot {dmin:.3g})")
    return L

