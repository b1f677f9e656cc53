"""Model files: one ``.npz`` of arrays plus embedded JSON metadata, never pickle.

Loading uses ``np.load(allow_pickle=False)``, so a file can never run code; every array is read
eagerly inside one guard, so a corrupted or truncated file fails here with
:class:`ModelFormatError` (a ValueError naming the file), not later inside a kernel.

File layout
-----------
A zip archive (``numpy.savez_compressed``) holding one ``.npy`` member per array plus the
member ``__sparsecca_meta__``: UTF-8 JSON (stored as a uint8 array) with

``format``          always ``"sparsecca"``
``format_version``  :data:`FORMAT_VERSION`; a file from a newer version is refused
``class``           the class stored; loading it as another class is refused
``library_version`` the sparsecca version that wrote it (informational)
``params``          constructor parameters (JSON, tuples and dtypes tagged, see :func:`to_json`)
``extra``           fitted scalars and nested-object descriptions
``info``            free-form provenance written by the caller (e.g. the CLI records the tag
                    column and the training file); never interpreted when loading

Estimators opt in through :class:`PersistMixin`: they provide ``_get_state`` and
``_set_state`` (or declare their fitted attributes) and get ``save`` / ``load`` /
``get_state`` / ``from_state``.  ``_set_state`` validates every array (dtype, shape, index
ranges, offsets) before the object can reach a numba kernel, so a hand-edited file gives a
:class:`ModelFormatError` naming the array, never a crash.  ``save`` runs the same checks
before writing, so it never writes a file that ``load`` refuses (e.g. after ``set_params``
changed a parameter the fitted state depends on).
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

from . import __version__
from ._atomic import atomic_write
from ._params import check_bool
from ._state_checks import (
    check_csr_rows,
    check_index,
    check_offsets,
    pack_strings,
    state_array,
    unpack_strings,
)
from .exceptions import ModelFormatError, NotFittedError

__all__ = [
    "FORMAT_VERSION",
    "ModelFormatError",
    "PersistMixin",
    "check_csr_rows",
    "check_index",
    "check_offsets",
    "from_json",
    "get_child",
    "load_model",
    "load_model_file",
    "model_path",
    "pack_strings",
    "put_child",
    "read_model_meta",
    "save_model_file",
    "state_array",
    "state_value",
    "to_json",
    "unpack_strings",
]

FORMAT_VERSION = 1
_META = "__sparsecca_meta__"

#: every class that can be saved, by name (filled by PersistMixin.__init_subclass__)
_REGISTRY: dict[str, type] = {}


# -- the file -------------------------------------------------------------------------------

def _npz_path(path) -> Path:
    p = Path(path)
    return p if p.suffix == ".npz" else p.with_name(p.name + ".npz")


def model_path(path) -> Path:
    """The file a model saved as ``path`` is in: ``path`` itself, or, when no such file
    exists, ``path`` with ``.npz`` appended if that exists (what ``save(path)`` writes)."""
    p = Path(path)
    if not p.exists():
        q = _npz_path(p)
        if q.exists():
            return q
    return p


def save_model_file(path, cls_name: str, params: dict, arrays: dict, *, extra: dict | None = None,
                    overwrite: bool = False, info: dict | None = None) -> Path:
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
    info : dict, optional
        JSON-serialisable provenance (stored as ``meta["info"]``, never interpreted).

    Returns
    -------
    pathlib.Path
        The file written.  It is written to a new, uniquely named file in the same
        directory first and renamed, so an interrupted save never leaves a half-written
        model under the final name (nor touches any other file).

    Raises
    ------
    TypeError
        ``overwrite`` is not True or False.
    FileExistsError
        The file exists and ``overwrite`` is False.
    IsADirectoryError
        ``path`` (or ``path`` with ``.npz`` appended) is a directory.
    FileNotFoundError
        The directory of ``path`` does not exist.
    """
    # a truthy string such as 'no' must not replace the user's file
    overwrite = check_bool("overwrite", overwrite)
    p = _npz_path(path)
    for q in (Path(path), p):
        # checked before appending .npz, which would write a sibling file never named
        if q.is_dir():
            raise IsADirectoryError(f"{q}: is a directory, expected a model file name")
    if p.exists() and not overwrite:
        raise FileExistsError(f"{p} exists; pass overwrite=True (or --force) to replace it")
    meta = {"format": "sparsecca", "format_version": FORMAT_VERSION, "class": cls_name,
            "library_version": __version__, "params": params, "extra": extra or {},
            "info": info or {}}
    payload = {}
    for k, v in arrays.items():
        a = np.asarray(v)
        if a.dtype == object:
            raise TypeError(f"array {k!r} has dtype object; store strings as a str array")
        payload[k] = a
    if _META in payload:
        raise ValueError(f"array name {_META!r} is reserved")
    payload[_META] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    with atomic_write(p) as fh:
        np.savez_compressed(fh, **payload)
    return p


