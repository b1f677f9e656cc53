"""The counts a :class:`~sparsecca.tagging.TrigramHMM` is estimated from, as a sum over
sentence partitions.

:meth:`HMMCounts.of_corpus` counts a corpus (or one partition of it), :meth:`HMMCounts.merge`
adds the counts of the sentences that follow (the tree reduce of a partitioned corpus), and
:meth:`HMMCounts.compact` re-codes the total into the ids the fitted model uses.  The HMM
fits an in-memory corpus through the same three steps (with nothing to merge), so a fit on
a partitioned corpus and a fit on the same corpus gathered are one computation.

What is counted, in the ids of the (possibly unused) items of the counted vocabularies:

* tag trigrams ``(t2, t1, t)`` of every sentence padded as ``BOS BOS t_1 .. t_n EOS``;
* word-tag pairs by sentence residue ``i % 10`` (``i`` the sentence's index in the corpus):
  the prefix-weight selection holds out the sentences of residue 9, so merging shifts the
  residues of the later part by the earlier part's sentence count;
* the tokens, in corpus order, of the words that occur in sentences of one residue only:
  the candidates for the held-out tokens whose word the other sentences never saw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import TaggedCorpus

__all__ = ["HMMCounts", "count_corpus", "merge_counts"]

#: the prefix-weight selection holds out every sentence ``i % HOLDOUT == HOLDOUT - 1``
HOLDOUT = 10
BOS, EOS = 0, 1  # tag id t is 2 + t in a trigram row


def _sum_by_key(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct keys and the int64 sum of the counts of each."""
    if keys.size == 0:
        return keys.astype(np.int64), counts.astype(np.int64)
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return k[starts], np.add.reduceat(counts[order].astype(np.int64), starts)


