"""Covariance builders as operators.

Row convention: X is n x d1 (one example per row), M is n x d2.  With Xc = X - 1 mu^T the
implicitly centred data (mu = column means; Xc = X when ``center=False``):

* :class:`RegularizedGram`   C = (1 - tau) Xc^T Xc + tau I          (d1 x d1, here)
* :class:`CrossCovariance`   C_xy = Xc^T M                           (d1 x d2, :mod:`._cross`)

Neither forms a dense d x d matrix: a Gram product is X^T (X V), scipy sparse products over
row blocks of X on the split threads (:mod:`._sparse_products`), centring is a rank-one
correction (X is never densified; :mod:`._centring`), and both can be accumulated from an
iterator of CSR row blocks (:class:`GramStats`), giving the same operator as the stacked
matrix (sums of per-block Gram matrices and column sums).

The arguments are checked by the public constructors; the engine builds its operators from
its own, already checked, data (a ``_DataMatrix`` or ``_StatsSource``) through the private
``RegularizedGram._trusted``, which checks nothing.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._params import check_bool, check_float_dtype
from ._centring import (  # noqa: F401  (importers of _gram)
    _as_block,
    _centring_amplification,
    _DataMatrix,
    _warn_centring,
    centred_projection,
    column_mean,
    column_sums,
)
from ._column_merge import _ColumnMerge  # noqa: F401
from ._cross import CrossCovariance
from ._sparse_products import (  # noqa: F401
    sparse_gram_matmat,
    sparse_matmat,
    sparse_pair_tmatmat,
    sparse_tmatmat,
)
from ._validation import (
    ShapeCheckedOperator,
    check_2d,
    check_block,
    check_block_width,
    check_dense_size,
    check_matrix,
    check_positive_int,
    check_shape,
    check_tau,
)

__all__ = ["GramStats", "RegularizedGram", "CrossCovariance", "column_mean",
           "centred_projection"]

#: the limits of dense arrays (``toarray``, ``dense_product``) default to "auto": the
#: ``dense_max_dim`` of the active :class:`~._thresholds.Thresholds` (name kept for importers)
DENSE_MAX_DIM = "auto"


class GramStats:
    """Sufficient statistics of one view accumulated from row blocks.

    Holds the sparse Gram matrix X^T X, the column sums and the number of rows, so that a
    corpus streamed in pieces yields the same (centred or not) covariance operator as the
    stacked matrix.

    Usually built by :meth:`from_blocks` (an iterable of row blocks) or :meth:`from_dask`;
    :func:`cca_from_stats` solves the CCA from two of them and a :class:`CrossCovariance`
    (the package's covariance operators and inverses also accept it wherever they accept
    X, but for the dual, n x n, dense form, which needs the rows).

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
    >>> from sparsecca.linalg import GramStats
    >>> X = sp.random(40, 5, density=0.3, format="csr", random_state=0)
    >>> stats = GramStats.from_blocks([X[:20], X[20:]])
    >>> stats.n_samples, stats.n_features
    (40, 5)
    >>> bool(np.allclose(stats.gram.toarray(), (X.T @ X).toarray()))
    True

    The centred Gram matrix follows from the column sums:

    >>> mu = stats.colsum / stats.n_samples
    >>> Xc = X.toarray() - mu
    >>> bool(np.allclose(stats.gram.toarray() - stats.n_samples * np.outer(mu, mu), Xc.T @ Xc))
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
            width = check_block_width(B.shape[1], width, label)
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
        check_block_width(other.n_features, self.n_features, label)
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
    Products accumulate in float64 and are rounded to ``dtype`` at the end (a solve in
    float32 casts the operator once, with ``sparsecca.linalg._precision.in_precision``: its
    products then accumulate in float32 where that is safe).
    ``C @ V`` costs two passes over the nonzeros of X per block (X^T (X V), by row blocks).
    Centring never densifies a sparse X: Xc^T Xc V = X^T X V - n mu (mu^T V).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg._gram import RegularizedGram
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
        self._setup(_source(X, center), tau,
                    None if dtype is None else check_float_dtype(dtype))

    @classmethod
    def _trusted(cls, src, tau, dtype=None):
        """C for a source the package built and checked (a ``_DataMatrix`` or
        ``_StatsSource``, centred or not as it says) and a checked ``tau``: the path of the
        operators built inside the engine, which runs none of the constructor's checks."""
        self = cls.__new__(cls)
        self._setup(src, tau, None if dtype is None else np.dtype(dtype))
        return self

    def _setup(self, src, tau, dtype):
        self._src = src
        self.tau = tau
        self.center = bool(src.center)
        self.n_samples = src.n
        dtype = src.dtype if dtype is None else dtype
        super().__init__(dtype=dtype, shape=(src.d, src.d))

    @classmethod
    def from_blocks(cls, blocks, tau, center: bool = False):
        """Accumulate from an iterable of CSR row blocks (same result as the stacked matrix).

        ``tau`` and ``center`` are checked before the first block is read: a one-shot
        stream is not used up for an error the arguments show."""
        tau = check_tau(tau)
        center = check_bool("center", center)
        return cls._trusted(_StatsSource(GramStats.from_blocks(blocks), center), tau)

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
        return self._gram_matmat(V)

    def _gram_matmat(self, V):
        """:meth:`gram_matmat` of an array V of the right shape (unchecked: the engine's)."""
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

    def _product_in(self, V, dtype, transpose=False):
        """C V in ``dtype`` (:func:`._precision.in_precision`; C is symmetric: ``transpose``
        changes nothing): in float32, the Gram product of a sparse X accumulates in float32
        unless centring it would cancel too many digits (see ``_DataMatrix``)."""
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
