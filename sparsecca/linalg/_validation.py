"""Argument checks shared by the public entry points of :mod:`sparsecca.linalg`.

Every check raises ``TypeError`` (wrong kind of object) or ``ValueError`` (right kind, bad
value) with a message naming the argument, the allowed range and the value received.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._params import check_int, check_random_state  # shared with evaluate and the experiment
from .._sparse import check_sparse_structure
from ._errors import FactorizationError, RankDeficientError, SingularCovarianceError  # noqa: F401
from ._thresholds import active

__all__ = [
    "ShapeCheckedOperator",
    "check_2d",
    "check_block",
    "check_dense_size",
    "check_matrix",
    "check_magnitude",
    "check_shape",
    "check_n_samples",
    "check_same_rows",
    "check_tau",
    "check_n_components",
    "check_random_state",
    "check_choice",
    "check_positive_int",
    "check_tolerance",
]


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if sp.issparse(value):
        return f"a sparse matrix of shape {value.shape} and dtype {value.dtype}"
    return repr(value) if not hasattr(value, "shape") else f"{type(value).__name__}"


def check_matrix(X, name: str, *, allow_operator: bool = False, copy_dense: bool = False):
    """Validate a 2-D numeric data matrix (dense array-like or scipy.sparse).

    Parameters
    ----------
    X : array-like (n, d), scipy.sparse matrix/array, or LinearOperator (if allowed)
    name : str
        Argument name used in the error messages.
    allow_operator : bool
        Accept a :class:`~scipy.sparse.linalg.LinearOperator` (its entries cannot be checked).

    Returns
    -------
    X : ndarray (C-contiguous float32/float64), CSR matrix (float32/float64, canonical), or
        the operator unchanged.  Integer and boolean inputs are converted to float64.
    """
    if isinstance(X, LinearOperator):
        if not allow_operator:
            raise TypeError(f"{name} must be a numpy array or a scipy.sparse matrix, "
                            f"got a LinearOperator")
        if len(X.shape) != 2 or min(X.shape) < 1:
            raise ValueError(f"{name} must have at least 1 row and 1 column, got shape {X.shape}")
        if getattr(X, "dtype", None) is not None:
            # a complex operator's products would be cast to float64, dropping the imaginary
            # part with only numpy's ComplexWarning: the SVD of Re(A), not of A
            _float_dtype(X.dtype, name)
        return X
    X, dtype = check_2d(X, name)
    if sp.issparse(X):
        check_sparse_structure(X, name)
        X = sp.csr_matrix(X, dtype=dtype)  # CSR copy/view; canonical form below
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        data = X.data
    else:
        X = np.array(X, dtype=dtype, order="C", copy=copy_dense or X.dtype != dtype
                     or not X.flags.c_contiguous)
        data = X
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{name} must have at least 1 row and 1 column, got shape {X.shape}")
    if not np.isfinite(data).all():
        bad = "NaN" if np.isnan(data).any() else "inf"
        raise ValueError(f"{name} must contain only finite values, got {bad}")
    return X


def check_2d(X, name: str):
    """(X, dtype): a sparse X as it is, anything else as ``np.asarray(X)``, refused unless
    it is 2-D with a real numeric dtype; ``dtype`` is the float dtype :func:`check_matrix`
    converts it to.  No copy of an ndarray and no pass over the values (see check_matrix
    for that)."""
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got {X.ndim}-D")
        return X, _float_dtype(X.dtype, name)
    if isinstance(X, (str, bytes)) or X is None or isinstance(X, numbers.Number):
        raise TypeError(f"{name} must be a 2-D numeric array or a scipy.sparse matrix, "
                        f"got {type(X).__name__}")
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be a 2-D numeric array or a scipy.sparse matrix, "
                        f"got {type(X).__name__} ({exc})") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got an array with "
                         f"shape {arr.shape}")
    return arr, _float_dtype(arr.dtype, name)


_FLOAT_MAX = float(np.finfo(np.float64).max)
_FLOAT_TINY = float(np.finfo(np.float64).tiny)  # the smallest normal float64


def check_magnitude(X, name: str) -> None:
    """Refuse finite values whose Gram matrix ``X^T X`` over- or underflows float64.

    Every entry of the Gram matrix (and of a cross product with a matrix passing this check)
    is at most ``n * max|x|**2``: above the largest float64 it may overflow to inf, below the
    smallest normal one every entry is subnormal or 0.  Either way the factorisations fail
    with a message about singular or rank-0 covariances, so the values are named here.  One
    pass over the stored values (O(nnz), no copy); an all-zero matrix is left to the solver.

    Parameters
    ----------
    X : ndarray or CSR matrix, as returned by :func:`check_matrix`
    name : str
        Argument name used in the error message.
    """
    data = X.data if sp.issparse(X) else X
    if data.size == 0:
        return
    check_magnitude_of(max(abs(float(data.max())), abs(float(data.min()))), X.shape[0], name)


def check_magnitude_of(amax, n, name: str) -> None:
    """:func:`check_magnitude` of a matrix with ``n`` rows and largest |value| ``amax``
    (for data held elsewhere, e.g. the chunks of a Dask array)."""
    if amax > np.sqrt(_FLOAT_MAX / n):
        raise ValueError(f"{name} has values too large for float64: its covariance "
                         f"overflows (largest |value| {amax:.3g} with {n} rows; n * max|x|^2 "
                         f"must stay below {_FLOAT_MAX:.3g}); rescale {name}, e.g. divide it "
                         f"by its largest |value|")
    if 0.0 < amax < np.sqrt(_FLOAT_TINY / n):
        raise ValueError(f"{name} has values too small for float64: its covariance "
                         f"underflows to 0 (largest |value| {amax:.3g} with {n} rows; n * "
                         f"max|x|^2 must stay above {_FLOAT_TINY:.3g}); rescale {name}, e.g. "
                         f"divide it by its largest |value|")


def check_n_samples(n: int) -> int:
    """CCA needs at least two samples: with one, every covariance is 0 (or rank 1 without
    centring) and the correlations returned are meaningless."""
    if n < 2:
        raise ValueError(f"X and Y must have at least 2 rows (samples) for CCA, got {n}")
    return n


def _float_dtype(dtype, name) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype in (np.float32, np.float64):
        return dtype
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    if dtype.kind == "f":  # float16, longdouble
        return np.dtype(np.float64)
    raise TypeError(f"{name} must have a real numeric dtype (bool, int, float32 or float64), "
                    f"got dtype {dtype}")


def check_same_rows(**arrays) -> int:
    """All arrays have the same number of rows; returns it."""
    items = [(k, v.shape[0]) for k, v in arrays.items() if v is not None]
    n0 = items[0][1]
    for k, n in items[1:]:
        if n != n0:
            desc = ", ".join(f"{a} has {m}" for a, m in items)
            raise ValueError(f"{k} must have the same number of rows as {items[0][0]} "
                             f"(one row per example), got {desc}")
    return n0


def check_tau(tau, name: str = "tau") -> float:
    """tau is a real number in [0, 1]."""
    if isinstance(tau, (bool, np.bool_)) or not isinstance(tau, numbers.Real):
        raise TypeError(f"{name} must be a real number in [0, 1], got {tau!r}")
    tau = float(tau)
    if not (0.0 <= tau <= 1.0):  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1] (C = (1 - tau) X^T X + tau I), got {tau!r}")
    return tau


def check_n_components(k, d1: int, d2: int, name: str = "n_components") -> int:
    """1 <= k <= min(d1, d2)."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise TypeError(f"{name} must be an int in [1, min(d1, d2)] = [1, {min(d1, d2)}], "
                        f"got {k!r}")
    k = int(k)
    if not (1 <= k <= min(d1, d2)):
        raise ValueError(f"{name} must be in [1, min(d1, d2)] = [1, {min(d1, d2)}] "
                         f"(d1 = {d1}, d2 = {d2}), got {k}")
    return k


