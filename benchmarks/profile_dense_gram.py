"""The dense Gram matrices the factorisations start from: scipy's one sparse product against
the engine's (``CrossCovariance.dense_product``: two row blocks summed up to
``Thresholds.pair_split_max_bytes`` of output, beyond it blocks of output rows on the split
threads from ``Thresholds.pair_output_split_min_flops`` multiply-adds).

For en-brown with its 8,000 most frequent input features (``bench_linalg.py``'s
``brown8k``) it times X^T X (the dense factor of C_xx; the engine merges duplicate columns
first), Y^T Y (C_yy's) and X^T Y, each way in turn, ``--repeat`` times, and prints the first
and the best time of each: the first large array a process writes pays the kernel's page
faults (with transparent huge pages, compaction too), later ones reuse the memory.  The
results must be equal (counts: exact sums).

Usage::

    python benchmarks/profile_dense_gram.py [--repeat 3] [--case brown8k]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data_check import require  # noqa: E402
from bench_linalg import data_paths, load  # noqa: E402


def main(argv=None):
    from sparsecca.linalg import CrossCovariance, Thresholds

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="brown8k", help="a bench_linalg.py case (en-brown)")
    ap.add_argument("--rows", type=int, default=None, help="first N sentences only")
    ap.add_argument("--repeat", type=int, default=3, help="timings of each way")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error(f"--repeat must be >= 1, got {args.repeat}")
    require(*data_paths(args.case))  # exit 3 with one line (see _data_check.py)
    X, Y, _, _ = load(args.case, n_rows=args.rows)
    X, Y = X.astype(np.float64), Y.astype(np.float64)
    ways = {"one product": lambda A, B: np.asarray((A.T @ B).toarray(), dtype=np.float64),
            "engine": lambda A, B: CrossCovariance(A, B).dense_product(max_dim=None)}
    print(f"{args.case}: X {X.shape[0]:,} x {X.shape[1]:,} (nnz {X.nnz:,}), "
          f"Y d2 = {Y.shape[1]:,}; split from {Thresholds().pair_output_split_min_flops:.0e} "
          f"multiply-adds")
    print("| product | multiply-adds | way | first s | best s |")
    print("|---|---:|---|---:|---:|")
    for name, (A, B) in {"X^T X": (X, X), "Y^T Y": (Y, Y), "X^T Y": (X, Y)}.items():
        flops = float(np.dot(np.diff(A.indptr), np.diff(B.indptr).astype(np.float64)))
        times = {way: [] for way in ways}
        results = {}
        for _ in range(args.repeat):
            for way, f in ways.items():
                t = time.perf_counter()
                results[way] = f(A, B)
                times[way].append(time.perf_counter() - t)
        a, b = results.values()
        if not np.array_equal(a, b):
            print(f"error: the two ways differ for {name}", file=sys.stderr)
            return 1
        for way, ts in times.items():
            print(f"| {name} | {flops:.2e} | {way} | {ts[0]:.2f} | {min(ts):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
