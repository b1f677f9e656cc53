"""Randomized range finders (Halko, Martinsson & Tropp 2011) and their argument checks.

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

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._params import check_float, check_int, check_random_state
from ._errors import FactorizationError
from ._validation import check_matrix

__all__ = ["svd_flip", "randomized_range_finder", "adaptive_range_finder"]

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
    >>> from sparsecca.linalg._rsvd import svd_flip
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
    >>> from sparsecca.linalg._rsvd import randomized_range_finder
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
    >>> from sparsecca.linalg._rsvd import adaptive_range_finder
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
