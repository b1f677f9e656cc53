"""Measurement harness of the memory-profiling scripts (no sparsecca import here).

Parent side
    :func:`run_child` runs one configuration in a fresh interpreter (so earlier runs leave no
    memory behind), collects the per-stage figures the child wrote and the child's whole-run
    peak RSS.  That peak is the child's own ``VmHWM`` (``/proc/self/status``, reported by the
    child at its end): the kernel's ``ru_maxrss`` of a child (``os.wait4``, and also
    ``getrusage(RUSAGE_SELF)`` inside it) starts from the RSS of the parent at fork/exec time,
    so it overstates a small child of a large parent.  ``ru_maxrss`` from ``os.wait4`` is the
    fallback (a killed child reports nothing) and is kept as ``wait4_maxrss_mb``.
Child side
    :class:`StageRecorder` times named stages and records, per stage, the peak RSS (a psutil
    sampling thread every 2 ms, completed by the process high-water mark -- ``VmHWM``, else
    ``ru_maxrss`` -- whenever it grew during the stage, which catches short peaks the sampler
    missed) and, when tracemalloc is
    on, the peak of the memory traced by tracemalloc (Python objects and NumPy buffers; not
    BLAS workspaces, numba's own allocator or the interpreter).  Without psutil the sampler
    reads ``/proc/self/statm`` (Linux), else it falls back to ``ru_maxrss`` alone.
Command line
    :func:`parse_sizes` (``--sizes 2000,5000`` or ``--sizes 2000 5000``), :func:`write_report`.
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


def peak_rss_bytes() -> int:
    """This process's peak RSS since exec: ``VmHWM`` of /proc/self/status (Linux), else
    ``ru_maxrss`` (which may include the parent's RSS at fork time, see the module doc)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return _maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF))


def machine_info() -> dict:
    import numpy as np
    import scipy

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    try:
        import psutil

        mem = psutil.virtual_memory().total / 2**30
    except ImportError:  # pragma: no cover
        try:
            mem = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
        except (ValueError, OSError, AttributeError):
            mem = float("nan")
    return {"python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "cpus": os.cpu_count(), "mem_gib": round(mem, 1),
            "loadavg": [round(x, 2) for x in load], "platform": platform.platform()}


# -- parent side ---------------------------------------------------------------------------

def run_child(argv: list[str], timeout: float | None = None, env: dict | None = None) -> dict:
    """Run ``python <argv> --result FILE`` and return the JSON the child wrote, plus
    ``child_maxrss_mb`` (whole-run peak RSS: the child's ``process_maxrss_mb`` when it wrote
    one, else ``os.wait4``'s ``ru_maxrss``), ``wait4_maxrss_mb`` and ``wall_s``.

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
                        "child_maxrss_mb": _maxrss_bytes(ru) / MB,
                        "wait4_maxrss_mb": _maxrss_bytes(ru) / MB}
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            return {"error": f"exit code {proc.returncode}", "argv": argv,
                    "child_maxrss_mb": _maxrss_bytes(ru) / MB,
                    "wait4_maxrss_mb": _maxrss_bytes(ru) / MB, "wall_s": wall}
        with open(result) as fh:
            out = json.load(fh)
        out["wait4_maxrss_mb"] = _maxrss_bytes(ru) / MB
        out["child_maxrss_mb"] = out.get("process_maxrss_mb", out["wait4_maxrss_mb"])
        out["wall_s"] = wall
        return out
    finally:
        if proc.poll() is None:  # pragma: no cover - interrupted
            proc.kill()
        Path(result).unlink(missing_ok=True)


# -- child side ----------------------------------------------------------------------------

def _rss_reader():
    """A function returning the current RSS in bytes: psutil, else /proc/self/statm, else
    the process maximum so far (ru_maxrss; then per-stage peaks are upper bounds)."""
    try:
        import psutil

        proc = psutil.Process()
        return lambda: int(proc.memory_info().rss)
    except ImportError:
        pass
    statm = Path("/proc/self/statm")
    if statm.is_file():
        page = os.sysconf("SC_PAGE_SIZE")
        return lambda: int(statm.read_text().split()[1]) * page
    return peak_rss_bytes  # pragma: no cover


class _Sampler(threading.Thread):
    """Peak RSS since the last ``reset``, sampled every ``interval`` seconds."""

    def __init__(self, interval: float = 0.002):
        super().__init__(daemon=True)
        self.rss = _rss_reader()
        self.interval = interval
        self.peak = self.rss()
        self._stop = threading.Event()
        self._lock = threading.Lock()

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
        max_before = peak_rss_bytes()
        if self.trace:
            tracemalloc.reset_peak()
            traced0 = tracemalloc.get_traced_memory()[0]
        t = time.perf_counter()
        yield info
        dt = time.perf_counter() - t
        peak = self._sampler.read()
        max_after = peak_rss_bytes()
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
               "process_maxrss_mb": peak_rss_bytes() / MB,
               "tracemalloc": self.trace, **(extra or {})}
        with open(path, "w") as fh:
            json.dump(out, fh)


# -- command line --------------------------------------------------------------------------

def parse_sizes(values) -> list[int]:
    """``["2000,5000", "10000"]`` -> ``[2000, 5000, 10000]`` (argparse ``nargs="+"`` values;
    ``_`` digit separators and a ``K`` suffix are accepted: ``5K`` = 5000)."""
    out = []
    for v in values if isinstance(values, (list, tuple)) else [values]:
        for part in str(v).replace(",", " ").split():
            part = part.replace("_", "")
            mult = 1000 if part[-1] in "kK" else 1
            out.append(int(float(part[:-1] if mult > 1 else part) * mult))
    if not out or min(out) < 1:
        raise ValueError(f"sizes must be positive integers, got {values!r}")
    return out


def write_report(path: Path, markdown: str, data: dict) -> None:
    """``--out``: JSON (``data``) when the name ends in .json, else the Markdown text."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".json":
        path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    else:
        path.write_text(markdown.rstrip("\n") + "\n")


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
