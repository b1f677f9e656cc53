"""The machinery the feature-based second-order taggers share: a tag dictionary with a suffix
model for rare and unseen words, the candidate lattice it gives, exact k-best decoding in that
lattice, and the persistence of all of it.

:class:`BaseLatticeTagger` is the base of :class:`~sparsecca.tagging.PerceptronTagger`
and :class:`~sparsecca.tagging.MEMMTagger`.  A subclass keeps its own parameters and defaults
(``dict_min_count``, ``unknown_ratio`` and ``max_suffix_length`` among them; its
``__init__`` hands these, ``random_state``, ``progress`` and ``parallel`` to the base's) and
supplies

* ``_fit(...)``: calls :meth:`~BaseLatticeTagger._fit_dictionary` first, then learns
  ``features_`` and the weights ``emit_*``, ``bigram_weights_``, ``tri_*``;
* ``_emission_scores(X, sent_offsets, cand_offsets, cand_tags)``: the candidates' emission
  scores and any extra keyword arguments of :func:`~sparsecca.kernels.kbest_viterbi`;
* ``_extra_state()`` / ``_set_extra_state(extra)``: its own training record in a saved file;
* ``_EOS_TRIGRAMS``: whether a weighted trigram may end in EOS.

Candidate rule: a word seen at least ``dict_min_count`` times in training may take the tags it
was seen with.  A rarer or unseen word may take the tags of TnT's suffix model (the
successive-abstraction posterior of :class:`~sparsecca.tagging.TrigramHMM`) whose posterior is
at least ``unknown_ratio`` times the best tag's, plus the tags it was seen with.
"""

from __future__ import annotations

import copy
import inspect

import numpy as np
import scipy.sparse as sp

from .._params import ParamsMixin, check_float, check_int
from .._persist import (
    ModelFormatError,
    PersistMixin,
    check_csr_rows,
    check_index,
    check_offsets,
    get_child,
    pack_strings,
    put_child,
    state_array,
    state_value,
    unpack_strings,
)
from .._sparse import expand_ranges
from ..data import TaggedCorpus, Vocabulary
from ..exceptions import NotFittedError
from ..features import ContextFeatures
from ..features import merge_counts as merge_feature_counts
from ..kernels import kbest_viterbi
from ._hmm import (
    _affix_posteriors,
    _affix_table,
    _csr_rows,
    _lexicon_counts,
    _theta,
)
from ._hmm_counts import count_corpus
from ._hmm_counts import merge_counts as merge_hmm_counts
from ._kbest_mixin import KBestTaggerMixin, _check_corpus, gathered, saved_vocabularies

#: the suffix model behind the candidates of rare and unseen words is estimated from the
#: words seen at most this often (TnT's setting)
_SUFFIX_RARE = 10
#: tokens per block of the emission product ``X @ W`` (bounds the dense block to ~32 MB)
_BLOCK_CELLS = 1 << 22
#: decoding multiplies by a dense ``W`` up to this many cells (128 MB)
_DENSE_CELLS = 1 << 24

#: arrays of a saved model, in file order
_STRINGS = ("tags", "words", "suffixes")
_ARRAYS = ("word_counts", "lex_indptr", "lex_tags", "suffix_indptr", "suffix_tags",
           "suffix_probs", "tag_prior", "emit_indptr", "emit_tags", "emit_weights",
           "bigram_weights", "tri_indptr", "tri_tags", "tri_weights")

# docstring pieces every subclass shares, filled in by ``__init_subclass__`` (the defaults
# are read from the subclass's ``__init__``)
_PARAMETERS_DOC = """\
    dict_min_count : int >= 1, default {dict_min_count}
        Words seen at least this often are restricted to the tags they were seen with (1:
        every word seen in training).{dict_note}
    unknown_ratio : float in [0, 1), default {unknown_ratio}
        A rarer or unseen word may take the suffix-model tags whose posterior is at least
        this fraction of the best one's (0: every tag).
    max_suffix_length : int >= 0, default {max_suffix_length}
        Longest suffix of the suffix model behind those candidates.  Short suffixes give
        flatter posteriors, so more candidates and a higher chance that the right tag is
        among them; longer ones prune harder and decode faster."""

