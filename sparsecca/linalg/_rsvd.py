"""Randomized range finders and SVD (Halko, Martinsson & Tropp 2011).

Everything here only needs ``A @ V`` and ``A.T @ U``: dense arrays, scipy.sparse matrices and
:class:`~scipy.sparse.linalg.LinearOperator` objects all work.

References
----------
N. Halko, P. G. Martinsson and J. A. Tropp, "Finding structure with randomness:
probabilistic algorithms for constructing approximate matrix decompositions", SIAM Review
53(2), 217-288, 2011.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._params import check_bool, check_float, check_int, check_random_state
from ._errors import FactorizationError, SVDConvergenceWarning
from ._threads import small_blas
from ._thresholds import active
from ._validation import check_matrix

__all__ = ["svd_flip", "randomized_range_finder", "adaptive_range_finder", "randomized_svd",
           "SVDInfo"]

#: Halko et al. (2011), eq. (4.3): ||(I - QQ^T) A|| <= ERR_FACTOR * max_i ||(I - QQ^T) A w_i||
#: with probability at least 1 - 10^-r for r Gaussian probes w_i
ERR_FACTOR = 10.0 * math.sqrt(2.0 / math.pi)


def svd_flip(u, vt):
    """Make singular vectors sign-deterministic (scikit-learn's u-based convention).

    The entry of largest magnitude in each column of ``u`` is made positive, and the
    matching row of ``vt`` is flipped with it, so ``u * s @ vt`` is unchanged.

    Parameters
    ----------
    u : (m, k) array of real numbers, m >= 1, finite
    vt : (k, n) array of real numbers

    Returns
    -------
    u, vt : flipped copies (float64 unless float32 came in)

    Raises
    ------
    TypeError
        If ``u`` or ``vt`` is not a real numeric array.
    ValueError
        If either is not 2-D, ``u.shape[1] != vt.shape[0]``, ``u`` has no rows, or ``u``
        holds NaN / inf (its signs would turn a whole row of ``vt`` into NaN).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg import svd_flip
    >>> u = np.array([[1.0, -3.0], [2.0, 1.0]])
    >>> vt = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> u2, vt2 = svd_flip(u, vt)
    >>> u2
    array([[ 1.,  3.],
           [ 2., -1.]])
    >>> vt2
    array([[ 1.,  2.],
           [-3., -4.]])
    >>> bool(np.allclose(u2 @ vt2, u @ vt))
    True
    """
    u, vt = _flip_operand(u, "u"), _flip_operand(vt, "vt")
    if u.shape[1] != vt.shape[0]:
        raise ValueError(f"u and vt must be (m, k) and (k, n) with the same k, got shapes "
                         f"{u.shape} and {vt.shape}")
    if u.shape[0] < 1:
        raise ValueError(f"u must have at least 1 row (its largest entry per column sets the "
                         f"sign), got shape {u.shape}")
    if not np.isfinite(u).all():
        raise ValueError("u must contain only finite values")
    return _svd_flip(u, vt)


def _flip_operand(a, name):
    """``a`` as a 2-D real float array (float32 kept, integers and bools to float64)."""
    a = np.asarray(a)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got an array with shape {a.shape}")
    return a if a.dtype.kind == "f" else a.astype(np.float64)


def _svd_flip(u, vt):
    """:func:`svd_flip` without the checks (u, vt are valid float arrays: copies are made)."""
    u = np.array(u, copy=True)
    vt = np.array(vt, copy=True)
    idx = np.argmax(np.abs(u), axis=0)
    signs = np.sign(u[idx, np.arange(u.shape[1])])
    signs[signs == 0] = 1.0
    u *= signs
    vt *= signs[:, None]
    return u, vt


def _check_operator(A, name="A"):
    """ndarray / sparse (validated), or a LinearOperator / anything with ``shape``, ``@``
    and ``.T``, wrapped so that its first product each way is shape-checked."""
    if isinstance(A, LinearOperator):
        A = check_matrix(A, name, allow_operator=True)
        return _CheckedProducts(A, tuple(int(x) for x in A.shape), name)
    if isinstance(A, np.ndarray) or sp.issparse(A) or isinstance(A, (list, tuple)):
        return check_matrix(A, name)
    shape = getattr(A, "shape", None)
    try:
        ndim = len(shape)
    except TypeError:  # None, or a shape that is a single number
        ndim = None
    if ndim != 2 or not hasattr(A, "T") or not hasattr(A, "__matmul__"):
        raise TypeError(f"{name} must be an array, a scipy.sparse matrix, a LinearOperator or "
                        f"an object with a 2-D shape, '@' and '.T', got {type(A).__name__}")
    # a float entry would reach numpy's random generator as a size ('float' object cannot
    # be interpreted as an integer)
    if not all(isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))
               and x >= 1 for x in shape):
        raise ValueError(f"{name}.shape must be two ints >= 1 (at least 1 row and 1 column), "
                         f"got {tuple(shape)!r}")
    return _CheckedProducts(A, (int(shape[0]), int(shape[1])), name)


class _CheckedProducts:
    """A LinearOperator or duck-typed A whose first product each way is shape-checked.

    Nothing else checks what a user's ``A @ V`` returns: a wrong shape surfaced as a numpy
    or scipy error deep in the next product or QR.  The check runs once per direction and
    call, not in every power iteration (the products are the hot path).  ``.T`` is made
    once and kept: its ``.T`` is this object again, so both checks are shared.
    """

    __slots__ = ("_op", "shape", "_name", "_checked", "_transposed")

    def __init__(self, op, shape, name, transposed=None):
        self._op, self.shape, self._name = op, shape, name
        self._checked = False
        self._transposed = transposed

    @property
    def T(self):
        if self._transposed is None:
            self._transposed = _CheckedProducts(self._op.T, self.shape[::-1],
                                                f"{self._name}.T", self)
        return self._transposed

    def __matmul__(self, V):
        if self._checked:
            return self._op @ V
        expected = (self.shape[0], V.shape[1])
        try:
            Y = self._op @ V
        except ValueError as exc:  # e.g. scipy reshaping a matvec of the wrong length
            raise ValueError(f"{self._name} @ V failed for V of shape {V.shape} (it must "
                             f"return shape {expected}): {exc}") from exc
        if tuple(np.shape(Y)) != expected:
            raise ValueError(f"{self._name} @ V returned shape {tuple(np.shape(Y))} for V of "
                             f"shape {V.shape}, expected {expected}")
        self._checked = True
        return Y


def _mm(A, V):
    return np.asarray(A @ V, dtype=np.float64)


def _rmm(A, U):
    return np.asarray(A.T @ U, dtype=np.float64)


def _non_finite_products(what="the products with A"):
    """The error for NaN / inf out of A's products: an ndarray or sparse A was checked, so
    they come from an operator whose entries cannot be (or from a non-finite basis)."""
    return FactorizationError(f"{what} returned non-finite values (a LinearOperator with "
                              f"NaN/inf?)")


def _check_basis(Q, m, name="Q"):
    """A basis to extend: a finite (m, r) array with orthonormal columns, as float64.

    O(m r^2) once per call (Q^T Q), like one product of A with the basis."""
    try:
        Q = np.array(Q, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an (m, r) = ({m}, r) array with orthonormal "
                        f"columns, got {type(Q).__name__} ({exc})") from None
    if Q.ndim != 2 or Q.shape[0] != m:
        raise ValueError(f"{name} must be an (m, r) = ({m}, r) array with orthonormal "
                         f"columns, got shape {Q.shape}")
    if Q.shape[1] > m:
        raise ValueError(f"{name} must have at most m = {m} orthonormal columns, got "
                         f"{Q.shape[1]}")
    if not np.all(np.isfinite(Q)):
        raise ValueError(f"{name} must contain only finite values")
    dev = float(np.abs(Q.T @ Q - np.eye(Q.shape[1])).max()) if Q.shape[1] else 0.0
    if not dev <= 1e-6:
        raise ValueError(f"{name} must have orthonormal columns (Q^T Q = I), got "
                         f"max |Q^T Q - I| = {dev:.3g}")
    return Q


def _orth(Y):
    """Orthonormal basis of range(Y) by economic QR (Y is tall)."""
    Q, _ = la.qr(Y, mode="economic", check_finite=False, overwrite_a=True)
    return Q


def _project_out(Y, Q):
    """Y - Q (Q^T Y), twice (classical Gram-Schmidt needs reorthogonalisation)."""
    if Q is None or Q.shape[1] == 0:
        return Y
    for _ in range(2):
        Y -= Q @ (Q.T @ Y)
    return Y


def _as_int(name, value, low, allowed):
    """:func:`check_int`'s test, its message saying what is ``allowed`` in full."""
    try:
        return check_int(name, value, low)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name} must be {allowed}, got {value!r}") from None


