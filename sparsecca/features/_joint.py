"""Joint (word-side, tag-side) features of the baseline rerankers (paper section 4.1)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._params import check_bool, check_float_dtype
from .._persist import (
    ModelFormatError,
    check_index,
    pack_strings,
    state_array,
    state_value,
    unpack_strings,
)
from .._sparse import expand_ranges
from ..data import TaggedCorpus, Vocabulary
from ..kernels import grouped_lookup
from ._base import (
    BaseView,
    NotFittedError,
    check_corpus,
    check_id_array,
    check_int_tuple,
    check_max_features,
    check_min_count,
    check_offsets,
    check_state_size,
    check_vocabulary,
    count_block,
    present_types,
    select_features,
    sequence_chunks,
    stack_rows,
    type_features,
)
from ._counts import JointCounts, check_joint_codes, joint_space
from ._lexical import escape_from_state, escape_to_state, suffixes
from ._tags import BOS, check_tag_symbols, recode_tags

__all__ = ["JointView"]

_KINDS = ("suffix", "ngram")


class JointView(BaseView):
    """Candidate tag sequence (with its sentence) -> bag of joint word-side x tag-side features.

    These are the features of the boosting baseline rerankers (Collins & Koo 2005; Huang et
    al. 2007) in the paper's section 4.1.  For each token i with tag t_i (previous tags
    t_{i-1}, t_{i-2}; ``<s>`` before the sentence start):

    ``kind="suffix"``
        every suffix s of the word (the :class:`SuffixView` rule for ``lengths``, including the
        ``^word`` mark for words shorter than the longest length) paired with the tag unigram
        and with the tag bigram ending at i: (s, t_i) and (s, t_{i-1} t_i).  For "the/DT
        selling/NN pressure/NN" and lengths (2, 3, 4), "selling" gives (ng, NN), (ng, DT NN),
        (ing, NN), (ing, DT NN), (ling, NN), (ling, DT NN).
    ``kind="ngram"``
        the word-tag pair (w_i, t_i), the word with the tag bigram (w_i, t_{i-1} t_i), the tag
        bigram (t_{i-1} t_i) and the tag trigram (t_{i-2} t_{i-1} t_i).  ``lengths`` is ignored.

    No end-of-sentence features are generated (every feature is anchored at a token).

    Parameters
    ----------
    kind : {"suffix", "ngram"}, default "suffix"
    lengths : int or sequence of int >= 1, default (2, 3, 4)
        Suffix lengths (``kind="suffix"`` only).
    min_count : int >= 1, default 1
        Keep joint features occurring at least this often in the fitting corpus.
    lowercase : bool, default False
        Lowercase words before taking suffixes / words.
    dtype : numpy.float32 or numpy.float64, default numpy.float64
    max_features : int >= 1 or None, default None
        Keep the ``max_features`` joint features occurring most often in the fitting corpus
        (after ``min_count``); ties go to the earlier column.  None keeps them all.

    Attributes
    ----------
    tags_ : Vocabulary
        Tagset of the fitting corpus.
    lexical_vocabulary_ : Vocabulary
        Suffixes (``kind="suffix"``) or words (``kind="ngram"``) of the fitting corpus, sorted.
    keys_ : ndarray of int64, shape (n_features_,)
        Sorted integer codes of the features (column j has code ``keys_[j]``); columns are
        therefore ordered by lexical unit (tag-only n-grams first), then by tag feature.
    vocabulary_ : Vocabulary
        Feature names, built on first access (there can be millions): ``"<unit>\\t<tags>"`` with
        the tag n-gram's symbols joined by a space (``"ing\\tDT NN"``), or ``"<tags>"`` for the
        tag-only n-grams of ``kind="ngram"``.  A tab separates the parts because CoNLL files
        cannot contain one inside a word or a tag.  ``fit`` therefore refuses (ValueError) a
        tag that contains a space or a tab, or is spelled ``<s>``: two different features
        would share a name.
    n_features_ : int
    n_dropped_ : int
        Joint feature occurrences absent from the vocabulary at the last transform; after
        ``fit``, the occurrences removed by ``min_count`` and ``max_features``.

    Notes
    -----
    A feature is the integer code ``unit * NT + tag_feature`` (NT the size of the tag-feature
    space); at transform each code is searched only among the fitted codes of its lexical
    unit (:func:`sparsecca.kernels.grouped_lookup`), a few entries for a suffix.

    References
    ----------
    M. Collins and T. Koo (2005).  Discriminative reranking for natural language parsing.
    Computational Linguistics 31(1), pp. 25-70.

    J. Jagarlamudi and H. Daumé III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.features import JointView
    >>> corpus = TaggedCorpus.from_sentences([[("the", "DT"), ("dog", "NN"), ("barks", "VBZ")]])
    >>> view = JointView(kind="suffix", lengths=(2,)).fit(corpus)
    >>> [name.split("\\t") for name in view.feature_names_out()]
    [['he', 'DT'], ['he', '<s> DT'], ['ks', 'VBZ'], ['ks', 'NN VBZ'], ['og', 'NN'], ['og', 'DT NN']]

    Two candidate taggings of the sentence, "DT NN VBZ" and "DT VBZ VBZ" (the words are
    repeated once per candidate):

    >>> Z = view.transform_sequences([0, 1, 2, 0, 1, 2], [0, 1, 2, 0, 2, 2], [0, 3, 6],
    ...                              corpus.words, corpus.tags)
    >>> Z.toarray().astype(int).tolist()
    [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]]
    >>> JointView(kind="ngram").fit(corpus).n_features_
    12
    """

    reads = frozenset({"words", "tags"})

    def __init__(self, kind="suffix", lengths=(2, 3, 4), min_count=1, lowercase=False,
                 dtype=np.float64, max_features=None):
        self.kind = kind
        self.lengths = lengths
        self.min_count = min_count
        self.max_features = max_features
        self.lowercase = lowercase
        self.dtype = dtype

    # -- encoding -------------------------------------------------------------------------
    # tag symbols: tags 0..T-1, BOS = T, UNK = T + 1 (tag unseen at fit); base B = T + 2.
    # tag feature codes: unigram t in [0, B); bigram B + p*B + t; trigram B + B^2 + (q*B+p)*B + t.
    # feature code = unit * NT + tag feature code, NT the size of the tag-feature space; for
    # kind "ngram" unit 0 means "no lexical part" and word w is unit 1 + w.

    def _validated(self) -> dict:
        if not isinstance(self.kind, str) or self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {self.kind!r}")
        p = dict(kind=self.kind, lowercase=check_bool("lowercase", self.lowercase),
                 dtype=check_float_dtype(self.dtype))
        if self.kind == "suffix":
            p["lengths"] = check_int_tuple("lengths", self.lengths)
            p["escape"] = True  # as in SuffixView._validated
        return p

    def _featurizer(self, params):
        if params["kind"] == "suffix":
            lengths, escape = params["lengths"], params["escape"]
            return lambda w: suffixes(w, lengths, escape)
        return lambda w: [w]

    def _type_units(self, words: Vocabulary, present: np.ndarray, params=None):
        """Per present type, its lexical units: (indptr, local unit ids, local unit names)."""
        params = params or self._params
        items = words.items
        if params["lowercase"]:
            strings = [items[i].lower() for i in present]
        else:
            strings = [items[i] for i in present]
        return type_features(strings, self._featurizer(params))

    def _codes(self, word_ids, t, offsets, type_lookup, unit_indptr, unit_ids, layout, lost):
        """Feature codes of a block of sequences; ``layout`` = (params, n_tags, nt).

        Yields (rows, codes) groups, rows non-decreasing within a group; adds to ``lost[0]``
        the occurrences lost to lexical units unseen at fit.
        """
        params, T, NT = layout
        B = T + 2
        lengths = np.diff(offsets)
        n_tok = t.size
        seq = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
        first = np.zeros(n_tok, dtype=bool)
        first[offsets[:-1][lengths > 0]] = True
        prev = np.empty(n_tok, dtype=np.int64)
        prev[1:] = t[:-1]
        prev[first] = T
        bigram = B + prev * B + t
        p = type_lookup[word_ids]
        if params["kind"] == "suffix":
            cnt = np.diff(unit_indptr)[p]
            unit = unit_ids[expand_ranges(unit_indptr[p], cnt)]
            tok = np.repeat(np.arange(n_tok, dtype=np.int64), cnt)
            ok = unit >= 0
            lost[0] += 2 * int(ok.size - np.count_nonzero(ok))
            unit, tok = unit[ok], tok[ok]
            base = unit * NT
            rows = seq[tok]
            yield rows, base + t[tok]
            yield rows, base + bigram[tok]
        else:
            unit = unit_ids[unit_indptr[p]]  # exactly one unit (the word) per type
            ok = unit >= 0
            lost[0] += 2 * int(ok.size - np.count_nonzero(ok))
            base = unit[ok] * NT
            rows = seq[ok]
            yield rows, base + t[ok]
            yield rows, base + bigram[ok]
            pp = np.empty(n_tok, dtype=np.int64)
            pp[1:] = prev[:-1]
            pp[first] = T
            yield seq, bigram  # unit 0: the tag bigram alone
            yield seq, B + B * B + (pp * B + prev) * B + t

    # -- estimator API -------------------------------------------------------------------
    def _signature(self, params: dict) -> tuple:
        return ("JointView", params["kind"], params.get("lengths"), params["lowercase"],
                params.get("escape"))

    def count(self, corpus: TaggedCorpus) -> JointCounts:
        """The joint feature occurrences of a tagged ``corpus``, mergeable with those of other
        pieces of a corpus (:func:`~sparsecca.features.merge_counts`); :meth:`fit_counts`
        fits on them.

        Returns
        -------
        JointCounts
        """
        params = self._validated()
        check_min_count(self.min_count)
        check_max_features(self.max_features)
        corpus = check_corpus(corpus, tagged=True)
        check_tag_symbols(corpus, type(self).__name__, (BOS,), separators=" \t")
        T = len(corpus.tags)
        nt = joint_space(params["kind"], T)
        present, _, lookup = present_types(corpus.word_ids, len(corpus.words))
        indptr, local, names = self._type_units(corpus.words, present, params)
        # units sorted by name so that columns are ordered by (unit, tag feature)
        order = np.argsort(np.array(names, dtype=object), kind="stable") if names else \
            np.zeros(0, dtype=np.int64)
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names), dtype=np.int64)
        shift = 1 if params["kind"] == "ngram" else 0
        check_joint_codes(len(names) + shift, nt)
        layout = (params, T, nt)
        unit_ids = rank[local] + shift if local.size else local
        uniq_parts, occ_parts = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        t_all = corpus.tag_ids.astype(np.int64)
        for s0, s1 in sequence_chunks(corpus.offsets):
            a, b = corpus.offsets[s0], corpus.offsets[s1]
            off = corpus.offsets[s0:s1 + 1] - a
            codes = [c for _, c in self._codes(corpus.word_ids[a:b], t_all[a:b], off, lookup,
                                               indptr, unit_ids, layout, [0])]
            u, c = np.unique(np.concatenate(codes), return_counts=True)
            uniq_parts.append(u)
            occ_parts.append(c)
        uniq, inv = np.unique(np.concatenate(uniq_parts), return_inverse=True)
        occ = np.bincount(inv, weights=np.concatenate(occ_parts),
                          minlength=uniq.size).astype(np.int64)
        units = np.empty(len(names), dtype=object)
        units[:] = [names[i] for i in order]
        return JointCounts(self._signature(params), corpus.tags, units, uniq, occ,
                           corpus.n_sentences)

    def _fit_counts(self, counts) -> np.ndarray:
        """Fit from ``counts``; the kept columns' sums on the fitting corpus."""
        params, min_count, max_features = self._checked_counts(counts, JointCounts)
        T = len(counts.tags)
        nt = joint_space(params["kind"], T)
        n_units = counts.units.size + (1 if params["kind"] == "ngram" else 0)
        check_joint_codes(n_units, nt)
        occ = counts.occ  # follows the sorted codes, i.e. column order
        keep = select_features(self, occ, min_count, max_features, counts.n_sentences)
        self._params = params
        self._n_tags, self._nt = T, nt
        self.tags_ = counts.tags
        self.lexical_vocabulary_ = Vocabulary(counts.units.tolist())
        self.keys_ = counts.keys[keep]
        self._vocabulary = None
        # keys_ grouped by lexical unit, for the lookups in transform
        self._unit_start = np.searchsorted(self.keys_ // nt, np.arange(n_units + 1))
        self._keys_tf = self.keys_ % nt
        self.n_features_ = int(self.keys_.size)
        self.n_dropped_ = int(occ[~keep].sum())
        return occ[keep]

    # -- persistence -------------------------------------------------------------------------
    def _get_state(self):
        self._check_fitted()
        arrays = {**pack_strings("tags", self.tags_.items),
                  **pack_strings("lexical_vocabulary", self.lexical_vocabulary_.items),
                  "keys": self.keys_}
        return (self._persist_params(), arrays,
                escape_to_state(self._params, {"n_dropped": self.n_dropped_}))

    def _set_state(self, arrays, extra):
        params = self._validated()
        check_min_count(self.min_count)
        tags = Vocabulary(unpack_strings(arrays, "tags"))
        units = Vocabulary(unpack_strings(arrays, "lexical_vocabulary"))
        T = len(tags)
        nt = joint_space(params["kind"], T)
        n_units = len(units) + (1 if params["kind"] == "ngram" else 0)
        check_joint_codes(n_units, nt, ModelFormatError)
        keys = check_index("keys", state_array(arrays, "keys", "int"), n_units * nt,
                           increasing=True)
        check_state_size(keys.size, self.max_features)
        escape_from_state(params, extra)
        self._params = params
        self._n_tags, self._nt = T, nt
        self.tags_ = tags
        self.lexical_vocabulary_ = units
        self.keys_ = keys
        self._vocabulary = None
        # the kernel's lookup tables are derived here, never read from the file, so they are
        # consistent with keys_ by construction
        self._unit_start = np.searchsorted(keys // nt, np.arange(n_units + 1))
        self._keys_tf = keys % nt
        self.n_features_ = int(keys.size)
        self.n_dropped_ = state_value(extra, "n_dropped", int, low=0)

    @property
    def vocabulary_(self) -> Vocabulary:
        """Feature names (built lazily; see the class docstring)."""
        if "n_features_" not in self.__dict__:
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(corpus) first"
            )
        if self._vocabulary is None:
            self._vocabulary = Vocabulary(self._names(self.keys_))
        return self._vocabulary

    def _names(self, keys: np.ndarray) -> list[str]:
        T = self._n_tags
        B = T + 2
        sym = self.tags_.items + [BOS, "<unk>"]
        units = self.lexical_vocabulary_.items
        ngram = self._params["kind"] == "ngram"
        out = []
        for key in keys.tolist():
            unit, tf = divmod(key, self._nt)
            if tf < B:
                tagpart = sym[tf]
            elif tf < B + B * B:
                p, t = divmod(tf - B, B)
                tagpart = f"{sym[p]} {sym[t]}"
            else:
                qp, t = divmod(tf - B - B * B, B)
                q, p = divmod(qp, B)
                tagpart = f"{sym[q]} {sym[p]} {sym[t]}"
            if ngram:
                out.append(tagpart if unit == 0 else f"{units[unit - 1]}\t{tagpart}")
            else:
                out.append(f"{units[unit]}\t{tagpart}")
        return out

    def transform(self, corpus: TaggedCorpus) -> sp.csr_matrix:
        """Joint feature count matrix of each sentence of a tagged corpus.

        Returns
        -------
        Z : scipy.sparse.csr_matrix, shape (n_sentences, n_features_), dtype ``self.dtype``
        """
        self._check_fitted()
        corpus = check_corpus(corpus, tagged=True)
        return self._transform(corpus.word_ids, corpus.tag_ids, corpus.offsets, corpus.words,
                               corpus.tags)

    def transform_sequences(self, word_ids, tag_ids, offsets, words, tags) -> sp.csr_matrix:
        """Joint feature count matrix of raw (word, tag) sequences, e.g. n-best candidates.

        Parameters
        ----------
        word_ids : array of int, shape (n_tokens,)
            Word ids in ``words``, aligned with ``tag_ids`` (for an n-best list, each
            sentence's words repeated once per candidate).
        tag_ids : array of int, shape (n_tokens,)
            Tag ids in ``tags``.
        offsets : array of int, shape (n_sequences + 1,)
        words, tags : Vocabulary or sequence of str
            Re-coded into the fitted vocabularies; words and tags unseen at fit make their
            features unseen.  More than half of the tag tokens outside ``tags_`` is a
            TagsetMismatchError (a ValueError): another tag column.

        Returns
        -------
        Z : scipy.sparse.csr_matrix, shape (n_sequences, n_features_), dtype ``self.dtype``
        """
        self._check_fitted()
        words = check_vocabulary("words", words)
        tags = check_vocabulary("tags", tags)
        word_ids = check_id_array("word_ids", word_ids, len(words), "words")
        tag_ids = check_id_array("tag_ids", tag_ids, len(tags), "tags")
        if word_ids.shape != tag_ids.shape:
            raise ValueError(f"word_ids and tag_ids must have the same shape, got "
                             f"{word_ids.shape} and {tag_ids.shape}")
        offsets = check_offsets(offsets, tag_ids.size)
        return self._transform(word_ids, tag_ids, offsets, words, tags)

    def _transform(self, word_ids, tag_ids, offsets, words, tags) -> sp.csr_matrix:
        t_all = recode_tags(np.asarray(tag_ids), tags, self.tags_, unknown=self._n_tags + 1,
                            view=type(self).__name__)
        present, _, lookup = present_types(word_ids, len(words))
        indptr, local, names = self._type_units(words, present)
        shift = 1 if self._params["kind"] == "ngram" else 0
        fitted = self.lexical_vocabulary_.ids(names)
        fitted = np.where(fitted >= 0, fitted + shift, -1)
        unit_ids = fitted[local] if local.size else local
        dtype = self._params["dtype"]
        n_feat = self.n_features_
        nt, unit_start, keys_tf = self._nt, self._unit_start, self._keys_tf

        def find(code):
            # codes are unit * nt + tag feature: search only the unit's slice of keys_
            return grouped_lookup(code // nt, code % nt, unit_start, keys_tf)

        unseen = [0]
        layout = (self._params, self._n_tags, nt)
        dropped = 0
        blocks = []
        for s0, s1 in sequence_chunks(offsets):
            a, b = offsets[s0], offsets[s1]
            groups = self._codes(word_ids[a:b], t_all[a:b], offsets[s0:s1 + 1] - a, lookup,
                                 indptr, unit_ids, layout, unseen)
            Z, lost = count_block(groups, find, (s1 - s0, n_feat), dtype)
            blocks.append(Z)
            dropped += lost
        self.n_dropped_ = dropped + unseen[0]
        if not blocks:
            return sp.csr_matrix((offsets.size - 1, n_feat), dtype=dtype)
        return stack_rows(blocks, n_feat, dtype)
