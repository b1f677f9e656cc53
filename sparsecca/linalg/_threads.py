"""Thread and BLAS control: one-thread BLAS regions, and tall products split over Python threads.

The iterative solver's dense work is tall and skinny (d x b blocks, d up to 10^5, b ~ 75).
OpenBLAS's own threading is pinned off for such shapes (see ``small_blas``: with the other
cores busy its spinning threads were several times slower), which leaves cores idle on a
quiet machine.  Splitting the rows of the tall operand (or of a sparse matrix) into blocks
run by the calling thread and worker threads uses the cores without spinning: a busy
machine only time-slices the threads.

How many threads: :func:`machine_threads` (the cores this process may run on, at most
BLAS's own thread count).  How many blocks: :func:`n_row_blocks`, from the size of the
product alone.  The blocks run on several threads only inside a ``small_blas`` region (BLAS
held to one thread); elsewhere BLAS threads the product itself and more Python threads
would only oversubscribe the cores.  The results do not depend on the number of threads: a
product is always computed as the same row blocks, and a reduction ``A^T B`` sums their
partial products in the same order (:func:`sum_in_order`), whichever threads ran them.
"""

from __future__ import annotations

import contextvars
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager

import numpy as np
import scipy.linalg  # noqa: F401  (loads scipy's own BLAS before the controller looks)

from .._machine import usable_cores
from ._thresholds import DEFAULT_THRESHOLDS, active

__all__ = ["SMALL_BLAS_MAX", "blas_pinned", "machine_threads", "n_row_blocks", "n_split_threads",
           "row_bounds", "run_blocks", "run_pair", "small_blas", "sum_in_order", "tall_matmul",
           "tall_tmatmul", "wide_blas"]

# -- BLAS threads --------------------------------------------------------------------------

# the controller sees the BLAS libraries loaded when it is made: numpy's and scipy's (scipy
# bundles its own, which LAPACK's factorisations use), hence the import of scipy.linalg above
try:  # optional: threadpoolctl ships with scikit-learn
    from threadpoolctl import ThreadpoolController

    _CONTROLLER = ThreadpoolController()
except Exception:  # pragma: no cover - threadpoolctl absent or broken
    _CONTROLLER = None


#: the default of ``Thresholds.small_blas_max`` (dense work whose narrow dimension is at most
#: this runs on one BLAS thread, see small_blas), kept for importers: the code reads active()
SMALL_BLAS_MAX = DEFAULT_THRESHOLDS.small_blas_max


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
    threshold = active().small_blas_max if threshold is None else threshold
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


# -- row blocks over Python threads ---------------------------------------------------------

#: a split product is cut into at most this many row blocks.  The partition depends only on
#: the product (its rows and multiply-adds), never on the threads that run it, so that a
#: reduction sums the same partial products in the same order on any machine; up to this
#: many threads share it
MAX_ROW_BLOCKS = 4

_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None
_POOL_WORKERS = 0
_MACHINE: int | None = None


def _blas_threads() -> int | None:
    """The BLAS library's own thread count (threadpoolctl; set by OMP_NUM_THREADS,
    OPENBLAS_NUM_THREADS, ...), None when unknown."""
    if _CONTROLLER is None:
        return None
    try:
        counts = [int(lib["num_threads"]) for lib in _CONTROLLER.info()
                  if lib.get("user_api") == "blas"]
    except Exception:  # pragma: no cover - a library threadpoolctl cannot query
        return None
    return max(counts) if counts else None


#: read at import, outside any small_blas region
_BLAS_THREADS = _blas_threads()


def machine_threads() -> int:
    """The threads this process may run its split products on: the cores it may use
    (``os.sched_getaffinity``), at most BLAS's own thread count (a limit the user set for
    BLAS holds for the split threads too).  Read once."""
    global _MACHINE
    if _MACHINE is None:
        cores = usable_cores()
        _MACHINE = max(1, min(cores, _BLAS_THREADS or cores))
    return _MACHINE


def n_split_threads() -> int:
    """Threads a split product may use: :func:`machine_threads`, or 1 when the
    SPARSECCA_SPLIT environment variable is 0."""
    if os.environ.get("SPARSECCA_SPLIT", "1") == "0":
        return 1
    return machine_threads()


