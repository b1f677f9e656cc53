"""PerceptronReranker and HiddenVariableReranker on partitioned n-best lists: iterative
parameter mixing against gathering the lists on the driver, side by side on a LocalCluster
(#35).

en-wsj train (XPOS): the 10-fold jackknifed 10-best lists of a TrigramHMM (the protocol's
training lists), split into ``--partitions`` sentence-contiguous partitions persisted on a
LocalCluster of two single-threaded worker processes; dev and test 10-best lists of an HMM
fitted on train.  For each reranker, fits alternate between ``partitioned_fit="gather"``
(the lists gathered, the in-memory fit on the driver) and ``partitioned_fit="mixing"`` (the
epochs run per partition on the workers, mixed on the driver), ``--repeat`` pairs, both
tuned on dev with the rerankers' default grids.  Prints the median fit time of each, the
median and range of the pairwise ratios mixing / gather, the dev and test accuracy of each
model, and the load average before and after.

Usage::

    python benchmarks/reranker_mixing.py [--sentences N] [--partitions 4]
        [--rerankers perceptron,hidden] [--mixing-weights uniform] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from _data_check import require  # noqa: E402  (benchmarks/ is the script's dir)
from perceptron_mixing import alternate, local_cluster  # noqa: E402

from sparsecca.data import read_conllu
from sparsecca.distributed import PartitionedNBest
from sparsecca.rerank import HiddenVariableReranker, PerceptronReranker
from sparsecca.tagging import TrigramHMM, jackknife_nbest

WSJ = Path(__file__).resolve().parents[2] / "shared" / "data" / "en-wsj"
RERANKERS = {"perceptron": PerceptronReranker, "hidden": HiddenVariableReranker}


def _fit(cls, parts, dev, how, mixing_weights):
    model = cls(random_state=0, partitioned_fit=how, mixing_weights=mixing_weights)
    t = time.perf_counter()
    model.fit(parts, dev)
    return time.perf_counter() - t, model


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=None,
                    help="keep the first N training sentences (default: all)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--rerankers", default="perceptron,hidden",
                    help="comma-separated, of: " + ", ".join(RERANKERS))
    ap.add_argument("--mixing-weights", default="uniform", choices=["uniform", "updates"])
    ap.add_argument("--repeat", type=int, default=1, help="alternating pairs")
    args = ap.parse_args(argv)
    names = args.rerankers.split(",")
    if any(n not in RERANKERS for n in names):
        ap.error(f"--rerankers must name some of {sorted(RERANKERS)}, got {args.rerankers!r}")
    if min(args.repeat, args.partitions, args.sentences or 2) < 1 or args.sentences == 1:
        ap.error(f"--repeat and --partitions must be >= 1 and --sentences >= 2, got "
                 f"{args.repeat}, {args.partitions} and {args.sentences}")
    require(WSJ / "train.conllu", WSJ / "dev.conllu", WSJ / "test.conllu")
    train = read_conllu(WSJ / "train.conllu", tags="xpos")
    if args.sentences is not None:
        train = train[:args.sentences]
    hmm = TrigramHMM().fit(train)
    lists = jackknife_nbest(TrigramHMM(), train, k=10, folds=10, random_state=0)
    dev = hmm.nbest(read_conllu(WSJ / "dev.conllu", tags="xpos"), k=10)
    test = hmm.nbest(read_conllu(WSJ / "test.conllu", tags="xpos"), k=10)
    print(f"en-wsj train: {lists.n_sentences} sentences, {lists.n_total} candidates in "
          f"{args.partitions} partitions; dev {dev.corpus.n_tokens} tokens, test "
          f"{test.corpus.n_tokens} tokens; mixing_weights={args.mixing_weights}")
    print(f"load average before: {_load()}", flush=True)
    rows = []
    with local_cluster():
        parts = PartitionedNBest.from_nbest(lists, args.partitions).persist()
        for name in names:
            print(f"{name}:")
            cls = RERANKERS[name]
            times, models, ratios = alternate(
                lambda how, cls=cls: _fit(cls, parts, dev, how, args.mixing_weights),
                args.repeat)
            rows.append((name, times, models, ratios))
    print(f"load average after: {_load()}")
    print()
    print("| reranker | fit | median time (s) | dev accuracy | test accuracy | tuned |")
    print("|---|---|---:|---:|---:|---|")
    for name, times, models, _ in rows:
        for how in ("gather", "mixing"):
            m = models[how]
            print(f"| {name} | {how} | {np.median(times[how]):.2f} | {m.score(dev):.4f} | "
                  f"{m.score(test):.4f} | {m.tuned_params()} |")
    print()
    for name, _, _, ratios in rows:
        print(f"{name}: mixing / gather: median {np.median(ratios):.2f} "
              f"(pairs {ratios.min():.2f}-{ratios.max():.2f})")


if __name__ == "__main__":
    main()
