"""A tagger on a partitioned corpus: iterative parameter mixing against gathering the corpus
on the driver, side by side on a LocalCluster (#35); ``--tagger perceptron``
(:class:`PerceptronTagger`, the default) or ``mms`` (:class:`MMSTagger`).

en-brown train (UPOS) split into ``--partitions`` sentence-contiguous partitions, persisted on
a LocalCluster of two single-threaded worker processes.  Fits alternate between
``partitioned_fit="gather"`` (the corpus gathered, the in-memory training on the driver) and
``partitioned_fit="mixing"`` (one epoch per partition on the workers, mixed on the driver),
``--repeat`` pairs.  Prints the median fit time of each, the median and range of the
pairwise ratios mixing / gather, and the test accuracy of each model (en-brown test; for the
MMS tagger also on the test tokens of words unseen in training).

Usage::

    python benchmarks/perceptron_mixing.py [--tagger perceptron] [--sentences N]
        [--n-iter 10] [--partitions 4] [--mixing-weights uniform] [--repeat 1] [--dev]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np
from _data_check import require  # noqa: E402  (benchmarks/ is the script's dir)

from sparsecca.data import read_conllu
from sparsecca.distributed import PartitionedCorpus
from sparsecca.tagging import MMSTagger, PerceptronTagger

BROWN = Path(__file__).resolve().parents[2] / "shared" / "data" / "en-brown"


TAGGERS = {"perceptron": PerceptronTagger, "mms": MMSTagger}


def _fit(parts, how, args, dev):
    model = TAGGERS[args.tagger](n_iter=args.n_iter, partitioned_fit=how,
                                 mixing_weights=args.mixing_weights)
    t = time.perf_counter()
    model.fit(parts, dev=dev)
    return time.perf_counter() - t, model


def local_cluster():
    """A client of a LocalCluster of two single-threaded worker processes (a context manager
    closing both)."""
    import contextlib

    import distributed

    stack = contextlib.ExitStack()
    cluster = stack.enter_context(distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
        silence_logs=logging.ERROR))
    stack.enter_context(distributed.Client(cluster))
    return stack


def alternate(fit, repeat):
    """``repeat`` pairs of ``fit("gather")`` and ``fit("mixing")`` (each giving ``(seconds,
    model)``), alternating which goes first; the times, the last models and the ratios
    mixing / gather of the pairs."""
    times = {"gather": [], "mixing": []}
    models = {}
    for r in range(repeat):
        for how in (("gather", "mixing") if r % 2 == 0 else ("mixing", "gather")):
            t, models[how] = fit(how)
            times[how].append(t)
            print(f"  pair {r + 1}: {how} {t:.2f} s", flush=True)
    return times, models, np.array(times["mixing"]) / np.array(times["gather"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tagger", default="perceptron", choices=sorted(TAGGERS))
    ap.add_argument("--sentences", type=int, default=None,
                    help="keep the first N training sentences (default: all)")
    ap.add_argument("--n-iter", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--mixing-weights", default="uniform", choices=["uniform", "updates"])
    ap.add_argument("--repeat", type=int, default=1, help="alternating pairs")
    ap.add_argument("--dev", action="store_true",
                    help="fit with en-brown dev (the best epoch; for the MMS tagger also the "
                         "k-best temperature)")
    args = ap.parse_args(argv)
    if min(args.repeat, args.partitions, args.n_iter, args.sentences or 1) < 1:
        ap.error(f"--repeat, --partitions, --n-iter and --sentences must be >= 1, got "
                 f"{args.repeat}, {args.partitions}, {args.n_iter} and {args.sentences}")
    require(BROWN / "train.conllu.gz", BROWN / "test.conllu.gz",
            *([BROWN / "dev.conllu.gz"] if args.dev else []))
    train = read_conllu(BROWN / "train.conllu.gz", tags="upos")
    if args.sentences is not None:
        train = train[:args.sentences]
    test = read_conllu(BROWN / "test.conllu.gz", tags="upos")
    dev = read_conllu(BROWN / "dev.conllu.gz", tags="upos") if args.dev else None
    print(f"{TAGGERS[args.tagger].__name__}; "
          f"en-brown train: {train.n_sentences} sentences, {train.n_tokens} tokens; "
          f"{args.partitions} partitions; {args.n_iter} epochs; "
          f"dev {dev.n_tokens if args.dev else 'none'}; test {test.n_tokens} tokens")
    with local_cluster():
        parts = PartitionedCorpus.from_corpus(train, args.partitions).persist()
        times, models, ratios = alternate(lambda how: _fit(parts, how, args, dev),
                                          args.repeat)
        print()
        last = ("train errors, last epoch" if args.tagger == "perceptron"
                else "test accuracy, unknown words")
        print(f"| fit | median time (s) | test accuracy | {last} |")
        print("|---|---:|---:|---:|")
        for how in ("gather", "mixing"):
            m = models[how]
            extra = (m.train_errors_[-1] if args.tagger == "perceptron"
                     else f"{m.score(test, tokens='unknown'):.4f}")
            print(f"| {how} | {np.median(times[how]):.2f} | {m.score(test):.4f} | {extra} |")
        print(f"\nmixing / gather: median {np.median(ratios):.2f} "
              f"(pairs {ratios.min():.2f}-{ratios.max():.2f})")


if __name__ == "__main__":
    main()