def n_row_blocks(rows: int, flops: float, max_blocks: int = MAX_ROW_BLOCKS) -> int:
    """How many row blocks a product of ``flops`` multiply-adds over ``rows`` rows is cut
    into: one below ``Thresholds.split_min_flops`` (a thread hop costs tens of
    microseconds), else one per ``split_min_flops``, between 2 and ``max_blocks`` (and at
    most ``rows``).  Independent of the number of threads."""
    step = active().split_min_flops
    if rows < 2 or flops < step:
        return 1
    return int(min(max_blocks, rows, max(2, flops // step)))


_ON_WORKER = threading.local()


def _reset_after_fork():
    # a forked child inherits _POOL but not its worker threads: start afresh
    global _POOL, _POOL_WORKERS, _LOCK
    _POOL = None
    _POOL_WORKERS = 0
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _on_worker(f):
    _ON_WORKER.flag = True
    try:
        return f()
    finally:
        _ON_WORKER.flag = False


def _pool(workers: int) -> ThreadPoolExecutor:
    """The pool of split threads, with at least ``workers`` of them."""
    global _POOL, _POOL_WORKERS
    with _LOCK:
        if _POOL is None or _POOL_WORKERS < workers:
            if _POOL is not None:
                _POOL.shutdown(wait=False)
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sparsecca-split")
            _POOL_WORKERS = workers
        return _POOL


def run_blocks(tasks):
    """``[t() for t in tasks]``, the tasks shared by this thread and up to
    ``n_split_threads() - 1`` workers when BLAS is held to one thread.

    Each task's result is the same whichever thread runs it, so the list does not depend
    on the number of threads.  The tasks should release the GIL (BLAS calls, scipy's sparse
    products).  Called from a worker (a split product inside a task) it runs them in turn,
    so nesting cannot deadlock the pool.  The first error of a task is raised once every
    thread has stopped.
    """
    tasks = list(tasks)
    threads = min(n_split_threads(), len(tasks))
    if threads < 2 or getattr(_ON_WORKER, "flag", False) or not blas_pinned():
        return [t() for t in tasks]
    results = [None] * len(tasks)
    taken = itertools.count()  # next() of a count is atomic under the GIL

    def drain():
        for i in iter(lambda: next(taken), None):
            if i >= len(tasks):
                return
            results[i] = tasks[i]()

    pool = _pool(threads - 1)
    # the workers run in the caller's context (the active Thresholds, see _thresholds)
    futures = [pool.submit(contextvars.copy_context().run, _on_worker, drain)
               for _ in range(threads - 1)]
    _OVERLAP.flag = True
    try:
        drain()
    finally:
        _OVERLAP.flag = False
        wait(futures)
    for fut in futures:
        fut.result()  # a worker's error
    return results


def run_pair(f, g):
    """``(f(), g())``, on two threads when they are available and BLAS is held to one
    thread
    (:func:`run_blocks`)."""
    a, b = run_blocks([f, g])
    return a, b


_OVERLAP = threading.local()


@contextmanager
def wide_blas():
    """Inside a ``small_blas`` region, let one large BLAS-3 call (a triangular solve with a
    d x d factor, d > Thresholds.small_blas_max) use the split threads' cores, unless a
    split thread runs beside it.

    A triangular solve cannot be split over Python threads (LAPACK's wrapper keeps the
    GIL), and on one core it leaves the others idle: two BLAS threads solve it nearly twice
    as fast (docs/engine.md).
    """
    busy = getattr(_OVERLAP, "flag", False) or getattr(_ON_WORKER, "flag", False)
    if _CONTROLLER is None or not blas_pinned() or busy or n_split_threads() < 2:
        yield
        return
    with _CONTROLLER.limit(limits=n_split_threads(), user_api="blas"):
        yield


def row_bounds(rows: int, n_blocks: int) -> list[int]:
    """Row bounds of ``n_blocks`` blocks of (nearly) equal height."""
    return [rows * i // n_blocks for i in range(n_blocks + 1)]


def tall_matmul(A, B):
    """``A @ B`` for a tall A (d, a) and a small B (a, b), by row blocks of A over the split
    threads (each output row from one block: the same result on any number of threads)."""
    d = A.shape[0]
    n = n_row_blocks(d, d * A.shape[1] * B.shape[1])
    if n == 1:
        return A @ B
    out = np.empty((d, B.shape[1]), dtype=np.result_type(A, B))
    bounds = row_bounds(d, n)

    def block(lo, hi):
        return lambda: np.matmul(A[lo:hi], B, out=out[lo:hi])

    run_blocks([block(bounds[i], bounds[i + 1]) for i in range(n)])
    return out


def tall_tmatmul(A, B):
    """``A^T B`` for tall A (d, a), B (d, b), as the sum of the row blocks' products.

    Always the same blocks (:func:`n_row_blocks`), summed in order, so the rounding does not
    depend on the number of threads that ran them.
    """
    d = A.shape[0]
    n = n_row_blocks(d, d * A.shape[1] * B.shape[1])
    if n == 1:
        return A.T @ B
    bounds = row_bounds(d, n)

    def block(lo, hi):
        return lambda: A[lo:hi].T @ B[lo:hi]

    return sum_in_order(run_blocks([block(bounds[i], bounds[i + 1]) for i in range(n)]))


def sum_in_order(parts):
    """parts[0] + parts[1] + ..., left to right, into parts[0] (a fresh array)."""
    out = parts[0]
    for p in parts[1:]:
        out += p
    return out