_DAMAGE = (zipfile.BadZipFile, zlib.error, struct.error, OSError, EOFError, KeyError,
           NotImplementedError, RuntimeError, OverflowError)


def _read(path, names: str | None):
    """(meta, arrays) of a model file; ``names='meta'`` reads the metadata only."""
    p = model_path(path)
    if not p.is_file():
        q = _npz_path(p)
        nor = f" (nor {q})" if q != p and not p.exists() else ""
        raise FileNotFoundError(f"{p}: no such model file{nor}")
    try:
        # np.load takes anything that is neither a zip archive nor a .npy array for a
        # pickle, and refuses it with advice to unpickle it: say what the file is not
        # np.load is given our file object, not the path: when it opens the path itself
        # and the archive turns out truncated, it leaves that file open (ResourceWarning)
        with open(p, "rb") as fh:
            head = fh.read(6)
            if head == b"\x93NUMPY":
                raise ModelFormatError(f"{p}: not a sparsecca model file (a bare .npy array, "
                                       f"not an .npz archive)")
            if head[:4] != b"PK\x03\x04":
                raise ModelFormatError(f"{p}: not a sparsecca model file (not an .npz archive)")
            fh.seek(0)
            with np.load(fh, allow_pickle=False) as z:  # a zip archive: an NpzFile
                files = list(z.files)
                if _META not in files:
                    raise ModelFormatError(f"{p}: not a sparsecca model file (no metadata)")
                wanted = [_META] if names == "meta" else files
                arrays = {k: z[k] for k in wanted}
        blob = arrays.pop(_META)
        if blob.dtype != np.uint8 or blob.ndim != 1:
            raise ModelFormatError(f"{p}: not a sparsecca model file (bad metadata array)")
        meta = json.loads(blob.tobytes().decode("utf-8"))
    except ModelFormatError:
        raise
    except ValueError as exc:  # np.load refuses pickled content with a ValueError
        if isinstance(exc, (UnicodeDecodeError, json.JSONDecodeError)):
            raise ModelFormatError(f"{p}: corrupted model file (unreadable metadata: {exc})") \
                from None
        raise ModelFormatError(f"{p}: not a sparsecca model file ({exc})") from None
    except _DAMAGE as exc:
        # damaged archives surface as any of these (bad CRC, unknown compression method ...)
        raise ModelFormatError(
            f"{p}: corrupted or truncated model file ({type(exc).__name__}: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != "sparsecca":
        raise ModelFormatError(f"{p}: not a sparsecca model file (bad metadata)")
    version = meta.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version > FORMAT_VERSION:
        raise ModelFormatError(
            f"{p}: format version {version!r} is newer than this library reads "
            f"({FORMAT_VERSION}); upgrade sparsecca (file written by "
            f"{meta.get('library_version')!r})"
        )
    for key in ("params", "extra"):
        if not isinstance(meta.get(key), dict):
            raise ModelFormatError(f"{p}: bad metadata ({key!r} is not a JSON object)")
    if not isinstance(meta.get("info", {}), dict):
        raise ModelFormatError(f"{p}: bad metadata ('info' is not a JSON object)")
    meta.setdefault("info", {})
    if not isinstance(meta.get("class"), str):
        raise ModelFormatError(f"{p}: bad metadata (no class name)")
    return meta, arrays


def read_model_meta(path) -> dict:
    """The metadata of a model file (class, params, extra, info, versions), without its arrays.

    Raises the same errors as :func:`load_model_file`, except the class check.
    """
    return _read(path, "meta")[0]


def load_model_file(path, cls_name: str) -> tuple[dict, dict]:
    """Read a file written by :func:`save_model_file` for class ``cls_name``.

    ``path`` may omit the ``.npz`` suffix that saving appended (see :func:`model_path`).

    Returns
    -------
    meta : dict
        ``params``, ``extra``, ``info``, ``format_version``, ``library_version``, ``class``.
    arrays : dict of str -> ndarray

    Raises
    ------
    FileNotFoundError
        No such file (the message names ``path`` with ``.npz`` appended too).
    ModelFormatError
        Not a sparsecca model file (including pickles and truncated or corrupted archives),
        a file of another class, or a newer format version.
    """
    path = model_path(path)
    meta, arrays = _read(path, None)
    if meta["class"] != cls_name:
        raise ModelFormatError(f"{Path(path)}: holds a {meta['class']!r}, not a {cls_name!r}")
    return meta, arrays


# -- JSON encoding of parameters and fitted scalars -------------------------------------------

def to_json(value, name: str = "value"):
    """JSON form of a parameter or fitted scalar, reversible by :func:`from_json`.

    Tuples, numpy dtypes / scalar types and str-keyed dicts are tagged so that they come back
    as the same Python objects; numpy scalars become Python scalars; a numpy Generator or
    RandomState becomes None (its state cannot be stored portably); an estimator of a
    saveable class (e.g. a view passed as a parameter) is stored as its class name and
    parameters.  Anything else is a TypeError.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not np.isfinite(value):
            return {"__float__": repr(value)}
        return value
    if isinstance(value, np.generic):
        return to_json(value.item(), name)
    if isinstance(value, np.dtype):
        return {"__dtype__": value.str}
    if isinstance(value, type) and issubclass(value, np.generic):
        return {"__dtype__": np.dtype(value).str, "type": True}
    if isinstance(value, (np.random.Generator, np.random.RandomState)):
        return None
    if isinstance(value, tuple):
        return {"__tuple__": [to_json(x, name) for x in value]}
    if isinstance(value, list):
        return [to_json(x, name) for x in value]
    if isinstance(value, np.ndarray) and value.ndim <= 1 and value.dtype.kind in "biuf":
        return [to_json(x, name) for x in value.tolist()]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: to_json(x, f"{name}[{k!r}]") for k, x in value.items()}}
    cls = type(value)
    if _REGISTRY.get(cls.__name__) is cls and hasattr(value, "get_params"):
        # an (unfitted) estimator given as a parameter, e.g. a reranker's input_view:
        # stored as its class name and parameters, rebuilt only from registered classes
        return {"__estimator__": cls.__name__,
                "params": to_json(value.get_params(), f"{name}.params")}
    raise TypeError(f"cannot store {name!r} of type {type(value).__name__} in a model file")


def from_json(value):
    """Inverse of :func:`to_json`."""
    if isinstance(value, list):
        return [from_json(x) for x in value]
    if isinstance(value, dict):
        if "__dtype__" in value:
            dt = np.dtype(value["__dtype__"])
            return dt.type if value.get("type") else dt
        if "__tuple__" in value:
            return tuple(from_json(x) for x in value["__tuple__"])
        if "__float__" in value:
            return float(value["__float__"])
        if "__dict__" in value:
            return {k: from_json(x) for k, x in value["__dict__"].items()}
        if "__estimator__" in value:
            cls = _REGISTRY.get(value["__estimator__"])
            params = from_json(value.get("params"))
            if cls is None or not isinstance(params, dict):
                raise ModelFormatError(f"unknown estimator {value['__estimator__']!r} in the "
                                       f"parameters")
            try:
                return cls(**params)
            except TypeError as exc:
                raise ModelFormatError(f"bad parameters of {cls.__name__} ({exc})") from None
        raise ModelFormatError(f"unrecognised JSON object with keys {sorted(value)}")
    return value


# -- validation of loaded state (the arrays: _state_checks.py) ------------------------------

def state_value(extra: dict, name: str, kind, *, low=None, high=None):
    """Fitted scalar ``name`` from the JSON metadata, type- and range-checked.

    ``kind`` is int, float, bool, str, list or dict; floats must be finite.
    """
    if name not in extra:
        raise ModelFormatError(f"metadata value {name!r} is missing")
    v = from_json(extra[name])
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    ok = isinstance(v, kind) and not (kind is not bool and isinstance(v, bool))
    if not ok:
        raise ModelFormatError(f"metadata value {name!r} must be a {kind.__name__}, got {v!r}")
    if kind is float and not np.isfinite(v):
        raise ModelFormatError(f"metadata value {name!r} must be finite, got {v!r}")
    if (low is not None and v < low) or (high is not None and v > high):
        raise ModelFormatError(f"metadata value {name!r} must lie in [{low}, {high}], got {v!r}")
    return v


# -- nesting one saved object inside another ------------------------------------------------

def put_child(arrays: dict, extra: dict, prefix: str, child) -> None:
    """Store ``child`` (a :class:`PersistMixin` object) under ``prefix`` in a parent state."""
    params, c_arrays, c_extra = child.get_state()
    for k, v in c_arrays.items():
        arrays[f"{prefix}.{k}"] = v
    extra[prefix] = {"class": type(child).__name__, "params": params, "extra": c_extra,
                     "arrays": sorted(c_arrays)}


def get_child(arrays: dict, extra: dict, prefix: str, allowed=None):
    """Restore the object :func:`put_child` stored under ``prefix``.

    ``allowed`` is an optional collection of classes; the stored class must be one of them
    (default: any registered class).
    """
    desc = extra.get(prefix)
    if not isinstance(desc, dict) or not isinstance(desc.get("class"), str) \
            or not isinstance(desc.get("params"), dict) or not isinstance(desc.get("extra"), dict):
        raise ModelFormatError(f"metadata of the nested object {prefix!r} is missing or bad")
    classes = {c.__name__: c for c in allowed} if allowed is not None else _REGISTRY
    cls = classes.get(desc["class"])
    if cls is None:
        raise ModelFormatError(f"nested object {prefix!r} is a {desc['class']!r}; expected one "
                               f"of {sorted(classes)}")
    head = prefix + "."
    sub = {k[len(head):]: v for k, v in arrays.items() if k.startswith(head)}
    return cls.from_state(desc["params"], sub, desc["extra"])


# -- the mixin ------------------------------------------------------------------------------

class PersistMixin:
    """``save`` / ``load`` (and ``get_state`` / ``from_state``) for fitted estimators.

    A class implements

    ``_get_state(self) -> (params, arrays, extra)``
        Constructor parameters (JSON form, :func:`to_json`), arrays and JSON-able extra
        metadata of the fitted object; raise :class:`NotFittedError` when unfitted.
    ``_set_state(self, arrays, extra)``
        Restore the fitted state on an instance built from the stored parameters.  Validate
        everything (:func:`state_array`, :func:`check_index`, :func:`check_offsets` ...):
        after this the object must be safe to hand to any kernel.

    or, for simple classes, declares ``_state_arrays`` (ndarray attributes, None allowed),
    ``_state_values`` (JSON-able attributes) and ``_state_children`` (attributes holding
    PersistMixin objects) and overrides :meth:`_check_state` to validate them.  Two optional
    maps refine the declaration: ``_state_keys`` gives the name in the file of an attribute
    stored under another name, ``_state_child_classes`` the classes a child may be
    (default: any registered class).
    """

    _state_arrays: tuple[str, ...] = ()
    _state_values: tuple[str, ...] = ()
    _state_children: tuple[str, ...] = ()
    _state_keys: dict[str, str] = {}
    _state_child_classes: dict[str, tuple[type, ...]] = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        name = cls.__name__
        if not (name.startswith(("_", "Base")) or name.endswith("Mixin")):  # abstract bases
            _REGISTRY[name] = cls

    # -- hooks (declarative defaults) ------------------------------------------------------
    def _persist_params(self) -> dict:
        return to_json(self.get_params(), "params")["__dict__"]

    def _persist_check_fitted(self) -> None:
        names = self._state_arrays + self._state_values + self._state_children
        if names and not hasattr(self, names[0]):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit "
                                 f"before saving it")

    def _get_state(self) -> tuple[dict, dict, dict]:
        self._persist_check_fitted()
        keys = self._state_keys
        arrays: dict = {}
        extra: dict = {"none": []}
        for name in self._state_arrays:
            value, key = getattr(self, name), keys.get(name, name)
            if value is None:
                extra["none"].append(key)
            else:
                arrays[key] = np.asarray(value)
        for name in self._state_values:
            extra[keys.get(name, name)] = to_json(getattr(self, name), name)
        for name in self._state_children:
            put_child(arrays, extra, keys.get(name, name), getattr(self, name))
        return self._persist_params(), arrays, extra

    def _set_state(self, arrays: dict, extra: dict) -> None:
        keys = self._state_keys
        none = extra.get("none", [])
        if not isinstance(none, list):
            raise ModelFormatError("metadata value 'none' must be a list")
        for name in self._state_arrays:
            key = keys.get(name, name)
            if key in none:
                setattr(self, name, None)
            elif key not in arrays:
                raise ModelFormatError(f"array {key!r} is missing")
            else:
                setattr(self, name, arrays[key])
        for name in self._state_values:
            key = keys.get(name, name)
            if key not in extra:
                raise ModelFormatError(f"metadata value {key!r} is missing")
            setattr(self, name, from_json(extra[key]))
        for name in self._state_children:
            setattr(self, name, get_child(arrays, extra, keys.get(name, name),
                                          allowed=self._state_child_classes.get(name)))
        self._check_state()

    def _check_state(self) -> None:
        """Validate (and canonicalise) the attributes restored by the declarative path."""

    # -- public API ------------------------------------------------------------------------
    def get_state(self) -> tuple[dict, dict, dict]:
        """The fitted state as ``(params, arrays, extra)``: JSON-able dicts and ndarrays.

        This is what :meth:`save` writes; :meth:`from_state` rebuilds the object from it.
        Use it to embed this object in another saved model (see :func:`put_child`).
        """
        return self._get_state()

    @classmethod
    def from_state(cls, params: dict, arrays: dict, extra: dict):
        """Rebuild a fitted object from :meth:`get_state` output, validating every array.

        Raises
        ------
        ModelFormatError
            Unknown parameters, invalid parameter values or an inconsistent state.
        """
        if not isinstance(params, dict) or not isinstance(extra, dict):
            raise ModelFormatError("params and extra must be dicts")
        try:
            decoded = {k: from_json(v) for k, v in params.items()}
            est = cls(**decoded)
        except TypeError as exc:
            raise ModelFormatError(f"bad {cls.__name__} parameters ({exc})") from None
        try:
            est._set_state(arrays, extra)
        except ModelFormatError:
            raise
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise ModelFormatError(f"invalid {cls.__name__} state ({type(exc).__name__}: "
                                   f"{exc})") from None
        return est

    def save(self, path, *, overwrite: bool = False, info: dict | None = None) -> Path:
        """Write the fitted model to ``path`` (``.npz`` appended when missing).

        Parameters
        ----------
        path : str or path-like
        overwrite : bool, default False
            An existing file is refused (FileExistsError) unless True.
        info : dict, optional
            JSON-able provenance stored with the model (see :func:`read_model_meta`).

        Returns
        -------
        pathlib.Path
            The file written.

        Raises
        ------
        ValueError
            :meth:`load` would refuse the state, e.g. a parameter was changed with
            ``set_params`` after ``fit`` (``center``, ``solver`` ...) so that it no longer
            matches the fitted attributes; nothing is written.
        TypeError
            ``overwrite`` is not True or False.
        FileExistsError
            The file exists and ``overwrite`` is False.
        IsADirectoryError
            ``path`` is a directory.
        FileNotFoundError
            The directory of ``path`` does not exist.
        """
        params, arrays, extra = self._get_state()
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        # run load()'s checks on what the file would hold (params and extra through JSON),
        # so that save never writes a file that load refuses
        stored_params, stored_extra = json.loads(json.dumps([params, extra]))
        try:
            type(self).from_state(stored_params, arrays, stored_extra)
        except ModelFormatError as exc:
            raise ValueError(
                f"cannot save this {type(self).__name__}: load() would refuse its state "
                f"({exc}); were parameters changed (set_params) since fit? Refit, or restore "
                f"the parameters it was fitted with") from None
        return save_model_file(path, type(self).__name__, params, arrays, extra=extra,
                               overwrite=overwrite, info=info)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`.

        ``path`` may omit the ``.npz`` suffix that :meth:`save` appended: ``load('m')``
        reads ``m.npz`` when there is no file ``m``.

        Raises
        ------
        FileNotFoundError
        ModelFormatError
            Not a sparsecca model file, corrupted or truncated, of another class, from a
            newer format version, or with arrays inconsistent with each other.
        """
        path = model_path(path)
        meta, arrays = load_model_file(path, cls.__name__)
        try:
            return cls.from_state(meta["params"], arrays, meta["extra"])
        except ModelFormatError as exc:
            raise ModelFormatError(f"{path}: {exc}") from None


def _import_model_modules() -> None:
    """Import every module that defines saveable classes (registering them)."""
    import importlib

    for mod in ("sparsecca.tagging", "sparsecca.features", "sparsecca.rerank",
                "sparsecca.rerank._cca", "sparsecca.linalg"):
        try:
            importlib.import_module(mod)
        except ImportError:  # a module not present in this version
            pass


def load_model(path, allowed=None):
    """Load a model file whatever its class (dispatching on the class name it records).

    Parameters
    ----------
    path : str or path-like
        As given to ``save`` (``.npz`` may be omitted, see :func:`model_path`).
    allowed : collection of classes, optional
        Refuse (ModelFormatError) any other class.

    Returns
    -------
    The fitted object.
    """
    path = model_path(path)
    meta = read_model_meta(path)
    _import_model_modules()
    name = meta["class"]
    classes = {c.__name__: c for c in allowed} if allowed is not None else _REGISTRY
    cls = classes.get(name)
    if cls is None:
        raise ModelFormatError(f"{Path(path)}: holds a {name!r}; expected one of "
                               f"{sorted(classes)}")
    return cls.load(path)
