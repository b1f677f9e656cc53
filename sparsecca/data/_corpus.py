"""Columnar tagged corpus and vocabularies."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from .._params import as_int_array, check_bool, check_int, check_random_state

__all__ = ["Vocabulary", "TaggedCorpus", "train_test_split", "kfold_indices"]

#: a lone UTF-16 surrogate: a str may hold one (e.g. from ``'\\ud800'`` or a
#: surrogateescape decode), but UTF-8 cannot encode it, so no model or CoNLL-U file can
SURROGATE = re.compile("[\ud800-\udfff]")


class Vocabulary:
    """An ordered, immutable string <-> integer id mapping.

    Words, tags and feature names are stored once here; corpora, n-best lists and feature
    matrices hold their integer ids.  Two vocabularies are equal when they hold the same
    strings in the same order.

    Parameters
    ----------
    items : iterable of str
        Distinct strings; id ``i`` is the ``i``-th item.

    Raises
    ------
    TypeError
        An item that is not a str.
    ValueError
        A repeated item.

    Examples
    --------
    >>> from sparsecca.data import Vocabulary
    >>> tags = Vocabulary(["DET", "NOUN", "VERB"])
    >>> tags
    Vocabulary(['DET', 'NOUN', 'VERB'], size=3)
    >>> len(tags), tags[1], tags.id("VERB"), tags.id("ADJ"), "NOUN" in tags
    (3, 'NOUN', 2, -1, True)
    >>> tags.ids(["VERB", "DET", "X"]).tolist()
    [2, 0, -1]

    Re-coding ids into another vocabulary (one look-up per type, then fancy indexing):

    >>> other = Vocabulary(["VERB", "NOUN"])
    >>> tags.mapping_to(other).tolist()
    [-1, 1, 0]
    """

    __slots__ = ("_items", "_index")

    def __init__(self, items: Iterable[str] = ()):
        self._items = list(items)
        if not set(map(type, self._items)) <= {str}:  # one C-level pass when all are str
            for i, s in enumerate(self._items):
                if not isinstance(s, str):
                    raise TypeError(f"Vocabulary items must be str, got {type(s).__name__} "
                                    f"{s!r} at position {i}")
        self._index = {s: i for i, s in enumerate(self._items)}
        if len(self._index) != len(self._items):
            raise ValueError("Vocabulary items must be distinct")

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> str:
        return self._items[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __contains__(self, s: object) -> bool:
        return s in self._index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self._items == other._items

    def __hash__(self):  # pragma: no cover - vocabularies are not dict keys
        return hash(tuple(self._items))

    def __repr__(self) -> str:
        head = ", ".join(repr(s) for s in self._items[:5])
        more = ", ..." if len(self._items) > 5 else ""
        return f"Vocabulary([{head}{more}], size={len(self._items)})"

    @property
    def items(self) -> list[str]:
        """The strings, in id order (a copy)."""
        return list(self._items)

    def id(self, s: str, default: int = -1) -> int:
        """Id of ``s``, or ``default`` when absent."""
        return self._index.get(s, default)

    def ids(self, strings: Iterable[str], default: int = -1) -> np.ndarray:
        """Ids of ``strings`` as an int64 array (``default`` for absent ones)."""
        get = self._index.get
        return np.fromiter((get(s, default) for s in strings), dtype=np.int64)

    def mapping_to(self, other: "Vocabulary", default: int = -1) -> np.ndarray:
        """Array ``m`` with ``m[i] = other.id(self[i])``: re-codes ids between vocabularies.

        Re-coding a whole corpus is then one fancy-indexing step, ``m[ids]``, with one dict
        look-up per *type* instead of per token.
        """
        return other.ids(self._items, default=default)


def first_seen(keys: list[str]) -> tuple[list[str], np.ndarray]:
    """The distinct ``keys`` in first-seen order, and the position (int64) of each key among
    them: ``distinct[ids[i]] == keys[i]`` (dict passes in C, no Python loop per key).

    Examples
    --------
    >>> from sparsecca.data import first_seen
    >>> first_seen(["b", "a", "b", "c"])
    (['b', 'a', 'c'], array([0, 1, 0, 2]))
    """
    distinct = list(dict.fromkeys(keys))
    index = dict(zip(distinct, range(len(distinct))))
    return distinct, np.fromiter(map(index.__getitem__, keys), dtype=np.int64, count=len(keys))


def _check_sentence(k: int, sent) -> None:
    # a str is a sequence too: iterating it would make each character a token
    if isinstance(sent, (str, bytes)):
        raise TypeError(f"sentence {k} must be a sequence of tokens, got "
                        f"{type(sent).__name__} {sent!r}")


def _check_form(k: int, what: str, s: str) -> None:
    """Refuse a word or tag that read_conllu would refuse: empty or only whitespace, or
    holding a lone surrogate (it failed only at ``save``, with a raw UnicodeEncodeError)."""
    if not s or s.isspace():
        raise ValueError(f"sentence {k}: {what} {s!r} is empty or only whitespace (CoNLL-U "
                         f"cannot hold it)")
    m = SURROGATE.search(s)
    if m:
        raise ValueError(f"sentence {k}: {what} {s!r} holds a lone surrogate "
                         f"(U+{ord(m.group()):04X} at position {m.start()}), which UTF-8 cannot "
                         f"encode: neither a model file nor CoNLL-U can hold it")


def _as_index_array(n: int, index) -> np.ndarray:
    if isinstance(index, slice):
        return np.arange(n, dtype=np.int64)[index]
    idx = np.asarray(index)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise IndexError(f"boolean index has shape {idx.shape}, expected ({n},)")
        return np.flatnonzero(idx)
    if not np.issubdtype(idx.dtype, np.integer):
        raise IndexError(f"sentence index must be int, slice, bool or int array, got {idx.dtype}")
    idx = idx.astype(np.int64).ravel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"sentence index out of range for a corpus of {n} sentences")
    return np.where(idx < 0, idx + n, idx)


class TaggedCorpus:
    """Sentences of (word, tag) tokens stored as flat integer arrays.

    Token ``t`` has word id ``word_ids[t]`` and tag id ``tag_ids[t]``; sentence ``i`` spans
    tokens ``offsets[i]:offsets[i + 1]``.  Slicing with an int array, a slice or a boolean mask
    returns a new corpus that shares the vocabularies (and, for a contiguous slice, views of the
    arrays), so folds and splits cost O(tokens selected).  Indexing with an int gives one
    sentence as ``(words, tags)`` lists of strings.

    Parameters
    ----------
    word_ids : array of int, shape (n_tokens,)
        Ids in ``words``.  Float and bool arrays are refused (not truncated).
    tag_ids : array of int, shape (n_tokens,), or None
        Ids in ``tags``; None for an untagged corpus (text to be tagged).
    offsets : array of int, shape (n_sentences + 1,)
        Non-decreasing, ``offsets[0] == 0`` and ``offsets[-1] == n_tokens``.
    words, tags : Vocabulary or sequence of str
        ``tags`` may be None only together with ``tag_ids``.

    Attributes
    ----------
    word_ids, tag_ids, offsets : arrays
        As given (int32, int32 or None, int64).
    words, tags : Vocabulary
    n_sentences, n_tokens : int
    lengths : int64 array, shape (n_sentences,)
    has_tags : bool

    Raises
    ------
    TypeError
        Id or offset arrays that are not integers.
    ValueError
        Offsets that do not start at 0, decrease or do not end at ``n_tokens``; ids outside
        their vocabulary; ``tag_ids`` of another shape than ``word_ids``.

    See Also
    --------
    sparsecca.data.read_conllu : read a corpus from a CoNLL-U file.
    sparsecca.data.synthetic_corpus : a generated corpus for demos and tests.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> corpus = TaggedCorpus.from_sentences([
    ...     [("The", "DET"), ("dog", "NOUN"), ("barks", "VERB")],
    ...     [("Dogs", "NOUN"), ("bark", "VERB")],
    ... ])
    >>> corpus
    TaggedCorpus(2 sentences, 5 tokens, 5 word types, 3 tags)
    >>> corpus.tag_ids.tolist(), corpus.offsets.tolist()
    ([0, 1, 2, 1, 2], [0, 3, 5])
    >>> corpus[1]
    (['Dogs', 'bark'], ['NOUN', 'VERB'])
    >>> corpus[[1, 0]].lengths.tolist()
    [2, 3]

    The same corpus from its arrays, and an untagged one:

    >>> TaggedCorpus([0, 1, 2, 3, 4], [0, 1, 2, 1, 2], [0, 3, 5], corpus.words,
    ...              corpus.tags) == corpus
    True
    >>> text = TaggedCorpus.from_words([["A", "cat", "sleeps"]])
    >>> text.has_tags, text.n_tokens
    (False, 3)
    """

    def __init__(self, word_ids, tag_ids, offsets, words, tags):
        word_ids = as_int_array("word_ids", word_ids, np.int32)
        offsets = as_int_array("offsets", offsets, np.int64)
        words = words if isinstance(words, Vocabulary) else Vocabulary(words)
        if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0:
            raise ValueError("offsets must be a 1-d array starting at 0")
        if offsets[-1] != word_ids.size or np.any(np.diff(offsets) < 0):
            raise ValueError(
                f"offsets must be non-decreasing and end at n_tokens={word_ids.size}, "
                f"got last offset {offsets[-1]}"
            )
        if word_ids.size and (word_ids.min() < 0 or word_ids.max() >= len(words)):
            raise ValueError(f"word_ids must lie in [0, {len(words)}), the word vocabulary size")
        if tag_ids is not None:
            tag_ids = as_int_array("tag_ids", tag_ids, np.int32)
            tags = tags if isinstance(tags, Vocabulary) else Vocabulary(tags)
            if tag_ids.shape != word_ids.shape:
                raise ValueError(
                    f"tag_ids has shape {tag_ids.shape}, word_ids has shape {word_ids.shape}"
                )
            if tag_ids.size and (tag_ids.min() < 0 or tag_ids.max() >= len(tags)):
                raise ValueError(f"tag_ids must lie in [0, {len(tags)}), the tag vocabulary size")
        elif tags is not None and not isinstance(tags, Vocabulary):
            tags = Vocabulary(tags)
        self.word_ids = word_ids
        self.tag_ids = tag_ids
        self.offsets = offsets
        self.words = words
        self.tags = tags

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_sentences(cls, sentences: Iterable[Sequence[tuple[str, str]]]) -> "TaggedCorpus":
        """Build from NLTK-style input: a list of sentences, each a list of (word, tag).

        Words and tags get ids in order of first appearance.

        Raises
        ------
        TypeError
            A sentence that is a str, or a word or tag that is not a str.
        ValueError
            A token that is not a (word, tag) pair, or an empty (or whitespace-only) word or
            tag, or one holding a lone surrogate, which CoNLL-U cannot hold.
        """
        wdict: dict[str, int] = {}
        tdict: dict[str, int] = {}
        wids: list[int] = []
        tids: list[int] = []
        offsets = [0]
        for k, sent in enumerate(sentences):
            _check_sentence(k, sent)
            for tok in sent:
                if not isinstance(tok, (tuple, list)) or len(tok) != 2:
                    raise ValueError(
                        f"sentence {k}: each token must be a (word, tag) pair, got {tok!r}"
                    )
                w, t = tok
                if not isinstance(w, str) or not isinstance(t, str):
                    raise TypeError(
                        f"sentence {k}: word and tag must be str, got {type(w).__name__}, "
                        f"{type(t).__name__}"
                    )
                # each string is checked once, when it first appears
                if w not in wdict:
                    _check_form(k, "word", w)
                    wdict[w] = len(wdict)
                if t not in tdict:
                    _check_form(k, "tag", t)
                    tdict[t] = len(tdict)
                wids.append(wdict[w])
                tids.append(tdict[t])
            offsets.append(len(wids))
        return cls(np.array(wids, dtype=np.int32), np.array(tids, dtype=np.int32),
                   np.array(offsets, dtype=np.int64), Vocabulary(wdict), Vocabulary(tdict))

    @classmethod
    def from_words(cls, sentences: Iterable[Sequence[str]]) -> "TaggedCorpus":
        """Build an untagged corpus from a list of tokenised sentences.

        Raises
        ------
        TypeError
            A sentence that is a str (``["hello world"]``: split it first), or a word that is
            not a str.
        ValueError
            An empty (or whitespace-only) word, or one holding a lone surrogate.
        """
        wdict: dict[str, int] = {}
        wids: list[int] = []
        offsets = [0]
        for k, sent in enumerate(sentences):
            _check_sentence(k, sent)
            for w in sent:
                if not isinstance(w, str):
                    raise TypeError(f"sentence {k}: words must be str, got {type(w).__name__}")
                if w not in wdict:
                    _check_form(k, "word", w)
                    wdict[w] = len(wdict)
                wids.append(wdict[w])
            offsets.append(len(wids))
        return cls(np.array(wids, dtype=np.int32), None, np.array(offsets, dtype=np.int64),
                   Vocabulary(wdict), None)

    # -- basic protocol -----------------------------------------------------------------
    @property
    def has_tags(self) -> bool:
        return self.tag_ids is not None

    @property
    def n_sentences(self) -> int:
        return self.offsets.size - 1

    @property
    def n_tokens(self) -> int:
        return int(self.word_ids.size)

    @property
    def lengths(self) -> np.ndarray:
        """Sentence lengths, shape (n_sentences,)."""
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return self.n_sentences

    def __repr__(self) -> str:
        ntags = "untagged" if self.tags is None else f"{len(self.tags)} tags"
        return (f"TaggedCorpus({self.n_sentences} sentences, {self.n_tokens} tokens, "
                f"{len(self.words)} word types, {ntags})")

    def sentence(self, i: int) -> tuple[list[str], list[str] | None]:
        """Sentence ``i`` as (words, tags) lists of strings (tags None if untagged)."""
        n = self.n_sentences
        if not -n <= i < n:
            raise IndexError(f"sentence {i} out of range for a corpus of {n} sentences")
        i %= n
        a, b = self.offsets[i], self.offsets[i + 1]
        words = [self.words[j] for j in self.word_ids[a:b]]
        tags = None if self.tag_ids is None else [self.tags[j] for j in self.tag_ids[a:b]]
        return words, tags

    def __iter__(self) -> Iterator[tuple[list[str], list[str] | None]]:
        for i in range(self.n_sentences):
            yield self.sentence(i)

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)):
            return self.sentence(int(index))
        n = self.n_sentences
        if isinstance(index, slice) and index.step in (None, 1):
            start, stop, _ = index.indices(n)
            stop = max(stop, start)
            a, b = self.offsets[start], self.offsets[stop]
            tags = None if self.tag_ids is None else self.tag_ids[a:b]
            return TaggedCorpus(self.word_ids[a:b], tags, self.offsets[start:stop + 1] - a,
                                self.words, self.tags)
        return self.select(_as_index_array(n, index))

    def select(self, idx: np.ndarray) -> "TaggedCorpus":
        """Sentences ``idx`` (int array, any order, repeats allowed) as a new corpus."""
        idx = _as_index_array(self.n_sentences, idx)
        lengths = self.lengths[idx]
        new_offsets = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=new_offsets[1:])
        # token positions: start of each selected sentence repeated, plus a within-sentence ramp
        starts = np.repeat(self.offsets[idx], lengths)
        ramp = np.arange(new_offsets[-1], dtype=np.int64) - np.repeat(new_offsets[:-1], lengths)
        pos = starts + ramp
        tags = None if self.tag_ids is None else self.tag_ids[pos]
        return TaggedCorpus(self.word_ids[pos], tags, new_offsets, self.words, self.tags)

    def to_sentences(self) -> list[list[tuple[str, str]]]:
        """NLTK-style list of sentences of (word, tag) pairs."""
        if self.tag_ids is None:
            raise ValueError("to_sentences needs a tagged corpus; this one has no tags")
        wl, tl = self.words.items, self.tags.items
        out = []
        for i in range(self.n_sentences):
            a, b = self.offsets[i], self.offsets[i + 1]
            out.append([(wl[w], tl[t]) for w, t in zip(self.word_ids[a:b], self.tag_ids[a:b])])
        return out

    def word_strings(self) -> list[str]:
        """All tokens' word forms, flat (a list of str)."""
        wl = self.words.items
        return [wl[w] for w in self.word_ids]

    def with_tags(self, tag_ids, tags) -> "TaggedCorpus":
        """The same sentences with another tag assignment (e.g. a tagger's output)."""
        return TaggedCorpus(self.word_ids, tag_ids, self.offsets, self.words, tags)

    def recode(self, words: Vocabulary | None = None, tags: Vocabulary | None = None):
        """Re-express ids in other vocabularies.

        Returns ``(word_ids, tag_ids)`` int32 arrays in the given vocabularies, with ``-1`` for
        strings absent from them (unknown words, unseen tags).  Either argument may be None
        (that array is then returned unchanged).
        """
        wid = self.word_ids
        if words is not None and words is not self.words:
            wid = self.words.mapping_to(words).astype(np.int32)[self.word_ids]
        tid = self.tag_ids
        if tags is not None and tid is not None and tags is not self.tags:
            tid = self.tags.mapping_to(tags).astype(np.int32)[self.tag_ids]
        return wid, tid

    def __eq__(self, other: object) -> bool:
        """Same sentences with the same strings (vocabulary order may differ)."""
        if not isinstance(other, TaggedCorpus):
            return NotImplemented
        if not np.array_equal(self.offsets, other.offsets):
            return False
        if self.has_tags != other.has_tags:
            return False
        ws = np.array(self.words.items, dtype=object)[self.word_ids]
        wo = np.array(other.words.items, dtype=object)[other.word_ids]
        if not np.array_equal(ws, wo):
            return False
        if self.has_tags:
            ts = np.array(self.tags.items, dtype=object)[self.tag_ids]
            to = np.array(other.tags.items, dtype=object)[other.tag_ids]
            return bool(np.array_equal(ts, to))
        return True

    __hash__ = None


