"""The boosting rerankers' fit on partitioned n-best lists.

``BoostingReranker(...).fit(train_parts, dev)`` (and ``RegularizedBoostingReranker``) with a
:class:`PartitionedNBest` runs the in-memory fit's own steps on the partitions:

* the joint features' vocabulary: each partition's candidates counted by the joint view
  (``JointView.count``), the counts tree-merged, the view fitted on the driver from the
  total; then each partition's discriminating-sentence count per column (the ``min_count``
  of :class:`~sparsecca.rerank.JointFeatures` is over the whole training list), tree-summed;
* each partition's features H, its training pairs D = H[oracle] - H[other] and decoder score
  differences, built and kept on its worker;
* the boosting path on the driver, from D and the score differences gathered (rows in
  partition order, so D is the in-memory fit's matrix, entry for entry);
* a partitioned dev list: its features built and kept where it lies, and the dev loss after
  every prefix of a path summed over the partitions (integers, so exactly).

The line search of the decoder weight needs the median of the score differences and
repeated sums over pairs: with D on the driver, the score differences (one float a pair)
come with it.  The path itself stays on the driver because every round's choice depends on
sums over all pairs after the previous round: a round distributed over the workers would
wait for one round trip of the cluster, far longer than the round itself (see
``docs/distributed.md``).

The fitted reranker equals the in-memory fit on the gathered lists: same features, the
same path (the kernel runs on the same D and margins), the same tuned values.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..data import union_vocabulary
from ._partitioned import PartitionedNBest, import_dask, tree_reduce
from ._partitioned import shared as _shared
from ._views import fit_joint_features, in_named_partition

__all__ = ["fit_boosting_reranker"]


def _summary(part, reranker, name: str) -> dict:
    return reranker._list_summary(part, name)


def _summaries(parts: PartitionedNBest, reranker, name: str) -> list:
    """Each partition's checks and totals (the reranker's ``_list_summary``), and the
    check that the lists are not empty."""
    dask = import_dask()
    f = dask.delayed(in_named_partition, pure=True)
    model = dask.delayed(reranker, traverse=False)
    out = dask.compute(*[f(name, i, _summary, p, model, name)
                         for i, p in enumerate(parts.partitions)])
    n, m = sum(s["n_sentences"] for s in out), sum(s["n_total"] for s in out)
    if n == 0 or m == 0:
        raise ValueError(f"{name} is empty ({n} sentences, {m} candidates over "
                         f"{len(out)} partitions)")
    return list(out)


def _gold_tags(summaries):
    """The gold tag vocabulary of the lists gathered, and the tag id of every gold token."""
    tags = union_vocabulary([s["tags"] for s in summaries])
    counts = np.zeros(len(tags), dtype=np.int64)
    for s in summaries:
        if len(s["tags"]):
            np.add.at(counts, s["tags"].mapping_to(tags), s["tag_counts"])
    return tags, np.repeat(np.arange(len(tags)), counts)


# -- the features and the pairs, on the workers ----------------------------------------------

def _pairs(part, reranker, feats, Z):
    """The partition's training pairs, D packed for the way to the driver: its values are
    -1 and +1 (binary features), sent as int8, and its indices as int32 when they fit."""
    D, diff, _ = reranker._ranking_pairs(part, feats._select(Z))
    small = np.int32 if max(D.shape[1], D.nnz) < np.iinfo(np.int32).max else np.int64
    return (D.shape, D.data.astype(np.int8), D.indices.astype(small),
            D.indptr.astype(small)), diff


def _unpacked(packed) -> sp.csr_matrix:
    shape, data, indices, indptr = packed
    D = sp.csr_matrix((data.astype(np.float64), indices, indptr), shape=shape)
    D.has_sorted_indices = True  # ranking_pairs sorted them
    return D


def training_pairs(parts: PartitionedNBest, reranker, feats):
    """Fit ``feats`` (the reranker's unfitted :class:`~sparsecca.rerank.JointFeatures`) on
    the partitions and build their training pairs there; returns ``(D, diff)`` gathered, in
    partition order (the in-memory ``ranking_pairs`` of the gathered list)."""
    dask = import_dask()
    Z = fit_joint_features(parts.partitions, feats, "train")
    f2 = dask.delayed(in_named_partition, pure=True, nout=2)
    fitted = _shared(feats)
    model = dask.delayed(reranker, traverse=False)
    pairs = dask.persist(*[f2("train", i, _pairs, p, model, fitted, z)
                           for i, (p, z) in enumerate(zip(parts.partitions, Z))])
    del Z  # the pairs are built: the partitions' raw features can go
    gathered = dask.compute(*pairs)
    D = sp.vstack([_unpacked(d) for d, _ in gathered], format="csr")
    return D, np.concatenate([diff for _, diff in gathered])


# -- dev along a path ------------------------------------------------------------------------

def _dev_joint(part, feats):
    """The partition's joint features (None without candidates), and the occurrences of
    features unseen at fit (the view's ``n_dropped_``)."""
    if part.n_sentences == 0 or part.n_total == 0:
        return None, 0
    H = feats.joint(part)
    return H, feats.view_.n_dropped_


def _dev_losses(part, H, alpha0, path):
    from ..kernels import path_losses

    features, deltas = path
    if H is None:  # no candidates: the tokens are counted as missing
        return np.zeros(len(features) + 1, dtype=np.int64)
    return path_losses(H, alpha0 * part.scores, part.sent_offsets, part.losses, features,
                       deltas)


class PartitionedDevPath:
    """:class:`~sparsecca.rerank._boosting.DevPath` over partitions: each partition's
    features kept on its worker, the dev losses along a path tree-summed."""

    def __init__(self, parts: PartitionedNBest, feats, summaries):
        dask = import_dask()
        self.parts = parts
        fitted = _shared(feats)
        f = dask.delayed(in_named_partition, pure=True, nout=2)
        built = [f("dev", i, _dev_joint, p, fitted) for i, p in enumerate(parts.partitions)]
        self._H = dask.persist(*[H for H, _ in built])
        # the view's count of unseen occurrences, as after the in-memory fit's transform of dev
        feats.view_.n_dropped_ = int(sum(dask.compute(*[n for _, n in built])))
        self.largest_score = np.array([max(s["largest"] for s in summaries)])
        self._missing = sum(s["missing"] for s in summaries)
        self._n_tokens = sum(s["n_tokens"] for s in summaries)

    def accuracy(self, alpha0: float, features, deltas) -> np.ndarray:
        dask = import_dask()
        path = _shared((np.asarray(features), np.asarray(deltas)))
        f = dask.delayed(in_named_partition, pure=True)
        per_part = [f("dev", i, _dev_losses, p, H, alpha0, path)
                    for i, (p, H) in enumerate(zip(self.parts.partitions, self._H))]
        (loss,) = dask.compute(tree_reduce(per_part, np.add))
        return 1.0 - (loss + self._missing) / self._n_tokens


def fit_boosting_reranker(reranker, train: PartitionedNBest, dev):
    """Fit a boosting reranker on partitioned training lists; ``dev`` None, an NBestList or
    a PartitionedNBest.  Returns the reranker, fitted as the in-memory fit on the gathered
    lists fits it."""
    p = reranker._common_params()
    reranker._reg_grid()
    train = train.persist()
    summaries = _summaries(train, reranker, "train")
    train_tags = union_vocabulary([s["tags"] for s in summaries])
    dev_summaries = None
    if isinstance(dev, PartitionedNBest):
        dev = dev.persist()
        dev_summaries = _summaries(dev, reranker, "dev")
        reranker._check_dev_pieces(train_tags, gold=_gold_tags(dev_summaries),
                                   most_candidates=max(s["most_candidates"]
                                                       for s in dev_summaries))
    else:
        dev = reranker._check_dev_pieces(train_tags, dev)
    feats = reranker._new_features(p)
    D, diff = training_pairs(train, reranker, feats)
    if dev is None:
        dev_path = None
    elif dev_summaries is not None:
        dev_path = PartitionedDevPath(dev, feats, dev_summaries)
    else:
        dev_path = reranker._dev_path(dev, feats.joint(dev))
    score_range = (min(s["low"] for s in summaries), max(s["high"] for s in summaries))
    return reranker._fit_pairs(feats, D, diff, score_range, dev_path)