_ATTRIBUTES_DOC = """\
    tags_ : Vocabulary
        Tags seen in training (ids ``0..n_tags-1``); BOS is ``n_tags``, EOS ``n_tags + 1``.
    words_ : Vocabulary
        Word types seen in training.
    word_counts_ : int64 array, shape (n_words,)
    features_ : ContextFeatures
        The fitted token features.
    lex_indptr_, lex_tags_ : arrays
        Tag dictionary, CSR by word id.
    suffixes_, suffix_indptr_, suffix_tags_, suffix_probs_ :
        The suffix model of rare and unseen words (keys as in ``TrigramHMM.suffixes_``).
    tag_prior_ : float64 array, shape (n_tags,)
    theta_ : float"""

_TAGSET_NOTE = """\
    ``score`` and ``nbest`` on a corpus with gold tags outside ``tags_`` count those tokens
    as errors; when more than half of the gold tokens are outside, the corpus was read from
    another tag column and a TagsetMismatchError (a ValueError) is raised, as for
    :class:`~sparsecca.tagging.TrigramHMM`."""


class BaseLatticeTagger(KBestTaggerMixin, PersistMixin, ParamsMixin):
    """Base of the taggers decoded in a tag-dictionary lattice (see the module notes).

    In a subclass's docstring, ``%(lattice_parameters)s``, ``%(lattice_attributes)s`` and
    ``%(tagset_note)s`` stand for the shared parameter, attribute and Notes entries;
    ``_DICT_NOTE`` is appended to the ``dict_min_count`` entry.
    """

    #: whether a weighted trigram may end in EOS (an end-of-sentence factor)
    _EOS_TRIGRAMS = True
    #: a sentence appended to the ``dict_min_count`` entry of the docstring
    _DICT_NOTE = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        doc = cls.__dict__.get("__doc__")
        if not doc or "%(lattice_" not in doc:
            return
        defaults = {name: p.default for name, p in
                    inspect.signature(cls.__init__).parameters.items()}
        params = _PARAMETERS_DOC.format(
            dict_note=cls._DICT_NOTE, **{name: repr(defaults[name]) for name in
                                         ("dict_min_count", "unknown_ratio",
                                          "max_suffix_length")})
        cls.__doc__ = (doc.replace("    %(lattice_parameters)s", params)
                       .replace("    %(lattice_attributes)s", _ATTRIBUTES_DOC)
                       .replace("    %(tagset_note)s", _TAGSET_NOTE))

    def __init__(self, *, dict_min_count, unknown_ratio, max_suffix_length, random_state,
                 progress, parallel):
        # the parameters every subclass has (each with its own defaults and position)
        self.dict_min_count = dict_min_count
        self.unknown_ratio = unknown_ratio
        self.max_suffix_length = max_suffix_length
        self.random_state = random_state
        self.progress = progress
        self.parallel = parallel

    # ------------------------------------------------------------------ validation
    def _validate_lattice_params(self):
        check_int("dict_min_count", self.dict_min_count, 1)
        r = self.unknown_ratio
        check_float("unknown_ratio", r, 0.0, strict=False, high=1.0)
        if float(r) >= 1.0:
            raise ValueError(f"unknown_ratio must be a finite number in [0, 1), got {r!r}")
        check_int("max_suffix_length", self.max_suffix_length, 0)

    def _check_fitted(self):
        if not hasattr(self, "tags_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call "
                                 "fit(corpus) before tag or nbest")

    # ------------------------------------------------------------------ training
    @staticmethod
    def _training_corpus(corpus):
        corpus = _check_corpus("corpus", gathered(corpus), need_tags=True)
        if corpus.n_tokens == 0:
            raise ValueError("corpus must contain at least one token, got an empty corpus")
        return corpus

    def _refit(self, *args):
        """``self._fit(*args)`` on a copy, kept only when it succeeds (a failed refit leaves
        the previous fit intact)."""
        new = copy.copy(self)
        new._fit(*args)
        vars(self).update(vars(new))
        return self

    def _fit_dictionary(self, corpus: TaggedCorpus) -> np.ndarray:
        """Vocabularies, tag dictionary, tag prior and suffix model of a training corpus;
        returns its tag ids in ``tags_`` (int32)."""
        tag_used, tag_ids = np.unique(corpus.tag_ids, return_inverse=True)
        word_used, word_ids = np.unique(corpus.word_ids, return_inverse=True)
        tag_items, word_items = corpus.tags.items, corpus.words.items
        tags = Vocabulary([tag_items[i] for i in tag_used.tolist()])
        words = Vocabulary([word_items[i] for i in word_used.tolist()])
        T, V = len(tags), len(words)
        tag_ids = tag_ids.astype(np.int32)
        self._set_dictionary(tags, words, np.bincount(word_ids, minlength=V).astype(np.int64),
                             _lexicon_counts(word_ids, tag_ids, T, V),
                             np.bincount(tag_ids, minlength=T))
        return tag_ids

    def _fit_dictionary_counts(self, counts) -> None:
        """:meth:`_fit_dictionary` from the compacted counts of a corpus
        (:meth:`HMMCounts.compact <sparsecca.tagging._hmm_counts.HMMCounts.compact>`, the
        tree sum of a partitioned corpus's): the same attributes."""
        self._set_dictionary(Vocabulary(counts.tags), Vocabulary(counts.words),
                             counts.totals(1), counts.lexicon(), counts.totals(2))

    # -- the fit from counts: sparsecca.distributed maps _count_partition over the partitions
    # of a corpus, tree-merges with _merge_counts and fits from the total with _fit_counts
    # (the subclasses with context features: _context_features)
    def _count_partition(self, corpus):
        """The tag-dictionary and context-feature counts of a tagged corpus (mergeable)."""
        corpus = _check_corpus("corpus", corpus, need_tags=True)
        return count_corpus(corpus), self._context_features().count(corpus)

    @staticmethod
    def _merge_counts(a, b):
        return merge_hmm_counts(a[0], b[0]), merge_feature_counts(a[1], b[1])

    def _fit_counts(self, counts) -> None:
        """Vocabularies, tag dictionary, context features and gold trigrams (less those
        ending in EOS unless ``_EOS_TRIGRAMS``) of the corpus counted; the emission pattern
        is :meth:`_set_pairs`'s."""
        lexicon, features = counts
        if lexicon.lex_counts.sum() == 0:
            raise ValueError("corpus must contain at least one token, got an empty corpus")
        c = lexicon.compact()
        self._fit_dictionary_counts(c)
        self.features_ = self._context_features().fit_counts(features)
        S = len(self.tags_) + 2
        # trigram codes (t2 * S + t1) * S + t in the counts' coding, EOS = S - 1
        codes = c.tri_keys if self._EOS_TRIGRAMS else c.tri_keys[c.tri_keys % S != S - 1]
        self.tri_indptr_, self.tri_tags_ = trigram_csr(codes, S)

    def _pair_codes(self, X, tag_ids) -> np.ndarray:
        """The sorted distinct codes ``feature * n_tags + tag`` of the gold (feature, tag)
        pairs of a partition's features and gold tags in ``tags_`` (the union over the
        partitions is :meth:`_set_pairs`'s ``codes``)."""
        return pair_codes(X, tag_ids, len(self.tags_))

    def _set_pairs(self, codes) -> None:
        """The emission pattern: the pairs ``feature * n_tags + tag`` of ``codes`` (sorted,
        distinct), or every pair (None)."""
        F, T = self.features_.n_features_, len(self.tags_)
        if codes is None:
            self.emit_indptr_ = np.arange(0, (F + 1) * T, T, dtype=np.int64)
            self.emit_tags_ = np.tile(np.arange(T, dtype=np.int32), F)
        else:
            self.emit_indptr_, self.emit_tags_ = pair_csr(np.asarray(codes, dtype=np.int64),
                                                          F, T)

    def _set_dictionary(self, tags: Vocabulary, words: Vocabulary, word_counts: np.ndarray,
                        lex: tuple, tag_counts: np.ndarray) -> None:
        """Vocabularies, tag dictionary, tag prior and suffix model from the training counts:
        the tags and words some token uses, the int64 token counts of each word, the
        word-tag counts as CSR by word ``(indptr, tags, counts)`` and the counts of each
        tag."""
        self.tags_, self.words_ = tags, words
        T = len(tags)
        self.word_counts_ = word_counts
        self.lex_indptr_, self.lex_tags_ = lex[0], lex[1]
        self.tag_prior_ = tag_counts / tag_counts.sum()
        self.theta_ = _theta(self.tag_prior_)
        (self.suffixes_, self.suffix_indptr_, self.suffix_tags_,
         self.suffix_probs_) = _affix_table(self.words_.items, self.word_counts_, lex, T,
                                            int(self.max_suffix_length), _SUFFIX_RARE,
                                            prefix=False)
        self._reset_caches()

    def _reset_caches(self):
        self._suffix_cache = None

    # ------------------------------------------------------------------ lattice
    def _suffix_lookup(self):
        if getattr(self, "_suffix_cache", None) is None:
            T = len(self.tags_)
            self._suffix_cache = (
                {k: i for i, k in enumerate(self.suffixes_)},
                sp.csr_matrix((self.suffix_probs_, self.suffix_tags_, self.suffix_indptr_),
                              shape=(len(self.suffixes_), T)))
        return self._suffix_cache

    def _lattice(self, corpus: TaggedCorpus):
        """Per-token candidate tags (CSR, sorted within each token) and the unknown mask."""
        used, inv = np.unique(corpus.word_ids, return_inverse=True)
        items = corpus.words.items
        strings = [items[i] for i in used.tolist()]
        model_id = self.words_.ids(strings)
        known = model_id >= 0
        count = np.where(known, self.word_counts_[np.maximum(model_id, 0)], 0)
        open_types = np.flatnonzero(count < int(self.dict_min_count))
        # entry pool: the tag dictionary rows, then one row per rare or unseen type
        entry = model_id.copy()
        indptr, tags = self.lex_indptr_, self.lex_tags_
        if open_types.size:
            index, M = self._suffix_lookup()
            P = _affix_posteriors([strings[i] for i in open_types], index, M,
                                  int(self.max_suffix_length),
                                  self.tag_prior_, self.theta_, prefix=False)
            keep = P >= float(self.unknown_ratio) * P.max(axis=1, keepdims=True)
            keep &= P > 0
            # ... plus the tags the word was seen with
            seen = np.flatnonzero(known[open_types])
            mid = model_id[open_types[seen]]
            lo, hi = self.lex_indptr_[mid], self.lex_indptr_[mid + 1]
            rows = np.repeat(seen, hi - lo)
            keep[rows, self.lex_tags_[expand_ranges(lo, hi - lo)]] = True
            r, t = np.nonzero(keep)
            ind = np.zeros(open_types.size + 1, dtype=np.int64)
            np.cumsum(np.bincount(r, minlength=open_types.size), out=ind[1:])
            indptr = np.concatenate([indptr, ind[1:] + tags.size])
            tags = np.concatenate([tags, t.astype(np.int32)])
            entry[open_types] = len(self.words_) + np.arange(open_types.size)
        pos, cand_offsets = _csr_rows(indptr, entry[inv])
        return cand_offsets, tags[pos], ~known[inv]

    def _prepare(self, corpus):
        X = self.features_.transform(corpus)
        cand_offsets, cand_tags, unknown = self._lattice(corpus)
        return X, cand_offsets, cand_tags, unknown

    # ------------------------------------------------------------------ decoding
    def _emission_matrix(self):
        """The emission weights as an (n_features x n_tags) matrix (see
        :func:`emission_matrix`)."""
        return emission_matrix(self.emit_weights_, self.emit_indptr_, self.emit_tags_,
                               self.features_.n_features_, len(self.tags_))

    def _decode(self, corpus, k, prepared=None):
        T = len(self.tags_)
        S = T + 2
        X, cand_offsets, cand_tags, unknown = prepared or self._prepare(corpus)
        scores, extra = self._emission_scores(X, corpus.offsets, cand_offsets, cand_tags)
        out = kbest_viterbi(corpus.offsets, cand_offsets, cand_tags, scores, S,
                            self.bigram_weights_, np.zeros(S * S), self.tri_indptr_,
                            self.tri_tags_, self.tri_weights_, T, T + 1, k=k,
                            parallel=bool(self.parallel), trigrams="additive", **extra)
        return out, unknown

    def score(self, corpus: TaggedCorpus) -> float:
        """1-best token accuracy on a tagged corpus (of this model's tagset, see
        :meth:`nbest`)."""
        corpus = _check_corpus("corpus", corpus, need_tags=True)
        return self.nbest(corpus, k=1).top1_accuracy()

    # ------------------------------------------------------------------ persistence
    def _get_state(self):
        self._check_fitted()
        arrays = {}
        for name, items in zip(_STRINGS, (self.tags_.items, self.words_.items,
                                          self.suffixes_)):
            arrays.update(pack_strings(name, items))
        for name in _ARRAYS:
            arrays[name] = getattr(self, name + "_")
        extra = {"theta": self.theta_, **self._extra_state()}
        put_child(arrays, extra, "features", self.features_)
        return self._persist_params(), arrays, extra

    def _set_state(self, arrays, extra):
        """Restore a saved model, checking every array the decoder indexes with."""
        self._validate_params()
        tags, words = saved_vocabularies(arrays)
        suffixes = unpack_strings(arrays, "suffixes")
        T, V = len(tags), len(words)
        S = T + 2
        features = get_child(arrays, extra, "features", allowed=(ContextFeatures,))

        def arr(name, kind, **kw):
            return state_array(arrays, name, kind, **kw)

        def csr(name, n_rows, high, nonempty=False):
            t = check_index(f"{name}_tags", arr(f"{name}_tags", "int", dtype=np.int32), high)
            ptr = check_offsets(f"{name}_indptr", arr(f"{name}_indptr", "int"), t.size, n_rows)
            check_csr_rows(f"{name}_tags", ptr, t, nonempty=nonempty)
            return ptr, t

        word_counts = check_index("word_counts", arr("word_counts", "int", shape=(V,)), 2**62, 1)
        lex_indptr, lex_tags = csr("lex", V, T, nonempty=True)
        suffix_indptr, suffix_tags = csr("suffix", len(suffixes), T)
        suffix_probs = arr("suffix_probs", "float", shape=suffix_tags.shape)
        if suffix_probs.size and not (0 <= suffix_probs.min() and suffix_probs.max() <= 1):
            raise ModelFormatError("array 'suffix_probs' must lie in [0, 1]")
        prior = arr("tag_prior", "float", shape=(T,))
        if np.any(prior < 0):
            raise ModelFormatError("array 'tag_prior' must be >= 0")
        emit_indptr, emit_tags = csr("emit", features.n_features_, T)
        # without an end-of-sentence factor no trigram ends in EOS (an EOS candidate would
        # leave the normalisers' layout)
        tri_indptr, tri_tags = csr("tri", S * S, S if self._EOS_TRIGRAMS else T)
        self.emit_weights_ = arr("emit_weights", "float", shape=emit_tags.shape)
        self.bigram_weights_ = arr("bigram_weights", "float", ndim=2, shape=(S, S))
        self.tri_weights_ = arr("tri_weights", "float", shape=tri_tags.shape)
        self.tags_, self.words_, self.word_counts_ = tags, words, word_counts
        self.features_, self.suffixes_ = features, suffixes
        self.lex_indptr_, self.lex_tags_ = lex_indptr, lex_tags
        self.suffix_indptr_, self.suffix_tags_ = suffix_indptr, suffix_tags
        self.suffix_probs_, self.tag_prior_ = suffix_probs, prior
        self.emit_indptr_, self.emit_tags_ = emit_indptr, emit_tags
        self.tri_indptr_, self.tri_tags_ = tri_indptr, tri_tags
        self.theta_ = state_value(extra, "theta", float, low=0.0)
        self._set_extra_state(extra)
        self._reset_caches()


