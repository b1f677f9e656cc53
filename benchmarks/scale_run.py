"""The 50K-sentence scale run: the three CCA rerankers fitted on the whole en-brown train set.

The whole run happens in ONE fresh child process (``memory/_harness.run_child``, with
``--timeout``); the parent only prints.  In the child a psutil thread samples the RSS every
2 ms and each stage's peak is completed by the process high-water mark (``VmHWM``) whenever
it grew during the stage; the run's peak RSS is the child's own ``VmHWM`` (not the parent's,
not ``ru_maxrss``, which starts from the parent's RSS).  Stages, each with wall time and
peak RSS:

1. ``read``          en-brown train (51,606 sentences, 1,044,951 tokens; ``--n``: the first n)
                     and dev (2,867 sentences, always whole), XPOS tags
2. ``tagger fit``    TrigramHMM on train
3. ``jackknife``     10-fold (``--folds``) jackknifed 10-best lists of train
4. ``dev n-best``    10-best list of dev from the tagger of stage 2
5. ``views``         X = HStackView([SuffixView(1-4), WordView()]) (d1 >= 30K on the whole
                     set), Y = TagNgramView(XPOS 1-2-grams, d2 ~ 8K), Yhat (the candidates):
                     measured on their own for the table -- each reranker fit builds its views
                     again (the fit API takes n-best lists), and that time is inside the model
                     stages too
6. ``engine 'auto'`` what ``CCAEngine(X, Y, solver='auto')`` would pick here (no solve)
7. one stage per model: GenerativeReranker, SoftenedReranker, DiscriminativeReranker
   (sparsecca.rerank), each ONE fit at a single fixed grid point: k = ``--k`` 75 (k_grid =
   [k]), tau = ``--tau`` 0.9 (the softened and discriminative defaults' grids contain 0.9 /
   0.99), lam = ``--lam`` 0.75 (in both defaults' grids), w = ``--w`` 10 (fixed, not tuned),
   discriminative gamma = 0.1 and n_iter = 5 (its defaults: six engine solves in one fit),
   ``--solver`` 'randomized' with the rerankers' default ``max_rank`` = 512 (the rank of the
   rank-plus-ridge factor of X).  The dev n-best list is passed so that dev accuracy can be
   reported; nothing is tuned on it.

Targets (measured and reported, not asserted): the three model fits together <= 3 min and
peak RSS <= 4 GB on the 2-core reference machine.  The exit status is 0 whenever the run
completed (``--strict``: 1 when a target is missed).  ``--profile`` runs each model fit under
cProfile and prints the calls that take the time.

Usage::

    python benchmarks/scale_run.py --out scale_run.md        # whole en-brown train, ~5 min
    python benchmarks/scale_run.py --n 3000                  # first 3,000 sentences, ~30 s
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "memory"))

from _data_check import EXIT_FAILED, require  # noqa: E402  (benchmarks/ is the script's dir)
from _harness import (  # noqa: E402
    MB,
    StageRecorder,
    machine_info,
    markdown_table,
    peak_rss_bytes,
    run_child,
    write_report,
)
from _machine import machine_speed, machine_summary  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BROWN = SHARED_DATA / "en-brown"
MODELS = ["generative", "softened", "discriminative"]
TARGET_FIT_S = 180.0
TARGET_RSS_MB = 4096.0


# -- child: the run itself -----------------------------------------------------------------

def child(args) -> dict:
    from sparsecca.data import read_conllu, synthetic_corpus
    from sparsecca.features import HStackView, SuffixView, TagNgramView, WordView
    from sparsecca.linalg import CCAEngine
    from sparsecca.rerank import DiscriminativeReranker, GenerativeReranker, SoftenedReranker
    from sparsecca.tagging import TrigramHMM, jackknife_nbest

    # numba kernels from the on-disk cache, outside the measured stages
    warm = synthetic_corpus(n_sentences=60, random_state=0)
    TrigramHMM().fit(warm).nbest(warm[:5], k=3)

    rec = StageRecorder()
    out: dict = {"models": {}}

    def input_view():
        return HStackView([SuffixView(lengths=(1, 2, 3, 4)), WordView()])

    def show(extra=""):
        s = rec.stages[-1]
        print(f"  {s['stage']:<24} {s['time_s']:8.1f} s   peak RSS {s['rss_peak_mb']:7.0f} MB  "
              f"load {os.getloadavg()[0]:.2f}  {extra}", flush=True)

    t_all = time.perf_counter()
    with rec.stage("read"):
        train = read_conllu(BROWN / "train.conllu.gz", tags="xpos")
        if args.n:
            train = train[:args.n]
        dev = read_conllu(BROWN / "dev.conllu.gz", tags="xpos")
    out.update(n_train=train.n_sentences, n_train_tokens=train.n_tokens,
               n_dev=dev.n_sentences, n_dev_tokens=dev.n_tokens)
    show(f"train {train.n_sentences:,} sentences / {train.n_tokens:,} tokens, dev "
         f"{dev.n_sentences:,}")
    with rec.stage("tagger fit"):
        tagger = TrigramHMM().fit(train)
    out["n_tags"] = len(tagger.tags_)
    show(f"{len(tagger.tags_)} tags")
    with rec.stage("jackknife"):
        jk = jackknife_nbest(TrigramHMM(), train, k=10, folds=args.folds, random_state=0)
    out.update(n_candidates=int(jk.n_total), jk_top1=float(jk.top1_accuracy()),
               jk_oracle=float(jk.oracle_accuracy()))
    show(f"{args.folds} folds, {jk.n_total:,} candidates, 1-best "
         f"{100 * jk.top1_accuracy():.2f}%, oracle {100 * jk.oracle_accuracy():.2f}%")
    with rec.stage("dev n-best"):
        dev_nb = tagger.nbest(dev, k=10)
    out.update(dev_top1=float(dev_nb.top1_accuracy()), dev_oracle=float(dev_nb.oracle_accuracy()))
    show(f"dev 1-best {100 * dev_nb.top1_accuracy():.2f}%, oracle "
         f"{100 * dev_nb.oracle_accuracy():.2f}%")
    with rec.stage("views"):
        xv, yv = input_view(), TagNgramView()
        X = xv.fit_transform(jk.corpus)
        Y = yv.fit_transform(jk.corpus)
        Yhat = yv.transform_sequences(jk.tag_ids, jk.cand_offsets, jk.tags)
    out.update(x_shape=list(X.shape), x_nnz=int(X.nnz), y_shape=list(Y.shape),
               yhat_rows=int(Yhat.shape[0]))
    show(f"X {X.shape[0]:,} x {X.shape[1]:,} (nnz {X.nnz:,}), Y d2 = {Y.shape[1]:,}, "
         f"Yhat {Yhat.shape[0]:,} rows")
    with rec.stage("engine 'auto' choice"):
        eng = CCAEngine(X, Y, solver="auto", random_state=0)
    out.update(auto_solver=eng.solver_, auto_reason=eng.solver_reason_,
               x_merged_d1=int(eng.n_merged_features_))
    show(f"auto -> {eng.solver_}: {eng.solver_reason_}")
    del eng, X, Y, Yhat

    fixed = dict(n_components=args.k, tau=args.tau, k_grid=[args.k], w=args.w,
                 solver=args.solver, max_rank=args.max_rank, input_view=input_view(),
                 random_state=0)
    makers = {
        "generative": lambda: GenerativeReranker(**fixed),
        "softened": lambda: SoftenedReranker(lam=args.lam, **fixed),
        "discriminative": lambda: DiscriminativeReranker(lam=args.lam, gamma=0.1, n_iter=5,
                                                         **fixed),
    }
    for name in args.models:
        model = makers[name]()
        prof = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            with rec.stage(f"fit {name}"):
                if args.profile:
                    import cProfile

                    prof = cProfile.Profile()
                    prof.enable()
                model.fit(jk, dev_nb)
                if prof is not None:
                    prof.disable()
        acc = model.score(dev_nb)
        out["models"][name] = dict(
            dev_acc=float(acc), solver=model.solver_, params=model.tuned_params(),
            solver_error=getattr(model, "solver_error_", None),
            warnings=sorted({str(w.message)[:160] for w in caught}),
            n_iter=getattr(model, "n_iter_", None))
        show(f"solver {model.solver_}, dev {100 * acc:.2f}%"
             + (f" ({len(caught)} warnings)" if caught else ""))
        if prof is not None:
            _print_profile(name, prof, args.profile_lines)
        del model
    out["total_s"] = time.perf_counter() - t_all
    out["stages"] = rec.stages
    out["process_maxrss_mb"] = peak_rss_bytes() / MB
    return out


def _print_profile(name, prof, lines):
    import io
    import pstats

    for key in ("cumulative", "tottime"):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(lines)
        text = buf.getvalue()
        print(f"--- cProfile of fit {name}, sorted by {key} ---")
        print(text[text.find("   ncalls"):], flush=True)


# -- parent: report --------------------------------------------------------------------------

def report(args, res, info, command, wall):
    rows = []
    model_time = 0.0
    for s in res["stages"]:
        row = {"stage": s["stage"], "time_s": s["time_s"], "peak_mb": s["rss_peak_mb"],
               "end_mb": s["rss_end_mb"]}
        name = s["stage"].replace("fit ", "")
        if name in res["models"]:
            model_time += s["time_s"]
            r = res["models"][name]
            row["note"] = f"solver {r['solver']}; dev accuracy {100 * r['dev_acc']:.2f}%"
            if r["n_iter"] is not None:
                row["note"] += f"; {r['n_iter']} multiplier updates"
            if r["solver_error"] is not None:
                row["note"] += f"; solver error estimate {r['solver_error']:.2g}"
            if r["warnings"]:
                row["note"] += f"; warning: {r['warnings'][0]}"
        rows.append(row)
    peak = res["child_maxrss_mb"]
    fit_ok, rss_ok = model_time <= TARGET_FIT_S, peak <= TARGET_RSS_MB
    all_models = list(args.models) == MODELS
    xs, ys = res["x_shape"], res["y_shape"]
    whole = res["n_train"] == 51_606
    lines = [
        "# Scale run: en-brown train, three CCA rerankers\n",
        f"Command: `{command}`  ",
        f"Machine: {info['cpus']} CPUs, {info['mem_gib']} GiB, Python {info['python']}, "
        f"NumPy {info['numpy']}, SciPy {info['scipy']}; load average at start "
        f"{info['loadavg']}, at the end {[round(x, 2) for x in os.getloadavg()]}.  The whole "
        f"run in one fresh child process (wall {wall:.0f} s including its imports); per-stage "
        f"peak RSS from a 2 ms psutil sampler completed by the process high-water mark.  "
        f"Speed before the run ({machine_summary(info['speed'])}): "
        f"the reference machine's varies from day to day, see benchmarks/_machine.py.\n",
        f"Data: en-brown train{'' if whole else ' (first n only)'}: {res['n_train']:,} "
        f"sentences / {res['n_train_tokens']:,} tokens, {res['n_tags']} XPOS "
        f"tags; dev {res['n_dev']:,} sentences.  X = SuffixView(1-4) + WordView: {xs[0]:,} x "
        f"{xs[1]:,} (nnz {res['x_nnz']:,}; {res['x_merged_d1']:,} columns after merging "
        f"duplicates); Y = TagNgramView(XPOS 1-2): d2 = {ys[1]:,}; {res['yhat_rows']:,} "
        f"candidates.\n",
        f"One fit per model at a fixed grid point: k = {args.k}, tau = {args.tau}, lam = "
        f"{args.lam} (softened, discriminative), w = {args.w}, discriminative gamma = 0.1 and "
        f"n_iter = 5; solver = {args.solver}, max_rank = {args.max_rank}.  The engine's 'auto' "
        f"would pick {res['auto_solver']!r} ({res['auto_reason']}).\n",
        f"Decoder: jackknife 1-best {100 * res['jk_top1']:.2f}% / oracle "
        f"{100 * res['jk_oracle']:.2f}%; dev 1-best {100 * res['dev_top1']:.2f}%, 10-best "
        f"oracle {100 * res['dev_oracle']:.2f}%.\n",
        markdown_table(rows, [("stage", "stage", "s"), ("time_s", "time (s)", ".1f"),
                              ("peak_mb", "peak RSS in stage (MB)", ".0f"),
                              ("end_mb", "RSS after (MB)", ".0f"), ("note", "note", "s")]),
        "",
        f"Model fits ({', '.join(args.models)}): **{model_time:.1f} s** (target <= "
        f"{TARGET_FIT_S:.0f} s for all three: {'met' if fit_ok else 'MISSED'}"
        f"{'' if all_models else '; not all three models were run'}"
        f"{'' if whole else '; not the whole training set'}); whole run "
        f"{res['total_s']:.1f} s; peak RSS **{peak:,.0f} MB** (target <= "
        f"{TARGET_RSS_MB:,.0f} MB: {'met' if rss_ok else 'MISSED'}).",
    ]
    data = {"command": command, "machine": info, "args": vars(args) | {"out": str(args.out)},
            "result": res, "model_time_s": model_time, "peak_rss_mb": peak,
            "targets": {"fit_s": TARGET_FIT_S, "fit_met": fit_ok, "rss_mb": TARGET_RSS_MB,
                        "rss_met": rss_ok}}
    return "\n".join(lines) + "\n", data, fit_ok and rss_ok


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--n", type=int, default=0,
                    help="first n training sentences (default 0: all 51,606)")
    ap.add_argument("--solver", default="randomized",
                    choices=["auto", "dense", "randomized", "iterative"])
    ap.add_argument("--k", type=int, default=75)
    ap.add_argument("--tau", type=float, default=0.9)
    ap.add_argument("--lam", type=float, default=0.75)
    ap.add_argument("--max-rank", type=int, default=512,
                    help="rerankers' max_rank (rank of the randomized X factor; their default)")
    ap.add_argument("--w", type=float, default=10.0)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    ap.add_argument("--profile", action="store_true", help="cProfile each model fit")
    ap.add_argument("--profile-lines", type=int, default=25)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds for the whole run")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--out", type=Path,
                    help="also write the report: JSON when it ends in .json, else Markdown")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        res = child(args)
        with open(args.result, "w") as fh:
            json.dump(res, fh)
        return 0
    require(BROWN / "train.conllu.gz", BROWN / "dev.conllu.gz")  # exit 3, one line
    info = machine_info()
    info["speed"] = machine_speed()  # seconds compare across runs only at a similar speed
    print(f"machine: {info}", flush=True)
    argv_list = sys.argv[1:] if argv is None else list(argv)
    command = "python benchmarks/scale_run.py " + " ".join(argv_list)
    # the child gets the same arguments (it ignores --out: the parent writes the report)
    res = run_child([__file__, "--child", *argv_list], timeout=args.timeout)
    if "error" in res:
        print(f"scale run failed: {res['error']} (peak RSS {res.get('child_maxrss_mb', 0):.0f} "
              f"MB)", flush=True)
        return EXIT_FAILED
    text, data, ok = report(args, res, info, command, res["wall_s"])
    print("\n" + text)
    if args.out:
        data["markdown"] = text
        write_report(args.out, text, data)
        print(f"wrote {args.out}")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
