"""The working precision of a solve: an operator's products in float32, cast once.

A solve whose tolerance lies far above float32's rounding (the randomized solver's LOBPCG
steps, its starting range finder) works on float32 blocks, which halves the bytes every
product moves.  It casts each operator it uses once, at its start, with
:func:`in_precision`; the cast operator takes blocks in any float dtype, casts them to its
own and returns its products in it.  No operator has a float32 method of its own.

An operator with a kernel in the working precision defines one private hook,
``_product_in(B, dtype, transpose)`` (B a C-contiguous (d, b) block of ``dtype``): the Gram
and cross-covariance products accumulate in float32 from float32 copies of a sparse X's
values where centring allows it (``_DataMatrix``), the dense Cholesky factor and its whitener
solve in a float32 copy of the factor.  Any other operator computes in float64 and its
product is rounded.
"""

from __future__ import annotations

import numpy as np

from .._params import check_float_dtype
from ._validation import ShapeCheckedOperator

__all__ = ["in_precision", "rounded"]


def in_precision(op, dtype):
    """``op`` with its products in ``dtype``.

    Parameters
    ----------
    op : LinearOperator, shape (d1, d2)
        An engine operator (``_product_in`` if it has a kernel in ``dtype``) or any
        operator with ``matmat`` / ``rmatmat``.
    dtype : {float32, float64}

    Returns
    -------
    LinearOperator, shape (d1, d2)
        ``op`` itself for float64; for float32, an operator whose ``matmat`` /
        ``rmatmat`` return float32 blocks.

    Raises
    ------
    ValueError
        If ``dtype`` is not float32 or float64.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.sparse.linalg import aslinearoperator
    >>> from sparsecca.linalg import in_precision
    >>> A = aslinearoperator(np.arange(6.0).reshape(2, 3))
    >>> in_precision(A, np.float64) is A
    True
    >>> in_precision(A, np.float32).matmat(np.ones((3, 1))).dtype
    dtype('float32')
    """
    dtype = check_float_dtype(dtype)
    op = op.op if isinstance(op, _Cast) else op
    return op if dtype == np.float64 else _Cast(op, dtype)


def rounded(op, B, dtype, transpose=False):
    """``op``'s float64 product with B (its transpose's with ``transpose``), rounded to
    ``dtype``: the product of an operator without a kernel in ``dtype`` (B of the right
    shape: unchecked)."""
    out = op._rmatmat(B) if transpose else op._matmat(B)
    return np.ascontiguousarray(out, dtype=dtype)


class _Cast(ShapeCheckedOperator):
    """``op``'s products in ``dtype`` (see :func:`in_precision`)."""

    def __init__(self, op, dtype):
        self.op = op
        self._kernel = getattr(op, "_product_in", None)
        super().__init__(dtype=np.dtype(dtype), shape=op.shape)

    def _operator_name(self):
        name = getattr(self.op, "_operator_name", lambda: type(self.op).__name__)()
        return f"{name} in {self.dtype.name}"

    def _apply(self, B, transpose):
        B = np.ascontiguousarray(B, dtype=self.dtype)
        if self._kernel is not None:
            return self._kernel(B, self.dtype, transpose)
        return rounded(self.op, B, self.dtype, transpose)

    def _matmat(self, B):
        return self._apply(B, False)

    def _rmatmat(self, U):
        return self._apply(U, True)

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _rmatvec(self, v):
        return self._rmatmat(np.asarray(v).reshape(-1, 1)).reshape(-1)