def observed_pairs(X, tag_ids, T):
    """The (feature, tag) pairs seen in gold data: the sorted pattern of ``X^T @ onehot(gold)``,
    as (indptr int64, tags int32), CSR by feature.

    With positive values (no sum of a pair can cancel) and a pair table no larger than
    :data:`_BLOCK_CELLS` or the entries of ``X``, the pairs are marked in a boolean table, in
    linear time; otherwise the sparse product gives them.
    """
    F = X.shape[1]
    X = sp.csr_matrix(X)
    if F * T <= max(_BLOCK_CELLS, X.nnz) and (X.nnz == 0 or X.data.min() > 0):
        seen = np.zeros(F * T, dtype=bool)
        rows = np.repeat(np.asarray(tag_ids, dtype=np.int64), np.diff(X.indptr))
        seen[X.indices.astype(np.int64) * T + rows] = True
        return pair_csr(np.flatnonzero(seen), F, T)
    G = sp.csr_matrix((np.ones(tag_ids.size, dtype=X.dtype), tag_ids,
                       np.arange(tag_ids.size + 1)), shape=(tag_ids.size, T))
    P = (X.T.tocsr() @ G).tocsr()
    P.sort_indices()
    return P.indptr.astype(np.int64), P.indices.astype(np.int32)


