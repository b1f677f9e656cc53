"""Randomized and iterative solvers against the dense one on ALL of en-wsj train.

The engine issue's accuracy check at full size (the unit test subsamples 1,000-1,500 sentences
to stay inside the test budget): X = SuffixView(2-4) of en-wsj train (7,936 sentences),
Y = TagNgramView(XPOS, 1-2), k = 50, tau in {0.1, 0.5, 0.95}; targets: top-k correlations
within 1e-3 (randomized) and 1e-6 (iterative) relative of the dense solver.  One engine per
solver serves all three tau values (the dense one factors the n x n dual per tau; the
randomized one reuses its factor of X).  Prints, per solver and tau, the fit time, the largest
relative difference of the top-k correlations, and the rank / the strategy and its
iterations (LOBPCG steps, plus block CG iterations when it fell back to 'full').  Each
row also says whether the solver met its own tolerance (1e-3 randomized, 1e-7 iterative)
and whether its error estimate covered the measured difference.

``--features N`` keeps X's N most frequent columns (en-wsj with 2,000 is where LOBPCG's
estimate in the low-rank model's norm was 10x optimistic).  The solvers
``randomized-lowrank`` / ``iterative-lowrank`` precondition LOBPCG by the
low-rank-plus-diagonal model of C_xx^-1 whatever the size (``preconditioner='low-rank'``),
where the engine would use the dense factor of C_xx (``CCAEngine.exact_preconditioner_fits``),
for a side-by-side run; they also switch off the dense factor a stalled LOBPCG is otherwise
handed over to ("low-rank, then dense" in the preconditioner column).  ``iterative-exact`` /
``randomized-exact`` give LOBPCG the dense factor from the start (``preconditioner='dense'``),
past the engine's rule.

Each row names the step at which a LOBPCG that progressed badly under the model was
handed over to the dense factor (the engine's hand-over rule), when it was.  ``--skip-dense``
leaves the dense reference out (times, steps and hand-overs only): the form to time two
versions of the engine side by side.

Usage::

    python benchmarks/wsj_solver_accuracy.py [--solvers iterative randomized
        randomized-lowrank iterative-lowrank iterative-exact randomized-exact]
        [--max-rank R] [--features N] [--skip-dense]
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
from sparsecca.linalg import CCAEngine

WSJ = Path(__file__).resolve().parents[2] / "shared" / "data" / "en-wsj" / "train.conllu"
TAUS = (0.1, 0.5, 0.95)
K = 50
TARGET = {"randomized": 1e-3, "iterative": 1e-6}
SOLVERS = ("iterative", "randomized", "iterative-lowrank", "randomized-lowrank",
           "iterative-exact", "randomized-exact")
#: the preconditioner option of each solver label's suffix
PRECONDITIONER = {"lowrank": "low-rank", "exact": "dense"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--solvers", nargs="+", default=["iterative", "randomized"],
                    choices=SOLVERS)
    ap.add_argument("--max-rank", type=int, default=None,
                    help="cap of the randomized factor (default: the engine's)")
    ap.add_argument("--features", type=int, default=None,
                    help="keep X's N most frequent columns (default: all)")
    ap.add_argument("--skip-dense", action="store_true",
                    help="no dense reference: times, steps and hand-overs only")
    args = ap.parse_args(argv)
    if args.features is not None and args.features < 1:
        ap.error(f"--features must be >= 1, got {args.features}")
    require(WSJ)  # exit 3 with one line (see _data_check.py)
    corpus = read_conllu(WSJ, tags="xpos")
    X = SuffixView(lengths=(2, 3, 4), max_features=args.features).fit_transform(corpus)
    Y = TagNgramView(orders=(1, 2)).fit_transform(corpus)
    print(f"en-wsj train: X {X.shape[0]:,} x {X.shape[1]:,} (nnz {X.nnz:,}), "
          f"d2 = {Y.shape[1]:,}, k = {K}")
    t0 = time.perf_counter()
    ref = {} if args.skip_dense else _dense_reference(X, Y, t0)
    for label in args.solvers:
        _solve_all(label, X, Y, ref, args.max_rank)
    return 0


def _dense_reference(X, Y, t0):
    """tau -> the dense solver's correlations (printed with their times)."""
    dense = CCAEngine(X, Y, solver="dense")
    ref = {}
    for tau in TAUS:
        t = time.perf_counter()
        ref[tau] = dense.solve(Y, tau, K).correlations
        print(f"dense        tau={tau:<5} {time.perf_counter() - t:8.1f} s  "
              f"top-3 {np.round(ref[tau][:3], 6).tolist()}", flush=True)
    print(f"dense total {time.perf_counter() - t0:.1f} s (merged d1 = "
          f"{dense.n_merged_features_:,})")
    return ref


def _solve_all(label, X, Y, ref, max_rank):
    """One engine of solver ``label`` at every tau, a row each (against ``ref`` when
    given)."""
    solver, _, suffix = label.partition("-")
    engine = CCAEngine(X, Y, solver=solver, random_state=0, max_rank=max_rank,
                       preconditioner=PRECONDITIONER.get(suffix, "auto"))
    for tau in TAUS:
        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            res = engine.solve(Y, tau, K)
        dt = time.perf_counter() - t
        extra = (f"strategy {res.strategy}, {res.n_iter} iterations, preconditioner "
                 f"{res.preconditioner}")
        handed = getattr(res, "rescued_after", None)
        if handed is not None:
            extra += f" (handed over at step {handed})"
        if solver == "randomized":
            extra = f"rank {res.rank}, " + extra
        warn = " (warned: error estimate above tol)" if caught else ""
        if tau not in ref:
            print(f"{label:<18} tau={tau:<5} {dt:7.1f} s  estimate {res.error_estimate:.2e}  "
                  f"{extra}{warn}", flush=True)
            continue
        rel = float(np.max(np.abs(res.correlations - ref[tau]) / ref[tau]))
        ok = "met" if rel <= TARGET[solver] else "MISSED"
        own = "met" if rel <= engine.tol else "MISSED"
        covered = "covers" if res.error_estimate >= rel else "UNDERSTATES"
        print(f"{label:<18} tau={tau:<5} {dt:7.1f} s  max rel diff {rel:.2e} (target "
              f"{TARGET[solver]:g}: {ok}; own tol {engine.tol:g}: {own}; the "
              f"solver's estimate {res.error_estimate:.2e} {covered} it)  "
              f"{extra}{warn}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
