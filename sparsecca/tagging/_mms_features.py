"""The features and training samples of :class:`~sparsecca.tagging.MMSTagger`: the token
context and word-form keys (:class:`_Features`), the unit-length feature rows of the word,
environment and unknown-word clusters, and the routing of each token to its clusters."""

from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp

from ..data import TaggedCorpus, Vocabulary
from ._hmm import TrigramHMM
from ._hmm_counts import HMMCounts, _sum_by_key, merge_counts
from ._mms_distance import _check_distance_param, _is_ptb, ptb_distance

_DIGITS = re.compile(r"[0-9]")
#: the suffix lengths of the unknown-word clusters' features
_SUFFIXES = (1, 2, 3, 4)


def _fold(word: str) -> str:
    return _DIGITS.sub("0", word.lower())


class _Features:
    """Token feature extraction: keys (template, value) coded as int64, then fitted ids."""

    def __init__(self, lower: Vocabulary, suffixes: Vocabulary, n_tags: int, window: int):
        self.lower, self.suffixes, self.window = lower, suffixes, window
        self.V = len(lower) + 3  # + BOS, EOS, unseen
        self.n_tags = n_tags
        base = max(self.V, n_tags + 2, len(suffixes) + 1)
        self.M = base * base + 1

    def word_ids(self, corpus: TaggedCorpus) -> np.ndarray:
        items = corpus.words.items
        used, inv = np.unique(corpus.word_ids, return_inverse=True)
        ids = self.lower.ids([items[i].lower() for i in used], default=self.V - 1)
        return ids[inv].astype(np.int64)

    def _neighbours(self, ids, offsets, bos, eos):
        """``out[o]`` = the id at offset ``o`` of every token (padded at the boundaries)."""
        n = ids.size
        lengths = np.diff(offsets)
        sent = np.repeat(np.arange(lengths.size), lengths)
        start, end = offsets[:-1][sent], offsets[1:][sent]
        j = np.arange(n)
        out = {}
        for o in range(-self.window, self.window + 1):
            if o == 0:
                continue
            pos = j + o
            ok = (pos >= start) & (pos < end)
            out[o] = np.where(ok, ids[np.clip(pos, 0, max(n - 1, 0))], bos if o < 0 else eos)
        return out

    def context_keys(self, ids, offsets, pred_tags=None):
        """(rows, keys) of the bias, the word n-grams and (two-stage) the tag n-grams."""
        n = ids.size
        rows, keys = [np.arange(n)], [np.zeros(n, dtype=np.int64)]
        tpl = 1
        streams = [(ids, self.V - 3, self.V - 2, self.V)]
        if pred_tags is not None:
            streams.append((pred_tags.astype(np.int64), self.n_tags, self.n_tags + 1,
                            self.n_tags + 2))
        d = self.window
        for s_ids, bos, eos, base in streams:
            nb = self._neighbours(s_ids, offsets, bos, eos)
            offs = [o for o in range(-d, d + 1) if o]
            for o in offs:
                rows.append(np.arange(n))
                keys.append(tpl * self.M + nb[o])
                tpl += 1
            pairs = [(o, o + 1) for o in offs if o + 1 in nb and o + 1 != 0] + [(-1, 1)]
            for a, b in pairs:
                rows.append(np.arange(n))
                keys.append(tpl * self.M + nb[a] * base + nb[b])
                tpl += 1
        return np.concatenate(rows), np.concatenate(keys)

    def lexical_keys(self, corpus, ids):
        """(rows, keys) of the suffixes and shape flags of every token's word."""
        items = corpus.words.items
        used, inv = np.unique(corpus.word_ids, return_inverse=True)
        forms = [items[i] for i in used]
        folded = [_fold(w) for w in forms]
        tpl0 = 1000
        n = inv.size
        rows, keys = [], []
        for m in _SUFFIXES:
            sid = self.suffixes.ids([f[-m:] for f in folded], default=len(self.suffixes))
            rows.append(np.arange(n))
            keys.append((tpl0 + m) * self.M + sid[inv])
        flags = np.array([(w[:1].isupper(), w.isupper(), any(map(str.isdigit, w)), "-" in w)
                          for w in forms], dtype=bool).reshape(-1, 4)[inv]
        first = np.zeros(n, dtype=bool)
        starts = corpus.offsets[:-1][np.diff(corpus.offsets) > 0]
        first[starts] = True
        flags = np.column_stack([flags, flags[:, 0] & first])
        r, f = np.nonzero(flags)
        rows.append(r)
        keys.append((tpl0 + 10 + f) * self.M)
        return np.concatenate(rows), np.concatenate(keys)


