"""The speed of the machine a benchmark ran on, measured, as one line beside its figures.

The 2-core reference machine is a shared VM whose speed varies from day to day: the same code
has timed zipf 20K at 0.44 s one session and 1.1-1.5 s another, with nothing else running.
A figure in seconds is therefore only comparable with one taken on an equally fast machine.
:func:`machine_speed` times the two kinds of work the engine is made of -- dense BLAS-3
(a GEMM on every core) and a sparse CSR times a dense block (scipy's kernel, one thread) --
and the memory beneath them (a streamed read and random gathers), on fixed inputs, so that
two runs' lines say whether the machine or the code changed, and which part of the machine.
Ratios measured side by side in one run (the targets' speed-ups) do not need it.

Usage::

    from _machine import machine_line, machine_speed
    speed = machine_speed()
    print(machine_line(speed))   # machine: AMD EPYC, 2 cores, ... GEMM 41.3 GFLOP/s, ...
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np

#: each probe repeats its operation for at least this long and keeps the fastest run
PROBE_SECONDS = 0.3
GEMM_N = 1000
#: the sparse probe: a random CSR (n x d, ~nnz_row nonzeros a row, Zipf-like columns as in
#: the text views) times a dense (d, cols) block; fixed seed, so every run does the same work
SPMM_N, SPMM_D, SPMM_NNZ_ROW, SPMM_COLS = 50_000, 20_000, 30, 64
#: memory probes: a streamed read of STREAM_N float64 (80 MB, beyond any cache) and
#: GATHER_N random gathers from it (latency-bound, as a sparse product's column reads)
STREAM_N, GATHER_N = 10_000_000, 1_000_000


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _blas() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS unknown (no threadpoolctl)"
    for info in threadpool_info():
        if info.get("user_api") == "blas":
            arch = info.get("architecture")
            return (f"{info.get('internal_api', 'BLAS')} {info.get('version', '?')}"
                    + (f" ({arch} kernels)" if arch else "")
                    + f", {info.get('num_threads')} threads")
    return "BLAS unknown"


def _best_time(f, seconds: float) -> float:
    f()  # first call: page faults, thread start-up
    best = float("inf")
    t_end = time.perf_counter() + seconds
    while True:
        t0 = time.perf_counter()
        f()
        t1 = time.perf_counter()
        best = min(best, t1 - t0)
        if t1 >= t_end:
            return best


def _probe_matrix():
    import scipy.sparse as sp

    rng = np.random.default_rng(12345)
    nnz = SPMM_N * SPMM_NNZ_ROW
    # Zipf-like column popularity: a few dense columns and a long tail, as in the views
    cols = (rng.zipf(1.3, nnz) - 1) % SPMM_D
    rows = np.repeat(np.arange(SPMM_N), SPMM_NNZ_ROW)
    X = sp.csr_matrix((np.ones(nnz), (rows, cols)), shape=(SPMM_N, SPMM_D))
    X.sum_duplicates()
    V = rng.standard_normal((SPMM_D, SPMM_COLS))
    return X, V


def machine_speed(seconds: float = PROBE_SECONDS) -> dict:
    """Measure the machine: CPU, cores, BLAS, GEMM, sparse product and memory speeds.

    Parameters
    ----------
    seconds : float
        How long each probe repeats its operation (the fastest repetition counts).

    Returns
    -------
    dict
        ``cpu``, ``cores``, ``blas`` (str), ``gemm_gflops`` (float64 GEMM of order
        ``GEMM_N`` on BLAS's threads), ``spmm_gmadds`` (10^9 multiply-adds a second of
        scipy's CSR x dense block, one thread), ``read_gbs`` (GB/s of a streamed read, one
        thread), ``gather_mps`` (random gathers a second, in millions: memory latency),
        ``load`` (1-minute load average or None).
    """
    rng = np.random.default_rng(0)
    A = rng.standard_normal((GEMM_N, GEMM_N))
    B = rng.standard_normal((GEMM_N, GEMM_N))
    t_gemm = _best_time(lambda: A @ B, seconds)
    X, V = _probe_matrix()
    t_spmm = _best_time(lambda: X @ V, seconds)
    big = rng.random(STREAM_N)
    idx = rng.integers(0, STREAM_N, GATHER_N)
    t_read = _best_time(big.sum, seconds)
    t_gather = _best_time(lambda: big[idx].sum(), seconds)
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = None
    return {
        "cpu": _cpu_model(),
        "cores": _cores(),
        "blas": _blas(),
        "gemm_gflops": 2.0 * GEMM_N**3 / t_gemm / 1e9,
        "spmm_gmadds": X.nnz * SPMM_COLS / t_spmm / 1e9,
        "read_gbs": 8.0 * STREAM_N / t_read / 1e9,
        "gather_mps": GATHER_N / t_gather / 1e6,
        "load": load,
    }


def machine_summary(speed: dict) -> str:
    """:func:`machine_speed`'s result in words, for a sentence or a labelled line."""
    load = "" if speed.get("load") is None else f"; load average {speed['load']:.2f}"
    return (f"{speed['cpu']}, {speed['cores']} cores, {speed['blas']}; "
            f"float64 GEMM {speed['gemm_gflops']:.1f} GFLOP/s, CSR x {SPMM_COLS} columns "
            f"{speed['spmm_gmadds']:.2f} G multiply-adds/s (one thread), memory read "
            f"{speed['read_gbs']:.1f} GB/s and {speed['gather_mps']:.0f} M random gathers/s"
            f"{load}")


def machine_line(speed: dict, label: str = "machine") -> str:
    """One line ``<label>: <summary>`` to print above (or below) a table."""
    return f"{label}: {machine_summary(speed)}"
