"""The public decoding surface every k-best tagger shares: ``tag``, ``nbest`` and the tag
vocabulary of an n-best list (the fitted tags, extended by gold tags never seen in training).

:class:`KBestTaggerMixin` is a base of :class:`~sparsecca.tagging.TrigramHMM`,
:class:`~sparsecca.tagging.MMSTagger` and the lattice taggers
(:class:`~sparsecca.tagging.PerceptronTagger`, :class:`~sparsecca.tagging.MEMMTagger`).
A tagger supplies ``tags_``, ``_check_fitted()`` and

* ``_decode(corpus, k)`` -> ``((seq_tags, seq_offsets, sent_seq, scores), unknown)``: its
  k-best decoding (the arrays of :func:`~sparsecca.kernels.kbest_viterbi`) and the mask of
  tokens whose word was not seen in training;
* optionally ``_best_tags(corpus)``: the 1-best tag ids of every token (default: the first
  candidate of ``_decode(corpus, 1)``), for a tagger with another 1-best decoder.
"""

from __future__ import annotations

import numpy as np

from .._params import check_int
from .._persist import ModelFormatError, unpack_strings
from .._tagset import check_tagset
from ..data import TaggedCorpus, Vocabulary
from ._nbest import NBestList


def _check_corpus(name: str, corpus, need_tags: bool) -> TaggedCorpus:
    if not isinstance(corpus, TaggedCorpus):
        raise TypeError(f"{name} must be a TaggedCorpus, got {type(corpus).__name__}")
    if need_tags and not corpus.has_tags:
        raise ValueError(f"{name} must be tagged (tag_ids is None)")
    return corpus


def is_partitioned(corpus) -> bool:
    """Whether ``corpus`` is a :class:`sparsecca.distributed.PartitionedCorpus` (which this
    layer cannot import): the taggers hand such a corpus to its entry points
    (``_tagger_nbest``, ``_tagger_tag``, ``_jackknife_nbest``) or reduce over it."""
    return not isinstance(corpus, TaggedCorpus) and callable(
        getattr(corpus, "_tagger_nbest", None))


#: the ``partitioned_fit`` and ``mixing_weights`` values of the taggers trainable by
#: parameter mixing (:class:`~sparsecca.tagging.PerceptronTagger`,
#: :class:`~sparsecca.tagging.MMSTagger`)
PARTITIONED_FITS = ("gather", "mixing")
MIXING_WEIGHTS = ("uniform", "updates")


def check_partitioned_fit(estimator) -> None:
    """Validate an estimator's ``partitioned_fit`` and ``mixing_weights``."""
    for name, allowed in (("partitioned_fit", PARTITIONED_FITS),
                          ("mixing_weights", MIXING_WEIGHTS)):
        value = getattr(estimator, name)
        if not isinstance(value, str) or value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def gathered(corpus):
    """A partitioned corpus gathered in memory (on the driver); any other object as it is."""
    return corpus.gather() if is_partitioned(corpus) else corpus


