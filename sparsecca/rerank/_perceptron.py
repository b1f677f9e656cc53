"""Collins' (2002) reranking perceptron with averaged parameters."""

from __future__ import annotations

import numpy as np

from .._params import (
    ParamsMixin,
    check_bool,
    check_int,
    check_random_state,
    check_weight_scale,
)
from ..kernels import perceptron_train
from ..tagging import NBestList
from ._base import (
    BaseReranker,
    check_dev_tagset,
    check_finite_scores,
    check_nbest,
    check_tuning_dev,
    decoder_term,
    losses_of_choice,
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
        Dev accuracy after each epoch of each b.

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
    """

    _array_attrs = ("coef_", "n_updates_", "dev_accuracy_")
    _extra_attrs = ("decoder_weight_", "n_epochs_")

    def __init__(self, features="suffix", n_epochs=10, averaged=True,
                 decoder_weight=(1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0), shuffle=True,
                 min_count=1, lengths=(2, 3, 4), lowercase=False, random_state=None):
        self.features = features
        self.n_epochs = n_epochs
        self.averaged = averaged
        self.decoder_weight = decoder_weight
        self.shuffle = shuffle
        self.min_count = min_count
        self.lengths = lengths
        self.lowercase = lowercase
        self.random_state = random_state

    def fit(self, train: NBestList, dev: NBestList | None = None) -> "PerceptronReranker":
        """Train on a (jackknifed) training n-best list; tune b and the epochs on ``dev``.

        Parameters
        ----------
        train : NBestList with gold tags
        dev : NBestList with gold tags, optional
            Without it all ``n_epochs`` are used and ``decoder_weight`` must be one value.

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
        train = check_nbest(train, "train", need_gold=True)
        check_finite_scores(train, "train", type(self).__name__)
        if dev is not None:
            dev = check_nbest(dev, "dev", need_gold=True)
            check_dev_tagset(train, dev)
            check_finite_scores(dev, "dev", type(self).__name__)
            check_tuning_dev(dev, "fit without dev and with one decoder_weight (all "
                                  "n_epochs are kept)")
        elif len(grid) > 1:
            raise ValueError(f"decoder_weight has {len(grid)} values to choose from but no dev "
                             f"n-best list was given; pass dev or a single decoder_weight")
        # b * score must stay finite, in training (the kernel's numba product gives inf
        # silently) and on dev, before any work is done
        for nb, name in ((train, "train"), (dev, "dev")):
            if nb is not None:
                check_weight_scale("decoder_weight", max(grid), nb.scores,
                                   f"{name}'s decoder scores")
        feats = JointFeatures(kind=kind, lengths=lengths, min_count=min_count, binary=False,
                              lowercase=lowercase)
        H = feats.fit_joint(train)
        n = train.n_sentences
        orders = (np.stack([rng.permutation(n) for _ in range(n_epochs)]) if shuffle
                  else np.tile(np.arange(n), (n_epochs, 1)))
        oracle = oracle_global(train)
        Hd = feats.joint(dev) if dev is not None else None
        dev_acc = np.zeros((len(grid), n_epochs)) if dev is not None else None
        best = None
        for g, b in enumerate(grid):
            W, n_upd = perceptron_train(H, train.scores, train.sent_offsets, oracle,
                                        train.losses, orders, b, averaged=averaged)
            if dev is None:
                best = (None, b, n_epochs, W[-1], n_upd)
                continue
            # dev scores of every epoch at once: (n_dev_candidates, n_epochs)
            S = b * dev.scores[:, None] + Hd @ W.T
            for e in range(n_epochs):
                choice = dev.argmax(S[:, e])
                dev_acc[g, e] = 1.0 - losses_of_choice(dev, choice) / dev.corpus.n_tokens
            e = int(np.argmax(dev_acc[g]))
            if best is None or dev_acc[g, e] > best[0]:
                best = (dev_acc[g, e], b, e + 1, W[e], n_upd)
        _, b, epochs, w, n_upd = best
        self.features_ = feats
        self.coef_ = np.concatenate([[b], w])
        self.decoder_weight_ = float(b)
        self.n_epochs_ = int(epochs)
        self.n_updates_ = n_upd
        self.dev_accuracy_ = dev_acc
        return self

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
