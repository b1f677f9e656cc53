"""Collins' (2002) reranking perceptron with averaged parameters."""

from __future__ import annotations

import numpy as np

from .._params import (
    ParamsMixin,
    check_bool,
    check_int,
    check_partitioned_fit,
    check_random_state,
    check_weight_scale,
)
from ..kernels import perceptron_train
from ..tagging import NBestList
from ._base import (
    BaseReranker,
    check_dev_list,
    check_fit_lists,
    check_nbest,
    decoder_term,
    is_partitioned,
    losses_of_choice,
    path_edge,
    search_grid,
)
from ._joint_features import (
    JointFeatures,
    PersistMixin,
    check_grid,
    check_kind,
    check_lengths,
    oracle_global,
)

__all__ = ["PerceptronReranker"]


class _InMemory:
    """The perceptron's epochs on an in-memory list (``run`` as the mixing's trainer)."""

    def __init__(self, train, H, averaged):
        self.train, self.H, self.averaged = train, H, averaged
        self.oracle = oracle_global(train)

    def run(self, orders, cap, b):
        """The weights after each of the epochs ``orders[:cap]`` of ``b``, and the updates."""
        t = self.train
        return perceptron_train(self.H, t.scores, t.sent_offsets, self.oracle, t.losses,
                                orders[:cap], b, averaged=self.averaged)


