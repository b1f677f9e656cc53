"""A fitted reranker applied to partitioned n-best lists, partition by partition.

Reranking is sentence-local, so every method of :class:`~sparsecca.rerank.BaseReranker` is a
map over the partitions (``decision_function``, ``rerank``, ``predict``, ``reranked``), or a
map and a tree sum (``score``: the wrong and total tokens).  The rerankers call
:func:`apply_reranker` themselves when given a :class:`PartitionedNBest`, so
``reranker.reranked(parts)`` is a :class:`PartitionedNBest`, equal partition by partition to
the in-memory result on the gathered list.
"""

from __future__ import annotations

import numpy as np

from ._partitioned import (
    Partitioned,
    PartitionedCorpus,
    PartitionedNBest,
    import_dask,
    tree_reduce,
)
from ._views import in_partition

__all__ = ["apply_reranker", "METHODS"]

#: the reranker methods that map over partitions, and the class of their result
METHODS = {"decision_function": Partitioned, "projection_scores": Partitioned,
           "rerank": Partitioned, "predict": PartitionedCorpus, "reranked": PartitionedNBest,
           "score": None}


def _empty(part) -> bool:
    return part.n_sentences == 0 or part.n_total == 0


def _apply(part, reranker, method: str):
    """``reranker.<method>(part)``; an empty partition gives the empty result."""
    if _empty(part):
        if method in ("decision_function", "projection_scores"):
            return np.zeros(part.n_total, dtype=np.float64)
        if method == "rerank":
            return np.full(part.n_sentences, -1, dtype=np.int64)
        if method == "predict":
            return part.best(np.full(part.n_sentences, -1, dtype=np.int64))
        return part
    return getattr(reranker, method)(part)


def _wrong_tokens(part, reranker) -> np.ndarray:
    """(wrong tokens of the reranker's choices, tokens) of one partition."""
    from ..rerank import losses_of_choice

    if part.losses is None:
        raise ValueError("has no gold tags (losses is None); score needs them")
    if part.n_sentences == 0:
        return np.zeros(2, dtype=np.int64)
    if part.n_total == 0:  # every token wrong, as for a sentence without candidates
        n = part.corpus.n_tokens
        return np.array([n, n], dtype=np.int64)
    choice = reranker.rerank(part)
    return np.array([losses_of_choice(part, choice), part.corpus.n_tokens], dtype=np.int64)


def apply_reranker(reranker, parts: PartitionedNBest, method: str, **compute_kwargs):
    """``reranker.<method>`` of every partition of ``parts``.

    Parameters
    ----------
    reranker : fitted reranker (a :class:`~sparsecca.rerank.BaseReranker`)
    parts : PartitionedNBest
    method : one of :data:`METHODS`
    **compute_kwargs
        For ``score``, which computes; the others are lazy.

    Returns
    -------
    Partitioned (of score or choice arrays), PartitionedCorpus (``predict``),
    PartitionedNBest (``reranked``), or float (``score``: the token accuracy over all
    partitions)

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.distributed import PartitionedNBest
    >>> from sparsecca.rerank import PerceptronReranker
    >>> from sparsecca.tagging import TrigramHMM
    >>> corpus = synthetic_corpus(30, random_state=0)
    >>> nbest = TrigramHMM().fit(corpus).nbest(corpus, k=3)
    >>> reranker = PerceptronReranker(n_epochs=2, decoder_weight=1.0).fit(nbest, nbest)
    >>> parts = PartitionedNBest([nbest.select(range(0, 12)), nbest.select(range(12, 30))])
    >>> reranker.score(parts) == reranker.score(nbest)
    True
    >>> reranker.reranked(parts).gather() == reranker.reranked(nbest)
    True
    """
    if not isinstance(parts, PartitionedNBest):
        raise TypeError(f"nbest must be a PartitionedNBest, got {type(parts).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    dask = import_dask()
    model = dask.delayed(reranker, traverse=False)
    f = dask.delayed(in_partition, pure=True)
    if method == "score":
        per_part = [f(i, _wrong_tokens, p, model) for i, p in enumerate(parts.partitions)]
        (wrong, total), = dask.compute(tree_reduce(per_part, np.add), **compute_kwargs)
        if total == 0:
            raise ValueError("nbest is empty (no tokens in any partition)")
        return 1.0 - int(wrong) / int(total)
    return METHODS[method]([f(i, _apply, p, model, method)
                            for i, p in enumerate(parts.partitions)])
