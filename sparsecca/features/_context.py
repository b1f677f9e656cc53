"""Token context features for taggers: one row per token, extracted once per corpus."""

from __future__ import annotations

import threading

import numpy as np
import scipy.sparse as sp

from .._params import check_float_dtype, check_int
from .._persist import pack_strings, state_value, unpack_strings
from .._sparse import expand_ranges
from ..data import TaggedCorpus, Vocabulary, first_seen
from ._base import (
    BaseView,
    check_corpus,
    check_min_count,
    present_types,
    select_features,
)
from ._counts import FeatureCounts, check_counts

__all__ = ["ContextFeatures"]

#: names of the flag features, in the order they are emitted
_FLAGS = ("has_upper", "has_digit", "has_hyphen", "all_caps", "init_cap")
#: most word types whose columns a fitted ContextFeatures keeps (see _TypeTable)
_CACHE_TYPES = 1 << 18
#: held while a transform reads and grows a view's type table (threads may share a view)
_TABLE_LOCK = threading.Lock()


def _templates(strings: list[str], lower: list[str], affix: int):
    """The word features of the types ``strings`` (lowercased: ``lower``; the window features
    are added per token), template by template: ``(head, rows, keys)`` where ``rows`` are the
    types (ascending) having the template and ``head + keys[r]`` their feature names; a flag
    has ``keys`` None (its name is ``head``).

    The template of a name is the text before its first ``=`` (or the whole name for a
    flag), so no two templates can share a name.
    """
    n = len(strings)
    every = np.arange(n, dtype=np.int64)
    out = [("w=", every, strings), ("l=", every, lower)]
    length = np.fromiter(map(len, strings), dtype=np.int64, count=n)
    for k in range(1, affix + 1):
        rows = np.flatnonzero(length >= k)
        part = strings if rows.size == n else [strings[i] for i in rows.tolist()]
        out.append((f"p{k}=", rows, [w[:k] for w in part]))
        out.append((f"s{k}=", rows, [w[-k:] for w in part]))
    # the cheap string tests first: a word with only lower-case letters has no upper-case
    # one, an alphabetic word no digit
    has = ([not w.islower() and any(map(str.isupper, w)) for w in strings],
           [not w.isalpha() and any(map(str.isdigit, w)) for w in strings],
           ["-" in w for w in strings],
           list(map(str.isupper, strings)),
           [w[:1].isupper() for w in strings])
    for flag, h in zip(_FLAGS, has):
        out.append((flag, np.flatnonzero(np.fromiter(h, dtype=bool, count=n)), None))
    return out


def _by_type(n: int, parts) -> tuple[np.ndarray, np.ndarray]:
    """CSR by type ``(indptr, values)`` of ``parts``, pairs ``(rows, values)`` whose ``rows``
    are distinct within a part: each type's values in the order of the parts."""
    counts = np.zeros(n, dtype=np.int64)
    for rows, _ in parts:
        counts[rows] += 1
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    out = np.empty(int(indptr[-1]), dtype=np.int64)
    fill = indptr[:-1].copy()
    for rows, values in parts:
        out[fill[rows]] = values
        fill[rows] += 1
    return indptr, out


def _type_features(strings: list[str], low: list[str], affix: int, lower: list[str],
                   lower_ids: np.ndarray):
    """Word features of each type: ``(indptr, local ids, local names)``, CSR by type, the
    names distinct (``low``: each type lowercased; ``lower``, ``lower_ids``: the distinct
    ones and each type's position among them, from :func:`first_seen`), and the template
    blocks of the names, ``(head, number of names)`` in order."""
    names: list[str] = []
    parts = []
    blocks = []
    for head, rows, keys in _templates(strings, low, affix):
        if keys is None:
            if rows.size:
                parts.append((rows, len(names)))
                names.append(head)
                blocks.append((head, 1))
            continue
        if head == "w=":  # the types are distinct
            distinct, ids = keys, rows
        elif head == "l=":
            distinct, ids = lower, lower_ids
        else:
            distinct, ids = first_seen(keys)
        parts.append((rows, ids + len(names)))
        names.extend(map(head.__add__, distinct))
        blocks.append((head, len(distinct)))
    indptr, local = _by_type(len(strings), parts)
    return indptr, local, names, blocks


