"""The boosting reranker fitted on partitioned n-best lists against the in-memory fit, and
what an exact per-round distribution of the boosting path would cost (#35).

Data: jackknifed ``--k``-best lists (``--folds`` folds, TrigramHMM) of the first
``--sentences`` training sentences of en-wsj (XPOS), and the ``--k``-best lists of the
first ``--dev`` dev sentences; both split into ``--partitions`` partitions persisted on a
LocalCluster of two single-threaded worker processes.

1. Fits: ``BoostingReranker(features=--features, n_rounds=--n-rounds)`` alternating between
   the in-memory fit on the driver (the lists in memory) and the fit on the partitions
   (features and training pairs built on the workers, the pairs gathered, the path on the
   driver, the dev losses tree-summed), ``--repeat`` pairs; the two fits must be equal.
2. Per-round distribution: every worker holds an actor with its partitions' pairs (D, the
   margins, exp(-margin)); the first ``--replay`` rounds of the in-memory path are replayed:
   per round the driver sends (feature, step) to every actor, each updates its pairs where
   the feature fires and returns the changes of its W+ / W- sums, and the driver adds them
   and takes the argmax of the gains, as an exact distributed path would.  Also the bare
   round trip of one ``client.submit`` per worker.  The projection: the rounds the fit ran
   times the measured time per round.

Prints the fit times, their ratio (median of the pairs), the load average before and after,
the bytes gathered (the pairs) against the lists, and the per-round figures.

Usage::

    python benchmarks/boosting_scale_out.py [--sentences 1500] [--dev 500] [--k 10]
        [--folds 5] [--partitions 4] [--n-rounds 20000] [--features suffix] [--repeat 2]
        [--replay 500]
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import time

import numpy as np
import scipy.sparse as sp
from _data_check import SHARED_DATA, require  # noqa: E402  (benchmarks/ is the script's dir)

WSJ = SHARED_DATA / "en-wsj"


class PairShard:
    """A worker's pairs for the replay: the worker side of one exact distributed round."""

    def __init__(self, D, margins):
        self.D = sp.csr_matrix(D)
        self.C = self.D.tocsc()
        self.m = np.array(margins, dtype=np.float64)
        self.shift = float(self.m.min(initial=0.0))
        self.w = np.exp(-(self.m - self.shift))

    def step(self, k, delta):
        """Apply ``delta`` to feature ``k``: the touched features and their W+ / W- changes,
        and the change of the loss."""
        a, b = self.C.indptr[k], self.C.indptr[k + 1]
        rows, vals = self.C.indices[a:b], self.C.data[a:b]
        self.m[rows] += delta * vals
        v = np.exp(-(self.m[rows] - self.shift))
        diff = v - self.w[rows]
        self.w[rows] = v
        sub = self.D[rows]
        per = np.repeat(diff, np.diff(sub.indptr))
        pos = sub.data > 0
        touched, inv = np.unique(sub.indices, return_inverse=True)
        dwp = np.bincount(inv[pos], weights=per[pos], minlength=touched.size)
        dwm = np.bincount(inv[~pos], weights=per[~pos], minlength=touched.size)
        return touched, dwp, dwm, float(diff.sum())


def _ping(x):
    return x


