"""The baseline rerankers trained on partitioned n-best lists by iterative parameter mixing
(``partitioned_fit="mixing"`` of :class:`~sparsecca.rerank.PerceptronReranker` and
:class:`~sparsecca.rerank.HiddenVariableReranker`; the loop is :mod:`._mixing`'s).

Stages (the partitions stay where they live; counts, vocabularies and weight vectors move):

1. every partition checked where it lives (an n-best list with gold tags and finite
   decoder scores, the decoder weights' products finite) and summarised (sentences,
   candidates, tags); the partitions must share one tagset;
2. the features' vocabularies from counts reduced over the partitions, equal to those of
   the lists gathered: the perceptron's joint view from the tree-merged view counts and
   its columns from the tree-summed numbers of sentences each column discriminates in
   (``min_count`` over the whole list); the hidden-variable model's tag and word
   vocabularies (unions in partition order, as gathering merges them), word clusters from
   the summed word-tag counts and node and edge rows from the union of every partition's
   codes;
3. per partition its compiled training arrays (a shard), persisted on its worker;
4. the epochs: every shard runs one epoch of the in-memory kernel from the mixed weights.

The perceptron averages its weights along the shards' epochs (Collins' average, as the
tagger's mixing does); with integer feature counts every sum is an integer, so one
partition gives the in-memory weights value for value.  The hidden-variable model's SGD
mixes its weights and its AdaGrad sums of squared gradients alike (both start the next
epoch); its L2 term is spread over the whole list's sentences in every shard.  Its
``mixing_weights="updates"`` weighs a shard by its training loss in the epoch (the negative
log-likelihood of its sentences' best candidates before each update): every sentence
updates the weights, so the loss, which is what a sentence's update grows with, stands for
the perceptron's count of mistakes.  The decoder weight's starting value, the learning-rate
probe and the dev selection run on the driver as in memory; the starting value reads the
partitions' decoder scores and best-candidate flags (one float and one flag per candidate).
"""

from __future__ import annotations

import operator

import numpy as np
import scipy.sparse as sp

from ..data import Vocabulary, union_vocabulary
from ._mixing import averaged_epochs, mix_epoch, owners
from ._partitioned import PartitionedNBest, import_dask, tree_reduce
from ._partitioned import shared as _shared
from ._views import _summary, check_same_tagset, fit_joint_features, in_partition

__all__ = ["MixingTrain"]


def _check_part(part, reranker, scale):
    """A training partition checked as the in-memory fit checks the whole list, and its
    summary, candidates, largest candidate count, gold tags, tags and words."""
    reranker._check_train_partition(part, scale)
    most = int(part.n_candidates.max()) if part.n_sentences else 0
    gold = part.corpus.tags.items if part.corpus.has_tags else []
    return (_summary(part), int(part.n_total), most, gold, part.tags.items,
            part.corpus.words.items)


class MixingTrain:
    """Partitioned training lists, persisted and checked (stage 1 of the module notes); the
    rerankers' fits build their trainers from it."""

    def __init__(self, parts: PartitionedNBest, reranker, scale=None):
        dask = import_dask()
        self.parts = parts.persist()
        f = dask.delayed(in_partition, pure=True)
        blank = dask.delayed(reranker, traverse=False)
        out = dask.compute(*[f(i, _check_part, p, blank, scale)
                             for i, p in enumerate(self.parts.partitions)])
        check_same_tagset([o[0] for o in out])
        self.sizes = [o[0][0] for o in out]
        self.n_sentences = int(sum(self.sizes))
        n_total = sum(o[1] for o in out)
        if self.n_sentences == 0 or n_total == 0:
            raise ValueError(f"train is empty ({self.n_sentences} sentences, {n_total} "
                             f"candidates)")
        self.max_candidates = max(o[2] for o in out)
        self.gold_tags = union_vocabulary([Vocabulary(o[3]) for o in out])
        self.tags = union_vocabulary([Vocabulary(o[4]) for o in out])
        self.words = union_vocabulary([Vocabulary(o[5]) for o in out])

    def _map(self, fn, *args, persist=False):
        dask = import_dask()
        f = dask.delayed(in_partition, pure=True)
        tasks = [f(i, fn, p, *[a[i] if isinstance(a, list) else a for a in args])
                 for i, p in enumerate(self.parts.partitions)]
        return list(dask.persist(*tasks)) if persist else tasks

    def _reduce(self, tasks, add):
        (out,) = import_dask().compute(tree_reduce(tasks, add))
        return out

    def perceptron(self, feats, averaged: bool, by_updates: bool) -> "PerceptronMixing":
        """Fit ``feats`` (a JointFeatures) on the partitions and compile the shards."""
        Z = fit_joint_features(self.parts.partitions, feats, "train")
        shards = self._map(_perceptron_shard, Z, _shared(feats), persist=True)
        return PerceptronMixing(shards, self.sizes, feats.n_features_ - 1, averaged,
                                by_updates)

    def hidden(self, reranker, lengths, l2: float, by_updates: bool):
        """Fit ``reranker``'s vocabularies and feature rows on the partitions and compile
        the shards; returns the epochs' :class:`HiddenMixing` and the decoder weight's
        inputs (the scores, sentence offsets and best-candidate flags of the whole list)."""
        clusters = None
        if reranker.hidden_domain == "word-cluster":
            shape = (len(self.words), len(self.tags))
            clusters = self._reduce(self._map(_tag_counts, self.words, self.tags, shape),
                                    operator.add).toarray()
        reranker._set_vocabularies(list(self.tags.items), list(self.words.items), lengths,
                                   clusters)
        shared = _shared(reranker)
        node, edge = self._reduce(self._map(_hidden_keys, shared), _union_pair)
        reranker.node_keys_, reranker.edge_keys_ = node, edge
        shards = self._map(_hidden_shard, _shared(reranker), persist=True)
        dask = import_dask()
        scores, offsets, target = zip(*dask.compute(
            *[dask.delayed(_decoder_inputs, pure=True)(s) for s in shards]))
        pieces, shift = [np.zeros(1, np.int64)], 0
        for o in offsets:
            pieces.append(np.asarray(o[1:], dtype=np.int64) + shift)
            shift += int(o[-1])
        trainer = HiddenMixing(shards, self.sizes, (int(reranker.n_hidden), int(node.size),
                                                    l2, self.n_sentences), by_updates)
        return trainer, (np.concatenate(scores), np.concatenate(pieces),
                         np.concatenate(target))


