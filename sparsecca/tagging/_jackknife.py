"""Jackknifed n-best lists: every training sentence decoded by a tagger that never saw it."""

from __future__ import annotations

import numpy as np

from .._params import check_int
from .._tagset import COLUMN_HINT
from ..data import TaggedCorpus, kfold_indices
from ..exceptions import TagsetMismatchError, in_context
from ._kbest_mixin import is_partitioned
from ._nbest import NBestList, concatenate

__all__ = ["jackknife_nbest", "clone"]


def _check_estimator(estimator) -> None:
    if isinstance(estimator, type):  # its get_params would miss 'self'
        raise TypeError(f"estimator must be an instance, e.g. {estimator.__name__}(), got the "
                        f"class {estimator.__name__}")
    if not hasattr(estimator, "get_params"):
        raise TypeError(f"estimator must have get_params (scikit-learn style), got "
                        f"{type(estimator).__name__}")


def clone(estimator):
    """A new unfitted estimator with the same parameters (``type(e)(**e.get_params())``).

    Parameters
    ----------
    estimator : object with ``get_params``
        An instance (scikit-learn style), fitted or not; it is not modified.

    Returns
    -------
    object
        Of the same class, built from the same parameters, without fitted attributes.

    Raises
    ------
    TypeError
        A class instead of an instance, or an object without ``get_params``.

    Examples
    --------
    >>> from sparsecca.tagging import TrigramHMM, clone
    >>> hmm = TrigramHMM(max_prefix_length=0)
    >>> fresh = clone(hmm)
    >>> fresh is hmm, fresh.max_prefix_length, hasattr(fresh, "tags_")
    (False, 0, False)
    """
    _check_estimator(estimator)
    return type(estimator)(**estimator.get_params())


def jackknife_nbest(estimator, corpus: TaggedCorpus, k: int = 10, folds: int = 10,
                    random_state=0, progress: bool = False) -> NBestList:
    """n-best lists for training sentences by k-fold jackknifing.

    The corpus is split into ``folds`` parts (sentences shuffled with ``random_state``);
    for each part a clone of ``estimator`` (same parameters, unfitted) is trained on the
    other parts and decodes the held-out one.  The result lists the sentences in their
    ORIGINAL order, so row ``i`` of the result belongs to ``corpus`` sentence ``i``.

    Parameters
    ----------
    estimator : tagger with ``get_params``, ``fit`` and ``nbest``
        E.g. :class:`TrigramHMM`; it is not modified.
    corpus : TaggedCorpus or sparsecca.distributed.PartitionedCorpus
        Tagged training sentences.  A partitioned corpus is jackknifed on the active Dask
        scheduler with the same folds: its sentences are counted first (so its partitions
        are computed twice unless persisted), each fold's tagger is fitted in a task of its
        own (a :class:`TrigramHMM` from the tree-summed counts of the fold's training
        sentences, another tagger on those sentences gathered on one worker) and decodes the
        fold's held-out sentences partition by partition.
    k : int >= 1
        Candidates per sentence.
    folds : int in [2, n_sentences]
    random_state : int, Generator or None
        Seeds the fold assignment.
    progress : bool
        Show a tqdm progress bar over folds (an in-memory corpus only).

    Returns
    -------
    NBestList or sparsecca.distributed.PartitionedNBest
        With Hamming losses against the gold tags, and the unknown mask relative to each
        sentence's fold model.  The tag vocabulary is the union over folds.  For a
        partitioned corpus, a lazy list per partition, on the same tag vocabulary, that
        gathered equals the list of the corpus gathered.

    Raises
    ------
    TypeError
        ``estimator`` is a class or has no ``get_params``; ``corpus`` is not a
        TaggedCorpus.
    ValueError
        An untagged corpus, fewer than 2 sentences, ``folds`` out of range; a fold's error
        is re-raised with the fold named.
    TagsetMismatchError
        A fold's training part lacks most tags of its held-out part: the corpus is too
        small for that many folds.

    Notes
    -----
    A reranker learns from the errors the tagger makes on new text.  Lists decoded by a
    tagger that was trained on the very same sentences hold far fewer (and other) errors,
    so the reranker's training data must come from held-out decoding; that is what the
    folds give (as in Collins & Koo 2005).

    References
    ----------
    M. Collins and T. Koo (2005).  Discriminative reranking for natural language parsing.
    Computational Linguistics 31(1), pp. 25-70.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.tagging import TrigramHMM, jackknife_nbest
    >>> train = synthetic_corpus(200, random_state=0)
    >>> nbest = jackknife_nbest(TrigramHMM(), train, k=5, folds=4)
    >>> nbest.n_sentences, nbest.corpus is train, int(nbest.n_candidates.max())
    (200, True, 5)
    >>> bool(nbest.unknown.any())  # words the fold's tagger never saw
    True
    """
    _check_estimator(estimator)  # before any fold is fitted
    if is_partitioned(corpus):
        check_int("k", k, 1)
        return corpus._jackknife_nbest(estimator, int(k), folds, random_state)
    return _jackknife_in_memory(estimator, corpus, k, folds, random_state, progress)


