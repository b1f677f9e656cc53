"""The taggers on a :class:`PartitionedCorpus`: decoding partition by partition, and
jackknifed n-best lists whose fold taggers are fitted in parallel Dask tasks.

The taggers' own ``tag``, ``nbest`` and :func:`~sparsecca.tagging.jackknife_nbest` call
these when handed a partitioned corpus (through the corpus's entry points), so there is no
second API: the results are those of the in-memory calls on the corpus gathered.
"""

from __future__ import annotations

import numpy as np

from ..data import TaggedCorpus, Vocabulary, concat_corpora, kfold_indices, union_vocabulary
from ..exceptions import in_context
from ..tagging import NBestList, clone, concatenate
from ._partitioned import PartitionedCorpus, PartitionedNBest, import_dask, tree_reduce
from ._partitioned import shared as _shared
from ._views import _summary, check_same_tagset, in_partition

__all__ = ["nbest_partitions", "tag_partitions", "jackknife_partitions"]


def _nbest(corpus, tagger, k):
    return tagger.nbest(corpus, k=k)


def _tag(corpus, tagger):
    return tagger.tag(corpus)


def _count(part, tagger):
    """A partition's counts (the tagger's ``_count_partition``, which checks the partition)
    and its summary."""
    return tagger._count_partition(part), _summary(part)


def count_partitions(parts: PartitionedCorpus, tagger):
    """``(total, summaries)``: the tree-merged counts of a count-fit tagger over ``parts``
    (its ``_count_partition`` per partition, merged by its ``_merge_counts``) and each
    partition's summary ``(n_sentences, None, tag token counts)``.

    Raises
    ------
    TagsetMismatchError
        When a partition's tags are mostly ones another partition never uses (another tag
        column); the message names both partitions.
    ValueError, TypeError
        For a partition that is not a tagged corpus (naming the partition).
    """
    dask = import_dask()
    blank = _shared(clone(tagger))
    counted = [dask.delayed(in_partition, pure=True, nout=2)(i, _count, p, blank)
               for i, p in enumerate(parts.partitions)]
    total, *summaries = dask.compute(tree_reduce([c for c, _ in counted],
                                                 tagger._merge_counts),
                                     *[s for _, s in counted])
    check_same_tagset(summaries)
    return total, summaries


def nbest_partitions(parts: PartitionedCorpus, tagger, k: int) -> PartitionedNBest:
    """``tagger.nbest(partition, k)`` of every partition, lazily (the fitted tagger is sent
    once to each worker)."""
    return parts.map(_nbest, _shared(tagger), k, cls=PartitionedNBest)


def tag_partitions(parts: PartitionedCorpus, tagger) -> PartitionedCorpus:
    """``tagger.tag(partition)`` of every partition, lazily."""
    return parts.map(_tag, _shared(tagger), cls=PartitionedCorpus)


# ---------------------------------------------------------------------- jackknife tasks
def _describe(corpus):
    """The sentence count and tag vocabulary of a tagged partition."""
    if not isinstance(corpus, TaggedCorpus):
        raise TypeError(f"corpus partitions must be TaggedCorpus, got {type(corpus).__name__}")
    if not corpus.has_tags:
        raise ValueError("corpus must be tagged (tag_ids is None)")
    return corpus.n_sentences, corpus.tags.items


def _count_selection(count, corpus, idx):
    return count(corpus.select(idx))


def _fit_from_counts(estimator, counts, where):
    try:
        return estimator._fit_from_counts(counts)
    except ValueError as exc:
        raise in_context(exc, where) from exc


def _fit_selection(estimator, where, idxs, *parts):
    try:
        return estimator.fit(concat_corpora([p.select(i) for p, i in zip(parts, idxs)]))
    except ValueError as exc:
        raise in_context(exc, where) from exc


def _decode_selection(model, corpus, idx, k, where):
    try:
        return model.nbest(corpus.select(idx), k=k)
    except ValueError as exc:
        raise in_context(exc, where) from exc


def _extra_tags(nbest, model):
    """The gold tags a fold's list holds beyond its tagger's tags."""
    return nbest.tags.items[len(model.tags_):]


def _fold_tags(model, extras):
    return model.tags_.items, [t for part in extras for t in part]


