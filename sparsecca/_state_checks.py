"""The validation of a loaded model's arrays (:mod:`sparsecca._persist`): dtype, shape,
index range and offsets, checked before the object can reach a numba kernel, so that a
hand-edited file gives a :class:`ModelFormatError` naming the array, never a crash; and the
string arrays of a model file."""

from __future__ import annotations

import numpy as np

from .exceptions import ModelFormatError

_KINDS = {"int": ("iu", np.int64), "float": ("f", np.float64), "bool": ("b", np.bool_)}


def state_array(arrays: dict, name: str, kind: str, *, ndim: int = 1, shape=None,
                allow_nan: bool = False, allow_inf: bool | str = False,
                dtype=None) -> np.ndarray:
    """Array ``name`` of a loaded state, checked and converted to a canonical dtype.

    Parameters
    ----------
    arrays : dict of str -> ndarray
    name : str
    kind : {'int', 'float', 'bool'}
        Required dtype kind; ints become int64, floats float64 (unless ``dtype``).
    ndim : int
    shape : tuple, optional
        Exact shape required.
    allow_nan : bool
        Floats only: whether NaN may occur.
    allow_inf : bool or '-'
        Floats only: whether infinities may occur ('-' allows only -inf, e.g. log(0)).
    dtype : numpy dtype, optional
        Output dtype (same kind).

    Raises
    ------
    ModelFormatError
        Missing array, wrong dtype kind, wrong shape, or forbidden NaN / infinity.
    """
    if name not in arrays:
        raise ModelFormatError(f"array {name!r} is missing")
    a = arrays[name]
    kinds, default = _KINDS[kind]
    if not isinstance(a, np.ndarray) or a.dtype.kind not in kinds:
        got = a.dtype if isinstance(a, np.ndarray) else type(a).__name__
        raise ModelFormatError(f"array {name!r} must have a {kind} dtype, got {got}")
    if a.ndim != ndim:
        raise ModelFormatError(f"array {name!r} must be {ndim}-d, got shape {a.shape}")
    if shape is not None and a.shape != tuple(shape):
        raise ModelFormatError(f"array {name!r} must have shape {tuple(shape)}, got {a.shape}")
    out_dtype = np.dtype(dtype or default)
    if kind == "int" and a.size:
        info = np.iinfo(out_dtype)
        if int(a.min()) < info.min or int(a.max()) > info.max:
            raise ModelFormatError(f"array {name!r} has values outside the {out_dtype} range")
    a = np.ascontiguousarray(a, dtype=out_dtype)
    if kind == "float" and a.size:
        if not allow_nan and np.isnan(a).any():
            raise ModelFormatError(f"array {name!r} contains NaN")
        if allow_inf is not True:
            bad = np.isposinf(a) if allow_inf == "-" else np.isinf(a)
            if bad.any():
                raise ModelFormatError(f"array {name!r} contains infinite values")
    return a


def check_index(name: str, a: np.ndarray, high: int, low: int = 0, *,
                increasing: bool = False) -> np.ndarray:
    """Check that every value of the integer array ``a`` lies in ``[low, high)`` (and, with
    ``increasing``, that the values are strictly increasing: sorted column codes)."""
    if a.size and (int(a.min()) < low or int(a.max()) >= high):
        raise ModelFormatError(f"array {name!r} must lie in [{low}, {high}), got values in "
                               f"[{int(a.min())}, {int(a.max())}]")
    if increasing and a.size > 1 and np.any(np.diff(a) <= 0):
        raise ModelFormatError(f"array {name!r} must be strictly increasing")
    return a


def check_offsets(name: str, off: np.ndarray, end: int, n_rows: int | None = None) -> np.ndarray:
    """Check a CSR-style offset array: 1-d, from 0, non-decreasing, ending at ``end``."""
    if n_rows is not None and off.shape != (n_rows + 1,):
        raise ModelFormatError(f"array {name!r} must have {n_rows + 1} entries, got {off.size}")
    if off.size < 1 or off[0] != 0 or off[-1] != end or np.any(np.diff(off) < 0):
        raise ModelFormatError(
            f"array {name!r} must be non-decreasing from 0 to {end}, got {off.size} entries "
            f"from {off[0] if off.size else None} to {off[-1] if off.size else None}")
    return off


def check_csr_rows(name: str, indptr: np.ndarray, indices: np.ndarray, *, strict: bool = True,
                   nonempty: bool = False) -> None:
    """Check that ``indices`` increase (strictly) within every row of a CSR pattern."""
    if nonempty and np.any(np.diff(indptr) < 1):
        raise ModelFormatError(f"array {name!r}: every row must have at least one entry")
    if indices.size < 2:
        return
    step = np.diff(indices)
    inner = np.ones(step.size, dtype=bool)
    starts = indptr[1:-1]
    starts = starts[(starts > 0) & (starts < indices.size)]
    inner[starts - 1] = False  # a row boundary lies between positions s - 1 and s
    bad = (step <= 0) if strict else (step < 0)
    if np.any(bad & inner):
        raise ModelFormatError(f"array {name!r} must be sorted within each row")


def pack_strings(name: str, items) -> dict:
    """Strings as two arrays: concatenated UTF-8 bytes and int64 byte offsets.

    Exact for any string (numpy's fixed-width str arrays drop trailing NULs and cost four
    bytes per character of the longest string), and cheap to validate.
    """
    enc = [s.encode("utf-8") for s in items]
    off = np.zeros(len(enc) + 1, dtype=np.int64)
    if enc:
        np.cumsum([len(b) for b in enc], out=off[1:])
    return {f"{name}.utf8": np.frombuffer(b"".join(enc), dtype=np.uint8),
            f"{name}.offsets": off}


def unpack_strings(arrays: dict, name: str) -> list[str]:
    """Inverse of :func:`pack_strings`, validating the offsets and the UTF-8."""
    data = state_array(arrays, f"{name}.utf8", "int", dtype=np.uint8)
    off = state_array(arrays, f"{name}.offsets", "int")
    check_offsets(f"{name}.offsets", off, data.size)
    raw = data.tobytes()
    try:
        return [raw[a:b].decode("utf-8") for a, b in zip(off[:-1].tolist(), off[1:].tolist())]
    except UnicodeDecodeError as exc:
        raise ModelFormatError(f"array {name + '.utf8'!r} is not valid UTF-8 ({exc})") from None
