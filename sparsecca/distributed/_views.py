"""Feature views over partitions: fitted from tree-reduced counts, applied per partition.

A view's fit is split (:meth:`~sparsecca.features.SuffixView.count`, the associative
:func:`~sparsecca.features.merge_counts`, :meth:`~sparsecca.features.SuffixView.fit_counts`),
so the vocabulary of the whole corpus is the finalize of a tree sum of per-partition counts,
and equals the view fitted on the gathered corpus.  The fitted views then transform each
partition where it lives, into row-chunked Dask arrays: the inputs of a distributed CCA fit.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from .._tagset import MAX_UNKNOWN_TAG_FRACTION
from ..exceptions import TagsetMismatchError, in_context
from ._partitioned import PartitionedCorpus, PartitionedNBest, import_dask, tree_reduce
from ._partitioned import shared as _shared

__all__ = ["CCAArrays", "cca_arrays", "fit_views", "partition_summaries", "transform_partitions",
           "in_partition"]


def _labelled(label: str, fn, part, *args, **kwargs):
    """``fn(part, *args, **kwargs)``, an error in it re-raised prefixed with ``label``."""
    try:
        return fn(part, *args, **kwargs)
    except (ValueError, TypeError) as exc:
        raise in_context(exc, label) from exc


def in_partition(i: int, fn, part, *args, **kwargs):
    """``fn(part, *args, **kwargs)``, an error in it re-raised naming partition ``i``."""
    return _labelled(f"partition {i}", fn, part, *args, **kwargs)


def in_named_partition(name: str, i: int, fn, part, *args):
    """``fn(part, *args)``, an error in it re-raised naming ``name`` partition ``i`` (the
    lists of a fit: ``"train partition 1: ..."``)."""
    return _labelled(f"{name} partition {i}", fn, part, *args)


def _check_parts(parts, name: str = "parts"):
    if not isinstance(parts, (PartitionedNBest, PartitionedCorpus)):
        raise TypeError(f"{name} must be a PartitionedNBest or a PartitionedCorpus, got "
                        f"{type(parts).__name__}")
    return isinstance(parts, PartitionedNBest)


def _corpus(part):
    return part if hasattr(part, "word_ids") else part.corpus


def _summary(part) -> tuple:
    """(sentences, candidates or None, tag token counts by tag string) of one partition."""
    corpus = _corpus(part)
    tags: Counter = Counter()
    if corpus.has_tags and corpus.n_tokens:
        for t, c in zip(*np.unique(corpus.tag_ids, return_counts=True)):
            tags[corpus.tags[int(t)]] += int(c)
    n_cand = None
    if part is not corpus:
        n_cand = int(part.n_total)
        if part.tag_ids.size:
            for t, c in zip(*np.unique(part.tag_ids, return_counts=True)):
                tags[part.tags[int(t)]] += int(c)
    return corpus.n_sentences, n_cand, tags


def partition_summaries(parts, **compute_kwargs) -> list:
    """Per partition (n_sentences, n_candidates or None, Counter of tag tokens), computed,
    after checking that the partitions share one tagset.

    Parameters
    ----------
    parts : PartitionedNBest or PartitionedCorpus

    Returns
    -------
    list of tuple

    Raises
    ------
    TagsetMismatchError
        When more than half of a partition's tag tokens (gold and candidates) carry tags
        that the first partition with tags never uses: another tag column; the message
        names both partitions.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.distributed import PartitionedCorpus, partition_summaries
    >>> parts = PartitionedCorpus.from_corpus(synthetic_corpus(10, random_state=0), 2)
    >>> [n for n, _, _ in partition_summaries(parts)]
    [5, 5]
    """
    _check_parts(parts)
    dask = import_dask()
    summaries = list(dask.compute(*parts.map(_summary).partitions, **compute_kwargs))
    check_same_tagset(summaries)
    return summaries


def check_same_tagset(summaries) -> None:
    ref = next((i for i, s in enumerate(summaries) if s[2]), None)
    if ref is None:
        return
    known = set(summaries[ref][2])
    for i, (_, _, tags) in enumerate(summaries):
        total = sum(tags.values())
        foreign = sum(c for t, c in tags.items() if t not in known)
        if total and foreign > MAX_UNKNOWN_TAG_FRACTION * total:
            new = sorted(t for t in tags if t not in known)
            raise TagsetMismatchError(
                f"partition {i} has another tagset than partition {ref}: {foreign} of its "
                f"{total} tag tokens ({foreign / total:.0%}) carry tags partition {ref} never "
                f"uses (e.g. {new[:5]}; partition {ref} has {sorted(known)[:5]}...)")


def _count_all(part, views):
    corpus = _corpus(part)
    return tuple(v.count(corpus) for v in views)


def _merge_one(a, b):
    from ..features import merge_counts

    return merge_counts(a, b)


def _merge_all(a, b):
    from ..features import merge_counts

    return tuple(merge_counts(x, y) for x, y in zip(a, b))


def fit_views(parts, views, **compute_kwargs) -> list:
    """Fit unfitted views on the gold corpus of every partition by a tree sum of counts.

    Parameters
    ----------
    parts : PartitionedNBest or PartitionedCorpus
        The views are fitted on the partitions' corpora (an n-best list's ``corpus``).
    views : sequence of views with a split fit (``count`` / ``fit_counts``)
        Left unfitted: fitted clones are returned.

    Returns
    -------
    list of fitted views, each equal to ``clone.fit(gathered corpus)``

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.distributed import PartitionedCorpus, fit_views
    >>> from sparsecca.features import SuffixView, TagNgramView
    >>> corpus = synthetic_corpus(30, random_state=0)
    >>> parts = PartitionedCorpus.from_corpus(corpus, 3)
    >>> sv, tv = fit_views(parts, [SuffixView(min_count=2), TagNgramView()])
    >>> sv.vocabulary_ == SuffixView(min_count=2).fit(corpus).vocabulary_
    True
    """
    _check_parts(parts)
    views = list(views)
    for i, v in enumerate(views):
        if not all(callable(getattr(v, a, None)) for a in ("count", "fit_counts")):
            raise TypeError(f"views[{i}] ({type(v).__name__}) has no split fit (count and "
                            f"fit_counts)")
    clones = [type(v)(**v.get_params()) for v in views]
    dask = import_dask()
    count = dask.delayed(in_partition, pure=True)
    per_part = [count(i, _count_all, p, clones) for i, p in enumerate(parts.partitions)]
    (counts,) = dask.compute(tree_reduce(per_part, _merge_all), **compute_kwargs)
    return [v.fit_counts(c) for v, c in zip(clones, counts)]


def _transform(part, view, candidates: bool):
    if candidates:
        return view.transform_sequences(part.tag_ids, part.cand_offsets, part.tags)
    return view.transform(_corpus(part))


def transform_partitions(parts, view, rows, *, candidates: bool = False):
    """A fitted view applied to every partition: a Dask array chunked by partition.

    Parameters
    ----------
    parts : PartitionedNBest or PartitionedCorpus
    view : fitted view
    rows : sequence of int
        The rows of each partition's block (sentences, or candidates), from
        :func:`partition_summaries`: the chunks are known without computing the blocks.
    candidates : bool, default False
        Transform the candidates' tag sequences (``transform_sequences``, an n-best list's
        ``tag_ids``) instead of the gold corpus.

    Returns
    -------
    dask.array.Array, shape (sum(rows), view.n_features_), chunks ``(tuple(rows),
    (n_features_,))``, blocks scipy.sparse CSR matrices

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.distributed import PartitionedCorpus, transform_partitions
    >>> from sparsecca.features import WordView
    >>> corpus = synthetic_corpus(10, random_state=0)
    >>> parts = PartitionedCorpus.from_corpus(corpus, 2)
    >>> X = transform_partitions(parts, WordView().fit(corpus), [5, 5])
    >>> X.chunks[0], (X.compute() != WordView().fit_transform(corpus)).nnz
    ((5, 5), 0)
    """
    is_nbest = _check_parts(parts)
    if candidates and not is_nbest:
        raise ValueError("candidates=True needs a PartitionedNBest, got a PartitionedCorpus")
    rows = [int(r) for r in rows]
    if len(rows) != parts.n_partitions:
        raise ValueError(f"rows must give one size per partition ({parts.n_partitions}), "
                         f"got {len(rows)}")
    dask = import_dask()
    f = dask.delayed(in_partition, pure=True)
    blocks = [f(i, _transform, p, view, candidates) for i, p in enumerate(parts.partitions)]
    dtype = np.dtype(view.get_params().get("dtype", np.float64) or np.float64)
    return row_chunked(blocks, rows, int(view.n_features_), dtype, "sparsecca-view")


def row_chunked(blocks, rows, width: int, dtype, prefix: str):
    """A Dask array whose row chunk ``i`` is the delayed CSR ``blocks[i]`` of ``rows[i]`` rows
    (empty chunks kept, so chunk ``i`` is partition ``i``)."""
    import dask.array as da
    import scipy.sparse as sp
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    name = f"{prefix}-{tokenize(*[b.key for b in blocks], rows, width, str(dtype))}"
    layer = {(name, i, 0): b.key for i, b in enumerate(blocks)}
    graph = HighLevelGraph.from_collections(name, layer, dependencies=blocks)
    return da.Array(graph, name, (tuple(int(r) for r in rows), (width,)), dtype=dtype,
                    meta=sp.csr_matrix((0, width), dtype=dtype))


class CCAArrays(NamedTuple):
    """The fitted views and the row-chunked matrices of a CCA reranker's fit."""

    input_view: object
    output_view: object
    X: object       #: sentences x input features
    Y: object       #: sentences x output features (the gold tags)
    Yhat: object    #: candidates x output features
    n_sentences: tuple
    n_candidates: tuple