class PerceptronReranker(PersistMixin, ParamsMixin, BaseReranker):
    """Perceptron reranker (Collins 2002; Collins & Duffy 2002) with averaged parameters.

    Every candidate gets ``F(x) = b L(x) + w . h(x)``, L the decoder log-score (weight b fixed
    during training) and h the joint feature counts (:class:`JointFeatures`).  For each
    training sentence, in a fresh random order every epoch, the candidate maximising F is
    chosen; when its Hamming loss exceeds that of the oracle (the lowest-loss candidate, ties:
    the earlier one), ``w += h(oracle) - h(chosen)``.  With ``averaged=True`` the model uses the
    average of w over every example seen (the standard approximation of the voted perceptron),
    kept in O(nnz) per update by lazy per-feature timestamps
    (:func:`sparsecca.kernels.perceptron_train`).

    The perceptron is scale-free in w but not in b, so b is a grid searched on dev together
    with the number of epochs (the dev accuracy after every epoch of every b).

    Parameters
    ----------
    features : {"suffix", "ngram"}, default "suffix"
    n_epochs : int >= 1, default 10
        Maximum number of passes.
    averaged : bool, default True
        Averaged weights (False: the last weights).
    decoder_weight : float >= 0 or sequence of float >= 0, default (1, 2, 4, 8, 16, 32, 64)
        Decoder-score weights b to try (ties on dev: the earlier value); b times every train
        and dev score must be finite in float64.
    shuffle : bool, default True
        Visit the sentences in a new random order every epoch (False: corpus order).
    min_count : int >= 1, default 1
        Keep features that discriminate in at least this many training sentences.
    lengths : int or sequence of int, default (2, 3, 4)
    lowercase : bool, default False
    random_state : int, numpy Generator, RandomState or None, default None
        Seeds the visiting orders (the same orders for every b).
    widen : int >= 0, default 0
        A best b on an edge of the grid adds up to this many values past it (one grid step
        each, geometric), and a best epoch at the last one reruns with twice the epochs up
        to this many times.  0 records the edges in ``grid_edges_``.
    partitioned_fit : {"gather", "mixing"}, default "gather"
        How :meth:`fit` trains on a :class:`~sparsecca.distributed.PartitionedNBest` (an
        in-memory list ignores it).  ``"gather"``: the lists are gathered on the driver and
        trained on there.  ``"mixing"``: iterative parameter mixing (McDonald, Hall and Mann
        2010).  The joint features come from counts reduced over the partitions (equal to
        those of the lists gathered, ``min_count`` over the whole list); each epoch, every
        partition runs one epoch of the same kernel over its own sentences on its worker
        (its feature arrays stay there), from the mixed weights, visiting them in the order
        of the epoch's permutation of the whole list; the driver mixes the partitions'
        final weights.  The averaged weights are the mean of every weight vector a
        partition held after one of its sentences, over the partitions and epochs so far.
        Each decoder weight trains this way; dev (gathered if partitioned) tunes them and
        the epochs on the driver.  With one partition the fit is the in-memory fit.
    mixing_weights : {"uniform", "updates"}, default "uniform"
        With ``partitioned_fit="mixing"``, each partition's share of the mixed weights:
        equal for every partition with a sentence, or its number of updates in the epoch
        (``"updates"``, the paper's error-weighted mixing; an epoch without updates keeps
        the weights).

    Attributes
    ----------
    features_ : JointFeatures
    coef_ : float64 array, shape (n_features_,)
        ``coef_[0]`` is b, ``coef_[1:]`` the (averaged) joint feature weights.
    decoder_weight_ : float
    n_epochs_ : int
        Epochs kept (tuned on dev).
    n_updates_ : int64 array, shape (n_epochs,)
        Updates per epoch for the chosen b.
    dev_accuracy_ : float64 array, shape (n_decoder_weights, n_epochs) or None
        Dev accuracy after each epoch of each b tried (rows in ``decoder_weights_tried_``
        order; NaN past the epochs a b ran, when widening ran more for another b).
    decoder_weights_tried_ : list of float or None
        The b values tried on dev, in order (the grid, then any added past its edge).
    grid_edges_ : list of dict
        The tuned values that lie on an edge of what dev tuning tried (``"param"``,
        ``"value"``, ``"side"``, ``"tried"``, ``"widened"``); empty when none does.

    References
    ----------
    M. Collins (2002).  Discriminative training methods for hidden Markov models: theory
    and experiments with perceptron algorithms.  Proceedings of EMNLP 2002, pp. 1-8.

    M. Collins and N. Duffy (2002).  New ranking algorithms for parsing and tagging: kernels
    over discrete structures, and the voted perceptron.  Proceedings of ACL 2002,
    pp. 263-270.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> from sparsecca.tagging import TrigramHMM, jackknife_nbest
    >>> train, dev = train_test_split(synthetic_corpus(200, random_state=0), test_size=50,
    ...                               random_state=0)
    >>> train_nbest = jackknife_nbest(TrigramHMM(), train, k=5, folds=2)
    >>> dev_nbest = TrigramHMM().fit(train).nbest(dev, k=5)
    >>> from sparsecca.rerank import PerceptronReranker
    >>> reranker = PerceptronReranker(n_epochs=3, decoder_weight=(1.0, 4.0), random_state=0)
    >>> reranker = reranker.fit(train_nbest, dev_nbest)
    >>> reranker.dev_accuracy_.shape, reranker.decoder_weight_ in (1.0, 4.0)
    ((2, 3), True)
    >>> 1 <= reranker.n_epochs_ <= 3, reranker.n_updates_.shape
    (True, (3,))
    >>> bool(0.5 < reranker.score(dev_nbest) <= 1.0)
    True

    Trained by parameter mixing over two partitions (on the active Dask scheduler):

    >>> from sparsecca.distributed import PartitionedNBest
    >>> parts = PartitionedNBest.from_nbest(train_nbest, 2)
    >>> mixed = PerceptronReranker(n_epochs=3, decoder_weight=(1.0, 4.0), random_state=0,
    ...                            partitioned_fit="mixing").fit(parts, dev_nbest)
    >>> mixed.features_.feature_names_ == reranker.features_.feature_names_
    True
    >>> bool(0.5 < mixed.score(dev_nbest) <= 1.0)
    True
    """

    _array_attrs = ("coef_", "n_updates_", "dev_accuracy_")
    _extra_attrs = ("decoder_weight_", "n_epochs_")

    def __init__(self, features="suffix", n_epochs=10, averaged=True,
                 decoder_weight=(1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0), shuffle=True,
                 min_count=1, lengths=(2, 3, 4), lowercase=False, random_state=None, widen=0,
                 partitioned_fit="gather", mixing_weights="uniform"):
        self.features = features
        self.n_epochs = n_epochs
        self.averaged = averaged
        self.decoder_weight = decoder_weight
        self.shuffle = shuffle
        self.min_count = min_count
        self.lengths = lengths
        self.lowercase = lowercase
        self.random_state = random_state
        self.widen = widen
        self.partitioned_fit = partitioned_fit
        self.mixing_weights = mixing_weights

    def fit(self, train: NBestList, dev: NBestList | None = None) -> "PerceptronReranker":
        """Train on a (jackknifed) training n-best list; tune b and the epochs on ``dev``.

        Parameters
        ----------
        train : NBestList with gold tags, or sparsecca.distributed.PartitionedNBest
            Partitioned lists are gathered, or with ``partitioned_fit="mixing"`` trained on
            where they live (see that parameter).
        dev : NBestList with gold tags, optional
            Without it all ``n_epochs`` are used and ``decoder_weight`` must be one value.
            Partitioned dev lists are gathered.

        Returns
        -------
        self
        """
        kind = check_kind(self.features)
        n_epochs = check_int("n_epochs", self.n_epochs, 1)
        averaged = check_bool("averaged", self.averaged)
        grid = check_grid("decoder_weight", self.decoder_weight, 0.0, strict=False)
        shuffle = check_bool("shuffle", self.shuffle)
        min_count = check_int("min_count", self.min_count, 1)
        lengths = check_lengths(self.lengths)
        lowercase = check_bool("lowercase", self.lowercase)
        rng = check_random_state(self.random_state)
        widen = check_int("widen", self.widen, 0)
        mixing_weights = check_partitioned_fit(self)[1]
        name = type(self).__name__
        fixed = "fit without dev and with one decoder_weight (all n_epochs are kept)"
        mixing = None
        if is_partitioned(train):  # partitioned_fit="mixing": checked where they live
            mixing = train._reranker_mixing(self, max(grid))
            dev = check_dev_list(dev, mixing.gold_tags, name, "decoder_weight", len(grid),
                                 fixed)
        else:
            train, dev = check_fit_lists(train, dev, name, "decoder_weight", len(grid), fixed)
        # b * score must stay finite, in training (the kernel's numba product gives inf
        # silently) and on dev, before any work is done
        for nb, what in ((None if mixing else train, "train"), (dev, "dev")):
            if nb is not None:
                check_weight_scale("decoder_weight", max(grid), nb.scores,
                                   f"{what}'s decoder scores")
        feats = JointFeatures(kind=kind, lengths=lengths, min_count=min_count, binary=False,
                              lowercase=lowercase)
        if mixing is not None:
            trainer = mixing.perceptron(feats, averaged, mixing_weights == "updates")
            n = mixing.n_sentences
        else:
            trainer = _InMemory(train, feats.fit_joint(train), averaged)
            n = train.n_sentences
        # the visiting orders of every epoch a widened run may reach; the first n_epochs
        # are those of an unwidened fit
        max_epochs = n_epochs * 2 ** widen
        orders = (np.stack([rng.permutation(n) for _ in range(max_epochs)]) if shuffle
                  else np.tile(np.arange(n), (max_epochs, 1)))
        Hd = feats.joint(dev) if dev is not None else None
        edges: list = []

        def run(b):
            # the epochs of one b; a best epoch at the last one reruns with twice the epochs
            # (at most widen times)
            cap, extra = n_epochs, 0
            while True:
                W, n_upd = trainer.run(orders, cap, b)
                if dev is None:
                    return None, (b, cap, W[-1], n_upd, None, cap, extra)
                # dev scores of every epoch at once: (n_dev_candidates, n_epochs)
                S = b * dev.scores[:, None] + Hd @ W.T
                acc = np.array([1.0 - losses_of_choice(dev, dev.argmax(S[:, e]))
                                / dev.corpus.n_tokens for e in range(cap)])
                e = int(np.argmax(acc))
                if extra >= widen or not path_edge(e + 1, cap, cap, name="n_epochs"):
                    return float(acc[e]), (b, e + 1, W[e], n_upd, acc, cap, extra)
                cap, extra = 2 * cap, extra + 1

        if dev is None:
            values, results, k = [grid[0]], [run(grid[0])], 0
        else:
            # ties: the earlier b; a best b on an edge of the grid: more values past it
            values, results, k = search_grid(run, grid, name="decoder_weight", scale="log",
                                             low=0.0, widen=widen, edges=edges,
                                             better=lambda a, c: a > c)
        b, epochs, w, n_upd, _, cap, extra = results[k][1]
        dev_acc = None
        if dev is not None:
            path_edge(epochs, cap, cap, name="n_epochs", edges=edges, widened=extra)
            width = max(r[1][5] for r in results)
            dev_acc = np.full((len(results), width), np.nan)
            for g, r in enumerate(results):
                dev_acc[g, :r[1][5]] = r[1][4]
        self.features_ = feats
        self.coef_ = np.concatenate([[b], w])
        self.decoder_weight_ = float(b)
        self.n_epochs_ = int(epochs)
        self.n_updates_ = n_upd
        self.dev_accuracy_ = dev_acc
        self.decoder_weights_tried_ = None if dev is None else [float(v) for v in values]
        self.grid_edges_ = edges
        return self

    def _check_state(self):
        super()._check_state()
        check_partitioned_fit(self)

    def tuned_params(self) -> dict:
        """The values chosen on dev (decoder weight, epochs), for reports."""
        self._check_fitted("coef_")
        return {"decoder_weight": self.decoder_weight_, "n_epochs": self.n_epochs_}

    def decision_function(self, nbest: NBestList) -> np.ndarray:
        """Score of every candidate: ``decoder_weight_ * score + joint features @ coef_[1:]``.

        Returns
        -------
        float64 array, shape (n_candidates,)
        """
        self._check_fitted("coef_")
        nbest = check_nbest(nbest)
        return (decoder_term(self.coef_[0], nbest.scores)
                + self.features_.joint(nbest) @ self.coef_[1:])

    @property
    def n_features_(self) -> int:
        """Columns of the feature matrix (decoder score included)."""
        self._check_fitted("coef_")
        return int(self.coef_.size)