def _check_rank(name, value, cap):
    """An int in [1, cap], cap = min(A.shape); both ends named in one message."""
    allowed = f"an int in [1, min(A.shape)] = [1, {cap}]"
    value = _as_int(name, value, 1, allowed)
    if value > cap:
        raise ValueError(f"{name} must be {allowed}, got {value}")
    return value


def _check_n_iter(n_iter, k, shape):
    if isinstance(n_iter, str):
        if n_iter != "auto":
            raise ValueError(f"n_iter must be 'auto' or an int >= 0, got {n_iter!r}")
        # scikit-learn's choice: more passes when k is a small fraction of the spectrum
        return 7 if k < 0.1 * min(shape) else 4
    return _as_int("n_iter", n_iter, 0, "'auto' or an int >= 0")


def randomized_range_finder(A, size, n_iter=2, random_state=None):
    """Orthonormal Q (m, size) with range(Q) ~ range of the top ``size`` singular vectors.

    Halko et al. Algorithm 4.4 (subspace iteration, re-orthonormalised after every product):
    Q spans A Omega for a Gaussian (n, size) Omega, then ``n_iter`` times A^T Q and A Q,
    each orthonormalised by QR.  Power iterations sharpen the basis towards the dominant
    singular subspace when the spectrum decays slowly.

    Parameters
    ----------
    A : (m, n) array, sparse matrix or LinearOperator
    size : int
        Number of columns of Q, in [1, min(m, n)].
    n_iter : int >= 0, default 2
        Number of power iterations.
    random_state : None, int, numpy Generator or RandomState

    Returns
    -------
    Q : (m, size) float64 array with orthonormal columns

    Raises
    ------
    TypeError, ValueError
        For a bad argument.
    FactorizationError
        If a product with A returns NaN or inf.

    References
    ----------
    Halko, Martinsson & Tropp (2011), Algorithm 4.4.

    Examples
    --------
    For a matrix of rank 5, five columns capture its whole range:

    >>> import numpy as np
    >>> from sparsecca.linalg import randomized_range_finder
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((100, 5)) @ rng.standard_normal((5, 40))
    >>> Q = randomized_range_finder(A, 5, random_state=0)
    >>> Q.shape
    (100, 5)
    >>> bool(np.allclose(Q.T @ Q, np.eye(5)))
    True
    >>> bool(np.allclose(Q @ (Q.T @ A), A))
    True
    """
    A = _check_operator(A)
    size = _check_rank("size", size, min(A.shape))
    n_iter = check_int("n_iter", n_iter, 0)
    rng = check_random_state(random_state)
    return _range_finder(A, size, n_iter, rng)


