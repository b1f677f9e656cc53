"""SparseCCA on row-chunked Dask views against the same fit in memory, side by side (#35).

en-wsj train (X = SuffixView 2-4, Y = TagNgramView XPOS 1-2, as in wsj_solver_accuracy.py),
k = 50, tau = 0.5 by default.  For each solver, fits alternate between the in-memory views
and the same views as Dask arrays of ``--chunks`` row chunks (a fresh estimator each time, so
every Dask fit persists its chunks, reduces the statistics and solves), on the threads
scheduler or on a LocalCluster of two single-threaded worker processes (``--cluster``).
Prints, per solver, the median time of each, the median of the pairwise ratios Dask /
in-memory (and their range), the top correlations of both, their largest relative
difference, the Dask fit's error estimate and whether a warning was raised.

Usage::

    python benchmarks/dask_solve.py [--solvers dense iterative randomized] [--repeat 3]
        [--chunks 4] [--tau 0.5] [--sentences N] [--cluster]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _data_check import require  # noqa: E402  (benchmarks/ is the script's dir)

from sparsecca.data import read_conllu
from sparsecca.features import SuffixView, TagNgramView
from sparsecca.linalg import SparseCCA

WSJ = Path(__file__).resolve().parents[2] / "shared" / "data" / "en-wsj" / "train.conllu"
K = 50


def _fit(X, Y, solver, tau):
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        est = SparseCCA(K, tau=tau, solver=solver, random_state=0).fit(X, Y)
    return time.perf_counter() - t, est, [str(w.message) for w in caught]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--solvers", nargs="+", default=["dense", "iterative", "randomized"],
                    choices=["auto", "dense", "iterative", "randomized"])
    ap.add_argument("--repeat", type=int, default=3, help="alternating pairs per solver")
    ap.add_argument("--chunks", type=int, default=4, help="row chunks of the Dask views")
    ap.add_argument("--tau", type=float, default=0.5)
    ap.add_argument("--sentences", type=int, default=None,
                    help="keep the first N training sentences (default: all)")
    ap.add_argument("--cluster", action="store_true",
                    help="a LocalCluster (2 worker processes, 1 thread each) instead of "
                         "the threads scheduler")
    args = ap.parse_args(argv)
    if min(args.repeat, args.chunks, args.sentences or 1) < 1:
        ap.error(f"--repeat, --chunks and --sentences must be >= 1, got {args.repeat}, "
                 f"{args.chunks} and {args.sentences}")
    require(WSJ)  # exit 3 with one line (see _data_check.py)
    import dask
    import dask.array as da

    corpus = read_conllu(WSJ, tags="xpos")
    if args.sentences is not None:
        corpus = corpus[:args.sentences]
    X = SuffixView(lengths=(2, 3, 4)).fit_transform(corpus)
    Y = TagNgramView(orders=(1, 2)).fit_transform(corpus)
    rows = -(-X.shape[0] // args.chunks)
    Xd = da.from_array(X, chunks=(rows, -1), asarray=False)
    Yd = da.from_array(Y, chunks=(rows, -1), asarray=False)
    client = cluster = None
    if args.cluster:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
        where = "LocalCluster (2 processes x 1 thread)"
    else:
        dask.config.set(scheduler="threads")
        where = "threads scheduler"
    print(f"en-wsj train: X {X.shape[0]:,} x {X.shape[1]:,} (nnz {X.nnz:,}), d2 = "
          f"{Y.shape[1]:,}, k = {K}, tau = {args.tau}; Dask: {Xd.numblocks[0]} row chunks "
          f"on the {where}; {args.repeat} alternating pairs per solver", flush=True)
    try:
        for solver in args.solvers:
            mem, dsk, ratios = [], [], []
            for i in range(args.repeat):
                order = ((X, Y, mem), (Xd, Yd, dsk))
                for A, B, out in (order if i % 2 == 0 else order[::-1]):
                    out.append(_fit(A, B, solver, args.tau))
                ratios.append(dsk[-1][0] / mem[-1][0])
            em, ed = mem[-1][1], dsk[-1][1]
            rel = float(np.max(np.abs(ed.correlations_ - em.correlations_)
                               / em.correlations_))
            warned = "; ".join(w[:90] for w in dsk[-1][2]) or "none"
            print(f"{solver:<10} in memory {np.median([m[0] for m in mem]):7.2f} s, Dask "
                  f"{np.median([d[0] for d in dsk]):7.2f} s: ratio {np.median(ratios):.2f} "
                  f"(pairs {min(ratios):.2f}-{max(ratios):.2f})\n"
                  f"{'':<10} top-3 in memory {np.round(em.correlations_[:3], 6).tolist()}, "
                  f"Dask {np.round(ed.correlations_[:3], 6).tolist()}; max rel diff "
                  f"{rel:.2e}; Dask error estimate {ed.error_estimate_:.2e} (in memory "
                  f"{em.error_estimate_:.2e}); Dask warnings: {warned}\n"
                  f"{'':<10} {ed.solver_reason_}", flush=True)
    finally:
        if client is not None:
            client.close()
            cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
