"""Row-chunked Dask arrays as the engine's data (the ``dask`` extra).

:class:`CCAEngine` and :class:`SparseCCA` accept X and Y (and the engine's ``solve`` an M)
as Dask arrays chunked by rows only, their chunks NumPy arrays or scipy.sparse matrices.
The chunks are persisted once (on the workers of a distributed Client, or in memory with
the local schedulers) and never gathered: the statistics (X^T X, X^T M, column sums) come
from the tree reductions of :mod:`._dask`, and every product the solvers need with the data
-- the randomized range finder, LOBPCG's C_xx V, the certify check -- is one map-reduce,
``sum_b X_b^T (X_b V)`` over the row chunks b, where only the d x k block V and the d x k
partial sums travel.  :class:`_DaskSource` is that Gram source, a drop-in for the
accumulated statistics' source (``_StatsSource``): like them it has no dual n x n form.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import scipy.sparse as sp

from ._centring import _DataMatrix, _warn_centring, centred_projection
from ._column_merge import _ColumnMerge, _verified_labels
from ._cross import CrossCovariance
from ._dask import _import_dask, _tree_sum
from ._gram import GramStats, _StatsSource
from ._sparse_products import sparse_gram_matmat, sparse_matmat, sparse_tmatmat
from ._threads import _on_worker
from ._thresholds import active
from ._validation import check_block, check_magnitude_of, check_matrix, check_shape

__all__ = []


def is_dask(A) -> bool:
    """Whether ``A`` is a dask.array.Array (False without dask installed)."""
    try:
        import dask.array as da
    except ImportError:  # pragma: no cover - the test extra installs dask
        return False
    return isinstance(A, da.Array)


def check_dask_rows(A, name, like=None, like_name="X"):
    """Validate a Dask view once: 2-D, one chunk across its columns, row chunks of known
    size, and the row chunks of ``like`` (named ``like_name``) when given.

    Raises
    ------
    TypeError
        If ``A`` is not a Dask array while ``like`` is one (in-memory and Dask views do not
        mix).
    ValueError
        For a bad shape or chunking, naming the argument and the chunks it has.
    """
    if not is_dask(A):
        raise TypeError(f"{name} must be a dask.array.Array chunked like {like_name} (Dask "
                        f"and in-memory views do not mix), got {type(A).__name__}; wrap it "
                        f"with dask.array.from_array({name}, chunks=({like_name}.chunks[0], "
                        f"-1), asarray=False)")
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {A.shape}")
    if any(np.isnan(c) for c in A.chunks[0]):
        raise ValueError(f"{name} has row chunks of unknown size (NaN, as boolean indexing "
                         f"leaves them); call {name} = {name}.compute_chunk_sizes() first")
    if A.numblocks[1] != 1:
        raise ValueError(f"{name} must be chunked by rows only (one chunk across its "
                         f"{A.shape[1]} columns), got column chunks {A.chunks[1]}; rechunk "
                         f"with {name}.rechunk({{1: -1}})")
    if like is not None and tuple(A.chunks[0]) != tuple(like.chunks[0]):
        raise ValueError(f"{name} must have the same row chunks as {like_name}, got "
                         f"{A.chunks[0]} and {like.chunks[0]}; rechunk with "
                         f"{name}.rechunk({{0: {like_name}.chunks[0]}})")
    return A


def check_dask_pair(X, Y, names=("X", "Y")):
    """(X, Y) validated as Dask views with the same row chunks (both must be Dask)."""
    xn, yn = names
    if not is_dask(X):
        check_dask_rows(X, xn, Y, yn)  # raises the mixing error, naming X
    return check_dask_rows(X, xn), check_dask_rows(Y, yn, X, xn)


# -- the map-reduce --------------------------------------------------------------------------

def map_reduce(array, of_block, *args, add=None, indexed=False):
    """``sum_b of_block(chunk_b, *args)`` over the non-empty row chunks of a persisted Dask
    array, a pairwise tree sum of tasks (``add``, default +) computed on the active
    scheduler; ``args`` (small arrays) are sent once, as one node of the graph each.
    ``indexed``: ``of_block(chunk_b, b, *args)``, b the chunk's index."""
    dask, _ = _import_dask()
    shared = [_shared(a, dask) for a in args]
    parts = [dask.delayed(_serial, pure=True)(of_block, b, *((i,) if indexed else ()),
                                              *shared)
             for i, (b, c) in enumerate(zip(array.to_delayed().ravel(), array.chunks[0]))
             if c]
    (total,) = dask.compute(_tree_sum(parts, dask, add))
    return total


