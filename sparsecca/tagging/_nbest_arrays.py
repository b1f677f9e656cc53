"""The array checks and gathers behind :class:`~sparsecca.tagging.NBestList`: segment ids,
offset and value arrays, the sentence index, and the union of the corpora of several
lists."""

from __future__ import annotations

import numpy as np

_TOKEN_SUBSETS = ("all", "known", "unknown")


def _segment_ids(offsets: np.ndarray) -> np.ndarray:
    """``seg[j] = i`` for ``offsets[i] <= j < offsets[i + 1]``."""
    return np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))


def _gather_segments(offsets: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of segments ``idx`` (in that order) and the new offsets."""
    lengths = np.diff(offsets)[idx]
    new = np.zeros(idx.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=new[1:])
    pos = (np.repeat(offsets[idx] - new[:-1], lengths)
           + np.arange(new[-1], dtype=np.int64))
    return pos, new


def _sentence_index(n: int, index) -> np.ndarray:
    if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
        if not -n <= index < n:
            raise IndexError(f"sentence {index} out of range for an n-best list of {n} sentences")
        return np.array([index % n], dtype=np.int64)
    if isinstance(index, slice):
        return np.arange(n, dtype=np.int64)[index]
    idx = np.asarray(index)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise IndexError(f"boolean index has shape {idx.shape}, expected ({n},)")
        return np.flatnonzero(idx)
    if idx.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(idx.dtype, np.integer):
        raise IndexError(f"sentence index must be int, slice, bool or int array, got {idx.dtype}")
    idx = idx.astype(np.int64).ravel()
    if idx.min() < -n or idx.max() >= n:
        raise IndexError(f"sentence index out of range for an n-best list of {n} sentences")
    return np.where(idx < 0, idx + n, idx)


def _check_no_nan(name: str, v: np.ndarray, *, allow_pos_inf: bool) -> None:
    """Refuse NaN (and +inf unless allowed) in per-candidate values, naming the first one.

    -inf stays legal: it is log 0, the score of a sequence a decoder deems impossible (the
    TrigramHMM never produces one, its transitions keep a unigram floor, but a loaded model
    may hold -inf log-probabilities); NaN orders nothing and +inf is no log-probability.
    """
    bad = np.isnan(v) if allow_pos_inf else np.isnan(v) | (v == np.inf)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        allowed = "not NaN" if allow_pos_inf else "finite or -inf (log 0)"
        raise ValueError(f"{name} must be {allowed}, got {v[r]} at candidate {r}")


def _real_array(name: str, a) -> np.ndarray:
    """``a`` as a contiguous float64 array; a TypeError unless it holds real numbers.

    A cast would turn ``True`` into 1.0 and ``'-1.5'`` into -1.5, and fail on complex
    numbers without naming ``name``.
    """
    a = np.asarray(a)
    # an empty list is float64 to NumPy
    if a.size and a.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an array of real numbers (int or float), got dtype "
                        f"{a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float64)


def _bool_array(name: str, a) -> np.ndarray:
    """``a`` as a contiguous bool array: bools, or integers that are all 0 or 1.

    A cast would make any non-empty string (``'no'``) and any non-zero number True.
    """
    a = np.asarray(a)
    if a.size and a.dtype.kind not in "biu":
        raise TypeError(f"{name} must be an array of bools (or of 0 / 1 integers), got dtype "
                        f"{a.dtype}")
    if a.dtype.kind in "iu" and np.any((a != 0) & (a != 1)):
        bad = a[(a != 0) & (a != 1)]
        raise ValueError(f"{name} must hold only 0 and 1 when given as integers, got {bad[0]}")
    return np.ascontiguousarray(a, dtype=bool)


def _check_offset_array(name: str, off: np.ndarray, what, size, item: str) -> None:
    """An offset array: 1-d, ``size`` entries (when given), from 0, non-decreasing; the
    message names ``name``, the rule broken and the value found."""
    if off.ndim != 1 or off.size < 1:
        raise ValueError(f"{name} must be a 1-d array with at least one entry, got shape "
                         f"{off.shape}")
    if size is not None and off.size != size:
        raise ValueError(f"{name} must have {what} = {size} entries, got {off.size}")
    if off[0] != 0:
        raise ValueError(f"{name} must start at 0, got {int(off[0])}")
    step = np.diff(off)
    if np.any(step < 0):
        j = int(np.argmax(step < 0))
        raise ValueError(f"{name} must be non-decreasing (each {item} spans {name}[j] to "
                         f"{name}[j + 1]), got {int(off[j])} then {int(off[j + 1])} at "
                         f"positions {j} and {j + 1}")
