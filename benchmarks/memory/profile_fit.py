"""Peak memory and time of the full fit pipeline against corpus size and feature count.

Pipeline, one fresh process per configuration (stages timed and memory-sampled separately):

1. ``read``      read_conllu of the first n sentences of en-brown train (XPOS; the parent
                 writes them to a temporary file first, so reading scales with n too) and of
                 dev (2,867 sentences, always whole)
2. ``views``     X = SuffixView(1-4) + WordView (hstacked), Y = TagNgramView(1, 2)
3. ``sparsecca`` SparseCCA(k, tau, solver='randomized', max_rank).fit(X, Y)
4. ``nbest``     TrigramHMM fit, 10-fold jackknifed 10-best lists of the n sentences, dev
                 10-best list
5. ``rerank``    GenerativeReranker (same input view, k, tau, w = 10, solver 'randomized',
                 max_rank, nothing tuned).fit(train n-best, dev n-best)

Defaults are the scale run's (k = 75, tau = 0.9, max_rank = 512: the rerankers'
rank-plus-ridge factor of X; ``--max-rank 0`` lets SparseCCA grow its rank adaptively).
Without ../shared/data (or with ``--synthetic``) the corpus is ``synthetic_corpus``.

Two sweeps:

* **n sweep** (``--sizes``, default 5K 10K 20K 50K): the whole pipeline.  Each size is run
  twice: once for time and RSS, once with tracemalloc on (Python/NumPy-side peaks; tracing
  slows Python code, so its times are not used; ``--no-tracemalloc`` skips these runs).
* **feature sweep** (``--d1-n`` sentences, ``--min-counts``): steps 1-3 with the input
  view's features pruned by ``min_count`` -- d1 shrinks by an order of magnitude while
  nnz(X) hardly moves, which separates growth in nnz(X) from growth in d1^2.

Before the sweeps a discarded child runs the pipeline on 200 synthetic sentences so that
numba's on-disk cache holds every kernel (``warm_up``): with an empty cache the first
measured child compiled them, and its baseline and peak were ~30 MB above the others'.

Memory is the child's peak RSS (its own ``VmHWM``; per stage: a 2 ms psutil sampler
completed by the high-water mark) minus its RSS after the imports (the "baseline", ~200 MB of
interpreter, NumPy, SciPy, numba and sparsecca code): the growth exponents are fitted to that
increment by least squares on log-log axes.  A stage's peak ("SparseCCA stage", "reranker
stage") is the largest RSS *within* that stage: the sampler restarts at each stage, so it
counts what earlier stages left allocated (the corpus, X and Y) but not their transient
peaks; it is not the maximum over the stages up to it.  A memory that scales with d1^2 would show an
exponent near 1 against d1^2 in the feature sweep and would be of the order of one dense
d1 x d1 float64 matrix (8 d1^2 bytes, shown in the tables); one that scales with nnz(X), an
exponent near 1 against nnz(X), near 0 against d1^2 in the feature sweep, and a roughly
constant "MB per 1M nnz(X)".  The report ends with that verdict, computed from the numbers.

Warnings raised in a stage (the randomized solver's "estimated relative error > tol" above
all: a memory figure of a fit that missed its tolerance) are kept, not silenced: the parent
prints them under the run's line, the tables count them per row ("warnings") and the report
lists them.

Writes ``profile_fit.md`` (tables, fitted exponents, verdict, warnings), ``profile_fit.csv``
(one row per stage per run), ``profile_fit.png`` (log-log plots with the fitted slopes in the
legends; needs matplotlib) and ``profile_fit.json`` to ``--out``.

Usage::

    python benchmarks/memory/profile_fit.py --out profile_fit      # defaults, ~30-45 min
    python benchmarks/memory/profile_fit.py --sizes 1000,2000,4000 --min-counts 1,5 --d1-n 2000
    python benchmarks/memory/profile_fit.py --synthetic            # without ../shared/data
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    loglog_fit,
    machine_info,
    markdown_table,
    parse_sizes,
    run_child,
    write_csv,
)

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
BROWN = SHARED_DATA / "en-brown"


# -- child ---------------------------------------------------------------------------------

def child(args) -> None:
    import warnings
    from contextlib import contextmanager

    import numpy as np
    from _harness import StageRecorder

    from sparsecca.data import read_conllu, synthetic_corpus
    from sparsecca.features import HStackView, SuffixView, TagNgramView, WordView
    from sparsecca.linalg import SparseCCA
    from sparsecca.rerank import GenerativeReranker
    from sparsecca.tagging import TrigramHMM, jackknife_nbest

    # warm numba (cached on disk) outside the measured stages
    warm = synthetic_corpus(n_sentences=60, random_state=0)
    TrigramHMM().fit(warm).nbest(warm[:5], k=3)

    rec = StageRecorder(trace=args.tracemalloc)
    warned: list = []  # [stage, category, first line of the message], each once

    @contextmanager
    def stage(name):
        # the warnings are kept, not silenced: the randomized solver warns when its error
        # estimate misses tol, and a memory row of such a fit must say so
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")  # once per place: no flood from a loop
            with rec.stage(name):
                yield
        for w in caught:
            item = [name, w.category.__name__, str(w.message).splitlines()[0][:300]]
            if item not in warned:
                warned.append(item)

    n, mc = args.n, args.min_count

    def make_view():
        return HStackView([SuffixView(lengths=(1, 2, 3, 4), min_count=mc),
                           WordView(min_count=mc)])

    info: dict = {"n": n, "min_count": mc, "k": args.k, "tau": args.tau,
                  "sweep": args.sweep}
    with stage("read"):
        if args.synthetic:
            train = synthetic_corpus(n_sentences=n, random_state=0)
            dev = synthetic_corpus(n_sentences=2000, random_state=1)
        else:
            train = read_conllu(args.train_file, tags="xpos")
            dev = read_conllu(BROWN / "dev.conllu.gz", tags="xpos")
    if train.n_sentences != n:
        raise SystemExit(f"expected {n} training sentences, read {train.n_sentences}")
    info["n_tokens"] = int(train.n_tokens)
    with stage("views"):
        X = make_view().fit_transform(train)
        Y = TagNgramView().fit_transform(train)
    info.update(d1=int(X.shape[1]), d2=int(Y.shape[1]), nnz_x=int(X.nnz), nnz_y=int(Y.nnz))
    with stage("sparsecca"):
        cca = SparseCCA(args.k, tau=args.tau, solver="randomized",
                        max_rank=args.max_rank or None, random_state=0).fit(X, Y)
    info.update(cca_rank=int(cca.rank_), cca_error_estimate=float(cca.error_estimate_),
                cca_top_corr=float(cca.correlations_[0]),
                cca_sum_corr=float(np.sum(cca.correlations_)),
                d1_merged=int(cca.n_merged_features_))
    del cca
    if args.sweep == "n":
        del X, Y
        with stage("nbest"):
            jk = jackknife_nbest(TrigramHMM(), train, k=10, folds=10, random_state=0)
            dev_nb = TrigramHMM().fit(train).nbest(dev, k=10)
        info["n_candidates"] = int(jk.n_total)
        with stage("rerank"):
            model = GenerativeReranker(n_components=args.k, tau=args.tau, k_grid=[args.k],
                                       w=10.0, solver="randomized", input_view=make_view(),
                                       max_rank=args.max_rank or 512,
                                       random_state=0).fit(jk, dev_nb)
        info["dev_top1"] = float(dev_nb.top1_accuracy())
        info["dev_reranked"] = float(model.score(dev_nb))
    info["loadavg_end"] = list(os.getloadavg())
    info["warnings"] = warned
    rec.write(args.result, extra=info)


# -- parent --------------------------------------------------------------------------------

def write_first_sentences(src: Path, n: int, dest: Path) -> int:
    """Copy the first ``n`` sentences of the CoNLL-U file ``src`` (gzip or plain) to
    ``dest`` (plain); returns how many were written."""
    import gzip

    with open(src, "rb") as fh:
        opener = gzip.open if fh.read(2) == b"\x1f\x8b" else open
    count, in_sentence = 0, False
    with opener(src, "rt", encoding="utf-8") as fin, open(dest, "w", encoding="utf-8") as fout:
        for line in fin:
            if line.strip():
                in_sentence = True
                fout.write(line)
            elif in_sentence:
                fout.write("\n")
                in_sentence = False
                count += 1
                if count == n:
                    break
        if in_sentence and count < n:
            fout.write("\n")
            count += 1
    return count


def _argv(args, n, mc, sweep, trace, train_file):
    a = [__file__, "--child", "--n", str(n), "--min-count", str(mc), "--k", str(args.k),
         "--tau", str(args.tau), "--max-rank", str(args.max_rank), "--sweep", sweep]
    if trace:
        a.append("--tracemalloc")
    if args.synthetic:
        a.append("--synthetic")
    else:
        a += ["--train-file", str(train_file)]
    return a


#: sentences of the discarded warm-up child (synthetic corpus)
WARM_UP_N = 200


def warm_up(args) -> None:
    """Run the whole pipeline once on ``WARM_UP_N`` synthetic sentences, discarded.

    With an empty numba cache (a fresh checkout, or an edited kernel) the first measured child
    compiled every kernel the pipeline uses, and LLVM's memory stayed in its baseline and its
    peak: 213 against 182 MB for the next children (``--sizes 200,400``), which bent the
    fitted exponents at small n.  This child fills numba's on-disk cache first, so every
    measured child only loads the kernels.  A failed warm-up is printed, not fatal.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line: the child gets its ``k``, ``tau``, ``max_rank`` and
        ``timeout``, with the synthetic corpus.
    """
    warm = argparse.Namespace(**{**vars(args), "synthetic": True})
    t = time.perf_counter()
    res = run_child(_argv(warm, WARM_UP_N, 1, "n", False, None), timeout=args.timeout)
    status = f"FAILED ({res['error']}); the first child may compile" if "error" in res else "done"
    print(f"warm-up child (numba's cache; {WARM_UP_N} synthetic sentences, discarded): "
          f"{status} in {time.perf_counter() - t:.1f} s", flush=True)


def _summary(res: dict) -> dict:
    """One row per run: totals and the figures of interest."""
    stages = {s["stage"]: s for s in res["stages"]}
    base = res["baseline_rss_mb"]
    row = {k: res.get(k) for k in ("sweep", "n", "min_count", "n_tokens", "d1", "d1_merged",
                                   "d2", "nnz_x", "cca_rank", "cca_error_estimate", "dev_top1",
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
    row["mb_per_mnnz"] = row["peak_increase_mb"] / (res["nnz_x"] / 1e6)
    row["frac_dense"] = row["peak_increase_mb"] / (row["dense_cxx_gb"] * 1e3)
    row["cca_frac_dense"] = row.get("sparsecca_increase_mb", math.nan) / (
        row["dense_cxx_gb"] * 1e3)
    row["loadavg_1m"] = res.get("loadavg_end", [math.nan])[0]
    row["warnings"] = len(res.get("warnings", []))
    return row


def _plot(n_rows, f_rows, fits, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 3, figsize=(17, 5))
    ax = axes[0]
    n = np.array([r["n"] for r in n_rows], float)
    for key, label, mark in (("peak_increase_mb", "whole pipeline", "o-"),
                             ("sparsecca_increase_mb", "SparseCCA stage", "s-"),
                             ("rerank_increase_mb", "reranker fit", "^-"),
                             ("traced_peak_mb", "tracemalloc peak (whole run)", "d--")):
        y = np.array([r.get(key, np.nan) for r in n_rows], float)
        if np.isfinite(y).sum() >= 2:
            slope = loglog_fit(n, y)[0]
            ax.loglog(n, y, mark, label=f"{label} (slope {slope:.2f})")
    nnz = np.array([r["nnz_x"] for r in n_rows], float)
    ax.loglog(n, nnz / nnz[0] * n_rows[0]["peak_increase_mb"], ":", color="gray",
              label=f"proportional to nnz(X) (slope {loglog_fit(n, nnz)[0]:.2f})")
    dense = np.array([r["dense_cxx_gb"] for r in n_rows]) * 1e3
    ax.loglog(n, dense, "--", color="red",
              label=f"one dense d1 x d1 float64 (slope {loglog_fit(n, dense)[0]:.2f})")
    ax.set_xlabel("n (sentences)")
    ax.set_ylabel("peak memory above baseline (MB)")
    ax.set_title("peak memory vs n")
    ax.legend(fontsize=7)
    ax = axes[1]
    for key, label, mark in (("time_s", "whole pipeline", "o-"),
                             ("sparsecca_s", "SparseCCA fit", "s-"),
                             ("nbest_s", "tagger + jackknife", "v-"),
                             ("rerank_s", "reranker fit", "^-")):
        y = np.array([r.get(key, np.nan) for r in n_rows], float)
        if np.isfinite(y).sum() >= 2:
            ax.loglog(n, y, mark, label=f"{label} (slope {loglog_fit(n, y)[0]:.2f})")
    ax.loglog(n, n / n[0] * n_rows[0]["time_s"], ":", color="gray", label="slope 1 (linear)")
    ax.set_xlabel("n (sentences)")
    ax.set_ylabel("time (s)")
    ax.set_title("time vs n")
    ax.legend(fontsize=7)
    ax = axes[2]
    if len(f_rows) >= 2:
        d1 = np.array([r["d1"] for r in f_rows], float)
        y = np.array([r["sparsecca_increase_mb"] for r in f_rows], float)
        ax.loglog(d1, y, "s-", label=f"SparseCCA stage peak (slope vs d1 "
                                     f"{fits['feature_peak_vs_d1'][0]:.2f})")
        ax.loglog(d1, (d1 / d1.min()) ** 2 * y[np.argmin(d1)], ":", color="red",
                  label="if it grew as d1^2")
        ax.loglog(d1, np.array([r["dense_cxx_gb"] for r in f_rows]) * 1e3, "--",
                  color="red", alpha=0.6, label="one dense d1 x d1 float64 (MB)")
        for r in f_rows:
            ax.annotate(f"nnz {r['nnz_x'] / 1e6:.2f}M", (r["d1"], r["sparsecca_increase_mb"]),
                        fontsize=7, textcoords="offset points", xytext=(4, -10))
        ax.set_title(f"feature sweep at n = {f_rows[0]['n']:,} (min_count pruning)")
        ax.legend(fontsize=7)
    else:
        ax.set_title("feature sweep: fewer than 2 points")
    ax.set_xlabel("d1 (input features)")
    ax.set_ylabel("peak memory above baseline (MB)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _fits(n_rows, f_rows):
    fits = {}
    if len(n_rows) >= 2:
        n = [r["n"] for r in n_rows]
        nnz = [r["nnz_x"] for r in n_rows]
        peak = [r["peak_increase_mb"] for r in n_rows]
        cca = [r["sparsecca_increase_mb"] for r in n_rows]
        fits["n_peak_vs_n"] = loglog_fit(n, peak)
        fits["n_time_vs_n"] = loglog_fit(n, [r["time_s"] for r in n_rows])
        fits["n_cca_peak_vs_n"] = loglog_fit(n, cca)
        fits["n_cca_time_vs_n"] = loglog_fit(n, [r["sparsecca_s"] for r in n_rows])
        fits["n_nnz_vs_n"] = loglog_fit(n, nnz)
        fits["n_d1_vs_n"] = loglog_fit(n, [r["d1"] for r in n_rows])
        fits["n_peak_vs_nnz"] = loglog_fit(nnz, peak)
        fits["n_peak_vs_d1sq"] = loglog_fit([r["d1_squared"] for r in n_rows], peak)
        fits["n_cca_peak_vs_nnz"] = loglog_fit(nnz, cca)
        fits["n_cca_peak_vs_d1sq"] = loglog_fit([r["d1_squared"] for r in n_rows], cca)
        if all("traced_peak_mb" in r for r in n_rows):
            fits["n_traced_peak_vs_n"] = loglog_fit(n, [r["traced_peak_mb"] for r in n_rows])
    if len(f_rows) >= 2:
        y = [r["sparsecca_increase_mb"] for r in f_rows]
        fits["feature_peak_vs_d1"] = loglog_fit([r["d1"] for r in f_rows], y)
        fits["feature_peak_vs_d1sq"] = loglog_fit([r["d1_squared"] for r in f_rows], y)
    both = n_rows + f_rows
    if len(both) >= 3:
        import numpy as np

        A = np.column_stack([np.log([r["nnz_x"] for r in both]),
                             np.log([r["d1_squared"] for r in both]), np.ones(len(both))])
        y = np.log([r["sparsecca_increase_mb"] for r in both])
        if np.linalg.matrix_rank(A) == 3:
            coef = np.linalg.lstsq(A, y, rcond=None)[0]
            fits["joint_cca_peak"] = (float(coef[0]), float(coef[1]))
    return fits


def _verdict(n_rows, f_rows, fits) -> list[str]:
    """Which of nnz(X) and d1^2 the peak memory tracks, from the measured numbers."""
    out = []
    if len(n_rows) >= 2:
        a = fits["n_peak_vs_nnz"][0]
        big = max(n_rows, key=lambda r: r["n"])
        per = [r["mb_per_mnnz"] for r in n_rows]
        out.append(
            f"- n sweep: nnz(X) grows as n^{fits['n_nnz_vs_n'][0]:.2f} and d1 as "
            f"n^{fits['n_d1_vs_n'][0]:.2f} (so d1^2 as n^{2 * fits['n_d1_vs_n'][0]:.2f}); the "
            f"whole-pipeline peak memory grows as nnz(X)^{a:.2f} (as (d1^2)^"
            f"{fits['n_peak_vs_d1sq'][0]:.2f}); memory per nonzero of X goes from "
            f"{per[0]:,.0f} to {per[-1]:,.0f} MB per million nonzeros.  At n = {big['n']:,} "
            f"the peak above baseline is {big['peak_increase_mb']:,.0f} MB, "
            f"{100 * big['frac_dense']:.1f}% of ONE dense d1 x d1 float64 matrix "
            f"({big['dense_cxx_gb']:,.1f} GB at d1 = {big['d1']:,}).")
    if len(f_rows) >= 2:
        b = fits["feature_peak_vs_d1sq"][0]
        lo, hi = min(f_rows, key=lambda r: r["d1"]), max(f_rows, key=lambda r: r["d1"])
        out.append(
            f"- feature sweep at n = {f_rows[0]['n']:,}: d1 goes from {lo['d1']:,} to "
            f"{hi['d1']:,} ({hi['d1_squared'] / lo['d1_squared']:.0f}x in d1^2) while nnz(X) "
            f"goes from {lo['nnz_x']:,} to {hi['nnz_x']:,} "
            f"({hi['nnz_x'] / lo['nnz_x']:.2f}x); the SparseCCA stage's peak moves as "
            f"(d1^2)^{b:.2f} ({lo['sparsecca_increase_mb']:,.0f} -> "
            f"{hi['sparsecca_increase_mb']:,.0f} MB).  Growth with d1^2 would mean an "
            f"exponent near 1.")
        if len(n_rows) >= 2:
            # the feature sweep is the discriminating experiment (d1^2 moves, nnz(X) does
            # not); the n sweep then says how the memory grows with nnz(X)
            a = fits["n_peak_vs_nnz"][0]
            if b >= 0.5:
                word = (f"**d1^2**: in the feature sweep it grows as (d1^2)^{b:.2f} at nearly "
                        f"constant nnz(X)")
            elif abs(a - 1.0) <= 0.35:
                word = (f"**nnz(X)**, near-linearly (exponent {a:.2f}), not d1^2 (feature-"
                        f"sweep exponent {b:.2f})")
            elif a < 1.0:
                word = (f"**nnz(X)** sub-linearly (exponent {a:.2f}: fixed overheads still "
                        f"dominate at these sizes), not d1^2 (feature-sweep exponent {b:.2f})")
            else:
                word = (f"nnz(X) super-linearly (exponent {a:.2f}), but not d1^2 "
                        f"(feature-sweep exponent {b:.2f})")
            out.append(f"- verdict: peak memory tracks {word}.")
    if not out:
        out.append("- too few points for a verdict (need >= 2 sizes and >= 2 min_counts)")
    return out


def _warning_lines(runs) -> list[str]:
    """The report's warnings section: one Markdown line per warning a child raised.

    Parameters
    ----------
    runs : list of dict
        The children's results (``warnings``: [stage, category, message] items).

    Returns
    -------
    list of str
        One line per warning (the tables' "warnings" column counts them per row), or one
        line saying there were none.
    """
    out = []
    for res in runs:
        for stage, category, message in res.get("warnings", []):
            out.append(f"- {res.get('sweep')} n = {res.get('n'):,}, min_count = "
                       f"{res.get('min_count')}{', tracemalloc' if res.get('trace') else ''}, "
                       f"{stage}: {category}: {message}")
    return out or ["- none: no stage of any run raised a warning"]


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--sizes", nargs="+", default=["5000,10000,20000,50000"],
                    help="n sweep sizes in sentences, e.g. 5000,10000,20000,50000")
    ap.add_argument("--min-counts", nargs="+", default=["1,2,5,20,100"],
                    help="feature sweep: min_count of the input view's parts")
    ap.add_argument("--d1-n", type=int, default=20000, help="n of the feature sweep")
    ap.add_argument("--k", type=int, default=75)
    ap.add_argument("--tau", type=float, default=0.9)
    ap.add_argument("--max-rank", type=int, default=512)
    ap.add_argument("--no-tracemalloc", action="store_true")
    ap.add_argument("--synthetic", action="store_true",
                    help="synthetic_corpus instead of en-brown (automatic when absent)")
    ap.add_argument("--timeout", type=float, default=1800, help="per child, seconds")
    ap.add_argument("--out", type=Path,
                    default=Path(tempfile.gettempdir()) / "sparsecca-profile-fit",
                    help="output directory")
    # child-only arguments
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--min-count", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--sweep", default="n", help=argparse.SUPPRESS)
    ap.add_argument("--tracemalloc", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--train-file", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    args.sizes = parse_sizes(args.sizes)
    args.min_counts = parse_sizes(args.min_counts)
    if not args.synthetic and not (BROWN / "train.conllu.gz").is_file():
        print(f"{BROWN} not found: using the synthetic corpus", flush=True)
        args.synthetic = True
    args.out.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    print(f"machine: {info}", flush=True)
    t_start = time.perf_counter()
    runs = []
    tmp = Path(tempfile.mkdtemp(prefix="sparsecca-profile-data-"))
    files: dict[int, Path] = {}

    def train_file(n):
        if args.synthetic:
            return None
        if n not in files:
            files[n] = tmp / f"train_{n}.conllu"
            got = write_first_sentences(BROWN / "train.conllu.gz", n, files[n])
            if got < n:
                raise SystemExit(f"en-brown train has {got:,} sentences < {n:,}")
        return files[n]

    def run(n, mc, sweep, trace):
        res = run_child(_argv(args, n, mc, sweep, trace, train_file(n)), timeout=args.timeout)
        res.setdefault("sweep", sweep)
        res.setdefault("loadavg_end", list(os.getloadavg()))
        tag = f"{sweep} n={n} min_count={mc}{' tracemalloc' if trace else ''}"
        if "error" in res:
            print(f"  {tag}: FAILED ({res['error']})", flush=True)
        else:
            print(f"  {tag}: d1={res['d1']:,} nnz(X)={res['nnz_x']:,} "
                  f"time={sum(s['time_s'] for s in res['stages']):.1f}s "
                  f"peak RSS={res['child_maxrss_mb']:.0f} MB "
                  f"(baseline {res['baseline_rss_mb']:.0f}) load={res['loadavg_end'][0]:.2f}",
                  flush=True)
            for stage, category, message in res.get("warnings", []):
                print(f"    warning in {stage}: {category}: {message}", flush=True)
        res["trace"] = trace
        runs.append(res)
        return res

    warm_up(args)
    try:
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
    finally:
        for f in files.values():
            f.unlink(missing_ok=True)
        tmp.rmdir()

    fits = _fits(n_rows, f_rows)
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
            ("mb_per_mnnz", "MB per 1M nnz(X)", ".0f"),
            ("frac_dense", "peak / dense d1^2", ".3f"),
            ("cca_rank", "rank", "d"), ("cca_error_estimate", "err. est.", ".2g"),
            ("warnings", "warnings", "d"), ("loadavg_1m", "load", ".2f")]
    fcols = [("min_count", "min_count", "d"), ("d1", "d1", ",d"), ("nnz_x", "nnz(X)", ",d"),
             ("dense_cxx_gb", "dense d1^2 (GB)", ".2f"), ("sparsecca_s", "SparseCCA (s)", ".1f"),
             ("sparsecca_increase_mb", "SparseCCA stage peak, above baseline (MB)", ".0f"),
             ("cca_frac_dense", "that / dense d1^2", ".3f"),
             ("peak_rss_mb", "peak RSS (MB)", ".0f"), ("cca_rank", "rank", "d"),
             ("cca_error_estimate", "err. est.", ".2g"), ("warnings", "warnings", "d"),
             ("loadavg_1m", "load", ".2f")]
    names = {
        "n_peak_vs_n": "peak memory (whole pipeline) vs n",
        "n_time_vs_n": "time (whole pipeline) vs n",
        "n_cca_peak_vs_n": "peak memory (SparseCCA stage) vs n",
        "n_cca_time_vs_n": "time (SparseCCA stage) vs n",
        "n_traced_peak_vs_n": "tracemalloc peak vs n",
        "n_nnz_vs_n": "nnz(X) vs n",
        "n_d1_vs_n": "d1 vs n",
        "n_peak_vs_nnz": "peak memory (whole pipeline) vs nnz(X), n sweep",
        "n_peak_vs_d1sq": "peak memory (whole pipeline) vs d1^2, n sweep",
        "n_cca_peak_vs_nnz": "peak memory (SparseCCA stage) vs nnz(X), n sweep",
        "n_cca_peak_vs_d1sq": "peak memory (SparseCCA stage) vs d1^2, n sweep",
        "feature_peak_vs_d1": "peak memory (SparseCCA stage) vs d1, feature sweep",
        "feature_peak_vs_d1sq": "peak memory (SparseCCA stage) vs d1^2, feature sweep",
    }
    command = "python benchmarks/memory/profile_fit.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    lines = ["# profile_fit: peak memory and time of the fit pipeline\n",
             f"Command: `{command}`  ",
             f"Machine: {info['cpus']} CPUs, {info['mem_gib']} GiB, Python {info['python']}, "
             f"NumPy {info['numpy']}, SciPy {info['scipy']}; load average at start "
             f"{info['loadavg']}; data: {'synthetic' if args.synthetic else 'en-brown XPOS'}; "
             f"k = {args.k}, tau = {args.tau}, max_rank = {args.max_rank}; total "
             f"{time.perf_counter() - t_start:.0f} s.\n",
             "Memory = child peak RSS minus its RSS after imports (baseline); times are wall "
             "seconds per stage; one fresh process per row.\n", "## n sweep (whole pipeline)\n",
             markdown_table(n_rows, cols), "",
             f"## feature sweep at n = {args.d1_n:,} (read + views + SparseCCA)\n",
             markdown_table(f_rows, fcols), "", "## fitted growth exponents "
             "(least squares, log-log)\n", "| quantity | exponent |", "|---|---:|"]
    for k, v in fits.items():
        if k in names:
            lines.append(f"| {names[k]} | {v[0]:.2f} |")
    if "joint_cca_peak" in fits:
        a, b = fits["joint_cca_peak"]
        lines.append(f"| joint fit over both sweeps, log peak(SparseCCA stage) = a log nnz(X) "
                     f"+ b log d1^2 + c: a | {a:.2f} |")
        lines.append(f"| ... b (d1^2) | {b:.2f} |")
    lines += ["", "## nnz(X) or d1^2?\n", *_verdict(n_rows, f_rows, fits)]
    lines += ["", "## warnings\n", *_warning_lines(runs)]
    png = args.out / "profile_fit.png"
    if len(n_rows) >= 2:
        try:
            _plot(n_rows, f_rows, fits, png)
            lines += ["", "Plot: `profile_fit.png` (log-log; fitted slopes in the legends)."]
        except ImportError:
            png = None
            lines += ["", "No plot: matplotlib is not installed."]
    else:
        png = None
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
        {"command": command, "machine": info, "runs": runs, "fits": fits, "n_rows": n_rows,
         "f_rows": f_rows}, indent=1, default=str))
    print(report)
    print(f"wrote {args.out}/profile_fit.{{md,csv,json{',png' if png else ''}}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
