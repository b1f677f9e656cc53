"""Structural check of a user's scipy.sparse matrix, before any compiled code reads it.

scipy builds a CSR/CSC/COO matrix from raw ``(data, indices, indptr)`` arrays without checking
them, and its C++ routines (and our numba kernels) then read and write out of bounds: a negative
column index aborted the process with "double free or corruption".  :func:`check_sparse_structure`
refuses such a matrix with a ValueError that names the argument.  It reads the index arrays
only (scipy's own ``check_format(full_check=True)`` prunes and recasts them in place) and costs
one pass over them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_sparse_structure", "expand_ranges"]


def _check_index_array(idx, what, bound, name, label):
    if idx.ndim != 1:
        raise ValueError(f"{name} is not a valid {label} matrix: its {what} array must be 1-D, "
                         f"got {idx.ndim}-D")
    if idx.dtype.kind not in "iu":
        raise ValueError(f"{name} is not a valid {label} matrix: its {what} array must have an "
                         f"integer dtype, got {idx.dtype}")
    if idx.size:
        lo, hi = idx.min(), idx.max()
        if lo < 0 or hi >= bound:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{name} is not a valid {label} matrix: {what} must be in "
                             f"[0, {bound}), got {int(bad)}")


def _check_compressed(M, name, label, n_major, n_minor, major, minor):
    indptr, indices, data = M.indptr, M.indices, M.data
    if indptr.ndim != 1 or indptr.dtype.kind not in "iu":
        raise ValueError(f"{name} is not a valid {label} matrix: indptr must be a 1-D integer "
                         f"array, got {indptr.ndim}-D {indptr.dtype}")
    if indptr.size != n_major + 1:
        raise ValueError(f"{name} is not a valid {label} matrix: indptr must have {n_major + 1} "
                         f"entries ({n_major} {major}s + 1), got {indptr.size}")
    if indptr[0] != 0:
        raise ValueError(f"{name} is not a valid {label} matrix: indptr must start at 0, got "
                         f"{int(indptr[0])}")
    steps = np.diff(indptr)
    if steps.size and steps.min() < 0:
        at = int(np.argmax(steps < 0))
        raise ValueError(f"{name} is not a valid {label} matrix: indptr must be non-decreasing, "
                         f"got indptr[{at}] = {int(indptr[at])} > indptr[{at + 1}] = "
                         f"{int(indptr[at + 1])}")
    nnz = int(indptr[-1])
    if nnz > indices.shape[0] or nnz > data.shape[0]:
        raise ValueError(f"{name} is not a valid {label} matrix: indptr ends at {nnz}, past its "
                         f"{indices.shape[0]} indices and {data.shape[0]} values")
    _check_index_array(indices[:nnz], f"{minor} indices", n_minor, name, label)


def check_sparse_structure(M, name: str):
    """Raise ValueError if a scipy.sparse matrix's index arrays are inconsistent.

    Checks what scipy's conversions and products (and the kernels) assume without checking:
    for CSR/CSC, ``indptr`` has one entry per row (column) plus one, starts at 0, never
    decreases and ends within ``indices`` and ``data``, and every index is in range; for BSR
    the same per block; for COO, every coordinate is in range and there is one per value.
    DIA, LIL and DOK are converted by Python code that checks as it goes.  Duplicates and
    unsorted indices are valid (summed and sorted by the callers).  Nothing is modified.

    Parameters
    ----------
    M : scipy.sparse matrix or array, 2-D
    name : str
        The argument's name, for the error message.
    """
    fmt = M.format
    rows, cols = M.shape
    if fmt == "csr":
        _check_compressed(M, name, "CSR", rows, cols, "row", "column")
    elif fmt == "csc":
        _check_compressed(M, name, "CSC", cols, rows, "column", "row")
    elif fmt == "bsr":
        r, c = M.blocksize
        _check_compressed(M, name, "BSR", rows // r, cols // c, "block row", "block column")
    elif fmt == "coo":
        coords = M.coords if hasattr(M, "coords") else (M.row, M.col)
        for idx, what, bound in zip(coords, ("row indices", "column indices"), M.shape):
            if idx.shape[0] != M.data.shape[0]:
                raise ValueError(f"{name} is not a valid COO matrix: {idx.shape[0]} {what} "
                                 f"for {M.data.shape[0]} values")
            _check_index_array(idx, what, bound, name, "COO")


def expand_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` over pairs (s, c), without a Python loop."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    # position within the output minus the start of its block, plus the block's source start
    shift = np.repeat(np.asarray(starts, dtype=np.int64) - (ends - counts), counts)
    return np.arange(total, dtype=np.int64) + shift
