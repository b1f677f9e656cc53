"""The engine's sparse products: CSR row blocks shared by the split threads.

scipy does the arithmetic; what is ours is the row split (row blocks of equal nonzeros
sharing the matrix's arrays, see :mod:`._threads` for how many and on which threads), the
accumulation of float32 storage in float64 (or in float32 from float32 copies of the
values) and the densified pair product X^T M.
"""

from __future__ import annotations

import operator
from functools import partial

import numpy as np
import scipy.sparse as sp

from ._threads import MAX_ROW_BLOCKS, n_row_blocks, run_blocks, small_blas, sum_in_order
from ._thresholds import active

__all__ = ["sparse_gram_matmat", "sparse_matmat", "sparse_pair_tmatmat", "sparse_tmatmat"]

# The thresholds read here (fields of the active Thresholds):
# * split_min_flops: products smaller than this many multiply-adds are one block;
# * pair_split_max_bytes: sparse_pair_tmatmat splits its rows over threads only up to this
#   much dense output (each row block is densified before the sum);
# * pair_output_split_min_flops: beyond that size it splits the rows of its output instead
#   (no second dense copy), once the product takes this many multiply-adds: below it, the
#   transposed copy of X and the work count the split needs cost about what the threads save.


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

    Up to ``Thresholds.pair_split_max_bytes`` of output, each of two row blocks' sparse
    products is densified and the two are summed, on the split threads (faster than one
    sparse product and its ``toarray``).  Larger ones are one product (a second dense copy of
    a large output would cost more memory and time than the thread saves), or, from
    ``Thresholds.pair_output_split_min_flops`` multiply-adds, blocks of output rows on the
    split threads (no second copy).
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
