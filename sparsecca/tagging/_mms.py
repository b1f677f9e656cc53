"""The max-margin-structure (MMS) tagger: one small distance-aware perceptron per word type.

Model (Ni et al. 2010)
----------------------
Tagging is treated as translating every word into a tag.  Each word type seen in training
is a *cluster* whose candidates are the tags it was seen with; a word seen with one tag
only is tagged by that tag.  A cluster ``c`` has its own weights ``W_c`` (features x
candidates) and scores candidate ``k`` of a token with features ``x`` as ``x @ W_c[:, k]``.

Training is perceptron-based structured learning (PSL, the paper's Table 1): a sample of a
cluster is drawn, the most violating candidate
``k* = argmax_{k != gold} distance[k, gold] + x @ W_c[:, k]`` is found, and when the gold
score is below that value the weights move by ``eta * x`` towards the gold column and away
from ``k*``'s.  A candidate far from the gold tag (large distance) must thus trail it by a
larger margin.  Every epoch visits all samples of all clusters in a fresh random order; the
model keeps each cluster's weights averaged over its own steps (``average=True``; the
paper's final weights with ``average=False``).  With a ``dev`` corpus the learning rate (from
a grid) and the number of epochs are chosen by dev accuracy, as the paper's early stopping
does by cross-validation.
On a partitioned corpus, ``partitioned_fit="mixing"`` trains by iterative parameter mixing
(McDonald, Hall and Mann 2010), cluster by cluster, where the partitions live (see
``sparsecca.distributed._mms``).

Features (the paper's Table 2): position-specific word n-grams in a window of ``window``
words on each side: the lowercased words at offsets ``-window..-1`` and ``1..window``, the
adjacent pairs among them, the pair ``(w_{j-1}, w_{j+1})``, and a bias; with
``two_stage=True`` the same n-grams over the tags a first-pass model predicted ("+POS").
The clusters of unknown words also see the word's own form: lowercased suffixes of 1 to 4
characters (digits folded to 0) and flags for capitalisation, all capitals, a digit, a
hyphen and a capitalised sentence-initial word.  Every token's feature vector has unit
length.

Unknown words
-------------
A word not seen in training goes, in this order, to

1. the cluster of its lower-case form when it is capitalised, sentence-initial and that form
   was seen in training;
2. the *environment cluster* of its neighbours ``(w_{j-1}, *, w_{j+1})`` (lowercased; the
   sentence boundaries count as words) when that environment was seen around at least
   ``min_environment`` training tokens of rare words (words seen at most
   ``rare_threshold`` times); its candidates are the tags of those tokens;
3. otherwise the *rare-word cluster*: every token of a rare training word, with the tags
   they carry as candidates (this is the back-off the paper leaves open: it calls such
   words unpredictable).

Tag distances
-------------
``distance='auto'`` takes the Penn Treebank table ``'ptb'`` below when the training tags
are Penn Treebank tags (at least 90% of them, NN and VB among them) and a uniform distance
of 1 otherwise (PSL is then Collins' multi-class perceptron with a margin).  ``'ptb'``,
``'ptb-paper'`` and ``'uniform'`` force one; a square array gives the distances itself, rows
(the candidate) and columns (the gold tag) following the training corpus' tag vocabulary
``corpus.tags``; entries lie in [0, 1], off-diagonal ones above 0 (the diagonal is never
used).

Two Penn Treebank tables group the tag pairs alike -- the confusable pairs the tagging
guidelines single out, other pairs inside one word class, all other pairs -- and differ in
which end of the scale the confusable pairs take:

``'ptb'`` (the default for Penn Treebank tags; symmetric) treats the confusable pairs as
"near" tags, which a model need not separate by a full margin:

* 0.3 -- NN/NNP, NNS/NNPS, NN/JJ, JJ/NNP, NN/NNS, NNP/NNPS, NNS/VBZ, NN/VB, NN/VBP, NN/VBG,
  JJ/VBG, JJ/VBN, VBD/VBN, VB/VBP, VBP/VBZ, RB/RP, RP/IN, RB/IN, JJ/RB, JJR/RBR, JJS/RBS,
  JJR/JJ, IN/WDT, DT/WDT, DT/IN, DT/PDT, CD/JJ, CD/NN, CD/NNP;
* 0.6 -- other pairs inside one word class: nouns (NN, NNS, NNP, NNPS), verbs (MD, VB, VBD,
  VBG, VBN, VBP, VBZ), adjectives (JJ, JJR, JJS), adverbs (RB, RBR, RBS, WRB), pronouns
  (PRP, PRP$, WP, WP$, EX), determiners (DT, PDT, WDT), punctuation and symbols;
* 1 -- every other pair.

``'ptb-paper'`` is the reading of the paper's own description: its matrix is built from the
problematic cases of the guidelines, the harder the case the larger the distance, so the
confusable pairs must be separated by the *largest* margin.  It reverses the scale of
``'ptb'``: 1 for the confusable pairs, 0.6 within a word class, 0.3 for every other pair --
pairs a context rarely confuses need only a small margin.

Which table tags better is an empirical matter; ``'ptb'`` stays the default as long as the
paper's reading does not do better on held-out data.

k-best output
-------------
:meth:`MMSTagger.nbest` (and :meth:`~MMSTagger.tag` with ``decoder='viterbi'``) combine the
per-token scores with the transitions of a second-order HMM estimated on the same training
tags (:class:`~sparsecca.tagging.TrigramHMM`'s deleted interpolation), the emission of
candidate ``t`` of token ``j`` being ``log softmax(beta * s_j)[t] - log P(t)`` (the local
class posterior divided by the tag prior, as TnT does for unknown words); ``beta`` is
``temperature``'s inverse, chosen on dev when a dev corpus is given and 4 otherwise.  The
posterior must be sharp: the division by the prior raises a tag ``t`` against a more frequent
tag ``t'`` by ``log(P(t') / P(t))``, so with a flat posterior a rare tag that a frequent word
was seen with (a foreign-word tag on "the", say) wins its tokens, and a larger training
corpus gives more words such candidates.  The second-order
k-best kernel :func:`~sparsecca.kernels.kbest_viterbi` decodes the lattice of the clusters'
candidates exactly.
"""