def _range_finder(A, size, n_iter, rng):
    Q = _orth(_mm(A, rng.standard_normal((A.shape[1], size))))
    for _ in range(n_iter):
        Q = _orth(_rmm(A, Q))
        Q = _orth(_mm(A, Q))
    # NaN / inf in any product reaches the final orthonormal Q (entries <= 1, so its sum
    # is finite exactly when every entry is): one pass, once, against 2 n_iter + 1 QRs
    if not np.isfinite(Q.sum()):
        raise _non_finite_products()
    return Q


def _range_error(A, Q, bb, rng, norm_est):
    """Halko's estimate of ||(I - Q Q^T) A|| from ``bb`` Gaussian probes (0.0 when what is
    left is rounding), the scale ``norm_est`` it is judged against, and the probes' images
    projected off Q."""
    Y = _mm(A, rng.standard_normal((A.shape[1], bb)))
    if norm_est is None:
        # ||A w|| for Gaussian w ~ ||A||_F, a scale for deciding rank exhaustion
        norm_est = max(float(np.sqrt((Y * Y).sum(axis=0).mean())), np.finfo(float).tiny)
    Y = _project_out(Y, Q)
    err = ERR_FACTOR * float(np.sqrt((Y * Y).sum(axis=0)).max())
    if not (np.isfinite(err) and np.isfinite(norm_est)):
        # NaN compares False with every bound: the basis would never grow
        raise _non_finite_products("A @ V")
    if err <= 1e3 * np.finfo(np.float64).eps * norm_est * math.sqrt(A.shape[1]):
        err = 0.0  # range exhausted: what is left is rounding
    return err, norm_est, Y


