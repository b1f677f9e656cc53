"""Numba kernel for the feature views: looking feature codes up in a grouped sorted table."""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT_SERIAL

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
    searching only the group's range (a few entries for a suffix) is several times faster.

    Parameters
    ----------
    group : int64 array, shape (n,)
        Values in [0, len(group_start) - 1).
    code : int64 array, shape (n,)
    group_start : int64 array, shape (n_groups + 1,)
        Non-decreasing, ``group_start[0] == 0``, ``group_start[-1] == len(sorted_codes)``.
    sorted_codes : int64 array, shape (n_table,)

    Returns
    -------
    pos : int64 array, shape (n,)
    """
    group = np.ascontiguousarray(group, dtype=np.int64)
    code = np.ascontiguousarray(code, dtype=np.int64)
    if group.shape != code.shape or group.ndim != 1:
        raise ValueError(f"group and code must be 1-d arrays of the same shape, got "
                         f"{group.shape} and {code.shape}")
    group_start = np.ascontiguousarray(group_start, dtype=np.int64)
    sorted_codes = np.ascontiguousarray(sorted_codes, dtype=np.int64)
    if group_start.ndim != 1 or group_start.size < 1 or group_start[0] != 0 \
            or group_start[-1] != sorted_codes.size:
        raise ValueError("group_start must be 1-d, start at 0 and end at len(sorted_codes)")
    if group.size and (group.min() < 0 or group.max() >= group_start.size - 1):
        raise ValueError(f"group must lie in [0, {group_start.size - 1}), got values in "
                         f"[{group.min()}, {group.max()}]")
    return _grouped_lookup(group, code, group_start, sorted_codes,
                           np.empty(code.size, dtype=np.int64))
