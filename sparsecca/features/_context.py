"""Token context features for taggers: one row per token, extracted once per corpus."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._params import check_float_dtype, check_int
from .._persist import pack_strings, state_value, unpack_strings
from ..data import TaggedCorpus, Vocabulary
from ._base import (
    BaseView,
    check_corpus,
    check_min_count,
    expand_ranges,
    present_types,
    select_features,
    type_features,
)

__all__ = ["ContextFeatures"]

#: names of the flag features, in the order they are emitted
_FLAGS = ("has_upper", "has_digit", "has_hyphen", "all_caps", "init_cap")


def _word_features(word: str, affix: int) -> list[str]:
    """Features of one word type (the window features are added per token).

    The template of a name is the text before its first ``=`` (or the whole name for a
    flag), so no two templates can share a name.
    """
    lower = word.lower()
    out = ["w=" + word, "l=" + lower]
    for k in range(1, min(affix, len(word)) + 1):
        out.append(f"p{k}={word[:k]}")
        out.append(f"s{k}={word[-k:]}")
    # the cheap string tests first: a word with only lower-case letters has no upper-case
    # one, an alphabetic word no digit
    if not word.islower() and any(c.isupper() for c in word):
        out.append(_FLAGS[0])
    if not word.isalpha() and any(c.isdigit() for c in word):
        out.append(_FLAGS[1])
    if "-" in word:
        out.append(_FLAGS[2])
    if word.isupper():
        out.append(_FLAGS[3])
    if word[:1].isupper():
        out.append(_FLAGS[4])
    return out


def _window_names(d: int, lower: list[str]) -> list[str]:
    """Names of the window template at offset ``d``: one per lowercased type, then the two
    sentence-boundary markers (``:`` instead of ``=``, so no word can take their name)."""
    head = f"w{d:+d}"
    return [f"{head}={w}" for w in lower] + [head + ":BOS", head + ":EOS"]


class _Tokens:
    """Per-type and per-token index arrays of one corpus, shared by ``fit`` and ``transform``."""

    def __init__(self, corpus: TaggedCorpus, affix: int, window: int):
        word_ids, offsets = corpus.word_ids, corpus.offsets
        present, self.type_counts, lookup = present_types(word_ids, len(corpus.words))
        items = corpus.words.items
        strings = [items[i] for i in present]
        self.type_indptr, self.type_local, self.type_names = type_features(
            strings, lambda w: _word_features(w, affix))
        # lowercased types, ids in first-seen order; BOS = n_lower, EOS = n_lower + 1
        index: dict[str, int] = {}
        lower_of_type = np.fromiter((index.setdefault(s.lower(), len(index)) for s in strings),
                                    dtype=np.int64, count=len(strings))
        self.lower = list(index)
        self.tok_type = lookup[word_ids] if word_ids.size else np.zeros(0, dtype=np.int64)
        tok_lower = lower_of_type[self.tok_type]
        n = word_ids.size
        lengths = np.diff(offsets)
        pos = np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        length = np.repeat(lengths, lengths)
        self.neighbours = {}
        for d in [d for d in range(-window, window + 1) if d != 0]:
            inside = (pos + d >= 0) & (pos + d < length)
            src = np.clip(np.arange(n, dtype=np.int64) + d, 0, max(n - 1, 0))
            boundary = len(self.lower) + (0 if d < 0 else 1)
            self.neighbours[d] = np.where(inside, tok_lower[src] if n else src, boundary)


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
        names = ["bias"] + tok.type_names
        occ = [np.array([corpus.n_tokens], dtype=np.int64),
               np.bincount(tok.type_local,
                           weights=np.repeat(tok.type_counts, np.diff(tok.type_indptr)),
                           minlength=len(tok.type_names)).astype(np.int64)]
        for d, nb in tok.neighbours.items():
            names += _window_names(d, tok.lower)
            occ.append(np.bincount(nb, minlength=len(tok.lower) + 2).astype(np.int64))
        occ = np.concatenate(occ)
        keep = select_features(self, occ, min_count, None, corpus.n_sentences)
        kept = sorted(names[i] for i in np.flatnonzero(keep))
        self._params = params
        self.vocabulary_ = Vocabulary(kept)
        self.n_features_ = len(kept)
        self.n_dropped_ = int(occ[~keep].sum())

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
        return self._transform(corpus, _Tokens(corpus, params["affix"], params["window"]))

    def _transform(self, corpus, tok):
        params = self._params
        vocab = self.vocabulary_
        n = corpus.n_tokens
        # per type: the columns of its word features that the vocabulary holds
        local_col = vocab.ids(tok.type_names)
        col = local_col[tok.type_local] if tok.type_local.size else tok.type_local
        known = col >= 0
        per_type = np.diff(tok.type_indptr)
        dropped = int(np.repeat(tok.type_counts, per_type)[~known].sum())
        type_row = np.repeat(np.arange(per_type.size, dtype=np.int64), per_type)[known]
        type_nnz = np.bincount(type_row, minlength=per_type.size).astype(np.int64)
        type_indptr = np.zeros(per_type.size + 1, dtype=np.int64)
        np.cumsum(type_nnz, out=type_indptr[1:])
        type_cols = col[known]
        window_cols = {}
        for d, nb in tok.neighbours.items():
            c = vocab.ids(_window_names(d, tok.lower))[nb]
            window_cols[d] = c
            dropped += int(np.count_nonzero(c < 0))
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
        self.vocabulary_ = vocab
        self.n_features_ = len(vocab)
        self.n_dropped_ = state_value(extra, "n_dropped", int, low=0)