def _jackknife_tags(gold_tags, *folds):
    """The tag vocabulary of the in-memory jackknife: the union, fold by fold, of each
    fold's tagger's tags followed by the gold tags it never saw (in gold vocabulary
    order)."""
    rank = {t: i for i, t in enumerate(gold_tags)}
    lists = []
    for model_tags, extras in folds:
        extra = sorted(set(extras), key=rank.__getitem__)
        lists.append(Vocabulary(list(model_tags) + extra))
    return union_vocabulary(lists) if len(lists) > 1 else lists[0]


def _recode(nbest: NBestList, tags: Vocabulary) -> NBestList:
    m = nbest.tags.mapping_to(tags).astype(np.int32)
    return NBestList(m[nbest.tag_ids] if nbest.tag_ids.size else nbest.tag_ids,
                     nbest.cand_offsets, nbest.sent_offsets, nbest.scores, nbest.corpus,
                     tags, nbest.unknown)


def _assemble(corpus, tags, helds, *lists):
    """One partition's list: its folds' lists in the partition's sentence order, on the
    jackknife's tag vocabulary, with the partition itself as the corpus."""
    if not lists:  # a partition without sentences
        return NBestList(np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64),
                         np.zeros(0), corpus, tags, np.zeros(0, bool))
    held = np.concatenate(helds)
    inverse = np.empty_like(held)
    inverse[held] = np.arange(held.size)
    out = concatenate([_recode(nb, tags) for nb in lists]).select(inverse)
    return NBestList(out.tag_ids, out.cand_offsets, out.sent_offsets, out.scores, corpus,
                     tags, out.unknown)


def jackknife_partitions(parts: PartitionedCorpus, estimator, k: int, folds,
                         random_state) -> PartitionedNBest:
    """:func:`sparsecca.tagging.jackknife_nbest` of a partitioned corpus (see there).

    The sentence counts are computed first (the fold assignment is that of the corpus
    gathered); then each fold's tagger is fitted in one task (a count-reduce estimator, the
    :class:`~sparsecca.tagging.TrigramHMM`, from the tree-summed counts of the fold's
    training sentences of every partition; another on those sentences gathered on one
    worker), and decodes the fold's held-out sentences of each partition.
    """
    dask = import_dask()
    delayed = dask.delayed
    described = dask.compute(*[delayed(_describe, pure=True)(p) for p in parts.partitions])
    sizes = [n for n, _ in described]
    n = sum(sizes)
    if n < 2:
        raise ValueError(f"corpus must have at least 2 sentences to jackknife, got {n}")
    gold_tags = union_vocabulary([Vocabulary(t) for _, t in described]).items
    splits = kfold_indices(n, folds, shuffle=True, random_state=random_state)
    n_folds = len(splits)
    fold_of = np.empty(n, dtype=np.int64)
    for f, (_, held) in enumerate(splits):
        fold_of[held] = f
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    local = [fold_of[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    by_count = hasattr(estimator, "_fit_from_counts")
    models, fold_tags = [], []
    decoded = [[] for _ in parts.partitions]  # per partition: (held idx, delayed list)
    for f, (train_idx, held_idx) in enumerate(splits):
        where = (f"jackknife fold {f + 1} of {n_folds} (a tagger fitted on {train_idx.size} "
                 f"of the {n} sentences, decoding the other {held_idx.size})")
        train = [np.flatnonzero(loc != f) for loc in local]
        if by_count:
            count = delayed(_count_selection, pure=True)
            counts = tree_reduce([count(estimator._count_partition, p, idx)
                                  for p, idx in zip(parts.partitions, train)],
                                 estimator._merge_counts)
            model = delayed(_fit_from_counts, pure=True)(clone(estimator), counts, where)
        else:
            model = delayed(_fit_selection, pure=True)(clone(estimator), where, train,
                                                       *parts.partitions)
        models.append(model)
        extras = []
        for j, (p, loc) in enumerate(zip(parts.partitions, local)):
            held = np.flatnonzero(loc == f)
            if held.size:
                nb = delayed(_decode_selection, pure=True)(model, p, held, k, where)
                decoded[j].append((held, nb))
                extras.append(delayed(_extra_tags, pure=True)(nb, model))
        fold_tags.append(delayed(_fold_tags, pure=True)(model, extras))
    tags = delayed(_jackknife_tags, pure=True)(gold_tags, *fold_tags)
    assemble = delayed(_assemble, pure=True)
    return PartitionedNBest([assemble(p, tags, [h for h, _ in dec], *[nb for _, nb in dec])
                             for p, dec in zip(parts.partitions, decoded)])
