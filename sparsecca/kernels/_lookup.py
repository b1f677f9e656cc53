"""Numba kernel for the feature views: looking feature codes up in a grouped sorted table."""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT_SERIAL
from ._checks import first_unsorted_segment, int_array

__all__ = ["grouped_lookup"]


@numba.njit(**JIT_SERIAL)
def _grouped_lookup(group, code, group_start, sorted_codes, out):  # pragma: no cover - jit
    for i in range(code.size):
        g = group[i]
        lo = group_start[g]
        end = group_start[g + 1]
        hi = end
        c = code[i]
        while lo < hi:  # binary search inside the group's (short) range only
            mid = (lo + hi) >> 1
            if sorted_codes[mid] < c:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo if lo < end and sorted_codes[lo] == c else -1
    return out


def grouped_lookup(group: np.ndarray, code: np.ndarray, group_start: np.ndarray,
                   sorted_codes: np.ndarray) -> np.ndarray:
    """Position of each (group, code) pair in a table sorted by (group, code), -1 when absent.

    The table's entries of group ``g`` are ``sorted_codes[group_start[g]:group_start[g + 1]]``
    (ascending).  A whole-table ``np.searchsorted`` costs ~log2(table) cache misses per query;
    searching only the group's range (a few entries for a suffix) touches far less memory.

    Parameters
    ----------
    group : int array, shape (n,)
        Values in [0, len(group_start) - 1).
    code : int array, shape (n,)
    group_start : int array, shape (n_groups + 1,)
        Non-decreasing, ``group_start[0] == 0``, ``group_start[-1] == len(sorted_codes)``.
    sorted_codes : int array, shape (n_table,)
        Ascending within each group.

    Returns
    -------
    pos : int64 array, shape (n,)

    Raises
    ------
    TypeError
        For float or bool arrays (a float code would be truncated).
    ValueError
        For arrays that break the layout above.

    Examples
    --------
    A table of two groups: group 0 holds the codes 3 and 7, group 1 the codes 1, 4 and 9.

    >>> import numpy as np
    >>> from sparsecca.kernels import grouped_lookup
    >>> group_start = np.array([0, 2, 5])
    >>> sorted_codes = np.array([3, 7, 1, 4, 9])
    >>> pos = grouped_lookup(np.array([0, 0, 1, 1]), np.array([7, 4, 4, 8]), group_start,
    ...                      sorted_codes)
    >>> pos.tolist()
    [1, -1, 3, -1]
    """
    group = int_array("group", group)
    code = int_array("code", code)
    if group.shape != code.shape:
        raise ValueError(f"group and code must be 1-d arrays of the same shape, got "
                         f"{group.shape} and {code.shape}")
    group_start = int_array("group_start", group_start)
    sorted_codes = int_array("sorted_codes", sorted_codes)
    n_table = sorted_codes.size
    if group_start.size < 1 or group_start[0] != 0 or group_start[-1] != n_table:
        ends = (group_start[0], group_start[-1]) if group_start.size else (None, None)
        raise ValueError(f"group_start must be 1-d, start at 0 and end at len(sorted_codes)="
                         f"{n_table}, got {group_start.size} entries from {ends[0]} to {ends[1]}")
    # the kernel does not check bounds: an entry out of order would make it read (or search)
    # outside the table
    bad = np.flatnonzero(group_start[1:] < group_start[:-1])
    if bad.size:
        i = int(bad[0]) + 1
        raise ValueError(f"group_start must be non-decreasing with entries in "
                         f"[0, len(sorted_codes)={n_table}], got group_start[{i - 1}] = "
                         f"{group_start[i - 1]} > group_start[{i}] = {group_start[i]}")
    if group.size and (group.min() < 0 or group.max() >= group_start.size - 1):
        raise ValueError(f"group must lie in [0, {group_start.size - 1}), got values in "
                         f"[{group.min()}, {group.max()}]")
    g = first_unsorted_segment(group_start, sorted_codes, strict=False)
    if g >= 0:
        raise ValueError(f"sorted_codes must be ascending within each group; group {g} "
                         f"(entries {group_start[g]}:{group_start[g + 1]}) is not")
    return _grouped_lookup(group, code, group_start, sorted_codes,
                           np.empty(code.size, dtype=np.int64))
