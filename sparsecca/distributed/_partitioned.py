"""Ordered collections of Dask-delayed partitions: a corpus or an n-best list split by
sentences, each partition an ordinary in-memory object of the library.

Every stage of the distributed pipeline is a map over partitions (``map``), a tree reduce of
per-partition partial results (``reduce``), or both.  Nothing here computes eagerly: a
``Partitioned`` holds delayed objects, and the active Dask scheduler (threads, processes, or a
``distributed.Client``) runs them on ``compute``/``persist``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

__all__ = ["Partitioned", "PartitionedCorpus", "PartitionedNBest", "import_dask",
           "tree_reduce"]


def import_dask():
    """The ``dask`` module, or an ImportError that names the extra to install."""
    try:
        import dask
    except ImportError:  # pragma: no cover - the test extra installs dask
        raise ImportError("sparsecca.distributed needs dask and distributed: "
                          "pip install \".[distributed]\" (from the sparsecca checkout)") from None
    return dask


def tree_reduce(parts: Sequence[Any], add: Callable[[Any, Any], Any]):
    """Pairwise tree sum of delayed partial results: log2(n) levels, no task holding more
    than two inputs.  ``parts`` must be non-empty; a single part is returned as it is.

    Examples
    --------
    >>> import dask
    >>> from sparsecca.distributed import tree_reduce
    >>> parts = [dask.delayed(i) for i in range(5)]
    >>> tree_reduce(parts, lambda a, b: a + b).compute()
    10
    """
    dask = import_dask()
    level = list(parts)
    if not level:
        raise ValueError("tree_reduce needs at least one partial result, got none")
    add_d = dask.delayed(add, pure=True)
    while len(level) > 1:
        nxt = [add_d(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def shared(obj):
    """``obj`` as one input of many tasks: under a ``distributed`` client, scattered to the
    workers once (a future, not data inside the task graph); else one graph node."""
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):  # no distributed, or no client: a local scheduler
        return import_dask().delayed(obj, traverse=False)
    return client.scatter(obj, broadcast=True, hash=False)


def _check_live(delayeds, what):
    """Raise a RuntimeError when ``delayeds`` depend on results persisted through a
    ``distributed`` client that has closed (computing them would fail with a bare KeyError of
    a task name)."""
    try:
        from distributed import Future
    except ImportError:  # pragma: no cover - no distributed, no futures
        return
    for d in delayeds:
        for v in d.__dask_graph__().values():
            if isinstance(v, Future) and v.client.status in ("closing", "closed"):
                raise RuntimeError(
                    f"this {what} was persisted on a Dask cluster whose client has closed "
                    f"(status {v.client.status!r}), and its partitions went with it: use it "
                    f"inside the scheduler(...) block that persisted it, gather() it there, "
                    f"or build and persist it again")


def _split(n, partitions):
    """Index arrays of consecutive runs of ``range(n)``: ``partitions`` of them (an int) or
    of the given sizes (a sequence)."""
    import numpy as np

    from .._params import check_int

    if isinstance(partitions, (int, np.integer)) and not isinstance(partitions, bool):
        k = check_int("partitions", partitions, 1)
        if k > max(1, n):
            raise ValueError(f"partitions must be an int in [1, {max(1, n)}] (the number of "
                             f"sentences) or a sequence of sizes, got {k}")
        return np.array_split(np.arange(n), k)
    try:
        sizes = np.asarray(partitions)
    except (TypeError, ValueError):
        sizes = np.asarray([None])
    if (sizes.ndim != 1 or sizes.size == 0 or sizes.dtype.kind not in "iu"
            or np.any(sizes < 0) or int(sizes.sum()) != n):
        raise ValueError(f"partitions must be an int in [1, {max(1, n)}] or a non-empty "
                         f"sequence of sizes >= 0 summing to the {n} sentences, got "
                         f"{partitions!r}")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    return [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


class Partitioned:
    """An ordered sequence of Dask-delayed partitions.

    Parameters
    ----------
    partitions : sequence of dask.delayed.Delayed (or plain objects, wrapped as delayed)
        In corpus order; at least one.

    Attributes
    ----------
    partitions : list of dask.delayed.Delayed
    n_partitions : int

    Examples
    --------
    >>> from sparsecca.distributed import Partitioned
    >>> p = Partitioned([[1, 2], [3]])
    >>> p.map(len).compute()
    [2, 1]
    >>> p.reduce(sum, lambda a, b: a + b).compute()
    6
    """

    def __init__(self, partitions):
        dask = import_dask()
        from dask.delayed import Delayed

        parts = list(partitions)
        if not parts:
            raise ValueError(f"{type(self).__name__} needs at least one partition, got none")
        self._partitions = [p if isinstance(p, Delayed)
                            else dask.delayed(p, traverse=False) for p in parts]

    @property
    def partitions(self) -> list:
        """The delayed partitions, in order (checked to be computable: a partition persisted
        on a cluster whose client has closed is gone with it)."""
        _check_live(self._partitions, type(self).__name__)
        return self._partitions

    @property
    def n_partitions(self) -> int:
        return len(self._partitions)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_partitions={self.n_partitions})"

    def map(self, fn: Callable, *args, cls=None, pure: bool = True, **kwargs) -> "Partitioned":
        """``fn(partition, *args, **kwargs)`` on every partition, lazily; ``cls`` chooses the
        type of the result (a plain :class:`Partitioned` by default)."""
        dask = import_dask()
        f = dask.delayed(fn, pure=pure)
        return (cls or Partitioned)([f(p, *args, **kwargs) for p in self.partitions])

    def reduce(self, of_partition: Callable, add: Callable):
        """The delayed tree sum ``add(...)`` of ``of_partition(partition)`` over partitions."""
        return tree_reduce(self.map(of_partition).partitions, add)

    def compute(self, **compute_kwargs) -> list:
        """The partitions, computed on the active scheduler, as a list."""
        dask = import_dask()
        return list(dask.compute(*self.partitions, **compute_kwargs))

    def persist(self, **persist_kwargs) -> "Partitioned":
        """The same collection with every partition computed and kept where it was computed
        (on the workers under ``distributed``), so that later stages start from it."""
        dask = import_dask()
        return type(self)(list(dask.persist(*self.partitions, **persist_kwargs)))


class PartitionedCorpus(Partitioned):
    """A corpus as sentence-contiguous partitions, each a :class:`~sparsecca.data.TaggedCorpus`
    with its own vocabularies (``gather`` merges them).

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.distributed import PartitionedCorpus
    >>> corpus = synthetic_corpus(10, random_state=0)
    >>> parts = PartitionedCorpus.from_corpus(corpus, 3)
    >>> parts.n_partitions, parts.gather() == corpus
    (3, True)
    """

    @classmethod
    def from_corpus(cls, corpus, partitions) -> "PartitionedCorpus":
        """Split an in-memory corpus into sentence-contiguous partitions.

        Parameters
        ----------
        corpus : TaggedCorpus
        partitions : int in [1, n_sentences] or sequence of int >= 0
            The number of partitions (sizes as ``numpy.array_split``'s: the first
            ``n_sentences % n`` one sentence longer), or the sentence count of each (summing
            to ``n_sentences``; 0 gives an empty partition).
        """
        from ..data import TaggedCorpus

        if not isinstance(corpus, TaggedCorpus):
            raise TypeError(f"corpus must be a TaggedCorpus, got {type(corpus).__name__}")
        return cls([corpus.select(idx) for idx in _split(corpus.n_sentences, partitions)])

    def gather(self, **compute_kwargs):
        """The whole corpus in memory (vocabularies merged in order of first appearance)."""
        from ..data import concat_corpora

        return concat_corpora(self.compute(**compute_kwargs))

    # the taggers' entry points (sparsecca.tagging cannot import this layer: a tagger's
    # nbest, tag and jackknife_nbest, and the MEMM's fit, hand a partitioned corpus to these)
    def _tagger_nbest(self, tagger, k):
        from ._tagging import nbest_partitions

        return nbest_partitions(self, tagger, k)

    def _tagger_tag(self, tagger):
        from ._tagging import tag_partitions

        return tag_partitions(self, tagger)

    def _jackknife_nbest(self, estimator, k, folds, random_state):
        from ._tagging import jackknife_partitions

        return jackknife_partitions(self, estimator, k, folds, random_state)

    def _fit_perceptron_mixing(self, tagger, rng):
        """A :class:`~sparsecca.tagging.PerceptronTagger`'s fit by iterative parameter
        mixing (its ``partitioned_fit="mixing"``; see ``distributed._perceptron``)."""
        from ._perceptron import fit_perceptron_mixing

        return fit_perceptron_mixing(self, tagger, rng)

    def _mms_mixing(self, tagger):
        """An :class:`~sparsecca.tagging.MMSTagger`'s tables fitted on these partitions and
        its training by iterative parameter mixing (its ``partitioned_fit="mixing"``; see
        ``distributed._mms``)."""
        from ._mms import fit_mms_mixing

        return fit_mms_mixing(self, tagger)

    def _memm_objective(self, tagger):
        """An MEMM's training objective on these partitions (its ``fit`` calls it; see
        ``distributed._memm_fit``)."""
        from ._memm_fit import memm_objective

        return memm_objective(self, tagger)


class PartitionedNBest(Partitioned):
    """n-best lists as sentence-contiguous partitions, each a
    :class:`~sparsecca.tagging.NBestList` (``gather`` concatenates them).

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.distributed import PartitionedNBest
    >>> from sparsecca.tagging import TrigramHMM
    >>> corpus = synthetic_corpus(12, random_state=0)
    >>> nbest = TrigramHMM().fit(corpus).nbest(corpus, k=3)
    >>> parts = PartitionedNBest([nbest.select(range(0, 5)), nbest.select(range(5, 12))])
    >>> parts.gather() == nbest
    True
    """

    @classmethod
    def from_nbest(cls, nbest, partitions) -> "PartitionedNBest":
        """Split an in-memory n-best list into sentence-contiguous partitions.

        Parameters
        ----------
        nbest : NBestList
        partitions : int in [1, n_sentences] or sequence of int >= 0
            As :meth:`PartitionedCorpus.from_corpus`'s.
        """
        from ..tagging import NBestList

        if not isinstance(nbest, NBestList):
            raise TypeError(f"nbest must be an NBestList, got {type(nbest).__name__}")
        return cls([nbest.select(idx) for idx in _split(nbest.n_sentences, partitions)])

    def gather(self, **compute_kwargs):
        """The whole n-best list in memory (tag and word vocabularies merged)."""
        from ..tagging import concatenate

        return concatenate(self.compute(**compute_kwargs))

    def _apply_reranker(self, reranker, method: str, **compute_kwargs):
        """What a reranker's ``method`` gives for this list, partition by partition (the
        rerankers call it when handed a PartitionedNBest; see ``distributed._rerank``)."""
        from ._rerank import apply_reranker

        return apply_reranker(reranker, self, method, **compute_kwargs)

    def _reranker_mixing(self, reranker, scale=None):
        """These lists as the training lists of ``reranker``'s parameter mixing (its
        ``partitioned_fit="mixing"``), persisted and checked (``scale``: the largest decoder
        weight, whose products with the scores must be finite); see
        ``distributed._rerank_mixing``."""
        from ._rerank_mixing import MixingTrain

        return MixingTrain(self, reranker, scale)

    def _fit_cca_reranker(self, reranker, dev, grids):
        """A CCA reranker's fit on these lists (the rerankers call it when handed a
        PartitionedNBest; see ``distributed._cca_fit``)."""
        from ._cca_fit import fit_cca_reranker

        return fit_cca_reranker(reranker, self, dev, grids)

    def _fit_boosting_reranker(self, reranker, dev):
        """A boosting reranker's fit on these lists (the rerankers call it when handed a
        PartitionedNBest; see ``distributed._boosting_fit``)."""
        from ._boosting_fit import fit_boosting_reranker

        return fit_boosting_reranker(reranker, self, dev)
