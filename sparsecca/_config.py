"""Numba compilation flags, in one place.

Every kernel in :mod:`sparsecca.kernels` takes its flags from here so that caching,
fastmath and parallelism are decided once.  ``NUMBA_DISABLE_JIT=1`` in the
environment turns every kernel into plain Python (the tests run each kernel once
that way).
"""

import os

__all__ = ["JIT_SERIAL", "JIT_PARALLEL", "JIT_DISABLED"]

JIT_DISABLED = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")

#: ``numba.njit`` flags for serial kernels: cached on disk; no fastmath, so results match the
#: slow references up to summation order
JIT_SERIAL = dict(nogil=True, cache=True, fastmath=False)

#: parallel kernels: numba cannot cache prange kernels reliably across processes
JIT_PARALLEL = dict(nogil=True, parallel=True, cache=False, fastmath=False)
