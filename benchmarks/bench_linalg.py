"""Fit time and peak memory of the CCA engine (sparsecca.linalg) next to the dense reference.

Every fit runs in its own subprocess, so the peak RSS printed is that of one fit (the child's
``VmHWM``: interpreter + libraries + data + the fit; the RSS just before the fit is printed
too, so the fit's own share is visible).  A warm-up fit on a few rows runs before the timed
fit (``--cold`` leaves it out, as in a user's script; ``--trace`` adds the fit's tracemalloc
peak).  The engine is scipy only: ``--cold`` prints whether the fit loaded numba (it must
not).  The dense reference is the paper's method: dense Cholesky of Cxx (or of the n x n
dual when n < d1) and an eigendecomposition of the reduced d2 x d2 problem.

Cases (k, tau as in the issue):

* ``zipf20k``  zipf-two-view 20K x 5K (d2 = 300), k = 50, tau = 0.5, uncentred.
  Targets: fit <= 0.5 s and <= 200 MB.
* ``zipf50k``  zipf-two-view 50K x 30K, same settings.  Target: fit <= 10 s and <= 1 GB,
  >= 15x faster than the dense reference at matching top-k eigenvalues (the dense run takes
  ~150 s and ~7.4 GB; ``--skip-dense`` leaves it out).
* ``brown``    en-brown train (51,606 sentences): X = SuffixView(1-4) + WordView, Y =
  TagNgramView(XPOS, 1-2), k = 75, tau = 0.5.  Target: solver='randomized' <= 60 s, <= 3 GB.
  The dense solver does not fit it: with ``--solvers iterative randomized`` the iterative
  solver (exact to 1e-7) runs first and is the reference (likewise for any case without
  its dense run).
* ``brown8k``  the same with the 8,000 most frequent input features, dense side by side.
  Target: >= 20x faster than dense at matching top-k correlations.  (``brown<N>k``: the N,000
  most frequent; ``plot_solver_scaling.py`` sweeps N.)
* ``paper<N>k`` the first N,000 en-brown sentences with the paper's views: X =
  SuffixView(2-4), Y = TagNgramView(XPOS, 1-2), k = 50, tau = 0.9, max_rank 512 (asv's
  ``SparseCCAFitLarge``); no dense run (the iterative solver is the reference).  Where the
  randomized solver's error estimate understated its error (see ``-certify``).
* ``path``     a 5-value tau grid (fit_path) against one fit, zipf 20K, for each solver of
  ``--solvers`` (the randomized one with max_rank 512: its factor of X and X^T Y are shared
  by the grid, and each tau's LOBPCG refinement starts from the previous tau's block) and,
  unless ``--skip-dense``, the dense one.  Target (randomized): <= 1.5x.  ``--pairs N`` times
  N alternating single-fit / grid pairs of the randomized solver and prints the median ratio.

Solvers: ``dense``, ``randomized``, ``iterative``, and ``randomized-lowrank`` /
``iterative-lowrank``: the same solvers with LOBPCG always preconditioned by the
low-rank-plus-diagonal model of C_xx^-1 (``preconditioner='low-rank'``), where the library
uses the dense factor of C_xx (``CCAEngine.exact_preconditioner_fits``: min(n, d1) <=
min(8192, max(d2, 2048)); the brown1k-8k cases), so that the two preconditioners run side
by side; ``randomized-certify`` / ``iterative-certify``: ``certify=True``, LOBPCG's stopping
test checked in the exact C_xx^-1 norm where the model preconditions it.

``--center`` fits every case centred (``SparseCCA(center=True)``, the dense reference too;
the issue's targets are for the uncentred fits).

The first and last lines give the machine's speed (``_machine.py``: a float64 GEMM, a sparse
CSR product and memory reads, timed in the parent before and after the fits): the reference
machine's varies from day to day, so a time compares with another run's only at a similar
speed.

Usage::

    python benchmarks/bench_linalg.py [--cases zipf20k zipf50k brown brown8k path]
                                      [--skip-dense] [--solvers iterative randomized]
                                      [--cold] [--trace] [--verbose] [--center]
                                      [--pairs N] [--json PATH]

The raw rows (every child's result) are written only with ``--json PATH``.

Exit status (``_data_check.py``): 0 every fit ran, 1 a child failed (after the table), 2 a
usage error, 3 a data file of the chosen cases is missing (one line naming it, nothing run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _data_check import EXIT_FAILED, require  # noqa: E402  (benchmarks/ is the script's dir)
from _machine import machine_line, machine_speed  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TAUS_PATH = [0.1, 0.3, 0.5, 0.7, 0.9]


# -- data ----------------------------------------------------------------------------------

def data_paths(case):
    """The files ``load(case)`` reads (checked before any child starts)."""
    if case.startswith("zipf") or case == "path":
        size = "50000_30000" if case == "zipf50k" else "20000_5000"
        d = SHARED_DATA / "zipf-two-view"
        return [d / f"X_{size}.npz", d / f"Y_{size.split('_')[0]}_300.npz"]
    return [SHARED_DATA / "en-brown" / "train.conllu.gz"]


def load(case, n_rows=None):
    """(X, Y, k, tau) of a case; ``brown<N>k`` is en-brown with its N,000 most frequent input
    features (brown8k the issue's), ``n_rows`` its first rows only (smoke tests)."""
    import re

    import scipy.sparse as sp

    if case.startswith("zipf") or case == "path":
        size = "50000_30000" if case == "zipf50k" else "20000_5000"
        n = size.split("_")[0]
        d = SHARED_DATA / "zipf-two-view"
        X = sp.load_npz(d / f"X_{size}.npz").tocsr()
        Y = sp.load_npz(d / f"Y_{n}_300.npz").tocsr()
        return X, Y, 50, 0.5
    from sparsecca.data import read_conllu
    from sparsecca.features import HStackView, SuffixView, TagNgramView, WordView

    paper = re.fullmatch(r"paper(\d+)k", case)  # thousands of sentences, the paper's views
    kept = re.fullmatch(r"brown(?:(\d+)k)?", case)  # thousands of input features kept
    if kept is None and paper is None:
        raise ValueError(f"unknown case {case!r}")
    corpus = read_conllu(SHARED_DATA / "en-brown" / "train.conllu.gz", tags="xpos")
    if paper is not None:
        corpus = corpus[:n_rows or 1000 * int(paper.group(1))]
        X = SuffixView(lengths=(2, 3, 4)).fit_transform(corpus)
        return X, TagNgramView(orders=(1, 2)).fit_transform(corpus), 50, 0.9
    if n_rows:
        corpus = corpus[:n_rows]
    d = 1000 * int(kept.group(1)) if kept.group(1) else None
    X = HStackView([SuffixView(lengths=(1, 2, 3, 4)), WordView()],
                   max_features=d).fit_transform(corpus)
    Y = TagNgramView(orders=(1, 2)).fit_transform(corpus)
    return X, Y, 75, 0.5


# -- child: one fit ------------------------------------------------------------------------

def rss_mb():
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:  # pragma: no cover
        return float("nan")


def peak_rss_mb():
    """This process's peak RSS (VmHWM, see memory/_harness.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "memory"))
    from _harness import peak_rss_bytes

    return peak_rss_bytes() / 2**20


def child(spec):
    from sparsecca.linalg import SparseCCA

    # '-lowrank': the model's preconditioner whatever the size (the library's rule off);
    # '-certify': the stopping test checked in the exact norm (SparseCCA(certify=True))
    solver, _, variant = spec["solver"].partition("-")

    rss_imports = rss_mb()
    X, Y, k, tau = load(spec["case"], spec.get("n_rows"))
    k = min(k, X.shape[1], Y.shape[1])
    rss_data = rss_mb()
    kw = dict(solver=solver, random_state=0, verbose=1 if spec.get("verbose") else 0,
              center=bool(spec.get("center")),
              preconditioner="low-rank" if variant == "lowrank" else "auto",
              certify=variant == "certify")
    if spec.get("max_rank"):
        kw["max_rank"] = spec["max_rank"]
    elif spec["case"].startswith("paper"):
        kw["max_rank"] = 512
    if not spec.get("cold"):
        # warm-up: first calls (lazy imports, thread pools) on a few rows
        m = min(2000, X.shape[0])
        Xw, Yw = X[:m], Y[:m]
        keep = np.asarray(Xw.sum(axis=0)).ravel() > 0
        SparseCCA(2, tau=tau, solver=solver, random_state=0,
                  center=kw["center"]).fit(Xw[:, keep][:, :500], Yw)
    rss0 = rss_mb()
    import tracemalloc
    import warnings

    if spec.get("trace"):
        tracemalloc.start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = time.perf_counter()
        if spec.get("path"):
            models = SparseCCA(k, **kw).fit_path(X, Y, TAUS_PATH)
            model = models[TAUS_PATH.index(tau)]
        else:
            model = SparseCCA(k, tau=tau, **kw).fit(X, Y)
        elapsed = time.perf_counter() - t
    traced = tracemalloc.get_traced_memory()[1] / 2**20 if spec.get("trace") else None
    tracemalloc.stop()
    peak = peak_rss_mb()
    out = dict(spec, n=X.shape[0], d1=X.shape[1], d2=Y.shape[1], k=k, tau=tau, time=elapsed,
               peak_mb=peak, rss_before_mb=rss0, rss_imports_mb=rss_imports,
               rss_data_mb=rss_data, traced_peak_mb=traced, solver_used=model.solver_,
               numba_loaded="numba" in sys.modules,
               rank=model.rank_, n_iter=model.n_iter_, error_estimate=model.error_estimate_,
               d1_merged=int(model.n_merged_features_),
               correlations=model.correlations_.tolist(),
               empirical=model.empirical_correlations_[:5].tolist(),
               warnings=sorted({str(w.message)[:120] for w in caught}))
    print("RESULT " + json.dumps(out))


def run_child(spec):
    env = dict(os.environ)
    cmd = [sys.executable, __file__, "--child", json.dumps(spec)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if spec.get("verbose"):  # the timed fit's stage lines (SparseCCA(verbose=1))
        for line in (proc.stdout + proc.stderr).splitlines():
            if line.startswith("[sparsecca]"):
                print("         " + line, flush=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
            res["wall"] = wall
            return res
    sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-4000:])
    return dict(spec, error=f"child failed (exit {proc.returncode})")


# -- parent: the table ---------------------------------------------------------------------

def fmt_row(r, ref):
    if "error" in r:
        return f"{r['case']:8s} {r['solver']:10s}  FAILED: {r['error']}"
    c = np.array(r["correlations"])
    if ref is not None and "error" not in ref and ref is not r:
        cr = np.array(ref["correlations"])
        diff = f"{np.max(np.abs(c - cr) / cr):9.2e}"
        ratio = f"{ref['time'] / r['time']:7.1f}x"
    else:
        diff, ratio = "        -", "       -"
    extra = f"r={r['rank']}" if r["rank"] else (f"it={r['n_iter']}" if r["n_iter"] else "")
    if r["rank"] and r["n_iter"]:
        extra = f"r={r['rank']},it={r['n_iter']}"
    label = r["solver"] + ("+path" if r.get("path") else "")
    # the solver's own a-posteriori estimate, to set beside the measured difference
    est = f"{r['error_estimate']:9.2e}" if r.get("error_estimate") is not None else " " * 9
    return (f"{r['case']:8s} {label:15s} {r['n']:>6d}x{r['d1']:<6d} {r['d2']:>5d} {r['k']:>3d} "
            f"{r['time']:8.2f} {r['peak_mb']:8.0f} {r['rss_before_mb']:8.0f} {diff} {est} "
            f"{ratio} {extra:>14s}  " + " ".join(f"{x:.4f}" for x in c[:5]))


HEADER = (f"{'case':8s} {'solver':15s} {'n x d1':>13s} {'d2':>5s} {'k':>3s} {'fit s':>8s} "
          f"{'peak MB':>8s} {'pre MB':>8s} {'max reldiff':>9s} {'estimate':>9s} {'speedup':>8s} "
          f"{'rank/iters':>14s}  top-5 sqrt(omega)")


def path_pairs(args, measure):
    """``--pairs`` alternating single-fit / tau-grid runs of the randomized solver on ``path``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``pairs``, ``max_rank``, ``center``).
    measure : callable
        Runs one child from its spec and returns its row (``{"error": ...}`` if it failed).

    Returns
    -------
    list of dict
        Every row measured, single fits and grids alternating; each pair's ratio and their
        median are printed.
    """
    # a fixed rank cap, so that the grid and the single fit use the same factor size
    mr = args.max_rank or 512
    # alternating single / grid processes: the machine's slow phases last seconds to
    # minutes, and a single pair's ratio moved between 1.33x and 1.76x
    ratios, rows = [], []
    for _ in range(args.pairs):
        single = measure(dict(case="path", solver="randomized", max_rank=mr,
                              center=args.center))
        grid = measure(dict(case="path", solver="randomized", max_rank=mr, path=True,
                            center=args.center))
        for r in (single, grid):
            print(fmt_row(r, None), flush=True)
        rows += [single, grid]
        if "error" not in single and "error" not in grid:
            ratios.append(grid["time"] / single["time"])
            print(f"path     5-value tau grid / one fit = {ratios[-1]:.2f}x "
                  f"(target <= 1.5x)", flush=True)
    if len(ratios) > 1:
        print(f"path     median of {len(ratios)} alternating pairs: "
              f"{np.median(ratios):.2f}x (range {min(ratios):.2f}-{max(ratios):.2f}x; "
              f"target <= 1.5x)", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # internal: the parent passes one fit's spec (JSON) to each child process; not a user flag
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--cases", nargs="+", default=["zipf20k", "zipf50k", "brown8k", "brown",
                                                    "path"])
    ap.add_argument("--solvers", nargs="+", default=["iterative", "randomized"],
                    choices=["dense", "randomized", "iterative", "randomized-lowrank",
                             "iterative-lowrank", "randomized-certify",
                             "iterative-certify"])
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--pairs", type=int, default=1,
                    help="path: time this many alternating single-fit / grid pairs of the "
                         "randomized solver (when in --solvers) and print their median ratio")
    ap.add_argument("--max-rank", type=int, default=None,
                    help="cap of the randomized factor (default: the library's)")
    ap.add_argument("--cold", action="store_true",
                    help="no warm-up fit: the timed fit pays the first calls, as a "
                         "user's script does; prints the RSS after the imports and the data")
    ap.add_argument("--verbose", action="store_true",
                    help="print the timed fit's stages (SparseCCA(verbose=1): the C_yy "
                         "factor, the factor of X, LOBPCG progress)")
    ap.add_argument("--center", action="store_true",
                    help="fit centred (SparseCCA(center=True)), the dense reference too")
    ap.add_argument("--json", type=Path, default=None, metavar="PATH",
                    help="also write the raw rows (one per fit, failed ones included) as JSON "
                         "to PATH (default: no file)")
    ap.add_argument("--trace", action="store_true",
                    help="also record the fit's tracemalloc peak (NumPy buffers and Python "
                         "objects; not numba's or BLAS's own memory)")
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    if args.pairs < 1:
        ap.error(f"--pairs must be an int >= 1, got {args.pairs}")
    require(*(p for case in args.cases for p in data_paths(case)))
    # the machine's speed before and after: seconds are comparable across runs only at equal
    # speed (the shared VM's varies from day to day), ratios within the run need no such line
    speed = machine_speed()
    print(machine_line(speed), flush=True)
    print(HEADER)
    rows = []
    failed = []  # children that failed: the exit status says so after the table

    def measure(spec):
        r = run_child(spec)
        if "error" in r:
            failed.append(r)
        return r

    for case in args.cases:
        if case == "path":
            # --solvers decides which grids run, as it decides the other cases' rows (the
            # randomized pairs ran whatever it said); dense, as there, unless --skip-dense
            if "randomized" in args.solvers:
                rows += path_pairs(args, measure)
            others = [s for s in args.solvers if s not in ("randomized", "dense")]
            if not args.skip_dense or "dense" in args.solvers:
                others.append("dense")
            for solver in others:
                s1 = measure(dict(case="path", solver=solver, center=args.center))
                s5 = measure(dict(case="path", solver=solver, path=True,
                                    center=args.center))
                for r in (s1, s5):
                    print(fmt_row(r, None), flush=True)
                if "error" not in s1 and "error" not in s5:
                    print(f"path     {solver}: 5-value tau grid / one fit = "
                          f"{s5['time'] / s1['time']:.2f}x", flush=True)
                rows += [s1, s5]
            continue
        solvers = list(args.solvers)
        # all of en-brown: too large; the paper's views of en-brown: the iterative reference
        want_dense = case != "brown" and not case.startswith("paper") and not args.skip_dense
        ref = None
        if want_dense:
            ref = measure(dict(case=case, solver="dense", center=args.center))
            print(fmt_row(ref, None), flush=True)
            rows.append(ref)
        elif "iterative" in solvers:
            # no dense reference (all of en-brown does not fit it): the iterative solver,
            # exact to its tol (1e-7), runs first and is the others' reference
            solvers = ["iterative"] + [s for s in solvers if s != "iterative"]
            print(f"{case:8s} (max reldiff and speed-up against the iterative solver)",
                  flush=True)
        for solver in solvers:
            r = measure(dict(case=case, solver=solver, max_rank=args.max_rank,
                               cold=args.cold, trace=args.trace, verbose=args.verbose,
                               center=args.center))
            if ref is None and solver == "iterative" and "error" not in r:
                print(fmt_row(r, None), flush=True)
                ref = r
                rows.append(r)
                continue
            print(fmt_row(r, ref), flush=True)
            if "error" not in r and (args.cold or args.trace):
                traced = ("" if r["traced_peak_mb"] is None
                          else f", fit's traced peak {r['traced_peak_mb']:.0f} MB")
                print(f"         {'cold: ' if args.cold else ''}RSS after imports "
                      f"{r['rss_imports_mb']:.0f} MB, after the data {r['rss_data_mb']:.0f} MB"
                      f"{traced}; numba loaded: {'yes' if r['numba_loaded'] else 'no'}",
                      flush=True)
            for w in r.get("warnings", []):
                print(f"         warning: {w}", flush=True)
            rows.append(r)
    after = machine_speed()
    print(machine_line(after, "machine (after the runs)"), flush=True)
    if args.json is not None:  # only when asked: a fixed default path was clobbered
        for r in rows:
            r["machine"] = {"before": speed, "after": after}
        args.json.write_text(json.dumps(rows, indent=1))
        print(f"(raw results: {args.json})")
    if failed:
        print(f"{len(failed)} measurement(s) FAILED", file=sys.stderr)
        sys.exit(EXIT_FAILED)


if __name__ == "__main__":
    main()
