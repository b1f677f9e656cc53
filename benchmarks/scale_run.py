"""The 50K-sentence scale run: the three CCA rerankers fitted on the whole en-brown train set.

Stages, each timed with its peak RSS (a 2 ms psutil sampler completed by ru_maxrss, in this
one process; the process-wide peak is printed at the end):

1. ``read``          en-brown train (51,606 sentences, 1,044,951 tokens) and dev, XPOS
2. ``tagger fit``    TrigramHMM on train
3. ``jackknife``     10-fold jackknifed 10-best lists of train (``--folds``)
4. ``dev n-best``    10-best list of dev from the tagger of stage 2
5. ``views``         X = HStackView([SuffixView(1-4), WordView()]) (d1 >= 30K), Y =
                     TagNgramView(XPOS 1-2-grams, d2 ~ 8K), Yhat (the candidates): measured on
                     its own for the table -- each reranker fit builds its views again
                     internally (the fit API takes n-best lists), and that time is inside
                     the model stages too
6. ``engine 'auto'`` what ``CCAEngine(X, Y, solver='auto')`` would pick at this size (no
                     solve)
7. one stage per model: GenerativeReranker, SoftenedReranker, DiscriminativeReranker
   (n_iter = 5: six engine solves), fixed hyper-parameters (``--k`` 75, ``--tau`` 0.9 and
   ``--lam`` 0.75 -- inside the rerankers' default grids --, ``--w`` 10, k_grid = [k]),
   ``--solver`` (default 'randomized', the rerankers' default, with their ``max_rank`` = 512
   rank-plus-ridge factor of X), the dev n-best list given so that accuracy can be reported
   (nothing is tuned on it).

Targets (measured and reported, not asserted): the three model fits together <= 3 min and
peak RSS <= 4 GB on the 2-core reference machine.  ``--profile`` runs each model fit under
cProfile and prints the calls that take the time.

Usage::

    python benchmarks/scale_run.py [--solver randomized] [--profile] [--out report.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "memory"))

from _harness import MB, StageRecorder, machine_info, markdown_table  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BROWN = SHARED_DATA / "en-brown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solver", default="randomized",
                    choices=["auto", "dense", "randomized", "iterative"])
    ap.add_argument("--k", type=int, default=75)
    ap.add_argument("--tau", type=float, default=0.9)
    ap.add_argument("--lam", type=float, default=0.75)
    ap.add_argument("--max-rank", type=int, default=512,
                    help="rerankers' max_rank (rank of the randomized X factor)")
    ap.add_argument("--w", type=float, default=10.0)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--models", nargs="+", default=["generative", "softened", "discriminative"],
                    choices=["generative", "softened", "discriminative"])
    ap.add_argument("--profile", action="store_true", help="cProfile each model fit")
    ap.add_argument("--profile-lines", type=int, default=25)
    ap.add_argument("--out", type=Path, help="also write the Markdown report here")
    args = ap.parse_args(argv)
    if not (BROWN / "train.conllu.gz").is_file():
        raise SystemExit(f"{BROWN} not found: the scale run needs ../shared/data/en-brown")

    from sparsecca.data import read_conllu
    from sparsecca.features import HStackView, SuffixView, TagNgramView, WordView
    from sparsecca.linalg import CCAEngine
    from sparsecca.rerank import DiscriminativeReranker, GenerativeReranker, SoftenedReranker
    from sparsecca.tagging import TrigramHMM, jackknife_nbest

    info = machine_info()
    print(f"machine: {info}", flush=True)
    # numba kernels from the on-disk cache, outside the measured stages
    from sparsecca.data import synthetic_corpus

    warm = synthetic_corpus(n_sentences=60, random_state=0)
    TrigramHMM().fit(warm).nbest(warm[:5], k=3)

    rec = StageRecorder()
    notes = {}

    def input_view():
        return HStackView([SuffixView(lengths=(1, 2, 3, 4)), WordView()])

    def show(extra=""):
        s = rec.stages[-1]
        print(f"  {s['stage']:<24} {s['time_s']:8.1f} s   peak RSS {s['rss_peak_mb']:7.0f} MB  "
              f"load {os.getloadavg()[0]:.2f}  {extra}", flush=True)

    t_all = time.perf_counter()
    with rec.stage("read"):
        train = read_conllu(BROWN / "train.conllu.gz", tags="xpos")
        dev = read_conllu(BROWN / "dev.conllu.gz", tags="xpos")
    show(f"train {train.n_sentences:,} sentences / {train.n_tokens:,} tokens, dev "
         f"{dev.n_sentences:,}")
    with rec.stage("tagger fit"):
        tagger = TrigramHMM().fit(train)
    show(f"{len(tagger.tags_)} tags")
    with rec.stage("jackknife"):
        jk = jackknife_nbest(TrigramHMM(), train, k=10, folds=args.folds, random_state=0)
    show(f"{args.folds} folds, {jk.n_total:,} candidates, 1-best "
         f"{100 * jk.top1_accuracy():.2f}%, oracle {100 * jk.oracle_accuracy():.2f}%")
    with rec.stage("dev n-best"):
        dev_nb = tagger.nbest(dev, k=10)
    show(f"dev 1-best {100 * dev_nb.top1_accuracy():.2f}%, oracle "
         f"{100 * dev_nb.oracle_accuracy():.2f}%")
    with rec.stage("views"):
        xv, yv = input_view(), TagNgramView()
        X = xv.fit_transform(jk.corpus)
        Y = yv.fit_transform(jk.corpus)
        Yhat = yv.transform_sequences(jk.tag_ids, jk.cand_offsets, jk.tags)
    notes["shape"] = (X.shape, X.nnz, Y.shape, Yhat.shape)
    show(f"X {X.shape[0]:,} x {X.shape[1]:,} (nnz {X.nnz:,}), Y d2 = {Y.shape[1]:,}, "
         f"Yhat {Yhat.shape[0]:,} rows")
    with rec.stage("engine 'auto' choice"):
        eng = CCAEngine(X, Y, solver="auto", random_state=0)
        notes["auto"] = (eng.solver_, eng.solver_reason_)
    show(f"auto -> {eng.solver_}: {eng.solver_reason_}")
    del eng, X, Y, Yhat

    fixed = dict(n_components=args.k, tau=args.tau, k_grid=[args.k], w=args.w,
                 solver=args.solver, max_rank=args.max_rank, input_view=input_view(),
                 random_state=0)
    makers = {
        "generative": lambda: GenerativeReranker(**fixed),
        "softened": lambda: SoftenedReranker(lam=args.lam, **fixed),
        "discriminative": lambda: DiscriminativeReranker(lam=args.lam, n_iter=5, **fixed),
    }
    results = {}
    profiles = {}
    model_time = 0.0
    for name in args.models:
        model = makers[name]()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            with rec.stage(f"fit {name}"):
                if args.profile:
                    import cProfile

                    prof = cProfile.Profile()
                    prof.enable()
                model.fit(jk, dev_nb)
                if args.profile:
                    prof.disable()
                    profiles[name] = prof
        model_time += rec.stages[-1]["time_s"]
        acc = model.score(dev_nb)
        results[name] = dict(acc=acc, solver=model.solver_,
                             warnings=sorted({str(w.message)[:160] for w in caught}),
                             n_iter=getattr(model, "n_iter_", None))
        show(f"solver {model.solver_}, dev {100 * acc:.2f}%"
             + (f" ({len(caught)} warnings)" if caught else ""))
        del model

    import resource

    total = time.perf_counter() - t_all
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB
    rows = []
    for s in rec.stages:
        row = {"stage": s["stage"], "time_s": s["time_s"], "peak_mb": s["rss_peak_mb"],
               "end_mb": s["rss_end_mb"]}
        name = s["stage"].replace("fit ", "")
        if name in results:
            r = results[name]
            row["note"] = f"solver {r['solver']}; dev accuracy {100 * r['acc']:.2f}%"
            if r["n_iter"] is not None:
                row["note"] += f"; {r['n_iter']} multiplier updates"
            if r["warnings"]:
                row["note"] += f"; warning: {r['warnings'][0]}"
        rows.append(row)
    (xs, xnnz, ys, yhs) = notes["shape"]
    lines = [
        "# Scale run: en-brown train, three CCA rerankers\n",
        f"Command: `python benchmarks/scale_run.py {' '.join(sys.argv[1:])}`  ",
        f"Machine: {info['cpus']} CPUs, {info['mem_gib']} GiB, Python {info['python']}, "
        f"NumPy {info['numpy']}, SciPy {info['scipy']}; load average at start "
        f"{info['loadavg']}, at the end {[round(x, 2) for x in os.getloadavg()]}.\n",
        f"X = SuffixView(1-4) + WordView: {xs[0]:,} x {xs[1]:,}, nnz {xnnz:,}; Y = "
        f"TagNgramView(XPOS 1-2): d2 = {ys[1]:,}; {yhs[0]:,} candidates.  k = {args.k}, "
        f"tau = {args.tau}, lam = {args.lam}, w = {args.w}, solver = {args.solver}, "
        f"max_rank = {args.max_rank}; the "
        f"engine's 'auto' would pick {notes['auto'][0]!r} ({notes['auto'][1]}).\n",
        f"Decoder on dev: 1-best {100 * dev_nb.top1_accuracy():.2f}%, 10-best oracle "
        f"{100 * dev_nb.oracle_accuracy():.2f}%.\n",
        markdown_table(rows, [("stage", "stage", "s"), ("time_s", "time (s)", ".1f"),
                              ("peak_mb", "peak RSS in stage (MB)", ".0f"),
                              ("end_mb", "RSS after (MB)", ".0f"), ("note", "note", "s")]),
        "",
        f"Three model fits: **{model_time:.1f} s** (target <= 180 s: "
        f"{'met' if model_time <= 180 else 'NOT met'}); whole run {total:.1f} s; process "
        f"peak RSS **{peak:,.0f} MB** (target <= 4,096 MB: "
        f"{'met' if peak <= 4096 else 'NOT met'}).",
    ]
    report = "\n".join(lines) + "\n"
    print("\n" + report)
    if args.profile:
        import io
        import pstats

        for name, prof in profiles.items():
            for key in ("cumulative", "tottime"):
                buf = io.StringIO()
                pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(args.profile_lines)
                text = buf.getvalue()
                print(f"--- cProfile of fit {name}, sorted by {key} ---")
                print(text[text.find("   ncalls"):])
    if args.out:
        args.out.write_text(report)
    return 0 if model_time <= 180 and peak <= 4096 else 1


if __name__ == "__main__":
    sys.exit(main())