def check_positive_int(value, name: str, *, minimum: int = 1, allow_none: bool = False):
    """:func:`sparsecca._params.check_int` (``name`` first there), None passing when
    ``allow_none``."""
    if value is None and allow_none:
        return None
    return check_int(name, value, minimum)


def check_verbose(value, name: str = "verbose") -> int:
    """0 (silent), 1, 2, ... (more detail); True and False count as 1 and 0."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= 0 or a bool, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be an int >= 0 or a bool, got {value}")
    return int(value)


def check_tolerance(value, name: str = "tol") -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in (0, 1), got {value!r}")
    value = float(value)
    if not (0.0 < value < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return value


def check_block(B, name: str, rows: int, *, label: str = "d", vector: bool = True) -> tuple:
    """The shape of ``B``, a (rows, m) block -- or a (rows,) vector when ``vector`` -- of an
    operator with ``rows`` = ``label`` rows; a ValueError naming ``name`` otherwise.

    O(1): only ``B.shape`` is read, so operators applied thousands of times in a LOBPCG
    loop may call it on every product.  Array-likes without a shape are refused: callers
    that accept them convert first (``np.asarray``, free for an ndarray).
    """
    shape = getattr(B, "shape", None)
    if shape is None or len(shape) not in ((1, 2) if vector else (2,)):
        got = f"shape {tuple(shape)}" if shape is not None else type(B).__name__
        want = (f"a ({label},) vector or a ({label}, m) = ({rows}, m) block" if vector
                else f"a 2-D ({label}, m) = ({rows}, m) block")
        raise ValueError(f"{name} must be {want}, got {got}")
    if shape[0] != rows:
        raise ValueError(f"{name} must have {label} = {rows} rows, got {shape[0]}")
    return tuple(shape)


def check_shape(a, name: str, want: tuple, like: str) -> None:
    """``a.shape == want`` (O(1)); else a ValueError naming ``name`` and what fixes
    ``want`` (``like``, e.g. 'like V')."""
    shape = tuple(a.shape) if hasattr(a, "shape") else np.shape(a)
    if shape != tuple(want):
        raise ValueError(f"{name} must have shape {tuple(want)} {like}, got {shape}")


def check_dense_size(shape, max_dim, what: str, hint: str = "", dim: str = "d") -> None:
    """Refuse to allocate a dense float64 (d1, d2) array with more entries than a
    max_dim x max_dim one (for a square array: d > max_dim), before it is formed.

    ``max_dim`` None sets no limit, "auto" the active ``Thresholds.dense_max_dim``.  The
    message gives the size in GiB, the limit (calling
    a square array's order ``dim``) and ``hint`` (what to use instead).  O(1).
    """
    if max_dim is None:
        return
    if isinstance(max_dim, str) and max_dim == "auto":
        max_dim = active().dense_max_dim
    max_dim = check_int("max_dim", max_dim, 1)
    d1, d2 = (int(s) for s in shape)
    if d1 * d2 <= max_dim * max_dim:
        return
    limit = (f"{dim} must be <= max_dim" if d1 == d2
             else f"d1 * d2 must be <= max_dim^2 = {max_dim * max_dim}, with max_dim")
    raise ValueError(f"refusing to materialise a {d1} x {d2} dense {what} "
                     f"({8 * d1 * d2 / 2**30:.1f} GiB); {limit}={max_dim}, pass a larger "
                     f"max_dim to force{hint}")


def _checked_product(name: str, adjoint: bool):
    """LinearOperator's product ``name`` behind ShapeCheckedOperator's operand check."""
    product = getattr(LinearOperator, name)

    def checked(self, x):
        self._check_operand(x, adjoint)
        return product(self, x)

    checked.__name__ = checked.__qualname__ = name
    checked.__doc__ = product.__doc__
    return checked


class ShapeCheckedOperator(LinearOperator):
    """A LinearOperator whose products say which shape they need.

    scipy's own check says only "dimension mismatch"; this one names the operator, its
    shape and the operand's.  O(1) per product (the shape only).
    """

    def _operator_name(self):
        """What the error messages call the operator."""
        return type(self).__name__

    def _check_operand(self, x, adjoint):
        shape = getattr(x, "shape", None)
        if shape is None:
            shape = np.shape(x)
        m, n = self.shape
        rows, how = (m, "C^T @ V (rmatvec / rmatmat)") if adjoint else (n, "C @ V")
        if len(shape) not in (1, 2) or shape[0] != rows:
            raise ValueError(f"{self._operator_name()} is {m} x {n}: the V of {how} must be a "
                             f"({rows},) vector or a ({rows}, b) block, got shape "
                             f"{tuple(shape)}")

    matvec = _checked_product("matvec", False)
    matmat = _checked_product("matmat", False)
    rmatvec = _checked_product("rmatvec", True)
    rmatmat = _checked_product("rmatmat", True)


def check_choice(value, name: str, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_block_width(d, width, label, like="the first block"):
    """A streamed block's column count d agrees with the first block's ``width`` (None for
    the first block); returns the width."""
    if width is not None and d != width:
        raise ValueError(f"{label} must have {width} columns like {like}, got {d}")
    return d
