"""The max-margin-structure tagger (:class:`~sparsecca.tagging.MMSTagger`) trained by
iterative parameter mixing (McDonald, Hall and Mann 2010) on a :class:`PartitionedCorpus`.

Stages (every partition stays where it lives; only counts, keys and weights move):

1. counts: per partition the tag, word and transition counts (``HMMCounts``), tree-merged;
   the driver fits the vocabularies, the tag prior and the transitions from the total;
2. with ``two_stage``, the first pass's jackknifed tags: the folds of the in-memory fit
   (sentence ``i`` of the whole corpus in fold ``i % 4``), each fold's tagger fitted in one
   task on the fold's training sentences (gathered on that worker, not on the driver) and
   decoding its held-out sentences partition by partition; the tags stay on the workers;
3. per partition its tokens' feature keys (kept there), the counts of its rare words'
   environments and its distinct feature keys, tree-merged: the environment clusters and
   the feature index;
4. per partition its samples (kept there) and the codes of their gold (cluster, tag) pairs,
   whose union are the clusters' candidates;
5. per partition its samples' feature rows and the (cluster, feature) pairs they use, whose
   union are the clusters' weight rows; then per partition its PSL samples, kept on its
   worker for every epoch (:class:`_PSLShard`);
6. each epoch: every partition runs one :func:`~sparsecca.kernels.psl_epoch` over its
   samples from the mixed weights ``w``, visiting them in the order the epoch's permutation
   of all samples (the in-memory fit's draws) gives; the driver mixes the partitions' final
   weights cluster by cluster (the clusters share no weights: each is a perceptron of its
   own), ``w_c = sum_i (mu_ic / sum_j mu_jc) w_ic`` with ``mu_ic`` 1 for every partition
   with a sample of cluster ``c`` (``mixing_weights="uniform"``) or its number of updates
   in the cluster in the epoch (``"updates"``; a cluster without any update keeps its
   ``w_c``).  A partition without samples of a cluster thus takes no part in its mixing
   (its block there is the previous mixed one, which would only dilute the others').

Averaging: the averaged block of cluster ``c`` after epoch ``n`` is the mean of every weight
block the cluster held after one of its samples, over the partitions and epochs ``1..n``
(Collins' average along the partitions' paths).  A partition keeps the averaging companion
``u_i`` of :func:`~sparsecca.kernels.psl_epoch` and its visit counts ``n_i`` over all its
epochs; the jump to the mixed weights at an epoch's start is recorded in ``u_i`` as an
update would be, so the sum of its blocks after each visit is ``n_i w_i - u_i`` and the
average ``sum_i (n_i / N) w_i - (sum_i u_i) / N`` (``N = sum_i n_i`` per cluster).  With one
partition each share is 1 and every jump 0: the in-memory fit, value for value.
"""

from __future__ import annotations

import numpy as np

from ..data import Vocabulary
from ..kernels import psl_epoch
from ..tagging import clone
from ._mixing import add_partials, local_orders, owners
from ._partitioned import PartitionedCorpus, import_dask, tree_reduce
from ._partitioned import shared as _shared
from ._tagging import _fit_selection, count_partitions
from ._views import in_partition

__all__ = ["fit_mms_mixing"]


class _PSLShard:
    """A partition's PSL samples, the model's cluster tables and the sizes the driver's
    visiting orders and averages need."""

    def __init__(self, samples, tagger):
        XS, s_cl, gold_pos, x_local = samples
        self.args = (s_cl, gold_pos, XS.indptr.astype(np.int64), x_local, XS.data,
                     tagger.cl_indptr_, tagger.cl_tags_, tagger.woff_, tagger.distance_)
        self.block_sizes = np.diff(tagger.woff_)
        V, n_env = len(tagger.words_), tagger.env_keys_.size
        # the samples are word samples, then environment samples, then rare-word samples
        block = (s_cl >= V).astype(np.int64) + (s_cl >= V + n_env)
        self.blocks = np.bincount(block, minlength=3)
        self.per_cluster = np.bincount(s_cl, minlength=tagger.n_clusters_).astype(np.int64)

    def sizes(self):
        return self.blocks, self.per_cluster


def _keys(part, tagger, pred):
    """Stage 3: ``(lower ids, feature keys, rare environments, distinct feature keys)``."""
    lower_ids, keys = tagger._token_keys(part, pred)
    return (lower_ids, keys, tagger._rare_environments(part, lower_ids),
            tagger._feature_key_set(keys))


