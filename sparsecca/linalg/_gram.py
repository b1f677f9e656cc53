"""Covariance builders as operators.

Row convention: X is n x d1 (one example per row), M is n x d2.  With Xc = X - 1 mu^T the
implicitly centred data (mu = column means; Xc = X when ``center=False``):

* :class:`RegularizedGram`   C = (1 - tau) Xc^T Xc + tau I          (d1 x d1)
* :class:`CrossCovariance`   C_xy = Xc^T M                           (d1 x d2, unscaled)

Neither forms a dense d x d matrix: a Gram product is X^T (X V), two scipy sparse products
over row halves of X on two threads, centering is a rank-one correction (X is never
densified), and both can be accumulated from an iterator of CSR row blocks, giving the same
operator as the stacked matrix (sums of per-block Gram matrices and column sums).

The rank-one correction X^T X - n mu mu^T cancels digits when the means dominate the
spread of the columns (float64 products keep about -log10(eps a) digits for the bound ``a``
of :func:`_centring_amplification`).  A dense X or M is therefore centred explicitly, in a
float64 copy (the caller's array is untouched); a sparse or streamed one, which centring
would densify, keeps the correction and warns (:class:`CentringPrecisionWarning`) when
fewer than ``Thresholds.centring_min_digits`` digits would be left.
"""

from __future__ import annotations

import operator
import warnings
from functools import partial

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._params import check_bool, check_float_dtype
from ._errors import CentringPrecisionWarning
from ._threads import (
    MAX_ROW_BLOCKS,
    n_row_blocks,
    run_blocks,
    small_blas,
    sum_in_order,
    tall_matmul,
    tall_tmatmul,
)
from ._thresholds import active
from ._validation import (
    ShapeCheckedOperator,
    check_2d,
    check_block,
    check_dense_size,
    check_matrix,
    check_positive_int,
    check_same_rows,
    check_shape,
    check_tau,
)

__all__ = ["GramStats", "RegularizedGram", "CrossCovariance", "column_mean",
           "centred_projection"]

#: the limits of dense arrays (``toarray``, ``dense_product``) default to "auto": the
#: ``dense_max_dim`` of the active :class:`~._thresholds.Thresholds` (name kept for importers)
DENSE_MAX_DIM = "auto"

# The thresholds read here (fields of the active Thresholds):
# * pair_split_max_bytes: sparse_pair_tmatmat splits its rows over threads only up to this
#   much dense output (each row block is densified before the sum);
# * pair_output_split_min_flops: beyond that size it splits the rows of its output instead
#   (no second dense copy), once the product takes this many multiply-adds: below it, the
#   transposed copy of X and the work count the split needs cost about what the threads save;
# * single_centred_max_amplification: centred products accumulate in float32
#   (single-precision LOBPCG steps) only while subtracting the mean can amplify their
#   rounding at most this much (an upper bound of ||X^T X|| / ||Xc^T Xc||, see
#   _DataMatrix.centring_amplification; count data stay far below it): 100 leaves float32
#   products ~1e-5 accurate, three orders below where those steps stop;
# * centring_min_digits: a sparse or streamed view centred implicitly warns when its products
#   keep fewer digits than this (the dense solver's 1e-8 accuracy is then out of reach);
# * centre_block_bytes: a dense view is centred explicitly in row blocks of about this size;
# * dense_max_dim: toarray / dense_product refuse more entries than dense_max_dim^2 (the
#   engine's own dense factors stay below it; CCAEngine passes max_dim=None for a dense
#   reference asked for);
# * dense_cross_cache_bytes: a CrossCovariance keeps its dense X^T M up to this size once
#   formed (a tau grid whitens the same C_xy for every tau).


def _as_block(V):
    """2-D float64 C-contiguous copy-if-needed of a dense block; remembers if it was 1-D."""
    V = np.asarray(V)
    one_d = V.ndim == 1
    if one_d:
        V = V[:, None]
    return np.ascontiguousarray(V, dtype=np.float64), one_d


def column_mean(X):
    """Column means of a dense or sparse (n, d) matrix, as a float64 (d,) array.

    The sums are accumulated in float64 whatever the storage dtype: numpy and scipy
    average a float32 matrix in float32, which loses digits over many rows.

    Parameters
    ----------
    X : (n, d) array-like or scipy.sparse matrix, n >= 1, real numeric dtype

    Returns
    -------
    mean : (d,) float64 ndarray

    Raises
    ------
    TypeError, ValueError
        If X is not a 2-D real array-like or sparse matrix, or has no rows (the mean of
        nothing would be NaN).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import column_mean
    >>> X = sp.random(6, 3, density=0.5, format="csr", random_state=0, dtype=np.float32)
    >>> mean = column_mean(X)
    >>> mean.shape, mean.dtype
    ((3,), dtype('float64'))
    >>> bool(np.allclose(mean, X.toarray().mean(axis=0)))
    True
    """
    X, _ = check_2d(X, "X")
    if X.shape[0] < 1:
        raise ValueError(f"X must have at least 1 row to average, got shape {X.shape}")
    # accumulated in float64: numpy and scipy average a float32 X in float32 (naively down
    # the rows: 1e5 rows near 1e3 came out 0.4 off)
    return column_sums(X) / X.shape[0]


def centred_projection(X, W, mean=None):
    """(X - 1 mean^T) W without densifying X, (n, k) float64.

    ``mean`` None (or all zero) gives X W: the uncentred projection.  A CSR X is multiplied
    by row halves (:func:`sparse_matmat`: on two threads inside the fast solvers' pinned
    region, the same result either way), then corrected by mean^T W; a dense X is centred
    explicitly, a block of rows at a time (X W - 1 mean^T W would cancel digits when the
    means dominate the spread).

    Parameters
    ----------
    X : (n, d) array-like or scipy.sparse matrix
    W : (d,) or (d, k) array-like
        Weights, e.g. ``SparseCCA.x_weights_``.
    mean : (d,) array-like, optional
        Column means to subtract from the rows of X (e.g. :func:`column_mean` of the
        training data).

    Returns
    -------
    P : (n,) or (n, k) float64 ndarray
        The projections, one row per row of X.

    Raises
    ------
    TypeError, ValueError
        If X is not 2-D and real, or W and ``mean`` do not have d rows (shapes only: the
        values are not read).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import centred_projection, column_mean
    >>> X = sp.random(40, 5, density=0.3, format="csr", random_state=0)
    >>> W = np.random.default_rng(0).standard_normal((5, 2))
    >>> mean = column_mean(X)
    >>> P = centred_projection(X, W, mean)
    >>> P.shape
    (40, 2)
    >>> bool(np.allclose(P, (X.toarray() - mean) @ W))
    True
    >>> bool(np.allclose(centred_projection(X, W), X @ W))
    True
    """
    X, _ = check_2d(X, "X")
    W = np.asarray(W)
    d = X.shape[1]
    check_block(W, "W", d, label="X.shape[1]")
    if mean is not None:
        mean = np.asarray(mean)
        check_shape(mean, "mean", (d,), "(one per column of X)")
    centre = mean is not None and bool(np.any(mean))
    if centre and not sp.issparse(X):
        return _centred_dense_product(X, W, mean)
    if sp.issparse(X) and X.format == "csr" and W.ndim == 2:
        P = sparse_matmat(X, W)
    else:
        P = np.asarray(X @ W, dtype=np.float64)
    if centre:
        P -= mean @ W
    return P