def _name_order(names: list[str], sizes: list[int], alike: dict[int, int]) -> np.ndarray:
    """The positions of the distinct ``names`` in sorted order.

    ``names`` are blocks of consecutive names of ``sizes``; block ``b`` in ``alike`` has the
    keys of block ``alike[b]`` behind another head, so the same order.  Each block is sorted
    on its own, the blocks are put in the order of their first names, and when every block
    ends below the next one's start that is the order of all (else all are sorted at once).
    """
    starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    ranks: dict[int, np.ndarray] = {}
    for b, (start, size) in enumerate(zip(starts.tolist(), sizes)):
        if not size:
            continue
        if b in alike:
            ranks[b] = ranks[alike[b]]
        else:
            ranks[b] = np.array(sorted(range(size), key=names[start:start + size].__getitem__),
                                dtype=np.int64)
    spans = sorted((names[starts[b] + r[0]], names[starts[b] + r[-1]], b)
                   for b, r in ranks.items())
    if any(prev[1] >= nxt[0] for prev, nxt in zip(spans, spans[1:])):
        return np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)
    return np.concatenate([starts[b] + ranks[b] for _, _, b in spans] or
                          [np.zeros(0, dtype=np.int64)])


def _window_names(d: int, lower: list[str]) -> list[str]:
    """Names of the window template at offset ``d``: one per lowercased type, then the two
    sentence-boundary markers (``:`` instead of ``=``, so no word can take their name)."""
    head = f"w{d:+d}"
    return [*map((head + "=").__add__, lower), head + ":BOS", head + ":EOS"]


def _named_counts(corpus, tok):
    """The feature names of a corpus (``tok``: its ``_Tokens`` without ``columns``), their
    occurrences and their positions in sorted order.

    The names are blocks: bias, the templates of the word features, then per offset the
    window names (the lowercased types, in the order of the ``l=`` block) and the two
    markers."""
    names = ["bias"] + tok.type_names
    occ = [np.array([corpus.n_tokens], dtype=np.int64),
           np.bincount(tok.type_local,
                       weights=np.repeat(tok.type_counts, np.diff(tok.type_indptr)),
                       minlength=len(tok.type_names)).astype(np.int64)]
    heads = [head for head, _ in tok.type_blocks]
    sizes = [1] + [size for _, size in tok.type_blocks]
    alike = {}
    for d, nb in tok.neighbours.items():
        names += _window_names(d, tok.lower)
        occ.append(np.bincount(nb, minlength=len(tok.lower) + 2).astype(np.int64))
        if "l=" in heads:
            alike[len(sizes)] = 1 + heads.index("l=")
        sizes += [len(tok.lower), 1, 1]
    return names, np.concatenate(occ), _name_order(names, sizes, alike)