def _samples(part, keyed, tagger):
    """Stage 4: ``(s_tok, s_cl, gold pair codes)``."""
    s_tok, s_cl = tagger._samples(part, keyed[0])
    return s_tok, s_cl, tagger._cluster_pairs(part, s_tok, s_cl)


def _rows(part, keyed, sampled, tagger):
    """Stage 5: the samples' rows and the (cluster, feature) codes they use."""
    rows = tagger._sample_rows(part, keyed[1], sampled[0], sampled[1])
    return rows, tagger._block_pairs(rows[0], rows[1])


def _shard(rowed, pairs, tagger):
    return _PSLShard(tagger._psl_samples(rowed[0], pairs), tagger)


def _item(x, i):
    return x[i]


def fit_mms_mixing(parts: PartitionedCorpus, tagger):
    """Fit ``tagger``'s tables on ``parts`` (stages 1-5 of the module notes, run now) and
    return its training: ``train(eta, n_iter, rng, on_epoch=None)`` as the in-memory
    ``MMSTagger._psl_train`` with its samples."""
    dask = import_dask()
    delayed = dask.delayed
    task = delayed(in_partition, pure=True)
    item = delayed(_item, pure=True)
    counts, summaries = count_partitions(parts, tagger)
    if counts.lex_counts.sum() == 0:
        raise ValueError("corpus must contain at least one token, got an empty corpus")
    tagger._fit_vocabularies(counts)
    tagger.distance_ = tagger._distance_for(Vocabulary(counts.tags))
    pred = (_jackknife(parts, tagger, [n for n, _, _ in summaries]) if tagger.two_stage
            else [None] * parts.n_partitions)
    shared = _shared(tagger)
    keyed = dask.persist(*[task(i, _keys, p, shared, t)
                           for i, (p, t) in enumerate(zip(parts.partitions, pred))])
    env, fkeys = dask.compute(
        tree_reduce([item(k, 2) for k in keyed], tagger._merge_environments),
        tree_reduce([item(k, 3) for k in keyed], np.union1d))
    tagger._set_environments(*env)
    tagger.feature_keys_ = fkeys
    shared = _shared(tagger)
    sampled = dask.persist(*[task(i, _samples, p, k, shared)
                             for i, (p, k) in enumerate(zip(parts.partitions, keyed))])
    (codes,) = dask.compute(tree_reduce([item(s, 2) for s in sampled], np.union1d))
    tagger._set_clusters(codes)
    shared = _shared(tagger)
    rowed = dask.persist(*[task(i, _rows, p, k, s, shared) for i, (p, k, s)
                           in enumerate(zip(parts.partitions, keyed, sampled))])
    del keyed, sampled
    (pairs,) = dask.compute(tree_reduce([item(r, 1) for r in rowed], np.union1d))
    tagger._set_blocks(pairs)
    shared, pairs = _shared(tagger), _shared(pairs)
    shards = dask.persist(*[delayed(_shard, pure=True)(r, pairs, shared) for r in rowed])
    del rowed
    sizes = dask.compute(*[delayed(_PSLShard.sizes, pure=True)(s) for s in shards])
    return _Mixing(shards, sizes, tagger)


# ---------------------------------------------------------------------- the epochs
def _epoch(shard, previous, order, w0, eta):
    """A partition's epoch from the mixed weights ``w0`` after its ``previous`` one (None
    before the first): its state ``(w, u, counts)`` and its updates in each cluster."""
    if previous is None:
        u, counts = np.zeros_like(w0), np.zeros(shard.per_cluster.size, dtype=np.int64)
    else:
        w_prev, u, counts = previous[0]
        u = u + np.repeat(counts, shard.block_sizes) * (w0 - w_prev)  # the jump to w0
        counts = counts.copy()
    w = w0.copy()
    updates = np.zeros_like(counts)
    psl_epoch(order, *shard.args, eta, w, u, counts, check=previous is None, updates=updates)
    return (w, u, counts), updates


def _terms(shard, result, share, n_seen):
    """A partition's terms of the mixed weights (``share``: its share in each cluster) and,
    unless ``n_seen`` is None, of the averages (``n_seen``: every cluster's visits over all
    partitions)."""
    w, u, counts = result[0]
    mixed = np.repeat(share, shard.block_sizes) * w
    if n_seen is None:
        return (mixed,)
    avg_share = np.repeat(counts / np.maximum(n_seen, 1), shard.block_sizes)
    return mixed, avg_share * w, u


