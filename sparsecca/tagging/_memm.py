"""A maximum-entropy Markov model (MEMM) tagger: local log-linear tag distributions trained by
L-BFGS, decoded exactly by second-order (k-best) Viterbi.

Model
-----
Each tag is predicted from its history ``h_j = (t_{j-2}, t_{j-1}, x, j)`` by a log-linear
distribution over ALL tags,

``q(t | h_j) = exp(s_j(t)) / Z(h_j)``,  ``s_j(t) = X[j] @ W[:, t] + B[t_{j-1}, t]
+ C[t_{j-2}, t_{j-1}, t]``,  ``Z(h_j) = sum_{t'} exp(s_j(t'))``

with ``t_{-1} = t_0 = BOS``, and a sequence scores ``log p(t | x) = sum_j log q(t_j | h_j)``
(no end-of-sentence factor).  ``X`` holds the token context features of
:class:`~sparsecca.features.ContextFeatures`.

* ``W`` has a weight for the (feature, tag) pairs seen in the gold training data
  (``support='observed'``, as in maximum-entropy taggers since Ratnaparkhi 1996: the number
  of weights does not grow with the tagset) or for every pair (``support='all'``: weights
  can also push a tag down for a feature never seen with it).  ``B`` is dense over (tags +
  BOS) x tags, ``C`` holds the trigrams seen in the gold training data.
* Training maximises the conditional log-likelihood of the gold tags given the gold
  histories minus ``lam / 2 * ||theta||^2`` by scipy's L-BFGS-B.  The objective and its
  gradient are computed per block of tokens: one sparse product ``X @ W`` gives the scores
  of every tag of every token, a softmax over tags gives ``P``, and ``X^T (P - Y)`` (with
  the one-hot gold tags ``Y``) gives the emission gradient.
* Decoding: the candidate lattice is pruned by the tag dictionary of
  :class:`~sparsecca.tagging.PerceptronTagger` (same rule, same parameters), while every
  normaliser ``Z`` still sums over all tags; the k-best second-order Viterbi kernel then
  finds the exact best sequences of ``sum_j log q`` in that lattice.
"""

from __future__ import annotations

import copy
from contextlib import nullcontext

import numpy as np
import scipy.optimize
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
from ..data import TaggedCorpus, Vocabulary
from ..features import ContextFeatures
from ..kernels import kbest_viterbi
from ._hmm import _affix_table, _check_corpus, _lexicon_counts, _theta
from ._nbest import NBestList
from ._perceptron import _BLOCK_CELLS, _SUFFIX_RARE, PerceptronTagger, _gold_trigrams, _ranges

__all__ = ["MEMMTagger"]

#: the seed report's two feature sets: longest affix, and the min_count used by default
_TEMPLATES = {"model1": (3, 2), "model2": (4, 1)}
_SUPPORTS = ("observed", "all")
#: decoding multiplies by a dense ``W`` up to this many cells (128 MB)
_DENSE_CELLS = 1 << 24