from __future__ import annotations

import copy
import functools

import numpy as np

from .._params import (
    ParamsMixin,
    check_bool,
    check_float,
    check_int,
    check_partitioned_fit,
    check_random_state,
)
from .._persist import (
    ModelFormatError,
    PersistMixin,
    check_index,
    check_offsets,
    get_child,
    pack_strings,
    put_child,
    state_array,
    state_value,
    to_json,
    unpack_strings,
)
from .._tagset import check_tagset
from ..data import TaggedCorpus, Vocabulary
from ..exceptions import NotFittedError
from ..kernels import cluster_scores, kbest_viterbi, psl_average, psl_epoch, segment_first_max
from ._hmm import _csr_rows
from ._hmm_counts import HMMCounts
from ._kbest_mixin import (
    KBestTaggerMixin,
    _check_corpus,
    gathered,
    is_partitioned,
    saved_vocabularies,
)
from ._mms_distance import _check_distance_param, ptb_distance
from ._mms_features import _MMSSamplesMixin

__all__ = ["MMSTagger", "ptb_distance"]

#: folds of the first pass whose predictions train the second ("+POS")
_POS_FOLDS = 4
#: inverse temperatures tried on dev for the k-best emissions
_BETA_GRID = (0.5, 1.0, 2.0, 4.0, 8.0)
#: the inverse temperature without dev (a flatter posterior lets the division by the tag prior
#: favour a rare tag that a frequent word was seen with; see the module documentation)
_BETA_NO_DEV = 4.0


def _check_eta(eta):
    if isinstance(eta, (list, tuple, np.ndarray)):
        if len(eta) == 0:
            raise ValueError("eta must be a float > 0 or a non-empty sequence of them, got []")
        return tuple(check_float("eta", e, 0.0, strict=True) for e in eta)
    return (check_float("eta", eta, 0.0, strict=True),)



