"""The engine's sparse products in float64 and in float32, side by side in one run.

LOBPCG's steps at the randomized solver's tolerance work in float32 (``_lobpcg``); for
sparse uncentred factors the products there accumulate in float32 from float32 copies of
the values (the Gram product of C_xx, and a ``CrossCovariance`` cast with ``in_precision``),
which moves half the bytes of the float64 products.  The Gram product X^T X V is timed
through the public ``CrossCovariance(X, X)``, the same two passes over the rows of X.  This
prints, for one block width, the best-of-``repeat`` time of each product in both
precisions (both cores, as in a fit) and the float32 result's largest difference from the
float64 one, relative to the largest entry.

Cases: ``brown8k`` (en-brown train, X = SuffixView 1-4 + WordView restricted to its 8,000
most frequent columns, Y = TagNgramView XPOS 1-2; the block of k + k/2 = 112 columns of
``bench_linalg.py --cases brown8k``) and ``zipf20k`` (zipf-two-view 20K x 5K and 300, 75
columns).

Usage::

    python benchmarks/profile_single_products.py [--cases brown8k zipf20k] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data_check import require  # noqa: E402
from bench_linalg import data_paths, load  # noqa: E402

from sparsecca.linalg import in_precision  # noqa: E402

WIDTH = {"brown8k": 112, "zipf20k": 75}


def best(product, dtype, repeat):
    """(best time, result) of ``product(dtype)`` over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = product(dtype)
        times.append(time.perf_counter() - t)
    return min(times), out


def _product(op, V, transpose, dtype):
    """op V (op^T V with ``transpose``) with the products in ``dtype``."""
    op = in_precision(op, dtype)
    return op.rmatmat(V) if transpose else op.matmat(V)


def main():
    from sparsecca.linalg import CrossCovariance

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["brown8k", "zipf20k"],
                    choices=sorted(WIDTH))
    ap.add_argument("--repeat", type=int, default=5, help="timings per product (best shown)")
    args = ap.parse_args()
    # every case's data before the first timing; exit 3 with one line (see _data_check.py)
    require(*(p for case in args.cases
              for p in data_paths("path" if case == "zipf20k" else case)))
    print("| case | product | block | float64 s | float32 s | float64 / float32 "
          "| max reldiff |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for case in args.cases:
        X, Y, _, _ = load("path" if case == "zipf20k" else case)
        G = CrossCovariance(X, X)
        K = CrossCovariance(X, Y)
        b = WIDTH[case]
        rng = np.random.default_rng(0)
        V = rng.standard_normal((X.shape[1], b))
        W = rng.standard_normal((Y.shape[1], b))
        products = {
            "X^T X V": partial(_product, G, V, False),
            "C_xy W": partial(_product, K, W, False),
            "C_xy^T V": partial(_product, K, V, True),
        }
        for name, product in products.items():
            # the sparse products pin BLAS to one thread and share their row blocks
            # among the split threads themselves, as inside LOBPCG
            product(np.float32)  # the float32 copies of the values, formed once
            t64, ref = best(product, np.float64, args.repeat)
            t32, got = best(product, np.float32, args.repeat)
            diff = float(np.abs(got - ref).max() / np.abs(ref).max())
            print(f"| {case} | {name} | {b} | {t64:.4f} | {t32:.4f} | {t64 / t32:.2f}x "
                  f"| {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
