"""Our taggers next to the field's, side by side in one run on the five shared sets.

Systems (``--systems``; every (set, system) pair runs in its own fresh child process, so its
peak RSS is its own):

* ``hmm``: sparsecca's TrigramHMM (defaults);
* ``perceptron``: sparsecca's PerceptronTagger (defaults);
* ``memm``: sparsecca's MEMMTagger (defaults), when ``sparsecca.tagging`` exports it --
  otherwise skipped with a printed note;
* ``nltk-tnt``: NLTK's TnT (``nltk.tag.tnt.TnT()``, defaults);
* ``nltk-perceptron``: NLTK's greedy averaged perceptron (``PerceptronTagger(load=False)``,
  ``train(sentences)`` with its default 5 iterations);
* ``crf-ap`` / ``crf-lbfgs``: python-crfsuite, first-order linear-chain model over the
  templates word, lowercase, prefixes and suffixes 1-4, upper / digit / hyphen flags and the
  lowercased words at -2..+2 (``crf_features`` below), trained with the averaged
  perceptron (``max_iterations`` 10) or L-BFGS (``max_iterations`` 100, ``c2`` 1e-3).

Per system: test accuracy on all tokens, known tokens (word form seen in train) and unknown
tokens; train time (s) and tagging throughput (test tokens / s), both end to end as a user
runs them -- crfsuite's times include its Python feature extraction and the ``Trainer``
appends, ours include ours; for ours the 10-best oracle accuracy (the best candidate of each
sentence: what a reranker can still gain; not timed); peak RSS of the child (its own
``VmHWM``, see ``memory/_harness.py``).  Our models first fit and tag a 50-sentence slice,
so numba's compile or cache-load time (a one-off per installation) is not in their figures.

Targets of the PerceptronTagger against crfsuite's averaged perceptron (the same
templates), per set: accuracy >= it, train time <= 1/2 of it, tagging tokens/s >= 3x it.

Each target line also gives the CPU-time ratios (the calling thread's ``time.thread_time``
around training and tagging, where all of both systems' work runs): on a loaded machine a
run's wall time is mostly its share of the CPUs, its CPU time the work it did.

``--repeat N`` runs every (set, system) N times, the systems of a set taking turns, and keeps
each system's fastest train and tagging times: on a shared machine a load spike then does not
decide a ratio.

``--max-sentences N`` keeps the first N sentences of train and test (a smoke run; its figures
are not comparable with the targets).

Usage::

    python benchmarks/tagger_peers.py [--sets en-wsj:xpos zh-gsd:upos ...]
        [--systems perceptron crf-ap ...] [--max-sentences N] [--repeat N] [--timeout S]
        [--out FILE]

Exit status (``_data_check.py``): 0 when every run finished (missed targets are marked in
the output); 1 when a child failed or timed out (after the table); 2 on a usage error; 3 when
a data file is missing (one line naming it, before any measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "memory"))

from _data_check import EXIT_FAILED, SHARED_DATA, conllu_split, require  # noqa: E402
from _harness import (  # noqa: E402
    MB,
    StageRecorder,
    machine_info,
    markdown_table,
    peak_rss_bytes,
    run_child,
    write_report,
)
from compare_peers import have  # noqa: E402

SETS = ["en-wsj:xpos", "zh-gsd:upos", "fr-sequoia:upos", "sv-talbanken:upos", "en-brown:upos"]
SYSTEMS = ["hmm", "perceptron", "memm", "nltk-tnt", "nltk-perceptron", "crf-ap", "crf-lbfgs"]
LABELS = {"hmm": "TrigramHMM", "perceptron": "PerceptronTagger", "memm": "MEMMTagger",
          "nltk-tnt": "NLTK TnT", "nltk-perceptron": "NLTK PerceptronTagger",
          "crf-ap": "crfsuite AP", "crf-lbfgs": "crfsuite L-BFGS"}
#: the module each system needs beyond sparsecca (checked in the parent)
NEEDS = {"nltk-tnt": "nltk", "nltk-perceptron": "nltk", "crf-ap": "pycrfsuite",
         "crf-lbfgs": "pycrfsuite"}
#: PerceptronTagger vs crfsuite AP: train-time and throughput ratios it must reach
TARGETS = {"train_speedup": 2.0, "tag_speedup": 3.0}
COLS = [("set", "set", "s"), ("system", "system", "s"), ("status", "status", "s"),
        ("acc", "acc %", ".2f"), ("known", "known %", ".2f"), ("unknown", "unknown %", ".2f"),
        ("oracle", "10-best oracle %", ".2f"), ("train_s", "train s", ".2f"),
        ("tok_s", "tag tokens/s", ",.0f"), ("rss_mb", "peak RSS MB", ".0f"),
        ("load", "load", ".2f")]


# -- crfsuite's feature templates ----------------------------------------------------------

def crf_features(words: list[str]) -> list[list[str]]:
    """Attributes of every token of a sentence for python-crfsuite (the issue's templates)."""
    low = [w.lower() for w in words]
    n = len(words)
    out = []
    for i, w in enumerate(words):
        f = ["w=" + w, "l=" + low[i]]
        for k in range(1, min(4, len(w)) + 1):
            f.append("p%d=%s" % (k, w[:k]))
            f.append("s%d=%s" % (k, w[-k:]))
        if any(c.isupper() for c in w):
            f.append("upper")
        if any(c.isdigit() for c in w):
            f.append("digit")
        if "-" in w:
            f.append("hyphen")
        for d in (-2, -1, 1, 2):
            j = i + d
            f.append("w%+d=%s" % (d, low[j] if 0 <= j < n else ("BOS" if j < 0 else "EOS")))
        out.append(f)
    return out


# -- child ---------------------------------------------------------------------------------

@contextmanager
def cpu_time(marks):
    """Appends the calling thread's CPU time before and after the block: on a loaded machine
    the wall time of a run is mostly its share of the CPUs, its CPU time the work it did."""
    marks.append(time.thread_time())
    yield
    marks.append(time.thread_time())


def _ours(system):
    import sparsecca.tagging as tagging

    return {"hmm": tagging.TrigramHMM, "perceptron": tagging.PerceptronTagger,
            "memm": getattr(tagging, "MEMMTagger", None)}[system]


def child(cfg) -> dict:
    from tagger_accuracy import load

    name, column = cfg["set"].split(":")
    train, test = load(name, column)
    if cfg["max_sentences"]:
        train, test = train[:cfg["max_sentences"]], test[:cfg["max_sentences"]]
    system = cfg["system"]
    sents = train.to_sentences()
    words = [[w for w, _ in s] for s in test.to_sentences()]
    gold = [t for s in test.to_sentences() for _, t in s]
    seen = {w for s in sents for w, _ in s}
    rec = StageRecorder()
    cpu_marks: list[float] = []
    out = {"n_tokens": len(gold), "n_train_tokens": train.n_tokens}
    if system in ("hmm", "perceptron", "memm"):
        cls = _ours(system)
        cls().fit(train[:50]).tag(test[:50])  # numba compile / cache load, not timed
        with rec.stage("train"), cpu_time(cpu_marks):
            model = cls().fit(train)
        with rec.stage("tag"), cpu_time(cpu_marks):
            tagged = model.tag(test)
        items = tagged.tags.items
        pred = [items[i] for i in tagged.tag_ids]
        out["oracle"] = model.nbest(test, k=10).oracle_accuracy()
    elif system == "nltk-tnt":
        from nltk.tag.tnt import TnT

        with rec.stage("train"), cpu_time(cpu_marks):
            tnt = TnT()
            tnt.train(sents)
        with rec.stage("tag"), cpu_time(cpu_marks):
            pred = [t for s in tnt.tagdata(words) for _, t in s]
    elif system == "nltk-perceptron":
        from nltk.tag.perceptron import PerceptronTagger

        with rec.stage("train"), cpu_time(cpu_marks):
            nltk_ap = PerceptronTagger(load=False)
            nltk_ap.train([list(s) for s in sents])
        with rec.stage("tag"), cpu_time(cpu_marks):
            pred = [t for s in words for _, t in nltk_ap.tag(s)]
    else:
        import pycrfsuite

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.crfsuite")
            with rec.stage("train"), cpu_time(cpu_marks):
                trainer = pycrfsuite.Trainer(algorithm="ap" if system == "crf-ap" else "lbfgs",
                                             verbose=False)
                for s in sents:
                    trainer.append(crf_features([w for w, _ in s]), [t for _, t in s])
                trainer.set_params({"max_iterations": 10} if system == "crf-ap"
                                   else {"max_iterations": 100, "c2": 1e-3})
                trainer.train(path)
            with rec.stage("tag"), cpu_time(cpu_marks):
                tagger = pycrfsuite.Tagger()
                tagger.open(path)
                pred = [t for s in words for t in tagger.tag(crf_features(s))]
                tagger.close()
    fit, tag = rec.stages
    cpu = dict(zip(("train_cpu_s", "tag_cpu_s"), map(float, np.diff(cpu_marks)[::2])))
    known = [w in seen for s in words for w in s]
    ok = [p == g for p, g in zip(pred, gold)]
    n_known = sum(known)
    out.update(train_s=fit["time_s"], tag_s=tag["time_s"], **cpu,
               acc=sum(ok) / max(len(ok), 1),
               known=sum(o for o, k in zip(ok, known) if k) / max(n_known, 1),
               unknown=(sum(o for o, k in zip(ok, known) if not k) / (len(ok) - n_known)
                        if len(ok) > n_known else None))
    return out


# -- parent --------------------------------------------------------------------------------

def available(system) -> str | None:
    """None when the system can run, else why not."""
    if system in NEEDS:
        mod = NEEDS[system]
        return None if have(mod) else f"{mod} not installed"
    if system == "memm":
        import sparsecca.tagging as tagging

        if not hasattr(tagging, "MEMMTagger"):
            return "sparsecca.tagging does not export MEMMTagger"
    return None


def _dist_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "installed"


def run(cfg, timeout) -> dict:
    res = run_child([__file__, "--child", json.dumps(cfg)], timeout=timeout)
    res["load"] = os.getloadavg()[0]
    if "error" in res:
        res["status"] = "timeout" if res["error"].startswith("timeout") else \
            f"failed ({res['error']})"
    else:
        res["status"] = "ok"
    return res


def fastest(runs) -> dict:
    """One record of repeated runs: the first failed one, else the first with the fastest
    train and tagging times of all (the other fields are the same in every run)."""
    for r in runs:
        if r["status"] != "ok":
            return r
    out = dict(runs[0], n_runs=len(runs), **{k: min(r[k] for r in runs) for k in
                                             ("train_s", "tag_s", "train_cpu_s", "tag_cpu_s")})
    return out


def row_of(spec, system, r) -> dict:
    row = {"set": spec, "system": LABELS[system], "status": r["status"], "load": r.get("load")}
    if r["status"] == "ok":
        row.update(acc=100 * r["acc"], known=100 * r["known"],
                   unknown=None if r["unknown"] is None else 100 * r["unknown"],
                   oracle=100 * r["oracle"] if "oracle" in r else None, train_s=r["train_s"],
                   tok_s=r["n_tokens"] / r["tag_s"], rss_mb=r["child_maxrss_mb"])
    return row


def target_lines(results) -> list[str]:
    """PerceptronTagger vs crfsuite AP per set (accuracy, train and tagging speed-ups)."""
    lines = []
    for spec, res in results.items():
        ours, peer = res.get("perceptron"), res.get("crf-ap")
        if not (ours and peer and ours["status"] == peer["status"] == "ok"):
            continue
        train_x = peer["train_s"] / ours["train_s"]
        tag_x = (ours["n_tokens"] / ours["tag_s"]) / (peer["n_tokens"] / peer["tag_s"])
        checks = [(f"accuracy {100 * ours['acc']:.2f} vs {100 * peer['acc']:.2f}",
                   ours["acc"] >= peer["acc"]),
                  (f"train {train_x:.2f}x faster (>= {TARGETS['train_speedup']:g}x)",
                   train_x >= TARGETS["train_speedup"]),
                  (f"tagging {tag_x:.2f}x the tokens/s (>= {TARGETS['tag_speedup']:g}x)",
                   tag_x >= TARGETS["tag_speedup"])]
        cpu_train = peer["train_cpu_s"] / ours["train_cpu_s"]
        cpu_tag = peer["tag_cpu_s"] / ours["tag_cpu_s"]
        lines.append(f"- {spec}: " + "; ".join(f"{text} {'met' if ok else 'NOT MET'}"
                                               for text, ok in checks)
                     + f" (CPU time: train {cpu_train:.2f}x, tagging {cpu_tag:.2f}x)")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--sets", nargs="+", default=SETS, metavar="NAME:COLUMN",
                    help="name:tagcolumn pairs (default: the five shared sets)")
    ap.add_argument("--systems", nargs="+", default=SYSTEMS, choices=SYSTEMS, metavar="SYSTEM",
                    help=f"among {', '.join(SYSTEMS)} (default: all)")
    ap.add_argument("--max-sentences", type=int, default=None, metavar="N",
                    help="only the first N sentences of train and test (a smoke run)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run every (set, system) N times, the systems of a set alternating, "
                         "and keep each one's fastest train and tagging times (default 1)")
    ap.add_argument("--timeout", type=float, default=3600.0,
                    help="per-run limit in seconds (default 3600)")
    ap.add_argument("--out", type=Path,
                    help="also write the report: JSON when it ends in .json, else Markdown")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        out = child(json.loads(args.child))
        out["process_maxrss_mb"] = peak_rss_bytes() / MB  # this child's own VmHWM
        with open(args.result, "w") as fh:
            json.dump(out, fh)
        return 0
    for spec in args.sets:
        if spec.count(":") != 1 or spec.split(":")[1] not in ("upos", "xpos"):
            ap.error(f"--sets takes name:upos or name:xpos, got {spec!r}")
    if args.max_sentences is not None and args.max_sentences < 1:
        ap.error(f"--max-sentences must be an int >= 1, got {args.max_sentences}")
    if args.repeat < 1:
        ap.error(f"--repeat must be an int >= 1, got {args.repeat}")
    if args.timeout <= 0:
        ap.error(f"--timeout must be > 0, got {args.timeout}")
    # every file before the first run: exit 3 with one line (_data_check.py)
    require(*(conllu_split(SHARED_DATA / spec.split(":")[0], split)
              for spec in args.sets for split in ("train", "test")))
    info = machine_info()
    command = "python benchmarks/tagger_peers.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    print(f"machine: {info}", flush=True)
    if args.max_sentences is not None:
        print(f"first {args.max_sentences:,} sentences of each train and test file only: a "
              f"smoke run, not comparable with the targets", flush=True)
    skip = {s: available(s) for s in args.systems}
    for s, why in skip.items():
        if why:
            print(f"note: {LABELS[s]} skipped: {why}", flush=True)
    t0 = time.perf_counter()
    rows, results = [], {}
    for spec in args.sets:
        results[spec] = {}
        runs = {system: [] for system in args.systems}
        for _ in range(args.repeat):  # the systems alternate, so load drifts hit all alike
            for system in args.systems:
                if not skip[system]:
                    runs[system].append(run({"set": spec, "system": system,
                                             "max_sentences": args.max_sentences},
                                            args.timeout))
        for system in args.systems:
            r = (fastest(runs[system]) if not skip[system]
                 else {"status": f"skipped ({skip[system]})"})
            results[spec][system] = r
            row = row_of(spec, system, r)
            rows.append(row)
            print(f"  {spec:<18} {LABELS[system]:<22} " + (
                f"acc {row['acc']:.2f}  train {row['train_s']:.2f} s  "
                f"{row['tok_s']:,.0f} tok/s  {row['rss_mb']:.0f} MB"
                if r["status"] == "ok" else r["status"]), flush=True)
    failed = [f"{spec}: {LABELS[s]}" for spec, res in results.items() for s, r in res.items()
              if r["status"] == "timeout" or r["status"].startswith("failed")]
    lines = target_lines(results)
    text = "\n".join([
        "# Taggers vs peers\n",
        f"Command: `{command}`  ",
        f"Machine: {info['cpus']} CPUs, {info['mem_gib']} GiB, Python {info['python']}, NumPy "
        f"{info['numpy']}; NLTK {have('nltk') or '-'}, python-crfsuite "
        f"{_dist_version('python-crfsuite') if have('pycrfsuite') else '-'}; load average "
        f"at start {info['loadavg']}, at the end "
        f"{[round(x, 2) for x in os.getloadavg()]}; total {time.perf_counter() - t0:.0f} s.  "
        f"Each run in its own process, train -> test; train s and tokens/s end to end "
        f"(feature extraction included), the fastest of {args.repeat} run(s) per system, the "
        f"systems of a set alternating; peak RSS = the child's whole-run peak.\n",
        markdown_table(rows, COLS) + "\n",
        "Targets, PerceptronTagger vs crfsuite AP (same templates):\n",
        "\n".join(lines) if lines else "- (not both run)",
        *([f"\nFailed runs: {', '.join(failed)}"] if failed else []),
    ])
    print("\n" + text, flush=True)
    if args.out:
        write_report(args.out, text, {"command": command, "machine": info,
                                      "args": {k: str(v) if isinstance(v, Path) else v
                                               for k, v in vars(args).items()},
                                      "results": results, "rows": rows, "targets": lines,
                                      "failed": failed})
    return EXIT_FAILED if failed else 0


if __name__ == "__main__":
    sys.exit(main())