def _jackknife_in_memory(estimator, corpus, k, folds, random_state, progress) -> NBestList:
    if not isinstance(corpus, TaggedCorpus):
        raise TypeError(f"corpus must be a TaggedCorpus, got {type(corpus).__name__}")
    if not corpus.has_tags:
        raise ValueError("corpus must be tagged (tag_ids is None)")
    check_int("k", k, 1)
    if corpus.n_sentences < 2:  # (kfold_indices would name its n_sentences, not the corpus)
        raise ValueError(f"corpus must have at least 2 sentences to jackknife, got "
                         f"{corpus.n_sentences}")
    splits = kfold_indices(corpus.n_sentences, folds, shuffle=True, random_state=random_state)
    it = splits
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(splits, desc="jackknife", unit="fold")
    parts: list[NBestList] = []
    held_all: list[np.ndarray] = []
    n_folds = len(splits)
    for fold, (train_idx, held_idx) in enumerate(it, 1):
        where = (f"jackknife fold {fold} of {n_folds} (a tagger fitted on {train_idx.size} of "
                 f"the {corpus.n_sentences} sentences, decoding the other {held_idx.size})")
        try:
            model = clone(estimator).fit(corpus.select(train_idx))
            parts.append(model.nbest(corpus.select(held_idx), k=k))
        except TagsetMismatchError as exc:
            # one corpus has one tag column: the fold's training part lacks the held-out
            # part's tags because the corpus is tiny, not because of a swapped column
            raise TagsetMismatchError(
                f"{where}: {str(exc).removesuffix(COLUMN_HINT)}; the training part lacks "
                f"most of the held-out part's tags: the corpus is too small for {n_folds} "
                f"folds (use {'fewer folds or ' if n_folds > 2 else ''}more sentences)"
            ) from None
        except ValueError as exc:
            raise in_context(exc, where) from exc
        held_all.append(held_idx)
    stacked = concatenate(parts)
    # stacked sentence j is corpus sentence held[j]; invert to restore the corpus order
    held = np.concatenate(held_all)
    inverse = np.empty_like(held)
    inverse[held] = np.arange(held.size)
    out = stacked.select(inverse)
    # hand back the caller's corpus object itself: the folds are selections of it, so they
    # share its vocabularies and the re-ordered arrays must equal the original ones
    c = out.corpus
    if (c.words is corpus.words and c.tags is corpus.tags
            and np.array_equal(c.offsets, corpus.offsets)
            and np.array_equal(c.word_ids, corpus.word_ids)
            and np.array_equal(c.tag_ids, corpus.tag_ids)):
        out = NBestList(out.tag_ids, out.cand_offsets, out.sent_offsets, out.scores, corpus,
                        out.tags, out.unknown)
    return out
