"""CSR x dense kernels for the covariance operators of :mod:`sparsecca.linalg`.

Pure functions on the raw ``indptr / indices / data`` arrays of a CSR matrix X (n x d) and a
C-contiguous dense block V; they never see scipy objects.  The fused Gram product reads each
row of X once and never materialises the n x b intermediate X V, which is what makes
``X^T X V`` about twice as fast as two scipy products for the block sizes of the solvers
(b = 50..300).  Flags come from :mod:`sparsecca._config`.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .._config import JIT_PARALLEL, JIT_SERIAL

__all__ = ["csr_gram_matmat", "csr_gram_matmat_parallel", "csr_gram_matmat_rows",
           "csr_matmat_rows", "csr_pair_tmatmat_rows", "csr_tmatmat_rows"]


@numba.njit(**JIT_SERIAL)
def csr_gram_matmat(indptr, indices, data, V, out):
    """out[:] = X^T (X V) in one pass over the rows of X.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of X, shape (n, d)
    V : (d, b) C-contiguous float array
    out : (d, b) C-contiguous float64 array, overwritten

    Returns
    -------
    out
    """
    return csr_gram_matmat_rows(indptr, indices, data, V, out, 0, indptr.shape[0] - 1)


@numba.njit(**JIT_SERIAL)
def csr_gram_matmat_rows(indptr, indices, data, V, out, lo, hi):
    """out[:] = X[lo:hi]^T (X[lo:hi] V): :func:`csr_gram_matmat` over a row range (a
    partial sum; two ranges can run at once, ``nogil``).

    Parameters
    ----------
    indptr, indices, data : CSR arrays of X, shape (n, d)
    V : (d, b) C-contiguous float array
    out : (d, b) C-contiguous float64 array, overwritten
    lo, hi : int, the row range 0 <= lo <= hi <= n

    Returns
    -------
    out
    """
    b = V.shape[1]
    t = np.empty(b, dtype=np.float64)
    out[:, :] = 0.0
    for i in range(lo, hi):
        rlo = indptr[i]
        rhi = indptr[i + 1]
        if rlo == rhi:
            continue
        t[:] = 0.0
        for p in range(rlo, rhi):
            c = indices[p]
            a = data[p]
            for j in range(b):
                t[j] += a * V[c, j]
        for p in range(rlo, rhi):
            c = indices[p]
            a = data[p]
            for j in range(b):
                out[c, j] += a * t[j]
    return out


@numba.njit(**JIT_PARALLEL)
def csr_gram_matmat_parallel(indptr, indices, data, V, out, n_chunks):
    """Parallel :func:`csr_gram_matmat`: row chunks scatter into private (d, b) buffers.

    The extra memory is ``n_chunks * d * b`` float64; the chunk sums are added in a fixed
    order, so the result does not depend on thread scheduling.
    """
    n = indptr.shape[0] - 1
    d = V.shape[0]
    b = V.shape[1]
    bufs = np.zeros((n_chunks, d, b), dtype=np.float64)
    for ch in prange(n_chunks):
        csr_gram_matmat_rows(indptr, indices, data, V, bufs[ch], ch * n // n_chunks,
                             (ch + 1) * n // n_chunks)
    out[:, :] = bufs[0]
    for ch in range(1, n_chunks):
        out += bufs[ch]
    return out


@numba.njit(**JIT_SERIAL)
def csr_matmat_rows(indptr, indices, data, V, out, lo, hi):
    """out[lo:hi] = X[lo:hi] V; the other rows of ``out`` are not touched.

    Each output row is one thread's work, so two row ranges can run at once (``nogil``) and
    the result does not depend on how the rows were split.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of X, shape (n, d)
    V : (d, b) C-contiguous float array
    out : (n, b) C-contiguous float64 array
    lo, hi : int, the row range 0 <= lo <= hi <= n

    Returns
    -------
    out
    """
    b = V.shape[1]
    for i in range(lo, hi):
        for j in range(b):
            out[i, j] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            c = indices[p]
            a = data[p]
            for j in range(b):
                out[i, j] += a * V[c, j]
    return out


@numba.njit(**JIT_SERIAL)
def csr_tmatmat_rows(indptr, indices, data, U, out, lo, hi):
    """out[:] = X[lo:hi]^T U[lo:hi] (a partial sum of X^T U over a row range).

    Parameters
    ----------
    indptr, indices, data : CSR arrays of X, shape (n, d)
    U : (n, b) C-contiguous float array
    out : (d, b) C-contiguous float64 array, overwritten
    lo, hi : int, the row range 0 <= lo <= hi <= n

    Returns
    -------
    out
    """
    b = U.shape[1]
    out[:, :] = 0.0
    for i in range(lo, hi):
        for p in range(indptr[i], indptr[i + 1]):
            c = indices[p]
            a = data[p]
            for j in range(b):
                out[c, j] += a * U[i, j]
    return out


@numba.njit(**JIT_SERIAL)
def csr_pair_tmatmat_rows(x_indptr, x_indices, x_data, m_indptr, m_indices, m_data, out, lo,
                          hi):
    """out[:] = X[lo:hi]^T M[lo:hi] as a dense array, for two CSR matrices with the same rows.

    Each row adds the outer product of its two sparse rows: nnz(X_i) nnz(M_i) multiply-adds,
    the work of a sparse-sparse product, without its sparse intermediate (X^T M of count
    views is mostly dense: zipf 20K x 5K x 300, 83%).

    Parameters
    ----------
    x_indptr, x_indices, x_data : CSR arrays of X, shape (n, d1)
    m_indptr, m_indices, m_data : CSR arrays of M, shape (n, d2)
    out : (d1, d2) C-contiguous float64 array, overwritten
    lo, hi : int, the row range 0 <= lo <= hi <= n

    Returns
    -------
    out
    """
    out[:, :] = 0.0
    for i in range(lo, hi):
        mlo = m_indptr[i]
        mhi = m_indptr[i + 1]
        if mlo == mhi:
            continue
        for p in range(x_indptr[i], x_indptr[i + 1]):
            c = x_indices[p]
            a = x_data[p]
            for q in range(mlo, mhi):
                out[c, m_indices[q]] += a * m_data[q]
    return out
