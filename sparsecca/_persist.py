"""Model files: one ``.npz`` of arrays plus embedded JSON metadata, never pickle.

Loading uses ``np.load(allow_pickle=False)``, so a file can never run code; every array is read
eagerly inside one guard, so a corrupted or truncated file fails here with
:class:`ModelFormatError` (a ValueError naming the file), not later inside a kernel.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np

from . import __version__

__all__ = ["FORMAT_VERSION", "ModelFormatError", "save_model_file", "load_model_file"]

FORMAT_VERSION = 1
_META = "__sparsecca_meta__"


class ModelFormatError(ValueError):
    """A model file is unreadable, of another class, or from a newer format version."""


def save_model_file(path, cls_name: str, params: dict, arrays: dict, *, extra: dict | None = None,
                    overwrite: bool = False) -> Path:
    """Write ``arrays`` and JSON metadata to ``path`` (``.npz`` is appended when missing).

    Parameters
    ----------
    path : str or path-like
    cls_name : str
        The class stored; :func:`load_model_file` refuses a file of another class.
    params : dict
        JSON-serialisable constructor parameters.
    arrays : dict of str -> ndarray
        Numeric or fixed-width string arrays (no object arrays: they would need pickle).
    extra : dict, optional
        More JSON-serialisable metadata (e.g. fitted scalars).
    overwrite : bool
        An existing file is refused (FileExistsError) unless True.
    """
    p = Path(path)
    if p.suffix != ".npz":
        p = p.with_name(p.name + ".npz")
    if p.exists() and not overwrite:
        raise FileExistsError(f"{p} exists; pass overwrite=True (or --force) to replace it")
    meta = {"format": "sparsecca", "format_version": FORMAT_VERSION, "class": cls_name,
            "library_version": __version__, "params": params, "extra": extra or {}}
    payload = {}
    for k, v in arrays.items():
        a = np.asarray(v)
        if a.dtype == object:
            raise TypeError(f"array {k!r} has dtype object; store strings as a str array")
        payload[k] = a
    if _META in payload:
        raise ValueError(f"array name {_META!r} is reserved")
    payload[_META] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    tmp = p.with_name(p.name + ".tmp.npz")
    np.savez_compressed(tmp, **payload)
    os.replace(tmp, p)
    return p


def load_model_file(path, cls_name: str) -> tuple[dict, dict]:
    """Read a file written by :func:`save_model_file` for class ``cls_name``.

    Returns
    -------
    meta : dict
        ``params``, ``extra``, ``format_version``, ``library_version``, ``class``.
    arrays : dict of str -> ndarray

    Raises
    ------
    FileNotFoundError
        No such file.
    ModelFormatError
        Not a sparsecca model file (including pickles and truncated or corrupted archives),
        a file of another class, or a newer format version.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such model file")
    try:
        with np.load(p, allow_pickle=False) as z:
            names = list(z.files)
            if _META not in names:
                raise ModelFormatError(f"{p}: not a sparsecca model file (no metadata)")
            arrays = {k: z[k] for k in names}
        meta = json.loads(arrays.pop(_META).tobytes().decode("utf-8"))
    except ModelFormatError:
        raise
    except ValueError as exc:  # np.load refuses pickled content with a ValueError
        raise ModelFormatError(f"{p}: not a sparsecca model file ({exc})") from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, UnicodeDecodeError,
            NotImplementedError, RuntimeError) as exc:
        # damaged archives surface as any of these (bad CRC, unknown compression method ...)
        raise ModelFormatError(
            f"{p}: corrupted or truncated model file ({type(exc).__name__}: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != "sparsecca":
        raise ModelFormatError(f"{p}: not a sparsecca model file (bad metadata)")
    version = meta.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ModelFormatError(
            f"{p}: format version {version!r} is newer than this library reads "
            f"({FORMAT_VERSION}); upgrade sparsecca (file written by "
            f"{meta.get('library_version')!r})"
        )
    if meta.get("class") != cls_name:
        raise ModelFormatError(f"{p}: holds a {meta.get('class')!r}, not a {cls_name!r}")
    return meta, arrays
