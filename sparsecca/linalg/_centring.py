"""Column statistics, centring, and the data matrix behind the covariance operators.

The rank-one correction X^T X - n mu mu^T cancels digits when the means dominate the
spread of the columns (float64 products keep about -log10(eps a) digits for the bound ``a``
of :func:`_centring_amplification`).  A dense X or M is therefore centred explicitly, in a
float64 copy (the caller's array is untouched); a sparse or streamed one, which centring
would densify, keeps the correction and warns (:class:`CentringPrecisionWarning`) when
fewer than ``Thresholds.centring_min_digits`` digits would be left.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from .._params import check_float_dtype
from ._errors import CentringPrecisionWarning
from ._sparse_products import (
    _f64,
    _values_as,
    sparse_gram_matmat,
    sparse_matmat,
    sparse_pair_tmatmat,
    sparse_tmatmat,
)
from ._thresholds import active
from ._validation import check_2d, check_block, check_shape

__all__ = ["centred_projection", "column_mean", "column_sums"]

# The thresholds read here (fields of the active Thresholds):
# * single_centred_max_amplification: centred products accumulate in float32
#   (single-precision LOBPCG steps) only while subtracting the mean can amplify their
#   rounding at most this much (an upper bound of ||X^T X|| / ||Xc^T Xc||, see
#   _DataMatrix.centring_amplification; count data stay far below it): 100 leaves float32
#   products ~1e-5 accurate, three orders below where those steps stop;
# * centring_min_digits: a sparse or streamed view centred implicitly warns when its products
#   keep fewer digits than this (the dense solver's 1e-8 accuracy is then out of reach);
# * centre_block_bytes: a dense view is centred explicitly in row blocks of about this size.


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
    by row blocks (:func:`sparse_matmat`: on the split threads inside the fast solvers' pinned
    region, the same result either way), then corrected by mean^T W; a dense X is centred
    explicitly, a block of rows at a time (X W - 1 mean^T W would cancel digits when the
    means dominate the spread).

    Parameters
    ----------
    X : (n, d) array-like or scipy.sparse matrix, or dask.array.Array chunked by rows only
    W : (d,) or (d, k) array-like
        Weights, e.g. ``SparseCCA.x_weights_``.
    mean : (d,) array-like, optional
        Column means to subtract from the rows of X (e.g. :func:`column_mean` of the
        training data).

    Returns
    -------
    P : (n,) or (n, k) float64 ndarray
        The projections, one row per row of X (for a Dask X a lazy Dask array, projected
        row chunk by row chunk where the chunks are).

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
    if type(X).__module__.startswith("dask."):
        from ._dask_operator import dask_projection
        return dask_projection(X, W, mean)
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
    values (:meth:`_single_values`; half the bytes to move), minus the centring term formed in
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

    def _single_values(self):
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
            out = sparse_matmat(self._single_values(), V, np.float32)
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
            out = sparse_tmatmat(self._single_values(), U, np.float32)
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
            out = sparse_gram_matmat(self._single_values(), V, np.float32)
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


def _pearson(P, Q):
    """Column-wise Pearson correlations of P and Q, (n, k) each; centred in two passes."""
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    P = P - P.mean(axis=0)
    Q = Q - Q.mean(axis=0)
    num = np.einsum("ij,ij->j", P, Q)
    den = np.sqrt(np.einsum("ij,ij->j", P, P) * np.einsum("ij,ij->j", Q, Q))
    out = np.zeros_like(num)
    np.divide(num, den, out=out, where=den > 0)
    return out
