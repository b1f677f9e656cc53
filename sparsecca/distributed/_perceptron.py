"""The structured perceptron of :class:`~sparsecca.tagging.PerceptronTagger` trained by
iterative parameter mixing (McDonald, Hall and Mann 2010) on a :class:`PartitionedCorpus`.

Stages (every partition stays where it lives; only counts and weight vectors move):

1. counts: per partition the tagger's dictionary counts (``HMMCounts``) and the
   context features' counts (``ContextFeatures.count``), tree-summed; the driver fits the
   tag dictionary, the suffix model and the feature index from the totals (those of the
   corpus gathered), and reads the gold trigrams off the trigram counts;
2. per partition its features and gold tags in the model's ids (persisted), and the
   (feature, tag) pairs it sees, whose union (a tree reduce) are the weighted pairs;
3. per partition a :class:`~sparsecca.kernels.PerceptronShard`, its compiled training
   arrays (persisted on its worker for every epoch);
4. each epoch: every shard runs one epoch of the kernel from the current mixed weights
   ``w``, visiting its sentences in the order the epoch's permutation of the whole corpus
   gives them (the in-memory fit's draws); the results are tree-summed and the driver
   mixes them, ``w = sum_i mu_i w_i / sum_i mu_i`` with ``mu_i`` 1 for every partition with
   a sentence (``mixing_weights="uniform"``) or the number of updates of shard ``i`` in the
   epoch (``"updates"``, the paper's error-weighted mixing; an epoch without any update
   leaves ``w`` as it was).

Averaging: the model after epoch ``n`` holds the mean of every weight vector a shard held
after one of its sentence visits, over the shards and epochs ``1..n``: the sum of the
shards' per-epoch sums (``PerceptronShard.epoch``) divided by ``n`` times the number of
sentences.  This is Collins' average of the weight vectors
along the training path, the path being the shards' epochs one after the other; with one
partition it is the in-memory average, value for value (0/1 features keep every sum an
integer, exact in float64).  The mixed vectors themselves start the shards' next epoch and
are not averaged on their own.
"""

from __future__ import annotations

import numpy as np

from ..kernels import PerceptronShard
from ._mixing import add_partials, local_orders, owners
from ._partitioned import PartitionedCorpus, import_dask, tree_reduce
from ._tagging import _shared, count_partitions
from ._views import in_partition

__all__ = ["fit_perceptron_mixing"]


def _compile(part, tagger):
    """A partition's features, gold tags in ``tagger.tags_`` and lattice (``beam = 0``)."""
    X = tagger.features_.transform(part)
    gold = part.tags.mapping_to(tagger.tags_)[part.tag_ids].astype(np.int32)
    lattice = (None, None) if int(tagger.beam) else tagger._lattice(part)[:2]
    return X, gold, np.asarray(part.offsets, dtype=np.int64), lattice


def _pairs(compiled, tagger):
    """The distinct codes ``feature * n_tags + tag`` of the gold (feature, tag) pairs."""
    return tagger._pair_codes(compiled[0], compiled[1])


def _shard(compiled, emit_indptr, emit_tags, tri_indptr, tri_tags, S, beam):
    X, gold, offsets, (cand_offsets, cand_tags) = compiled
    return PerceptronShard(X, gold, offsets, cand_offsets, cand_tags, emit_indptr, emit_tags,
                           S, tri_indptr, tri_tags, S - 2, S - 1, beam)


def _epoch(shard, order, weights, by_updates):
    """A shard's epoch, as a partial sum of the mixing: ``(mu * w, mu, sums, visits,
    wrong)``."""
    out = shard.epoch(order, *weights)
    mu = float(out.n_wrong) if by_updates else float(out.n_visits > 0)
    return ([mu * w for w in (out.emit, out.bigram, out.trigram)], mu,
            [out.emit_sum, out.bigram_sum, out.trigram_sum], out.n_visits, out.n_wrong)


def fit_perceptron_mixing(parts: PartitionedCorpus, tagger, rng):
    """Fit ``tagger``'s dictionary, features and weighted pairs and trigrams on ``parts``
    (stages 1-3 of the module notes, run now) and return its epochs (stage 4, run as they
    are iterated): the averaged weights ``(emission, bigram (S, S), trigram)`` and the
    sentences decoded wrongly after each, as the in-memory kernel yields them."""
    dask = import_dask()
    delayed = dask.delayed
    task = delayed(in_partition, pure=True)
    counts, summaries = count_partitions(parts, tagger)
    tagger._fit_counts(counts)
    sizes = [n for n, _, _ in summaries]
    T = len(tagger.tags_)
    S = T + 2
    # stage 2: the partitions' features (kept on the workers) and the union of their pairs
    shared = _shared(tagger)
    compiled = dask.persist(*[task(i, _compile, p, shared)
                              for i, p in enumerate(parts.partitions)])
    pairs = tree_reduce([delayed(_pairs, pure=True)(c, shared) for c in compiled],
                        np.union1d)
    (codes,) = dask.compute(pairs)
    tagger._set_pairs(codes)
    shards = dask.persist(*[delayed(_shard, pure=True)(
        c, tagger.emit_indptr_, tagger.emit_tags_, tagger.tri_indptr_, tagger.tri_tags_, S,
        int(tagger.beam)) for c in compiled])
    del compiled
    n = int(sum(sizes))
    orders = np.stack([rng.permutation(n) for _ in range(int(tagger.n_iter))])
    return _epochs(shards, sizes, orders, (codes.size, S, tagger.tri_tags_.size),
                   tagger.mixing_weights == "updates")


def _epochs(shards, sizes, orders, shape, by_updates):
    dask = import_dask()
    epoch = dask.delayed(_epoch, pure=True)
    owner, local = owners(np.reshape(sizes, (-1, 1)))
    n_pairs, S, n_tri = shape
    w = [np.zeros(n_pairs), np.zeros(S * S), np.zeros(n_tri)]
    total = [np.zeros_like(x) for x in w]
    seen = 0
    for perm in orders:
        # each shard visits its sentences in the order of the whole corpus's permutation
        by_part = local_orders(perm, owner, local, len(shards))
        weights = _shared(w)
        (mixed, mu, sums, visits, wrong), = dask.compute(tree_reduce(
            [epoch(s, o, weights, by_updates) for s, o in zip(shards, by_part)], add_partials))
        if mu > 0:
            w = [x / mu for x in mixed]
        total = [t + x for t, x in zip(total, sums)]
        seen += visits
        avg = [t / seen for t in total] if seen else [x.copy() for x in w]
        yield avg[0], avg[1].reshape(S, S), avg[2], int(wrong)