def _serial(f, *args):
    """``f(*args)`` with the engine's split products run in turn (as on a split thread): a
    chunk's task runs on a scheduler thread while the engine's split threads may wait for it
    (LOBPCG's ``run_pair``), so a split inside it would wait for them: a deadlock."""
    return _on_worker(partial(f, *args))


#: arrays from this size are scattered rather than sent in the graph (distributed warns of
#: graphs above 10 MB)
_SCATTER_BYTES = 4 << 20


def _shared(a, dask):
    """An array argument of every chunk's task, sent once: one node of the graph, or, from
    ``_SCATTER_BYTES`` when a distributed Client is the active scheduler, scattered to the
    cluster (a large array would travel with the graph; a small one is not worth the extra
    round trip of a scatter)."""
    if not isinstance(a, np.ndarray):
        return a
    client = _active_client(dask) if a.nbytes >= _SCATTER_BYTES else None
    return client.scatter(a) if client is not None else dask.delayed(a, pure=True)


def _active_client(dask):
    if dask.config.get("scheduler", None) not in (None, "dask.distributed", "distributed"):
        return None
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def _gram_block(B, V):
    if sp.issparse(B):  # in V's precision (float32 V: B's float32 copy)
        return sparse_gram_matmat(sp.csr_matrix(B), V, V.dtype)
    B = np.asarray(B, dtype=np.float64)
    return B.T @ (B @ V)


def _tmatmul_block(B, U):
    return sparse_tmatmat(sp.csr_matrix(B), U) if sp.issparse(B) else np.asarray(B).T @ U


def _matmul_block(B, V):
    return sparse_matmat(sp.csr_matrix(B), V) if sp.issparse(B) else np.asarray(B) @ V


def _serial_matmul(B, V):
    return _serial(_matmul_block, B, V)


def _moments_block(B, label, offset=None):
    """(column sums, column sums of squares, rows, stored values, largest |value|, sparse
    chunks, dtype) of one chunk, validated as a data matrix (its errors name the chunk);
    ``offset``: of the dense chunk minus it (the largest |value| is the raw one's)."""
    B = check_matrix(B, label)
    data = B.data if sp.issparse(B) else B
    if offset is not None and not sp.issparse(B):
        amax = float(np.max(np.abs(B))) if B.size else 0.0
        B64 = np.asarray(B, dtype=np.float64) - offset
        return (B64.sum(axis=0), np.einsum("ij,ij->j", B64, B64), B.shape[0], B.size, amax,
                0, B.dtype)
    v = np.asarray(data, dtype=np.float64).ravel()
    amax = float(np.max(np.abs(v))) if v.size else 0.0
    if sp.issparse(B):
        B = sp.csr_matrix(B)
        d = B.shape[1]
        s = np.bincount(B.indices, weights=v, minlength=d)[:d]
        q = np.bincount(B.indices, weights=v * v, minlength=d)[:d]
    else:
        B64 = np.asarray(B, dtype=np.float64)
        s, q = B64.sum(axis=0), np.einsum("ij,ij->j", B64, B64)
    return (s, q, B.shape[0], v.size, amax, int(sp.issparse(B)), B.dtype)


def _add_moments(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], max(a[4], b[4]), a[5] + b[5],
            np.promote_types(a[6], b[6]))