class _Tokens:
    """Per-type and per-token index arrays of one corpus, shared by ``fit`` and ``transform``.

    Without ``columns`` the word features of every type are named (``type_indptr``,
    ``type_local``, ``type_names``: what ``fit`` counts) and ``neighbours`` hold lowercased
    type ids (``lower``).  With it, ``columns(strings)`` gives the vocabulary columns
    directly: ``type_indptr``, ``type_cols``, ``type_dropped`` (the number of each type's
    features outside the vocabulary) and ``type_window`` (n_types x offsets: the column of
    the window feature of the type's lowercased form at each offset); ``neighbours`` then
    hold type ids.  Either way the boundary markers follow the ids (BOS first, then EOS).
    """

    def __init__(self, corpus: TaggedCorpus, affix: int, window: int, columns=None):
        word_ids, offsets = corpus.word_ids, corpus.offsets
        present, self.type_counts, lookup = present_types(word_ids, len(corpus.words))
        items = corpus.words.items
        strings = [items[i] for i in present.tolist()]
        self.strings = strings
        self.tok_type = lookup[word_ids] if word_ids.size else np.zeros(0, dtype=np.int64)
        if columns is None:
            # lowercased types, ids in first-seen order; BOS = n_lower, EOS = n_lower + 1
            low = [w.lower() for w in strings]
            self.lower, self.lower_of_type = first_seen(low)
            (self.type_indptr, self.type_local, self.type_names,
             self.type_blocks) = _type_features(
                strings, low, affix, self.lower, self.lower_of_type)
            n_ids, tok_id = len(self.lower), self.lower_of_type[self.tok_type]
        else:
            (self.type_indptr, self.type_cols, self.type_dropped,
             self.type_window) = columns(strings)
            n_ids, tok_id = len(strings), self.tok_type
        n = word_ids.size
        lengths = np.diff(offsets)
        pos = np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        length = np.repeat(lengths, lengths)
        self.neighbours = {}
        for d in [d for d in range(-window, window + 1) if d != 0]:
            inside = (pos + d >= 0) & (pos + d < length)
            src = np.clip(np.arange(n, dtype=np.int64) + d, 0, max(n - 1, 0))
            boundary = n_ids + (0 if d < 0 else 1)
            self.neighbours[d] = np.where(inside, tok_id[src] if n else src, boundary)


class _TypeTable:
    """Vocabulary columns of word types: row ``i`` (type ``strings[i]``, ``index`` maps a type
    to its row) holds the columns of its word features that the vocabulary has
    (``cols[indptr[i]:indptr[i + 1]]``), ``lost[i]`` the number of the others and
    ``window[i, j]`` the column of the window feature of its lowercased form at the ``j``-th
    offset (-1 when absent)."""

    __slots__ = ("index", "indptr", "cols", "lost", "window")

    def __init__(self, index, indptr, cols, lost, window):
        self.index, self.indptr, self.cols, self.lost, self.window = (index, indptr, cols,
                                                                      lost, window)

    @classmethod
    def build(cls, vocab, strings, params, tok=None):
        """The rows of ``strings``, named here unless ``tok`` (the ``_Tokens`` of those
        types, without ``columns``) has named them; sets ``tok.lower_window``."""
        if tok is None:
            # new types: each word feature looked up as named (no local vocabulary)
            tok = _Tokens.__new__(_Tokens)
            low = [w.lower() for w in strings]
            tok.lower, tok.lower_of_type = first_seen(low)
            tok.type_indptr, col = _by_type(len(strings), [
                (rows, np.full(rows.size, vocab.id(head)) if keys is None
                 else vocab.ids(map(head.__add__, keys)))
                for head, rows, keys in _templates(strings, low, params["affix"])])
            name_cols = None
        else:
            # columns of the names ``_fit`` counted (bias, the word features, then per offset
            # the window names of every lowercased type and the two markers), else looked up
            name_cols = getattr(tok, "name_cols", None)
            n_local = len(tok.type_names)
            local_col = (vocab.ids(tok.type_names) if name_cols is None
                         else name_cols[1:1 + n_local])
            col = local_col[tok.type_local] if tok.type_local.size else tok.type_local
        known = col >= 0
        per_type = np.diff(tok.type_indptr)
        row = np.repeat(np.arange(per_type.size, dtype=np.int64), per_type)
        lost = np.bincount(row[~known], minlength=per_type.size).astype(np.int64)
        indptr = np.zeros(per_type.size + 1, dtype=np.int64)
        np.cumsum(per_type - lost, out=indptr[1:])
        window = params["window"]
        offsets = [d for d in range(-window, window + 1) if d != 0]
        tok.lower_window = np.zeros((len(tok.lower), len(offsets)), dtype=np.int64)
        n_lower = len(tok.lower)
        for j, d in enumerate(offsets):
            if name_cols is None:
                tok.lower_window[:, j] = vocab.ids(_window_names(d, tok.lower)[:-2])
            else:
                start = 1 + n_local + j * (n_lower + 2)
                tok.lower_window[:, j] = name_cols[start:start + n_lower]
        return cls(dict(zip(strings, range(len(strings)))), indptr, col[known], lost,
                   tok.lower_window[tok.lower_of_type])

    def joined(self, other, inplace=False):
        """A table of this one's rows, then ``other``'s (this one, grown, with ``inplace``)."""
        start = len(self.index)
        out = self if inplace else _TypeTable(dict(self.index), None, None, None, None)
        # the arrays grow first, then the index: a reader never meets a row they lack
        out.indptr = np.concatenate([self.indptr, other.indptr[1:] + self.indptr[-1]])
        out.cols = np.concatenate([self.cols, other.cols])
        out.lost = np.concatenate([self.lost, other.lost])
        out.window = np.concatenate([self.window, other.window])
        out.index.update((w, start + i) for w, i in other.index.items())
        return out

    def rows(self, row):
        """``(indptr, cols, lost, window)`` of the rows ``row`` (an index array or slice)."""
        lo, hi = self.indptr[:-1][row], self.indptr[1:][row]
        indptr = np.zeros(lo.size + 1, dtype=np.int64)
        np.cumsum(hi - lo, out=indptr[1:])
        return indptr, self.cols[expand_ranges(lo, hi - lo)], self.lost[row], self.window[row]


