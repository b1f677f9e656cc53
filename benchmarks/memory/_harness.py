"""Measurement harness of the memory-profiling scripts (no sparsecca import here).

Parent side
    :func:`run_child` runs one configuration in a fresh interpreter (so earlier runs leave no
    memory behind), collects the per-stage figures the child wrote and the child's whole-run
    peak RSS from ``os.wait4`` (the kernel's ``ru_maxrss`` of that one child).
Child side
    :class:`StageRecorder` times named stages and records, per stage, the peak RSS (a psutil
    sampling thread every 2 ms, completed by ``ru_maxrss`` whenever the process maximum grew
    during the stage, which catches short peaks the sampler missed) and, when tracemalloc is
    on, the peak of the memory traced by tracemalloc (Python objects and NumPy buffers; not
    BLAS workspaces, numba's own allocator or the interpreter).
Fitting
    :func:`loglog_fit`: least-squares slope of log(y) on log(x) (the growth exponent).
"""

from __future__ import annotations

import csv
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from contextlib import contextmanager
from pathlib import Path

MB = 1024.0 * 1024.0


def _maxrss_bytes(ru) -> int:
    # Linux reports kilobytes, macOS bytes
    return int(ru.ru_maxrss) * (1 if sys.platform == "darwin" else 1024)


def machine_info() -> dict:
    import numpy as np
    import scipy

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    try:
        import psutil

        mem = psutil.virtual_memory().total / 2**30
    except ImportError:  # pragma: no cover
        mem = float("nan")
    return {"python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "cpus": os.cpu_count(), "mem_gib": round(mem, 1),
            "loadavg": [round(x, 2) for x in load], "platform": platform.platform()}


# -- parent side ---------------------------------------------------------------------------

def run_child(argv: list[str], timeout: float | None = None, env: dict | None = None) -> dict:
    """Run ``python <argv> --result FILE`` and return the JSON the child wrote, plus
    ``child_maxrss_mb`` (kernel-measured whole-run peak) and ``wall_s``.

    A child that fails or times out gives ``{"error": ...}`` instead of raising, so a sweep
    reports what it could measure.
    """
    fd, result = tempfile.mkstemp(prefix="sparsecca-profile-", suffix=".json")
    os.close(fd)
    cmd = [sys.executable, *argv, "--result", result]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})})
    deadline = None if timeout is None else t0 + timeout
    status = ru = None
    try:
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if deadline is not None and time.perf_counter() > deadline:
                proc.kill()
                _, status, ru = os.wait4(proc.pid, 0)
                proc.returncode = -9
                return {"error": f"timeout after {timeout:.0f} s", "argv": argv,
                        "child_maxrss_mb": _maxrss_bytes(ru) / MB}
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            return {"error": f"exit code {proc.returncode}", "argv": argv,
                    "child_maxrss_mb": _maxrss_bytes(ru) / MB, "wall_s": wall}
        with open(result) as fh:
            out = json.load(fh)
        out["child_maxrss_mb"] = _maxrss_bytes(ru) / MB
        out["wall_s"] = wall
        return out
    finally:
        if proc.poll() is None:  # pragma: no cover - interrupted
            proc.kill()
        Path(result).unlink(missing_ok=True)


# -- child side ----------------------------------------------------------------------------

class _Sampler(threading.Thread):
    """Peak RSS since the last ``reset``, sampled every ``interval`` seconds."""

    def __init__(self, interval: float = 0.002):
        super().__init__(daemon=True)
        import psutil

        self._proc = psutil.Process()
        self.interval = interval
        self.peak = self.rss()
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def rss(self) -> int:
        return int(self._proc.memory_info().rss)

    def run(self):
        while not self._stop.is_set():
            r = self.rss()
            with self._lock:
                if r > self.peak:
                    self.peak = r
            time.sleep(self.interval)

    def reset(self) -> int:
        with self._lock:
            self.peak = r = self.rss()
        return r

    def read(self) -> int:
        r = self.rss()
        with self._lock:
            self.peak = max(self.peak, r)
            return self.peak

    def stop(self):
        self._stop.set()


class StageRecorder:
    """Per-stage wall time, peak RSS and (optionally) tracemalloc peak, in the child.

    Usage::

        rec = StageRecorder(trace=args.tracemalloc)
        with rec.stage("read"):
            corpus = read_conllu(...)
        rec.write(path, extra={...})
    """

    def __init__(self, trace: bool = False):
        self.trace = bool(trace)
        self.stages: list[dict] = []
        self._sampler = _Sampler()
        self._sampler.start()
        self.baseline_rss = self._sampler.rss()
        if self.trace:
            tracemalloc.start()

    @contextmanager
    def stage(self, name: str, **info):
        start_rss = self._sampler.reset()
        max_before = _maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF))
        if self.trace:
            tracemalloc.reset_peak()
            traced0 = tracemalloc.get_traced_memory()[0]
        t = time.perf_counter()
        yield info
        dt = time.perf_counter() - t
        peak = self._sampler.read()
        max_after = _maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF))
        if max_after > max_before:  # the process maximum was set during this stage
            peak = max(peak, max_after)
        row = {"stage": name, "time_s": dt, "rss_start_mb": start_rss / MB,
               "rss_peak_mb": peak / MB, "rss_end_mb": self._sampler.rss() / MB, **info}
        if self.trace:
            cur, tpeak = tracemalloc.get_traced_memory()
            row["traced_peak_mb"] = tpeak / MB
            row["traced_peak_increase_mb"] = (tpeak - traced0) / MB
            row["traced_end_mb"] = cur / MB
        self.stages.append(row)

    def write(self, path, extra: dict | None = None) -> None:
        self._sampler.stop()
        out = {"stages": self.stages, "baseline_rss_mb": self.baseline_rss / MB,
               "process_maxrss_mb": _maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF)) / MB,
               "tracemalloc": self.trace, **(extra or {})}
        with open(path, "w") as fh:
            json.dump(out, fh)


# -- analysis ------------------------------------------------------------------------------

def loglog_fit(x, y) -> tuple[float, float]:
    """Least-squares ``log y = slope log x + c``; returns (slope, c).  Needs >= 2 points."""
    import numpy as np

    x = np.log(np.asarray(x, dtype=float))
    y = np.log(np.asarray(y, dtype=float))
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2:
        return float("nan"), float("nan")
    slope, c = np.polyfit(x[ok], y[ok], 1)
    return float(slope), float(c)


def write_csv(rows: list[dict], path: Path) -> None:
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def markdown_table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """``columns`` = (key, header, format spec); missing values print as '-'."""
    head = "| " + " | ".join(h for _, h, _ in columns) + " |"
    sep = "|" + "|".join("---" if f == "s" else "---:" for _, _, f in columns) + "|"
    lines = [head, sep]
    for r in rows:
        cells = []
        for k, _, f in columns:
            v = r.get(k)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                cells.append("-")
            else:
                cells.append(format(v, f))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