def union_vocabulary(vocabs: Sequence[Vocabulary]) -> Vocabulary:
    """The union of vocabularies, strings in order of first appearance.

    Examples
    --------
    >>> from sparsecca.data import Vocabulary, union_vocabulary
    >>> union_vocabulary([Vocabulary(["a", "b"]), Vocabulary(["c", "a"])]).items
    ['a', 'b', 'c']
    """
    seen: dict[str, None] = {}
    for v in vocabs:
        for s in v:
            seen.setdefault(s, None)
    return Vocabulary(seen)


def concat_corpora(corpora: Sequence[TaggedCorpus]) -> TaggedCorpus:
    """Concatenate corpora sentence-wise, re-coding ids into the union of their vocabularies.

    Parameters
    ----------
    corpora : sequence of TaggedCorpus
        At least one; all tagged or all untagged.

    Returns
    -------
    TaggedCorpus

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus, concat_corpora
    >>> a = TaggedCorpus.from_sentences([[("the", "DET"), ("dog", "NOUN")]])
    >>> b = TaggedCorpus.from_sentences([[("dogs", "NOUN"), ("bark", "VERB")]])
    >>> both = concat_corpora([a, b])
    >>> both.n_sentences, both.words.items, both.tags.items
    (2, ['the', 'dog', 'dogs', 'bark'], ['DET', 'NOUN', 'VERB'])
    """
    corpora = list(corpora)
    if not corpora:
        raise ValueError("concat_corpora needs at least one corpus, got an empty sequence")
    for i, c in enumerate(corpora):
        if not isinstance(c, TaggedCorpus):
            raise TypeError(f"corpora[{i}] must be a TaggedCorpus, got {type(c).__name__}")
    has_tags = {c.has_tags for c in corpora}
    if len(has_tags) > 1:
        raise ValueError("cannot concatenate tagged and untagged corpora")
    words = corpora[0].words
    if any(c.words is not words and c.words != words for c in corpora):
        words = union_vocabulary([c.words for c in corpora])
    tags = None
    if corpora[0].has_tags:
        tags = corpora[0].tags
        if any(c.tags is not tags and c.tags != tags for c in corpora):
            tags = union_vocabulary([c.tags for c in corpora])
    wid, tid, offs = [], [], [np.zeros(1, dtype=np.int64)]
    shift = 0
    for c in corpora:
        w, t = c.recode(words=words, tags=tags)
        wid.append(w)
        if t is not None:
            tid.append(t)
        offs.append(c.offsets[1:] + shift)
        shift += c.n_tokens
    return TaggedCorpus(np.concatenate(wid) if wid else np.zeros(0, np.int32),
                        np.concatenate(tid) if tags is not None else None,
                        np.concatenate(offs), words, tags)