def _block_labels(array, name):
    out, start = [], 0
    for i, c in enumerate(array.chunks[0]):
        out.append(f"{name} row block {i} (rows {start}-{start + c - 1})")
        start += c
    return out


def column_moments(array, name, offset=None):
    """The moments of :func:`_moments_block` over the whole (persisted) array: one pass,
    which also validates every chunk."""
    dask, _ = _import_dask()
    parts = [dask.delayed(_serial, pure=True)(_moments_block, b, label, offset)
             for b, c, label in zip(array.to_delayed().ravel(), array.chunks[0],
                                    _block_labels(array, name)) if c]
    if not parts:
        raise ValueError(f"{name} must have at least 1 row, got shape {array.shape}")
    (total,) = dask.compute(_tree_sum(parts, dask, _add_moments))
    return total


class _DaskSource(_StatsSource):
    """The Gram source of a persisted, row-chunked Dask array: its products are map-reduces
    over the chunks (see the module notes).  A dense view with ``center=True`` is centred
    explicitly, chunk by chunk, as an in-memory dense view is; a sparse one implicitly.

    Attributes
    ----------
    rows : the persisted Dask array as given (not centred)
    n, d, dtype, center, sparse, colsum, mean, colsq, nnz : as ``_DataMatrix``
    """

    def __init__(self, A, center, name="X"):
        self.name = name
        self.rows = A.persist()
        s, q, n, nnz, amax, n_sparse, dtype = column_moments(self.rows, name)
        check_magnitude_of(amax, n, name)
        self.n, self.d = int(n), A.shape[1]
        self.dtype = np.dtype(dtype)
        self.sparse = n_sparse > 0
        self.center = bool(center)
        self.nnz = int(nnz)
        self.rawsum = s
        self.offset = None
        self._centred = None
        self._single = None
        self._amplification = None
        self._stats = None
        if self.center and not self.sparse:  # explicitly, as _centred_copy does
            self.offset = s / self.n
            s, q, *_ = column_moments(self.rows, name, self.offset)
        self.colsum = s
        self.mean = s / self.n if self.center else None
        self.colsq = np.maximum(q - s * self.mean, 0.0) if self.center else q
        if self.center and self.sparse:
            _warn_centring(self.centring_amplification(), name)

    @property
    def _work(self):
        """The rows the products use: a dense view centred explicitly (persisted on first
        use), else the rows as given."""
        if self.offset is None:
            return self.rows
        if self._centred is None:
            self._centred = self.rows.map_blocks(_centre_block, self.offset, dtype=np.float64,
                                                 meta=np.empty((0, 0))).persist()
        return self._centred

    means = _DataMatrix.means  # the column means of the rows as given (offset + mean)
    centring_amplification = _DataMatrix.centring_amplification

    def accumulates_single(self, dtype):
        """Whether products in ``dtype`` accumulate in float32, as ``_DataMatrix``'s: a
        sparse view whose centring cancels few digits (the partial sums then travel in
        float32 too, half the bytes)."""
        return (self.sparse and np.dtype(dtype) == np.float32
                and self.centring_amplification() <= active().single_centred_max_amplification)

    def _single_rows(self):
        """The rows with float32 values (persisted on first use, 4 bytes a value)."""
        if self._single is None:
            self._single = self.rows.map_blocks(_single_block, dtype=np.float32,
                                                meta=self.rows._meta).persist()
        return self._single

    @property
    def stats(self):
        """:class:`GramStats` of the (worked) rows: the tree-reduced sparse X^T X, formed on
        first use (the dense solver and the dense preconditioner)."""
        if self._stats is None:
            self._stats = GramStats.from_dask(self._work, name=self.name)
        return self._stats

    def gram_matmat(self, V, dtype=np.float64):
        single = self.accumulates_single(dtype)
        V = np.ascontiguousarray(V, dtype=np.float32 if single else np.float64)
        vec = V.ndim == 1
        V2 = V.reshape(-1, 1) if vec else V
        rows = self._single_rows() if single else self._work
        out = np.asarray(map_reduce(rows, _gram_block, V2))
        if self.center:  # formed in float64, rounded to the product's precision
            out -= np.outer(self.colsum, self.mean @ V2.astype(np.float64)).astype(out.dtype)
        out = out.reshape(-1) if vec else out
        return out.astype(dtype, copy=False)

    def rmatmat(self, U, dtype=np.float64):
        """Xc^T U for an (n, b) U (its row blocks are sent to their chunks)."""
        dask, _ = _import_dask()
        U = np.asarray(U, dtype=np.float64)
        parts, start = [], 0
        for b, c in zip(self._work.to_delayed().ravel(), self._work.chunks[0]):
            if c:
                parts.append(dask.delayed(_serial)(_tmatmul_block, b, U[start:start + c]))
            start += c
        (out,) = dask.compute(_tree_sum(parts, dask))
        if self.center:
            out = out - np.outer(self.mean, U.sum(axis=0))
        return np.asarray(out, dtype=dtype)

    def matmat(self, V, dtype=np.float64):
        """Xc V, (n, b): gathered (n x b travels; the engine's solvers never ask for it)."""
        V = np.asarray(V, dtype=np.float64)
        out = self._work.map_blocks(_serial_matmul, V, dtype=np.float64,
                                    chunks=(self._work.chunks[0], (V.shape[1],))).compute()
        if self.center:
            out -= self.mean @ V
        return np.asarray(out, dtype=dtype)

    # dense_gram: _StatsSource's, from the tree-reduced :attr:`stats`


