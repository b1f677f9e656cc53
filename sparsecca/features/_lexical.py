"""Input views over words: bags of suffixes, of character n-grams, of words."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._params import check_bool, check_float_dtype
from .._persist import pack_strings, state_value, unpack_strings
from ..data import TaggedCorpus, Vocabulary
from ._base import (
    BaseView,
    check_corpus,
    check_id_array,
    check_int_tuple,
    check_max_features,
    check_min_count,
    check_offsets,
    check_state_size,
    check_vocabulary,
    csr_from_sorted_rows,
    present_types,
    select_features,
    type_features,
)
from ._counts import FeatureCounts

__all__ = ["SuffixView", "CharNgramView", "WordView", "SHORT_WORD_MARK", "SUFFIX_ESCAPE",
           "suffixes"]

#: prefix marking a whole word shorter than a requested suffix length ("^a" = the word "a")
SHORT_WORD_MARK = "^"
#: prefix of a suffix that begins with backslashes and then :data:`SHORT_WORD_MARK`
SUFFIX_ESCAPE = "\\"


def _escaped(suffix: str) -> str:
    """``suffix`` with one more leading backslash if it reads like a marked short word.

    Without it the 3-suffix of "z^ab" and the mark of the word "ab" were both "^ab": one
    column for two features.  Escaping every suffix of the form backslashes + mark + rest
    keeps distinct suffixes distinct and apart from the marks (which begin with the mark).
    """
    rest = suffix.lstrip(SUFFIX_ESCAPE)
    return SUFFIX_ESCAPE + suffix if rest.startswith(SHORT_WORD_MARK) else suffix


def escape_to_state(params: dict, extra: dict) -> dict:
    """``extra`` with the suffix escape flag of a view's ``params`` (views taking suffixes)."""
    if "escape" in params:
        extra["suffix_escape"] = params["escape"]
    return extra


def escape_from_state(params: dict, extra: dict) -> None:
    """Set ``params["escape"]`` (views taking suffixes) from a saved state: the stored flag,
    False for a file saved before the flag existed, so that it keeps its features."""
    if "escape" in params:
        params["escape"] = (state_value(extra, "suffix_escape", bool)
                            if "suffix_escape" in extra else False)


def suffixes(word: str, lengths: tuple[int, ...], escape: bool = True) -> list[str]:
    """Suffix features of one word (``lengths`` sorted ascending).

    For each ``k`` in ``lengths`` with ``k <= len(word)`` the suffix ``word[-k:]``; if some
    ``k`` exceeds ``len(word)``, the whole word marked with :data:`SHORT_WORD_MARK`, *once*
    (not once per such ``k``), so short words such as "a", "I" or "," still contribute a feature
    without being counted several times.  A suffix made of backslashes, then the mark, then
    anything gets one more leading backslash (:data:`SUFFIX_ESCAPE`), so that no suffix
    shares its name with a marked word: "z^ab" -> ab, \\^ab, z^ab; "ab" -> ab, ^ab.
    ``escape=False`` is the rule of files saved before the escape existed (features of
    words containing the mark could collide there).
    """
    n = len(word)
    out = [word[-k:] for k in lengths if k <= n]
    if escape and SHORT_WORD_MARK in word:
        out = [_escaped(s) for s in out]
    if lengths[-1] > n:
        out.append(SHORT_WORD_MARK + word)
    return out