def _centred_blocks(X, mean):
    """(lo, hi, X[lo:hi] - mean) over row blocks of a dense X, in float64."""
    X = np.asarray(X)
    mean = np.asarray(mean, dtype=np.float64)
    step = max(1, active().centre_block_bytes // (8 * max(X.shape[1], 1)))
    for lo in range(0, X.shape[0], step):
        hi = min(lo + step, X.shape[0])
        yield lo, hi, np.asarray(X[lo:hi], dtype=np.float64) - mean


def _centred_dense_product(X, W, mean):
    """(X - 1 mean^T) W for a dense X, centring a block of rows at a time, (n, k) float64."""
    W = np.asarray(W, dtype=np.float64)
    out = np.empty((X.shape[0],) + W.shape[1:], dtype=np.float64)
    for lo, hi, block in _centred_blocks(X, mean):
        out[lo:hi] = block @ W
    return out


def _centred_copy(X):
    """(X - 1 mu^T, mu) for a dense X: a new float64 array and the float64 column means."""
    mean = column_mean(X)
    out = np.empty(X.shape, dtype=np.float64)
    for lo, hi, block in _centred_blocks(X, mean):
        out[lo:hi] = block
    return out, mean


def _warn_centring(amplification, name):
    """Warn when implicit centring leaves fewer than ``Thresholds.centring_min_digits`` digits."""
    loss = np.finfo(np.float64).eps * amplification
    if loss > 10.0 ** -active().centring_min_digits:
        digits = max(0.0, -np.log10(loss)) if np.isfinite(loss) else 0.0
        warnings.warn(
            f"center=True: the column means of the sparse {name} dominate its spread "
            f"(||{name}^T {name}|| / ||{name}c^T {name}c|| up to {amplification:.3g}), so "
            f"centring it implicitly keeps about {digits:.0f} significant digits of its "
            f"covariance; centre {name} yourself (a dense array is centred exactly) or "
            f"shift its largest columns", CentringPrecisionWarning, stacklevel=4)


def _compressed_view(cls, data, indices, indptr, shape):
    """A CSR/CSC matrix on the given arrays, without copying them.

    The constructor's format check copies a view smaller than half of its base
    (``prune``), which a row half of X is: the arrays are assigned to an empty matrix of
    the right shape instead (public, writable attributes).
    """
    A = cls(shape, dtype=data.dtype)
    A.data, A.indices, A.indptr = data, indices, indptr
    return A


def _csr_rows(X, lo, hi):
    """Rows lo:hi of the CSR matrix X as a CSR matrix sharing its data and indices (only the
    row pointers are copied, where ``X[lo:hi]`` would copy every nonzero)."""
    a, b = int(X.indptr[lo]), int(X.indptr[hi])
    return _compressed_view(sp.csr_matrix, X.data[a:b], X.indices[a:b],
                            X.indptr[lo:hi + 1] - a, (hi - lo, X.shape[1]))


def _transposed(P):
    """P^T as a CSC matrix on P's arrays (``P.T`` would copy a view: see _compressed_view);
    scipy's CSC product scatters rows without transposing P."""
    return _compressed_view(sp.csc_matrix, P.data, P.indices, P.indptr, P.shape[::-1])


def _row_blocks(X, width, max_blocks=MAX_ROW_BLOCKS):
    """X as its row blocks of equal nonzeros for a product with a ``width``-column block
    (one block below ``Thresholds.split_min_flops``, see :func:`._threads.n_row_blocks`);
    returns (pieces, row bounds).  The blocks depend on X and ``width`` only."""
    n = X.shape[0]
    blocks = n_row_blocks(n, X.nnz * width, max_blocks)
    if blocks == 1:
        return [X], [0, n]
    cuts = np.searchsorted(X.indptr, [X.nnz * i // blocks for i in range(1, blocks)])
    bounds = [0, *(int(c) for c in cuts), n]
    return [_csr_rows(X, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])], bounds


def _f64(A):
    return np.asarray(A, dtype=np.float64)


def _values_as(X, dtype):
    """The CSR matrix X with its values in ``dtype``, on X's own index arrays (X itself when
    it already is)."""
    if X.dtype == dtype:
        return X
    return _compressed_view(sp.csr_matrix, X.data.astype(dtype), X.indices, X.indptr, X.shape)


def sparse_matmat(X, V, dtype=np.float64):
    """X V for a CSR matrix X, (n, b) in ``dtype`` (accumulated in it: X's values must be
    of ``dtype`` too, else scipy upcasts).

    scipy's sparse products release the GIL: above ``Thresholds.split_min_flops`` the rows
    are computed as row blocks shared by the split threads (see :mod:`._threads`; no BLAS is
    involved, so BLAS is pinned to one thread meanwhile); every output row comes from one
    block, so the result is the same either way.
    """
    V = np.ascontiguousarray(V, dtype=dtype)
    pieces, _ = _row_blocks(X, V.shape[1])
    if len(pieces) == 1:
        return np.asarray(X @ V, dtype=dtype)
    with small_blas(0):  # no BLAS inside: pinned, so that run_blocks may use the cores
        parts = run_blocks([partial(operator.matmul, P, V) for P in pieces])
    return np.concatenate(parts).astype(dtype, copy=False)


def _row_blocks_sum(product, X, B, dtype=np.float64, max_blocks=MAX_ROW_BLOCKS):
    """sum over the row blocks P of X (and the matching rows of B when B is tall) of
    ``product(P, B_P)``, a (d, b) array in ``dtype``.

    Above ``Thresholds.split_min_flops`` it is always the sum of the same row blocks, in the
    same order, on as many threads as are free: bit-identical either way.
    """
    pieces, bounds = _row_blocks(X, B.shape[1], max_blocks)
    tall = B.shape[0] == X.shape[0]

    def part(i):
        lo, hi = bounds[i], bounds[i + 1]
        Bi = (_csr_rows(B, lo, hi) if sp.issparse(B) else B[lo:hi]) if tall else B
        return np.asarray(product(pieces[i], Bi), dtype=dtype)

    if len(pieces) == 1:
        return part(0)
    with small_blas(0):  # no BLAS inside: pinned, so that run_blocks may use the cores
        parts = run_blocks([partial(part, i) for i in range(len(pieces))])
    return sum_in_order(parts)


def sparse_pair_tmatmat(X, M):
    """X^T M for two CSR matrices with the same rows, as a dense (d1, d2) float64 array.

    Up to ``Thresholds.pair_split_max_bytes`` of output, each row half's sparse product is densified
    and the two are summed, on two threads (faster than one sparse product and its
    ``toarray``).  Larger ones are one product (a second dense copy of a large output would
    cost more memory and time than the thread saves), or, from
    ``Thresholds.pair_output_split_min_flops`` multiply-adds, two blocks of output rows on
    two threads (no
    second copy).
    """
    same = M is X  # a Gram matrix X^T X: one float64 copy of a float32 X, not two
    X = X.astype(np.float64, copy=False)
    M = X if same else sp.csr_matrix(M, dtype=np.float64)
    def product(P, Mi):
        return (_transposed(P) @ Mi).toarray()

    if 8 * X.shape[1] * M.shape[1] <= active().pair_split_max_bytes:
        # two blocks at most: each one's dense output is a second copy of the result
        return _row_blocks_sum(product, X, M, max_blocks=2)
    flops = float(np.dot(np.diff(X.indptr).astype(np.float64),
                         np.diff(M.indptr).astype(np.float64)))
    if flops < active().pair_output_split_min_flops or X.shape[1] < 2:
        return _f64(product(X, M))
    return _output_blocks(X, M)


def _output_blocks(X, M):
    """X^T M (float64 CSR, same rows) as a dense array, formed as blocks of output rows
    shared by the split threads, cut where the multiply-adds are divided evenly.  Each
    output row is one sparse row product, the same sum in the same order either way."""
    m_row = np.diff(M.indptr).astype(np.float64)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    work = np.bincount(X.indices, weights=m_row[rows], minlength=X.shape[1])  # per output row
    del rows
    XT = X.T.tocsr()  # rows of X^T: cheap to slice
    d1, d2 = X.shape[1], M.shape[1]
    blocks = max(2, n_row_blocks(d1, float(work.sum())))
    cum = np.cumsum(work)
    cuts = np.searchsorted(cum, [work.sum() * i / blocks for i in range(1, blocks)])
    bounds = [0, *(int(c) for c in np.clip(cuts, 1, d1 - 1)), d1]
    G = np.empty((d1, d2), dtype=np.float64)

    def block(lo, hi):
        (XT[lo:hi] @ M).toarray(out=G[lo:hi])

    with small_blas(0):  # no BLAS inside: pinned, so that run_blocks may use the cores
        run_blocks([partial(block, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])])
    return G


def sparse_tmatmat(X, U, dtype=np.float64):
    """X^T U for a CSR matrix X, (d, b) in ``dtype`` (row blocks: see _row_blocks_sum;
    X's values of ``dtype``, as for :func:`sparse_matmat`)."""
    return _row_blocks_sum(lambda P, Ui: _transposed(P) @ Ui, X,
                           np.ascontiguousarray(U, dtype=dtype), dtype)


def sparse_gram_matmat(X, V, dtype=np.float64):
    """X^T X V for a CSR matrix X, (d, b) in ``dtype``, as X^T (X V) per row range (the n x b
    intermediate is held one range at a time; X's values of ``dtype``)."""
    return _row_blocks_sum(lambda P, W: _transposed(P) @ (P @ W), X,
                           np.ascontiguousarray(V, dtype=dtype), dtype)


def column_sums(X, squares=False):
    """Column sums (of squares with ``squares``) of a dense or sparse (n, d) X, accumulated
    in float64, as a (d,) float64 array.

    scipy's ``sum(axis=0, dtype=float64)`` of a float32 sparse matrix still accumulates in
    float32 (1e5 rows near 1e3: 4e4 off), so sparse columns are summed from their stored
    values cast to float64.
    """
    if sp.issparse(X):
        if X.format not in ("csr", "csc"):
            X = X.tocsr()
        v = np.asarray(X.data, dtype=np.float64)
        if squares:
            v = v * v
        d = X.shape[1]
        if X.format == "csr":
            return np.bincount(X.indices, weights=v, minlength=d)[:d]
        out = np.zeros(d)
        nonempty = np.flatnonzero(np.diff(X.indptr))
        if nonempty.size:
            out[nonempty] = np.add.reduceat(v, X.indptr[nonempty])
        return out
    X = np.asarray(X)
    if squares:
        return np.einsum("ij,ij->j", X, X, dtype=np.float64)
    return X.sum(axis=0, dtype=np.float64)


def _column_moments(X):
    """Column sums and sums of squares of a dense or sparse (n, d) X, float64 (d,) each."""
    if sp.issparse(X) and X.format not in ("csr", "csc"):
        X = X.tocsr()  # converted once for both sums
    return column_sums(X), column_sums(X, squares=True)


def _centring_amplification(colsum, colsq, n):
    """1 + n ||mu||^2 / max_j colsq_j for column sums ``colsum`` and the diagonal ``colsq`` of
    Xc^T Xc: an upper bound of ||X^T X||_2 / ||Xc^T Xc||_2 (inf when Xc = 0 and mu != 0)."""
    top = float(colsq.max()) if colsq.size else 0.0
    mass = float(colsum @ colsum) / n if n else 0.0
    if top > 0:
        return 1.0 + mass / top
    return np.inf if mass > 0 else 1.0


class _DataMatrix:
    """A data matrix X (n x d) with optional implicit centering and fast products.

    Products are returned in float64 whatever the storage dtype (scipy upcasts a float32 X
    against the float64 blocks, so they accumulate in float64).  With ``dtype=float32`` they
    are returned in float32: accumulated in float32 from a float32 copy of a sparse X's
    values (:meth:`single`; half the bytes to move), minus the centring term formed in
    float64, else rounded from the float64 product.  The latter for a centred X whose mean
    dominates it (:meth:`centring_amplification` above
    ``Thresholds.single_centred_max_amplification``):
    subtracting the mean would cancel more digits than float32 holds.
    """

    def __init__(self, X, center: bool, name: str = "X"):
        self.sparse = sp.issparse(X)
        if self.sparse and X.format != "csr":
            X = X.tocsr()  # the products split CSR rows
        self.dtype = X.dtype
        self.center = bool(center)
        # a dense X is centred explicitly; its products then correct only for the rounding
        # left in the column means of X - 1 mu^T (the offset: mu, which :attr:`means` adds)
        self.offset = None
        if self.center and not self.sparse:
            X, self.offset = _centred_copy(X)
        self.X = X
        self.n, self.d = X.shape
        colsum, sq = _column_moments(X)
        self.colsum = colsum
        self.mean = colsum / self.n if self.center else None
        # diag(Xc^T Xc); the subtraction can lose digits for huge means, never sign
        self.colsq = np.maximum(sq - colsum * self.mean, 0.0) if self.center else sq
        self.nnz = X.nnz if self.sparse else X.size
        self._single = None
        self._amplification = None
        if self.sparse and self.center:
            _warn_centring(self.centring_amplification(), name)

    @property
    def means(self):
        """The column means of the data as given (float64 (d,)), None uncentred."""
        if not self.center:
            return None
        return self.mean if self.offset is None else self.offset + self.mean

    def single(self):
        """X's values in float32 on X's index arrays (sparse X only; formed once, 4 bytes a
        nonzero): the products are bound by the bytes they move, so float32 values take
        about half the time of float64 ones (see docs/engine.md)."""
        if self._single is None:
            self._single = _values_as(self.X, np.float32)
        return self._single

    def centring_amplification(self):
        """An upper bound of ||X^T X||_2 / ||Xc^T Xc||_2 (1 uncentred): how much subtracting
        the mean can magnify the rounding of a product accumulated without it.

        X^T X = Xc^T Xc + n mu mu^T, and the largest diagonal entry of Xc^T Xc is a lower
        bound of its norm, so 1 + n ||mu||^2 / max_j (Xc^T Xc)_jj bounds the ratio (inf
        when Xc = 0).
        """
        if self._amplification is None:
            self._amplification = (_centring_amplification(self.colsum, self.colsq, self.n)
                                   if self.center else 1.0)
        return self._amplification

    def accumulates_single(self, dtype):
        """Whether products in ``dtype`` accumulate in float32 (see the class notes)."""
        return (self.sparse and check_float_dtype(dtype) == np.float32
                and self.centring_amplification() <= active().single_centred_max_amplification)

    def matmat(self, V, dtype=np.float64):
        """Xc V, (n, b) in ``dtype`` (see the class notes for float32)."""
        if self.accumulates_single(dtype):
            out = sparse_matmat(self.single(), V, np.float32)
        else:
            V, _ = _as_block(V)
            out = (sparse_matmat(self.X, V) if self.sparse
                   else np.asarray(self.X @ V, dtype=np.float64))
        if self.center:  # formed in float64, rounded to the product's precision
            out -= (self.mean @ _f64(V)).astype(out.dtype, copy=False)
        return out.astype(dtype, copy=False)

    def rmatmat(self, U, dtype=np.float64):
        """Xc^T U, (d, b) in ``dtype``."""
        if self.accumulates_single(dtype):
            out = sparse_tmatmat(self.single(), U, np.float32)
        else:
            U, _ = _as_block(U)
            out = (sparse_tmatmat(self.X, U) if self.sparse
                   else np.asarray(self.X.T @ U, dtype=np.float64))
        if self.center:
            out -= np.outer(self.mean, np.asarray(U).sum(axis=0, dtype=np.float64)).astype(
                out.dtype, copy=False)
        return out.astype(dtype, copy=False)

    def gram_matmat(self, V, dtype=np.float64):
        """Xc^T Xc V, (d, b) in ``dtype``."""
        if self.accumulates_single(dtype):
            out = sparse_gram_matmat(self.single(), V, np.float32)
        else:
            V, _ = _as_block(V)
            out = (sparse_gram_matmat(self.X, V) if self.sparse
                   else np.asarray(self.X.T @ (self.X @ V), dtype=np.float64))
        if self.center:  # Xc^T Xc = X^T X - n mu mu^T
            out -= np.outer(self.colsum, self.mean @ _f64(V)).astype(out.dtype, copy=False)
        return out.astype(dtype, copy=False)

    def dense_gram(self):
        """Xc^T Xc as a dense float64 (d, d) array."""
        if self.sparse:
            G = sparse_pair_tmatmat(self.X, self.X)
        else:
            X64 = self.X.astype(np.float64, copy=False)
            G = X64.T @ X64
        if self.center:
            G -= np.outer(self.colsum, self.mean)
        return G

    def dense_outer_gram(self):
        """Xc Xc^T as a dense float64 (n, n) array (the dual Gram)."""
        if self.sparse:
            K = np.asarray((self.X @ self.X.T).toarray(), dtype=np.float64)
        else:
            X64 = self.X.astype(np.float64, copy=False)
            K = X64 @ X64.T
        if self.center:
            # Xc Xc^T = X X^T - X mu 1^T - 1 mu^T X^T + (mu^T mu) 1 1^T
            xm = np.asarray(self.X @ self.mean, dtype=np.float64).ravel()
            K -= xm[:, None]
            K -= xm[None, :]
            K += float(self.mean @ self.mean)
        return K


class GramStats:
    """Sufficient statistics of one view accumulated from row blocks.

    Holds the sparse Gram matrix X^T X, the column sums and the number of rows, so that a
    corpus streamed in pieces yields the same (centred or not) covariance operator as the
    stacked matrix.

    Usually built by :meth:`from_blocks` (an iterable of row blocks) or :meth:`from_dask`;
    pass it wherever X is accepted by :class:`RegularizedGram`, :class:`GramFactor` or
    :class:`RegularizedInverse` (all but the dual, n x n, dense form, which needs the rows).

    Parameters
    ----------
    gram : (d, d) sparse matrix or array
        X^T X (uncentred).
    colsum : (d,) array-like
        Column sums of X.
    n_samples : int >= 1
        Number of rows of X.
    dtype : {float64, float32}, default float64
        Dtype of the blocks; the statistics are kept in float64.

    Attributes
    ----------
    gram : (d, d) CSR matrix, float64
    colsum : (d,) float64 ndarray
    n_samples, n_features : int
    dtype : numpy dtype

    Raises
    ------
    TypeError, ValueError
        If ``gram`` is not a finite symmetric (d, d) matrix, ``colsum`` not a finite (d,)
        vector or ``n_samples`` not an int >= 1 (one pass over the stored values of gram).

    Examples
    --------
    Two row blocks give the statistics, and the covariance, of the stacked matrix:

    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import GramStats, RegularizedGram
    >>> X = sp.random(40, 5, density=0.3, format="csr", random_state=0)
    >>> stats = GramStats.from_blocks([X[:20], X[20:]])
    >>> stats.n_samples, stats.n_features
    (40, 5)
    >>> bool(np.allclose(stats.gram.toarray(), (X.T @ X).toarray()))
    True
    >>> C = RegularizedGram(stats, tau=0.2, center=True)
    >>> bool(np.allclose(C.toarray(), RegularizedGram(X, 0.2, center=True).toarray()))
    True
    """

    def __init__(self, gram, colsum, n_samples, dtype=np.float64):
        n_samples = check_positive_int(n_samples, "n_samples")
        try:
            gram = sp.csr_matrix(gram, dtype=np.float64)
            colsum = np.asarray(colsum, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"gram and colsum must be a (d, d) matrix and a (d,) vector of "
                            f"reals ({exc})") from None
        d = gram.shape[0]
        if gram.shape != (d, d) or d < 1:
            raise ValueError(f"gram must be a square (d, d) matrix X^T X, got shape "
                             f"{gram.shape}")
        if colsum.shape != (d,):
            raise ValueError(f"colsum must have shape (d,) = ({d},) like gram, got "
                             f"{colsum.shape}")
        if not (np.all(np.isfinite(gram.data)) and np.all(np.isfinite(colsum))):
            raise ValueError("gram and colsum must contain only finite values")
        # X^T X from sparse products can differ from its transpose by rounding
        asym = abs(gram - gram.T).max() if gram.nnz else 0.0
        if asym > 1e-8 * max(abs(gram).max(), 1e-300):
            raise ValueError(f"gram must be symmetric (X^T X), got max |gram - gram^T| = "
                             f"{asym:.3g}")
        self._set(gram, colsum, n_samples, dtype)

    def _set(self, gram, colsum, n_samples, dtype):
        self.gram = gram
        self.colsum = colsum
        self.n_samples = n_samples
        self.n_features = gram.shape[0]
        self.dtype = np.dtype(dtype)

    @classmethod
    def _of_sums(cls, gram, colsum, n_samples, dtype):
        """From sums that are valid by construction (blocks, additions): no checks."""
        self = cls.__new__(cls)
        self._set(sp.csr_matrix(gram, dtype=np.float64), np.asarray(colsum, dtype=np.float64),
                  int(n_samples), dtype)
        return self

    @classmethod
    def from_blocks(cls, blocks, name: str = "blocks"):
        """Accumulate from an iterable of (n_b, d) row blocks (CSR, other sparse, or dense).

        A block with no rows (the empty chunk a filtered stream can yield) adds nothing; its
        number of columns is still checked.

        Raises
        ------
        ValueError
            If the iterable yields no row at all, or the blocks disagree on the number of
            columns.
        """
        total, width = None, None
        for i, B in enumerate(blocks):
            label = f"{name}[{i}]"
            B = check_2d(B, label)[0]
            width = _check_width(B.shape[1], width, label)
            if B.shape[0] == 0:
                continue
            part = cls._of_block(B, label)
            total = part if total is None else total._add(part, label)
        if total is None:
            got = "none" if width is None else "only blocks of 0 rows"
            raise ValueError(f"{name} must yield at least one row block with rows, got {got}")
        return total

    @classmethod
    def from_dask(cls, X, name: str = "X", **compute_kwargs):
        """Accumulate from the row blocks of a Dask array, one task per block and a tree sum.

        Parameters
        ----------
        X : (n, d) dask.array.Array, chunked by rows only (one chunk across the columns);
            its blocks NumPy arrays or scipy.sparse matrices
        name : str
            What error messages call X.
        **compute_kwargs
            Passed to ``dask.compute`` (e.g. ``scheduler="threads"``); the default is
            Dask's current scheduler (a distributed Client when one is active).

        Raises
        ------
        ImportError
            Without dask (``pip install ".[dask]"``).
        ValueError
            If X is split across its columns; bad blocks get the same errors as in
            :meth:`from_blocks`, naming the block.
        """
        from ._dask import reduce_row_blocks

        def of_block(B, label):
            return cls._of_block(B, f"{name} {label}")

        return reduce_row_blocks([X], [name], of_block,
                                 lambda a, b: a._add(b, f"a row block of {name}"),
                                 compute_kwargs)

    @classmethod
    def _of_block(cls, B, label):
        B = check_matrix(B, label)
        Bs = sp.csr_matrix(B, dtype=np.float64)
        return cls._of_sums((Bs.T @ Bs).tocsr(), np.asarray(Bs.sum(axis=0)).ravel(),
                            Bs.shape[0], B.dtype)

    def _add(self, other, label):
        """The statistics of the union of both row sets."""
        _check_width(other.n_features, self.n_features, label)
        gram = self.gram + other.gram
        gram.sum_duplicates()
        return GramStats._of_sums(gram, self.colsum + other.colsum,
                                  self.n_samples + other.n_samples,
                                  np.promote_types(self.dtype, other.dtype))


class _StatsSource:
    """Gram products from accumulated :class:`GramStats` (no access to the rows)."""

    sparse = True

    def __init__(self, stats: GramStats, center: bool, name: str = "X"):
        self.stats = stats
        self.n, self.d = stats.n_samples, stats.n_features
        self.dtype = stats.dtype
        self.center = bool(center)
        self.colsum = stats.colsum
        self.mean = stats.colsum / self.n if self.center else None
        sq = stats.gram.diagonal()
        self.colsq = np.maximum(sq - self.colsum * self.mean, 0.0) if self.center else sq
        self.nnz = stats.gram.nnz
        if self.center:
            _warn_centring(_centring_amplification(self.colsum, self.colsq, self.n), name)

    @property
    def means(self):
        """The column means (float64 (d,)), None uncentred."""
        return self.mean

    def gram_matmat(self, V, dtype=np.float64):
        V, _ = _as_block(V)
        out = np.asarray(self.stats.gram @ V, dtype=np.float64)
        if self.center:
            out -= np.outer(self.colsum, self.mean @ V)
        return out.astype(dtype, copy=False)

    def dense_gram(self):
        G = self.stats.gram.toarray()
        if self.center:
            G -= np.outer(self.colsum, self.mean)
        return G


def _source(X, center, name="X"):
    """A Gram source (data matrix or accumulated statistics) for X."""
    if isinstance(X, GramStats):
        return _StatsSource(X, center, name)
    if isinstance(X, (_DataMatrix, _StatsSource)):
        if X.center != bool(center):
            raise ValueError(f"{name} was built with center={X.center}, got center={center}")
        return X
    return _DataMatrix(check_matrix(X, name), center, name)


class RegularizedGram(ShapeCheckedOperator):
    """The regularised covariance C = (1 - tau) Xc^T Xc + tau I as a symmetric operator.

    Parameters
    ----------
    X : (n, d) ndarray or scipy.sparse matrix, or :class:`GramStats`
        Data, one example per row.  Never densified.
    tau : float in [0, 1]
        Regularisation weight (the paper's tau): 0 is the plain Gram matrix, 1 the identity.
    center : bool, default False
        Centre the columns: a sparse X implicitly (Xc = X - 1 mu^T by a rank-one
        correction; a :class:`CentringPrecisionWarning` when the means dominate), a dense X
        in a float64 copy.
    dtype : {None, float32, float64}
        Dtype of the products (default: that of X).

    Attributes
    ----------
    tau : float
    center : bool
    n_samples : int
    mean_ : (d,) float64 ndarray or None
        The column means used for centring.

    Notes
    -----
    Products accumulate in float64 and are rounded to ``dtype`` at the end
    (:meth:`matmat_as` with float32 accumulates in float32 where that is safe).
    ``C @ V`` costs two passes over the nonzeros of X per block (X^T (X V), by row halves).
    Centring never densifies a sparse X: Xc^T Xc V = X^T X V - n mu (mu^T V).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import RegularizedGram
    >>> X = sp.random(40, 5, density=0.3, format="csr", random_state=0)
    >>> C = RegularizedGram(X, tau=0.25)
    >>> C.shape
    (5, 5)
    >>> Xd = X.toarray()
    >>> bool(np.allclose(C.toarray(), 0.75 * Xd.T @ Xd + 0.25 * np.eye(5)))
    True

    Centred, as an operator (``toarray`` is for small d only):

    >>> Cc = RegularizedGram(X, tau=0.25, center=True)
    >>> Xc = Xd - Xd.mean(axis=0)
    >>> V = np.ones((5, 2))
    >>> bool(np.allclose(Cc @ V, (0.75 * Xc.T @ Xc + 0.25 * np.eye(5)) @ V))
    True
    """

    def __init__(self, X, tau, center: bool = False, dtype=None):
        tau = check_tau(tau)
        center = check_bool("center", center)
        self._src = _source(X, center)
        self.tau = tau
        self.center = bool(center)
        self.n_samples = self._src.n
        dtype = self._src.dtype if dtype is None else check_float_dtype(dtype)
        super().__init__(dtype=dtype, shape=(self._src.d, self._src.d))

    @classmethod
    def from_blocks(cls, blocks, tau, center: bool = False):
        """Accumulate from an iterable of CSR row blocks (same result as the stacked matrix).

        ``tau`` and ``center`` are checked before the first block is read: a one-shot
        stream is not used up for an error the arguments show."""
        check_tau(tau)
        check_bool("center", center)
        return cls(GramStats.from_blocks(blocks), tau, center=center)

    @property
    def mean_(self):
        """Column means used for centring, or None when ``center=False``."""
        return self._src.means

    def _matmat(self, V):
        V = np.asarray(V)
        return self._combine(self._src.gram_matmat(V), V).astype(self.dtype, copy=False)

    def gram_matmat(self, V):
        """Xc^T Xc V, (d, b) float64 (also for a (d,) V): the tau-independent part of
        ``C @ V``, from which C V for any tau is ``(1 - tau) G V + tau V``
        (:meth:`from_gram_image`).

        Raises
        ------
        ValueError
            If V is not a (d,) vector or (d, b) block.
        """
        V = np.asarray(V)
        check_block(V, "V", self.shape[0])
        return np.asarray(self._src.gram_matmat(V), dtype=np.float64)

    def from_gram_image(self, GV, V):
        """C V from V and its Gram image GV = :meth:`gram_matmat` (V), in their precision
        (float64 for the float64 image).

        Raises
        ------
        ValueError
            If V is not a (d,) vector or (d, b) block, or GV is not of V's shape (the (d, 1)
            image of a (d,) V included: they would broadcast to a (d, d) array).
        """
        V = np.asarray(V)
        check_block(V, "V", self.shape[0])
        check_shape(GV, "GV", V.shape, "like V")
        return self._combine(GV, V)

    def matmat_as(self, V, dtype):
        """C V, (d, b) in ``dtype``: float32 for single-precision LOBPCG steps, where the
        Gram product of a sparse X accumulates in float32 unless centring it would cancel
        too many digits (see ``_DataMatrix``).

        Raises
        ------
        ValueError
            If V is not a (d, b) block or ``dtype`` not float32 or float64.
        """
        dtype = check_float_dtype(dtype)
        V = np.ascontiguousarray(V, dtype=dtype)
        check_block(V, "V", self.shape[0], vector=False)
        return self._combine(self._src.gram_matmat(V, dtype), V)

    def _combine(self, GV, V):
        """(1 - tau) GV + tau V for arrays of the same shape (unchecked: the products')."""
        return (1.0 - self.tau) * GV + self.tau * V

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _rmatvec(self, v):
        return self._matvec(v)

    def _rmatmat(self, V):
        return self._matmat(V)

    def _adjoint(self):
        return self

    def diagonal(self):
        """diag(C), (d,) float64."""
        return (1.0 - self.tau) * self._src.colsq + self.tau

    def toarray(self, max_dim: int | str | None = "auto"):
        """Materialise C as a dense (d, d) array (only for small d).

        Parameters
        ----------
        max_dim : int >= 1 or None, default "auto"
            Refuse d > max_dim before allocating; None for no limit.

        Raises
        ------
        ValueError
            If d > max_dim (the dense matrix would take d * d * 8 bytes).
        TypeError
            If max_dim is not an int or None.
        """
        check_dense_size(self.shape, max_dim, "covariance", "; its products (C @ V) never form it")
        G = self._src.dense_gram()
        G *= 1.0 - self.tau
        G[np.diag_indices_from(G)] += self.tau
        return G.astype(self.dtype, copy=False)


class CrossCovariance(ShapeCheckedOperator):
    """The cross-covariance C_xy = Xc^T M (unscaled, no tau) as a (d1, d2) operator.

    Parameters
    ----------
    X : (n, d1) ndarray or scipy.sparse matrix
    M : (n, d2) ndarray or scipy.sparse matrix
        The second factor (M = Y for CCA; a residual-weighted mixture for the rerankers).
    center : bool, default False
        Centre X (a sparse X implicitly, a dense one in a float64 copy).  Since Xc^T M =
        Xc^T Mc, this is the centred cross-covariance; a dense M is centred in a copy too.

    Attributes
    ----------
    n_samples : int, the number of rows of X and M

    Notes
    -----
    Kept factored: ``C_xy @ V = Xc^T (M V)`` costs nnz(X) + nnz(M) per column, usually far
    less than the (often nearly dense) product X^T M.  :meth:`tosparse` forms X^T M as a
    sparse matrix when it is wanted; :meth:`from_blocks` accumulates it from row blocks.
    C_xy is not multiplied by (1 - tau): the paper's scaling (Eq. 11).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import CrossCovariance
    >>> X = sp.random(40, 5, density=0.3, format="csr", random_state=0)
    >>> M = sp.random(40, 4, density=0.3, format="csr", random_state=1)
    >>> C = CrossCovariance(X, M, center=True)
    >>> C.shape
    (5, 4)
    >>> Xc = X.toarray() - X.toarray().mean(axis=0)
    >>> Mc = M.toarray() - M.toarray().mean(axis=0)
    >>> bool(np.allclose(C @ np.ones((4, 2)), Xc.T @ Mc @ np.ones((4, 2))))
    True

    Accumulated from row blocks, it is the same operator:

    >>> pairs = [(X[:20], M[:20]), (X[20:], M[20:])]
    >>> acc = CrossCovariance.from_blocks(pairs, center=True)
    >>> bool(np.allclose(acc.toarray(), C.toarray()))
    True
    """

    def __init__(self, X, M, center: bool = False):
        center = check_bool("center", center)
        if isinstance(X, _DataMatrix):
            if X.center != bool(center):
                raise ValueError(f"X was built with center={X.center}, got center={center}")
            self._x = X
        else:
            self._x = _DataMatrix(check_matrix(X, "X"), center)
        M = check_matrix(M, "M")
        check_same_rows(X=self._x.X, M=M)
        if center and not sp.issparse(M):
            # Xc^T M = Xc^T Mc: a dense M is centred too, so that its offset does not
            # round X^T M (the rank-one term then corrects only rounding)
            M = _centred_copy(M)[0]
        self._m = M
        self._sparse = None  # accumulated (sparse X^T M, colsum X, colsum M, n)
        self._product = None  # X^T M once formed by tosparse
        self._dense = None  # dense X^T M once formed by dense_product, when small
        self._dense_single = None  # its copy in single precision (dense_product_as)
        self._m_single = None  # a sparse M's values in float32 (matmat_as)
        self._rank_one = None
        self._single_ok = None
        self.center = bool(center)
        self.n_samples = self._x.n
        super().__init__(dtype=np.float64, shape=(self._x.d, M.shape[1]))

    @classmethod
    def from_blocks(cls, pairs, center: bool = False):
        """Accumulate X^T M from an iterable of (X_block, M_block) row-block pairs
        (``center`` is checked before the first pair is read)."""
        center = check_bool("center", center)
        total, widths = None, None
        for i, pair in enumerate(pairs):
            try:
                Xb, Mb = pair
            except (TypeError, ValueError):
                raise TypeError(f"pairs[{i}] must be an (X_block, M_block) pair, got "
                                f"{type(pair).__name__}") from None
            xlabel, mlabel = f"pairs[{i}][0]", f"pairs[{i}][1]"
            Xb, Mb = check_2d(Xb, xlabel)[0], check_2d(Mb, mlabel)[0]
            check_same_rows(**{xlabel: Xb, mlabel: Mb})
            widths = (_check_width(Xb.shape[1], widths and widths[0], xlabel, "pairs[0][0]"),
                      _check_width(Mb.shape[1], widths and widths[1], mlabel, "pairs[0][1]"))
            if Xb.shape[0] == 0:  # an empty chunk of a filtered stream adds nothing
                continue
            part = _cross_of_blocks(Xb, Mb, xlabel, mlabel)
            total = part if total is None else _add_cross(total, part, f"pairs[{i}]",
                                                          "the first pair")
        if total is None:
            got = "none" if widths is None else "only pairs of 0 rows"
            raise ValueError(f"pairs must yield at least one (X_block, M_block) pair with "
                             f"rows, got {got}")
        return cls._from_sums(*total, center=center)

    @classmethod
    def from_dask(cls, X, M, center: bool = False, **compute_kwargs):
        """Accumulate X^T M from the row blocks of two Dask arrays (a tree sum of tasks).

        Parameters
        ----------
        X : (n, d1) dask.array.Array, M : (n, d2) dask.array.Array
            Chunked by rows only, with the same row chunks; blocks NumPy arrays or
            scipy.sparse matrices.
        center : bool
        **compute_kwargs
            Passed to ``dask.compute``.

        Raises
        ------
        ImportError
            Without dask (``pip install ".[dask]"``).
        ValueError
            If an array is split across its columns or the row chunks differ.
        """
        from ._dask import reduce_row_blocks

        center = check_bool("center", center)
        total = reduce_row_blocks(
            [X, M], ["X", "M"],
            lambda Xb, Mb, label: _cross_of_blocks(Xb, Mb, f"X {label}", f"M {label}"),
            lambda a, b: _add_cross(a, b, "a row block of X and M", "the others"),
            compute_kwargs)
        return cls._from_sums(*total, center=center)

    @classmethod
    def _from_sums(cls, C, sx, sm, n, center):
        C.sum_duplicates()
        self = cls.__new__(cls)
        self._x = None
        self._m = None
        self._product = None
        self._dense = None
        self._dense_single = None
        self._m_single = None
        self._rank_one = None
        self._single_ok = None
        self._sparse = (C, sx, sm, n)
        self.center = bool(center)
        self.n_samples = int(n)
        LinearOperator.__init__(self, dtype=np.float64, shape=C.shape)
        return self

    def _stored_product(self):
        """X^T M when it is at hand (the cached dense one, or the accumulated sparse one),
        else None: the products are then that matrix minus :meth:`rank_one`."""
        if self._dense is not None:
            return self._dense
        return None if self._sparse is None else self._sparse[0]

    def _stored_apply(self, V, transpose, C=None):
        """C_xy V (C_xy^T V with ``transpose``) through a stored X^T M ``C`` (default
        :meth:`_stored_product`; None when nothing is stored), minus the rank-one centring
        term in C's precision.  A dense C's rows split over both cores."""
        C = self._stored_product() if C is None else C
        if C is None:
            return None
        u, v = self.rank_one()
        if transpose:
            u, v = v, u
        if isinstance(C, np.ndarray):
            out = tall_tmatmul(C, V) if transpose else tall_matmul(C, V)
        else:
            out = np.asarray(C.T @ V if transpose else C @ V)
        if np.any(u):
            out -= np.outer(u, v @ V).astype(out.dtype, copy=False)
        return out

    def kept_dense_matmat(self, V, dtype=np.float64, transpose=False):
        """C_xy V (C_xy^T V with ``transpose``) through the dense X^T M in ``dtype`` (its
        kept float32 copy for single-precision work, see :meth:`dense_product_as`); V of
        ``dtype``.  For an operator that keeps X^T M dense (:meth:`kept_product`)."""
        return self._stored_apply(V, transpose, self.dense_product_as(dtype))

    def accumulates_single(self):
        """Whether float32 products may accumulate in float32 (:meth:`matmat_as`).

        Uncentred, always.  Centred, the product is the uncentred one minus the rank-one
        term: its rounding, ~eps ||X|| ||M|| ||V||, is measured against ||Xc|| ||Mc|| ||V||,
        so the amplification sqrt(a_x a_m) (a_x the bound ``_DataMatrix.
        centring_amplification`` of ||X||^2 / ||Xc||^2, a_m that of M) and a_x, which X's
        own centred products incur, must stay within
        ``Thresholds.single_centred_max_amplification``.  An
        accumulated operator has no column norms to bound them by: float64.
        """
        if self._single_ok is None:
            if not self.center:
                ok = True
            elif self._x is None:
                ok = False
            else:
                colsum, sq = _column_moments(self._m)
                n = self._m.shape[0]
                a_m = _centring_amplification(colsum, np.maximum(sq - colsum * colsum / n,
                                                                 0.0), n)
                a_x = self._x.centring_amplification()
                limit = active().single_centred_max_amplification
                ok = a_x <= limit and np.sqrt(a_x * a_m) <= limit
            self._single_ok = bool(ok)
        return self._single_ok

    def matmat_as(self, V, dtype, transpose=False):
        """C_xy V (C_xy^T V with ``transpose``), in ``dtype``.

        float32 is for single-precision LOBPCG steps, accumulated in float32 where the
        centring allows it (:meth:`accumulates_single`): through the kept dense X^T M when
        it has been formed (its float32 copy, :meth:`kept_dense_matmat`), else, with sparse
        factors, from float32 copies of their values (half the bytes to move, about twice
        as fast).  Otherwise (an accumulated sparse X^T M, dense factors, a centred product
        whose mean dominates) the float64 product rounded.

        Raises
        ------
        ValueError
            If V is not a (d2, b) block ((d1, b) with ``transpose``) or ``dtype`` not
            float32 or float64.
        TypeError
            If ``transpose`` is not a bool.
        """
        dtype = check_float_dtype(dtype)
        transpose = check_bool("transpose", transpose)
        V = np.asarray(V)
        d1, d2 = self.shape
        check_block(V, "V", d1 if transpose else d2, label="d1" if transpose else "d2",
                    vector=False)
        single = dtype == np.float32 and self.accumulates_single()
        if single and self._dense is not None:
            return self.kept_dense_matmat(np.ascontiguousarray(V, dtype=dtype), dtype, transpose)
        single = (single and self._stored_product() is None and self._x.sparse
                  and sp.issparse(self._m))
        if not single:
            out = self._rmatmat(V) if transpose else self._matmat(V)
            return np.ascontiguousarray(out, dtype=dtype)
        if self._m_single is None:
            self._m_single = _values_as(sp.csr_matrix(self._m), np.float32)
        M = self._m_single
        if transpose:
            return sparse_tmatmat(M, self._x.matmat(V, dtype), dtype)
        return self._x.rmatmat(sparse_matmat(M, V, dtype), dtype)

    def _matmat(self, V):
        V, _ = _as_block(V)
        out = self._stored_apply(V, transpose=False)
        if out is not None:
            return out
        if sp.issparse(self._m):
            return self._x.rmatmat(sparse_matmat(self._m, V))
        return self._x.rmatmat(np.asarray(self._m @ V, dtype=np.float64))

    def _rmatmat(self, U):
        U, _ = _as_block(U)
        out = self._stored_apply(U, transpose=True)
        if out is not None:
            return out
        XU = self._x.matmat(U)
        if sp.issparse(self._m):
            return sparse_tmatmat(self._m, XU)
        return np.asarray(self._m.T @ XU, dtype=np.float64)

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _rmatvec(self, v):
        return self._rmatmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _adjoint(self):
        return _Adjoint(self)

    def tosparse(self, copy=True):
        """X^T M (uncentred part) as a CSR matrix; with ``center=True`` the full operator is
        this minus the rank-one term n mu_x mu_m^T (see :meth:`rank_one`).

        ``copy=False`` returns the operator's own matrix (formed once; a tau grid reuses
        it), which the caller must not modify.
        """
        if self._sparse is not None:
            C = self._sparse[0]
        else:
            if self._product is None:
                X = self._x.X
                Xs = X if sp.issparse(X) else sp.csr_matrix(X)
                Ms = self._m if sp.issparse(self._m) else sp.csr_matrix(self._m)
                self._product = (Xs.T @ Ms).tocsr().astype(np.float64)
            C = self._product
        return C.copy() if copy else C

    def rank_one(self):
        """(u, v) with C_xy = tosparse() - u v^T (zeros when ``center=False``); read-only,
        formed once (every product of the operator asks for it)."""
        if self._rank_one is None:
            d1, d2 = self.shape
            if not self.center:
                u, v = np.zeros(d1), np.zeros(d2)
            elif self._sparse is not None:
                _, sx, sm, n = self._sparse
                u, v = sx / n, np.array(sm, dtype=np.float64)
            else:
                u = self._x.colsum / self._x.X.shape[0]
                v = column_sums(self._m)
            u.flags.writeable = v.flags.writeable = False
            self._rank_one = (u, v)
        return self._rank_one

    def toarray(self, max_dim: int | str | None = "auto"):
        """Dense (d1, d2) C_xy (only for small dimensions).

        Parameters
        ----------
        max_dim : int >= 1 or None, default "auto"
            Refuse d1 * d2 > max_dim^2 (more than a max_dim x max_dim array) before
            allocating; None for no limit.

        Raises
        ------
        ValueError, TypeError
            As :meth:`dense_product`.
        """
        u, v = self.rank_one()
        out = self.dense_product(max_dim)
        if np.any(u):
            out = out - np.outer(u, v)
        return out

    def dense_rows(self, lo, hi):
        """Rows lo:hi of X^T M (uncentred, as :meth:`dense_product`) as a new writable
        (hi - lo, d2) float64 array: from the dense product when it is small enough to keep
        (formed once, a tau grid reuses it), else from the sparse one."""
        if self._keeps_dense():
            return np.array(self.dense_product()[lo:hi])
        return np.ascontiguousarray(self.tosparse(copy=False)[lo:hi].toarray(),
                                    dtype=np.float64)

    def dense_product(self, max_dim: int | str | None = "auto"):
        """X^T M (the uncentred part, as :meth:`tosparse`) as a dense (d1, d2) float64 array.

        Read-only: kept and returned again when at most
        ``Thresholds.dense_cross_cache_bytes`` (copy it
        before writing).  With sparse factors it is formed from their row halves
        (:func:`sparse_pair_tmatmat`) when kept, else from the sparse product (kept).

        Parameters
        ----------
        max_dim : int >= 1 or None, default "auto"
            Refuse d1 * d2 > max_dim^2 (more than a max_dim x max_dim array) before
            allocating; None for no limit.  The kept sizes are far below it.

        Raises
        ------
        ValueError
            If d1 * d2 > max_dim^2.
        TypeError
            If max_dim is not an int or None.
        """
        check_dense_size(self.shape, max_dim, "cross-covariance",
                         "; its products (C_xy @ V) never form it")
        if self._dense is not None:
            return self._dense
        # accumulated operators have no factors (_x is None), only their sparse sum
        stored = self._sparse is not None or self._product is not None
        both_sparse = not stored and self._x.sparse and sp.issparse(self._m)
        if both_sparse and self._keeps_dense():
            out = sparse_pair_tmatmat(self._x.X, self._m)
        elif stored or both_sparse:  # the sparse product (kept when too large to keep dense)
            out = self.tosparse(copy=False).toarray()
        elif self._x.sparse:  # dense M: sparse times dense
            out = np.asarray(self._x.X.T @ np.asarray(self._m, dtype=np.float64))
        elif sp.issparse(self._m):  # dense X: (M^T X)^T, without densifying M
            out = np.asarray((self._m.T @ np.asarray(self._x.X, dtype=np.float64)).T)
        else:
            out = np.asarray(self._x.X, dtype=np.float64).T @ np.asarray(self._m,
                                                                          dtype=np.float64)
        out = np.asarray(out, dtype=np.float64)
        out.flags.writeable = False
        if self._keeps_dense():
            self._dense = out
        return out

    def dense_product_as(self, dtype):
        """:meth:`dense_product` in ``dtype``; a float32 copy of a kept product is kept too
        (read-only: a tau grid's single-precision LOBPCG solves reuse it)."""
        out = self.dense_product()
        dtype = np.dtype(dtype)
        if dtype == out.dtype:
            return out
        if self._dense is None:
            return out.astype(dtype)
        if self._dense_single is None or self._dense_single.dtype != dtype:
            single = out.astype(dtype)
            single.flags.writeable = False
            self._dense_single = single
        return self._dense_single

    def kept_product(self):
        """X^T M (uncentred, as :meth:`tosparse`) in the form the operator keeps: the dense
        array when at most ``Thresholds.dense_cross_cache_bytes``, else the sparse matrix; read-only
        either way (a tau grid reuses it)."""
        return self.dense_product() if self._keeps_dense() else self.tosparse(copy=False)

    def _keeps_dense(self):
        """Whether :meth:`dense_product` keeps its result (at most
        ``Thresholds.dense_cross_cache_bytes``)."""
        d1, d2 = self.shape
        return 8 * d1 * d2 <= active().dense_cross_cache_bytes


def _check_width(d, width, label, like="the first block"):
    """A streamed block's column count d agrees with the first block's ``width`` (None for
    the first block); returns the width."""
    if width is not None and d != width:
        raise ValueError(f"{label} must have {width} columns like {like}, got {d}")
    return d


def _cross_of_blocks(Xb, Mb, xlabel, mlabel):
    """(X_b^T M_b as CSR, column sums of X_b and M_b, rows) of one pair of row blocks."""
    Xb = sp.csr_matrix(check_matrix(Xb, xlabel), dtype=np.float64)
    Mb = check_matrix(Mb, mlabel)
    check_same_rows(**{xlabel: Xb, mlabel: Mb})
    Mb = sp.csr_matrix(Mb, dtype=np.float64)
    return ((Xb.T @ Mb).tocsr(), np.asarray(Xb.sum(axis=0)).ravel(),
            np.asarray(Mb.sum(axis=0)).ravel(), Xb.shape[0])


def _add_cross(a, b, label, like):
    (Ca, xa, ma, na), (Cb, xb, mb, nb) = a, b
    if Cb.shape != Ca.shape:
        raise ValueError(f"{label} must have {Ca.shape[0]} and {Ca.shape[1]} columns like "
                         f"{like}, got {Cb.shape[0]} and {Cb.shape[1]}")
    return Ca + Cb, xa + xb, ma + mb, na + nb


class _ColumnMerge:
    """Exact reduction of a data matrix with duplicate columns.

    Identical columns x_j (common for sparse NLP features: a word seen once and its
    suffixes share one row pattern -- often a quarter of a suffix view's columns) make
    C = (1 - tau) X^T X + tau I needlessly large and ill-conditioned for diagonal
    preconditioners.  With groups g of m_g identical columns, X a only depends on the group
    sums, and for a fixed X a the penalty ||a||^2 is smallest with equal shares, so every
    solution has a_j = c_g / sqrt(m_g) where c solves the same problem for the merged matrix
    X_hat = [sqrt(m_g) x_g].  a^T Cxx a, a^T Cxy b and the residual norms are preserved.
    """

    def __init__(self, X):
        d = X.shape[1]
        self.n_features = d
        # fingerprint: two random projections; identical columns give bit-identical sums
        R = np.random.default_rng(0x5eed).standard_normal((X.shape[0], 2))
        h = np.asarray(X.T @ R) if sp.issparse(X) else X.T @ R
        order = np.lexsort((h[:, 1], h[:, 0]))
        hs = h[order]
        new = np.ones(d, dtype=bool)
        new[1:] = np.any(hs[1:] != hs[:-1], axis=1)
        label_sorted = np.cumsum(new) - 1
        labels = np.empty(d, dtype=np.int64)
        labels[order] = label_sorted
        # verify candidate groups exactly (a hash collision splits the group)
        Xc = X.tocsc() if sp.issparse(X) else X
        if sp.issparse(Xc):
            Xc.sort_indices()
        rep_of = {}
        next_label = int(label_sorted[-1]) + 1 if d else 0
        for j in order[~new]:  # members other than the first of each candidate group
            g = labels[j]
            first = rep_of.get(g)
            if first is None:
                first = order[np.searchsorted(label_sorted, g)]
                rep_of[g] = first
            if not _same_column(Xc, first, j):
                labels[j] = next_label
                next_label += 1
        uniq, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
        self.labels = inverse  # merged index of every original column
        self.counts = counts
        self.n_merged = uniq.size
        self.trivial = self.n_merged == d
        if self.trivial:
            self.merged = X
            return
        first = np.full(self.n_merged, d, dtype=np.int64)
        np.minimum.at(first, inverse, np.arange(d))
        scale = np.sqrt(counts.astype(np.float64))
        if sp.issparse(X):
            Xm = X.tocsc()[:, first] @ sp.diags(scale.astype(X.dtype))
            self.merged = sp.csr_matrix(Xm, dtype=X.dtype)
        else:
            self.merged = np.ascontiguousarray(X[:, first] * scale.astype(X.dtype))

    def expand(self, W):
        """Weights on the merged columns (d', k) -> original columns (d, k)."""
        if self.trivial:
            return W
        return W[self.labels] / np.sqrt(self.counts[self.labels])[:, None]


def _same_column(Xc, i, j):
    if sp.issparse(Xc):
        a = slice(Xc.indptr[i], Xc.indptr[i + 1])
        b = slice(Xc.indptr[j], Xc.indptr[j + 1])
        return (a.stop - a.start == b.stop - b.start
                and np.array_equal(Xc.indices[a], Xc.indices[b])
                and np.array_equal(Xc.data[a], Xc.data[b]))
    return np.array_equal(Xc[:, i], Xc[:, j])


class _Adjoint(LinearOperator):
    def __init__(self, A):
        self.A = A
        super().__init__(dtype=A.dtype, shape=(A.shape[1], A.shape[0]))

    def _matmat(self, V):
        return self.A._rmatmat(V)

    def _matvec(self, v):
        return self.A._rmatvec(v)

    def _rmatmat(self, U):
        return self.A._matmat(U)

    def _rmatvec(self, u):
        return self.A._matvec(u)

    def _adjoint(self):
        return self.A
