"""Collins' (2002) structured averaged perceptron: a second-order tagger with k-best output.

Model
-----
A tag sequence ``t_1..t_n`` of a sentence scores

``sum_{i=1}^{n+1} [ X[i] @ W[:, t_i] + B[t_{i-1}, t_i] + C[t_{i-2}, t_{i-1}, t_i] ]``

with ``t_{-1} = t_0 = BOS``, ``t_{n+1} = EOS`` and no emission term at ``n + 1``.  ``X`` holds
the token context features of :class:`~sparsecca.features.ContextFeatures` (word,
lowercase, prefixes and suffixes, shape flags, a window of lowercased words).

* Emission weights ``W`` exist for the (feature, tag) pairs seen in the gold training data,
  stored sparse (CSR by feature): their number does not grow with the tagset, which a dense
  ``n_features x n_tags`` table with its two averaging companions would (three float64 /
  int64 tables of a million-token corpus with a 452-tag tagset take about 3 GB; the supported
  pairs about a tenth of that).
* ``B`` is a dense bigram table over tags and the boundary states; ``C`` has a weight for
  each trigram seen in the gold training data (a dense cube would be cubic in the tagset).
* Training: sentences in a fresh random order each epoch; each is decoded with the current
  weights and, when the prediction differs from the gold sequence, the weights move by the
  gold features minus the predicted ones.  The model keeps the average of the weight vectors
  after every sentence (computed lazily).  With a ``dev`` corpus the epoch with the best dev
  accuracy is kept.
* Training lattice (``beam > 0``): each token of a visited sentence may take its ``beam``
  best tags by the current emission score, plus its gold tag.  A perceptron learns only
  from the mistakes its lattice allows: in the decoding lattice below, a frequent word seen
  with one tag never errs, so the affix and context features, which are all an unseen word
  has, learn from the rare words alone; with the beam every word's mistakes train them, as
  with the full tagset, at the cost of ``beam + 1`` candidates.  The gold sequence is in
  the lattice, so every update is on a violation (Huang, Fayong and Guo 2012).

Decoding lattice (tag-dictionary pruning): a word seen at least ``dict_min_count`` times in
training may take the tags it was seen with.  A rarer or unseen word may take the tags of
TnT's suffix model (the successive-abstraction posterior used by
:class:`~sparsecca.tagging.TrigramHMM`) whose posterior is at least ``unknown_ratio`` times
the best tag's, plus the tags it was seen with; ``unknown_ratio = 0`` allows every tag.
Decoding is exact in that lattice (and in training with ``beam = 0``).
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from .._params import ParamsMixin, check_bool, check_float, check_int, check_random_state
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
from .._tagset import check_tagset
from ..data import TaggedCorpus, Vocabulary
from ..exceptions import NotFittedError
from ..features import ContextFeatures
from ..kernels import kbest_viterbi, structured_perceptron
from ._hmm import (
    _affix_posteriors,
    _affix_table,
    _check_corpus,
    _csr_rows,
    _lexicon_counts,
    _theta,
)
from ._nbest import NBestList

__all__ = ["PerceptronTagger"]

#: the suffix model behind the candidates of rare and unseen words is estimated from the
#: words seen at most this often (TnT's setting)
_SUFFIX_RARE = 10
#: tokens per block of the emission product ``X @ W`` (bounds the dense block to ~32 MB)
_BLOCK_CELLS = 1 << 22


class PerceptronTagger(PersistMixin, ParamsMixin):
    """Second-order tagger trained by Collins' structured averaged perceptron, with k-best output.

    Parameters
    ----------
    n_iter : int >= 1, default 10
        Training epochs (passes over the training sentences).
    min_count : int >= 1, default 1
        Context features seen fewer times in training are dropped.
    dict_min_count : int >= 1, default 1
        Words seen at least this often are restricted to the tags they were seen with (1:
        every word seen in training).  A restriction costs the rare tokens whose right tag
        was never seen with their word, and saves the many errors a wider lattice lets the
        model make on known words; the defaults of this and ``unknown_ratio`` gave the best
        mean development-set accuracy over four corpora in three languages.
    unknown_ratio : float in [0, 1), default 1e-2
        A rarer or unseen word may take the suffix-model tags whose posterior is at least
        this fraction of the best one's (0: every tag).
    max_suffix_length : int >= 0, default 2
        Longest suffix of that model.  Short suffixes give flatter posteriors, so more
        candidates and a higher chance that the right tag is among them; longer ones prune
        harder and decode faster.
    beam : int >= 0, default 5
        Training lattice: the ``beam`` best tags of each token by the current emission score,
        plus its gold tag (see the module notes); 0 trains in the decoding lattice, which is
        faster but leaves the features of unseen words undertrained.
    patience : int >= 1 or None, default None
        With a ``dev`` corpus: stop after this many epochs without a better dev accuracy
        (None runs all ``n_iter`` epochs; the best dev epoch is kept either way).
    random_state : int, numpy Generator, RandomState or None, default 0
        Seeds the sentence order of every epoch.
    progress : bool, default False
        Show a tqdm progress bar over epochs.
    parallel : bool, default False
        Decode sentences on all numba threads in :meth:`tag` / :meth:`nbest`.

    Attributes
    ----------
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
    theta_ : float
    emit_indptr_, emit_tags_ : arrays
        Supported (feature, tag) pairs, CSR by feature.
    emit_weights_ : float64 array, shape (n_pairs,)
        Averaged emission weights.
    bigram_weights_ : float64 array, shape (n_tags + 2, n_tags + 2)
    tri_indptr_, tri_tags_ : arrays
        Weighted trigrams, CSR by context ``t2 * (n_tags + 2) + t1``.
    tri_weights_ : float64 array, shape (n_trigrams,)
    n_iter_ : int
        Epochs run.
    best_epoch_ : int
        The epoch (1-based) whose averaged weights the model holds.
    train_errors_ : list of int
        Training sentences decoded wrongly in each epoch.
    dev_scores_ : list of float
        Dev token accuracy after each epoch (empty without ``dev``).

    Notes
    -----
    ``score`` and ``nbest`` on a corpus with gold tags outside ``tags_`` count those tokens
    as errors; when more than half of the gold tokens are outside, the corpus was read from
    another tag column and a TagsetMismatchError (a ValueError) is raised, as for
    :class:`~sparsecca.tagging.TrigramHMM`.

    References
    ----------
    M. Collins (2002). Discriminative training methods for hidden Markov models: theory and
    experiments with perceptron algorithms. EMNLP.

    L. Huang, S. Fayong and Y. Guo (2012). Structured perceptron with inexact search. NAACL.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.tagging import PerceptronTagger
    >>> corpus = synthetic_corpus(300, random_state=0)
    >>> train, test = corpus[:250], corpus[250:]
    >>> model = PerceptronTagger(n_iter=3).fit(train)
    >>> model.score(test) > 0.8
    True
    >>> nb = model.nbest(test, k=5)
    >>> nb.oracle_accuracy() >= nb.top1_accuracy()
    True
    """

    def __init__(self, n_iter: int = 10, min_count: int = 1, dict_min_count: int = 1,
                 unknown_ratio: float = 1e-2, max_suffix_length: int = 2, beam: int = 5,
                 patience=None, random_state=0,
                 progress: bool = False, parallel: bool = False):
        self.n_iter = n_iter
        self.min_count = min_count
        self.dict_min_count = dict_min_count
        self.unknown_ratio = unknown_ratio
        self.max_suffix_length = max_suffix_length
        self.beam = beam
        self.patience = patience
        self.random_state = random_state
        self.progress = progress
        self.parallel = parallel

    # ------------------------------------------------------------------ validation
    def _validate_params(self):
        check_int("n_iter", self.n_iter, 1)
        check_int("min_count", self.min_count, 1)
        check_int("dict_min_count", self.dict_min_count, 1)
        r = self.unknown_ratio
        check_float("unknown_ratio", r, 0.0, strict=False, high=1.0)
        if float(r) >= 1.0:
            raise ValueError(f"unknown_ratio must be a finite number in [0, 1), got {r!r}")
        check_int("max_suffix_length", self.max_suffix_length, 0)
        check_int("beam", self.beam, 0)
        if self.patience is not None:
            check_int("patience", self.patience, 1)
        check_bool("progress", self.progress)
        check_bool("parallel", self.parallel)

    def _check_fitted(self):
        if not hasattr(self, "tags_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call "
                                 "fit(corpus) before tag or nbest")

    # ------------------------------------------------------------------ training
    def fit(self, corpus: TaggedCorpus, y=None, dev: TaggedCorpus | None = None):
        """Train on a tagged corpus.

        Parameters
        ----------
        corpus : TaggedCorpus
            Training sentences with tags; at least one token.
        y : None
            Ignored (scikit-learn convention).
        dev : TaggedCorpus, optional
            Tagged sentences scored after every epoch; the model keeps the averaged weights
            of the best epoch (the earliest among equals).

        Returns
        -------
        self
        """
        self._validate_params()
        rng = check_random_state(self.random_state)
        corpus = _check_corpus("corpus", corpus, need_tags=True)
        if corpus.n_tokens == 0:
            raise ValueError("corpus must contain at least one token, got an empty corpus")
        if dev is not None:
            dev = _check_corpus("dev", dev, need_tags=True)
        new = copy.copy(self)  # a failed refit leaves the previous fit intact
        new._fit(corpus, dev, rng)
        vars(self).update(vars(new))
        return self

    def _fit(self, corpus, dev, rng):
        tag_used, tag_ids = np.unique(corpus.tag_ids, return_inverse=True)
        word_used, word_ids = np.unique(corpus.word_ids, return_inverse=True)
        tag_items, word_items = corpus.tags.items, corpus.words.items
        self.tags_ = Vocabulary([tag_items[i] for i in tag_used])
        self.words_ = Vocabulary([word_items[i] for i in word_used])
        T, V = len(self.tags_), len(self.words_)
        S, bos, eos = T + 2, T, T + 1
        tag_ids = tag_ids.astype(np.int32)
        self.word_counts_ = np.bincount(word_ids, minlength=V).astype(np.int64)
        lex = _lexicon_counts(word_ids, tag_ids, T, V)
        self.lex_indptr_, self.lex_tags_ = lex[0], lex[1]
        tag_counts = np.bincount(tag_ids, minlength=T)
        self.tag_prior_ = tag_counts / tag_counts.sum()
        self.theta_ = _theta(self.tag_prior_)
        (self.suffixes_, self.suffix_indptr_, self.suffix_tags_,
         self.suffix_probs_) = _affix_table(self.words_.items, self.word_counts_, lex, T,
                                            int(self.max_suffix_length), _SUFFIX_RARE,
                                            prefix=False)
        self._reset_caches()
        self.features_ = ContextFeatures(min_count=int(self.min_count))
        X = self.features_.fit_transform(corpus)
        beam = int(self.beam)
        cand_offsets, cand_tags = (None, None) if beam else self._lattice(corpus)[:2]
        # supported (feature, tag) pairs: the pattern of X^T @ onehot(gold)
        G = sp.csr_matrix((np.ones(tag_ids.size, dtype=np.float32), tag_ids,
                           np.arange(tag_ids.size + 1)), shape=(tag_ids.size, T))
        P = (X.T.tocsr() @ G).tocsr()
        P.sort_indices()
        self.emit_indptr_ = P.indptr.astype(np.int64)
        self.emit_tags_ = P.indices.astype(np.int32)
        # gold trigrams, boundaries included, CSR by context
        self.tri_indptr_, self.tri_tags_ = _gold_trigrams(tag_ids, corpus.offsets, S, bos, eos)
        n_sent = corpus.n_sentences
        orders = np.stack([rng.permutation(n_sent) for _ in range(int(self.n_iter))])
        epochs = structured_perceptron(X, tag_ids, corpus.offsets, cand_offsets, cand_tags,
                                       self.emit_indptr_, self.emit_tags_, S, self.tri_indptr_,
                                       self.tri_tags_, bos, eos, orders, beam=beam)
        if self.progress:
            from tqdm.auto import tqdm

            epochs = tqdm(epochs, total=int(self.n_iter), desc="perceptron", unit="epoch")
        dev_data = self._prepare(dev) if dev is not None else None
        self.train_errors_, self.dev_scores_ = [], []
        best = None
        for e, (emit_w, big_w, tri_w, n_wrong) in enumerate(epochs, 1):
            self.train_errors_.append(n_wrong)
            self.emit_weights_, self.bigram_weights_, self.tri_weights_ = emit_w, big_w, tri_w
            self.n_iter_ = e
            if dev_data is None:
                best = e
                continue
            acc = self._dev_accuracy(dev, dev_data)
            self.dev_scores_.append(acc)
            if self.progress:
                epochs.set_postfix(dev=f"{acc:.4f}", wrong=n_wrong)
            if best is None or acc > self.dev_scores_[best - 1]:
                best = e
                kept = (emit_w, big_w, tri_w)
            elif self.patience is not None and e - best >= int(self.patience):
                break
        if dev_data is not None:
            self.emit_weights_, self.bigram_weights_, self.tri_weights_ = kept
        self.best_epoch_ = best

    def _dev_accuracy(self, dev, dev_data):
        (seq_tags, _, _, _), _ = self._decode(dev, 1, dev_data)
        if dev.n_tokens == 0:
            return 0.0
        gold = dev.tags.mapping_to(self.tags_)[dev.tag_ids]
        return float(np.mean(seq_tags == gold))

    def _reset_caches(self):
        self._suffix_cache = None

    # ------------------------------------------------------------------ lattice
    def _suffix_lookup(self):
        if self._suffix_cache is None:
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
        strings = [items[i] for i in used]
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
            keep[rows, self.lex_tags_[_ranges(lo, hi - lo)]] = True
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

    def _candidate_scores(self, X, cand_offsets, cand_tags):
        """``(X @ W)[token, tag]`` of every candidate, one sparse product per token block."""
        T = len(self.tags_)
        W = sp.csr_matrix((self.emit_weights_, self.emit_tags_, self.emit_indptr_),
                          shape=(X.shape[1], T))
        n = X.shape[0]
        out = np.empty(cand_tags.size, dtype=np.float64)
        tok = np.repeat(np.arange(n, dtype=np.int64), np.diff(cand_offsets))
        step = max(1, _BLOCK_CELLS // T)
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            E = (X[lo:hi] @ W).toarray()
            c0, c1 = cand_offsets[lo], cand_offsets[hi]
            out[c0:c1] = E[tok[c0:c1] - lo, cand_tags[c0:c1]]
        return out

    # ------------------------------------------------------------------ decoding
    def _decode(self, corpus, k, prepared=None):
        T = len(self.tags_)
        S = T + 2
        X, cand_offsets, cand_tags, unknown = prepared or self._prepare(corpus)
        scores = self._candidate_scores(X, cand_offsets, cand_tags)
        out = kbest_viterbi(corpus.offsets, cand_offsets, cand_tags, scores, S,
                            self.bigram_weights_, np.zeros(S * S), self.tri_indptr_,
                            self.tri_tags_, self.tri_weights_, T, T + 1, k=k,
                            parallel=bool(self.parallel), trigrams="additive")
        return out, unknown

    def tag(self, corpus: TaggedCorpus) -> TaggedCorpus:
        """The best-scoring tag sequence of every sentence.

        Parameters
        ----------
        corpus : TaggedCorpus
            Sentences to tag (gold tags, if any, are ignored).

        Returns
        -------
        TaggedCorpus
            The same words, tagged with ids in ``tags_``.
        """
        self._check_fitted()
        corpus = _check_corpus("corpus", corpus, need_tags=False)
        (seq_tags, _, _, _), _ = self._decode(corpus, 1)
        return corpus.with_tags(seq_tags, self.tags_)

    def nbest(self, corpus: TaggedCorpus, k: int = 10) -> NBestList:
        """The ``k`` best-scoring tag sequences of every sentence, with their model scores.

        Parameters
        ----------
        corpus : TaggedCorpus
            Sentences to decode.  When tagged, the list carries Hamming losses against these
            gold tags; gold tags never seen in training are appended to the list's tag
            vocabulary (no candidate can produce them, so they always count as errors).
            More than half of the gold tokens outside ``tags_`` is a TagsetMismatchError (a
            ValueError): the corpus was read from another tag column.
        k : int >= 1
            Candidates per sentence; a sentence with fewer possible sequences gets fewer.

        Returns
        -------
        NBestList
            Candidates sorted by descending score (the linear model's sequence score);
            ``unknown`` marks tokens whose word was not seen in training.
        """
        self._check_fitted()
        corpus = _check_corpus("corpus", corpus, need_tags=False)
        check_int("k", k, 1)
        if corpus.has_tags:
            check_tagset(corpus.tag_ids, corpus.tags, self.tags_, what="corpus gold tags",
                         fitted_what=f"the tagset of this {type(self).__name__}")
        (seq_tags, seq_offsets, sent_seq, scores), unknown = self._decode(corpus, int(k))
        tags = self.tags_
        if corpus.has_tags:
            used = np.unique(corpus.tag_ids)
            extra = [corpus.tags[i] for i in used if corpus.tags[i] not in tags]
            if extra:
                tags = Vocabulary(tags.items + extra)
        return NBestList(seq_tags, seq_offsets, sent_seq, scores, corpus, tags, unknown)

    def score(self, corpus: TaggedCorpus) -> float:
        """1-best token accuracy on a tagged corpus (of this model's tagset, see
        :meth:`nbest`)."""
        corpus = _check_corpus("corpus", corpus, need_tags=True)
        return self.nbest(corpus, k=1).top1_accuracy()

    # ------------------------------------------------------------------ persistence
    def _get_state(self):
        self._check_fitted()
        arrays = {}
        for name, items in (("tags", self.tags_.items), ("words", self.words_.items),
                            ("suffixes", self.suffixes_)):
            arrays.update(pack_strings(name, items))
        for name in ("word_counts", "lex_indptr", "lex_tags", "suffix_indptr", "suffix_tags",
                     "suffix_probs", "tag_prior", "emit_indptr", "emit_tags", "emit_weights",
                     "bigram_weights", "tri_indptr", "tri_tags", "tri_weights"):
            arrays[name] = getattr(self, name + "_")
        extra = {"theta": self.theta_, "n_iter": self.n_iter_, "best_epoch": self.best_epoch_,
                 "train_errors": list(self.train_errors_),
                 "dev_scores": list(self.dev_scores_)}
        put_child(arrays, extra, "features", self.features_)
        return self._persist_params(), arrays, extra

    def _set_state(self, arrays, extra):
        """Restore a saved model, checking every array the decoder indexes with."""
        self._validate_params()
        tags = Vocabulary(unpack_strings(arrays, "tags"))
        words = Vocabulary(unpack_strings(arrays, "words"))
        suffixes = unpack_strings(arrays, "suffixes")
        T, V = len(tags), len(words)
        if T < 1:
            raise ModelFormatError("the model has no tags")
        S = T + 2
        features = get_child(arrays, extra, "features", allowed=(ContextFeatures,))
        F = features.n_features_

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
        if suffix_probs.size and (suffix_probs.min() < 0 or suffix_probs.max() > 1):
            raise ModelFormatError("array 'suffix_probs' must lie in [0, 1]")
        prior = arr("tag_prior", "float", shape=(T,))
        if np.any(prior < 0):
            raise ModelFormatError("array 'tag_prior' must be >= 0")
        emit_indptr, emit_tags = csr("emit", F, T)
        tri_indptr, tri_tags = csr("tri", S * S, S)
        self.tags_, self.words_, self.word_counts_ = tags, words, word_counts
        self.features_ = features
        self.lex_indptr_, self.lex_tags_ = lex_indptr, lex_tags
        self.suffixes_, self.suffix_indptr_, self.suffix_tags_ = suffixes, suffix_indptr, \
            suffix_tags
        self.suffix_probs_, self.tag_prior_ = suffix_probs, prior
        self.theta_ = state_value(extra, "theta", float, low=0.0)
        self.emit_indptr_, self.emit_tags_ = emit_indptr, emit_tags
        self.emit_weights_ = arr("emit_weights", "float", shape=emit_tags.shape)
        self.bigram_weights_ = arr("bigram_weights", "float", ndim=2, shape=(S, S))
        self.tri_indptr_, self.tri_tags_ = tri_indptr, tri_tags
        self.tri_weights_ = arr("tri_weights", "float", shape=tri_tags.shape)
        self.n_iter_ = state_value(extra, "n_iter", int, low=1)
        self.best_epoch_ = state_value(extra, "best_epoch", int, low=1, high=self.n_iter_)
        self.train_errors_ = state_value(extra, "train_errors", list)
        self.dev_scores_ = state_value(extra, "dev_scores", list)
        self._reset_caches()


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` over pairs (s, c)."""
    total = int(counts.sum())
    ends = np.cumsum(counts)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - counts), counts)


def _gold_trigrams(tag_ids, offsets, S, bos, eos):
    """The trigrams of the gold sequences (BOS-padded, EOS-terminated), CSR by context."""
    lengths = np.diff(offsets)
    n_sent = lengths.size
    # each sentence padded as BOS BOS t_1 .. t_n EOS
    padded_len = lengths + 3
    starts = np.zeros(n_sent + 1, dtype=np.int64)
    np.cumsum(padded_len, out=starts[1:])
    seq = np.full(int(starts[-1]), bos, dtype=np.int64)
    tok_pos = _ranges(starts[:-1] + 2, lengths)
    seq[tok_pos] = tag_ids
    seq[starts[1:] - 1] = eos
    # trigram ending at every position >= 2 of each padded sentence
    last = _ranges(starts[:-1] + 2, lengths + 1)
    codes = np.unique((seq[last - 2] * S + seq[last - 1]) * S + seq[last])
    ctx, t = codes // S, (codes % S).astype(np.int32)
    indptr = np.zeros(S * S + 1, dtype=np.int64)
    np.cumsum(np.bincount(ctx, minlength=S * S), out=indptr[1:])
    return indptr, t
