"""Peak memory and time of the full fit pipeline against corpus size and feature count.

Pipeline, one fresh process per configuration (stages timed and memory-sampled separately):

1. ``read``      read_conllu of en-brown train (XPOS) and dev, first n training sentences
2. ``views``     X = SuffixView(1-4) + WordView (hstacked), Y = TagNgramView(1, 2)
3. ``sparsecca`` SparseCCA(k, tau, solver='randomized').fit(X, Y)
4. ``nbest``     TrigramHMM fit, 10-fold jackknifed 10-best lists of the n sentences, dev
                 10-best list
5. ``rerank``    GenerativeReranker (same input view, k, tau, w = 10, solver 'randomized',
                 nothing tuned).fit(train n-best, dev n-best)

Two sweeps:

* **n sweep** (``--sizes``, default 5K 10K 20K 50K): the whole pipeline.  Each size is run
  twice: once for time and RSS, once with tracemalloc on (Python/NumPy-side peaks; tracing
  slows Python code, so its times are not used).
* **feature sweep** (``--d1-n`` sentences, ``--min-counts``): steps 1-3 with the input
  view's features pruned by ``min_count`` -- d1 shrinks by an order of magnitude while
  nnz(X) hardly moves, which separates growth in nnz(X) from growth in d1^2.

Memory is the child's peak RSS (``os.wait4`` ru_maxrss; per stage: a 2 ms psutil sampler
completed by ru_maxrss) minus its RSS after the imports (the "baseline", ~200 MB of
interpreter, NumPy, SciPy, numba and sparsecca code): the growth exponents are fitted to that
increment by least squares on log-log axes.  A memory that scales with d1^2 would show an
exponent near 1 against d1^2 in the feature sweep; one that scales with nnz(X), an exponent
near 1 against nnz(X) and near 0 against d1^2.

Writes ``profile_fit.md`` (tables + fitted exponents), ``profile_fit.csv`` (one row per
stage per run), ``profile_fit.png`` (log-log plots) and ``profile_fit.json`` to ``--out``.

Usage::

    python benchmarks/memory/profile_fit.py                       # defaults, ~20-40 min
    python benchmarks/memory/profile_fit.py --sizes 2000 5000 --min-counts 1 5 --d1-n 5000
    python benchmarks/memory/profile_fit.py --synthetic            # without ../shared/data
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    loglog_fit,
    machine_info,
    markdown_table,
    run_child,
    write_csv,
)

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
BROWN = SHARED_DATA / "en-brown"


# -- child ---------------------------------------------------------------------------------

def child(args) -> None:
    import warnings

    import numpy as np
    from _harness import StageRecorder

    from sparsecca.data import read_conllu, synthetic_corpus
    from sparsecca.features import HStackView, SuffixView, TagNgramView, WordView
    from sparsecca.linalg import SparseCCA
    from sparsecca.rerank import GenerativeReranker
    from sparsecca.tagging import TrigramHMM, jackknife_nbest

    warnings.simplefilter("ignore", RuntimeWarning)  # randomized: error-estimate warnings
    # warm numba (cached on disk) outside the measured stages
    warm = synthetic_corpus(n_sentences=60, random_state=0)
    TrigramHMM().fit(warm).nbest(warm[:5], k=3)

    rec = StageRecorder(trace=args.tracemalloc)
    n, mc = args.n, args.min_count

    def make_view():
        return HStackView([SuffixView(lengths=(1, 2, 3, 4), min_count=mc),
                           WordView(min_count=mc)])

    info: dict = {"n": n, "min_count": mc, "k": args.k, "tau": args.tau,
                  "sweep": args.sweep}
    with rec.stage("read"):
        if args.synthetic:
            train = synthetic_corpus(n_sentences=n, random_state=0)
            dev = synthetic_corpus(n_sentences=2000, random_state=1)
        else:
            train = read_conllu(BROWN / "train.conllu.gz", tags="xpos")[:n]
            dev = read_conllu(BROWN / "dev.conllu.gz", tags="xpos")
    info["n_tokens"] = int(train.n_tokens)
    with rec.stage("views"):
        X = make_view().fit_transform(train)
        Y = TagNgramView().fit_transform(train)
    info.update(d1=int(X.shape[1]), d2=int(Y.shape[1]), nnz_x=int(X.nnz), nnz_y=int(Y.nnz))
    with rec.stage("sparsecca"):
        cca = SparseCCA(args.k, tau=args.tau, solver="randomized", random_state=0).fit(X, Y)
    info.update(cca_rank=int(cca.rank_), cca_error_estimate=float(cca.error_estimate_),
                cca_top_corr=float(cca.correlations_[0]),
                cca_sum_corr=float(np.sum(cca.correlations_)))
    del cca
    if args.sweep == "n":
        del X, Y
        with rec.stage("nbest"):
            jk = jackknife_nbest(TrigramHMM(), train, k=10, folds=10, random_state=0)
            dev_nb = TrigramHMM().fit(train).nbest(dev, k=10)
        info["n_candidates"] = int(jk.n_total)
        with rec.stage("rerank"):
            model = GenerativeReranker(n_components=args.k, tau=args.tau, k_grid=[args.k],
                                       w=10.0, solver="randomized", input_view=make_view(),
                                       random_state=0).fit(jk, dev_nb)
        info["dev_top1"] = float(dev_nb.top1_accuracy())
        info["dev_reranked"] = float(model.score(dev_nb))
    rec.write(args.result, extra=info)


# -- parent --------------------------------------------------------------------------------

def _argv(args, n, mc, sweep, trace):
    a = [__file__, "--child", "--n", str(n), "--min-count", str(mc), "--k", str(args.k),
         "--tau", str(args.tau), "--sweep", sweep]
    if trace:
        a.append("--tracemalloc")
    if args.synthetic:
        a.append("--synthetic")
    return a


def _summary(res: dict) -> dict:
    """One row per run: totals and the figures of interest."""
    stages = {s["stage"]: s for s in res["stages"]}
    base = res["baseline_rss_mb"]
    row = {k: res.get(k) for k in ("sweep", "n", "min_count", "n_tokens", "d1", "d2", "nnz_x",
                                   "cca_rank", "cca_error_estimate", "dev_top1",
                                   "dev_reranked")}
    row["d1_squared"] = float(res["d1"]) ** 2
    row["dense_cxx_gb"] = 8.0 * float(res["d1"]) ** 2 / 1e9
    row["baseline_mb"] = base
    row["peak_rss_mb"] = res["child_maxrss_mb"]
    row["peak_increase_mb"] = res["child_maxrss_mb"] - base
    row["time_s"] = sum(s["time_s"] for s in res["stages"])
    for name, s in stages.items():
        row[f"{name}_s"] = s["time_s"]
        row[f"{name}_peak_mb"] = s["rss_peak_mb"]
        row[f"{name}_increase_mb"] = s["rss_peak_mb"] - base
    row["loadavg_1m"] = res.get("loadavg_end", [float("nan")])[0]
    return row


def _plot(n_rows, f_rows, fits, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    ax = axes[0]
    n = np.array([r["n"] for r in n_rows], float)
    for key, label, mark in (("peak_increase_mb", "whole pipeline", "o-"),
                             ("sparsecca_increase_mb", "SparseCCA fit", "s-"),
                             ("rerank_increase_mb", "reranker fit", "^-"),
                             ("traced_peak_mb", "tracemalloc peak (whole run)", "d--")):
        y = np.array([r.get(key, np.nan) for r in n_rows], float)
        if np.isfinite(y).sum() >= 2:
            slope = loglog_fit(n, y)[0]
            ax.loglog(n, y, mark, label=f"{label} (slope {slope:.2f})")
    ax.loglog(n, n / n[0] * n_rows[0]["peak_increase_mb"], ":", color="gray",
              label="slope 1 (linear)")
    ax.set_xlabel("n (sentences)")
    ax.set_ylabel("peak memory above baseline (MB)")
    ax.set_title("peak memory vs n")
    ax.legend(fontsize=8)
    ax = axes[1]
    for key, label, mark in (("time_s", "whole pipeline", "o-"), ("sparsecca_s", "SparseCCA fit",
                                                                   "s-"),
                             ("nbest_s", "tagger + jackknife", "v-"),
                             ("rerank_s", "reranker fit", "^-")):
        y = np.array([r.get(key, np.nan) for r in n_rows], float)
        if np.isfinite(y).sum() >= 2:
            ax.loglog(n, y, mark, label=f"{label} (slope {loglog_fit(n, y)[0]:.2f})")
    ax.loglog(n, n / n[0] * n_rows[0]["time_s"], ":", color="gray", label="slope 1 (linear)")
    ax.set_xlabel("n (sentences)")
    ax.set_ylabel("time (s)")
    ax.set_title("time vs n")
    ax.legend(fontsize=8)
    ax = axes[2]
    if len(f_rows) >= 2:
        d1 = np.array([r["d1"] for r in f_rows], float)
        y = np.array([r["sparsecca_increase_mb"] for r in f_rows], float)
        ax.loglog(d1, y, "s-", label=f"SparseCCA fit peak (slope vs d1 "
                                     f"{fits['feature_peak_vs_d1'][0]:.2f})")
        ax.loglog(d1, (d1 / d1.min()) ** 2 * y[np.argmin(d1)], ":", color="red",
                  label="if it grew as d1^2")
        ax.loglog(d1, np.array([r["dense_cxx_gb"] for r in f_rows]) * 1e3, "--",
                  color="gray", label="one dense d1 x d1 float64 (MB)")
        for r in f_rows:
            ax.annotate(f"nnz {r['nnz_x'] / 1e6:.2f}M", (r["d1"], r["sparsecca_increase_mb"]),
                        fontsize=7, textcoords="offset points", xytext=(4, -10))
        ax.set_title(f"feature sweep at n = {f_rows[0]['n']:,} (min_count pruning)")
    ax.set_xlabel("d1 (input features)")
    ax.set_ylabel("peak memory above baseline (MB)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 10000, 20000, 50000])
    ap.add_argument("--min-counts", type=int, nargs="+", default=[1, 2, 5, 20, 100],
                    help="feature sweep: min_count of the input view's parts")
    ap.add_argument("--d1-n", type=int, default=20000, help="n of the feature sweep")
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--tau", type=float, default=0.5)
    ap.add_argument("--no-tracemalloc", action="store_true")
    ap.add_argument("--synthetic", action="store_true",
                    help="synthetic_corpus instead of en-brown (automatic when absent)")
    ap.add_argument("--timeout", type=float, default=1800, help="per child, seconds")
    ap.add_argument("--out", type=Path,
                    default=Path(tempfile.gettempdir()) / "sparsecca-profile-fit")
    # child-only arguments
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--min-count", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--sweep", default="n", help=argparse.SUPPRESS)
    ap.add_argument("--tracemalloc", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    if not args.synthetic and not (BROWN / "train.conllu.gz").is_file():
        print(f"{BROWN} not found: using the synthetic corpus", flush=True)
        args.synthetic = True
    args.out.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    print(f"machine: {info}", flush=True)
    t_start = time.perf_counter()
    runs = []

    def run(n, mc, sweep, trace):
        import os

        res = run_child(_argv(args, n, mc, sweep, trace), timeout=args.timeout)
        res.setdefault("sweep", sweep)
        res["loadavg_end"] = list(os.getloadavg())
        tag = f"{sweep} n={n} min_count={mc}{' tracemalloc' if trace else ''}"
        if "error" in res:
            print(f"  {tag}: FAILED ({res['error']})", flush=True)
        else:
            print(f"  {tag}: d1={res['d1']:,} nnz(X)={res['nnz_x']:,} "
                  f"time={sum(s['time_s'] for s in res['stages']):.1f}s "
                  f"peak RSS={res['child_maxrss_mb']:.0f} MB "
                  f"(baseline {res['baseline_rss_mb']:.0f}) load={res['loadavg_end'][0]:.2f}",
                  flush=True)
        res["trace"] = trace
        runs.append(res)
        return res

    print("n sweep (whole pipeline)", flush=True)
    n_rows = []
    for n in args.sizes:
        res = run(n, 1, "n", False)
        if "error" in res:
            continue
        row = _summary(res)
        if not args.no_tracemalloc:
            tr = run(n, 1, "n", True)
            if "error" not in tr:
                row["traced_peak_mb"] = max(s["traced_peak_mb"] for s in tr["stages"])
                for s in tr["stages"]:
                    row[f"{s['stage']}_traced_peak_mb"] = s["traced_peak_mb"]
        n_rows.append(row)
    print(f"feature sweep (read + views + SparseCCA) at n = {args.d1_n:,}", flush=True)
    f_rows = []
    for mc in args.min_counts:
        res = run(args.d1_n, mc, "features", False)
        if "error" not in res:
            f_rows.append(_summary(res))

    fits = {}
    if len(n_rows) >= 2:
        n = [r["n"] for r in n_rows]
        fits["n_peak_vs_n"] = loglog_fit(n, [r["peak_increase_mb"] for r in n_rows])
        fits["n_time_vs_n"] = loglog_fit(n, [r["time_s"] for r in n_rows])
        fits["n_cca_peak_vs_n"] = loglog_fit(n, [r["sparsecca_increase_mb"] for r in n_rows])
        fits["n_cca_time_vs_n"] = loglog_fit(n, [r["sparsecca_s"] for r in n_rows])
        fits["n_peak_vs_nnz"] = loglog_fit([r["nnz_x"] for r in n_rows],
                                           [r["peak_increase_mb"] for r in n_rows])
        fits["n_cca_peak_vs_nnz"] = loglog_fit([r["nnz_x"] for r in n_rows],
                                               [r["sparsecca_increase_mb"] for r in n_rows])
        fits["n_cca_peak_vs_d1sq"] = loglog_fit([r["d1_squared"] for r in n_rows],
                                                [r["sparsecca_increase_mb"] for r in n_rows])
        if all("traced_peak_mb" in r for r in n_rows):
            fits["n_traced_peak_vs_n"] = loglog_fit(n, [r["traced_peak_mb"] for r in n_rows])
    if len(f_rows) >= 2:
        y = [r["sparsecca_increase_mb"] for r in f_rows]
        fits["feature_peak_vs_d1"] = loglog_fit([r["d1"] for r in f_rows], y)
        fits["feature_peak_vs_d1sq"] = loglog_fit([r["d1_squared"] for r in f_rows], y)
        fits["feature_peak_vs_nnz"] = loglog_fit([r["nnz_x"] for r in f_rows], y)
    both = [r for r in n_rows + f_rows]
    if len(both) >= 3:
        import numpy as np

        A = np.column_stack([np.log([r["nnz_x"] for r in both]),
                             np.log([r["d1_squared"] for r in both]), np.ones(len(both))])
        y = np.log([r["sparsecca_increase_mb"] for r in both])
        coef = np.linalg.lstsq(A, y, rcond=None)[0]
        fits["joint_cca_peak"] = (float(coef[0]), float(coef[1]))

    # -- report ------------------------------------------------------------------------------
    cols = [("n", "n", ",d"), ("d1", "d1", ",d"), ("nnz_x", "nnz(X)", ",d"),
            ("dense_cxx_gb", "dense d1^2 (GB)", ".1f"), ("time_s", "time (s)", ".1f"),
            ("read_s", "read", ".1f"), ("views_s", "views", ".1f"),
            ("sparsecca_s", "SparseCCA", ".1f"), ("nbest_s", "tagger+jackknife", ".1f"),
            ("rerank_s", "reranker", ".1f"), ("peak_rss_mb", "peak RSS (MB)", ".0f"),
            ("peak_increase_mb", "above baseline (MB)", ".0f"),
            ("sparsecca_increase_mb", "SparseCCA stage (MB)", ".0f"),
            ("rerank_increase_mb", "reranker stage (MB)", ".0f"),
            ("traced_peak_mb", "tracemalloc peak (MB)", ".0f"),
            ("cca_rank", "rank", "d"), ("cca_error_estimate", "err. est.", ".2g"),
            ("loadavg_1m", "load", ".2f")]
    fcols = [("min_count", "min_count", "d"), ("d1", "d1", ",d"), ("nnz_x", "nnz(X)", ",d"),
             ("dense_cxx_gb", "dense d1^2 (GB)", ".2f"), ("sparsecca_s", "SparseCCA (s)", ".1f"),
             ("sparsecca_increase_mb", "SparseCCA stage above baseline (MB)", ".0f"),
             ("peak_rss_mb", "peak RSS (MB)", ".0f"), ("cca_rank", "rank", "d"),
             ("loadavg_1m", "load", ".2f")]
    names = {
        "n_peak_vs_n": "peak memory (whole pipeline) vs n",
        "n_time_vs_n": "time (whole pipeline) vs n",
        "n_cca_peak_vs_n": "peak memory (SparseCCA stage) vs n",
        "n_cca_time_vs_n": "time (SparseCCA stage) vs n",
        "n_traced_peak_vs_n": "tracemalloc peak vs n",
        "n_peak_vs_nnz": "peak memory (whole pipeline) vs nnz(X), n sweep",
        "n_cca_peak_vs_nnz": "peak memory (SparseCCA stage) vs nnz(X), n sweep",
        "n_cca_peak_vs_d1sq": "peak memory (SparseCCA stage) vs d1^2, n sweep",
        "feature_peak_vs_d1": "peak memory (SparseCCA stage) vs d1, feature sweep",
        "feature_peak_vs_d1sq": "peak memory (SparseCCA stage) vs d1^2, feature sweep",
        "feature_peak_vs_nnz": "peak memory (SparseCCA stage) vs nnz(X), feature sweep",
    }
    lines = ["# profile_fit: peak memory and time of the fit pipeline\n",
             f"Command: `python benchmarks/memory/profile_fit.py "
             f"{' '.join(sys.argv[1:]) if argv is None else ' '.join(argv)}`  ",
             f"Machine: {info['cpus']} CPUs, {info['mem_gib']} GiB, Python {info['python']}, "
             f"NumPy {info['numpy']}, SciPy {info['scipy']}; load average at start "
             f"{info['loadavg']}; data: {'synthetic' if args.synthetic else 'en-brown XPOS'}; "
             f"k = {args.k}, tau = {args.tau}; total {time.perf_counter() - t_start:.0f} s.\n",
             "Memory = child peak RSS minus its RSS after imports (baseline); times are wall "
             "seconds per stage.\n", "## n sweep (whole pipeline)\n",
             markdown_table(n_rows, cols), "",
             f"## feature sweep at n = {args.d1_n:,} (read + views + SparseCCA)\n",
             markdown_table(f_rows, fcols), "", "## fitted growth exponents "
             "(least squares, log-log)\n", "| quantity | exponent |", "|---|---:|"]
    for k, v in fits.items():
        if k in names:
            lines.append(f"| {names[k]} | {v[0]:.2f} |")
    if "joint_cca_peak" in fits:
        a, b = fits["joint_cca_peak"]
        lines.append(f"| joint fit over both sweeps, log peak(SparseCCA) = a log nnz(X) + "
                     f"b log d1^2 + c: a | {a:.2f} |")
        lines.append(f"| ... b (d1^2) | {b:.2f} |")
    report = "\n".join(lines) + "\n"
    (args.out / "profile_fit.md").write_text(report)
    csv_rows = []
    for res in runs:
        for s in res.get("stages", []):
            csv_rows.append({"sweep": res.get("sweep"), "tracemalloc": res.get("trace"),
                             "n": res.get("n"), "min_count": res.get("min_count"),
                             "d1": res.get("d1"), "nnz_x": res.get("nnz_x"),
                             "baseline_rss_mb": res.get("baseline_rss_mb"),
                             "child_maxrss_mb": res.get("child_maxrss_mb"), **s})
    write_csv(csv_rows, args.out / "profile_fit.csv")
    (args.out / "profile_fit.json").write_text(json.dumps(
        {"machine": info, "runs": runs, "fits": fits, "n_rows": n_rows, "f_rows": f_rows},
        indent=1, default=str))
    if n_rows:
        _plot(n_rows, f_rows, fits, args.out / "profile_fit.png")
    print(report)
    print(f"wrote {args.out}/profile_fit.{{md,csv,json,png}}")


if __name__ == "__main__":
    main()
