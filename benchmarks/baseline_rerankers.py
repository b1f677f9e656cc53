"""Baseline rerankers (paper Table 2 rows) on the real corpora: dev/test accuracy and fit time.

Protocol (paper section 4): a TrigramHMM trained on train; 10-best lists for train by 10-fold
jackknifing, for dev and test by the HMM trained on all of train.  Each baseline is fitted on
the jackknifed train n-best list, tuned on dev (boosting rounds, L1 strength, perceptron
epochs and decoder weight) and evaluated on test.  Fit times are wall-clock seconds of
``fit(train, dev)`` (feature extraction and dev tuning included).  ``--models`` picks other
registered rerankers by their command-line names (e.g. the hidden-variable model beside
Collins' boosting), and ``--repeat R`` fits them R times, alternating, so that each fit-time
ratio to the first model is taken side by side in one run (the median of R).

Usage::

    python benchmarks/baseline_rerankers.py                      # the four Table 2 languages
    python benchmarks/baseline_rerankers.py --sets en-wsj fr-sequoia --k 5 --folds 5
    python benchmarks/baseline_rerankers.py --sets en-wsj --models collins-sufx hidden-variable \
        --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from _data_check import require  # noqa: E402  (benchmarks/ is the script's dir)

from sparsecca import registry
from sparsecca.data import read_conllu
from sparsecca.registry import BASELINE_ROWS
from sparsecca.tagging import TrigramHMM, jackknife_nbest

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
#: (tag column, suffix lengths of the "Sufx" features) per data set
SETS = {
    "en-wsj": ("xpos", (2, 3, 4)),
    # Chinese words are one to three characters long: suffixes of length 1-2 play the role of
    # the paper's character 1-2-grams
    "zh-gsd": ("upos", (1, 2)),
    "fr-sequoia": ("upos", (2, 3, 4)),
    "sv-talbanken": ("upos", (2, 3, 4)),
    "en-brown": ("upos", (2, 3, 4)),
}


def find_split(directory: Path, split: str) -> Path:
    for name in (f"{split}.conllu", f"{split}.conllu.gz"):
        if (directory / name).is_file():
            return directory / name
    raise FileNotFoundError(f"no {split}.conllu(.gz) in {directory}")


def fmt(value) -> str:
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def run_set(data_dir: Path, name: str, k: int, folds: int, random_state: int,
            models=None, repeat: int = 1):
    tags, lengths = SETS[name]
    d = data_dir / name
    train, dev, test = (read_conllu(find_split(d, s), tags=tags) for s in ("train", "dev", "test"))
    t0 = time.perf_counter()
    train_nb = jackknife_nbest(TrigramHMM(), train, k=k, folds=folds, random_state=random_state)
    hmm = TrigramHMM().fit(train)
    dev_nb, test_nb = hmm.nbest(dev, k=k), hmm.nbest(test, k=k)
    t_nbest = time.perf_counter() - t0
    res = {"Baseline (HMM)": (dev_nb.top1_accuracy(), test_nb.top1_accuracy(), None, ""),
           "Oracle": (dev_nb.oracle_accuracy(), test_nb.oracle_accuracy(), None, "")}
    times = {}
    for rnd in range(repeat):  # each round fits every model once: the ratios are side by side
        fresh = registry.rerankers(random_state, names=models, lengths=lengths) if models \
            else registry.baseline_rerankers(random_state=random_state, lengths=lengths)
        for row, est in fresh.items():
            t0 = time.perf_counter()
            est.fit(train_nb, dev_nb)
            times.setdefault(row, []).append(time.perf_counter() - t0)
            if rnd:
                continue
            tuned = ", ".join(f"{a}={fmt(getattr(est, a))}" for a in
                              ("n_rounds_", "C_", "n_epochs_", "decoder_weight_", "lr_")
                              if hasattr(est, a))
            res[row] = (est.score(dev_nb), est.score(test_nb), None, tuned)
            print(f"  {name} {row}: dev {100 * res[row][0]:.2f} test {100 * res[row][1]:.2f} "
                  f"fit {times[row][0]:.1f}s ({tuned})", file=sys.stderr, flush=True)
    for row, ts in times.items():
        res[row] = (*res[row][:2], ts, res[row][3])
    info = (f"{name} ({tags}): train {train.n_sentences} sent / {train.n_tokens} tok, "
            f"{train_nb.n_total} train candidates, dev {dev.n_tokens} tok, test "
            f"{test.n_tokens} tok; n-best lists in {t_nbest:.1f}s")
    return res, info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--sets", nargs="+", default=["en-wsj", "zh-gsd", "fr-sequoia",
                                                   "sv-talbanken"], choices=list(SETS))
    ap.add_argument("--k", type=int, default=10, help="candidates per sentence")
    ap.add_argument("--folds", type=int, default=10, help="jackknife folds on train")
    ap.add_argument("--random-state", type=int, default=0)
    ap.add_argument("--models", nargs="+", metavar="NAME",
                    help="registered rerankers by command-line name (default: the baselines): "
                         + registry.help_text("reranker"))
    ap.add_argument("--repeat", type=int, default=1,
                    help="fit every model this many times, alternating (default 1)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error(f"--repeat must be an int >= 1, got {args.repeat}")
    try:
        model_rows = ([registry.get(m, "reranker").row for m in args.models] if args.models
                      else list(BASELINE_ROWS))
    except ValueError as exc:
        ap.error(str(exc))
    require(*(args.data_dir / name for name in args.sets), hint="pass --data-dir")  # exit 3
    results, infos = {}, []
    for name in args.sets:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        results[name], info = run_set(args.data_dir, name, args.k, args.folds,
                                      args.random_state, args.models, args.repeat)
        infos.append(info)
    rows = ["Baseline (HMM)", "Oracle", *model_rows]
    sets = args.sets
    w = max(len(r) for r in rows) + 2
    head = "".join(f"{s[:12]:>13}" for s in sets)
    print(f"\nToken accuracy (%), {args.k}-best, jackknifed train ({args.folds} folds), "
          f"tuned on dev")
    print(f"{'':{w}}{'Development':^{13 * len(sets)}}  {'Test':^{13 * len(sets)}}")
    print(f"{'':{w}}{head}  {head}")
    for r in rows:
        dev = "".join(f"{100 * results[s][r][0]:>13.2f}" for s in sets)
        test = "".join(f"{100 * results[s][r][1]:>13.2f}" for s in sets)
        print(f"{r:{w}}{dev}  {test}")
    print(f"\nFit time (s) of fit(train, dev), median of {args.repeat} alternating fit(s), "
          f"its ratio to the first model's, and the values tuned on dev")
    for s in sets:
        print(f"  {s}")
        first = statistics.median(results[s][model_rows[0]][2])
        for r in model_rows:
            _, _, ts, tuned = results[s][r]
            t = statistics.median(ts)
            runs = " / ".join(f"{x:.1f}" for x in ts)
            print(f"    {r:{w}}{t:8.1f}  {t / first:5.2f}x  ({runs})   {tuned}")
    print()
    for info in infos:
        print(info)


if __name__ == "__main__":
    main()