class MEMMTagger(PersistMixin, ParamsMixin):
    """Maximum-entropy Markov model tagger (log-linear ``q(t | t_{-2}, t_{-1}, x, j)``) with
    exact k-best output.

    Parameters
    ----------
    lam : float >= 0, default 1.0
        L2 penalty: training minimises ``-sum_j log q(t_j | h_j) + lam / 2 * ||theta||^2``
        (a sum over training tokens, so the penalty weighs less as the corpus grows).
    maxiter : int >= 1, default 100
        Most L-BFGS-B iterations.
    tol : float > 0, default 1e-6
        L-BFGS-B stopping tolerance (scipy's ``tol``: relative decrease of the objective and
        largest projected-gradient entry).
    min_count : int >= 1 or None, default None
        Context features seen fewer times in training are dropped; None takes the value of
        ``templates``.
    templates : {'model2', 'model1'}, default 'model2'
        The feature sets of the seed report (its Tables 1 and 2).  Both have the word, the
        lowercased words at offsets -2..+2 (sentence boundaries marked), the flags and the
        prefixes and suffixes of the word, plus the previous tag and tag pair as ``B`` and
        ``C``.  'model1': affixes of 1-3 characters, ``min_count`` 2 by default; 'model2':
        affixes of 1-4 characters, ``min_count`` 1 by default.
    support : {'observed', 'all'}, default 'observed'
        Which (feature, tag) weights exist: the pairs seen in the gold training data, or
        all ``n_features x n_tags`` (often slightly more accurate, as a feature can then
        penalise the tags it never occurred with, but the number of weights and the
        optimiser's memory grow with the tagset).
    dict_min_count : int >= 1, default 5
        Words seen at least this often are restricted to the tags they were seen with.
    unknown_ratio : float in [0, 1), default 1e-3
        A rarer or unseen word may take the suffix-model tags whose posterior is at least
        this fraction of the best one's (0: every tag).
    max_suffix_length : int >= 0, default 2
        Longest suffix of the suffix model behind those candidates.
    random_state : int, numpy Generator, RandomState or None, default None
        Validated for a uniform tagger interface; training is deterministic (L-BFGS-B from
        zero weights), so it has no effect.
    progress : bool, default False
        Show a tqdm progress bar over L-BFGS-B iterations.
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
        The suffix model of rare and unseen words (as in ``PerceptronTagger``).
    tag_prior_ : float64 array, shape (n_tags,)
    theta_ : float
    emit_indptr_, emit_tags_ : arrays
        The (feature, tag) pairs with a weight, CSR by feature.
    emit_weights_ : float64 array, shape (n_pairs,)
    bigram_weights_ : float64 array, shape (n_tags + 2, n_tags + 2)
        ``B[t1, t]`` for ``t1`` a tag or BOS and ``t`` a tag; the other entries are 0.
    tri_indptr_, tri_tags_ : arrays
        Weighted trigrams (none ends in EOS), CSR by context ``t2 * (n_tags + 2) + t1``.
    tri_weights_ : float64 array, shape (n_trigrams,)
    n_iter_ : int
        L-BFGS-B iterations run.
    n_evals_ : int
        Objective evaluations.
    loss_ : float
        Final objective (negative log-likelihood plus penalty).
    loss_curve_ : list of float
        Objective after each iteration.
    converged_ : bool
        Whether L-BFGS-B met ``tol`` before ``maxiter``.

    Notes
    -----
    Training memory: besides the features (kept once more transposed), two dense
    ``n_features x n_tags`` float64 tables (``W`` and its gradient), one ``tokens x n_tags``
    score block at a time and, for L-BFGS-B, about 20 vectors of the number of weights
    (``support='observed'`` keeps that last part small).  Decoding costs one log-sum-exp
    over all tags per pair of candidates of the two previous tokens, so pruning
    (``dict_min_count``, ``unknown_ratio``) bounds it.

    ``score`` and ``nbest`` on a corpus with gold tags outside ``tags_`` count those tokens
    as errors; when more than half of the gold tokens are outside, the corpus was read from
    another tag column and a TagsetMismatchError (a ValueError) is raised.

    References
    ----------
    A. Ratnaparkhi (1996). A maximum entropy model for part-of-speech tagging. EMNLP.

    Training part-of-speech tagger using log-linear model (2018), report: features of its
    Tables 1 and 2, L2-penalised L-BFGS training, trigram Viterbi over ``q(t | h)`` (its
    Eq. 6).

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.tagging import MEMMTagger
    >>> corpus = synthetic_corpus(300, random_state=0)
    >>> train, test = corpus[:250], corpus[250:]
    >>> model = MEMMTagger(maxiter=20).fit(train)
    >>> model.score(test) > 0.8
    True
    >>> nb = model.nbest(test, k=5)
    >>> bool((nb.scores <= 0).all())  # sequence log-probabilities
    True
    >>> nb.oracle_accuracy() >= nb.top1_accuracy()
    True
    """

    def __init__(self, lam: float = 1.0, maxiter: int = 100, tol: float = 1e-6, min_count=None,
                 templates: str = "model2", support: str = "observed", dict_min_count: int = 5,
                 unknown_ratio: float = 1e-3, max_suffix_length: int = 2, random_state=None,
                 progress: bool = False, parallel: bool = False):
        self.lam = lam
        self.maxiter = maxiter
        self.tol = tol
        self.min_count = min_count
        self.templates = templates
        self.support = support
        self.dict_min_count = dict_min_count
        self.unknown_ratio = unknown_ratio
        self.max_suffix_length = max_suffix_length
        self.random_state = random_state
        self.progress = progress
        self.parallel = parallel

    # the candidate lattice (tag dictionary + suffix model) and the k-best output are the
    # perceptron's: same attributes, same rule
    _check_fitted = PerceptronTagger._check_fitted
    _suffix_lookup = PerceptronTagger._suffix_lookup
    _lattice = PerceptronTagger._lattice
    _prepare = PerceptronTagger._prepare

    # ------------------------------------------------------------------ validation
    def _validate_params(self):
        check_float("lam", self.lam, 0.0, strict=False)
        check_int("maxiter", self.maxiter, 1)
        check_float("tol", self.tol, 0.0, strict=True)
        if self.min_count is not None:
            check_int("min_count", self.min_count, 1)
        for name, allowed in (("templates", tuple(_TEMPLATES)), ("support", _SUPPORTS)):
            value = getattr(self, name)
            if not isinstance(value, str) or value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        check_int("dict_min_count", self.dict_min_count, 1)
        r = self.unknown_ratio
        check_float("unknown_ratio", r, 0.0, strict=False, high=1.0)
        if float(r) >= 1.0:
            raise ValueError(f"unknown_ratio must be a finite number in [0, 1), got {r!r}")
        check_int("max_suffix_length", self.max_suffix_length, 0)
        check_random_state(self.random_state)
        check_bool("progress", self.progress)
        check_bool("parallel", self.parallel)

    def _features(self) -> ContextFeatures:
        affix, min_count = _TEMPLATES[self.templates]
        if self.min_count is not None:
            min_count = int(self.min_count)
        return ContextFeatures(min_count=min_count, affix=affix, window=2)

    def _reset_caches(self):
        self._suffix_cache = None

    # ------------------------------------------------------------------ training
    def fit(self, corpus: TaggedCorpus, y=None) -> "MEMMTagger":
        """Train on a tagged corpus.

        Parameters
        ----------
        corpus : TaggedCorpus
            Training sentences with tags; at least one token.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        self
        """
        self._validate_params()
        corpus = _check_corpus("corpus", corpus, need_tags=True)
        if corpus.n_tokens == 0:
            raise ValueError("corpus must contain at least one token, got an empty corpus")
        new = copy.copy(self)  # a failed refit leaves the previous fit intact
        new._fit(corpus)
        vars(self).update(vars(new))
        return self

    def _fit(self, corpus):
        problem = self._fit_structure(corpus)
        curve = []
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=int(self.maxiter), desc="MEMM L-BFGS", unit="iter")

        def callback(intermediate_result):
            # scipy < 1.11 passes the iterate only: its value was the last one computed
            curve.append(float(getattr(intermediate_result, "fun", problem.last_value)))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{curve[-1]:.6g}")

        try:
            with _one_blas_thread():
                res = scipy.optimize.minimize(problem, np.zeros(problem.n_params), jac=True,
                                              method="L-BFGS-B", tol=float(self.tol),
                                              callback=callback,
                                              options={"maxiter": int(self.maxiter)})
        finally:
            if bar is not None:
                bar.close()
        self._set_weights(problem, res.x)
        self.n_iter_ = int(res.nit)
        self.n_evals_ = int(res.nfev)
        self.loss_ = float(res.fun)
        self.loss_curve_ = curve
        self.converged_ = bool(res.success)

    def _fit_structure(self, corpus) -> "_Objective":
        """Vocabularies, tag dictionary, features and weight layout; the training objective."""
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
        self.features_ = self._features().fit(corpus)
        X = self.features_.transform(corpus).astype(np.float64)
        F = X.shape[1]
        if self.support == "all":
            self.emit_indptr_ = np.arange(0, (F + 1) * T, T, dtype=np.int64)
            self.emit_tags_ = np.tile(np.arange(T, dtype=np.int32), F)
        else:  # the pattern of X^T @ onehot(gold)
            G = sp.csr_matrix((np.ones(tag_ids.size), tag_ids, np.arange(tag_ids.size + 1)),
                              shape=(tag_ids.size, T))
            P = (X.T.tocsr() @ G).tocsr()
            P.sort_indices()
            self.emit_indptr_ = P.indptr.astype(np.int64)
            self.emit_tags_ = P.indices.astype(np.int32)
        # gold trigrams without those ending in EOS (the model has no end-of-sentence factor)
        indptr, tags = _gold_trigrams(tag_ids, corpus.offsets, S, bos, eos)
        keep = tags != eos
        ctx = np.repeat(np.arange(S * S), np.diff(indptr))[keep]
        self.tri_indptr_ = np.zeros(S * S + 1, dtype=np.int64)
        np.cumsum(np.bincount(ctx, minlength=S * S), out=self.tri_indptr_[1:])
        self.tri_tags_ = tags[keep]
        t2, t1 = _gold_histories(tag_ids, corpus.offsets, bos)
        return _Objective(X, tag_ids, t2, t1, self.emit_indptr_, self.emit_tags_, T,
                          self.tri_indptr_, self.tri_tags_, float(self.lam))

    def _set_weights(self, problem, theta):
        T = len(self.tags_)
        S = T + 2
        emit, big, tri = problem.split(theta)
        self.emit_weights_ = np.ascontiguousarray(emit)
        self.bigram_weights_ = np.zeros((S, S))
        self.bigram_weights_[:T + 1, :T] = big
        self.tri_weights_ = np.ascontiguousarray(tri)

    # ------------------------------------------------------------------ decoding
    def _emission_matrix(self):
        T = len(self.tags_)
        return _emission_matrix(self.emit_weights_, self.emit_indptr_, self.emit_tags_,
                                self.features_.n_features_, T)

    def _lattice_scores(self, X, sent_offsets, cand_offsets, cand_tags):
        """Emission scores of the candidates and the log-normalisers of every context pair.

        Returns ``cand_scores`` (``X[j] @ W[:, t]`` per candidate), ``norm_offsets`` and
        ``norm`` in the layout of :func:`~sparsecca.kernels.kbest_viterbi`.
        """
        T = len(self.tags_)
        S, bos = T + 2, T
        W = self._emission_matrix()
        n = X.shape[0]
        n_c = np.diff(cand_offsets)
        pos = np.arange(n, dtype=np.int64) - np.repeat(sent_offsets[:-1], np.diff(sent_offsets))
        n1 = np.where(pos >= 1, np.roll(n_c, 1), 1)
        n2 = np.where(pos >= 2, np.roll(n_c, 2), 1)
        cnt = n1 * n2
        norm_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(cnt, out=norm_offsets[1:])
        # every entry: its token and the context pair (o, p) of candidates, as tags
        tok = np.repeat(np.arange(n, dtype=np.int64), cnt)
        e = np.arange(norm_offsets[-1], dtype=np.int64) - norm_offsets[:-1][tok]
        o, p = e // n1[tok], e % n1[tok]
        at = pos[tok]
        t1 = np.where(at >= 1, cand_tags[cand_offsets[np.maximum(tok - 1, 0)] + p], bos)
        t2 = np.where(at >= 2, cand_tags[cand_offsets[np.maximum(tok - 2, 0)] + o], bos)
        cand_tok = np.repeat(np.arange(n, dtype=np.int64), n_c)
        cand_scores = np.empty(cand_tags.size, dtype=np.float64)
        norm = np.empty(tok.size, dtype=np.float64)
        step = max(1, _BLOCK_CELLS // T)
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            E = _as_dense(X[lo:hi] @ W)
            c0, c1 = cand_offsets[lo], cand_offsets[hi]
            cand_scores[c0:c1] = E[cand_tok[c0:c1] - lo, cand_tags[c0:c1]]
            for a in range(norm_offsets[lo], norm_offsets[hi], step):
                b = min(norm_offsets[hi], a + step)
                M = E[tok[a:b] - lo]
                M += self.bigram_weights_[t1[a:b], :T]
                r, c, idx = _trigram_entries(t2[a:b] * S + t1[a:b], self.tri_indptr_,
                                             self.tri_tags_)
                M[r, c] += self.tri_weights_[idx]  # (row, tag) pairs are distinct
                norm[a:b] = _log_sum_exp(M)
        return cand_scores, norm_offsets, norm

    def _decode(self, corpus, k, prepared=None):
        T = len(self.tags_)
        S = T + 2
        X, cand_offsets, cand_tags, unknown = prepared or self._prepare(corpus)
        scores, norm_offsets, norm = self._lattice_scores(X, corpus.offsets, cand_offsets,
                                                          cand_tags)
        out = kbest_viterbi(corpus.offsets, cand_offsets, cand_tags, scores, S,
                            self.bigram_weights_, np.zeros(S * S), self.tri_indptr_,
                            self.tri_tags_, self.tri_weights_, T, T + 1, k=k,
                            parallel=bool(self.parallel), trigrams="additive",
                            norm_offsets=norm_offsets, norm=norm)
        return out, unknown

    def tag(self, corpus: TaggedCorpus) -> TaggedCorpus:
        """The most probable tag sequence of every sentence (exact in the candidate lattice).

        Parameters
        ----------
        corpus : TaggedCorpus
            Sentences to tag (gold tags, if any, are ignored).

        Returns
        -------
        TaggedCorpus
            The same words, tagged with ids in ``tags_``.
        """
        return PerceptronTagger.tag(self, corpus)

    def nbest(self, corpus: TaggedCorpus, k: int = 10) -> NBestList:
        """The ``k`` most probable tag sequences of every sentence, with their
        log-probabilities ``sum_j log q(t_j | h_j)``.

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
            Candidates sorted by descending log-probability; ``unknown`` marks tokens whose
            word was not seen in training.
        """
        return PerceptronTagger.nbest(self, corpus, k)

    def score(self, corpus: TaggedCorpus) -> float:
        """1-best token accuracy on a tagged corpus (of this model's tagset, see
        :meth:`nbest`)."""
        return PerceptronTagger.score(self, corpus)

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
        extra = {"theta": self.theta_, "n_iter": self.n_iter_, "n_evals": self.n_evals_,
                 "loss": self.loss_, "loss_curve": list(self.loss_curve_),
                 "converged": self.converged_}
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

        def arr(name, kind, **kw):
            return state_array(arrays, name, kind, **kw)

        def pattern(name, n_rows, high, nonempty=False):
            ids = check_index(f"{name}_tags", arr(f"{name}_tags", "int", dtype=np.int32), high)
            ptr = check_offsets(f"{name}_indptr", arr(f"{name}_indptr", "int"), ids.size,
                                n_rows)
            check_csr_rows(f"{name}_tags", ptr, ids, nonempty=nonempty)
            return ptr, ids

        self.word_counts_ = check_index("word_counts", arr("word_counts", "int", shape=(V,)),
                                        2**62, 1)
        self.lex_indptr_, self.lex_tags_ = pattern("lex", V, T, nonempty=True)
        self.suffix_indptr_, self.suffix_tags_ = pattern("suffix", len(suffixes), T)
        self.suffix_probs_ = arr("suffix_probs", "float", shape=self.suffix_tags_.shape)
        if self.suffix_probs_.size and not (0 <= self.suffix_probs_.min()
                                            and self.suffix_probs_.max() <= 1):
            raise ModelFormatError("array 'suffix_probs' must lie in [0, 1]")
        self.tag_prior_ = arr("tag_prior", "float", shape=(T,))
        if np.any(self.tag_prior_ < 0):
            raise ModelFormatError("array 'tag_prior' must be >= 0")
        # weights: no EOS-ending trigram (an EOS candidate would leave the layout above)
        self.emit_indptr_, self.emit_tags_ = pattern("emit", features.n_features_, T)
        self.tri_indptr_, self.tri_tags_ = pattern("tri", S * S, T)
        self.emit_weights_ = arr("emit_weights", "float", shape=self.emit_tags_.shape)
        self.bigram_weights_ = arr("bigram_weights", "float", ndim=2, shape=(S, S))
        self.tri_weights_ = arr("tri_weights", "float", shape=self.tri_tags_.shape)
        self.tags_, self.words_, self.suffixes_, self.features_ = tags, words, suffixes, features
        self.theta_ = state_value(extra, "theta", float, low=0.0)
        self.n_iter_ = state_value(extra, "n_iter", int, low=0)
        self.n_evals_ = state_value(extra, "n_evals", int, low=0)
        self.loss_ = state_value(extra, "loss", float)
        self.loss_curve_ = state_value(extra, "loss_curve", list)
        self.converged_ = state_value(extra, "converged", bool)
        self._reset_caches()


def _one_blas_thread():
    """L-BFGS-B's updates are BLAS-1 work on long vectors: OpenBLAS threads only add
    overhead, and on a busy machine their spinning made each iteration many times slower."""
    try:  # optional: threadpoolctl ships with scikit-learn
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


# ---------------------------------------------------------------------------------------
# the training objective
# ---------------------------------------------------------------------------------------

def _gold_histories(tag_ids, offsets, bos):
    """The gold tags two and one positions back of every token (BOS before a sentence)."""
    n = tag_ids.size
    pos = np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], np.diff(offsets))
    t1 = np.where(pos >= 1, np.roll(tag_ids, 1), bos).astype(np.int64)
    t2 = np.where(pos >= 2, np.roll(tag_ids, 2), bos).astype(np.int64)
    return t2, t1