def adaptive_range_finder(A, tol, *, block_size=32, max_rank=None, n_iter=0,
                          random_state=None, Q=None, growth=2.0, max_block=1024):
    """Grow an orthonormal basis until an a-posteriori bound on the range error meets ``tol``.

    Blocked form of Halko et al. Algorithm 4.2: each step draws a block of ``b`` Gaussian
    probes w_i, projects A w_i off the current basis and estimates (their eq. 4.3)

        ||(I - Q Q^T) A||_2 <= 10 sqrt(2/pi) max_i ||(I - Q Q^T) A w_i||

    which holds with probability at least 1 - 10^-b.  While the estimate exceeds ``tol``
    the probes (after ``n_iter`` power iterations on the complement) are orthonormalised and
    appended; the block doubles each step (up to ``max_block``) so that a search that must
    run to full rank takes O(log rank) passes over A instead of rank / b.

    Parameters
    ----------
    A : (m, n) array, sparse matrix or LinearOperator
    tol : float > 0
        Absolute target for the spectral-norm range error ||(I - Q Q^T) A||.
    block_size : int >= 1
        Initial number of probes per step.
    max_rank : int, optional
        Stop once Q has this many columns (default min(m, n)).
    n_iter : int >= 0
        Power iterations applied to each new block (sharpens the basis; the error estimate
        always uses the un-powered probes, as the bound requires).
    random_state : None, int, numpy Generator or RandomState
    Q : (m, r0) array with orthonormal columns, optional
        A basis to extend (e.g. from a previous call with a looser tolerance).
    growth : float >= 1
        Factor by which the block grows after each step.
    max_block : int >= 1
        Largest block.

    Returns
    -------
    Q : (m, r) float64 array with orthonormal columns
    err : float
        The last error estimate: an upper bound (w.p. >= 1 - 10^-b) on ||(I - Q_prev Q_prev^T)
        A|| for the basis before the last block was appended, hence also for the returned Q.
        0.0 when the range of A is exhausted (rank(A) <= r).

    Raises
    ------
    TypeError, ValueError
        For a bad argument, or a ``Q`` that is not an orthonormal (m, r0) basis.
    FactorizationError
        If a product with A returns NaN or inf (a LinearOperator cannot be checked
        beforehand).

    References
    ----------
    Halko, Martinsson & Tropp (2011), Algorithm 4.2 and eq. (4.3).

    Examples
    --------
    The basis stops growing once the range of A (rank 5 here) is exhausted:

    >>> import numpy as np
    >>> from sparsecca.linalg import adaptive_range_finder
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((100, 5)) @ rng.standard_normal((5, 40))
    >>> Q, err = adaptive_range_finder(A, tol=1e-6, block_size=2, random_state=0)
    >>> Q.shape, err
    ((100, 5), 0.0)
    >>> bool(np.allclose(Q @ (Q.T @ A), A))
    True
    """
    A = _check_operator(A)
    tol = check_float("tol", tol, 0, strict=True)  # inf would stop before the first block
    b = check_int("block_size", block_size, 1)
    m, n = A.shape
    cap = min(m, n)
    max_rank = cap if max_rank is None else min(check_int("max_rank", max_rank, 1), cap)
    n_iter = check_int("n_iter", n_iter, 0)
    rng = check_random_state(random_state)
    growth = check_float("growth", growth, 1, strict=False)
    max_block = check_int("max_block", max_block, 1)
    Q = np.zeros((m, 0)) if Q is None else _check_basis(Q, m)
    return _adaptive(A, tol, b, max_rank, n_iter, rng, Q, growth, max_block)