def _csr(rows, cols, n_rows, n_cols, per_row_norm):
    """Unit-length rows: every extracted feature weighs ``1 / sqrt(features extracted)``;
    columns < 0 (features unseen in training) are then dropped."""
    val = per_row_norm[rows]
    keep = cols >= 0
    X = sp.csr_matrix((val[keep], (rows[keep], cols[keep])), shape=(n_rows, n_cols))
    X.sum_duplicates()
    X.sort_indices()
    return X


class _MMSSamplesMixin:
    """The feature rows, samples and cluster routing of :class:`MMSTagger` (its fitted
    ``lower_``, ``suffixes_``, ``tags_``, ``feature_keys_`` and cluster tables)."""

    def _extractor(self):
        return _Features(self.lower_, self.suffixes_, len(self.tags_), int(self.window))

    def _env_keys(self, lower_ids, offsets):
        fx = self._extractor()
        nb = fx._neighbours(lower_ids, offsets, fx.V - 3, fx.V - 2)
        return nb[-1] * fx.V + nb[1]

    def _distance_for(self, corpus_tags):
        """The distances of ``tags_``; a ``distance`` array follows ``corpus_tags``, the tag
        vocabulary of the training corpus."""
        names = self.tags_.items
        d = self.distance
        if isinstance(d, str):
            if d == "ptb-paper":
                return ptb_distance(names, variant="ptb-paper")
            if d == "ptb" or (d == "auto" and _is_ptb(names)):
                return ptb_distance(names)
            D = np.ones((len(names), len(names)))
            np.fill_diagonal(D, 0.0)
            return D
        D = _check_distance_param(d)
        n = len(corpus_tags)
        if D.shape != (n, n):
            raise ValueError(f"distance must have shape ({n}, {n}), following the training "
                             f"corpus' tag vocabulary corpus.tags ({n} tags), got {D.shape}")
        idx = self.tags_.mapping_to(corpus_tags)
        return np.ascontiguousarray(D[np.ix_(idx, idx)])

    def _features(self, corpus, pred_tags=None, keys=None):
        """Unit-length feature rows of the word clusters (context) and of the unknown-word
        clusters (context and the word's own form), CSR over the fitted feature ids;
        ``keys`` are the corpus' extracted (rows, keys) pairs when already at hand."""
        n, F = corpus.n_tokens, self.feature_keys_.size
        if keys is None:
            keys = self._token_keys(corpus, pred_tags)[1]
        r1, k1, r2, k2 = keys

        def ids(keys):
            p = np.searchsorted(self.feature_keys_, keys)
            p = np.minimum(p, max(F - 1, 0))
            return np.where(self.feature_keys_[p] == keys, p, -1)

        c1, c2 = ids(k1), ids(k2)
        n1 = np.bincount(r1, minlength=n)
        n2 = n1 + np.bincount(r2, minlength=n)
        X_word = _csr(r1, c1, n, F, 1.0 / np.sqrt(np.maximum(n1, 1)))
        X_unk = _csr(np.concatenate([r1, r2]), np.concatenate([c1, c2]), n, F,
                     1.0 / np.sqrt(np.maximum(n2, 1)))
        return X_word, X_unk

    def _samples(self, corpus, lower_ids=None):
        """The training samples of a corpus of training words: every token in its word's
        cluster, and every token of a rare word in its environment's cluster (when that is
        a cluster) and in the rare-word cluster.

        Returns
        -------
        s_tok, s_cl : int64 arrays, shape (n_samples,)
            Token and cluster of each sample; a cluster ``>= n_words`` reads the token's
            unknown-word features.
        """
        wid = self._word_ids(corpus)
        V, n_env = len(self.words_), self.env_keys_.size
        rare = self.word_counts_[wid] <= int(self.rare_threshold)
        if lower_ids is None:
            lower_ids = self._extractor().word_ids(corpus)
        env = self._env_keys(lower_ids, corpus.offsets)
        pos = np.minimum(np.searchsorted(self.env_keys_, env), max(n_env - 1, 0))
        in_env = rare & (self.env_keys_[pos] == env) if n_env else np.zeros_like(rare)
        tok = np.arange(corpus.n_tokens)
        s_tok = np.concatenate([tok, tok[in_env], tok[rare]])
        s_cl = np.concatenate([wid, V + pos[in_env],
                               np.full(int(rare.sum()), V + n_env)]).astype(np.int64)
        return s_tok, s_cl

    def _gold_positions(self, s_cl, s_tag):
        lo, hi = self.cl_indptr_[s_cl], self.cl_indptr_[s_cl + 1]
        out = np.empty(s_cl.size, dtype=np.int64)
        # the cluster's candidates are sorted: binary search per sample, vectorised
        keys = s_cl * len(self.tags_) + s_tag
        flat = np.repeat(np.arange(self.n_clusters_), np.diff(self.cl_indptr_)) \
            * len(self.tags_) + self.cl_tags_
        p = np.searchsorted(flat, keys)
        out[:] = p - lo
        assert np.all((out >= 0) & (p < hi))
        return out

    # ------------------------------------------------------------------ the tables
    # The fit runs these steps over the training corpus, or over each partition of a
    # partitioned one (``sparsecca.distributed._mms``), whose per-partition results (keys,
    # counts, codes) the driver merges before setting the tables from them.
    def _count_partition(self, corpus):
        """The :class:`~sparsecca.tagging._hmm_counts.HMMCounts` of a tagged corpus (the
        counts :meth:`_fit_vocabularies` reads; merged over partitions by
        ``_merge_counts``)."""
        if not isinstance(corpus, TaggedCorpus):
            raise TypeError(f"corpus must be a TaggedCorpus, got {type(corpus).__name__}")
        if not corpus.has_tags:
            raise ValueError("corpus must be tagged (tag_ids is None)")
        return HMMCounts.of_corpus(corpus)

    _merge_counts = staticmethod(merge_counts)

    def _fit_vocabularies(self, counts):
        """Tags, words and their counts, the lowercase and suffix vocabularies and the
        transitions from the :class:`~sparsecca.tagging._hmm_counts.HMMCounts` of the
        training corpus."""
        c = counts.compact()
        self.tags_, self.words_ = Vocabulary(c.tags), Vocabulary(c.words)
        self.word_counts_ = c.totals(1)
        tag_counts = c.totals(2)
        self.tag_prior_ = tag_counts / tag_counts.sum()
        forms = self.words_.items
        self.lower_ = Vocabulary(sorted({w.lower() for w in forms}))
        self.suffixes_ = Vocabulary(sorted({f[-m:] for f in map(_fold, forms)
                                            for m in _SUFFIXES}))
        hmm = TrigramHMM()
        hmm._fit_transitions(c)
        self.bigram_logp_, self.context_adj_ = hmm.bigram_logp_, hmm.context_adj_
        self.tri_indptr_, self.tri_tags_, self.tri_logp_ = (hmm.tri_indptr_, hmm.tri_tags_,
                                                            hmm.tri_logp_)

    def _word_ids(self, corpus):
        """Every token's word id in ``words_`` (training words only)."""
        items = corpus.words.items
        used, inv = np.unique(corpus.word_ids, return_inverse=True)
        wid = self.words_.ids([items[i] for i in used])[inv].astype(np.int64)
        if np.any(wid < 0):
            raise ValueError("training samples need words seen in training")
        return wid

    def _token_keys(self, corpus, pred_tags=None):
        """Every token's lowercase id and its extracted (rows, keys) pairs: context, then
        word form."""
        fx = self._extractor()
        lower_ids = fx.word_ids(corpus)
        return lower_ids, (*fx.context_keys(lower_ids, corpus.offsets, pred_tags),
                           *fx.lexical_keys(corpus, lower_ids))

    def _rare_environments(self, corpus, lower_ids):
        """The distinct environments of the rare-word tokens (sorted) and their counts."""
        rare = self.word_counts_[self._word_ids(corpus)] <= int(self.rare_threshold)
        keys, counts = np.unique(self._env_keys(lower_ids, corpus.offsets)[rare],
                                 return_counts=True)
        return keys, counts.astype(np.int64)

    @staticmethod
    def _merge_environments(a, b):
        """The sum of two ``(keys, counts)`` of :meth:`_rare_environments`."""
        return _sum_by_key(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))

    def _set_environments(self, keys, counts):
        self.env_keys_ = keys[counts >= int(self.min_environment)].astype(np.int64)

    @staticmethod
    def _feature_key_set(keys):
        """The sorted distinct feature keys of a corpus's extracted pairs."""
        return np.unique(np.concatenate([keys[1], keys[3]]))

    def _cluster_pairs(self, corpus, s_tok, s_cl):
        """The distinct codes ``cluster * n_tags + tag`` of the samples' gold tags."""
        tag_ids = corpus.tags.mapping_to(self.tags_)[corpus.tag_ids].astype(np.int64)
        return np.unique(s_cl * len(self.tags_) + tag_ids[s_tok])

    def _set_clusters(self, pairs):
        """Cluster candidates (words, environments, the rare-word cluster) from the codes
        of :meth:`_cluster_pairs`."""
        T = len(self.tags_)
        n_clusters = len(self.words_) + self.env_keys_.size + 1
        self.n_clusters_ = n_clusters
        self.cl_indptr_ = np.zeros(n_clusters + 1, dtype=np.int64)
        np.cumsum(np.bincount(pairs // T, minlength=n_clusters), out=self.cl_indptr_[1:])
        self.cl_tags_ = (pairs % T).astype(np.int64)

    def _sample_rows(self, corpus, keys, s_tok, s_cl):
        """``(XS, s_cl, gold_pos)``: every sample's feature row and gold candidate."""
        tag_ids = corpus.tags.mapping_to(self.tags_)[corpus.tag_ids].astype(np.int64)
        X_word, X_unk = self._features(corpus, None, keys)
        X = sp.vstack([X_word, X_unk]).tocsr()
        rowsel = np.where(s_cl < len(self.words_), s_tok, s_tok + corpus.n_tokens)
        return X[rowsel], s_cl, self._gold_positions(s_cl, tag_ids[s_tok])

    def _block_pairs(self, XS, s_cl):
        """The distinct codes ``cluster * n_features + feature`` the samples of the
        clusters with two candidates or more use."""
        C = np.diff(self.cl_indptr_)
        F = self.feature_keys_.size
        rows = np.repeat(np.arange(XS.shape[0]), np.diff(XS.indptr))
        cl = s_cl[rows]
        keep = C[cl] >= 2
        return np.unique(cl[keep] * F + XS.indices[keep].astype(np.int64))

    def _set_blocks(self, pairs):
        """Every cluster's feature rows from the codes of :meth:`_block_pairs`
        (single-candidate clusters get none)."""
        C = np.diff(self.cl_indptr_)
        F = self.feature_keys_.size
        n_cl = C.size
        self.feat_indptr_ = np.zeros(n_cl + 1, dtype=np.int64)
        np.cumsum(np.bincount(pairs // F, minlength=n_cl), out=self.feat_indptr_[1:])
        self.feat_ids_ = (pairs % F).astype(np.int64)
        self.woff_ = np.zeros(n_cl + 1, dtype=np.int64)
        np.cumsum(np.diff(self.feat_indptr_) * C, out=self.woff_[1:])

    def _psl_samples(self, rows, pairs):
        """The samples of :meth:`_sample_rows` in clusters with two candidates or more, and
        the local feature row (in :meth:`_set_blocks`'s ``pairs``) of every stored value."""
        XS, s_cl, gold_pos = rows
        multi = np.diff(self.cl_indptr_)[s_cl] >= 2
        XS, s_cl, gold_pos = XS[multi], s_cl[multi], gold_pos[multi]
        F = self.feature_keys_.size
        r = np.repeat(np.arange(XS.shape[0]), np.diff(XS.indptr))
        key = s_cl[r] * F + XS.indices.astype(np.int64)
        x_local = np.searchsorted(pairs, key) - self.feat_indptr_[s_cl[r]]
        return XS, s_cl, gold_pos, x_local

    # ------------------------------------------------------------------ prediction
    def _route(self, corpus):
        """Cluster of every token and the unknown-word mask."""
        fx = self._extractor()
        items = corpus.words.items
        used, inv = np.unique(corpus.word_ids, return_inverse=True)
        strings = [items[i] for i in used]
        wid = self.words_.ids(strings)[inv]
        unknown = wid < 0
        V, n_env = len(self.words_), self.env_keys_.size
        cluster = wid.astype(np.int64)
        # 1. sentence-initial capitalised unknown words with a known lower-case form
        if unknown.any() and corpus.n_sentences:
            lower = self.words_.ids([s.lower() for s in strings])[inv]
            first = np.zeros(corpus.n_tokens, dtype=bool)
            first[corpus.offsets[:-1][corpus.lengths > 0]] = True
            ok = unknown & first & (lower >= 0)
            cluster[ok] = lower[ok]
        rest = cluster < 0
        if rest.any():
            env = self._env_keys(fx.word_ids(corpus), corpus.offsets)
            pos = np.minimum(np.searchsorted(self.env_keys_, env), max(n_env - 1, 0))
            hit = rest & (self.env_keys_[pos] == env) if n_env else np.zeros_like(rest)
            cluster[hit] = V + pos[hit]
            cluster[rest & ~hit] = V + n_env
        return cluster, unknown

    def _prepare(self, corpus, pred_tags=None):
        if self.two_stage and pred_tags is None:
            pred_tags = self.first_._predict(corpus)
        cluster, unknown = self._route(corpus)
        X_word, X_unk = self._features(corpus, pred_tags)
        use_unk = cluster >= len(self.words_)
        X = sp.csr_matrix(X_word)
        if use_unk.any():
            X = sp.vstack([X_word, X_unk]).tocsr()[
                np.where(use_unk, np.arange(corpus.n_tokens) + corpus.n_tokens,
                         np.arange(corpus.n_tokens))]
        return cluster, unknown, X