def _single_block(B):
    return sp.csr_matrix(B, dtype=np.float32) if sp.issparse(B) else B


def _centre_block(B, mean):
    return np.asarray(B, dtype=np.float64) - mean


def _project_block(B, W, mean):
    return _on_worker(partial(centred_projection, check_matrix(B, "a row block"), W, mean))


def dask_projection(A, W, mean, name="X"):
    """(A - 1 mean^T) W as a Dask array of (chunk rows, k) float64 blocks ((chunk rows,) for
    a (d,) W), row block by row block (lazy: nothing is computed).

    Raises
    ------
    ValueError
        If A is not a 2-D Dask array chunked by rows only, or W and ``mean`` do not have
        A's d rows.
    """
    A = check_dask_rows(A, name)
    W = np.asarray(W, dtype=np.float64)
    check_block(W, "W", A.shape[1], label=f"{name}.shape[1]")
    if mean is not None:
        mean = np.asarray(mean, dtype=np.float64)
        check_shape(mean, "mean", (A.shape[1],), f"(one per column of {name})")
    if W.ndim == 1:
        return A.map_blocks(_project_block, W, mean, dtype=np.float64, drop_axis=1,
                            chunks=(A.chunks[0],), meta=np.empty((0,)))
    return A.map_blocks(_project_block, W, mean, dtype=np.float64,
                        chunks=(A.chunks[0], (W.shape[1],)), meta=np.empty((0, 0)))


def dask_transform(est, X, Y):
    """:meth:`SparseCCA.transform` of Dask views: lazy Dask arrays of the scores, row block
    by row block (Y with X's row chunks)."""
    if Y is None:
        X = check_dask_rows(X, "X")
    else:
        X, Y = check_dask_pair(X, Y)
    for M, W, name in ((X, est.x_weights_, "X"), (Y, est.y_weights_, "Y")):
        if M is not None and M.shape[1] != W.shape[0]:
            raise ValueError(f"{name} must have {W.shape[0]} features as in fit, got "
                             f"{M.shape[1]}")
    xs = dask_projection(X, est.x_weights_, est.x_mean_, "X")
    return xs if Y is None else (xs, dask_projection(Y, est.y_weights_, est.y_mean_, "Y"))