def _rows(keys: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """Decode mixed-radix keys into rows of columns of the given sizes (the first column
    unbounded)."""
    cols = []
    for s in reversed(sizes[1:]):
        cols.append(keys % max(s, 1))
        keys = keys // max(s, 1)
    cols.append(keys)
    return np.stack(cols[::-1], axis=1).astype(np.int64)


def _keys(rows: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    key = rows[:, 0].astype(np.int64)
    for j, s in enumerate(sizes[1:], 1):
        key = key * s + rows[:, j]
    return key


def _union(a: list[str], b: list[str]) -> tuple[list[str], np.ndarray | None]:
    """``a`` followed by the items of ``b`` it lacks, and the ids of ``b``'s items in it
    (None: ``b`` equals ``a``)."""
    if a is b or a == b:
        return a, None
    index = {s: i for i, s in enumerate(a)}
    out = list(a)
    ids = np.empty(len(b), dtype=np.int64)
    for j, s in enumerate(b):
        i = index.get(s)
        if i is None:
            i = index[s] = len(out)
            out.append(s)
        ids[j] = i
    return out, ids


def _single_residue_words(lex: np.ndarray, n_words: int) -> np.ndarray:
    """Mask of the words that occur in sentences of one residue only."""
    pairs = np.unique(lex[:, 0] * n_words + lex[:, 1]) if lex.size else np.zeros(0, np.int64)
    return np.bincount(pairs % max(n_words, 1), minlength=n_words) == 1


@dataclass(frozen=True)
class HMMCounts:
    """Trigram, word-tag and held-out-candidate counts of consecutive sentences.

    Attributes
    ----------
    tags, words : list of str
        The vocabularies the ids below index (items no token uses allowed).
    n_sentences : int
    tri, tri_counts : int64 arrays, shapes (m, 3) and (m,)
        Distinct ``(t2, t1, t)`` rows (BOS 0, EOS 1, tag ``i`` as ``2 + i``), sorted, and
        their counts.
    lex, lex_counts : int64 arrays, shapes (m, 3) and (m,)
        Distinct ``(residue, word, tag)`` rows, sorted, and their counts.
    cand : int64 array, shape (m, 3)
        ``(residue, word, tag)`` of every token whose word occurs in sentences of one
        residue only, in corpus order.
    """

    tags: list
    words: list
    n_sentences: int
    tri: np.ndarray
    tri_counts: np.ndarray
    lex: np.ndarray
    lex_counts: np.ndarray
    cand: np.ndarray

    @classmethod
    def of_corpus(cls, corpus: TaggedCorpus) -> "HMMCounts":
        """The counts of a tagged corpus."""
        T, V = len(corpus.tags), len(corpus.words)
        offsets = corpus.offsets
        n_sent = offsets.size - 1
        lengths = np.diff(offsets)
        # every sentence becomes BOS BOS t_1 .. t_n EOS; the trigrams end at t_1 .. EOS
        ext_off = offsets + 3 * np.arange(n_sent + 1)
        ext = np.full(ext_off[-1], BOS, dtype=np.int64)
        tok_pos = np.repeat(ext_off[:-1] + 2 - offsets[:-1], lengths) + np.arange(offsets[-1])
        ext[tok_pos] = corpus.tag_ids.astype(np.int64) + 2
        ext[ext_off[1:] - 1] = EOS
        pred = np.ones(ext.size, dtype=bool)
        pred[ext_off[:-1]] = False
        pred[ext_off[:-1] + 1] = False
        j = np.flatnonzero(pred)
        sizes3 = (T + 2, T + 2, T + 2)
        tri_keys, tri_counts = np.unique(_keys(np.stack([ext[j - 2], ext[j - 1], ext[j]], 1),
                                               sizes3), return_counts=True)
        residue = np.repeat(np.arange(n_sent, dtype=np.int64) % HOLDOUT, lengths)
        tok = np.stack([residue, corpus.word_ids.astype(np.int64),
                        corpus.tag_ids.astype(np.int64)], axis=1)
        lex_keys, lex_counts = np.unique(_keys(tok, (HOLDOUT, V, T)), return_counts=True)
        lex = _rows(lex_keys, (HOLDOUT, V, T))
        single = _single_residue_words(lex, V)
        return cls(list(corpus.tags.items), list(corpus.words.items), int(n_sent),
                   _rows(tri_keys, sizes3), tri_counts.astype(np.int64), lex,
                   lex_counts.astype(np.int64), tok[single[tok[:, 1]]])

    def merge(self, later: "HMMCounts") -> "HMMCounts":
        """The counts of these sentences followed by those of ``later``."""
        tags, tmap = _union(self.tags, later.tags)
        words, wmap = _union(self.words, later.words)
        tri, lex, cand = later.tri, later.lex.copy(), later.cand.copy()
        if tmap is not None:
            tri = np.concatenate([[BOS, EOS], tmap + 2])[tri]
            lex[:, 2] = tmap[lex[:, 2]]
            cand[:, 2] = tmap[cand[:, 2]]
        if wmap is not None:
            lex[:, 1] = wmap[lex[:, 1]]
            cand[:, 1] = wmap[cand[:, 1]]
        shift = self.n_sentences % HOLDOUT
        lex[:, 0] = (lex[:, 0] + shift) % HOLDOUT
        cand[:, 0] = (cand[:, 0] + shift) % HOLDOUT
        T, V = len(tags), len(words)
        sizes3 = (T + 2, T + 2, T + 2)
        tri_keys, tri_counts = _sum_by_key(_keys(np.concatenate([self.tri, tri]), sizes3),
                                           np.concatenate([self.tri_counts, later.tri_counts]))
        lex_keys, lex_counts = _sum_by_key(
            _keys(np.concatenate([self.lex, lex]), (HOLDOUT, V, T)),
            np.concatenate([self.lex_counts, later.lex_counts]))
        lex = _rows(lex_keys, (HOLDOUT, V, T))
        cand = np.concatenate([self.cand, cand])
        cand = cand[_single_residue_words(lex, V)[cand[:, 1]]]
        return HMMCounts(tags, words, self.n_sentences + later.n_sentences,
                         _rows(tri_keys, sizes3), tri_counts, lex, lex_counts, cand)

    def compact(self) -> "CompactCounts":
        """The counts in the ids of the tags and words some token uses (in the order of
        ``tags`` and ``words``), as the HMM's estimation reads them."""
        T0, V0 = len(self.tags), len(self.words)
        w, t, c = self.lex[:, 1], self.lex[:, 2], self.lex_counts
        tag_used = np.flatnonzero(np.bincount(t, weights=c, minlength=T0) > 0)
        word_used = np.flatnonzero(np.bincount(w, weights=c, minlength=V0) > 0)
        tmap = np.full(T0, -1, dtype=np.int64)
        tmap[tag_used] = np.arange(tag_used.size)
        wmap = np.full(V0, -1, dtype=np.int64)
        wmap[word_used] = np.arange(word_used.size)
        T = tag_used.size
        S = T + 2
        # trigram rows in the model's coding: tags 0..T-1, BOS T, EOS T + 1
        ext = np.concatenate([[T, T + 1], tmap])
        tri = ext[self.tri]
        keys = (tri[:, 0] * S + tri[:, 1]) * S + tri[:, 2]
        order = np.argsort(keys, kind="stable")
        lex = np.stack([self.lex[:, 0], wmap[w], tmap[t]], axis=1)
        cand = np.stack([self.cand[:, 0], wmap[self.cand[:, 1]], tmap[self.cand[:, 2]]], 1)
        return CompactCounts([self.tags[i] for i in tag_used],
                             [self.words[i] for i in word_used], self.n_sentences,
                             keys[order], self.tri_counts[order], lex, self.lex_counts, cand)


@dataclass(frozen=True)
class CompactCounts:
    """:class:`HMMCounts` re-coded into the fitted model's ids (``tri_keys`` sorted, in the
    coding ``(t2 * S + t1) * S + t`` with BOS ``T`` and EOS ``T + 1``)."""

    tags: list
    words: list
    n_sentences: int
    tri_keys: np.ndarray
    tri_counts: np.ndarray
    lex: np.ndarray
    lex_counts: np.ndarray
    cand: np.ndarray

    def lexicon(self, held_out: bool | None = None):
        """Word-tag counts as CSR by word, ``(indptr, tags, counts)``, over every sentence
        (None) or those outside the held-out residue (False)."""
        T, V = len(self.tags), len(self.words)
        rows, counts = self.lex, self.lex_counts
        if held_out is False:
            keep = rows[:, 0] != HOLDOUT - 1
            rows, counts = rows[keep], counts[keep]
        keys, counts = _sum_by_key(rows[:, 1] * T + rows[:, 2], counts)
        indptr = np.zeros(V + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys // max(T, 1), minlength=V), out=indptr[1:])
        return indptr, (keys % max(T, 1)).astype(np.int32), counts

    def totals(self, column: int, held_out: bool | None = None) -> np.ndarray:
        """int64 token counts by word (column 1) or tag (column 2)."""
        n = len(self.words) if column == 1 else len(self.tags)
        rows, counts = self.lex, self.lex_counts
        if held_out is False:
            keep = rows[:, 0] != HOLDOUT - 1
            rows, counts = rows[keep], counts[keep]
        return np.bincount(rows[:, column], weights=counts, minlength=n).astype(np.int64)


def count_corpus(corpus) -> HMMCounts:
    """:meth:`HMMCounts.of_corpus` of a tagged corpus (a function, to map over partitions)."""
    if not isinstance(corpus, TaggedCorpus):
        raise TypeError(f"corpus partitions must be TaggedCorpus, got {type(corpus).__name__}")
    if not corpus.has_tags:
        raise ValueError("corpus must be tagged (tag_ids is None)")
    return HMMCounts.of_corpus(corpus)


def merge_counts(a: HMMCounts, b: HMMCounts) -> HMMCounts:
    """:meth:`HMMCounts.merge` (a function, for the tree reduce)."""
    return a.merge(b)
