"""Argument checks shared by the kernel wrappers: each runs once per call, in O(input size).

A numba kernel trusts its arrays (no bounds checks, fixed dtypes), so anything that a cast
would silently alter (a float id truncated, an int64 wrapped into int32) or that would make
a kernel read out of bounds must be refused here, naming the argument.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._params import as_int_array

__all__ = ["check_best_sequences", "check_offsets", "first_unsorted_segment", "int_array",
           "real_array"]


def _with_ndim(name: str, x, ndim: int | None) -> np.ndarray:
    a = np.asarray(x)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-d, got shape {a.shape}")
    return a


def int_array(name: str, x, dtype=np.int64, *, ndim: int | None = 1) -> np.ndarray:
    """``x`` as a contiguous ``dtype`` array, refusing what the cast would silently alter.

    Parameters
    ----------
    name : str
        Argument name, for the messages.
    x : array_like
        Integer values (any signed or unsigned integer dtype).
    dtype : integer dtype
        The dtype the kernel is compiled for.
    ndim : int or None
        Required number of dimensions (None: any).

    Returns
    -------
    ndarray of ``dtype``

    Raises
    ------
    TypeError
        For float, bool or any other non-integer dtype (a float id would be truncated, as
        ``NBestList`` and ``TaggedCorpus`` refuse too).
    ValueError
        For the wrong number of dimensions, or values outside the range of ``dtype`` (they
        would wrap).
    """
    return as_int_array(name, _with_ndim(name, x, ndim), dtype)


def real_array(name: str, x, *, ndim: int | None = 1) -> np.ndarray:
    """``x`` as a contiguous float64 array; TypeError unless its dtype is int or float.

    Bool, complex (the imaginary part would be dropped), string and object arrays are
    refused by name instead of failing (or warning) inside NumPy's cast.  Finiteness is left
    to the caller, whose rule differs (-inf is a valid log-probability).
    """
    a = _with_ndim(name, x, ndim)
    if a.size and a.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real (int or float) array, got {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float64)


def check_offsets(name: str, off: np.ndarray, end: int, end_name: str) -> np.ndarray:
    """Refuse offsets ``off`` (an int array) unless they start at 0, never decrease and end
    at ``end``: a kernel walks ``off[i]:off[i + 1]`` without bounds checks.

    ``end_name`` says what ``end`` counts (e.g. ``'n_candidates'``).
    """
    if off.size >= 1 and off[0] == 0 and off[-1] == end and not np.any(off[1:] < off[:-1]):
        return off
    got = (f"got {off.size} entries" if not off.size else
           f"got {off.size} entries, first {off[0]}, last {off[-1]}")
    down = np.flatnonzero(off[1:] < off[:-1])
    if down.size:
        i = int(down[0])
        got += f", {off[i]} then {off[i + 1]} at positions {i}, {i + 1}"
    raise ValueError(f"{name} must start at 0, be non-decreasing and end at {end_name}={end}; "
                     f"{got}")


def first_unsorted_segment(indptr: np.ndarray, values: np.ndarray, strict: bool) -> int:
    """First segment ``s`` whose ``values[indptr[s]:indptr[s + 1]]`` is not ascending, or -1.

    ``strict`` also refuses repeated values.  ``indptr`` must already be valid offsets of
    ``values`` (non-decreasing from 0 to ``values.size``).
    """
    if values.size < 2:
        return -1
    # compare rather than subtract: a difference of two int64 values can overflow
    bad = values[1:] <= values[:-1] if strict else values[1:] < values[:-1]
    # a segment boundary between positions p - 1 and p is not a step inside a segment
    starts = indptr[(indptr > 0) & (indptr < values.size)]
    bad[starts - 1] = False
    pos = np.flatnonzero(bad)
    if not pos.size:
        return -1
    # the segment holding position pos[0] + 1
    return int(np.searchsorted(indptr, pos[0] + 1, side="right")) - 1


def check_best_sequences(X, sent_offsets, cand_offsets, cand_tags, emit_indptr, emit_tags,
                          emit_w, bigram_w, tri_dense, bos, eos):
    """The shapes and ranges :func:`best_sequences` relies on (ValueError naming the
    argument otherwise)."""
    if not sp.isspmatrix_csr(X) and not (sp.issparse(X) and X.format == "csr"):
        raise TypeError(f"X must be a CSR matrix, got {type(X).__name__}")
    S = np.shape(bigram_w)[0] if np.ndim(bigram_w) == 2 else -1
    if S < 3 or np.shape(bigram_w) != (S, S):
        raise ValueError(f"bigram_w must be square with at least 3 states, got shape "
                         f"{np.shape(bigram_w)}")
    if np.shape(tri_dense) != (S ** 3,):
        raise ValueError(f"tri_dense must have n_states ** 3 = {S ** 3} entries, got shape "
                         f"{np.shape(tri_dense)}")
    if (bos, eos) != (S - 2, S - 1):
        raise ValueError(f"bos and eos must be n_states - 2 = {S - 2} and n_states - 1 = "
                         f"{S - 1}, got {bos} and {eos}")
    n_tokens, n_features = X.shape
    for name, off, end in (("sent_offsets", sent_offsets, n_tokens),
                           ("cand_offsets", cand_offsets, len(cand_tags)),
                           ("emit_indptr", emit_indptr, len(emit_tags))):
        off = np.asarray(off)
        if off.ndim != 1 or off.size < 1 or off[0] != 0 or off[-1] != end or np.any(
                np.diff(off) < (1 if name == "sent_offsets" else 0)):
            raise ValueError(f"{name} must rise from 0 to {end}"
                             + (" by at least 1 (no empty sentence)"
                                if name == "sent_offsets" else ""))
    if len(cand_offsets) != n_tokens + 1 or len(emit_indptr) != n_features + 1:
        raise ValueError(f"cand_offsets must have n_tokens + 1 = {n_tokens + 1} and "
                         f"emit_indptr n_features + 1 = {n_features + 1} entries, got "
                         f"{len(cand_offsets)} and {len(emit_indptr)}")
    if len(emit_w) != len(emit_tags):
        raise ValueError(f"emit_w must have len(emit_tags) = {len(emit_tags)} entries, got "
                         f"{len(emit_w)}")
    for name, tags in (("cand_tags", cand_tags), ("emit_tags", emit_tags)):
        tags = np.asarray(tags)
        if tags.size and (tags.min() < 0 or tags.max() >= S - 2):
            raise ValueError(f"{name} must lie in [0, {S - 2}), got values in "
                             f"[{tags.min()}, {tags.max()}]")
