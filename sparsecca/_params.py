"""The scikit-learn parameter protocol shared by every estimator (no scikit-learn needed)."""

from __future__ import annotations

import inspect

import numpy as np

__all__ = ["ParamsMixin", "check_bool"]


def check_bool(name: str, value) -> bool:
    """``value`` if it is True or False (NumPy's bool too), else a TypeError naming ``name``:
    a truthy string such as 'no' must not switch an option on."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


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