def cca_arrays(parts, input_view=None, output_view=None, **compute_kwargs) -> CCAArrays:
    """Fit the input and output views on partitioned n-best lists and transform them.

    Parameters
    ----------
    parts : PartitionedNBest
        Gold tags needed (the output view is fitted on them).
    input_view, output_view : unfitted views, default SuffixView() and TagNgramView()

    Returns
    -------
    CCAArrays
        ``X`` and ``Y`` chunked by the partitions' sentences, ``Yhat`` by their candidates;
        equal to the in-memory views of the gathered list.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.distributed import PartitionedNBest, cca_arrays
    >>> from sparsecca.tagging import TrigramHMM
    >>> corpus = synthetic_corpus(20, random_state=0)
    >>> nbest = TrigramHMM().fit(corpus).nbest(corpus, k=3)
    >>> parts = PartitionedNBest([nbest.select(range(0, 8)), nbest.select(range(8, 20))])
    >>> arrays = cca_arrays(parts)
    >>> arrays.X.chunks[0], arrays.Yhat.shape[0] == nbest.n_total
    ((8, 12), True)
    """
    from ..features import SuffixView, TagNgramView

    if not _check_parts(parts):
        raise TypeError(f"parts must be a PartitionedNBest, got {type(parts).__name__}")
    summaries = partition_summaries(parts, **compute_kwargs)
    for i, (n, _, tags) in enumerate(summaries):
        if n and not tags:
            raise ValueError(f"partition {i} has no gold tags: the output view is fitted on "
                             f"the gold tags of the training lists")
    iv, ov = fit_views(parts, [SuffixView() if input_view is None else input_view,
                               TagNgramView() if output_view is None else output_view],
                       **compute_kwargs)
    n_sent = tuple(s[0] for s in summaries)
    n_cand = tuple(s[1] for s in summaries)
    return CCAArrays(iv, ov, transform_partitions(parts, iv, n_sent),
                     transform_partitions(parts, ov, n_sent),
                     transform_partitions(parts, ov, n_cand, candidates=True), n_sent, n_cand)


