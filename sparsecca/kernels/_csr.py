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

__all__ = ["csr_gram_matmat", "csr_gram_matmat_parallel"]


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
    n = indptr.shape[0] - 1
    b = V.shape[1]
    t = np.empty(b, dtype=np.float64)
    out[:, :] = 0.0
    for i in range(n):
        lo = indptr[i]
        hi = indptr[i + 1]
        if lo == hi:
            continue
        t[:] = 0.0
        for p in range(lo, hi):
            c = indices[p]
            a = data[p]
            for j in range(b):
                t[j] += a * V[c, j]
        for p in range(lo, hi):
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
        lo_row = ch * n // n_chunks
        hi_row = (ch + 1) * n // n_chunks
        t = np.empty(b, dtype=np.float64)
        buf = bufs[ch]
        for i in range(lo_row, hi_row):
            lo = indptr[i]
            hi = indptr[i + 1]
            if lo == hi:
                continue
            t[:] = 0.0
            for p in range(lo, hi):
                c = indices[p]
                a = data[p]
                for j in range(b):
                    t[j] += a * V[c, j]
            for p in range(lo, hi):
                c = indices[p]
                a = data[p]
                for j in range(b):
                    buf[c, j] += a * t[j]
    out[:, :] = bufs[0]
    for ch in range(1, n_chunks):
        out += bufs[ch]
    return out