# -- duplicate columns -------------------------------------------------------------------------

def _fingerprint_block(B, i):
    R = np.random.default_rng([0x5eed, i]).standard_normal((B.shape[0], 2))
    return np.asarray(B.T @ R, dtype=np.float64)


def _same_block(B, firsts, members):
    """Whether each pair of columns (firsts[j], members[j]) of one chunk is equal."""
    if not sp.issparse(B):
        B = np.asarray(B)
        return np.all(B[:, firsts] == B[:, members], axis=0)
    Bc = sp.csc_matrix(B)
    D = sp.csc_matrix(Bc[:, firsts] - Bc[:, members])  # a - b == 0 iff a == b (finite)
    D.eliminate_zeros()
    return np.diff(D.indptr) == 0


def _merge_block(B, first, scale):
    if sp.issparse(B):
        return sp.csr_matrix(sp.csc_matrix(B)[:, first] @ sp.diags(scale.astype(B.dtype)))
    return np.ascontiguousarray(np.asarray(B)[:, first] * scale.astype(B.dtype))


def dask_column_merge(src):
    """:class:`._column_merge._ColumnMerge` of a :class:`_DaskSource` (two map-reduces: the
    fingerprints, then the exact check of the candidate groups), its ``merged`` the lazy
    Dask array of the merged columns (None when no column repeats)."""
    A = src.rows
    h = map_reduce(A, _fingerprint_block, indexed=True)

    def same(firsts, members):
        return map_reduce(A, _same_block, firsts, members, add=np.logical_and)

    merge = _ColumnMerge.__new__(_ColumnMerge)
    merge._set_labels(_verified_labels(h, same))
    merge.merged = None if merge.trivial else A.map_blocks(
        _merge_block, merge.first, merge.scale, dtype=A.dtype,
        chunks=(A.chunks[0], (merge.n_merged,)), meta=A._meta)
    return merge


class DaskViews:
    """The engine's Dask data: X and Y validated once (same row chunks, one column chunk,
    every chunk checked as a data matrix), X's duplicate columns merged, the sources of the
    merged X and of Y persisted.

    Attributes
    ----------
    X, Y : the validated Dask arrays as given (X before merging; not persisted)
    xdata, ydata : :class:`_DaskSource` of the merged X and of Y
    merge : :class:`._column_merge._ColumnMerge` or None
    n : int
    colsums : dict 'X'/'Y' -> (d,) float64 column sums of the views as given
    """

    def __init__(self, X, Y, center, merge_duplicates):
        self.X, self.Y = check_dask_pair(X, Y)
        self.center = bool(center)
        xraw = _DaskSource(self.X, center, "X")
        self.ydata = _DaskSource(self.Y, center, "Y")
        self.n = xraw.n
        self.merge = dask_column_merge(xraw) if merge_duplicates else None
        if self.merge is None or self.merge.trivial:
            self.xdata = xraw
        else:
            self.xdata = _DaskSource(self.merge.merged, center, "X")
            self.merge.merged = self.xdata.rows  # (not the graph holding the raw chunks)
        self.colsums = {"X": xraw.rawsum, "Y": self.ydata.rawsum}
        self.ycross = None

    def cross(self, M=None, name="M"):
        """C_xy = Xc^T M (M = Y when None) reduced over the row chunks: the accumulated
        :class:`CrossCovariance` (M validated against X's row chunks)."""
        if M is None:
            if self.ycross is None:
                self.ycross = CrossCovariance.from_dask(self.xdata.rows, self.ydata.rows,
                                                        center=self.center)
            return self.ycross
        M = check_dask_rows(M, name, self.X, "X")
        if M.shape[1] != self.Y.shape[1]:
            raise ValueError(f"{name} must have d2 = {self.Y.shape[1]} columns like Y, got "
                             f"{M.shape[1]}")
        return CrossCovariance.from_dask(self.xdata.rows, M, center=self.center)