# ---------------------------------------------------------------- the reranking perceptron
def _perceptron_shard(part, Z, feats):
    from ..kernels import PerceptronRerankShard

    if part.n_sentences == 0:
        return None
    oracle = part.sent_offsets[:-1] + part.oracle_indices()  # global candidate indices
    return PerceptronRerankShard(feats._select(Z), part.scores, part.sent_offsets, oracle,
                                 part.losses)


def _perceptron_epoch(shard, order, weights, decoder_weight):
    if shard is None:
        return list(weights), [np.zeros_like(weights[0])], 0, 0
    w, w_sum, visits, n_updates = shard.epoch(order, weights[0], decoder_weight)
    return [w], [w_sum], visits, n_updates


class PerceptronMixing:
    """The reranking perceptron's epochs on the shards, per decoder weight: ``run(orders,
    cap, b)`` gives what :func:`~sparsecca.kernels.perceptron_train` gives in memory for
    ``orders[:cap]``; a later run of the same ``b`` with a larger ``cap`` continues the
    epochs already run."""

    def __init__(self, shards, sizes, n_features, averaged, by_updates):
        self.shards, self.sizes, self.n_features = shards, sizes, n_features
        self.averaged, self.by_updates = averaged, by_updates
        self._runs: dict = {}

    def run(self, orders, cap, b):
        if b not in self._runs:
            self._runs[b] = (averaged_epochs(
                self.shards, self.sizes, orders, [np.zeros(self.n_features)],
                _perceptron_epoch, self.by_updates, (b,)), [])
        epochs, done = self._runs[b]
        while len(done) < cap:
            w, avg, n_updates = next(epochs)
            done.append((avg[0] if self.averaged else w[0], n_updates))
        return (np.stack([d[0] for d in done[:cap]]),
                np.array([d[1] for d in done[:cap]], dtype=np.int64))


# ---------------------------------------------------------------- the hidden-variable model
def _tag_counts(part, words, tags, shape):
    """The word x gold tag counts of a partition in the merged vocabularies (a gold tag
    missing from the tags counts in the last column, as in memory)."""
    c = part.corpus
    if c.n_tokens == 0:
        return sp.csr_matrix(shape, dtype=np.int64)
    w = c.words.mapping_to(words)[c.word_ids]
    t = c.tags.mapping_to(tags)[c.tag_ids] % shape[1]
    return sp.csr_matrix((np.ones(w.size, dtype=np.int64), (w, t)), shape=shape)


def _hidden_keys(part, reranker):
    if part.n_total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    codes, valid, ecodes, evalid = reranker._codes(part)
    return np.unique(codes[valid]), np.unique(ecodes[evalid])


def _union_pair(a, b):
    return np.union1d(a[0], b[0]), np.union1d(a[1], b[1])


def _hidden_shard(part, reranker):
    if part.n_sentences == 0:
        return None
    nf, ef = reranker._features(part)
    per_sent = np.full(part.n_sentences, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(per_sent, part.cand_sentence, part.losses)
    target = part.losses == per_sent[part.cand_sentence]
    return nf, ef, part.cand_offsets, part.sent_offsets, part.scores, target


def _decoder_inputs(shard):
    if shard is None:
        return np.zeros(0), np.zeros(1, np.int64), np.zeros(0, bool)
    return shard[4], shard[3], shard[5]


def _hidden_epoch(shard, order, weights, lr, l2, n_hidden, n_node, n_total):
    from ..kernels import hidden_sgd_epoch

    theta, accum = (np.array(w, dtype=np.float64) for w in weights)  # copies: w is shared
    if shard is None or order.size == 0:
        return [theta, accum], None, 0, 0.0
    loss = hidden_sgd_epoch(theta, accum, *shard, n_hidden, n_node, order=order, lr=lr, l2=l2,
                            n_sentences=n_total)
    return [theta, accum], None, int(order.size), float(loss)


class HiddenMixing:
    """The hidden-variable reranker's SGD epochs on the shards: :meth:`epoch` stands for
    :func:`~sparsecca.kernels.hidden_sgd_epoch` on the whole list (in place on ``theta``
    and ``accum``, returning the summed loss)."""

    def __init__(self, shards, sizes, model, by_updates):
        self.shards, self.by_updates = shards, by_updates
        self.layout = owners(np.reshape(sizes, (-1, 1)))
        self.n_hidden, self.n_node, self.l2, self.n_total = model

    def epoch(self, theta, accum, order, lr):
        (t, a), _, _, loss = mix_epoch(
            self.shards, self.layout, order, [theta, accum], _hidden_epoch, self.by_updates,
            (lr, self.l2, self.n_hidden, self.n_node, self.n_total))
        theta[:], accum[:] = t, a
        return float(loss)
