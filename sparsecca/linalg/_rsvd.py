"""Randomized SVD (Halko, Martinsson & Tropp 2011): subspace iteration or block Krylov.

Everything here only needs ``A @ V`` and ``A.T @ U``: dense arrays, scipy.sparse matrices and
:class:`~scipy.sparse.linalg.LinearOperator` objects all work.  The range finders are in
:mod:`._range`.

References
----------
N. Halko, P. G. Martinsson and J. A. Tropp, "Finding structure with randomness:
probabilistic algorithms for constructing approximate matrix decompositions", SIAM Review
53(2), 217-288, 2011 (Algorithms 4.4 and 5.1).

C. Musco and C. Musco, "Randomized block Krylov methods for stronger and faster
approximate singular value decomposition", NeurIPS 2015 (Algorithm 2).
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

from .._params import check_bool, check_int, check_random_state
from ._errors import SVDConvergenceWarning
from ._range import (  # noqa: F401  (importers of _rsvd)
    ERR_FACTOR,
    _adaptive,
    _check_n_iter,
    _check_operator,
    _check_rank,
    _mm,
    _non_finite_products,
    _orth,
    _project_out,
    _range_finder,
    _rmm,
    _svd_flip,
    adaptive_range_finder,
    randomized_range_finder,
    svd_flip,
)
from ._sparse_products import _row_blocks_sum, _values_as, sparse_matmat
from ._threads import small_blas, tall_matmul, tall_tmatmul
from ._thresholds import active, applied, check_thresholds

__all__ = ["randomized_svd", "SVDInfo"]


#: the methods of :func:`randomized_svd`
METHODS = ("subspace", "krylov")
# The thresholds read here (fields of the active Thresholds):
# * krylov_block: Krylov block size when ``block_size`` is None (capped at k + oversamples):
#   small blocks reach a given residual with fewer products than blocks of k columns (the
#   Krylov space of a given dimension has a higher polynomial degree), while a block larger
#   than the multiplicity of any wanted singular value still resolves repeated values;
# * krylov_auto_basis: with ``n_iter='auto'`` and no ``tol``, the Krylov basis grows to this
#   many times k + oversamples columns;
# * krylov_max_basis: with ``n_iter='auto'`` and a ``tol``, the Krylov basis grows to at most
#   this many times k + oversamples columns (its memory is (m + n) columns of that basis);
# * subspace_max_iter: with ``n_iter='auto'`` and a ``tol``, the subspace method runs at most
#   this many power iterations;
# * single_products_tol: from this ``tol`` on, the Krylov method forms its products with a
#   sparse or dense A in float32 (the basis, its orthogonalisation and the Rayleigh-Ritz step
#   stay float64): rounding of about 1e-7 relative per product, three orders below the
#   residuals asked for;
# * reorth_ratio: a column of a new Krylov block whose norm cancelled below this fraction of
#   its norm before the pass is orthogonalised against the basis once more ("twice is
#   enough").


@dataclass(frozen=True)
class SVDInfo:
    """What :func:`randomized_svd` reached (``return_info=True``).

    Attributes
    ----------
    method : str
        'subspace' or 'krylov'.
    tol : float or None
        The requested relative residual.
    residuals : (k,) float64 array
        max(||A v_i - s_i u_i||, ||A^T u_i - s_i v_i||) / s_i of each returned triplet
        (u_i, s_i, v_i): relative to its own singular value, so 0 for an exact triplet.
    converged : bool or None
        Whether max(residuals) <= tol; None without a ``tol``.
    n_iter : int
        Power iterations (subspace) or Krylov expansions (krylov) done.
    n_passes : int
        Block products with A or A^T (each one pass over A's entries), the residuals'
        products included.
    basis_size : int
        Columns of the final basis.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg import randomized_svd
    >>> A = np.random.default_rng(0).standard_normal((60, 40))
    >>> U, s, Vt, info = randomized_svd(A, 3, method="krylov", tol=1e-6, random_state=0,
    ...                                 return_info=True)
    >>> info.converged, bool(info.residual <= 1e-6)
    (True, True)
    """

    method: str
    tol: float | None
    residuals: np.ndarray
    converged: bool | None
    n_iter: int
    n_passes: int
    basis_size: int

    @property
    def residual(self) -> float:
        """The largest of :attr:`residuals`."""
        return float(self.residuals.max())


class _BlockProducts:
    """A' @ V and A'^T @ U in float64, for A' = A or A^T, one block of columns at a time.

    A sparse A is kept as CSR with float64 values and its products are computed by row
    blocks on the split threads (inside a pinned BLAS region, see :mod:`._threads`); a dense A by
    the split tall products; anything else through its own ``@`` and ``.T``.
    """

    def __init__(self, A, transpose, work=np.float64):
        self.shape = A.shape[::-1] if transpose else A.shape
        if sp.issparse(A):
            X = _values_as(A, work)

            def direct(V):
                return sparse_matmat(X, V, dtype=work)

            def adjoint(U):
                return _row_blocks_sum(lambda P, B: P.T @ B, X,
                                       np.ascontiguousarray(U, dtype=work), dtype=work)
        elif isinstance(A, np.ndarray):
            X = A.astype(work, copy=False)

            def direct(V):
                return tall_matmul(X, np.asarray(V, dtype=work))

            def adjoint(U):
                return tall_tmatmul(X, np.asarray(U, dtype=work))
        else:
            def direct(V):
                return _mm(A, V)

            def adjoint(U):
                return _rmm(A, U)
        self.mm, self.rmm = (adjoint, direct) if transpose else (direct, adjoint)
        self.n_passes = 0

    def matmat(self, V):
        self.n_passes += 1
        return self._finite(self.mm(V))

    def rmatmat(self, U):
        self.n_passes += 1
        return self._finite(self.rmm(U))

    @staticmethod
    def _finite(Y):
        Y = np.asarray(Y, dtype=np.float64)
        if not np.isfinite(Y.sum()):
            raise _non_finite_products()
        return Y


def _relative(norms, s):
    """norms / s, with a zero singular value (a rank-deficient A) judged against the
    largest one (0/0 and x/0 are not residuals)."""
    floor = np.finfo(np.float64).tiny + np.finfo(np.float64).eps * (float(s.max()) if s.size
                                                                       else 0.0)
    return norms / np.maximum(s, floor)


def _krylov(P, k, check_from, b, max_basis, n_blocks, tol, need_residuals, rng):
    """Block Lanczos on A'A'^T with full reorthogonalisation and Rayleigh-Ritz.

    P : :class:`_BlockProducts` of A' (m, n), m <= n: the basis Q lives in R^m.
    Blocks are added until the residuals meet ``tol`` (checked once the basis has
    ``check_from`` columns), the basis has ``max_basis`` columns (or all of R^m), or, without
    ``tol``, ``n_blocks`` blocks.  Returns U' (m, k), s, V' (n, k), residuals (or None),
    expansions, basis size.

    Each new block is orthogonalised against the last two (the Lanczos recurrence) and then
    against the whole basis, once more when that pass cancels (classical Gram-Schmidt needs
    a second pass only then), before a QR factorisation; the projection coefficients are
    Q^T A A^T Q, whose top eigenpairs (theta_i, y_i) give u_i = Q y_i, s_i = sqrt(theta_i)
    and v_i = A^T u_i / s_i, kept from the recurrence's own products.  Then
    A^T u_i = s_i v_i, and the other residual is the part of the next block's product
    outside the basis: A v_i - s_i u_i = (I - Q Q^T) A A^T Q y_i / s_i, so checking ``tol``
    costs no product beyond the one the next block needs.
    """
    m, n = P.shape
    cap = min(m, max_basis)
    # column-major: every block, and the basis so far, is one contiguous piece
    Q = np.empty((m, cap), order="F")
    W = np.empty((n, cap), order="F")  # A'^T Q: the Ritz vectors' other side, no product
    T = np.zeros((cap, cap))  # Q^T A'A'^T Q, upper triangle (block column j: block j's step)
    Qn = _orth(P.matmat(rng.standard_normal((n, min(b, cap)))))
    L, prev, blocks = 0, 0, 0
    res = ritz = None
    while True:
        lo, hi = L, L + Qn.shape[1]
        Q[:, lo:hi] = Qn
        W[:, lo:hi] = P.rmatmat(Qn)
        L, blocks = hi, blocks + 1
        last = L >= cap or (tol is None and blocks >= n_blocks)
        check = last if tol is None else L >= check_from
        if last and tol is None and not need_residuals:
            # the last block's product would only give the residuals: its column of
            # Q^T A'A'^T Q = W^T W from W instead
            T[:L, lo:hi] = W[:, :L].T @ W[:, lo:hi]
            break
        Y = P.matmat(W[:, lo:hi])  # A'A'^T Q_j
        C = T[:L, lo:hi]
        # the three-term recurrence (blocks j-1 and j): all of Q^T Y in exact arithmetic
        C[prev:L] = Q[:, prev:L].T @ Y
        Y -= Q[:, prev:L] @ C[prev:L]
        # then against the whole basis, once more where that pass cancelled
        for _ in range(2):
            before = np.linalg.norm(Y, axis=0)
            D = Q[:, :L].T @ Y
            Y -= Q[:, :L] @ D
            C += D
            if not np.any(np.linalg.norm(Y, axis=0) < active().reorth_ratio * before):
                break
        prev = lo
        if check:
            ritz = _ritz(T, L, k)
            E = _ritz_residuals(T[:L, :L], *ritz, Y, lo, hi)
            res = _relative(np.sqrt((E[0] ** 2).sum(axis=0) + (E[1] ** 2).sum(axis=0)),
                            ritz[0])
            if last or res.max() <= tol:
                break
        Qn = _next_block(Y, Q[:, :L], min(b, cap - L), rng)
        T[L:L + Qn.shape[1], lo:hi] = Qn.T @ Y  # the recurrence's own sub-diagonal block
    theta, Yr = _ritz(T, L, k) if ritz is None else ritz
    # the singular values of A'^T U directly (W Yr = A'^T U), not as square roots of the
    # eigenvalues theta: a small or zero s_i to rounding of s_1 rather than of s_1^2; the
    # SVD's rotation H of the Ritz vectors is the identity up to rounding and signs for
    # distinct values, and its V is orthonormal whatever the precision of W
    V, s, Ht = la.svd(W[:, :L] @ Yr, full_matrices=False, check_finite=False)
    H = Ht.T
    U = Q[:, :L] @ (Yr @ H)
    if res is not None:
        # the residuals of the rotated pairs: A'A'^T U H - U H S^2 =
        # Q (E1 H + Yr (Theta H - H S^2)) + E2 H, and A'^T u - s v = 0 (the SVD)
        E1 = E[0] @ H + Yr @ (theta[:, None] * H - H * (s * s))
        E2 = E[1] @ H
        res = _relative(np.sqrt((E1 ** 2).sum(axis=0) + (E2 ** 2).sum(axis=0)), s * s)
    return U, s, V, res, blocks - 1, L


def _ritz_residuals(T, theta, Yr, Y, lo, hi):
    """The residuals A'A'^T u_i - theta_i u_i of the Ritz vectors u_i = Q y_i, from the
    recurrence, as (E1, E2): the residuals are Q E1 + E2, of norms
    sqrt(||E1_i||^2 + ||E2_i||^2).

    A'A'^T Q = Q T + Y E^T exactly (up to the products' rounding), with T the projection
    coefficients (upper part and diagonal blocks) and the blocks' QR factors (below), and Y
    the last block's product projected off the basis: E1 = T y - theta y (what the
    symmetric eigensolver, which reads the upper part alone, leaves out) and
    E2 = Y y[lo:hi].  Divided by s_i^2 the norm is ||A'v_i - s_i u_i|| / s_i
    (A'^T u_i = s_i v_i by construction).
    """
    return T @ Yr - Yr * theta, Y @ Yr[lo:hi]


def _ritz(T, L, k):
    """The top k eigenpairs of the upper triangle of T[:L, :L], descending (theta >= 0)."""
    if L <= 400:
        theta, Y = la.eigh(T[:L, :L], lower=False, driver="evd", check_finite=False)
        theta, Y = theta[L - k:], Y[:, L - k:]
    else:
        theta, Y = la.eigh(T[:L, :L], lower=False, subset_by_index=[L - k, L - 1], driver="evr",
                           check_finite=False)
    return np.maximum(theta[::-1], 0.0), np.ascontiguousarray(Y[:, ::-1])


def _next_block(Y, Q, size, rng):
    """An orthonormal basis of the new block's ``size`` leading directions, orthogonal to Q.

    Y is already orthogonal to Q.  Cholesky QR, twice (the second pass restores
    orthogonality to rounding once the first has made the block well conditioned); a block
    too ill-conditioned for it (the Krylov space is nearly invariant: rank(A) is reached)
    goes to Householder QR, where a direction Y lacks is filled with a random one, so that
    the basis stays orthonormal.
    """
    Qn = _cholesky_qr(Y)
    if Qn is not None:
        Qn = _cholesky_qr(Qn)
    if Qn is None:
        Qn, R = la.qr(Y, mode="economic", check_finite=False)
        d = np.abs(np.diag(R))
        # the rounding level of a projected product (entries of Y are O(||A||^2 eps))
        bad = ~(d > 1e3 * np.finfo(np.float64).eps * max(float(d.max(initial=0.0)),
                                                          np.finfo(np.float64).tiny))
        if bad.any():
            Qn[:, bad] = rng.standard_normal((Q.shape[0], int(bad.sum())))
            Qn = _orth(_project_out(Qn, Q))
            Qn = _orth(_project_out(Qn, Q))
    return np.asfortranarray(Qn[:, :size])


def _cholesky_qr(Y):
    """Y R^-1 for the Cholesky factor R of Y^T Y, or None when Y^T Y is too ill-conditioned
    for it (a pivot below 1e-5 of the largest: the product would lose orthogonality)."""
    G = Y.T @ Y
    d = np.diag(G)
    if not d.size or not d.min() > 1e-10 * d.max():
        return None
    try:
        R = la.cholesky(G, lower=False, check_finite=False)
    except la.LinAlgError:
        return None
    r = np.abs(np.diag(R))
    if not r.min() > 1e-5 * r.max():
        return None
    return la.solve_triangular(R, Y.T, trans="T", lower=False, check_finite=False).T


def _subspace_adaptive(P, k, size, max_iter, tol, rng):
    """Subspace iteration on A' (m, n) until the relative residuals meet ``tol``.

    Each iteration is one Rayleigh-Ritz step: W = A'^T Q, the SVD of W^T gives the Ritz
    triplets (u = Q u_b, s, v), and A' V -- the residual's product -- spans the next basis
    (the same space as a power iteration's A' orth(A'^T Q)): the residual and the next
    power iteration in one product.
    """
    Q = _orth(P.matmat(rng.standard_normal((P.shape[1], size))))
    it = 0
    while True:
        B = P.rmatmat(Q).T  # (size, n) = Q^T A'
        Ub, s, Vt = la.svd(B, full_matrices=False, check_finite=False)
        U = Q @ Ub
        Y = P.matmat(np.ascontiguousarray(Vt.T))  # A' V
        res = _relative(np.linalg.norm(Y[:, :k] - U[:, :k] * s[:k], axis=0), s[:k])
        if res.max() <= tol or it >= max_iter:
            return U[:, :k], s[:k], Vt[:k].T, res, it, size
        Q = _orth(Y)
        it += 1


def _check_method(method):
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def _check_tol(tol):
    if tol is None:
        return None
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (numbers.Real, np.floating)):
        raise TypeError(f"tol must be None or a number in (0, 1], got {tol!r}")
    if not 0.0 < float(tol) <= 1.0:  # NaN fails too
        raise ValueError(f"tol must be None or a number in (0, 1], got {tol!r}")
    return float(tol)


def _residuals(A, U, s, V):
    """max(||A v_i - s_i u_i||, ||A^T u_i - s_i v_i||) / s_i, by two products."""
    r1 = np.linalg.norm(_mm(A, V) - U * s, axis=0)
    r2 = np.linalg.norm(_rmm(A, U) - V * s, axis=0)
    return _relative(np.maximum(r1, r2), s)


def randomized_svd(A, k, oversamples=10, n_iter="auto", random_state=None, *,
                   method="subspace", tol=None, block_size=None, return_info=False,
                   thresholds=None):
    """Truncated SVD by random projection: subspace iteration or block Krylov.

    Parameters
    ----------
    A : (m, n) ndarray, scipy.sparse matrix, LinearOperator, or any object with a 2-D
        ``shape`` supporting ``A @ V`` and ``A.T @ U``
    k : int in [1, min(m, n)]
        Number of singular triplets.
    oversamples : int >= 0
        Extra directions: a basis of min(k + oversamples, m, n) columns (subspace), or the
        size from which the Krylov method checks its residuals.
    n_iter : int >= 0 or 'auto'
        Without ``tol``: power iterations (subspace; 'auto' uses 7 when k < 0.1 min(m, n),
        else 4, scikit-learn's rule), or Krylov expansions (krylov; 'auto': a basis of about
        3 (k + oversamples) columns).  With ``tol``: the most that may be run ('auto': 32
        power iterations, or a Krylov basis of 10 (k + oversamples) columns).
    random_state : None, int, numpy Generator or RandomState
    method : {'subspace', 'krylov'}, default 'subspace'
        'subspace': Halko et al.'s subspace (power) iteration on k + oversamples columns.
        'krylov': a block Krylov space of A A^T grown by ``block_size`` columns per pass,
        the triplets by Rayleigh-Ritz: its rate is set by the square root of the relative
        gap (subspace iteration: the gap), far fewer passes on slowly decaying spectra.
    tol : float in (0, 1], optional
        Target for the relative residual max_i max(||A v_i - s_i u_i||, ||A^T u_i - s_i v_i||)
        / s_i, met within the ``n_iter`` limit (else an :class:`SVDConvergenceWarning`).
        None: the ``n_iter`` passes, unchecked.
    block_size : int >= 1, optional
        Columns added to the Krylov basis per pass ('krylov' only; default
        min(16, k + oversamples)), above the multiplicity of any wanted singular value (a
        block Krylov space holds at most ``block_size`` directions of one eigenspace).
    return_info : bool, default False
        Also return an :class:`SVDInfo`: the residuals reached, the passes over A.
    thresholds : Thresholds, optional
        The Krylov block and basis limits, the ``tol`` from which products are float32.

    Returns
    -------
    U : (m, k) float64, orthonormal columns
    s : (k,) float64, descending
    Vt : (k, n) float64, orthonormal rows
    info : SVDInfo
        Only with ``return_info=True``.

    Raises
    ------
    TypeError, ValueError
        For a bad argument; for a duck-typed ``A`` whose shape is not two ints >= 1; and
        when the first ``A @ V`` or ``A.T @ U`` of a LinearOperator or duck-typed ``A``
        fails or returns the wrong shape (later products are not checked again).
    FactorizationError
        If a product with A returns NaN or inf.

    Warns
    -----
    SVDConvergenceWarning
        When ``tol`` is not reached within the ``n_iter`` limit.

    Notes
    -----
    *subspace* (Halko et al. Algorithms 4.4 and 5.1): a basis Q of min(k + oversamples, m,
    n) columns is found by :func:`randomized_range_finder` (on A^T when m < n, the
    orientation with the shorter basis); the SVD of the small matrix Q^T A then gives the
    triplets.  The result is exact when rank(A) <= k + oversamples, and otherwise as
    accurate as the decay of the singular values beyond k allows; power iterations improve
    it on slowly decaying spectra, at the rate of the gap s_{k+p+1} / s_k per iteration.

    *krylov* (Musco & Musco 2015, block Lanczos, see ``_krylov``): the space of A Omega,
    (A A^T) A Omega, ... for a Gaussian Omega of ``block_size`` columns, its triplets by
    Rayleigh-Ritz.  Singular values are square roots of eigenvalues: relative to s_1 they
    are accurate to rounding, relative to a small s_i to about eps (s_1 / s_i)^2.

    Signs follow scikit-learn's ``svd_flip`` (the largest entry of each column of U is
    positive); computations are in float64.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg import randomized_svd
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((100, 5)) @ rng.standard_normal((5, 40))  # rank 5
    >>> U, s, Vt = randomized_svd(A, 3, random_state=0)
    >>> U.shape, s.shape, Vt.shape
    ((100, 3), (3,), (3, 40))
    >>> bool(np.allclose(s, np.linalg.svd(A, compute_uv=False)[:3]))
    True

    Sparse matrices and LinearOperators work the same way (here a well separated top
    singular value, which the default power iterations resolve):

    >>> import scipy.sparse as sp
    >>> from scipy.sparse.linalg import aslinearoperator
    >>> S = sp.random(300, 200, density=0.05, format="csr", random_state=0)
    >>> U, s, Vt = randomized_svd(aslinearoperator(S), 1, random_state=0)
    >>> round(float(s[0]), 3), round(float(np.linalg.norm(S.toarray(), 2)), 3)
    (6.77, 6.77)

    On a flat spectrum the Krylov method meets a residual target in a few passes, and says
    what it reached:

    >>> U, s, Vt, info = randomized_svd(S, 10, method="krylov", tol=1e-6, random_state=0,
    ...                                 return_info=True)
    >>> info.converged, bool(info.residual <= 1e-6)
    (True, True)
    >>> s_ref = np.linalg.svd(S.toarray(), compute_uv=False)[:10]
    >>> bool(np.allclose(s, s_ref, rtol=1e-10))
    True
    """
    A, k, p, rng, method, tol, block_size, return_info = _check_svd_args(
        A, k, oversamples, n_iter, random_state, method, tol, block_size, return_info)
    with applied(check_thresholds(thresholds)):
        if method == "krylov":
            out = _svd_krylov(A, k, p, n_iter, tol, block_size, return_info, rng)
        elif tol is not None:
            out = _svd_subspace_tol(A, k, p, n_iter, tol, rng)
        else:
            out = _svd_subspace(A, k, p, n_iter, return_info, rng)
    return _finish(*out, k=k, method=method, tol=tol, n_iter=n_iter, return_info=return_info)


def _check_svd_args(A, k, oversamples, n_iter, random_state, method, tol, block_size,
                    return_info):
    """randomized_svd's arguments, checked (``n_iter`` only checked, 'auto' kept)."""
    A = _check_operator(A)
    m, n = A.shape
    k = _check_rank("k", k, min(m, n))
    p = check_int("oversamples", oversamples, 0)
    if not (isinstance(n_iter, str) and n_iter == "auto"):
        _check_n_iter(n_iter, k, A.shape)  # its message for a bad value
    rng = check_random_state(random_state)
    method = _check_method(method)
    tol = _check_tol(tol)
    if block_size is not None:
        block_size = _check_rank("block_size", block_size, min(m, n))
    return A, k, p, rng, method, tol, block_size, check_bool("return_info", return_info)


def _svd_krylov(A, k, p, n_iter, tol, block_size, need_residuals, rng):
    """(U, s, V, residuals, expansions, basis size, products) of the Krylov method."""
    m, n = A.shape
    size = min(k + p, m, n)
    b = min(active().krylov_block, size) if block_size is None else block_size
    short = m <= n  # the basis in the shorter dimension: A' = A, else A^T
    # float32 products at a loose tol: half the memory traffic of the sparse products,
    # their rounding (~1e-7 relative) far below the residuals asked for
    single = tol is not None and tol >= active().single_products_tol
    P = _BlockProducts(A, transpose=not short, work=np.float32 if single else np.float64)
    auto = isinstance(n_iter, str)
    if tol is None:
        n_blocks = -(-active().krylov_auto_basis * size // b) if auto else n_iter + 1
        max_basis = n_blocks * b
    else:
        n_blocks = None
        max_basis = active().krylov_max_basis * size if auto else (n_iter + 1) * b
    with small_blas(min(max_basis, min(m, n))):
        U, s, V, res, it, basis = _krylov(P, k, size, b, max(max_basis, size), n_blocks,
                                          tol, need_residuals, rng)
    if not short:
        U, V = V, U
    return U, s, V, res, it, basis, P


def _svd_subspace_tol(A, k, p, n_iter, tol, rng):
    """(U, s, V, residuals, iterations, basis size, products) of the subspace method run
    until ``tol``."""
    m, n = A.shape
    size = min(k + p, m, n)
    transpose = m < n
    P = _BlockProducts(A, transpose=transpose)
    max_iter = active().subspace_max_iter if isinstance(n_iter, str) else n_iter
    with small_blas(size):
        U, s, V, res, it, basis = _subspace_adaptive(P, k, size, max_iter, tol, rng)
    if transpose:
        U, V = V, U
    return U, s, V, res, it, basis, P


def _svd_subspace(A, k, p, n_iter, need_residuals, rng):
    """(U, s, V, residuals or None, n_iter, basis size, None) of ``n_iter`` power
    iterations (Halko et al. Algorithms 4.4 and 5.1)."""
    m, n = A.shape
    size = min(k + p, m, n)
    n_iter = _check_n_iter(n_iter, k, A.shape)
    transpose = m < n  # work on the orientation with the shorter basis
    Aop = A.T if transpose else A
    with small_blas(size):
        Q = _range_finder(Aop, size, n_iter, rng)
        B = _rmm(Aop, Q).T  # (size, n') = Q^T A'
        Ub, s, Vt = la.svd(B, full_matrices=False, check_finite=False)
        U = Q @ Ub
    if transpose:
        U, Vt = Vt.T, U.T
    U, Vt, s = U[:, :k], Vt[:k], s[:k]
    res = _residuals(A, U, s, Vt.T) if need_residuals else None
    return U, s, Vt.T, res, n_iter, size, None


def _finish(U, s, V, res, it, basis, P, *, k, method, tol, n_iter, return_info):
    """randomized_svd's result from a method's triplets: signs flipped, the convergence
    warning, the :class:`SVDInfo`."""
    U, Vt = _svd_flip(U[:, :k], V.T[:k])
    s = s[:k].copy()
    if not return_info and tol is None:
        return U, s, Vt
    converged = None if tol is None else bool(res.max() <= tol)
    if converged is False:
        warnings.warn(
            f"randomized_svd(method={method!r}) did not reach tol = {tol:g} within its "
            f"limit of {'passes' if method == 'krylov' else 'power iterations'} "
            f"(n_iter = {n_iter!r}): relative residual {res.max():.3g}; raise n_iter, or "
            f"block_size / oversamples", SVDConvergenceWarning, stacklevel=3)
    if not return_info:
        return U, s, Vt
    # the fixed subspace method: 2 n_iter + 2 products, 2 for the residuals
    passes = 2 * it + 4 if P is None else P.n_passes
    info = SVDInfo(method=method, tol=tol, residuals=np.asarray(res, dtype=np.float64),
                   converged=converged, n_iter=int(it), n_passes=int(passes),
                   basis_size=int(basis))
    return U, s, Vt, info