def train_test_split(corpus: TaggedCorpus, test_size: float | int = 0.1, shuffle: bool = True,
                     random_state=None) -> tuple[TaggedCorpus, TaggedCorpus]:
    """Split a corpus into train and test sentences.

    Parameters
    ----------
    corpus : TaggedCorpus
    test_size : float in (0, 1) or int in [1, n_sentences - 1]
        Fraction or number of sentences that go to the test part.
    shuffle : bool
        Shuffle sentences before splitting (each part keeps the original order); False
        takes the last sentences as test.
    random_state : int, numpy Generator, RandomState or None
        Seeds the shuffle.

    Returns
    -------
    train, test : TaggedCorpus
        Both share the vocabularies of ``corpus``.

    Raises
    ------
    TypeError
        A ``test_size`` that is neither a float nor an int (a bool included), or a
        non-bool ``shuffle``.
    ValueError
        A ``test_size`` leaving either part empty.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> corpus = synthetic_corpus(100, random_state=0)
    >>> train, test = train_test_split(corpus, test_size=0.2, random_state=0)
    >>> len(train), len(test), train.words is corpus.words
    (80, 20, True)
    >>> _, last = train_test_split(corpus, test_size=10, shuffle=False)
    >>> last == corpus[90:]
    True
    """
    n = corpus.n_sentences
    shuffle = check_bool("shuffle", shuffle)
    if isinstance(test_size, (bool, np.bool_)):  # True would be taken as 1 sentence
        raise TypeError(f"test_size must be a float or an int, got {test_size!r}")
    if isinstance(test_size, (float, np.floating)):
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"test_size as a fraction must be in (0, 1), got {test_size}")
        n_test = int(round(test_size * n))
    elif isinstance(test_size, (int, np.integer)):
        n_test = int(test_size)
    else:
        raise TypeError(f"test_size must be a float or an int, got {type(test_size).__name__}")
    if not 1 <= n_test <= n - 1:
        raise ValueError(
            f"test_size gives {n_test} test sentences; it must be in [1, {n - 1}] "
            f"for a corpus of {n} sentences"
        )
    order = check_random_state(random_state).permutation(n) if shuffle else np.arange(n)
    test = np.sort(order[:n_test]) if shuffle else order[n - n_test:]
    mask = np.ones(n, dtype=bool)
    mask[test] = False
    return corpus.select(np.flatnonzero(mask)), corpus.select(test)


