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

from contextlib import nullcontext

import numpy as np
import scipy.optimize

from .._params import check_bool, check_float, check_int, check_random_state
from .._persist import state_value
from .._sparse import expand_ranges
from ..features import ContextFeatures
from ._kbest_mixin import _check_corpus, is_partitioned
from ._lattice import (
    _BLOCK_CELLS,
    BaseLatticeTagger,
    as_dense,
    gold_trigrams,
    observed_pairs,
    pair_codes,
)
from ._memm_objective import LossTerms, Objective, TrainingPiece, gold_histories

__all__ = ["MEMMTagger"]

#: the seed report's two feature sets: longest affix, and the min_count used by default
_TEMPLATES = {"model1": (3, 2), "model2": (4, 1)}
_SUPPORTS = ("observed", "all")


class MEMMTagger(BaseLatticeTagger):
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
    %(lattice_parameters)s
    random_state : int, numpy Generator, RandomState or None, default None
        Validated for a uniform tagger interface; training is deterministic (L-BFGS-B from
        zero weights), so it has no effect.
    progress : bool, default False
        Show a tqdm progress bar over L-BFGS-B iterations.
    parallel : bool, default False
        Decode sentences on all numba threads in :meth:`tag` / :meth:`nbest`.

    Attributes
    ----------
    %(lattice_attributes)s
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

    %(tagset_note)s

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
    >>> model = MEMMTagger(maxiter=20).fit(corpus[:250])
    >>> nb = model.nbest(corpus[250:], k=5)
    >>> nb.top1_accuracy() > 0.8  # the 1-best sequences: model.score(corpus[250:])
    True
    >>> bool((nb.scores <= 0).all())  # sequence log-probabilities
    True
    >>> nb.oracle_accuracy() >= nb.top1_accuracy()
    True
    """

    #: the model has no end-of-sentence factor, so no weighted trigram ends in EOS
    _EOS_TRIGRAMS = False

    def __init__(self, lam: float = 1.0, maxiter: int = 100, tol: float = 1e-6, min_count=None,
                 templates: str = "model2", support: str = "observed", dict_min_count: int = 5,
                 unknown_ratio: float = 1e-3, max_suffix_length: int = 2, random_state=None,
                 progress: bool = False, parallel: bool = False):
        super().__init__(dict_min_count=dict_min_count, unknown_ratio=unknown_ratio,
                         max_suffix_length=max_suffix_length, random_state=random_state,
                         progress=progress, parallel=parallel)
        self.lam = lam
        self.maxiter = maxiter
        self.tol = tol
        self.min_count = min_count
        self.templates = templates
        self.support = support

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
        self._validate_lattice_params()
        check_random_state(self.random_state)
        check_bool("progress", self.progress)
        check_bool("parallel", self.parallel)

    def _context_features(self) -> ContextFeatures:
        affix, min_count = _TEMPLATES[self.templates]
        if self.min_count is not None:
            min_count = int(self.min_count)
        return ContextFeatures(min_count=min_count, affix=affix, window=2)

    # ------------------------------------------------------------------ training
    def fit(self, corpus, y=None) -> "MEMMTagger":
        """Train on a tagged corpus.

        Parameters
        ----------
        corpus : TaggedCorpus or sparsecca.distributed.PartitionedCorpus
            Training sentences with tags; at least one token.  A partitioned corpus is
            trained on where its partitions lie, on the active Dask scheduler: the
            vocabularies, tag dictionary and features come from per-partition counts summed
            by a tree reduce (the model's are those of the corpus gathered), each partition's
            feature arrays are built and kept on the workers, and every L-BFGS-B step sums
            the partitions' log-likelihoods and gradients by a tree reduce (only the
            parameter vector and the gradient travel).  The weights are those of the
            in-memory fit on the corpus gathered up to the rounding of the sums, which the
            optimiser's steps can amplify to about its tolerance.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        self
        """
        self._validate_params()
        return self._refit(corpus if is_partitioned(corpus) else self._training_corpus(corpus))

    def _fit(self, corpus):
        if is_partitioned(corpus):  # the structure from counts, the terms on the workers
            problem = corpus._memm_objective(self)
        else:
            problem = self._fit_structure(corpus)
        self._minimize(problem)

    def _minimize(self, problem: Objective) -> None:
        """Train the weights: L-BFGS-B on ``problem`` from zero weights."""
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

    def _fit_structure(self, corpus) -> Objective:
        """Vocabularies, tag dictionary, features and weight layout; the training objective."""
        tag_ids = self._fit_dictionary(corpus)
        T = len(self.tags_)
        S, bos, eos = T + 2, T, T + 1
        self.features_ = self._context_features().fit(corpus)
        X = self.features_.transform(corpus).astype(np.float64)
        if self.support == "all":
            self._set_pairs(None)
        else:  # the pairs seen in the gold data
            self.emit_indptr_, self.emit_tags_ = observed_pairs(X, tag_ids, T)
        # gold trigrams without those ending in EOS (the model has no end-of-sentence factor)
        self.tri_indptr_, self.tri_tags_ = gold_trigrams(tag_ids, corpus.offsets, S, bos, eos,
                                                         end=False)
        t2, t1 = gold_histories(tag_ids, corpus.offsets, bos)
        return self._penalised(LossTerms(X, tag_ids, t2, t1, self.emit_indptr_,
                                         self.emit_tags_, T, self.tri_indptr_, self.tri_tags_))

    def _penalised(self, terms) -> Objective:
        """The training objective of the loss ``terms(theta) -> (value, gradient)``."""
        T = len(self.tags_)
        return Objective(terms, (self.emit_tags_.size, (T + 1) * T, self.tri_tags_.size), T,
                         float(self.lam))

    # the fit on a partitioned corpus (sparsecca.distributed maps and reduces with these and
    # with the base class's _count_partition, _merge_counts, _fit_counts and _set_pairs):
    # each partition's training tokens and their loss terms
    def _fit_counts(self, counts) -> None:
        """The base class's fit from counts, and every pair weighted when ``support='all'``
        (else the pairs seen in the gold data: :meth:`_set_pairs`)."""
        super()._fit_counts(counts)
        if self.support == "all":
            self._set_pairs(None)

    def _training_piece(self, corpus) -> TrainingPiece:
        """A tagged partition's training tokens in this model's ids (after
        :meth:`_fit_counts`)."""
        corpus = _check_corpus("corpus", corpus, need_tags=True)
        T = len(self.tags_)
        X = self.features_.transform(corpus).astype(np.float64)
        y = self.tags_.ids(corpus.tags.items)[corpus.tag_ids].astype(np.int32)
        t2, t1 = gold_histories(y, corpus.offsets, T)
        return TrainingPiece(X, y, t2, t1, None if self.support == "all"
                             else pair_codes(X, y, T))

    def _loss_terms(self, piece: TrainingPiece) -> LossTerms:
        """The loss terms of a partition's training tokens (after the emission pattern is
        set)."""
        return LossTerms(piece.X, piece.y, piece.t2, piece.t1, self.emit_indptr_,
                         self.emit_tags_, len(self.tags_), self.tri_indptr_, self.tri_tags_,
                         local=True)

    def _set_weights(self, problem, theta):
        T = len(self.tags_)
        S = T + 2
        emit, big, tri = problem.split(theta)
        self.emit_weights_ = np.ascontiguousarray(emit)
        self.bigram_weights_ = np.zeros((S, S))
        self.bigram_weights_[:T + 1, :T] = big
        self.tri_weights_ = np.ascontiguousarray(tri)

    # ------------------------------------------------------------------ decoding
    def _emission_scores(self, X, sent_offsets, cand_offsets, cand_tags):
        """Emission scores of the candidates and the log-normalisers of every context pair.

        Returns ``cand_scores`` (``X[j] @ W[:, t]`` per candidate) and the decoder's
        ``norm_offsets`` and ``norm`` in the layout of
        :func:`~sparsecca.kernels.kbest_viterbi`.
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
            E = as_dense(X[lo:hi] @ W)
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
        return cand_scores, {"norm_offsets": norm_offsets, "norm": norm}

    # ------------------------------------------------------------------ persistence
    def _extra_state(self):
        return {"n_iter": self.n_iter_, "n_evals": self.n_evals_, "loss": self.loss_,
                "loss_curve": list(self.loss_curve_), "converged": self.converged_}

    def _set_extra_state(self, extra):
        self.n_iter_ = state_value(extra, "n_iter", int, low=0)
        self.n_evals_ = state_value(extra, "n_evals", int, low=0)
        self.loss_ = state_value(extra, "loss", float)
        self.loss_curve_ = state_value(extra, "loss_curve", list)
        self.converged_ = state_value(extra, "converged", bool)


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

def _trigram_entries(codes, tri_indptr, tri_tags):
    """For rows with context codes ``codes``: (row, tag, trigram index) of every stored
    trigram of the row's context."""
    lo = tri_indptr[codes]
    cnt = tri_indptr[codes + 1] - lo
    idx = expand_ranges(lo, cnt)
    return np.repeat(np.arange(codes.size), cnt), tri_tags[idx], idx


def _log_sum_exp(M):
    """``log(exp(M).sum(axis=1))``, stably; overwrites ``M``."""
    top = M.max(axis=1)
    M -= top[:, None]
    np.exp(M, out=M)
    return top + np.log(M.sum(axis=1))
