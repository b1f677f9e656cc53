"""Thread and BLAS control: one-thread BLAS regions, and tall products split over Python threads.

The iterative solver's dense work is tall and skinny (d x b blocks, d up to 10^5, b ~ 75).
OpenBLAS's own threading is pinned off for such shapes (see ``small_blas``: with the other
core busy its spinning threads were several times slower), which leaves one core idle on a
quiet machine.  Splitting the rows of the tall operand between the calling thread and one worker
uses both cores without spinning: a busy machine only time-slices the two threads.

The halves run on two threads only inside a ``small_blas`` region (BLAS held to one
thread); elsewhere BLAS threads the product itself and a second Python thread would only
oversubscribe the cores.  The results do not depend on the number of threads: above the size
threshold a product is always computed as the same two row halves (and a reduction
``A^T B`` sums them in the same order), whether the halves run on one thread or two.
"""

from __future__ import annotations

import contextvars
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

__all__ = ["SMALL_BLAS_MAX", "SPLIT_MIN_FLOPS", "blas_pinned", "n_split_threads", "run_pair",
           "small_blas", "tall_matmul", "tall_tmatmul", "wide_blas"]

#: products smaller than this many multiply-adds run in one call (a thread hop costs tens of
#: microseconds)
SPLIT_MIN_FLOPS = 2_000_000

# -- BLAS threads --------------------------------------------------------------------------

try:  # optional: threadpoolctl ships with scikit-learn
    from threadpoolctl import ThreadpoolController

    _CONTROLLER = ThreadpoolController()
except Exception:  # pragma: no cover - threadpoolctl absent or broken
    _CONTROLLER = None


#: dense work whose narrow dimension is at most this runs on one BLAS thread (see small_blas)
SMALL_BLAS_MAX = 4096


@contextmanager
def small_blas(size: int, threshold: int | None = None):
    """Run dense work whose narrow dimension is ``size`` on one BLAS thread when it is small.

    Covers small factorisations (eigh / Cholesky of size x size) and tall-skinny products
    (d x size by size x size).  For exactly these shapes OpenBLAS's threaded path can be
    several times *slower* than one thread when the other cores are busy (its threads spin
    waiting for each other), while one thread loses at most the parallel speed-up on an
    idle machine (see docs/engine.md).  The limit is scoped to the block and restored
    afterwards; large square factorisations (the dense reference) keep the global setting.
    Pass ``size=0`` for work that is never worth threading (LAPACK's symmetric eigensolvers
    are bound by their BLAS-2 tridiagonalisation, which threads poorly).
    """
    global _PINNED
    threshold = SMALL_BLAS_MAX if threshold is None else threshold
    if _CONTROLLER is None or size > threshold:
        yield
        return
    with _CONTROLLER.limit(limits=1, user_api="blas"):
        _PINNED += 1
        try:
            yield
        finally:
            _PINNED -= 1


_PINNED = 0


def blas_pinned() -> bool:
    """True inside a :func:`small_blas` region that holds BLAS to one thread."""
    return _PINNED > 0


# -- row splits over Python threads ---------------------------------------------------------

_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None


def n_split_threads() -> int:
    """2 when two cores are available to this process (and SPARSECCA_SPLIT is not 0), else 1."""
    if os.environ.get("SPARSECCA_SPLIT", "1") == "0":
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return 2 if cores >= 2 else 1


_ON_WORKER = threading.local()


def _reset_after_fork():
    # a forked child inherits _POOL but not its worker thread: start afresh
    global _POOL, _LOCK
    _POOL = None
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _on_worker(f):
    _ON_WORKER.flag = True
    try:
        return f()
    finally:
        _ON_WORKER.flag = False


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparsecca-split")
    return _POOL


def run_pair(f, g):
    """``(f(), g())``, with ``f`` on the worker thread while ``g`` runs here (when 2 threads
    and BLAS is held to one thread).

    Both must release the GIL for the overlap to pay (BLAS calls, scipy's sparse products).
    Called from the worker itself (a split product inside ``f``) it runs both in turn, so
    nesting cannot deadlock the one-worker pool.
    """
    if n_split_threads() < 2 or getattr(_ON_WORKER, "flag", False) or not blas_pinned():
        return f(), g()
    # the worker runs f in the caller's context (the active Thresholds, see _thresholds)
    fut = _pool().submit(contextvars.copy_context().run, _on_worker, f)
    _OVERLAP.flag = True
    try:
        b = g()
    finally:
        _OVERLAP.flag = False
        a = fut.result()
    return a, b


_OVERLAP = threading.local()


@contextmanager
def wide_blas():
    """Inside a ``small_blas`` region, let one large BLAS-3 call (a triangular solve with a
    d x d factor, d > SMALL_BLAS_MAX) use both cores, unless a split thread runs beside it.

    A triangular solve cannot be split over Python threads (LAPACK's wrapper keeps the
    GIL), and on one core it leaves the other idle: two BLAS threads solve it nearly twice
    as fast (docs/engine.md).
    """
    busy = getattr(_OVERLAP, "flag", False) or getattr(_ON_WORKER, "flag", False)
    if _CONTROLLER is None or not blas_pinned() or busy or n_split_threads() < 2:
        yield
        return
    with _CONTROLLER.limit(limits=n_split_threads(), user_api="blas"):
        yield


def tall_matmul(A, B):
    """``A @ B`` for a tall A (d, a) and a small B (a, b), rows of A split over two threads."""
    d = A.shape[0]
    if d < 2 or d * A.shape[1] * B.shape[1] < SPLIT_MIN_FLOPS:
        return A @ B
    out = np.empty((d, B.shape[1]), dtype=np.result_type(A, B))
    h = d // 2

    def top():
        np.matmul(A[:h], B, out=out[:h])

    def bottom():
        np.matmul(A[h:], B, out=out[h:])

    run_pair(top, bottom)
    return out


def tall_tmatmul(A, B):
    """``A^T B`` for tall A (d, a), B (d, b), as the sum of the two row halves' products.

    Always the same two halves, summed top + bottom, so the rounding does not depend on
    whether the halves ran on one thread or two.
    """
    d = A.shape[0]
    h = d // 2
    if d < 2 or d * A.shape[1] * B.shape[1] < SPLIT_MIN_FLOPS:
        return A.T @ B
    top, bottom = run_pair(lambda: A[:h].T @ B[:h], lambda: A[h:].T @ B[h:])
    top += bottom
    return top