def _emission_matrix(weights, indptr, tags, F, T):
    """``W`` (n_features x n_tags): dense unless that is large and most pairs have no weight
    (a sparse-times-dense product is several times faster than sparse-times-sparse)."""
    if weights.size == F * T:  # support='all' (patterns are sorted and distinct)
        return weights.reshape(F, T)
    W = sp.csr_matrix((weights, tags, indptr), shape=(F, T))
    return W.toarray() if F * T <= _DENSE_CELLS else W


def _as_dense(A):
    return A.toarray() if sp.issparse(A) else np.asarray(A)


def _trigram_entries(codes, tri_indptr, tri_tags):
    """For rows with context codes ``codes``: (row, tag, trigram index) of every stored
    trigram of the row's context."""
    lo = tri_indptr[codes]
    cnt = tri_indptr[codes + 1] - lo
    idx = _ranges(lo, cnt)
    return np.repeat(np.arange(codes.size), cnt), tri_tags[idx], idx


def _log_sum_exp(M):
    """``log(exp(M).sum(axis=1))``, stably; overwrites ``M``."""
    top = M.max(axis=1)
    M -= top[:, None]
    np.exp(M, out=M)
    return top + np.log(M.sum(axis=1))


class _Objective:
    """Penalised negative conditional log-likelihood of gold tags given gold histories.

    ``theta`` = [emission weights (the pattern's order), bigram weights ((T + 1) x T,
    row-major, row T = BOS), trigram weights (``tri_tags`` order)].  Calling it returns the
    value and the gradient (float64), as ``scipy.optimize.minimize(jac=True)`` expects.

    Every training history is a gold context ``(t2, t1)``, so the transition part of the
    scores is one dense table over the distinct gold contexts, ``H[c] = B[t1] + C[t2, t1]``,
    gathered per token; its gradient is summed per context by a sparse one-hot product and
    then spread back to ``B`` and ``C``.  The token blocks (features, their transpose, the
    one-hot contexts) are built once.
    """

    def __init__(self, X, y, t2, t1, emit_indptr, emit_tags, T, tri_indptr, tri_tags, lam):
        S = T + 2
        F = X.shape[1]
        self.F, self.T, self.lam = F, T, lam
        self.emit_feature = np.repeat(np.arange(F), np.diff(emit_indptr))
        self.emit_tags = emit_tags
        self.full = emit_tags.size == F * T
        self.sizes = (emit_tags.size, (T + 1) * T, tri_tags.size)
        self.n_params = sum(self.sizes)
        self.last_value = np.nan
        # the distinct gold contexts, and where each stored trigram sits in H
        codes, ctx = np.unique(t2 * S + t1, return_inverse=True)
        self.ctx_t1 = codes % S
        tri_code = np.repeat(np.arange(S * S), np.diff(tri_indptr))
        self.tri_ctx = np.searchsorted(codes, tri_code)  # trigrams come from gold contexts
        self.tri_tags = tri_tags
        n = X.shape[0]
        step = max(1, _BLOCK_CELLS // T)
        self.blocks = []
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            Xb = X[lo:hi]
            onehot = sp.csr_matrix((np.ones(hi - lo), (ctx[lo:hi], np.arange(hi - lo))),
                                   shape=(codes.size, hi - lo))
            self.blocks.append((Xb, Xb.T.tocsr(), ctx[lo:hi], y[lo:hi], onehot))

    def split(self, theta):
        a, b, _ = self.sizes
        return theta[:a], theta[a:a + b].reshape(self.T + 1, self.T), theta[a + b:]

    def __call__(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        F, T = self.F, self.T
        emit, big, tri = self.split(theta)
        if self.full:
            W = emit.reshape(F, T)
        else:
            W = np.zeros((F, T))
            W[self.emit_feature, self.emit_tags] = emit
        H = big[self.ctx_t1]
        H[self.tri_ctx, self.tri_tags] += tri
        g_W = np.zeros((F, T))
        g_H = np.zeros_like(H)
        nll = 0.0
        for Xb, XbT, ctx, y, onehot in self.blocks:
            rows = np.arange(y.size)
            M = Xb @ W
            M += H[ctx]
            gold = M[rows, y]
            top = M.max(axis=1)
            M -= top[:, None]
            np.exp(M, out=M)
            z = M.sum(axis=1)
            nll += float(np.sum(top + np.log(z) - gold))
            # M becomes P - Y, the gradient of the loss with respect to the scores
            M /= z[:, None]
            M[rows, y] -= 1.0
            g_W += XbT @ M
            g_H += onehot @ M
        g_emit = g_W.ravel() if self.full else g_W[self.emit_feature, self.emit_tags]
        g_big = np.zeros((T + 1, T))
        np.add.at(g_big, self.ctx_t1, g_H)
        grad = np.concatenate([g_emit, g_big.ravel(), g_H[self.tri_ctx, self.tri_tags]])
        grad += self.lam * theta
        self.last_value = nll + 0.5 * self.lam * float(theta @ theta)
        return self.last_value, grad
