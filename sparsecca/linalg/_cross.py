"""The cross-covariance C_xy = Xc^T M as an operator (kept factored, or its product kept).

Row convention: X is n x d1 (one example per row), M is n x d2, Xc = X - 1 mu^T the
implicitly centred X (Xc = X when ``center=False``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._params import check_bool
from ._centring import (
    _as_block,
    _centred_copy,
    _centring_amplification,
    _column_moments,
    _DataMatrix,
    column_sums,
)
from ._precision import rounded
from ._sparse_products import _values_as, sparse_matmat, sparse_pair_tmatmat, sparse_tmatmat
from ._threads import tall_matmul, tall_tmatmul
from ._thresholds import active
from ._validation import (
    ShapeCheckedOperator,
    check_2d,
    check_block_width,
    check_dense_size,
    check_matrix,
    check_same_rows,
)

__all__ = ["CrossCovariance"]

# The thresholds read here (fields of the active Thresholds):
# * single_centred_max_amplification: see :mod:`._centring`;
# * dense_max_dim: toarray / dense_product refuse more entries than dense_max_dim^2 (the
#   engine's own dense factors stay below it; CCAEngine passes max_dim=None for a dense
#   reference asked for);
# * dense_cross_cache_bytes: a CrossCovariance keeps its dense X^T M up to this size once
#   formed (a tau grid whitens the same C_xy for every tau).


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
        if isinstance(X, _DataMatrix):  # the engine's data: X and M checked by it
            if X.center != bool(center):
                raise ValueError(f"X was built with center={X.center}, got center={center}")
            self._x = X
        else:
            center = check_bool("center", center)
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
        self._dense_single = None  # its copy in single precision (_dense_in)
        self._m_single = None  # a sparse M's values in float32 (_product_in)
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
            widths = (check_block_width(Xb.shape[1], widths and widths[0], xlabel, "pairs[0][0]"),
                      check_block_width(Mb.shape[1], widths and widths[1], mlabel, "pairs[0][1]"))
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
        term in C's precision.  A dense C's rows split over the split threads."""
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

    def accumulates_single(self):
        """Whether float32 products may accumulate in float32 (:meth:`_product_in`).

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

    def _product_in(self, V, dtype, transpose=False):
        """C_xy V (C_xy^T V with ``transpose``) in ``dtype`` (:func:`._precision.in_precision`;
        V a C-contiguous block of ``dtype``).

        float32 accumulates in float32 where the centring allows it
        (:meth:`accumulates_single`): through a float32 copy of the kept dense X^T M when it
        has been formed (:meth:`_dense_in`), else, with sparse factors, from float32 copies
        of their values (half the bytes to move, about twice as fast).  Otherwise (an
        accumulated sparse X^T M, dense factors, a centred product whose mean dominates) the
        float64 product rounded.
        """
        single = dtype == np.float32 and self.accumulates_single()
        if single and self._dense is not None:
            return self._stored_apply(V, transpose, self._dense_in(dtype))
        single = (single and self._stored_product() is None and self._x.sparse
                  and sp.issparse(self._m))
        if not single:
            return rounded(self, V, dtype, transpose)
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
        self._check_dense_size(max_dim)
        return self._toarray()

    def _toarray(self):
        """:meth:`toarray` without a size limit (the engine's dense strategies, which apply
        their own)."""
        u, v = self.rank_one()
        out = self._dense_product()
        if np.any(u):
            out = out - np.outer(u, v)
        return out

    def dense_rows(self, lo, hi):
        """Rows lo:hi of X^T M (uncentred, as :meth:`dense_product`) as a new writable
        (hi - lo, d2) float64 array: from the dense product when it is small enough to keep
        (formed once, a tau grid reuses it), else from the sparse one."""
        if self._keeps_dense():
            return np.array(self._dense_product()[lo:hi])
        return np.ascontiguousarray(self.tosparse(copy=False)[lo:hi].toarray(),
                                    dtype=np.float64)

    def dense_product(self, max_dim: int | str | None = "auto"):
        """X^T M (the uncentred part, as :meth:`tosparse`) as a dense (d1, d2) float64 array.

        Read-only: kept and returned again when at most
        ``Thresholds.dense_cross_cache_bytes`` (copy it
        before writing).  With sparse factors it is formed from their row blocks
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
        self._check_dense_size(max_dim)
        return self._dense_product()

    def _check_dense_size(self, max_dim):
        check_dense_size(self.shape, max_dim, "cross-covariance",
                         "; its products (C_xy @ V) never form it")

    def _dense_product(self):
        """:meth:`dense_product` without a size limit (the operator's own uses, which form
        it only when it is small enough to keep)."""
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

    def _dense_in(self, dtype):
        """:meth:`dense_product` in ``dtype``; a float32 copy of a kept product is kept too
        (read-only: a tau grid's float32 LOBPCG solves reuse it)."""
        out = self._dense_product()
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
        return self._dense_product() if self._keeps_dense() else self.tosparse(copy=False)

    def _keeps_dense(self):
        """Whether :meth:`dense_product` keeps its result (at most
        ``Thresholds.dense_cross_cache_bytes``)."""
        d1, d2 = self.shape
        return 8 * d1 * d2 <= active().dense_cross_cache_bytes


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
