"""Fit time and peak memory of the three solvers as the input dimension d1 grows.

The picture of where the dense solver (the paper's method) stops being an option.  en-brown
train (51,606 sentences), X = SuffixView(1-4) + WordView restricted to its d1 most frequent
features, Y = TagNgramView(XPOS, 1-2) (d2 = 8,469), k = 75, tau = 0.5, uncentred: the
``brown<N>k`` cases of ``bench_linalg.py`` ("all" is its ``brown`` case, every feature), each
fit in its own process (``bench_linalg.run_child``: a warm-up fit on a few rows, the timed
fit, the child's peak RSS).  The dense solver runs while d1 <= ``--dense-max`` thousand: its
d1 x d1 and d2 x d2 factors and the full reduced eigenproblem cost O(d^3) time and O(d^2)
memory.  Each fit's error is the largest relative difference of its top-k correlations from
the dense fit of the same problem or, where the dense solver did not run, from the
iterative solver's (exact to 1e-7).

Prints a markdown table, writes the rows as JSON (``--json``) and a two-panel log-log figure
(``--out``; needs matplotlib).  A dashed line marks the largest d1 at which the fast solvers
precondition LOBPCG by the dense factor of C_xx (``CCAEngine.exact_preconditioner_fits``;
beyond it, by the low-rank-plus-diagonal model).  ``--replot FILE`` redraws the figure and
the table from a ``--json`` file without fitting.

Usage::

    python benchmarks/plot_solver_scaling.py [--sizes 1 2 4 8 16 all] [--dense-max 8]
        [--solvers dense iterative randomized] [--out docs/solver_scaling.png] [--json FILE]
    python benchmarks/plot_solver_scaling.py --replot FILE --out docs/solver_scaling.png

Exit status (``_data_check.py``): 0 every fit ran, 1 a fit failed (after the table and the
--json/--out files), 2 a usage error, 3 en-brown is missing (one line naming it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_linalg  # noqa: E402  (the child runner and the cases)
from _data_check import EXIT_FAILED, require  # noqa: E402

SOLVERS = ("dense", "iterative", "randomized")
STYLE = {"dense": ("tab:red", "s"), "iterative": ("tab:blue", "o"),
         "randomized": ("tab:green", "^")}


def _case(size):
    return "brown" if size == "all" else f"brown{int(size)}k"


def _max_reldiff(r, ref):
    c, cr = np.asarray(r["correlations"]), np.asarray(ref["correlations"])
    return float(np.max(np.abs(c - cr) / cr))


def run(sizes, solvers, dense_max, n_rows=None):
    """One row per (size, solver) fit, with its error against the size's reference."""
    rows = []
    for size in sizes:
        small = size != "all" and int(size) <= dense_max
        ref = None
        for solver in (s for s in SOLVERS if s in solvers):
            if solver == "dense" and not small:
                continue
            r = bench_linalg.run_child(dict(case=_case(size), solver=solver, n_rows=n_rows))
            r["size"] = size
            if "error" in r:
                print(f"  {_case(size)} {solver}: FAILED ({r['error']})", flush=True)
                rows.append(r)
                continue
            if ref is None:  # dense first, else iterative: the size's reference
                ref = r
                r["reference"] = None
            else:
                r["reference"] = ref["solver"]
                r["max_reldiff"] = _max_reldiff(r, ref)
            print(f"  d1 = {r['d1']:>6,d} {solver:10s} {r['time']:8.2f} s "
                  f"{r['peak_mb']:7.0f} MB", flush=True)
            rows.append(r)
    return rows


def table(rows):
    lines = ["| d1 | solver | fit (s) | peak RSS (MB) | max rel. diff of the top-k "
             "correlations | against | LOBPCG steps | dense / this |",
             "|---:|---|---:|---:|---:|---|---:|---:|"]
    dense = {r["size"]: r for r in rows if r["solver"] == "dense" and "error" not in r}
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['size']} | {r['solver']} | failed | | | | | |")
            continue
        diff = "-" if r.get("reference") is None else f"{r['max_reldiff']:.1e}"
        against = r.get("reference") or "(reference)"
        d = dense.get(r["size"])
        ratio = f"{d['time'] / r['time']:.1f}x" if d is not None and d is not r else "-"
        lines.append(f"| {r['d1']:,} | {r['solver']} | {r['time']:.2f} | {r['peak_mb']:,.0f} | "
                     f"{diff} | {against} | {r['n_iter'] or '-'} | {ratio} |")
    return "\n".join(lines)