class ContextFeatures(BaseView):
    """Corpus -> token x feature matrix of a tagger's context features (one row per token).

    Row ``j`` of :meth:`transform` describes token ``j`` of the corpus (rows in corpus token
    order) through these templates, all 0/1-valued:

    * ``bias`` (every token);
    * ``w=`` the word, ``l=`` the word lowercased;
    * ``p1=`` .. ``p{affix}=`` prefixes and ``s1=`` .. ``s{affix}=`` suffixes (lengths up to
      the word's length);
    * flags ``has_upper``, ``has_digit``, ``has_hyphen``, ``all_caps`` (``str.isupper``) and
      ``init_cap`` (first character upper case);
    * for each offset ``d`` in ``-window..-1, 1..window``, the lowercased word at ``i + d``
      (``w-1=the``), or a boundary marker when ``i + d`` lies outside the sentence
      (``w-1:BOS``, ``w+2:EOS``).

    Word-type features are computed once per type and spread to tokens by index arithmetic,
    so extraction is vectorised over tokens.  A tagger scores every (token, tag) pair at
    once as the sparse product ``X @ W`` with ``W`` of shape (n_features_, n_tags).

    Parameters
    ----------
    min_count : int >= 1, default 1
        Keep features occurring at least this often in the fitting corpus.
    affix : int >= 0, default 4
        Longest prefix and suffix.
    window : int >= 0, default 2
        Neighbouring words on each side.
    dtype : numpy.float32 or numpy.float64, default numpy.float32
        Value type (exact for 0/1 values either way).

    Attributes
    ----------
    vocabulary_ : Vocabulary
        Feature names, sorted; column ``j`` is ``vocabulary_[j]``.
    n_features_ : int
    n_dropped_ : int
        Feature occurrences absent from the vocabulary at the last ``transform`` (after
        ``fit``: those removed by ``min_count``).

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.features import ContextFeatures
    >>> corpus = TaggedCorpus.from_words([["The", "dog", "barks"], ["Dogs", "bark"]])
    >>> view = ContextFeatures(affix=2, window=1)
    >>> X = view.fit_transform(corpus)
    >>> X.shape  # 5 tokens
    (5, 38)
    >>> [str(n) for n in view.feature_names_out()[X[0].indices]]
    ... # doctest: +NORMALIZE_WHITESPACE
    ['bias', 'has_upper', 'init_cap', 'l=the', 'p1=T', 'p2=Th', 's1=e', 's2=he', 'w+1=dog',
     'w-1:BOS', 'w=The']
    """

    reads = frozenset({"words"})

    def __init__(self, min_count=1, affix=4, window=2, dtype=np.float32):
        self.min_count = min_count
        self.affix = affix
        self.window = window
        self.dtype = dtype

    def _validated(self) -> dict:
        check_min_count(self.min_count)
        return dict(affix=check_int("affix", self.affix, 0),
                    window=check_int("window", self.window, 0),
                    dtype=check_float_dtype(self.dtype))

    def fit(self, corpus: TaggedCorpus, y=None) -> "ContextFeatures":
        """Build the feature vocabulary: the features occurring at least ``min_count`` times.

        Parameters
        ----------
        corpus : TaggedCorpus
            Tags are not used (an untagged corpus is fine).

        Returns
        -------
        self
        """
        params = self._validated()
        corpus = check_corpus(corpus)
        self._fit(corpus, _Tokens(corpus, params["affix"], params["window"]), params)
        return self

    def fit_transform(self, corpus: TaggedCorpus, y=None) -> sp.csr_matrix:
        """``fit(corpus)`` then ``transform(corpus)``, extracting the word features once.

        Parameters
        ----------
        corpus : TaggedCorpus

        Returns
        -------
        X : scipy.sparse.csr_matrix, shape (corpus.n_tokens, n_features_)
        """
        params = self._validated()
        corpus = check_corpus(corpus)
        tok = _Tokens(corpus, params["affix"], params["window"])
        self._fit(corpus, tok, params)
        return self._transform(corpus, tok)

    def _fit(self, corpus, tok, params):
        min_count = int(self.min_count)
        names, occ, order = _named_counts(corpus, tok)
        keep = select_features(self, occ, min_count, None, corpus.n_sentences)
        # the names are distinct: sorting the kept ones gives every name its column
        order = order[keep[order]]
        kept = [names[i] for i in order.tolist()]
        tok.name_cols = np.full(len(names), -1, dtype=np.int64)
        tok.name_cols[order] = np.arange(len(order), dtype=np.int64)
        self._set_vocabulary(params, kept, int(occ[~keep].sum()))

    def _set_vocabulary(self, params, kept, n_dropped) -> None:
        """The fitted state of a vocabulary of the kept names (in column order)."""
        self._params = params
        self._table = None
        self.vocabulary_ = Vocabulary(kept)
        self.n_features_ = len(kept)
        self.n_dropped_ = n_dropped

    def _signature(self, params: dict) -> tuple:
        return (type(self).__name__, ("affix", params["affix"]), ("window", params["window"]))

    def count(self, corpus: TaggedCorpus) -> FeatureCounts:
        """The feature occurrences of ``corpus``, mergeable with those of other pieces of a
        corpus (:func:`~sparsecca.features.merge_counts`); :meth:`fit_counts` fits on them,
        with ``min_count`` applied to the merged total.

        Parameters
        ----------
        corpus : TaggedCorpus

        Returns
        -------
        FeatureCounts
            The names that occur, sorted, and their occurrences.
        """
        params = self._validated()
        corpus = check_corpus(corpus)
        names, occ, order = _named_counts(corpus, _Tokens(corpus, params["affix"],
                                                          params["window"]))
        order = order[occ[order] > 0]
        sorted_names = np.empty(order.size, dtype=object)
        sorted_names[:] = [names[i] for i in order.tolist()]
        return FeatureCounts(self._signature(params), sorted_names, occ[order],
                             corpus.n_sentences)

    def _fit_counts(self, counts) -> None:
        params = self._validated()
        check_counts(self, counts, FeatureCounts, self._signature(params))
        keep = select_features(self, counts.occ, int(self.min_count), None, counts.n_sentences)
        self._set_vocabulary(params, counts.names[keep].tolist(),
                             int(counts.occ[~keep].sum()))

    def transform(self, corpus: TaggedCorpus) -> sp.csr_matrix:
        """Context features of every token.

        Parameters
        ----------
        corpus : TaggedCorpus

        Returns
        -------
        X : scipy.sparse.csr_matrix, shape (corpus.n_tokens, n_features_), dtype ``dtype``
            Canonical CSR (sorted indices, no duplicates), 0/1 values; features absent from
            the vocabulary are dropped and counted in ``n_dropped_``.
        """
        self._check_fitted()
        corpus = check_corpus(corpus)
        params = self._params
        return self._transform(corpus, _Tokens(corpus, params["affix"], params["window"],
                                               columns=self._type_columns))

    def _type_columns(self, strings):
        """``(indptr, cols, lost, window)`` of each type (see :class:`_TypeTable`): the rows
        of the types seen before (the fitting corpus's among them), the others named now
        (and kept while the table is below ``_CACHE_TYPES`` rows).  One thread at a time: the
        rows a call adds take their numbers from the table's size."""
        with _TABLE_LOCK:
            return self._type_rows(strings)

    def _type_rows(self, strings):
        table = self.__dict__.get("_table")
        if table is None:
            table = self._table = _TypeTable.build(self.vocabulary_, [], self._params)
        get = table.index.get
        row = np.fromiter((get(w, -1) for w in strings), dtype=np.int64, count=len(strings))
        miss = np.flatnonzero(row < 0)
        if miss.size:
            new = _TypeTable.build(self.vocabulary_, [strings[i] for i in miss], self._params)
            start = len(table.index)
            # kept while the table is below its size limit
            table = table.joined(new, inplace=start + miss.size <= _CACHE_TYPES)
            row[miss] = start + np.arange(miss.size)
        return table.rows(row)

    def _transform(self, corpus, tok):
        params = self._params
        vocab = self.vocabulary_
        n = corpus.n_tokens
        if hasattr(tok, "type_cols"):  # straight from _type_columns
            type_indptr, type_cols, lost, type_window = (tok.type_indptr, tok.type_cols,
                                                         tok.type_dropped, tok.type_window)
        else:
            # the fitting corpus's types, named by _Tokens: kept for later transforms
            table = _TypeTable.build(vocab, tok.strings, params, tok)
            type_indptr, type_cols, lost, type_window = table.rows(slice(None))
            if len(tok.strings) <= _CACHE_TYPES:
                self._table = table
        type_nnz = np.diff(type_indptr)
        dropped = int(tok.type_counts @ lost)
        window_cols = {}
        for j, (d, nb) in enumerate(tok.neighbours.items()):
            head = f"w{d:+d}"
            ends = vocab.ids([head + ":BOS", head + ":EOS"])
            if hasattr(tok, "type_cols"):  # neighbours are type ids
                c = np.concatenate([type_window[:, j], ends])
            else:  # lowercased type ids
                c = np.concatenate([tok.lower_window[:, j], ends])
            window_cols[d] = c[nb]
            dropped += int(np.count_nonzero(window_cols[d] < 0))
        bias = vocab.id("bias")
        dropped += n if bias < 0 else 0
        # row lengths, then each template writes its column at the row's cursor
        tok_nnz = type_nnz[tok.tok_type]
        count = tok_nnz + (bias >= 0)
        for c in window_cols.values():
            count = count + (c >= 0)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(count, out=indptr[1:])
        indices = np.empty(int(indptr[-1]), dtype=np.int32 if len(vocab) < 2**31 else np.int64)
        cursor = indptr[:-1].copy()
        if bias >= 0:
            indices[cursor] = bias
            cursor += 1
        indices[expand_ranges(cursor, tok_nnz)] = type_cols[
            expand_ranges(type_indptr[tok.tok_type], tok_nnz)]
        cursor += tok_nnz
        for c in window_cols.values():
            ok = c >= 0
            indices[cursor[ok]] = c[ok]
            cursor[ok] += 1
        X = sp.csr_matrix((np.ones(indices.size, dtype=params["dtype"]), indices, indptr),
                          shape=(n, self.n_features_))
        X.has_sorted_indices = False
        X.sort_indices()
        self.n_dropped_ = dropped
        return X

    # -- persistence -------------------------------------------------------------------------
    def _get_state(self):
        self._check_fitted()
        return (self._persist_params(), pack_strings("vocabulary", self.vocabulary_.items),
                {"n_dropped": self.n_dropped_})

    def _set_state(self, arrays, extra):
        params = self._validated()
        vocab = Vocabulary(unpack_strings(arrays, "vocabulary"))  # refuses repeated names
        self._params = params
        self._table = None
        self.vocabulary_ = vocab
        self.n_features_ = len(vocab)
        self.n_dropped_ = state_value(extra, "n_dropped", int, low=0)
