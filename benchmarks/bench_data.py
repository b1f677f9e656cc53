"""Read en-brown/train.conllu.gz and build its input and output views; print a table.

Each repetition runs the whole step (read, SuffixView(2, 3, 4), TagNgramView(orders 1, 2)) in a
fresh Python process, times each part inside it, and takes the peak RSS of that process from
its own ``VmHWM`` at its end (``memory/_harness.peak_rss_bytes``, as the other scripts do: the
kernel's ``ru_maxrss`` of a child starts from the parent's RSS at fork time, so it overstates
a small child of a large parent; ``ru_maxrss`` is the fallback where there is no ``VmHWM``).
``resource.getrusage(RUSAGE_CHILDREN)``, the maximum over all children, is printed as a
cross-check.

Targets on the 2-core reference machine: read <= 2 s, each view <= 3 s, peak RSS <= 1.5 GB.
``--repeat 1 --dtype float32`` is the smallest run (one process, ~3 s; the tests run it).

Usage::

    python benchmarks/bench_data.py [--repeat 3] [--dtype float64 float32] [--extra]

Exit status (``_data_check.py``): 0 when every measurement ran, missed targets included (they
are marked NOT MET in the output); 1 when a child failed; 2 on a usage error; 3 when en-brown
train is missing (one line naming it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from _data_check import require  # noqa: E402  (benchmarks/ is the script's dir)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BROWN_TRAIN = SHARED_DATA / "en-brown" / "train.conllu.gz"

TARGETS = {"read": 2.0, "view": 3.0, "rss_mb": 1536.0}

_CHILD = r"""
import json, resource, sys, time
import numpy as np
sys.path.insert(0, sys.argv[4])  # benchmarks/memory: the peak RSS of the other scripts
from _harness import peak_rss_bytes
from sparsecca.data import read_conllu
from sparsecca.features import JointView, SuffixView, TagNgramView

path, dtype, names = sys.argv[1], np.dtype(sys.argv[2]), sys.argv[3].split(",")
out = {}
t = time.perf_counter()
corpus = read_conllu(path, tags="xpos")
out["read"] = time.perf_counter() - t
out["n_sentences"], out["n_tokens"] = corpus.n_sentences, corpus.n_tokens
make = {"suffix": lambda: SuffixView(lengths=(2, 3, 4), dtype=dtype),
        "tags": lambda: TagNgramView(orders=(1, 2), dtype=dtype),
        "suffix1234": lambda: SuffixView(lengths=(1, 2, 3, 4), dtype=dtype),
        "joint_suffix": lambda: JointView(kind="suffix", dtype=dtype),
        "joint_ngram": lambda: JointView(kind="ngram", dtype=dtype)}
views = [(name, make[name]()) for name in names]
keep = []
for name, view in views:
    t = time.perf_counter()
    X = view.fit_transform(corpus)
    out[name] = time.perf_counter() - t
    out[name + "_shape"], out[name + "_nnz"] = list(X.shape), int(X.nnz)
    keep.append(X)  # all matrices stay alive: the peak is that of the whole step
out["peak_rss_mb"] = peak_rss_bytes() / 2**20  # this process's own VmHWM
print(json.dumps(out))
"""


def run_step(dtype: str, views: list[str]) -> tuple[dict, float]:
    """One fresh process (read, then ``views``); returns its timings and peak RSS in MB."""
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(BROWN_TRAIN), dtype,
                             ",".join(views), str(Path(__file__).resolve().parent / "memory")],
                            stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, _ = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed with exit code {proc.returncode}")
    res = json.loads(out)
    # the child's own VmHWM; peak_rss_bytes falls back to ru_maxrss where there is none
    return res, res["peak_rss_mb"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per dtype")
    ap.add_argument("--dtype", nargs="+", default=["float64", "float32"],
                    choices=["float64", "float32"])
    ap.add_argument("--extra", action="store_true",
                    help="also time SuffixView(1,2,3,4) and both JointView kinds (not targeted), "
                         "in separate processes")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error(f"--repeat must be an int >= 1, got {args.repeat}")
    require(BROWN_TRAIN)  # exit 3 with one line (see _data_check.py)

    cols = ["read", "suffix", "tags"]
    head = f"{'dtype':8} {'run':>4} " + " ".join(f"{c + ' s':>10}" for c in cols) + \
        f" {'peak RSS MB':>12}"
    print(f"en-brown train ({BROWN_TRAIN}), XPOS tags; each run = the whole step "
          f"(read + SuffixView(2,3,4) + TagNgramView(1,2)) in a fresh process")
    print(head)
    print("-" * len(head))
    summary = []
    info = None
    for dtype in args.dtype:
        runs = []
        for r in range(args.repeat):
            res, rss = run_step(dtype, cols[1:])
            info = res
            runs.append((res, rss))
            print(f"{dtype:8} {r + 1:>4} " + " ".join(f"{res[c]:>10.3f}" for c in cols) +
                  f" {rss:>12.0f}")
        best = {c: min(res[c] for res, _ in runs) for c in cols}
        worst_rss = max(rss for _, rss in runs)
        print(f"{dtype:8} {'best':>4} " + " ".join(f"{best[c]:>10.3f}" for c in cols) +
              f" {worst_rss:>12.0f}  (best time, largest RSS)")
        summary.append((dtype, best, worst_rss))
    print()
    print(f"corpus: {info['n_sentences']} sentences, {info['n_tokens']} tokens")
    for c in cols[1:]:
        print(f"{c}: shape {tuple(info[c + '_shape'])}, nnz {info[c + '_nnz']}")
    if args.extra:
        extra = ["suffix1234", "joint_suffix", "joint_ngram"]
        print()
        print("extra views (not targeted; one fresh process per dtype: read + these views)")
        head = f"{'dtype':8} " + " ".join(f"{c + ' s':>16}" for c in extra) + \
            f" {'peak RSS MB':>12}"
        print(head)
        print("-" * len(head))
        for dtype in args.dtype:
            res, rss = run_step(dtype, extra)
            print(f"{dtype:8} " + " ".join(f"{res[c]:>16.3f}" for c in extra) +
                  f" {rss:>12.0f}")
        for c in extra:
            print(f"{c}: shape {tuple(res[c + '_shape'])}, nnz {res[c + '_nnz']}")
    all_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    print(f"cross-check: getrusage(RUSAGE_CHILDREN).ru_maxrss = {all_children:.0f} MB")
    print()
    ok = True
    for dtype, best, rss in summary:
        checks = [("read", best["read"], TARGETS["read"]),
                  ("suffix", best["suffix"], TARGETS["view"]),
                  ("tags", best["tags"], TARGETS["view"]),
                  ("peak RSS MB", rss, TARGETS["rss_mb"])]
        for name, val, target in checks:
            good = val <= target
            ok &= good
            print(f"target {dtype:8} {name:12} {val:9.3f} <= {target:7.1f}  "
                  f"{'met' if good else 'NOT MET'}")
    # a missed target is a result, not a failure (_data_check.py's convention, README)
    print("all targets met" if ok else "SOME TARGET NOT MET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