class _Mixing:
    """The training of a tagger whose tables are fitted: its PSL epochs by parameter
    mixing over the partitions' shards (stage 6 of the module notes)."""

    def __init__(self, shards, sizes, tagger):
        self.shards = shards
        self.owner, self.local = owners([blocks for blocks, _ in sizes])
        self.has_samples = np.stack([per > 0 for _, per in sizes]).astype(np.float64)
        self.per_cluster = sum(per for _, per in sizes)
        self.block_sizes = np.diff(tagger.woff_)
        self.average = bool(tagger.average)
        self.by_updates = tagger.mixing_weights == "updates"

    def _shares(self, states):
        """Each partition's share of every cluster's mixed block, and the clusters mixed."""
        dask = import_dask()
        if self.by_updates:
            mu = np.stack(dask.compute(*[dask.delayed(_item, pure=True)(st, 1)
                                         for st in states])).astype(np.float64)
        else:
            mu = self.has_samples
        total = mu.sum(axis=0)
        return mu / np.where(total > 0, total, 1.0), total > 0

    def __call__(self, eta, n_iter, rng, on_epoch=None):
        dask = import_dask()
        delayed = dask.delayed
        n = self.owner.size
        w = np.zeros(int(self.block_sizes.sum()))
        states = [None] * len(self.shards)
        weights = w
        for e in range(1, n_iter + 1):
            order = rng.permutation(n)
            by_part = local_orders(order, self.owner, self.local, len(self.shards))
            w_shared = _shared(w)
            states = dask.persist(*[delayed(_epoch, pure=True)(s, st, o, w_shared, eta)
                                    for s, st, o in zip(self.shards, states, by_part)])
            share, mixed_clusters = self._shares(states)
            n_seen = e * self.per_cluster
            averaged = self.average and (on_epoch is not None or e == n_iter)
            (mixed, *avg), = dask.compute(tree_reduce(
                [delayed(_terms, pure=True)(s, st, m, n_seen if averaged else None)
                 for s, st, m in zip(self.shards, states, share)], add_partials))
            w = np.where(np.repeat(mixed_clusters, self.block_sizes), mixed, w)
            if averaged:  # the sum of the partitions' avg_share * w, and of their u
                n_rep = np.repeat(np.maximum(n_seen, 1).astype(np.float64), self.block_sizes)
                weights = avg[0] - avg[1] / n_rep
            elif on_epoch is not None or e == n_iter:
                weights = w.copy()
            if on_epoch is not None:
                on_epoch(e, weights)
        return weights


# ---------------------------------------------------------------------- the jackknife
def _predict_selection(model, part, idx, final):
    """The first pass's tags of sentences ``idx`` of a partition, as ids in ``final``."""
    return model.tags_.mapping_to(final)[model._predict(part.select(idx))].astype(np.int64)


def _assemble(part, default, helds, *preds):
    out = np.full(part.n_tokens, default, dtype=np.int64)
    for held, pred in zip(helds, preds):
        sub = part.select(held)
        starts = part.offsets[held]
        toks = np.repeat(starts - sub.offsets[:-1], np.diff(sub.offsets)) + np.arange(
            sub.n_tokens)
        out[toks] = pred
    return out


def _jackknife(parts, tagger, sizes):
    """Stage 2: each partition's jackknifed first-pass tags (persisted), in ``tags_``."""
    dask = import_dask()
    delayed = dask.delayed
    fold = tagger._pos_folds(int(sum(sizes)))
    n_folds = int(fold.max()) + 1 if fold.size else 0
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    local = [fold[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    final = tagger.tags_
    # a fold without training sentences (a one-sentence corpus) keeps the in-memory 0
    default = int(final.ids([sorted(final.items)[0]])[0])
    stage_one = tagger._stage_one()
    done = [([], []) for _ in local]
    for f in range(n_folds):
        train = [np.flatnonzero(loc != f) for loc in local]
        if sum(t.size for t in train) == 0:
            continue
        where = f"jackknife fold {f + 1} of {n_folds} of the first pass"
        model = delayed(_fit_selection, pure=True)(clone(stage_one), where, train,
                                                   *parts.partitions)
        for j, (p, loc) in enumerate(zip(parts.partitions, local)):
            held = np.flatnonzero(loc == f)
            if held.size:
                done[j][0].append(held)
                done[j][1].append(delayed(_predict_selection, pure=True)(model, p, held,
                                                                         final))
    return dask.persist(*[delayed(_assemble, pure=True)(p, default, h, *d)
                          for p, (h, d) in zip(parts.partitions, done)])