def _joint_counts(part, view, feats):
    return feats._count_candidates(part, view)


def _joint_raw(part, view, feats):
    return feats._raw(part, view)


def _discriminating(part, Z, feats):
    if part.n_total == 0:
        return np.zeros(Z.shape[1], dtype=np.int64)
    return feats._discriminating(Z, part)


def fit_joint_features(partitions, feats, name: str = "train") -> list:
    """Fit ``feats`` (an unfitted :class:`~sparsecca.rerank.JointFeatures`) on the
    partitions of an n-best list as on the list gathered.

    The joint view from its counts on every partition's candidates, tree-merged; then each
    partition's joint features of every column of the view (kept on its worker) and, per
    column, the number of its sentences the column discriminates in, tree-summed: the
    columns of ``min_count`` over the whole list.

    Parameters
    ----------
    partitions : list of delayed NBestList
    feats : JointFeatures, fitted in place
    name : str
        What errors call the list ("train partition 1: ...").

    Returns
    -------
    list of persisted scipy.sparse.csr_matrix, one per partition
        Its joint features of every column of the fitted view (``feats._select`` keeps the
        fitted columns).
    """
    dask = import_dask()
    f = dask.delayed(in_named_partition, pure=True)
    shared_feats = _shared(feats)
    blank = _shared(feats._new_view())
    counts = [f(name, i, _joint_counts, p, blank, shared_feats)
              for i, p in enumerate(partitions)]
    (total,) = dask.compute(tree_reduce(counts, _merge_one))
    view = feats._new_view().fit_counts(total)
    shared_view = _shared(view)
    Z = list(dask.persist(*[f(name, i, _joint_raw, p, shared_view, shared_feats)
                            for i, p in enumerate(partitions)]))
    disc = [f(name, i, _discriminating, p, z, shared_feats)
            for i, (p, z) in enumerate(zip(partitions, Z))]
    (total,) = dask.compute(tree_reduce(disc, np.add))
    feats._set_columns(view, total)
    return Z