class MMSTagger(KBestTaggerMixin, _MMSSamplesMixin, PersistMixin, ParamsMixin):
    """Max-margin-structure tagger: per-word-type clusters trained by distance-aware PSL.

    Parameters
    ----------
    distance : {'auto', 'ptb', 'ptb-paper', 'uniform'} or array, shape (n, n), default 'auto'
        Tag distances ``distance[candidate, gold]`` in [0, 1] (off-diagonal > 0): the margin
        by which a candidate must trail the gold tag.  'ptb': the Penn Treebank table with
        the confusable pairs near; 'ptb-paper': the same groups with the confusable pairs
        far, as the paper describes its matrix; 'uniform': 1 for every pair; 'auto': 'ptb'
        for Penn Treebank tags, 'uniform' otherwise.  An array follows the training
        corpus' tag vocabulary ``corpus.tags`` (see the module documentation).
    eta : float > 0 or sequence of floats > 0, default 0.5
        PSL learning rate; a sequence is a grid searched on the ``dev`` corpus of
        :meth:`fit` (without one, its first value is used).
    n_iter : int >= 1, default 10
        Epochs (passes over all samples); with ``dev`` the best epoch is kept.
    window : int >= 1, default 2
        Words (and, with ``two_stage``, predicted tags) on each side in the features.
    two_stage : bool, default False
        The "+POS" variant: a first model's predicted tags (jackknifed on the training
        data) add tag n-gram features to a second model.
    average : bool, default True
        Keep each cluster's weights averaged over its steps (False: the final weights, the
        paper's Table 1 output).
    rare_threshold : int >= 1, default 5
        Words seen at most this often in training train the unknown-word clusters.
    min_environment : int >= 1, default 30
        Rare-word tokens an environment ``(w_{j-1}, *, w_{j+1})`` needs to be a cluster.
    decoder : {'viterbi', 'token'}, default 'viterbi'
        :meth:`tag` decodes with the HMM transitions ('viterbi', as :meth:`nbest`) or takes
        every token's best candidate on its own ('token', the paper's classifier).
    random_state : int, numpy Generator, RandomState or None, default 0
        Seeds the sample order of every epoch.
    partitioned_fit : {"gather", "mixing"}, default "gather"
        How :meth:`fit` trains on a :class:`~sparsecca.distributed.PartitionedCorpus`
        (an in-memory corpus ignores it).  ``"gather"``: the corpus is gathered on the driver
        and trained on there.  ``"mixing"``: iterative parameter mixing (McDonald, Hall and
        Mann 2010).  The tables (vocabularies, clusters, transitions, feature ids) come from
        per-partition counts and keys merged by tree reduces (they equal those of the corpus
        gathered); each partition's PSL samples are built and kept on its worker.  Each
        epoch, every partition runs one PSL epoch over its own samples from the mixed
        weights, visiting them in the order of the epoch's permutation of all samples (as
        drawn in memory), and the driver mixes the partitions' final weights.  The averaged
        weights of a cluster are the mean of every weight block it held after one of its
        samples, over the partitions and the epochs so far; with one partition the fit is
        the in-memory fit, weight for weight.  With ``two_stage``, the first pass's jackknife
        folds are fitted on the workers (each fold's training sentences on one worker).
    mixing_weights : {"uniform", "updates"}, default "uniform"
        With ``partitioned_fit="mixing"``, each partition's share of the mixed weights:
        equal for every partition that has a sample (``"uniform"``), or its number of
        updates in the epoch (``"updates"``, the paper's error-weighted mixing; an epoch
        without updates keeps the weights).

    Attributes
    ----------
    tags_ : Vocabulary
        Tags seen in training (ids ``0..n_tags-1``; BOS ``n_tags``, EOS ``n_tags + 1``).
    words_ : Vocabulary
        Word types seen in training; cluster ``i < n_words`` is word ``i``'s.
    distance_ : float64 array, shape (n_tags, n_tags)
    n_clusters_ : int
        Word clusters, then environment clusters, then the rare-word cluster.
    cl_indptr_, cl_tags_ : int arrays, shapes (n_clusters + 1,), (n_cand,)
        Candidate tags of every cluster, CSR.
    feat_indptr_, feat_ids_ : int arrays, shapes (n_clusters + 1,), (n_rows,)
        Global feature ids of every cluster's weight rows, CSR, increasing in a cluster.
    woff_ : int64 array, shape (n_clusters + 1,)
        Start of every cluster's ``n_rows_c x C_c`` weight block in ``weights_``.
    weights_ : float64 array, shape (n_weights,)
    env_keys_ : int64 array, shape (n_environments,)
        Sorted environment keys; environment ``e`` is cluster ``n_words + e``.
    eta_ : float
        The learning rate in use (chosen on dev from a grid).
    best_epoch_ : int
        Epochs behind the weights.
    beta_ : float
        Inverse temperature of the k-best emissions (chosen on dev; 4.0 without dev).
    dev_scores_ : list of float
        Dev token accuracy after every epoch of the kept learning rate (empty without dev).
    first_ : MMSTagger or None
        The first pass of the two-stage model.

    Notes
    -----
    PSL with ``distance='uniform'`` is Collins' multi-class perceptron with a margin of 1:
    its steps are those of the mistake-driven perceptron (weights scaled by ``eta``) as soon
    as ``eta`` exceeds 1 over the smallest positive margin the data can produce.

    Gold tags outside ``tags_`` at test time count as errors in :meth:`score` and
    :meth:`nbest` (no candidate can produce them); when more than half of the gold tokens
    are outside, a TagsetMismatchError (a ValueError) says the corpus was read from another
    tag column.

    References
    ----------
    Y. Ni, C. Saunders, S. Szedmak and M. Niranjan (2010).  The application of structured
    learning in natural language processing.  Machine Translation 24(2), pp. 71-85.

    M. Collins (2002).  Discriminative training methods for hidden Markov models: theory and
    experiments with perceptron algorithms.  EMNLP.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.tagging import MMSTagger
    >>> corpus = synthetic_corpus(300, random_state=0)
    >>> train, test = corpus[:250], corpus[250:]
    >>> model = MMSTagger(n_iter=5).fit(train)
    >>> model.score(test) > 0.8
    True
    >>> nb = model.nbest(test, k=5)
    >>> nb.oracle_accuracy() >= nb.top1_accuracy()
    True

    Trained by parameter mixing over two partitions (on the active Dask scheduler):

    >>> from sparsecca.distributed import PartitionedCorpus
    >>> parts = PartitionedCorpus.from_corpus(train, 2)
    >>> mixed = MMSTagger(n_iter=5, partitioned_fit="mixing").fit(parts)
    >>> mixed.score(test) > 0.8
    True
    """

    def __init__(self, distance="auto", eta=0.5, n_iter: int = 10, window: int = 2,
                 two_stage: bool = False, average: bool = True, rare_threshold: int = 5,
                 min_environment: int = 30, decoder: str = "viterbi", random_state=0,
                 partitioned_fit: str = "gather", mixing_weights: str = "uniform"):
        self.distance = distance
        self.eta = eta
        self.n_iter = n_iter
        self.window = window
        self.two_stage = two_stage
        self.average = average
        self.rare_threshold = rare_threshold
        self.min_environment = min_environment
        self.decoder = decoder
        self.random_state = random_state
        self.partitioned_fit = partitioned_fit
        self.mixing_weights = mixing_weights

    # ------------------------------------------------------------------ validation
    def _validate_params(self):
        _check_distance_param(self.distance)
        _check_eta(self.eta)
        check_int("n_iter", self.n_iter, 1)
        check_int("window", self.window, 1)
        check_bool("two_stage", self.two_stage)
        check_bool("average", self.average)
        check_int("rare_threshold", self.rare_threshold, 1)
        check_int("min_environment", self.min_environment, 1)
        if self.decoder not in ("viterbi", "token"):
            raise ValueError(f"decoder must be 'viterbi' or 'token', got {self.decoder!r}")
        check_partitioned_fit(self)

    def _persist_params(self):
        params = self.get_params()
        if isinstance(params["distance"], np.ndarray):  # JSON holds a list of rows
            params["distance"] = params["distance"].tolist()
        return to_json(params, "params")["__dict__"]

    def _check_fitted(self):
        if not hasattr(self, "tags_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call "
                                 "fit(corpus) before tag or nbest")

    # ------------------------------------------------------------------ training
    def fit(self, corpus, y=None, dev: TaggedCorpus | None = None):
        """Train on a tagged corpus.

        Parameters
        ----------
        corpus : TaggedCorpus or sparsecca.distributed.PartitionedCorpus
            Training sentences with tags; at least one token.  A partitioned corpus is
            gathered on the driver and trained on there, or with
            ``partitioned_fit="mixing"`` trained partition by partition where the
            partitions live (see that parameter).
        y : None
            Ignored (scikit-learn convention).
        dev : TaggedCorpus, optional
            Tagged sentences that choose the learning rate (from the ``eta`` grid), the
            epoch and the k-best temperature by token accuracy.  In memory on the driver,
            also with ``partitioned_fit="mixing"``.

        Returns
        -------
        self
        """
        self._validate_params()
        if not (is_partitioned(corpus) and self.partitioned_fit == "mixing"):
            corpus = _check_corpus("corpus", gathered(corpus), need_tags=True)
            if corpus.n_tokens == 0:
                raise ValueError("corpus must contain at least one token, got an empty corpus")
        if dev is not None:
            dev = _check_corpus("dev", dev, need_tags=True)
        rng = check_random_state(self.random_state)
        new = copy.copy(self)  # a failed refit leaves the previous fit intact
        new._fit(corpus, dev, rng)
        vars(self).update(vars(new))
        return self

    def _stage_one(self):
        params = self.get_params()
        params["two_stage"] = False
        return type(self)(**params)

    def _fit(self, corpus, dev, rng):
        pred_dev = None
        self.first_ = None
        if is_partitioned(corpus):  # partitioned_fit="mixing": tables fitted, epochs to run
            train = corpus._mms_mixing(self)
        else:
            pred_train = self._jackknife_tags(corpus, rng) if self.two_stage else None
            train = functools.partial(self._psl_train,
                                      self._training_samples(corpus, pred_train))
        if self.two_stage:
            self.first_ = self._stage_one().fit(corpus, dev=dev)
            if dev is not None:
                pred_dev = self.first_._predict(dev)
        dev_data = None
        if dev is not None:
            dev_data = self._prepare(dev, pred_dev)
            dev_gold = dev.tags.mapping_to(self.tags_)[dev.tag_ids]
        etas = _check_eta(self.eta)
        if dev is None:
            etas = etas[:1]
        best = None
        for eta in etas:
            if dev is None:
                best = (0.0, eta, int(self.n_iter), train(eta, int(self.n_iter), rng), [])
                continue
            scores = []

            def on_epoch(e, weights, eta=eta, scores=scores):
                nonlocal best
                self.weights_ = weights
                acc = float(np.mean(self._token_best(dev_data) == dev_gold)) \
                    if dev.n_tokens else 0.0
                scores.append(acc)
                if best is None or acc > best[0]:
                    best = (acc, eta, e, weights, scores)

            train(eta, int(self.n_iter), rng, on_epoch)
        _, self.eta_, self.best_epoch_, self.weights_, self.dev_scores_ = best
        self.dev_scores_ = list(self.dev_scores_)
        self.beta_ = _BETA_NO_DEV
        if dev is not None and dev.n_tokens:
            self.beta_ = self._choose_beta(dev, dev_data, dev_gold)

    def _training_samples(self, corpus, pred_train=None):
        """Fit the tables (vocabularies, clusters, transitions, feature ids, distances) and
        return the PSL samples ``(XS, s_cl, gold_pos, x_local)`` of the clusters with two
        candidates or more: feature rows (CSR), cluster, gold candidate position, local
        feature row of every stored value.  The steps are those of a partitioned corpus
        (``sparsecca.distributed._mms``) with one partition."""
        self._fit_vocabularies(HMMCounts.of_corpus(corpus))
        self.distance_ = self._distance_for(corpus.tags)
        lower_ids, keys = self._token_keys(corpus, pred_train)
        self._set_environments(*self._rare_environments(corpus, lower_ids))
        self.feature_keys_ = self._feature_key_set(keys)
        s_tok, s_cl = self._samples(corpus, lower_ids)
        self._set_clusters(self._cluster_pairs(corpus, s_tok, s_cl))
        rows = self._sample_rows(corpus, keys, s_tok, s_cl)
        del keys
        pairs = self._block_pairs(rows[0], rows[1])
        self._set_blocks(pairs)
        return self._psl_samples(rows, pairs)

    def _psl_train(self, samples, eta, n_iter, rng, on_epoch=None):
        """``n_iter`` PSL epochs from zero weights, each over the samples in a fresh random
        order; ``on_epoch(e, weights)`` sees the weights (averaged with ``average``) after
        every epoch.  Returns the final ones."""
        XS, s_cl, gold_pos, x_local = samples
        w = np.zeros(int(self.woff_[-1]))
        u = np.zeros_like(w)
        counts = np.zeros(self.n_clusters_, dtype=np.int64)
        weights = w
        args = (s_cl, gold_pos, XS.indptr.astype(np.int64), x_local, XS.data,
                self.cl_indptr_, self.cl_tags_, self.woff_, self.distance_)
        for e in range(1, n_iter + 1):
            order = rng.permutation(s_cl.size)
            # the first epoch validates the samples; the later ones reuse the same arrays
            psl_epoch(order, *args, eta, w, u, counts, check=e == 1)
            if on_epoch is not None or e == n_iter:
                weights = psl_average(w, u, self.woff_, counts) if self.average else w.copy()
            if on_epoch is not None:
                on_epoch(e, weights)
        return weights

    @staticmethod
    def _pos_folds(n):
        """The first-pass fold of each of ``n`` training sentences."""
        return np.arange(n) % min(_POS_FOLDS, max(n, 1))

    def _jackknife_tags(self, corpus, rng):
        """First-pass tags of the training tokens, each fold tagged by a model without it."""
        fold = self._pos_folds(corpus.n_sentences)
        out = np.zeros(corpus.n_tokens, dtype=np.int64)
        tags = Vocabulary(sorted(set(corpus.tags[i] for i in np.unique(corpus.tag_ids))))
        for f in np.unique(fold):
            held = np.flatnonzero(fold == f)
            rest = np.flatnonzero(fold != f)
            part = corpus[held]
            if rest.size == 0:
                continue
            m = self._stage_one().fit(corpus[rest])
            pred = m.tags_.mapping_to(tags)[m._predict(part)]
            toks = np.concatenate([np.arange(corpus.offsets[i], corpus.offsets[i + 1])
                                   for i in held])
            out[toks] = pred
        # ids in the tag order the fitted model will use (sorted by corpus tag id)
        used = np.unique(corpus.tag_ids)
        final = Vocabulary([corpus.tags[i] for i in used])
        return tags.mapping_to(final)[out]

    def candidate_scores(self, corpus: TaggedCorpus):
        """Every candidate tag of every token with its cluster's score.

        Parameters
        ----------
        corpus : TaggedCorpus
            Sentences to score (gold tags are ignored).

        Returns
        -------
        cand_offsets : int64 array, shape (n_tokens + 1,)
            Token ``j``'s candidates are ``cand_offsets[j]:cand_offsets[j + 1]``.
        cand_tags : int64 array, shape (n_cand,)
            Tag ids in ``tags_``.
        scores : float64 array, shape (n_cand,)
            ``x_j @ W_c[:, k]`` (0 for the only candidate of a single-tag word).
        unknown : bool array, shape (n_tokens,)
            Tokens whose word was not seen in training.

        Examples
        --------
        >>> from sparsecca.data import synthetic_corpus
        >>> from sparsecca.tagging import MMSTagger
        >>> corpus = synthetic_corpus(300, random_state=0)
        >>> model = MMSTagger(n_iter=2).fit(corpus[:250])
        >>> offsets, tags, scores, unknown = model.candidate_scores(corpus[250:])
        >>> offsets[-1] == tags.size == scores.size
        True
        """
        self._check_fitted()
        corpus = _check_corpus("corpus", corpus, need_tags=False)
        cluster, unknown, X = self._prepare(corpus)
        offsets, tags, scores = self._scores((cluster, unknown, X))
        return offsets, tags, scores, unknown

    def _scores(self, prepared):
        cluster, _, X = prepared
        pos, offsets = _csr_rows(self.cl_indptr_, cluster)
        s = cluster_scores(cluster, X.indptr, X.indices, X.data, self.cl_indptr_,
                           self.feat_indptr_, self.feat_ids_, self.woff_, self.weights_)
        return offsets, self.cl_tags_[pos], s

    def _token_best(self, prepared):
        offsets, tags, s = self._scores(prepared)
        # the first best candidate of each token
        return tags[segment_first_max(offsets, s)]

    def _emissions(self, offsets, tags, s):
        n = offsets.size - 1
        tok = np.repeat(np.arange(n), np.diff(offsets))
        z = self.beta_ * s
        mx = np.full(n, -np.inf)
        np.maximum.at(mx, tok, z)
        lse = mx + np.log(np.bincount(tok, weights=np.exp(z - mx[tok]), minlength=n))
        return z - lse[tok] - np.log(self.tag_prior_[tags])

    def _viterbi(self, corpus, prepared, k):
        offsets, tags, s = self._scores(prepared)
        T = len(self.tags_)
        return kbest_viterbi(corpus.offsets, offsets, tags, self._emissions(offsets, tags, s),
                             T + 2, self.bigram_logp_, self.context_adj_, self.tri_indptr_,
                             self.tri_tags_, self.tri_logp_, T, T + 1, k=k)

    def _choose_beta(self, dev, dev_data, gold):
        best = None
        for beta in _BETA_GRID:
            self.beta_ = beta
            pred = self._viterbi(dev, dev_data, 1)[0]
            acc = float(np.mean(pred == gold))
            if best is None or acc > best[0]:
                best = (acc, beta)
        return best[1]

    def _predict(self, corpus):
        prepared = self._prepare(corpus)
        if self.decoder == "token":
            return self._token_best(prepared)
        return self._viterbi(corpus, prepared, 1)[0].astype(np.int64)

    def _best_tags(self, corpus):
        return self._predict(corpus)

    def _decode(self, corpus, k):
        prepared = self._prepare(corpus)
        return self._viterbi(corpus, prepared, k), prepared[1]

    def score(self, corpus: TaggedCorpus, tokens: str = "all") -> float:
        """Token accuracy of :meth:`tag` on a tagged corpus.

        Parameters
        ----------
        corpus : TaggedCorpus
            Tagged sentences (gold tags outside ``tags_`` count as errors).
        tokens : {'all', 'known', 'unknown'}, default 'all'
            Score every token, or only those whose word was (not) seen in training.

        Returns
        -------
        float
            NaN for an empty subset.
        """
        self._check_fitted()
        corpus = _check_corpus("corpus", corpus, need_tags=True)
        if tokens not in ("all", "known", "unknown"):
            raise ValueError(f"tokens must be 'all', 'known' or 'unknown', got {tokens!r}")
        gold = check_tagset(corpus.tag_ids, corpus.tags, self.tags_, what="corpus gold tags",
                            fitted_what=f"the tagset of this {type(self).__name__}"
                            )[corpus.tag_ids]
        pred = self._predict(corpus)
        ok = pred == gold
        if tokens != "all":
            unknown = self._route(corpus)[1]
            ok = ok[unknown if tokens == "unknown" else ~unknown]
        return float(np.mean(ok)) if ok.size else float("nan")

    # ------------------------------------------------------------------ persistence
    _ARRAYS = ("word_counts", "tag_prior", "distance", "cl_indptr", "cl_tags", "feat_indptr",
               "feat_ids", "woff", "weights", "env_keys", "feature_keys", "bigram_logp",
               "context_adj", "tri_indptr", "tri_tags", "tri_logp")

    def _get_state(self):
        self._check_fitted()
        arrays = {}
        for name in ("tags", "words", "lower", "suffixes"):
            arrays.update(pack_strings(name, getattr(self, name + "_").items))
        for name in self._ARRAYS:
            arrays[name] = np.asarray(getattr(self, name + "_"))
        extra = {"eta": self.eta_, "best_epoch": self.best_epoch_, "beta": self.beta_,
                 "dev_scores": list(self.dev_scores_), "has_first": self.first_ is not None}
        if self.first_ is not None:
            put_child(arrays, extra, "first", self.first_)
        return self._persist_params(), arrays, extra

    def _set_state(self, arrays, extra):
        """Restore a saved model, checking every array the kernels index with."""
        self._validate_params()
        tags, words = saved_vocabularies(arrays)
        T, V = len(tags), len(words)
        S = T + 2

        def arr(name, kind, **kw):
            return state_array(arrays, name, kind, **kw)

        cl_indptr = arr("cl_indptr", "int")
        n_cl = cl_indptr.size - 1
        if n_cl < V + 1:
            raise ModelFormatError(f"array 'cl_indptr' must have at least {V + 2} entries")
        cl_tags = check_index("cl_tags", arr("cl_tags", "int"), T)
        check_offsets("cl_indptr", cl_indptr, cl_tags.size, n_cl)
        feature_keys = arr("feature_keys", "int")
        if feature_keys.size > 1 and np.any(np.diff(feature_keys) <= 0):
            raise ModelFormatError("array 'feature_keys' must be strictly increasing")
        feat_ids = check_index("feat_ids", arr("feat_ids", "int"), max(feature_keys.size, 1))
        feat_indptr = check_offsets("feat_indptr", arr("feat_indptr", "int"), feat_ids.size,
                                    n_cl)
        weights = arr("weights", "float")
        woff = check_offsets("woff", arr("woff", "int"), weights.size, n_cl)
        if np.any(np.diff(woff) != np.diff(feat_indptr) * np.diff(cl_indptr)):
            raise ModelFormatError("array 'woff' must give every cluster a block of "
                                   "n_rows * n_candidates weights")
        env_keys = arr("env_keys", "int")
        if env_keys.size != n_cl - V - 1:
            raise ModelFormatError(f"array 'env_keys' must have {n_cl - V - 1} entries")
        D = arr("distance", "float", ndim=2, shape=(T, T))
        if np.any(D < 0) or np.any(D > 1):
            raise ModelFormatError("array 'distance' must lie in [0, 1]")
        prior = arr("tag_prior", "float", shape=(T,))
        if np.any(prior <= 0):
            raise ModelFormatError("array 'tag_prior' must be > 0")
        tri_tags = check_index("tri_tags", arr("tri_tags", "int"), S)
        tri_indptr = check_offsets("tri_indptr", arr("tri_indptr", "int"), tri_tags.size,
                                   S * S)
        self.tags_, self.words_ = tags, words
        self.lower_ = Vocabulary(unpack_strings(arrays, "lower"))
        self.suffixes_ = Vocabulary(unpack_strings(arrays, "suffixes"))
        self.word_counts_ = arr("word_counts", "int", shape=(V,))
        self.tag_prior_, self.distance_ = prior, D
        self.cl_indptr_, self.cl_tags_, self.n_clusters_ = cl_indptr, cl_tags, n_cl
        self.feat_indptr_, self.feat_ids_, self.woff_, self.weights_ = (feat_indptr, feat_ids,
                                                                        woff, weights)
        self.env_keys_, self.feature_keys_ = env_keys, feature_keys
        self.bigram_logp_ = arr("bigram_logp", "float", ndim=2, shape=(S, S), allow_inf="-")
        self.context_adj_ = arr("context_adj", "float", ndim=2, shape=(S, S))
        self.tri_indptr_, self.tri_tags_ = tri_indptr, tri_tags
        self.tri_logp_ = arr("tri_logp", "float", shape=tri_tags.shape, allow_inf="-")
        self.eta_ = state_value(extra, "eta", float, low=0.0)
        self.best_epoch_ = state_value(extra, "best_epoch", int, low=1)
        self.beta_ = state_value(extra, "beta", float, low=0.0)
        self.dev_scores_ = state_value(extra, "dev_scores", list)
        has_first = state_value(extra, "has_first", bool)
        if has_first != bool(self.two_stage):
            raise ModelFormatError("a two-stage model needs its first pass (and only it)")
        self.first_ = get_child(arrays, extra, "first", allowed=(MMSTagger,)) \
            if has_first else None
        if self.first_ is not None and self.first_.tags_ != tags:
            raise ModelFormatError("the first pass has another tagset")
