"""The scikit-learn parameter protocol shared by every estimator (no scikit-learn needed), and
the argument checks every layer uses (one copy each, so that a message reads the same
wherever a user meets it)."""

from __future__ import annotations

import inspect
import numbers

import numpy as np

__all__ = ["ParamsMixin", "as_int_array", "check_bool", "check_float", "check_float_dtype",
           "check_int", "check_partitioned_fit", "check_random_state", "check_weight_scale"]

#: how an estimator with a ``partitioned_fit`` parameter trains on partitioned input, and
#: the shares of iterative parameter mixing (``mixing_weights``)
PARTITIONED_FITS = ("gather", "mixing")
MIXING_WEIGHTS = ("uniform", "updates")


def check_bool(name: str, value) -> bool:
    """``value`` if it is True or False (NumPy's bool too), else a TypeError naming ``name``:
    a truthy string such as 'no' must not switch an option on."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_int(name: str, value, low: int) -> int:
    """``value`` as an int if it is an integer (not a bool) >= ``low``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= {low}, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value}")
    return int(value)


def check_partitioned_fit(estimator) -> tuple[str, str]:
    """The validated ``(partitioned_fit, mixing_weights)`` of ``estimator``: each one of
    :data:`PARTITIONED_FITS` and :data:`MIXING_WEIGHTS`, else a ValueError naming it."""
    for name, allowed in (("partitioned_fit", PARTITIONED_FITS),
                          ("mixing_weights", MIXING_WEIGHTS)):
        value = getattr(estimator, name)
        if not isinstance(value, str) or value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return estimator.partitioned_fit, estimator.mixing_weights


def check_float(name: str, value, low: float, *, strict: bool,
                high: float | None = None) -> float:
    """A finite real number above ``low`` (``> low`` when ``strict``), at most ``high``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or (v <= low if strict else v < low) or (high is not None
                                                                    and v > high):
        bound = (f" {'>' if strict else '>='} {low:g}" if high is None
                 else f" in {'(' if strict else '['}{low:g}, {high:g}]")
        if low == -np.inf and high is None:  # any finite number ("finite number >= -inf")
            bound = ""
        raise ValueError(f"{name} must be a finite number{bound}, got {value!r}")
    return v


def check_weight_scale(name: str, weight: float, values, what: str, *, signed: bool = False,
                       hint: str = "") -> None:
    """Refuse a finite ``weight`` whose product with a finite value of ``values`` overflows.

    ``weight * value`` would be +-inf: a possible candidate scored as impossible (or as
    certain), with at most NumPy's overflow warning to say so (none inside a numba kernel).

    Parameters
    ----------
    name : str
        The weight, as the message names it (an argument, or what a fit chose).
    weight : float
    values : float array
        Non-finite values (a -inf log 0) are left to the caller.
    what : str
        The values, as the message names them (e.g. "train's decoder scores").
    signed : bool
        The weight may be negative: the allowed range is [-limit, limit], else [0, limit].
    hint : str
        Appended to the message (what to do about it).
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    amax = float(np.abs(v).max()) if v.size else 0.0
    with np.errstate(over="ignore"):
        if np.isfinite(weight * amax):
            return
    limit = np.finfo(np.float64).max / amax
    low = f"{-limit:.4g}" if signed else "0"
    raise ValueError(f"{name} times {what} overflows float64 (largest |value| {amax:.4g}): "
                     f"{name} must be in [{low}, {limit:.4g}], got {weight:.4g}{hint}")


def check_random_state(seed) -> np.random.Generator:
    """None, an int seed, a numpy Generator or a legacy RandomState -> Generator."""
    if seed is None or isinstance(seed, (numbers.Integral, np.integer)) and not isinstance(
            seed, (bool, np.bool_)):
        if seed is not None and seed < 0:
            raise ValueError(f"random_state must be None, an int >= 0, a numpy Generator or "
                             f"RandomState, got {seed!r}")
        return np.random.default_rng(seed)
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.RandomState):
        # draw a seed from the legacy stream so that it advances as scikit-learn's would
        return np.random.default_rng(seed.randint(0, 2**31 - 1))
    raise TypeError(f"random_state must be None, an int >= 0, a numpy Generator or "
                    f"RandomState, got {seed!r}")


def as_int_array(name: str, a, dtype) -> np.ndarray:
    """``a`` as a contiguous ``dtype`` array, refusing what the cast would silently alter.

    A float or bool array is a TypeError (0.9 would be truncated to 0), values outside the
    range of ``dtype`` a ValueError (they would wrap).
    """
    a = np.asarray(a)
    # an empty list is float64 to NumPy; no value of it is truncated
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an array of integers, got dtype {a.dtype}")
    if a.size and not np.can_cast(a.dtype, dtype):
        info = np.iinfo(dtype)
        lo, hi = int(a.min()), int(a.max())
        if lo < info.min or hi > info.max:
            raise ValueError(f"{name} must lie in the {np.dtype(dtype)} range "
                             f"[{info.min}, {info.max}], got values in [{lo}, {hi}]")
    return np.ascontiguousarray(a, dtype=dtype)


def check_float_dtype(value, name: str = "dtype") -> np.dtype:
    """``np.dtype(value)`` if it is float32 or float64, else a ValueError naming ``name``
    (also for a value NumPy cannot read as a dtype, such as 'nonsense')."""
    try:
        dt = np.dtype(value)
    except TypeError:
        raise ValueError(f"{name} must be float32 or float64, got {value!r}") from None
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{name} must be float32 or float64, got {dt}")
    return dt


class ParamsMixin:
    """``get_params`` / ``set_params`` / ``repr`` in the scikit-learn style.

    The parameters are the arguments of ``__init__``, which stores each under its own name
    (so ``sklearn.base.clone`` and ``type(est)(**est.get_params())`` rebuild the estimator).
    """

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters, by name."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters (validated at the next ``fit``); returns self."""
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}; "
                                 f"valid parameters are {valid}")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
