"""The hidden-variable reranker of Koo & Collins (2005) on n-best tag sequences.

Every token of a candidate carries a hidden value in ``{0, ..., n_hidden - 1}``; features
count substructures of the candidate *and* a global hidden assignment, and the assignment
is summed out exactly by forward-backward on the chain of adjacent tokens
(:mod:`sparsecca.kernels`).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

from .._params import (
    ParamsMixin,
    check_float,
    check_int,
    check_partitioned_fit,
    check_random_state,
)
from .._persist import ModelFormatError, PersistMixin, pack_strings, state_array, unpack_strings
from ..data import Vocabulary
from ..kernels import hidden_scores, hidden_sgd_epoch
from ..tagging import NBestList
from ._base import (
    MAX_WIDEN,
    BaseReranker,
    check_dev_list,
    check_fit_lists,
    check_nbest,
    is_partitioned,
    losses_of_choice,
    path_edge,
    search_grid,
)
from ._joint_features import candidate_word_ids, check_grid, check_lengths

__all__ = ["HiddenVariableReranker"]

_DOMAINS = ("tag-split", "word-cluster")


def _suffix_ids(words, lengths, index):
    """Per word type of ``words`` and suffix length, the id of its suffix in ``index`` (a
    dict ``(length, suffix) -> id``; -1 absent, or a word shorter than the length)."""
    out = np.full((len(lengths), len(words)), -1, dtype=np.int64)
    for a, n in enumerate(lengths):
        out[a] = [index.get((n, w[-n:]), -1) if len(w) >= n else -1 for w in words]
    return out


def _lookup(keys, codes, valid):
    """Row of each code in the sorted ``keys`` (-1 where absent or not ``valid``)."""
    pos = np.searchsorted(keys, codes)
    pos = np.minimum(pos, max(keys.size - 1, 0))
    hit = valid & (keys.size > 0)
    if keys.size:
        hit &= keys[pos] == codes
    return np.where(hit, pos, -1).astype(np.int32)


class HiddenVariableReranker(PersistMixin, ParamsMixin, BaseReranker):
    """Hidden-variable log-linear reranker (Koo & Collins 2005) with forward-backward.

    Every token w of a candidate t of sentence s gets a hidden value h_w in
    ``{0, ..., n_hidden - 1}``, and

        ``p(t, h | s) ∝ exp(b L(t) + sum_w theta . phi(t, w, h_w)
        + sum_w theta . phi(t, w - 1, w, h_{w-1}, h_w))``,

    L the decoder log-score with its own weight b.  The candidate's probability
    ``p(t | s) = sum_h p(t, h | s)`` sums over every hidden assignment exactly, by
    forward-backward on the chain of adjacent tokens
    (:func:`sparsecca.kernels.hidden_scores`); candidates are ranked by it.

    Feature templates, each conjoined with the hidden value(s):

    * single-token: word x tag, suffix x tag (each length of ``lengths``), tag x anchor;
    * pairwise: tag pair x anchor pair, on adjacent tokens.

    The anchor says what a hidden value refines.  ``hidden_domain="tag-split"``: nothing
    else, h refines the candidate's tag (NN_0, NN_1, ...).  ``"word-cluster"``: the
    word's cluster, h refines a class of words (a sense-like value shared by the words of a
    cluster); the cluster of a word is its most frequent gold tag in the training corpus
    (an extra cluster for words without one), a clustering that needs no resource beyond
    the training data and puts words of one syntactic behaviour together.

    Training minimises the negative log-likelihood of each training sentence's best
    candidates (Eq. 3 of the paper; the candidates of lowest Hamming loss, usually one),
    whose gradient is the expected feature vector under ``p(t, h | s)`` minus that under
    ``p(t, h | s, t best)``: node and edge marginals of forward-backward.  The optimiser is
    AdaGrad on one sentence at a time, in a fresh random order every epoch
    (:func:`sparsecca.kernels.hidden_sgd_epoch`).  b starts at the decoder-only maximum
    likelihood value (a 1-d convex problem) and the other weights at random (normal, scale
    ``init_scale``; all-zero weights are a saddle of this non-convex objective), or at 0
    when ``n_hidden=1``, where the model is a plain log-linear reranker.

    The learning rate and the number of epochs are tuned on dev: every learning rate of
    ``lr`` is trained for the first ``n_epochs // 4`` epochs (at least one) and the one
    with the best dev accuracy is trained on to ``n_epochs``; the epoch with the best dev
    accuracy is kept.  A best learning rate on an edge of ``lr`` is followed by up to
    ``widen`` more values past it, and a best epoch at the last one by up to ``widen`` more
    runs of ``n_epochs`` epochs (``grid_edges_`` lists what stayed on an edge).

    Parameters
    ----------
    n_hidden : int >= 1, default 2
        Hidden values per token (H).  Training is linear in the tokens and quadratic in H.
    hidden_domain : {"tag-split", "word-cluster"}, default "tag-split"
    lr : float > 0 or sequence of float > 0, default (0.1, 0.2, 0.4)
        AdaGrad learning rates tried on dev (ties: the earlier value).
    n_epochs : int >= 1, default 4
        Epochs of the chosen learning rate (more when the best is the last, see above);
        the others run a quarter of them (at least one).
    l2 : float >= 0, default 0.0
        L2 penalty ``l2 / 2 ||theta||^2`` (the decoder weight excepted), applied lazily.
    init_scale : float >= 0, default 0.1
        Standard deviation of the random initial weights (n_hidden > 1).
    lengths : int or sequence of int >= 1, default (2, 3, 4)
        Suffix lengths of the suffix x tag template.
    widen : int >= 0, default 2
        How far dev tuning may go past an edge of the lr grid or of the epochs.
    random_state : int, numpy Generator, RandomState or None, default None
        Seeds the initial weights and the visiting orders (the same for every lr).
    partitioned_fit : {"gather", "mixing"}, default "gather"
        How :meth:`fit` trains on a :class:`~sparsecca.distributed.PartitionedNBest` (an
        in-memory list ignores it).  ``"gather"``: the lists are gathered on the driver and
        trained on there.  ``"mixing"``: iterative parameter mixing (McDonald, Hall and Mann
        2010): the vocabularies, word clusters and feature rows come from counts and codes
        reduced over the partitions (equal to those of the lists gathered); each SGD epoch,
        every partition runs the same kernel over its own sentences on its worker (its
        arrays stay there), from the mixed weights and AdaGrad sums, visiting them in the
        order of the epoch's permutation of the whole list, and the driver mixes both.
        The decoder weight's start, the learning-rate probe and the dev selection run on
        the driver as in memory.  With one partition the fit is the in-memory fit.
    mixing_weights : {"uniform", "updates"}, default "uniform"
        With ``partitioned_fit="mixing"``, each partition's share of the mixed weights:
        equal for every partition with a sentence, or (``"updates"``) its training loss in
        the epoch (the negative log-likelihood of its sentences' best candidates before
        each update: every sentence updates the weights, by a step that grows with it).

    Attributes
    ----------
    coef_ : float64 array, shape (1 + n_node_ * H + n_edge_ * H * H,)
        ``coef_[0]`` is b; then the node weights (row f, hidden value h at ``1 + f H + h``)
        and the edge weights (row e, values (u, v) at ``1 + n_node_ H + e H^2 + u H + v``).
    decoder_weight_ : float
    n_node_, n_edge_ : int
        Node and edge feature rows.
    lr_ : float
    n_epochs_ : int
        The learning rate and the epochs kept (tuned on dev).
    dev_accuracy_ : dict or None
        lr -> dev accuracy after each epoch it ran (a quarter of ``n_epochs``, at least
        one, for every learning rate but the one chosen).
    train_loss_ : dict
        lr -> training loss of each epoch (summed over the sentences, before each update).
    grid_edges_ : list of dict
        The tuned values that stayed on an edge of what was tried (empty: none).

    References
    ----------
    T. Koo and M. Collins (2005).  Hidden-variable models for discriminative reranking.
    Proceedings of HLT/EMNLP 2005, pp. 507-514.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> from sparsecca.tagging import TrigramHMM, jackknife_nbest
    >>> train, dev = train_test_split(synthetic_corpus(200, random_state=0), test_size=50,
    ...                               random_state=0)
    >>> train_nbest = jackknife_nbest(TrigramHMM(), train, k=5, folds=2)
    >>> dev_nbest = TrigramHMM().fit(train).nbest(dev, k=5)
    >>> from sparsecca.rerank import HiddenVariableReranker
    >>> reranker = HiddenVariableReranker(n_hidden=2, lr=0.1, n_epochs=2, random_state=0)
    >>> reranker = reranker.fit(train_nbest, dev_nbest)
    >>> reranker.lr_, 1 <= reranker.n_epochs_
    (0.1, True)
    >>> reranker.coef_.size == 1 + 2 * reranker.n_node_ + 4 * reranker.n_edge_
    True
    >>> bool(0.5 < reranker.score(dev_nbest) <= 1.0)
    True

    Trained by parameter mixing over two partitions (on the active Dask scheduler):

    >>> from sparsecca.distributed import PartitionedNBest
    >>> parts = PartitionedNBest.from_nbest(train_nbest, 2)
    >>> mixed = HiddenVariableReranker(n_hidden=2, lr=0.1, n_epochs=2, random_state=0,
    ...                                partitioned_fit="mixing").fit(parts, dev_nbest)
    >>> bool((mixed.node_keys_ == reranker.node_keys_).all())
    True
    >>> bool(0.5 < mixed.score(dev_nbest) <= 1.0)
    True
    """

    def __init__(self, n_hidden=2, hidden_domain="tag-split", lr=(0.1, 0.2, 0.4), n_epochs=4,
                 l2=0.0, init_scale=0.1, lengths=(2, 3, 4), widen=MAX_WIDEN,
                 random_state=None, partitioned_fit="gather", mixing_weights="uniform"):
        self.n_hidden = n_hidden
        self.hidden_domain = hidden_domain
        self.lr = lr
        self.n_epochs = n_epochs
        self.l2 = l2
        self.init_scale = init_scale
        self.lengths = lengths
        self.widen = widen
        self.random_state = random_state
        self.partitioned_fit = partitioned_fit
        self.mixing_weights = mixing_weights

    # -- validation --------------------------------------------------------------------------
    def _validate(self):
        H = check_int("n_hidden", self.n_hidden, 1)
        if not isinstance(self.hidden_domain, str) or self.hidden_domain not in _DOMAINS:
            raise ValueError(f"hidden_domain must be one of {_DOMAINS}, got "
                             f"{self.hidden_domain!r}")
        lrs = check_grid("lr", self.lr, 0.0, strict=True)
        n_epochs = check_int("n_epochs", self.n_epochs, 1)
        l2 = check_float("l2", self.l2, 0.0, strict=False)
        init_scale = check_float("init_scale", self.init_scale, 0.0, strict=False)
        lengths = check_lengths(self.lengths)
        widen = check_int("widen", self.widen, 0)
        check_partitioned_fit(self)
        return H, lrs, n_epochs, l2, init_scale, lengths, widen

    # -- features ------------------------------------------------------------------------------
    def _fit_vocabularies(self, train: NBestList, lengths):
        clusters = None
        if self.hidden_domain == "word-cluster":
            c = train.corpus
            gold = c.tags.mapping_to(train.tags)[c.tag_ids]
            clusters = np.zeros((len(c.words), len(train.tags)), dtype=np.int64)
            np.add.at(clusters, (c.word_ids, gold), 1)
        self._set_vocabularies(list(train.tags.items), list(train.corpus.words.items),
                               lengths, clusters)

    def _set_vocabularies(self, tags, words, lengths, counts):
        """Fit the tags, words, suffixes and word clusters (from the word x gold tag
        ``counts``; None for ``"tag-split"``) and build the indexes."""
        self.tags_, self.words_ = tags, words
        self.suffixes_ = sorted({w[-n:] for w in words for n in lengths if len(w) >= n},
                                key=lambda s: (len(s), s))
        if counts is not None:
            clusters = np.argmax(counts, axis=1)
            clusters[counts.sum(axis=1) == 0] = len(tags)
            self.word_clusters_ = clusters.astype(np.int64)
        else:
            self.word_clusters_ = np.zeros(len(words), dtype=np.int64)
        self._build_indexes()

    def _build_indexes(self):
        lengths = tuple(self.lengths)
        self._tag_vocab = Vocabulary(self.tags_)
        self._word_vocab = Vocabulary(self.words_)
        self._suffix_index = {(len(s), s): i for i, s in enumerate(self.suffixes_)
                              if len(s) in lengths}
        self._n_anchor = len(self.tags_) + 1 if self.hidden_domain == "word-cluster" else 1

    def _codes(self, nbest: NBestList):
        """Node codes (n_tokens, n_templates) and edge codes (n_tokens,) of every candidate
        token, with their validity masks."""
        lengths = tuple(self.lengths)
        T, A = len(self.tags_), self._n_anchor
        n_tpl = len(lengths) + 2
        words = nbest.corpus.words
        wmap = words.mapping_to(self._word_vocab)
        smap = _suffix_ids(list(words.items), lengths, self._suffix_index)
        tmap = nbest.tags.mapping_to(self._tag_vocab)
        cw = candidate_word_ids(nbest)
        w = wmap[cw]
        t = tmap[nbest.tag_ids]
        known_t = t >= 0
        anchor = np.where(w >= 0, self.word_clusters_[np.maximum(w, 0)], A - 1) \
            if A > 1 else np.zeros_like(w)
        codes = np.empty((t.size, n_tpl), dtype=np.int64)
        valid = np.empty((t.size, n_tpl), dtype=bool)
        codes[:, 0] = (w * T + t) * n_tpl
        valid[:, 0] = (w >= 0) & known_t
        for a in range(len(lengths)):
            s = smap[a][cw]
            codes[:, 1 + a] = (s * T + t) * n_tpl + 1 + a
            valid[:, 1 + a] = (s >= 0) & known_t
        codes[:, -1] = (t * A + anchor) * n_tpl + n_tpl - 1
        valid[:, -1] = known_t
        first = np.zeros(t.size, dtype=bool)
        first[nbest.cand_offsets[:-1][np.diff(nbest.cand_offsets) > 0]] = True
        tp = np.roll(t, 1)
        ap = np.roll(anchor, 1)
        ecodes = ((tp * T + t) * A + ap) * A + anchor
        evalid = ~first & known_t & (tp >= 0)
        return codes, valid, ecodes, evalid

    def _features(self, nbest: NBestList):
        codes, valid, ecodes, evalid = self._codes(nbest)
        nf = _lookup(self.node_keys_, codes, valid)
        ef = _lookup(self.edge_keys_, ecodes, evalid)
        return nf, ef

    # -- fitting -----------------------------------------------------------------------------
    def fit(self, train: NBestList, dev: NBestList | None = None) -> "HiddenVariableReranker":
        """Train on a (jackknifed) training n-best list; tune lr and the epochs on ``dev``.

        Parameters
        ----------
        train : NBestList with gold tags, or sparsecca.distributed.PartitionedNBest
            Partitioned lists are gathered, or with ``partitioned_fit="mixing"`` trained on
            where they live (see that parameter).
        dev : NBestList with gold tags, optional
            Without it all ``n_epochs`` are kept and ``lr`` must be one value.  Partitioned
            dev lists are gathered.

        Returns
        -------
        self
        """
        H, lrs, n_epochs, l2, init_scale, lengths, widen = self._validate()
        rng = check_random_state(self.random_state)
        name = type(self).__name__
        fixed = "fit without dev and with one lr (all n_epochs are kept)"
        if is_partitioned(train):  # partitioned_fit="mixing": checked where they live
            mixing = train._reranker_mixing(self)
            dev = check_dev_list(dev, mixing.gold_tags, name, "lr", len(lrs), fixed)
            most, n = mixing.max_candidates, mixing.n_sentences
        else:
            train, dev = check_fit_lists(train, dev, name, "lr", len(lrs), fixed)
            most, n = train.n_candidates.max(), train.n_sentences
        if most < 2:
            raise ValueError("train has one candidate per sentence: there is nothing to "
                             "rerank and nothing to learn; decode train with k >= 2")
        if is_partitioned(train):
            trainer, decoder = mixing.hidden(self, lengths, l2,
                                             self.mixing_weights == "updates")
            epoch = trainer.epoch
        else:
            epoch, decoder = self._in_memory(train, lengths, l2)
        n_node, n_edge = int(self.node_keys_.size), int(self.edge_keys_.size)
        b0 = _decoder_weight(*decoder)
        theta0 = np.zeros(1 + n_node * H + n_edge * H * H)
        if H > 1:
            theta0[1:] = init_scale * rng.standard_normal(theta0.size - 1)
        theta0[0] = b0
        max_epochs = n_epochs * (1 + widen)  # the most a widened run reaches
        orders = [rng.permutation(n) for _ in range(max_epochs)]
        dev_feats = self._features(dev) if dev is not None else None
        edges: list = []

        def train(run, upto):
            """Continue ``run`` (a dict: lr, weights, AdaGrad sums, curves, best) to ``upto``
            epochs."""
            for e in range(len(run["losses"]), upto):
                run["losses"].append(float(epoch(run["theta"], run["accum"], orders[e],
                                                 run["lr"])))
                if dev is None:
                    run["best"] = (None, run["theta"].copy(), e + 1)
                    continue
                acc = self._accuracy(dev, dev_feats, run["theta"], H, n_node)
                run["accs"].append(acc)
                if acc > run["best"][0]:
                    run["best"] = (acc, run["theta"].copy(), e + 1)
            return run

        def probe(lr):
            # every learning rate runs the first quarter of the epochs; the best goes on
            run = dict(lr=lr, theta=theta0.copy(), accum=np.zeros_like(theta0), losses=[],
                       accs=[], best=(-np.inf, None, 0))
            run = train(run, n_probe if dev is not None else n_epochs)
            return run["best"][0], run

        n_probe = max(1, n_epochs // 4)
        if dev is None:
            values, results, k = [lrs[0]], [probe(lrs[0])], 0
        else:
            values, results, k = search_grid(probe, lrs, name="lr", scale="log", low=0.0,
                                             widen=widen, edges=edges,
                                             better=lambda a, b: a > b)
        run = results[k][1]
        cap, extra = n_epochs, 0
        while True:
            run = train(run, cap)
            if dev is None or extra >= widen \
                    or not path_edge(run["best"][2], cap, cap, name="n_epochs"):
                break
            # the best epoch is the last: more epochs
            cap, extra = cap + n_epochs, extra + 1
        acc, theta, epochs = run["best"]
        if dev is not None:
            path_edge(epochs, cap, cap, name="n_epochs", edges=edges, widened=extra)
        self.coef_ = theta
        self.decoder_weight_ = float(theta[0])
        self.n_node_, self.n_edge_ = n_node, n_edge
        self.lr_ = float(values[k])
        self.n_epochs_ = int(epochs)
        self.train_loss_ = {repr(v): r[1]["losses"] for v, r in zip(values, results)}
        self.dev_accuracy_ = None if dev is None else \
            {repr(v): r[1]["accs"] for v, r in zip(values, results)}
        self.grid_edges_ = edges
        return self

    def _in_memory(self, train, lengths, l2):
        """Fit the vocabularies and feature rows on an in-memory list; its SGD epoch
        (``epoch(theta, accum, order, lr)``, in place, returning the loss) and the decoder
        weight's inputs."""
        self._fit_vocabularies(train, lengths)
        codes, valid, ecodes, evalid = self._codes(train)
        # the feature rows: every code seen in the training candidates (one sort each)
        self.node_keys_, inv = np.unique(codes[valid], return_inverse=True)
        nf = np.full(codes.shape, -1, dtype=np.int32)
        nf[valid] = inv
        self.edge_keys_, inv = np.unique(ecodes[evalid], return_inverse=True)
        ef = np.full(ecodes.shape, -1, dtype=np.int32)
        ef[evalid] = inv
        per_sent = np.full(train.n_sentences, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(per_sent, train.cand_sentence, train.losses)
        target = train.losses == per_sent[train.cand_sentence]
        args = (nf, ef, train.cand_offsets, train.sent_offsets, train.scores, target,
                int(self.n_hidden), int(self.node_keys_.size))

        def epoch(theta, accum, order, lr):
            return hidden_sgd_epoch(theta, accum, *args, order=order, lr=lr, l2=l2)

        return epoch, (train.scores, train.sent_offsets, target)

    def _accuracy(self, nbest, feats, theta, H, n_node):
        s = hidden_scores(theta, feats[0], feats[1], nbest.cand_offsets, nbest.scores, H,
                          n_node)
        return 1.0 - losses_of_choice(nbest, nbest.argmax(s)) / nbest.corpus.n_tokens

    # -- scoring -----------------------------------------------------------------------------
    def decision_function(self, nbest: NBestList) -> np.ndarray:
        """``log p(t | s)`` of every candidate up to its sentence's normaliser:
        ``decoder_weight_ * score + log sum_h exp(theta . Phi(t, h))``.

        A -inf decoder score (log 0) gives -inf: such a candidate is never chosen unless
        its whole sentence has -inf.

        Returns
        -------
        float64 array, shape (n_candidates,)
        """
        self._check_fitted("coef_")
        nbest = check_nbest(nbest)
        nf, ef = self._features(nbest)
        return hidden_scores(self.coef_, nf, ef, nbest.cand_offsets, nbest.scores,
                             int(self.n_hidden), self.n_node_)

    def tuned_params(self) -> dict:
        """The values chosen on dev (learning rate, epochs) and the decoder weight."""
        self._check_fitted("coef_")
        return {"lr": self.lr_, "n_epochs": self.n_epochs_,
                "decoder_weight": self.decoder_weight_}

    # -- persistence -------------------------------------------------------------------------
    _state_arrays = ("coef_", "node_keys_", "edge_keys_", "word_clusters_")
    _state_values = ("decoder_weight_", "n_node_", "n_edge_", "lr_", "n_epochs_",
                     "grid_edges_", "train_loss_", "dev_accuracy_")

    def _persist_check_fitted(self):
        self._check_fitted("coef_")

    def _get_state(self):
        params, arrays, extra = super()._get_state()
        for name in ("tags_", "words_", "suffixes_"):
            arrays.update(pack_strings(name, getattr(self, name)))
        return params, arrays, extra

    def _set_state(self, arrays, extra):
        super()._set_state(arrays, extra)
        try:
            H, _, _, _, _, lengths, _ = self._validate()
        except (TypeError, ValueError) as exc:
            raise ModelFormatError(str(exc)) from None
        for name in ("tags_", "words_", "suffixes_"):
            setattr(self, name, unpack_strings(arrays, name))
        for name in ("n_node_", "n_edge_"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ModelFormatError(f"{name} must be an int >= 0, got {v!r}")
        size = 1 + self.n_node_ * H + self.n_edge_ * H * H
        a = {k: getattr(self, k) for k in self._state_arrays}
        self.coef_ = state_array(a, "coef_", "float", shape=(size,))
        self.node_keys_ = state_array(a, "node_keys_", "int", shape=(self.n_node_,))
        self.edge_keys_ = state_array(a, "edge_keys_", "int", shape=(self.n_edge_,))
        self.word_clusters_ = state_array(a, "word_clusters_", "int",
                                          shape=(len(self.words_),))
        for name in ("node_keys_", "edge_keys_"):
            k = getattr(self, name)
            if k.size and np.any(np.diff(k) <= 0):
                raise ModelFormatError(f"{name} must be strictly increasing")
        if self.word_clusters_.size and (self.word_clusters_.min() < 0
                                         or self.word_clusters_.max() > len(self.tags_)):
            raise ModelFormatError(f"word_clusters_ must lie in [0, {len(self.tags_)}]")
        if not np.all(np.isfinite(self.coef_)):
            raise ModelFormatError("coef_ must be finite")
        self._build_indexes()


def _decoder_weight(scores, sent_offsets, target, upper=None) -> float:
    """b >= 0 minimising the decoder-only loss ``sum_i -log sum_{j in T_i} softmax(b s_i)_j``
    (convex in b): the starting decoder weight."""
    n = sent_offsets.size - 1
    sent = np.repeat(np.arange(n), np.diff(sent_offsets))
    m = np.diff(sent_offsets)
    n_t = np.bincount(sent, weights=target, minlength=n)
    use = (n_t > 0) & (n_t < m)
    keep = use[sent]
    if not keep.any():
        return 1.0
    s, t, sid = scores[keep], target[keep], sent[keep]
    _, sid = np.unique(sid, return_inverse=True)
    top = np.full(sid.max() + 1, -np.inf)
    np.maximum.at(top, sid, s)
    s = s - top[sid]
    spread = np.abs(s[s != 0])
    if upper is None:
        upper = 100.0 / float(np.median(spread)) if spread.size else 100.0

    def loss(b):
        e = np.exp(b * s)
        all_ = np.bincount(sid, weights=e)
        tgt = np.bincount(sid, weights=e * t)
        with np.errstate(divide="ignore"):
            return float(np.sum(np.log(all_) - np.log(tgt)))

    res = minimize_scalar(loss, bounds=(0.0, upper), method="bounded",
                          options={"xatol": 1e-6 * upper})
    return float(res.x)
