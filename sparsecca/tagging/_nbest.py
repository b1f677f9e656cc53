"""Columnar n-best lists: every candidate tag sequence of every sentence of a corpus."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._params import as_int_array
from .._persist import (
    ModelFormatError,
    PersistMixin,
    check_index,
    check_offsets,
    pack_strings,
    state_array,
    state_value,
    unpack_strings,
)
from ..data import TaggedCorpus, Vocabulary, concat_corpora, union_vocabulary
from ._nbest_arrays import (
    _TOKEN_SUBSETS,
    _bool_array,
    _check_no_nan,
    _check_offset_array,
    _gather_segments,
    _real_array,
    _segment_ids,
    _sentence_index,
)

__all__ = ["NBestList", "concatenate"]


class NBestList(PersistMixin):
    """All candidate tag sequences of a corpus, stored as flat arrays.

    Candidate ``r`` (a global index) is the tag-id sequence
    ``tag_ids[cand_offsets[r]:cand_offsets[r + 1]]``; the candidates of sentence ``i`` are
    ``r`` in ``sent_offsets[i]:sent_offsets[i + 1]`` (usually sorted by descending decoder
    score).  Every candidate of sentence ``i`` has that sentence's length.

    Parameters
    ----------
    tag_ids : int array, shape (n_candidate_tokens,)
        Candidate tag ids in ``tags``, flat.
    cand_offsets : int array, shape (n_candidates + 1,)
        Token offsets of each candidate into ``tag_ids``.
    sent_offsets : int array, shape (n_sentences + 1,)
        Candidate offsets of each sentence.
    scores : float array, shape (n_candidates,)
        Decoder scores (log-probabilities for :class:`TrigramHMM`): finite, or -inf for a
        sequence the decoder deems impossible; NaN and +inf are a ValueError, and an array
        that is not of real numbers (bool, complex, str, object) a TypeError.  A reranker
        never chooses a -inf candidate unless its whole sentence has -inf; the baseline
        rerankers (which learn a weight for this score) refuse -inf in train and dev.
    corpus : TaggedCorpus
        The sentences, with gold tags when known.
    tags : Vocabulary
        What the candidate tag ids mean.  When ``corpus`` has gold tags, every gold tag
        string must be in it (a tagger extends its own tag set with unseen gold tags).
    unknown : bool array, shape (n_tokens,), optional
        True for tokens whose word was not seen when training the decoder.  Integers 0 / 1
        are accepted too; other integers are a ValueError, other dtypes a TypeError.

    Attributes
    ----------
    losses : int32 array, shape (n_candidates,) or None
        Hamming loss (number of wrong tags) of each candidate against the gold tags; None
        when the corpus is untagged.
    gold_ids : int32 array, shape (n_tokens,) or None
        Gold tags as ids in ``tags``.

    Notes
    -----
    A sentence may have no candidates.  :meth:`argmax` and :meth:`oracle_indices` give it
    -1, and -1 is its only valid choice; the accuracies count its tokens as wrong (as the
    rerankers do: the list offers no tagging of them); :meth:`reorder`, :meth:`sort_by` and
    :meth:`truncate` keep it empty; :meth:`best` refuses it unless it has no tokens.

    ``save(path)`` writes the list (candidates, scores, the corpus with its gold tags, the
    unknown mask and the vocabularies) as a sparsecca model file: one ``.npz`` of arrays plus
    JSON metadata (format version, class name, library version), never pickle; an existing
    file is refused unless ``overwrite=True``.  ``NBestList.load(path)`` reads it back with
    ``np.load(allow_pickle=False)``; a file of another class, from a newer format version,
    truncated, corrupted or with inconsistent arrays raises
    :class:`~sparsecca._persist.ModelFormatError` naming the file.

    Examples
    --------
    Two sentences with two candidates each; in sentence 1 the decoder prefers the wrong one:

    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.tagging import NBestList
    >>> corpus = TaggedCorpus.from_sentences([[("the", "DET"), ("dog", "NOUN")],
    ...                                       [("runs", "VERB")]])
    >>> corpus.tags.items
    ['DET', 'NOUN', 'VERB']
    >>> nbest = NBestList(tag_ids=[0, 1, 0, 2, 2, 1], cand_offsets=[0, 2, 4, 5, 6],
    ...                   sent_offsets=[0, 2, 4], scores=[-1.0, -2.0, -0.5, -0.1],
    ...                   corpus=corpus, tags=corpus.tags)
    >>> nbest
    NBestList(2 sentences, 4 candidates (mean 2.00), 3 tags, with gold)
    >>> nbest.candidate(0, 1), nbest.losses.tolist()
    (['DET', 'VERB'], [0, 1, 0, 1])
    >>> nbest.argmax().tolist(), nbest.oracle_indices().tolist()
    ([0, 1], [0, 0])
    >>> round(nbest.top1_accuracy(), 3), nbest.oracle_accuracy()
    (0.667, 1.0)
    >>> nbest.best(nbest.oracle_indices())[1]
    (['runs'], ['VERB'])

    Saved and loaded as a model file:

    >>> print(nbest.save("dev_nbest").name)
    dev_nbest.npz
    >>> NBestList.load("dev_nbest") == nbest
    True
    """

    def __init__(self, tag_ids, cand_offsets, sent_offsets, scores, corpus: TaggedCorpus,
                 tags: Vocabulary, unknown=None):
        if not isinstance(corpus, TaggedCorpus):
            raise TypeError(f"corpus must be a TaggedCorpus, got {type(corpus).__name__}")
        if not isinstance(tags, Vocabulary):
            tags = Vocabulary(tags)
        # as TaggedCorpus: a float or bool id array is refused, not truncated
        tag_ids = as_int_array("tag_ids", tag_ids, np.int32)
        cand_offsets = as_int_array("cand_offsets", cand_offsets, np.int64)
        sent_offsets = as_int_array("sent_offsets", sent_offsets, np.int64)
        scores = _real_array("scores", scores)
        n_sent = corpus.n_sentences
        _check_offset_array("sent_offsets", sent_offsets, "n_sentences + 1", n_sent + 1,
                            "sentence")
        n_cand = int(sent_offsets[-1])
        _check_offset_array("cand_offsets", cand_offsets, None, None, "candidate")
        if cand_offsets.size != n_cand + 1:
            raise ValueError(f"sent_offsets ends at {n_cand} candidates but cand_offsets has "
                             f"{cand_offsets.size} entries ({cand_offsets.size - 1} "
                             f"candidates); the last entry of sent_offsets must be the number "
                             f"of candidates")
        if cand_offsets[-1] != tag_ids.size:
            raise ValueError(f"cand_offsets must end at len(tag_ids) = {tag_ids.size}, got "
                             f"{int(cand_offsets[-1])}")
        if scores.shape != (n_cand,):
            raise ValueError(f"scores must have shape ({n_cand},), got {scores.shape}")
        _check_no_nan("scores", scores, allow_pos_inf=False)
        cand_sent = _segment_ids(sent_offsets)
        cand_len = np.diff(cand_offsets)
        sent_len = corpus.lengths[cand_sent]
        if not np.array_equal(cand_len, sent_len):
            r = int(np.flatnonzero(cand_len != sent_len)[0])
            i = int(cand_sent[r])
            raise ValueError(f"candidate {r} (of sentence {i} by sent_offsets) has "
                             f"{int(cand_len[r])} tags (cand_offsets[{r + 1}] - "
                             f"cand_offsets[{r}]), sentence {i} has {int(sent_len[r])} words: "
                             f"every candidate must have the length of its sentence")
        if tag_ids.size and (tag_ids.min() < 0 or tag_ids.max() >= len(tags)):
            raise ValueError(f"tag_ids must lie in [0, {len(tags)}), the tag vocabulary size")
        if unknown is not None:
            unknown = _bool_array("unknown", unknown)
            if unknown.shape != (corpus.n_tokens,):
                raise ValueError(f"unknown must have shape ({corpus.n_tokens},), got "
                                 f"{unknown.shape}")
        self.tag_ids = tag_ids
        self.cand_offsets = cand_offsets
        self.sent_offsets = sent_offsets
        self.scores = scores
        self.corpus = corpus
        self.tags = tags
        self.unknown = unknown
        self._cand_sent = cand_sent
        self.gold_ids = None
        self.losses = None
        if corpus.has_tags:
            gold = corpus.tags.mapping_to(tags)[corpus.tag_ids] if corpus.n_tokens else \
                np.zeros(0, dtype=np.int64)
            if gold.size and gold.min() < 0:
                missing = sorted({corpus.tags[t] for t in corpus.tag_ids[gold < 0]})
                raise ValueError(f"gold tags {missing[:5]} are not in the tags vocabulary; "
                                 "extend it with the unseen gold tags")
            self.gold_ids = gold.astype(np.int32)
            wrong = tag_ids != self.gold_ids[self._token_index()]
            self.losses = np.bincount(_segment_ids(cand_offsets), weights=wrong,
                                      minlength=n_cand).astype(np.int32)

    # -- shape -------------------------------------------------------------------------
    @property
    def n_sentences(self) -> int:
        return self.sent_offsets.size - 1

    @property
    def n_candidates(self) -> np.ndarray:
        """Number of candidates of each sentence, shape (n_sentences,)."""
        return np.diff(self.sent_offsets)

    @property
    def n_total(self) -> int:
        """Total number of candidates."""
        return int(self.sent_offsets[-1])

    @property
    def cand_sentence(self) -> np.ndarray:
        """Sentence of each candidate, shape (n_candidates,)."""
        return self._cand_sent

    def __len__(self) -> int:
        return self.n_sentences

    def __repr__(self) -> str:
        nc = self.n_candidates
        mean = nc.mean() if nc.size else 0.0
        return (f"NBestList({self.n_sentences} sentences, {self.n_total} candidates "
                f"(mean {mean:.2f}), {len(self.tags)} tags, "
                f"{'with' if self.losses is not None else 'no'} gold)")

    def _token_index(self) -> np.ndarray:
        """Corpus token index of every candidate token, shape (n_candidate_tokens,)."""
        lens = np.diff(self.cand_offsets)
        start = self.corpus.offsets[self._cand_sent]
        return (np.repeat(start - self.cand_offsets[:-1], lens)
                + np.arange(self.cand_offsets[-1], dtype=np.int64))

    # -- access ------------------------------------------------------------------------
    def candidate_ids(self, i: int, j: int) -> np.ndarray:
        """Tag ids of candidate ``j`` of sentence ``i``."""
        r = self._global(i, j)
        return self.tag_ids[self.cand_offsets[r]:self.cand_offsets[r + 1]]

    def candidate(self, i: int, j: int) -> list[str]:
        """Tag strings of candidate ``j`` of sentence ``i``."""
        items = self.tags.items
        return [items[t] for t in self.candidate_ids(i, j)]

    def _global(self, i: int, j: int) -> int:
        n = self.n_sentences
        if not -n <= i < n:
            raise IndexError(f"sentence {i} out of range for an n-best list of {n} sentences")
        i %= n
        m = int(self.n_candidates[i])
        if not -m <= j < m:
            raise IndexError(f"candidate {j} out of range: sentence {i} has {m} candidates")
        return int(self.sent_offsets[i] + j % m)

    def __getitem__(self, index) -> "NBestList":
        """Sentences ``index`` (int, slice, int array or boolean mask) as a new NBestList."""
        return self.select(index)

    def select(self, index) -> "NBestList":
        """Sentences ``index`` (any order, repeats allowed) with all their candidates."""
        idx = _sentence_index(self.n_sentences, index)
        cand, new_sent = _gather_segments(self.sent_offsets, idx)
        return self._take(cand, new_sent, idx)

    def _take(self, cand: np.ndarray, new_sent: np.ndarray, sent_idx: np.ndarray) -> "NBestList":
        tok, new_cand = _gather_segments(self.cand_offsets, cand)
        corpus = self.corpus.select(sent_idx)
        unknown = None
        if self.unknown is not None:
            upos, _ = _gather_segments(self.corpus.offsets, sent_idx)
            unknown = self.unknown[upos]
        return NBestList(self.tag_ids[tok], new_cand, new_sent, self.scores[cand], corpus,
                         self.tags, unknown)

    # -- choosing and reordering candidates --------------------------------------------
    def _check_flat(self, name: str, values) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        if v.shape != (self.n_total,):
            raise ValueError(f"{name} must have shape (n_candidates,)=({self.n_total},), "
                             f"got {v.shape}")
        # lexsort would place NaN after every number: an arbitrary choice, made silently
        _check_no_nan(name, v, allow_pos_inf=True)
        return v

    def argmax(self, values=None) -> np.ndarray:
        """Per sentence, the within-sentence index of the candidate with the largest value.

        Parameters
        ----------
        values : float array, shape (n_candidates,), optional
            One value per candidate (default: the decoder ``scores``), not NaN.  Ties go to
            the earlier candidate; sentences without candidates get -1.

        Returns
        -------
        int64 array, shape (n_sentences,)
        """
        v = self.scores if values is None else self._check_flat("values", values)
        out = np.full(self.n_sentences, -1, dtype=np.int64)
        if self.n_total == 0:
            return out
        # sort by (sentence, -value, position): the first entry of each sentence is its argmax
        order = np.lexsort((np.arange(v.size), -v, self._cand_sent))
        nc = self.n_candidates
        has = nc > 0
        firsts = order[self.sent_offsets[:-1][has]]
        out[has] = firsts - self.sent_offsets[:-1][has]
        return out

    def _check_choice(self, indices) -> np.ndarray:
        """``indices`` as int64, refusing any that is not a candidate (-1 for a sentence
        without candidates)."""
        idx = np.asarray(indices)
        if idx.shape != (self.n_sentences,) or (idx.size and not np.issubdtype(idx.dtype,
                                                                             np.integer)):
            raise ValueError(f"indices must be an int array of shape (n_sentences,)="
                             f"({self.n_sentences},), got {idx.dtype} {idx.shape}")
        idx = idx.astype(np.int64)
        nc = self.n_candidates
        wrong = np.where(nc > 0, (idx < 0) | (idx >= nc), idx != -1)
        if np.any(wrong):
            bad = int(np.flatnonzero(wrong)[0])
            hint = ", so its choice is -1" if nc[bad] == 0 else ""
            raise ValueError(f"indices[{bad}]={idx[bad]} is not a candidate of sentence {bad} "
                             f"(it has {nc[bad]}{hint})")
        return idx

    def _chosen_tokens(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions in ``tag_ids`` of the chosen candidates' tokens and the corpus tokens
        they tag (sentences without candidates left out)."""
        has = np.flatnonzero(idx >= 0)
        tok, _ = _gather_segments(self.cand_offsets, self.sent_offsets[has] + idx[has])
        ctok, _ = _gather_segments(self.corpus.offsets, has)
        return tok, ctok

    def best(self, indices=None) -> TaggedCorpus:
        """The corpus tagged with one chosen candidate per sentence.

        Parameters
        ----------
        indices : int array, shape (n_sentences,), optional
            Within-sentence candidate index per sentence (default: :meth:`argmax` of the
            decoder scores).

        Returns
        -------
        TaggedCorpus
            Same words as ``corpus``; tags are ids in ``tags``.

        Raises
        ------
        ValueError
            A sentence with tokens but without candidates: there is no tagging of it.
        """
        idx = self._check_choice(self.argmax() if indices is None else indices)
        untagged = np.flatnonzero((idx < 0) & (self.corpus.lengths > 0))
        if untagged.size:
            i = int(untagged[0])
            raise ValueError(f"sentence {i} ({self.corpus.lengths[i]} tokens) has no "
                             f"candidates, so there is no tagging of it to return "
                             f"({untagged.size} such sentences)")
        tok, _ = self._chosen_tokens(idx)
        return self.corpus.with_tags(self.tag_ids[tok], self.tags)

    def reorder(self, order) -> "NBestList":
        """Permute or subset the candidates within each sentence.

        Parameters
        ----------
        order : int array, shape (n_kept,)
            Global candidate indices to keep, in their new order; each sentence's kept
            candidates must stay within its own block and the blocks in sentence order (what
            ``np.lexsort((-new_scores, cand_sentence))`` gives).  Every sentence that has
            candidates keeps at least one; a sentence without candidates stays empty.
        """
        order = np.asarray(order)
        if order.ndim != 1 or (order.size and not np.issubdtype(order.dtype, np.integer)):
            raise ValueError(f"order must be a 1-d int array, got {order.dtype} {order.shape}")
        order = order.astype(np.int64)
        if order.size and (order.min() < 0 or order.max() >= self.n_total):
            raise ValueError(f"order must lie in [0, n_candidates={self.n_total})")
        sent = self._cand_sent[order]
        if np.any(np.diff(sent) < 0):
            raise ValueError("order must keep sentences in order (block per sentence)")
        counts = np.bincount(sent, minlength=self.n_sentences)
        lost = np.flatnonzero((counts == 0) & (self.n_candidates > 0))
        if lost.size:
            i = int(lost[0])
            raise ValueError(f"order must keep at least one candidate of every sentence that "
                             f"has one; it keeps none of the {self.n_candidates[i]} of "
                             f"sentence {i}")
        new_sent = np.zeros(self.n_sentences + 1, dtype=np.int64)
        np.cumsum(counts, out=new_sent[1:])
        tok, new_cand = _gather_segments(self.cand_offsets, order)
        return NBestList(self.tag_ids[tok], new_cand, new_sent, self.scores[order], self.corpus,
                         self.tags, self.unknown)

    def sort_by(self, values=None) -> "NBestList":
        """Candidates of each sentence sorted by descending ``values`` (default: scores)."""
        v = self.scores if values is None else self._check_flat("values", values)
        return self.reorder(np.lexsort((np.arange(v.size), -v, self._cand_sent)))

    def truncate(self, k: int) -> "NBestList":
        """Keep the first ``k`` candidates of each sentence."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        rank = np.arange(self.n_total) - self.sent_offsets[self._cand_sent]
        return self.reorder(np.flatnonzero(rank < k))

    # -- evaluation --------------------------------------------------------------------
    def _token_mask(self, tokens: str) -> np.ndarray | None:
        if tokens not in _TOKEN_SUBSETS:
            raise ValueError(f"tokens must be one of {_TOKEN_SUBSETS}, got {tokens!r}")
        if tokens == "all":
            return None
        if self.unknown is None:
            raise ValueError(f"tokens={tokens!r} needs the unknown-word mask, which this "
                             "n-best list does not have")
        return ~self.unknown if tokens == "known" else self.unknown

    def accuracy(self, indices=None, tokens: str = "all") -> float:
        """Token accuracy of one chosen candidate per sentence against the gold tags.

        Parameters
        ----------
        indices : int array, shape (n_sentences,), optional
            Within-sentence candidate index per sentence (default: the decoder's argmax);
            -1 for a sentence without candidates, whose tokens count as wrong.
        tokens : {'all', 'known', 'unknown'}
            Count all tokens, or only those whose word was (not) seen in training.

        Returns
        -------
        float
            NaN when the 'known' / 'unknown' subset is empty (a corpus without unknown
            words is legitimate).

        Raises
        ------
        ValueError
            The list has no token at all: there is no accuracy to report.
        """
        if self.gold_ids is None:
            raise ValueError("accuracy needs gold tags; this n-best list's corpus is untagged")
        if self.gold_ids.size == 0:
            raise ValueError(f"accuracy of an n-best list without tokens "
                             f"({self.n_sentences} sentences)")
        mask = self._token_mask(tokens)
        idx = self._check_choice(self.argmax() if indices is None else indices)
        tok, ctok = self._chosen_tokens(idx)
        correct = np.zeros(self.gold_ids.size, dtype=bool)
        correct[ctok] = self.tag_ids[tok] == self.gold_ids[ctok]
        if mask is not None:
            correct = correct[mask]
        return float(correct.mean()) if correct.size else float("nan")

    def top1_accuracy(self, tokens: str = "all") -> float:
        """Accuracy of the decoder's best candidate (largest score) per sentence."""
        return self.accuracy(None, tokens)

    def oracle_indices(self) -> np.ndarray:
        """Per sentence, the candidate with the smallest loss (ties: the earlier one; -1
        for a sentence without candidates)."""
        if self.losses is None:
            raise ValueError("oracle needs gold tags; this n-best list's corpus is untagged")
        return self.argmax(-self.losses.astype(np.float64))

    def oracle_accuracy(self, tokens: str = "all") -> float:
        """Accuracy of the best candidate per sentence (smallest Hamming loss).

        With ``tokens='known'`` / ``'unknown'`` the same oracle candidates are scored on that
        token subset only.
        """
        return self.accuracy(self.oracle_indices(), tokens)

    # -- persistence -------------------------------------------------------------------
    # save(path, *, overwrite=False, info=None) and load(path) come from PersistMixin: one
    # .npz of arrays plus JSON metadata (format version, class, library version), read with
    # np.load(allow_pickle=False) and validated here before any object is built.
    def _get_state(self) -> tuple[dict, dict, dict]:
        c = self.corpus
        arrays = {"tag_ids": self.tag_ids, "cand_offsets": self.cand_offsets,
                  "sent_offsets": self.sent_offsets, "scores": self.scores,
                  "word_ids": c.word_ids, "corpus_offsets": c.offsets}
        arrays.update(pack_strings("tags", self.tags.items))
        arrays.update(pack_strings("corpus_words", c.words.items))
        if c.tags is not None:
            arrays.update(pack_strings("corpus_tags", c.tags.items))
        if c.has_tags:
            arrays["gold_tag_ids"] = c.tag_ids
        if self.unknown is not None:
            arrays["unknown"] = self.unknown
        extra = {"has_gold": bool(c.has_tags), "has_unknown": self.unknown is not None,
                 "has_corpus_tags": c.tags is not None}
        return {}, arrays, extra

    @classmethod
    def from_state(cls, params: dict, arrays: dict, extra: dict) -> "NBestList":
        """Rebuild an n-best list from :meth:`get_state` output, validating every array.

        Raises
        ------
        ModelFormatError
            Missing or mistyped arrays, offsets or ids out of range, candidates whose length
            differs from their sentence's, duplicate vocabulary entries.
        """
        if not isinstance(params, dict) or not isinstance(extra, dict):
            raise ModelFormatError("params and extra must be dicts")
        if params:
            raise ModelFormatError(f"an NBestList has no parameters, got {sorted(params)}")
        flags = {name: state_value(extra, name, bool)
                 for name in ("has_gold", "has_unknown", "has_corpus_tags")}
        if flags["has_gold"] and not flags["has_corpus_tags"]:
            raise ModelFormatError("gold tags stored without their vocabulary (corpus_tags)")
        try:
            tags = Vocabulary(unpack_strings(arrays, "tags"))
            words = Vocabulary(unpack_strings(arrays, "corpus_words"))
            ctags = (Vocabulary(unpack_strings(arrays, "corpus_tags"))
                     if flags["has_corpus_tags"] else None)
        except ValueError as exc:
            if isinstance(exc, ModelFormatError):
                raise
            raise ModelFormatError(f"bad vocabulary ({exc})") from None
        word_ids = check_index("word_ids", state_array(arrays, "word_ids", "int",
                                                       dtype=np.int32), len(words))
        c_off = check_offsets("corpus_offsets", state_array(arrays, "corpus_offsets", "int"),
                              word_ids.size)
        n_sent = c_off.size - 1
        gold = None
        if flags["has_gold"]:
            gold = check_index("gold_tag_ids",
                               state_array(arrays, "gold_tag_ids", "int", dtype=np.int32,
                                           shape=word_ids.shape), len(ctags))
        tag_ids = check_index("tag_ids", state_array(arrays, "tag_ids", "int", dtype=np.int32),
                              len(tags))
        s_off = state_array(arrays, "sent_offsets", "int")
        check_offsets("sent_offsets", s_off, int(s_off[-1]) if s_off.size else 0, n_sent)
        n_cand = int(s_off[-1])
        c_cand = check_offsets("cand_offsets", state_array(arrays, "cand_offsets", "int"),
                               tag_ids.size, n_cand)
        # NaN / +inf scores reach the constructor, whose refusal becomes a ModelFormatError
        scores = state_array(arrays, "scores", "float", shape=(n_cand,), allow_nan=True,
                             allow_inf=True)
        unknown = None
        if flags["has_unknown"]:
            unknown = state_array(arrays, "unknown", "bool", shape=word_ids.shape)
        try:
            corpus = TaggedCorpus(word_ids, gold, c_off, words, ctags)
            return cls(tag_ids, c_cand, s_off, scores, corpus, tags, unknown)
        except ValueError as exc:  # e.g. a candidate longer than its sentence
            raise ModelFormatError(f"inconsistent NBestList ({exc})") from None

    def __eq__(self, other: object) -> bool:
        """Same sentences, same candidate tag strings, scores and unknown masks."""
        if not isinstance(other, NBestList):
            return NotImplemented
        if not (np.array_equal(self.sent_offsets, other.sent_offsets)
                and np.array_equal(self.cand_offsets, other.cand_offsets)
                and np.array_equal(self.scores, other.scores)
                and self.corpus == other.corpus):
            return False
        if (self.unknown is None) != (other.unknown is None) or (
                self.unknown is not None and not np.array_equal(self.unknown, other.unknown)):
            return False
        a = np.array(self.tags.items, dtype=object)[self.tag_ids] if self.tag_ids.size else []
        b = np.array(other.tags.items, dtype=object)[other.tag_ids] if other.tag_ids.size else []
        return bool(np.array_equal(a, b))

    __hash__ = None


def concatenate(nbests: Sequence[NBestList]) -> NBestList:
    """Stack n-best lists sentence-wise (e.g. jackknife folds).

    Tag and word vocabularies are merged (union in order of first appearance) and ids
    re-coded, so lists decoded by differently trained taggers can be combined.  The unknown
    mask is kept only when every list has one.

    Parameters
    ----------
    nbests : sequence of NBestList
        At least one; a single list is returned as it is.

    Returns
    -------
    NBestList
        The sentences of ``nbests[0]``, then those of ``nbests[1]``, and so on.

    Raises
    ------
    ValueError
        An empty sequence, or tagged and untagged corpora mixed.
    TypeError
        An item that is not an NBestList.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.tagging import TrigramHMM, concatenate
    >>> a = TaggedCorpus.from_sentences([[("the", "DET"), ("dog", "NOUN")]] * 2)
    >>> b = TaggedCorpus.from_sentences([[("dogs", "NOUN"), ("bark", "VERB")]] * 2)
    >>> nbest_a = TrigramHMM().fit(a).nbest(a, k=2)
    >>> nbest_b = TrigramHMM().fit(b).nbest(b, k=2)
    >>> both = concatenate([nbest_a, nbest_b])
    >>> both.n_sentences, both.tags.items, both.corpus.words.items
    (4, ['DET', 'NOUN', 'VERB'], ['the', 'dog', 'dogs', 'bark'])
    """
    nbests = list(nbests)
    if not nbests:
        raise ValueError("concatenate needs at least one NBestList, got an empty sequence")
    for i, nb in enumerate(nbests):
        if not isinstance(nb, NBestList):
            raise TypeError(f"nbests[{i}] must be an NBestList, got {type(nb).__name__}")
    if len(nbests) == 1:
        return nbests[0]
    tags = nbests[0].tags
    if any(nb.tags != tags for nb in nbests):
        tags = union_vocabulary([nb.tags for nb in nbests])
    corpus = concat_corpora([nb.corpus for nb in nbests])
    tag_ids, cand_off, sent_off, scores, unknown = [], [], [np.zeros(1, np.int64)], [], []
    cshift = tshift = 0
    cand_off.append(np.zeros(1, np.int64))
    for nb in nbests:
        m = nb.tags.mapping_to(tags).astype(np.int32)
        tag_ids.append(m[nb.tag_ids] if nb.tag_ids.size else nb.tag_ids)
        cand_off.append(nb.cand_offsets[1:] + tshift)
        sent_off.append(nb.sent_offsets[1:] + cshift)
        scores.append(nb.scores)
        unknown.append(nb.unknown)
        tshift += nb.tag_ids.size
        cshift += nb.n_total
    unk = None if any(u is None for u in unknown) else np.concatenate(unknown)
    return NBestList(np.concatenate(tag_ids), np.concatenate(cand_off), np.concatenate(sent_off),
                     np.concatenate(scores), corpus, tags, unk)


NBestList.concatenate = staticmethod(concatenate)