class _LexicalView(BaseView):
    """Bag of per-word features; features are computed once per word type.

    X = S @ W with S the (n_sentences x n_types) count matrix of the corpus and W the
    (n_types x n_features) feature-count matrix of the types that occur.
    """

    reads = frozenset({"words"})

    def _validated(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _featurizer(self, params: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def _word_strings(self, words: Vocabulary, present: np.ndarray, lowercase: bool) -> list:
        items = words.items
        if lowercase:
            return [items[i].lower() for i in present]
        return [items[i] for i in present]

    def _signature(self, params: dict) -> tuple:
        return (type(self).__name__,) + tuple(
            (k, v) for k, v in sorted(params.items()) if k != "dtype")

    def count(self, corpus: TaggedCorpus) -> FeatureCounts:
        """The feature occurrences of ``corpus``, mergeable with those of other pieces of a
        corpus (:func:`~sparsecca.features.merge_counts`); :meth:`fit_counts` fits on them.

        Parameters
        ----------
        corpus : TaggedCorpus

        Returns
        -------
        FeatureCounts
        """
        params = self._validated()
        check_min_count(self.min_count)
        check_max_features(self.max_features)
        corpus = check_corpus(corpus)
        present, tcounts, _ = present_types(corpus.word_ids, len(corpus.words))
        strings = self._word_strings(corpus.words, present, params["lowercase"])
        indptr, local, names = type_features(strings, self._featurizer(params))
        # occurrences of each feature = sum over types of (token count x multiplicity)
        occ = np.bincount(local, weights=np.repeat(tcounts, np.diff(indptr)),
                          minlength=len(names)).astype(np.int64)
        # column order (sorted names), so that max_features breaks ties by column
        order = np.asarray(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)
        sorted_names = np.empty(len(names), dtype=object)
        sorted_names[:] = [names[i] for i in order]
        return FeatureCounts(self._signature(params), sorted_names, occ[order],
                             corpus.n_sentences)

    def _fit_counts(self, counts) -> np.ndarray:
        """Fit from ``counts``; the kept columns' sums on the fitting corpus."""
        params, min_count, max_features = self._checked_counts(counts, FeatureCounts)
        occ = counts.occ
        keep = select_features(self, occ, min_count, max_features, counts.n_sentences)
        kept = counts.names[keep].tolist()
        self._params = params
        self.vocabulary_ = Vocabulary(kept)
        self.n_features_ = len(kept)
        self.n_dropped_ = int(occ[~keep].sum())
        return occ[keep]

    def transform(self, corpus: TaggedCorpus) -> sp.csr_matrix:
        """Bag-of-features count matrix of each sentence.

        Parameters
        ----------
        corpus : TaggedCorpus

        Returns
        -------
        X : scipy.sparse.csr_matrix, shape (n_sentences, n_features_), dtype ``self.dtype``
            Canonical CSR (sorted indices, no duplicates).  Feature occurrences absent from the
            vocabulary are dropped and counted in ``n_dropped_``.
        """
        self._check_fitted()
        corpus = check_corpus(corpus)
        return self._transform(corpus.word_ids, corpus.offsets, corpus.words)

    def transform_sequences(self, word_ids, offsets, words) -> sp.csr_matrix:
        """Like :meth:`transform`, on raw arrays instead of a TaggedCorpus.

        Parameters
        ----------
        word_ids : array of int, shape (n_tokens,)
            Ids in ``words``.
        offsets : array of int, shape (n_sequences + 1,)
            Sequence ``i`` spans ``word_ids[offsets[i]:offsets[i + 1]]``.
        words : Vocabulary or sequence of str

        Returns
        -------
        X : scipy.sparse.csr_matrix, shape (n_sequences, n_features_)
        """
        self._check_fitted()
        words = check_vocabulary("words", words)
        word_ids = check_id_array("word_ids", word_ids, len(words), "words")
        offsets = check_offsets(offsets, word_ids.size)
        return self._transform(word_ids, offsets, words)

    # -- persistence -------------------------------------------------------------------------
    def _get_state(self):
        self._check_fitted()
        return (self._persist_params(), pack_strings("vocabulary", self.vocabulary_.items),
                escape_to_state(self._params, {"n_dropped": self.n_dropped_}))

    def _set_state(self, arrays, extra):
        params = self._validated()
        check_min_count(self.min_count)
        vocab = Vocabulary(unpack_strings(arrays, "vocabulary"))  # refuses repeated names
        check_state_size(len(vocab), self.max_features)
        escape_from_state(params, extra)
        self._params = params
        self.vocabulary_ = vocab
        self.n_features_ = len(vocab)
        self.n_dropped_ = state_value(extra, "n_dropped", int, low=0)

    def _transform(self, word_ids, offsets, words) -> sp.csr_matrix:
        params = self._params
        dtype = params["dtype"]
        present, tcounts, lookup = present_types(word_ids, len(words))
        strings = self._word_strings(words, present, params["lowercase"])
        indptr, local, names = type_features(strings, self._featurizer(params))
        col_of_local = self.vocabulary_.ids(names)
        cols = col_of_local[local] if local.size else local
        per_type = np.diff(indptr)
        known = cols >= 0
        self.n_dropped_ = int(np.repeat(tcounts, per_type)[~known].sum())
        type_row = np.repeat(np.arange(present.size, dtype=np.int64), per_type)
        W = csr_from_sorted_rows(type_row[known], cols[known],
                                 (present.size, self.n_features_), dtype)
        n_seq = offsets.size - 1
        # S needs no duplicate summing: the sparse product accumulates repeated entries
        S = sp.csr_matrix((np.ones(word_ids.size, dtype=dtype), lookup[word_ids], offsets),
                          shape=(n_seq, present.size))
        X = (S @ W).tocsr()
        X.sort_indices()
        return X.astype(dtype, copy=False)


class SuffixView(_LexicalView):
    """Sentence -> bag of word suffixes (the paper's input view, section 4.1).

    Each token contributes ``word[-k:]`` for every ``k`` in ``lengths`` with ``k <= len(word)``;
    a word shorter than the longest length also contributes itself once, marked with
    :data:`SHORT_WORD_MARK` (``"^a"`` for the word "a"), so one-character tokens such as
    punctuation are not invisible.  Example, ``lengths=(2, 3, 4)``: "selling" -> ng, ing, ling;
    "an" -> an, ^an; "," -> ^,.  A suffix that itself begins like a mark (backslashes, then
    ``^``) gets one more leading backslash (:data:`SUFFIX_ESCAPE`): "z^ab" -> ab, \\^ab, z^ab.
    A view loaded from a file saved before that rule keeps the old names.

    Parameters
    ----------
    lengths : int or sequence of int >= 1, default (2, 3, 4)
    min_count : int >= 1, default 1
        Keep features occurring at least this often in the fitting corpus.
    lowercase : bool, default False
        Lowercase words before taking suffixes.
    dtype : numpy.float32 or numpy.float64, default numpy.float64
    max_features : int >= 1 or None, default None
        Keep the ``max_features`` features occurring most often in the fitting corpus (after
        ``min_count``); ties go to the earlier column.  None keeps them all.

    Attributes
    ----------
    vocabulary_ : Vocabulary
        Feature strings, sorted; column ``j`` is ``vocabulary_[j]``.
    n_features_ : int
    n_dropped_ : int
        Feature occurrences absent from the vocabulary at the last ``transform`` (after ``fit``:
        the occurrences in the fitting corpus removed by ``min_count`` and ``max_features``).

    Notes
    -----
    Features are computed once per word *type*: with S the (n_sentences x n_types) count
    matrix of the corpus and W the (n_types x n_features) feature counts of each type,
    ``X = S @ W``.  The cost is one pass over the tokens plus the distinct words.

    References
    ----------
    J. Jagarlamudi and H. Daumé III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.features import SuffixView
    >>> corpus = TaggedCorpus.from_words([["The", "selling", "pressure"], ["a", "sale", ","]])
    >>> view = SuffixView(lengths=(2, 3)).fit(corpus)
    >>> view.feature_names_out().tolist()
    ['The', '^,', '^a', 'ale', 'he', 'ing', 'le', 'ng', 're', 'ure']
    >>> X = view.transform(corpus)
    >>> X.shape, X.nnz
    ((2, 10), 10)

    Suffixes unseen at ``fit`` are dropped, and counted:

    >>> Z = view.transform(TaggedCorpus.from_words([["pressing", "sales"]]))
    >>> Z.toarray().tolist(), view.n_dropped_
    ([[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]], 2)
    """

    def __init__(self, lengths=(2, 3, 4), min_count=1, lowercase=False, dtype=np.float64,
                 max_features=None):
        self.lengths = lengths
        self.min_count = min_count
        self.max_features = max_features
        self.lowercase = lowercase
        self.dtype = dtype

    def _validated(self) -> dict:
        # escape: the SUFFIX_ESCAPE rule (see suffixes); a fit always uses it, a file saved
        # before it existed does not (state_escape)
        return dict(lengths=check_int_tuple("lengths", self.lengths),
                    lowercase=check_bool("lowercase", self.lowercase),
                    dtype=check_float_dtype(self.dtype), escape=True)

    def _featurizer(self, params):
        lengths, escape = params["lengths"], params["escape"]
        return lambda w: suffixes(w, lengths, escape)


class CharNgramView(_LexicalView):
    """Sentence -> bag of character n-grams inside each word (the paper's Chinese input view).

    Each token contributes every contiguous ``word[i:i + k]`` for each ``k`` in ``n`` (with
    multiplicity: "哈哈" gives the unigram 哈 twice); n-grams never cross word boundaries and a
    word shorter than ``k`` contributes no ``k``-gram.

    Parameters
    ----------
    n : int or sequence of int >= 1, default (1, 2)
    min_count : int >= 1, default 1
    lowercase : bool, default False
    dtype : numpy.float32 or numpy.float64, default numpy.float64
    max_features : int >= 1 or None, default None
        Keep the ``max_features`` features occurring most often in the fitting corpus (after
        ``min_count``); ties go to the earlier column.

    Attributes
    ----------
    vocabulary_, n_features_, n_dropped_
        As in :class:`SuffixView`.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.features import CharNgramView
    >>> corpus = TaggedCorpus.from_words([["哈哈", "大笑"], ["大"]])
    >>> view = CharNgramView(n=(1, 2)).fit(corpus)
    >>> view.feature_names_out().tolist()
    ['哈', '哈哈', '大', '大笑', '笑']
    >>> view.transform(corpus).toarray().tolist()
    [[2.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0, 0.0]]
    """

    def __init__(self, n=(1, 2), min_count=1, lowercase=False, dtype=np.float64,
                 max_features=None):
        self.n = n
        self.min_count = min_count
        self.max_features = max_features
        self.lowercase = lowercase
        self.dtype = dtype

    def _validated(self) -> dict:
        return dict(n=check_int_tuple("n", self.n),
                    lowercase=check_bool("lowercase", self.lowercase),
                    dtype=check_float_dtype(self.dtype))

    def _featurizer(self, params):
        ns = params["n"]
        return lambda w: [w[i:i + k] for k in ns for i in range(len(w) - k + 1)]


class WordView(_LexicalView):
    """Sentence -> bag of words.

    Parameters
    ----------
    min_count : int >= 1, default 1
    lowercase : bool, default False
    dtype : numpy.float32 or numpy.float64, default numpy.float64
    max_features : int >= 1 or None, default None
        Keep the ``max_features`` features occurring most often in the fitting corpus (after
        ``min_count``); ties go to the earlier column.

    Attributes
    ----------
    vocabulary_, n_features_, n_dropped_
        As in :class:`SuffixView`.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.features import WordView
    >>> corpus = TaggedCorpus.from_words([["The", "dog", "saw", "the", "cat"], ["A", "dog"]])
    >>> view = WordView(lowercase=True).fit(corpus)
    >>> view.feature_names_out().tolist()
    ['a', 'cat', 'dog', 'saw', 'the']
    >>> view.transform(corpus).toarray().tolist()
    [[0.0, 1.0, 1.0, 1.0, 2.0], [1.0, 0.0, 1.0, 0.0, 0.0]]

    ``max_features`` keeps the most frequent words ('dog' occurs twice; among the words
    seen once the earliest column, 'A', wins), in column order:

    >>> WordView(max_features=2).fit(corpus).feature_names_out().tolist()
    ['A', 'dog']
    """

    def __init__(self, min_count=1, lowercase=False, dtype=np.float64, max_features=None):
        self.min_count = min_count
        self.max_features = max_features
        self.lowercase = lowercase
        self.dtype = dtype

    def _validated(self) -> dict:
        return dict(lowercase=check_bool("lowercase", self.lowercase),
                    dtype=check_float_dtype(self.dtype))

    def _featurizer(self, params):
        return lambda w: [w]