def replay(client, D, margins, bounds, features, deltas):
    """Seconds per round of the exact distributed path, replaying ``features, deltas``."""
    workers = list(client.scheduler_info()["workers"])
    shards = [(D[a:b], margins[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    by_worker = [[s for j, s in enumerate(shards) if j % len(workers) == i]
                 for i in range(len(workers))]
    actors = []
    for w, mine in zip(workers, by_worker):
        if mine:
            Dw = sp.vstack([d for d, _ in mine], format="csr")
            mw = np.concatenate([m for _, m in mine])
            actors.append(client.submit(PairShard, Dw, mw, actor=True, workers=[w]).result())
    n_feat = D.shape[1]
    wp, wm, gain = np.zeros(n_feat), np.zeros(n_feat), np.zeros(n_feat)
    for f in [a.step(int(features[0]), 0.0) for a in actors]:  # a step of 0: warm-up
        f.result()
    t = time.perf_counter()
    for k, delta in zip(features.tolist(), deltas.tolist()):
        for touched, dwp, dwm, _ in [f.result() for f in [a.step(k, delta) for a in actors]]:
            np.add.at(wp, touched, dwp)
            np.add.at(wm, touched, dwm)
            gain[touched] = (np.sqrt(np.maximum(wp[touched], 0))
                             - np.sqrt(np.maximum(wm[touched], 0))) ** 2
        int(np.argmax(gain))
    per_round = (time.perf_counter() - t) / max(1, features.size)
    n_ping = 50
    t = time.perf_counter()
    for i in range(n_ping):
        client.gather([client.submit(_ping, i, workers=[w], pure=False) for w in workers])
    return per_round, (time.perf_counter() - t) / n_ping


def _lists(args):
    from sparsecca.data import read_conllu
    from sparsecca.tagging import TrigramHMM, jackknife_nbest

    train = read_conllu(WSJ / "train.conllu", tags="xpos")[:args.sentences]
    dev = read_conllu(WSJ / "dev.conllu", tags="xpos")[:args.dev]
    return (jackknife_nbest(TrigramHMM(), train, k=args.k, folds=args.folds, random_state=0),
            TrigramHMM().fit(train).nbest(dev, k=args.k))


def _timed(make, train, dev):
    t = time.perf_counter()
    model = make().fit(train, dev)
    return time.perf_counter() - t, model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=1500)
    ap.add_argument("--dev", type=int, default=500)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--n-rounds", type=int, default=20000)
    ap.add_argument("--features", default="suffix", choices=["suffix", "ngram"])
    ap.add_argument("--repeat", type=int, default=2, help="alternating pairs")
    ap.add_argument("--replay", type=int, default=500, help="rounds replayed per round trip")
    args = ap.parse_args(argv)
    small = min(args.sentences, args.dev, args.partitions, args.n_rounds, args.repeat,
                args.replay, args.folds - 1, args.k - 1)
    if small < 1:
        ap.error("--sentences, --dev, --partitions, --n-rounds, --repeat and --replay must be "
                 ">= 1, --folds and --k >= 2")
    require(WSJ / "train.conllu", WSJ / "dev.conllu")
    import distributed

    from sparsecca.distributed import PartitionedNBest, own_numba_cache
    from sparsecca.rerank import BoostingReranker

    train, dev = _lists(args)
    print(f"en-wsj: {train.n_sentences} training sentences ({train.n_total} candidates), "
          f"{dev.n_sentences} dev sentences, k = {args.k}; {args.partitions} partitions; "
          f"features {args.features}, n_rounds {args.n_rounds}")
    print("load average before: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))

    def make():
        return BoostingReranker(features=args.features, n_rounds=args.n_rounds)

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cl, \
            distributed.Client(cl) as client:
        client.register_plugin(own_numba_cache())
        train_parts = PartitionedNBest.from_nbest(train, args.partitions).persist()
        dev_parts = PartitionedNBest.from_nbest(dev, args.partitions).persist()
        _timed(make, train_parts, dev_parts)  # the workers compile their kernels
        times = {"in memory": [], "distributed": []}
        models = {}
        for r in range(args.repeat):
            for how in (("in memory", "distributed") if r % 2 == 0
                        else ("distributed", "in memory")):
                lists = (train, dev) if how == "in memory" else (train_parts, dev_parts)
                t, models[how] = _timed(make, *lists)
                times[how].append(t)
                print(f"  pair {r + 1}: {how} {t:.2f} s", flush=True)
        mem, dist = models["in memory"], models["distributed"]
        np.testing.assert_array_equal(dist.coef_, mem.coef_)
        assert dist.tuned_params() == mem.tuned_params()
        feats = mem.features_
        D, diff, pair_sentence = mem._ranking_pairs(train, feats.joint(train))
        sizes = [len(p) for p in np.array_split(np.arange(train.n_sentences), args.partitions)]
        bounds = np.searchsorted(pair_sentence, np.concatenate([[0], np.cumsum(sizes)]))
        n = min(args.replay, mem.path_features_.size)
        per_round, ping = replay(client, D, mem.decoder_weight_ * diff, bounds,
                                 mem.path_features_[:n], mem.path_deltas_[:n])
    load_after = os.getloadavg()
    ratios = np.array(times["distributed"]) / np.array(times["in memory"])
    rounds = {how: sum(e["rounds_run"] for e in m.tuning_) for how, m in models.items()}
    # as the partitions send them: int8 values, int32 indices and row pointers
    gathered = 5 * D.nnz + 4 * (D.shape[0] + args.partitions) + diff.nbytes
    print()
    print("| fit | median time (s) | rounds run | rounds kept | dev accuracy |")
    print("|---|---:|---:|---:|---:|")
    for how in ("in memory", "distributed"):
        m = models[how]
        print(f"| {how} | {np.median(times[how]):.2f} | {rounds[how]} | {m.n_rounds_} | "
              f"{m.tuning_[0]['dev_accuracy']:.4f} |")
    print(f"\ndistributed / in memory: median {np.median(ratios):.2f} "
          f"(pairs {ratios.min():.2f}-{ratios.max():.2f}); the two fits equal")
    print(f"gathered: the pairs, {D.shape[0]} x {D.shape[1]} with {D.nnz} nonzeros, and "
          f"their score differences, {gathered / 2**20:.2f} MiB; the training lists pickled "
          f"{len(pickle.dumps(train)) / 2**20:.2f} MiB")
    print(f"exact per-round distribution: {1e3 * per_round:.2f} ms a round (actors, "
          f"{n} rounds replayed; a bare client.submit round trip {1e3 * ping:.2f} ms); "
          f"{rounds['in memory']} rounds would take {rounds['in memory'] * per_round:.1f} s, "
          f"{rounds['in memory'] * per_round / np.median(times['in memory']):.1f} x the "
          f"in-memory fit")
    print("load average after: " + ", ".join(f"{x:.2f}" for x in load_after))


if __name__ == "__main__":
    main()