def _adaptive(A, tol, b, max_rank, n_iter, rng, Q, growth=2.0, max_block=1024,
              norm_est=None, rank_bound=None):
    m, n = A.shape
    rank_bound = min(m, n) if rank_bound is None else rank_bound
    err = np.inf
    while True:
        r = Q.shape[1]
        if r >= max_rank:
            if r >= m:
                err = 0.0  # the basis spans all of R^m
            elif r >= rank_bound and err != 0.0:
                # as many columns as rank(A) can have, but the last estimate predates the
                # last block: one more probe says whether they span range(A) (a given Q
                # need not lie in it)
                err = _range_error(A, Q, min(b, n), rng, norm_est)[0]
            break
        err, norm_est, Y = _range_error(A, Q, min(b, max_rank - r), rng, norm_est)
        if err <= tol:  # (tol > 0: an exhausted range, err = 0.0, stops too)
            break
        for _ in range(n_iter):
            Z = _rmm(A, _orth(Y))
            Y = _project_out(_mm(A, Z), Q)
        # drop directions that are numerically already in range(Q)
        Yq, R = la.qr(Y, mode="economic", check_finite=False)
        rdiag = np.abs(np.diag(R))
        if not np.all(np.isfinite(rdiag)):  # the power iterations (A.T @ U) went non-finite
            raise _non_finite_products()
        keep = rdiag > 1e-10 * max(float(rdiag.max()), 1e-300)
        if not keep.any():  # (only for a broken operator) no new direction: no progress
            raise FactorizationError("the range finder found no new direction although its "
                                     f"error estimate {err:.3g} exceeds tol = {tol:.3g}")
        Yq = _project_out(Yq[:, keep], Q)
        Yq = _orth(Yq)
        Q = np.hstack([Q, Yq])
        b = min(int(b * growth), max_block)
    return Q, err


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

    A sparse A is kept as CSR with float64 values and its products are computed as two row
    halves on two threads (inside a pinned BLAS region, see :mod:`._threads`); a dense A by
    the split tall products; anything else through its own ``@`` and ``.T``.
    """

    def __init__(self, A, transpose, work=np.float64):
        self.shape = A.shape[::-1] if transpose else A.shape
        if sp.issparse(A):
            from ._gram import _row_blocks_sum, _values_as, sparse_matmat

            X = _values_as(A, work)

            def direct(V):
                return sparse_matmat(X, V, dtype=work)

            def adjoint(U):
                return _row_blocks_sum(lambda P, B: P.T @ B, X,
                                       np.ascontiguousarray(U, dtype=work), dtype=work)
        elif isinstance(A, np.ndarray):
            from ._threads import tall_matmul, tall_tmatmul

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
    (the same space as a power iteration's A' orth(A'^T Q)).
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
                   method="subspace", tol=None, block_size=None, return_info=False):
    """Truncated SVD by random projection: subspace iteration or block Krylov.

    Parameters
    ----------
    A : (m, n) ndarray, scipy.sparse matrix, LinearOperator, or any object with a 2-D
        ``shape`` supporting ``A @ V`` and ``A.T @ U``
    k : int in [1, min(m, n)]
        Number of singular triplets.
    oversamples : int >= 0
        Extra directions: the subspace method's basis has min(k + oversamples, m, n)
        columns; the Krylov method checks its residuals once its basis has that many.
    n_iter : int >= 0 or 'auto'
        Without ``tol``: power iterations (subspace; 'auto' uses 7 when k < 0.1 min(m, n),
        else 4, scikit-learn's rule), or Krylov expansions (krylov; 'auto': a basis of about
        3 (k + oversamples) columns).  With ``tol``: the most that may be run ('auto': 32
        power iterations, or a Krylov basis of 10 (k + oversamples) columns).
    random_state : None, int, numpy Generator or RandomState
    method : {'subspace', 'krylov'}, default 'subspace'
        'subspace': Halko et al.'s subspace (power) iteration on a basis of k + oversamples
        columns.  'krylov': a block Krylov space of A A^T grown by a block of
        ``block_size`` columns per pass (block Lanczos with full reorthogonalisation), the
        triplets by Rayleigh-Ritz on the whole space.  It converges at a rate set by the
        square root of the relative gap where subspace iteration has the gap itself, so it
        needs far fewer passes over A on slowly decaying spectra.
    tol : float in (0, 1], optional
        Target for the relative residual max_i max(||A v_i - s_i u_i||,
        ||A^T u_i - s_i v_i||) / s_i of the returned triplets: the method runs until it is
        met (up to the ``n_iter`` limit; an :class:`SVDConvergenceWarning` if it is not).
        None: the ``n_iter`` passes, unchecked.
    block_size : int >= 1, optional
        Columns added to the Krylov basis per pass ('krylov' only; default
        min(16, k + oversamples)).  It should exceed the multiplicity of any wanted singular
        value (a block Krylov space holds at most ``block_size`` directions of one
        eigenspace of A A^T).
    return_info : bool, default False
        Also return an :class:`SVDInfo`: the residuals reached, the passes over A.

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

    *krylov* (Musco & Musco 2015, in block Lanczos form): the space spanned by
    A Omega, (A A^T) A Omega, (A A^T)^2 A Omega, ... for a Gaussian Omega of ``block_size``
    columns, in the shorter of the two dimensions.  Each new block is orthogonalised
    against the last two (the Lanczos recurrence) and then against the whole basis, once
    more when that pass cancels (classical Gram-Schmidt needs a second pass only then),
    before a QR factorisation; the projection coefficients are Q^T A A^T Q, whose top
    eigenpairs (theta_i, y_i) give u_i = Q y_i, s_i = sqrt(theta_i) and
    v_i = A^T u_i / s_i, kept from the recurrence's own products.  Then A^T u_i = s_i v_i,
    and the other residual is the part of the next block's product outside the basis:
    A v_i - s_i u_i = (I - Q Q^T) A A^T Q y_i / s_i, so checking ``tol`` costs no
    product beyond the one the next block needs.  Singular values are computed as square
    roots of eigenvalues: relative to s_1 they are accurate to rounding, relative to a small
    s_i to about eps (s_1 / s_i)^2.

    With a ``tol``, the subspace method computes A V after each Rayleigh-Ritz step (the
    residual and the next power iteration in one product).

    Signs follow scikit-learn's ``svd_flip`` convention: the largest-magnitude entry of each
    column of U is positive, so the output does not depend on the random draw beyond the
    approximation error.  Computations are in float64.

    References
    ----------
    N. Halko, P. G. Martinsson and J. A. Tropp, "Finding structure with randomness:
    probabilistic algorithms for constructing approximate matrix decompositions", SIAM
    Review 53(2), 217-288, 2011 (Algorithms 4.4 and 5.1).

    C. Musco and C. Musco, "Randomized block Krylov methods for stronger and faster
    approximate singular value decomposition", NeurIPS 2015 (Algorithm 2).

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
    return_info = check_bool("return_info", return_info)
    size = min(k + p, m, n)
    auto = isinstance(n_iter, str)
    if method == "krylov":
        b = min(active().krylov_block, size) if block_size is None else block_size
        short = m <= n  # the basis in the shorter dimension: A' = A, else A^T
        # float32 products at a loose tol: half the memory traffic of the sparse products,
        # their rounding (~1e-7 relative) far below the residuals asked for
        single = tol is not None and tol >= active().single_products_tol
        P = _BlockProducts(A, transpose=not short,
                           work=np.float32 if single else np.float64)
        if tol is None:
            n_blocks = (-(-active().krylov_auto_basis * size // b) if auto else n_iter + 1)
            max_basis = n_blocks * b
        else:
            n_blocks = None
            max_basis = active().krylov_max_basis * size if auto else (n_iter + 1) * b
        with small_blas(min(max_basis, min(m, n))):
            U, s, V, res, it, basis = _krylov(P, k, size, b, max(max_basis, size), n_blocks,
                                              tol, return_info, rng)
        if not short:
            U, V = V, U
        Vt = V.T
    elif tol is not None:
        transpose = m < n
        P = _BlockProducts(A, transpose=transpose)
        max_iter = active().subspace_max_iter if auto else n_iter
        with small_blas(size):
            U, s, V, res, it, basis = _subspace_adaptive(P, k, size, max_iter, tol, rng)
        if transpose:
            U, V = V, U
        Vt = V.T
    else:
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
        res, it, basis = None, n_iter, size
        P = None
        if return_info:
            res = _residuals(A, U, s, Vt.T)
    U, Vt = _svd_flip(U[:, :k], Vt[:k])
    s = s[:k].copy()
    if not return_info and tol is None:
        return U, s, Vt
    converged = None if tol is None else bool(res.max() <= tol)
    if converged is False:
        warnings.warn(
            f"randomized_svd(method={method!r}) did not reach tol = {tol:g} within its "
            f"limit of {'passes' if method == 'krylov' else 'power iterations'} "
            f"(n_iter = {n_iter!r}): relative residual {res.max():.3g}; raise n_iter, or "
            f"block_size / oversamples", SVDConvergenceWarning, stacklevel=2)
    if not return_info:
        return U, s, Vt
    if P is None:  # the fixed subspace method: 2 n_iter + 2 products, 2 for the residuals
        passes = 2 * it + 4
    else:
        passes = P.n_passes
    info = SVDInfo(method=method, tol=tol, residuals=np.asarray(res, dtype=np.float64),
                   converged=converged, n_iter=int(it), n_passes=int(passes),
                   basis_size=int(basis))
    return U, s, Vt, info