def pair_codes(X, tag_ids, T):
    """The sorted distinct codes ``feature * T + tag`` of the (feature, tag) pairs of the
    nonzeros of ``X`` (CSR, a row per token) and the gold tags."""
    rows = np.repeat(np.asarray(tag_ids, dtype=np.int64), np.diff(X.indptr))
    return np.unique(X.indices.astype(np.int64) * T + rows)


def pair_csr(codes, F, T):
    """Sorted distinct codes ``feature * T + tag`` as CSR by feature: (indptr int64, tags
    int32)."""
    indptr = np.zeros(F + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes // T, minlength=F), out=indptr[1:])
    return indptr, (codes % T).astype(np.int32)


def gold_trigrams(tag_ids, offsets, S, bos, eos, *, end=True):
    """The trigrams of the gold sequences (BOS-padded, EOS-terminated), CSR by context;
    ``end=False`` leaves out those ending in EOS."""
    lengths = np.diff(offsets)
    n_sent = lengths.size
    # each sentence padded as BOS BOS t_1 .. t_n EOS
    padded_len = lengths + 3
    starts = np.zeros(n_sent + 1, dtype=np.int64)
    np.cumsum(padded_len, out=starts[1:])
    seq = np.full(int(starts[-1]), bos, dtype=np.int64)
    tok_pos = expand_ranges(starts[:-1] + 2, lengths)
    seq[tok_pos] = tag_ids
    seq[starts[1:] - 1] = eos
    # trigram ending at every position >= 2 of each padded sentence (or >= 2 and < last)
    last = expand_ranges(starts[:-1] + 2, lengths + 1 if end else lengths)
    return trigram_csr(np.unique((seq[last - 2] * S + seq[last - 1]) * S + seq[last]), S)


def trigram_csr(codes, S):
    """Sorted distinct trigram codes ``(t2 * S + t1) * S + t`` as CSR by context ``t2 * S +
    t1``: (indptr int64, tags int32)."""
    ctx, t = codes // S, (codes % S).astype(np.int32)
    indptr = np.zeros(S * S + 1, dtype=np.int64)
    np.cumsum(np.bincount(ctx, minlength=S * S), out=indptr[1:])
    return indptr, t


def emission_matrix(weights, indptr, tags, F, T):
    """``W`` (n_features x n_tags): dense unless that is large and most pairs have no weight
    (a sparse-times-dense product is several times faster than sparse-times-sparse)."""
    if weights.size == F * T:  # every pair has a weight (patterns are sorted and distinct)
        return weights.reshape(F, T)
    W = sp.csr_matrix((weights, tags, indptr), shape=(F, T))
    return W.toarray() if F * T <= _DENSE_CELLS else W


def as_dense(A):
    return A.toarray() if sp.issparse(A) else np.asarray(A)