class KBestTaggerMixin:
    """``tag`` and ``nbest`` of a fitted k-best tagger (see the module documentation)."""

    def _best_tags(self, corpus: TaggedCorpus) -> np.ndarray:
        (seq_tags, _, _, _), _ = self._decode(corpus, 1)
        return seq_tags

    def tag(self, corpus: TaggedCorpus) -> TaggedCorpus:
        """The best-scoring tag sequence of every sentence under the tagger's model (the
        most probable one of an HMM or an MEMM, the highest linear score of a perceptron;
        an MMS tagger follows its ``decoder``).

        Parameters
        ----------
        corpus : TaggedCorpus or sparsecca.distributed.PartitionedCorpus
            Sentences to tag (gold tags, if any, are ignored).  A partitioned corpus is
            tagged partition by partition on the active Dask scheduler.

        Returns
        -------
        TaggedCorpus or sparsecca.distributed.PartitionedCorpus
            The same words, tagged with ids in ``tags_`` (lazily, per partition, for a
            partitioned corpus).

        Examples
        --------
        >>> from sparsecca.data import synthetic_corpus
        >>> from sparsecca.tagging import TrigramHMM
        >>> corpus = synthetic_corpus(80, random_state=0)
        >>> tagged = TrigramHMM().fit(corpus[:60]).tag(corpus[60:])
        >>> tagged.n_tokens == corpus[60:].n_tokens, tagged.has_tags
        (True, True)
        """
        self._check_fitted()
        if is_partitioned(corpus):
            return corpus._tagger_tag(self)
        corpus = _check_corpus("corpus", corpus, need_tags=False)
        return corpus.with_tags(self._best_tags(corpus), self.tags_)

    def nbest(self, corpus: TaggedCorpus, k: int = 10) -> NBestList:
        """The ``k`` best-scoring tag sequences of every sentence, with their model scores
        (the log-probability of an HMM, ``sum_j log q(t_j | h_j)`` of an MEMM, the linear
        sequence score of a perceptron, the clusters' scores with the HMM transitions of an
        MMS tagger).

        Parameters
        ----------
        corpus : TaggedCorpus or sparsecca.distributed.PartitionedCorpus
            Sentences to decode (partition by partition on the active Dask scheduler for a
            partitioned corpus).  When tagged, the list carries Hamming losses against these
            gold tags; gold tags never seen in training are appended to the list's tag
            vocabulary (no candidate can produce them, so they always count as errors).
            More than half of the gold tokens outside ``tags_`` is a TagsetMismatchError (a
            ValueError): the corpus was read from another tag column.
        k : int >= 1
            Candidates per sentence; a sentence with fewer possible sequences gets fewer.

        Returns
        -------
        NBestList or sparsecca.distributed.PartitionedNBest
            Candidates sorted by descending score; ``unknown`` marks tokens whose word was
            not seen in training.  A lazy list per partition for a partitioned corpus.

        Examples
        --------
        >>> from sparsecca.data import synthetic_corpus
        >>> from sparsecca.tagging import TrigramHMM
        >>> corpus = synthetic_corpus(80, random_state=0)
        >>> nb = TrigramHMM().fit(corpus[:60]).nbest(corpus[60:], k=5)
        >>> nb.n_sentences, bool(nb.oracle_accuracy() >= nb.top1_accuracy())
        (20, True)
        """
        self._check_fitted()
        check_int("k", k, 1)
        if is_partitioned(corpus):
            return corpus._tagger_nbest(self, int(k))
        corpus = _check_corpus("corpus", corpus, need_tags=False)
        if corpus.has_tags:  # losses against another tag column would be meaningless
            check_tagset(corpus.tag_ids, corpus.tags, self.tags_, what="corpus gold tags",
                         fitted_what=f"the tagset of this {type(self).__name__}")
        (seq_tags, seq_offsets, sent_seq, scores), unknown = self._decode(corpus, int(k))
        return NBestList(seq_tags, seq_offsets, sent_seq, scores, corpus,
                         self._list_tags(corpus), unknown)

    def _list_tags(self, corpus: TaggedCorpus) -> Vocabulary:
        """``tags_``, extended by the gold tags of ``corpus`` never seen in training."""
        tags = self.tags_
        if corpus.has_tags:
            extra = [corpus.tags[i] for i in np.unique(corpus.tag_ids)
                     if corpus.tags[i] not in tags]
            if extra:
                tags = Vocabulary(tags.items + extra)
        return tags


def saved_vocabularies(arrays: dict) -> tuple[Vocabulary, Vocabulary]:
    """The tag and word vocabularies of a saved tagger's arrays (``ModelFormatError`` when
    it has no tags): the first step of each tagger's ``_set_state``."""
    tags = Vocabulary(unpack_strings(arrays, "tags"))
    words = Vocabulary(unpack_strings(arrays, "words"))
    if len(tags) < 1:
        raise ModelFormatError("the model has no tags")
    return tags, words