def exact_preconditioner_edge(n, d2):
    """The largest min(n, d1) preconditioned by the dense factor of C_xx
    (``CCAEngine.exact_preconditioner_fits``).  The rule counts d1 after merging duplicate
    columns and the figure's axis before (en-brown's 8,000 most frequent features are 7,273
    columns after merging), so the true edge on that axis lies at or right of this."""
    from sparsecca.linalg import Thresholds

    t = Thresholds()

    return min(t.exact_precond_max, max(min(n, d2), t.exact_precond_small))


def plot(rows, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if "error" not in r]
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4.2))
    for solver in SOLVERS:
        rs = sorted((r for r in ok if r["solver"] == solver), key=lambda r: r["d1"])
        if not rs:
            continue
        colour, marker = STYLE[solver]
        d1 = [r["d1"] for r in rs]
        ax_t.plot(d1, [r["time"] for r in rs], marker=marker, color=colour, label=solver)
        ax_m.plot(d1, [r["peak_mb"] / 1024 for r in rs], marker=marker, color=colour,
                  label=solver)
    for ax, label in ((ax_t, "fit time (s), log scale"),
                      (ax_m, "peak RSS of the fit's process (GB)")):
        ax.set_xscale("log")
        ax.set_xlabel("input features d1 (the most frequent), log scale")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.set_yscale("log")
    ax_m.set_ylim(bottom=0)
    r0 = ok[0]
    edge = exact_preconditioner_edge(r0["n"], r0["d2"])
    for ax in (ax_t, ax_m):
        ax.axvline(edge, color="grey", linestyle="--", linewidth=1,
                   label=f"d1 = {edge:,}: dense C_xx preconditioner up to here")
    ax_t.legend(fontsize=8)
    fig.suptitle(f"SparseCCA on en-brown train: n = {r0['n']:,}, d2 = {r0['d2']:,}, "
                 f"k = {r0['k']}, tau = {r0['tau']:g} (2-core machine)", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["1", "2", "4", "8", "16", "all"],
                    help="input features in thousands, or 'all'")
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)
    ap.add_argument("--dense-max", type=float, default=8,
                    help="largest d1 (thousands) given to the dense solver")
    ap.add_argument("--out", type=Path, default=None, help="figure (PNG); needs matplotlib")
    ap.add_argument("--json", type=Path, default=None, help="the rows as JSON")
    ap.add_argument("--n-rows", type=int, default=None,
                    help="the first N sentences only (a smoke test, not the figure)")
    ap.add_argument("--replot", type=Path, default=None,
                    help="redraw the table and figure from this --json file, fitting nothing")
    args = ap.parse_args()
    if args.replot is not None:
        rows = json.loads(args.replot.read_text())
        print(table(rows))
        if args.out:
            plot(rows, args.out)
            print(f"\nfigure: {args.out}")
        return
    for s in args.sizes:
        if s != "all" and not (s.isdigit() and int(s) > 0):
            ap.error(f"--sizes takes positive integers (thousands) or 'all', got {s!r}")
    require(*bench_linalg.data_paths("brown"))
    rows = run(args.sizes, args.solvers, args.dense_max, args.n_rows)
    print()
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.out:
        try:
            plot(rows, args.out)
        except ImportError:
            print("(no figure: matplotlib is not installed)")
        else:
            print(f"\nfigure: {args.out}")
    n_failed = sum("error" in r for r in rows)
    if n_failed:
        print(f"{n_failed} fit(s) FAILED", file=sys.stderr)
        sys.exit(EXIT_FAILED)


if __name__ == "__main__":
    main()