def kfold_indices(n_sentences: int, folds: int = 10, shuffle: bool = True,
                  random_state=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train_idx, heldout_idx) pairs for k-fold jackknifing.

    Every sentence is held out exactly once; fold sizes differ by at most one.  Index arrays
    are sorted so that each part keeps corpus order.

    Parameters
    ----------
    n_sentences : int >= 2
    folds : int in [2, n_sentences]
    shuffle : bool
        Assign sentences to folds at random (False: consecutive blocks).
    random_state : int, numpy Generator, RandomState or None
        Seeds the assignment.

    Returns
    -------
    list of (train_idx, heldout_idx)
        ``folds`` pairs of sorted int64 arrays; each pair partitions ``range(n_sentences)``.

    Raises
    ------
    TypeError
        A ``folds`` that is not an int, or a non-bool ``shuffle``.
    ValueError
        ``n_sentences`` < 2 or ``folds`` outside [2, n_sentences].

    See Also
    --------
    sparsecca.tagging.jackknife_nbest : decodes each held-out part with a tagger trained
        on the rest.

    Examples
    --------
    >>> from sparsecca.data import kfold_indices
    >>> folds = kfold_indices(7, folds=3, shuffle=False)
    >>> [held.tolist() for _, held in folds]
    [[0, 1, 2], [3, 4], [5, 6]]
    >>> folds[1][0].tolist()
    [0, 1, 2, 5, 6]
    >>> held = [int(i) for _, h in kfold_indices(10, folds=4, random_state=0) for i in h]
    >>> sorted(held) == list(range(10))
    True
    """
    n_sentences = check_int("n_sentences", n_sentences, 2)
    shuffle = check_bool("shuffle", shuffle)
    if isinstance(folds, (bool, np.bool_)) or not isinstance(folds, (int, np.integer)):
        raise TypeError(f"folds must be an int in [2, n_sentences={n_sentences}], got "
                        f"{folds!r}")
    if not 2 <= folds <= n_sentences:
        raise ValueError(
            f"folds must be in [2, n_sentences={n_sentences}], got {folds}"
        )
    order = (check_random_state(random_state).permutation(n_sentences) if shuffle
             else np.arange(n_sentences))
    parts = np.array_split(order, folds)
    out = []
    for k in range(folds):
        held = np.sort(parts[k])
        mask = np.ones(n_sentences, dtype=bool)
        mask[held] = False
        out.append((np.flatnonzero(mask), held))
    return out
