"""Boosting rerankers: Collins & Koo (2005) and an L1-regularised version (cf. Huang et al. 2007).

Both minimise an exponential ranking loss over training pairs (oracle candidate, worse
candidate) by greedy one-feature-at-a-time updates on binary joint features
(:class:`JointFeatures`), after fixing the weight of the decoder log-score by a line search.
The number of rounds (and the regularisation strength) is chosen on a development n-best
list by evaluating its accuracy along the whole boosting path.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq

from .._params import ParamsMixin, check_bool, check_float, check_int, check_weight_scale
from .._tagset import check_tagset
from ..kernels import boosting_path, check_n_rounds, max_rounds, path_losses
from ..tagging import NBestList
from ._base import (
    BaseReranker,
    _gathered,
    check_dev_list,
    check_finite_scores,
    check_fit_lists,
    check_nbest,
    check_tuning_dev,
    decoder_term,
    path_edge,
    search_grid,
    tokens_without_candidates,
)
from ._joint_features import (
    JointFeatures,
    PersistMixin,
    check_grid,
    check_kind,
    check_lengths,
    oracle_global,
)

__all__ = ["BoostingReranker", "RegularizedBoostingReranker", "ranking_pairs",
           "decoder_line_search"]


def ranking_pairs(nbest: NBestList, H: sp.csr_matrix):
    """Training pairs of the exponential ranking loss.

    For every sentence, its oracle candidate (lowest loss; ties: the earlier one) is paired
    with each candidate of strictly larger loss.  Candidates as good as the oracle carry no
    ranking information and form no pair; sentences whose candidates all have the same loss
    form none.

    Parameters
    ----------
    nbest : NBestList with gold
    H : sparse matrix, shape (n_candidates, n_features)

    Returns
    -------
    D : scipy.sparse.csr_matrix, shape (n_pairs, n_features)
        ``H[oracle] - H[other]``, explicit zeros removed.
    score_diff : float64 array, shape (n_pairs,)
        Decoder score of the oracle minus that of the other candidate.
    pair_sentence : int64 array, shape (n_pairs,)
    """
    o = oracle_global(nbest)[nbest.cand_sentence]
    other = np.flatnonzero(nbest.losses > nbest.losses[o]).astype(np.int64)
    top = o[other]
    n = other.size
    rows = np.concatenate([np.arange(n), np.arange(n)])
    cols = np.concatenate([top, other])
    vals = np.concatenate([np.ones(n), -np.ones(n)])
    P = sp.csr_matrix((vals, (rows, cols)), shape=(n, nbest.n_total))
    D = (P @ sp.csr_matrix(H)).tocsr()
    D.eliminate_zeros()
    D.sort_indices()
    with np.errstate(over="ignore"):  # an overflowing difference is refused by the caller
        diff = nbest.scores[top] - nbest.scores[other]
    return D, diff, nbest.cand_sentence[other]


def decoder_line_search(score_diff, upper=None) -> float:
    """Weight a >= 0 of the decoder score minimising ``sum_p exp(-a * score_diff[p])``.

    This is Collins & Koo's initial step: the loss is convex in a, so its minimiser is the
    root of the derivative, clipped to [0, upper] (``upper`` defaults to 100 / the median
    nonzero |score_diff|).  With no pairs, or only zero differences (nothing to learn), the
    decoder keeps weight 1.
    """
    d = np.asarray(score_diff, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError(f"score_diff must be 1-d, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError(f"score_diff must be finite, got {int(np.sum(~np.isfinite(d)))} "
                         f"NaN or infinite value(s)")
    if upper is not None:
        upper = check_float("upper", upper, 0.0, strict=True)
    nz = np.abs(d[d != 0.0])
    if nz.size == 0:
        return 1.0
    if upper is None:
        upper = 100.0 / float(np.median(nz))

    def slope(a):
        # d/da log sum exp(-a d), computed stably
        x = -a * d
        e = np.exp(x - x.max())
        return float(-(d * e).sum() / e.sum())

    if slope(0.0) >= 0.0:
        return 0.0
    if slope(upper) <= 0.0:
        return float(upper)
    return float(brentq(slope, 0.0, upper, xtol=1e-10 * upper, rtol=1e-12))


#: how to fit without dev, for the message refusing a grid of C without it
FIXED_C = "fit without dev and with a single C (every round is kept)"


class DevPath:
    """The dev accuracy along a boosting path, for the tuning of the boosting rerankers.

    Parameters
    ----------
    dev : NBestList with gold tags (validated)
    H : scipy.sparse matrix, shape (dev.n_total, n_features)
        Its joint features (the fitted :class:`JointFeatures`' ``joint``).
    """

    def __init__(self, dev: NBestList, H):
        self.dev, self.H = dev, H
        #: the largest |finite decoder score|, for the overflow check of the decoder weight
        finite = dev.scores[np.isfinite(dev.scores)]
        self.largest_score = np.abs(finite).max(initial=0.0, keepdims=True)

    def accuracy(self, alpha0: float, features, deltas) -> np.ndarray:
        """Token accuracy after every prefix of the path (``alpha0`` the decoder weight)."""
        dev = self.dev
        loss = path_losses(self.H, alpha0 * dev.scores, dev.sent_offsets, dev.losses,
                           features, deltas)
        return 1.0 - (loss + tokens_without_candidates(dev)) / dev.corpus.n_tokens


class _ExpLossBoosting(PersistMixin, ParamsMixin, BaseReranker):
    """Fitting machinery shared by the two boosting rerankers."""

    _array_attrs = ("coef_", "path_features_", "path_deltas_", "path_objective_",
                    "dev_accuracy_path_")
    _extra_attrs = ("decoder_weight_", "n_rounds_", "n_pairs_", "tuning_")
    #: partitioned lists are fitted where they lie (``fit``), not gathered first
    _fits_partitions = True

    def _reg_grid(self) -> tuple[float, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _common_params(self):
        return dict(kind=check_kind(self.features),
                    n_rounds=check_n_rounds(self.n_rounds, 1),
                    min_count=check_int("min_count", self.min_count, 1),
                    lengths=check_lengths(self.lengths),
                    lowercase=check_bool("lowercase", self.lowercase),
                    widen=check_int("widen", self.widen, 0))

    def fit(self, train: NBestList, dev: NBestList | None = None):
        """Fit on a (jackknifed) training n-best list; tune on ``dev`` when given.

        Parameters
        ----------
        train : NBestList with gold tags, or PartitionedNBest
            Partitioned lists (:class:`sparsecca.distributed.PartitionedNBest`) are fitted
            where they lie: the features' vocabulary from counts tree-summed over the
            partitions, each partition's features and training pairs built on its worker;
            only the pairs' feature differences and decoder score differences come to the
            driver, which runs the boosting path.  The fit equals the in-memory fit on the
            gathered lists.
        dev : NBestList with gold tags, or PartitionedNBest, optional
            The number of rounds (and the regularisation strength) maximising dev accuracy
            along the boosting path is kept (ties: fewer rounds, earlier grid value).  Without
            dev every round is kept, and a regularisation grid must have one value.  A
            partitioned dev list is evaluated along the paths partition by partition when
            train is partitioned too (with an in-memory train, it is gathered).

        Returns
        -------
        self
        """
        fit_partitioned = getattr(train, "_fit_boosting_reranker", None)
        if fit_partitioned is not None:  # a sparsecca.distributed.PartitionedNBest
            return fit_partitioned(self, dev)
        p = self._common_params()
        grid = self._reg_grid()[0]
        train, dev = check_fit_lists(train, _gathered(dev), type(self).__name__, "C",
                                     len(grid), FIXED_C)
        feats = self._new_features(p)
        H = feats.fit_joint(train)
        D, diff, _ = ranking_pairs(train, H)
        dev_path = None if dev is None else DevPath(dev, feats.joint(dev))
        return self._fit_pairs(feats, D, diff, (train.scores.min(), train.scores.max()),
                               dev_path)

    # -- what a partitioned fit (sparsecca.distributed) runs of this one ---------------------
    _ranking_pairs = staticmethod(ranking_pairs)
    _dev_path = DevPath

    def _list_summary(self, nbest, name: str) -> dict:
        """The checks of ``check_fit_lists`` that one piece of a list (train or dev,
        ``name``) can make alone, and the totals the fit needs of it."""
        if not isinstance(nbest, NBestList):
            raise TypeError(f"must be an NBestList, got {type(nbest).__name__}")
        if nbest.losses is None:
            raise ValueError("has no gold tags (losses is None); training and tuning need an "
                             "n-best list decoded from a tagged corpus")
        check_finite_scores(nbest, name, type(self).__name__)
        corpus, s = nbest.corpus, nbest.scores
        return dict(n_sentences=nbest.n_sentences, n_total=nbest.n_total,
                    low=float(s.min(initial=np.inf)), high=float(s.max(initial=-np.inf)),
                    largest=float(np.abs(s).max(initial=0.0)),
                    most_candidates=int(nbest.n_candidates.max(initial=0)),
                    tags=corpus.tags,
                    tag_counts=np.bincount(corpus.tag_ids, minlength=len(corpus.tags)),
                    missing=tokens_without_candidates(nbest), n_tokens=corpus.n_tokens)

    def _check_dev_pieces(self, train_tags, dev=None, gold=None, most_candidates=None):
        """The checks of dev of ``check_fit_lists`` against train's gold ``train_tags``: of
        the list ``dev``, of the gold tags of its pieces (``gold``: the tag vocabulary and
        the tag id of every gold token) and the most candidates of a sentence, or of no dev
        (a grid needs one).  Returns ``dev``."""
        if dev is not None or gold is None:
            return check_dev_list(dev, train_tags, type(self).__name__, "C",
                                  len(self._reg_grid()[0]), FIXED_C)
        check_tagset(gold[1], gold[0], train_tags, what="dev gold tags",
                     fitted_what="the gold tagset of train")
        check_tuning_dev(most_candidates, FIXED_C)
        return None

    def _new_features(self, p) -> JointFeatures:
        """The unfitted joint features (binary) of the validated parameters ``p``."""
        return JointFeatures(kind=p["kind"], lengths=p["lengths"], min_count=p["min_count"],
                             binary=True, lowercase=p["lowercase"])

    def _fit_pairs(self, feats, D, diff, score_range, dev):
        """The fit from the fitted features, the training pairs (``D``, the decoder score
        differences ``diff``, the range of train's scores for a message) and ``dev`` (a
        :class:`DevPath`, or its partitioned counterpart, or None)."""
        p = self._common_params()
        grid, eps = self._reg_grid()
        if not np.all(np.isfinite(diff)):
            # finite scores whose differences overflow (|s| near 1.8e308)
            raise ValueError(f"train's decoder scores are too large: a difference between "
                             f"two candidates' scores overflows (scores in "
                             f"[{score_range[0]:.3g}, {score_range[1]:.3g}]); "
                             f"{type(self).__name__} needs log-probability-like scores")
        alpha0 = decoder_line_search(diff)
        # the line search can pick a weight whose product with a score overflows (tiny
        # training differences next to large differences or dev scores); refuse it by name
        # rather than boost on infinite margins or tune on -inf dev scores
        hint = (f" (the line search's choice on train); {type(self).__name__} needs "
                f"log-probability-like scores")
        check_weight_scale("decoder_weight_", alpha0, diff,
                           "train's decoder score differences", hint=hint)
        if dev is not None:
            check_weight_scale("decoder_weight_", alpha0, dev.largest_score,
                               "dev's decoder scores", hint=hint)
        margins = alpha0 * diff
        widen = p["widen"]
        tuning = []
        edges: list = []

        def run(reg):
            # the boosting path of one C; a best prefix at the end of a path that ran to its
            # cap reruns it with twice the rounds (at most widen times)
            cap, extra = p["n_rounds"], 0
            while True:
                f, d, obj = boosting_path(D, margins, cap, eps=eps, l1=reg)
                if dev is None:
                    acc, t = None, f.size
                    break
                acc = dev.accuracy(alpha0, f, d)
                t = int(np.argmax(acc))
                bigger = min(2 * cap, max_rounds())
                if extra >= widen or bigger == cap \
                        or not path_edge(t, f.size, cap, name="n_rounds"):
                    break
                cap, extra = bigger, extra + 1
            tuning.append(dict(C=reg, n_rounds=t, rounds_run=int(f.size),
                               dev_accuracy=None if acc is None else float(acc[t])))
            return (None if acc is None else float(acc[t])), (reg, t, f, d, obj, acc, cap,
                                                               extra)

        if dev is None:
            results, k = [run(grid[0])], 0
        else:
            # ties: the earlier C; a best C on an edge of the grid: more values past it
            _, results, k = search_grid(run, grid, name="C", scale="log", low=0.0,
                                        widen=widen, edges=edges, better=lambda a, b: a > b)
        reg, t, f, d, obj, acc, cap, extra = results[k][1]
        if dev is not None:
            path_edge(t, f.size, cap, name="n_rounds", edges=edges, widened=extra)
        coef = np.zeros(feats.n_features_, dtype=np.float64)
        coef[0] = alpha0
        np.add.at(coef, f[:t] + 1, d[:t])
        self.features_ = feats
        self.coef_ = coef
        self.decoder_weight_ = float(alpha0)
        self.n_rounds_ = int(t)
        self.n_pairs_ = int(D.shape[0])
        self.path_features_ = f
        self.path_deltas_ = d
        self.path_objective_ = obj
        self.dev_accuracy_path_ = acc
        self.tuning_ = tuning
        self.grid_edges_ = edges
        self._set_reg(reg)
        return self

    def _set_reg(self, reg):
        pass

    def tuned_params(self) -> dict:
        """The values chosen on train (decoder weight) and dev (rounds, C), for reports."""
        self._check_fitted("coef_")
        out = {"decoder_weight": self.decoder_weight_, "n_rounds": self.n_rounds_}
        reg = getattr(self, "C_", None)
        if reg is not None:
            out["C"] = float(reg)
        return out

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

    def selected_features(self) -> list[tuple[str, float]]:
        """Nonzero-weight features (names, weights), largest |weight| first."""
        self._check_fitted("coef_")
        nz = np.flatnonzero(self.coef_)
        nz = nz[np.argsort(-np.abs(self.coef_[nz]), kind="stable")]
        names = self.features_.feature_names_
        return [(names[j], float(self.coef_[j])) for j in nz]


class BoostingReranker(_ExpLossBoosting):
    """Collins & Koo (2005) boosting reranker with joint features.

    Every candidate x gets ``F(x) = a_0 L(x) + sum_k a_k h_k(x)``, L the decoder log-score and
    h_k binary joint features (:class:`JointFeatures`, "Sufx" or "n-gm").  Training minimises
    ``ExpLoss(a) = sum_i sum_j exp(-(F(x_i,oracle) - F(x_ij)))`` over pairs of each training
    sentence's oracle (lowest Hamming loss) with every worse candidate
    (:func:`ranking_pairs`).  ``a_0`` is first set by a line search on ExpLoss alone
    (:func:`decoder_line_search`); then each round picks the feature maximising
    ``|sqrt(W+_k) - sqrt(W-_k)|`` and adds ``0.5 log((W+_k + eps Z) / (W-_k + eps Z))`` to its
    weight, where ``W+_k`` (``W-_k``) sums ``exp(-M_ij)`` over pairs whose feature difference is
    +1 (-1) and Z is the loss.  Only the pairs where the chosen feature fires are touched
    (:func:`sparsecca.kernels.boosting_path`).  With a dev list, the number of rounds is the
    prefix of the path with the best dev accuracy.

    Parameters
    ----------
    features : {"suffix", "ngram"}, default "suffix"
    n_rounds : int >= 1, default 20000
        Maximum number of boosting rounds; at most
        :func:`sparsecca.kernels.max_rounds` (the path must fit in memory).
    eps : float > 0, default 0.0025
        Step smoothing (Collins & Koo's epsilon).
    min_count : int >= 1, default 2
        Keep features that discriminate in at least this many training sentences.
    lengths : int or sequence of int, default (2, 3, 4)
        Suffix lengths (``features="suffix"``).
    lowercase : bool, default False
    widen : int >= 0, default 0
        When the best dev prefix lies in the last tenth of a path that ran all ``n_rounds``
        (the cap, not the optimum, stopped it), rerun with twice the rounds, at most this
        many times.  0 keeps the cap and records the edge in ``grid_edges_``.

    Attributes
    ----------
    features_ : JointFeatures
    coef_ : float64 array, shape (n_features_,)
        ``coef_[0]`` is the decoder weight, ``coef_[1:]`` the joint feature weights.
    decoder_weight_ : float
    n_rounds_ : int
        Rounds kept (tuned on dev).
    n_pairs_ : int
        Training pairs.
    path_features_, path_deltas_ : arrays, shape (rounds run,)
        The whole boosting path.
    path_objective_ : float64 array, shape (rounds run + 1,)
        ExpLoss along the path, relative to its value after the line search.
    dev_accuracy_path_ : float64 array, shape (rounds run + 1,) or None
        Dev accuracy after each prefix.
    tuning_ : list of dict
        One entry per regularisation value tried.
    grid_edges_ : list of dict
        The tuned values that lie on an edge of what dev tuning tried (``"param"``,
        ``"value"``, ``"side"``, ``"tried"``, ``"widened"``); empty when none does.

    References
    ----------
    M. Collins and T. Koo (2005).  Discriminative reranking for natural language parsing.
    Computational Linguistics 31(1), pp. 25-70.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> from sparsecca.tagging import TrigramHMM, jackknife_nbest
    >>> train, dev = train_test_split(synthetic_corpus(200, random_state=0), test_size=50,
    ...                               random_state=0)
    >>> train_nbest = jackknife_nbest(TrigramHMM(), train, k=5, folds=2)
    >>> dev_nbest = TrigramHMM().fit(train).nbest(dev, k=5)
    >>> from sparsecca.rerank import BoostingReranker
    >>> reranker = BoostingReranker(features="suffix", n_rounds=200).fit(train_nbest, dev_nbest)
    >>> reranker.n_rounds_ <= len(reranker.path_features_) <= 200
    True
    >>> bool(reranker.coef_[0] == reranker.decoder_weight_ > 0)
    True
    >>> bool(reranker.path_objective_[-1] < reranker.path_objective_[0] == 1.0)
    True
    >>> name, weight = reranker.selected_features()[0]  # the largest |weight|
    >>> isinstance(name, str), bool(weight != 0)
    (True, True)
    >>> bool(0.5 < reranker.score(dev_nbest) <= 1.0)
    True

    Fitted on partitioned lists (on the active Dask scheduler), the same model:

    >>> from sparsecca.distributed import PartitionedNBest
    >>> parts = PartitionedNBest.from_nbest(train_nbest, 3)
    >>> on_parts = BoostingReranker(features="suffix", n_rounds=200).fit(parts, dev_nbest)
    >>> bool((on_parts.coef_ == reranker.coef_).all())
    True
    """

    def __init__(self, features="suffix", n_rounds=20000, eps=0.0025, min_count=2,
                 lengths=(2, 3, 4), lowercase=False, widen=0):
        self.features = features
        self.n_rounds = n_rounds
        self.eps = eps
        self.min_count = min_count
        self.lengths = lengths
        self.lowercase = lowercase
        self.widen = widen

    def _reg_grid(self):
        return (0.0,), check_float("eps", self.eps, 0.0, strict=True)


class RegularizedBoostingReranker(_ExpLossBoosting):
    """Boosting reranker with an L1 penalty (regularised ExpLoss, in the spirit of Huang et al.).

    Same model, pairs, features and decoder-weight line search as :class:`BoostingReranker`,
    but the objective is

        ``J(a) = ExpLoss(a) / ExpLoss(a_0 only) + C * sum_{k >= 1} |a_k|``

    (the loss is normalised to 1 after the line search, so C does not depend on the number of
    pairs or on the decoder-score scale).  It is minimised by greedy exact coordinate descent:
    for binary features the restriction of J to one weight is
    ``W+ e^{-d} + W- e^{d} + C' |a_k + d| + const`` whose minimiser is in closed form (a root
    of a quadratic in e^d on either side of 0, or exactly 0); each round moves the feature
    whose exact minimisation lowers J most.  Weights can shrink back to 0, steps stay finite
    without smoothing, and for small C the method approaches the unregularised minimiser.
    C (a grid) and the number of rounds are tuned on dev.

    Features with identical training columns give the same objective whichever of them
    holds the weight; which one does is left to rounding (the unregularised path always
    keeps the lower column).  Their dev columns can differ, so two correct implementations
    may report different dev accuracies, and even choose a different C, on such data.

    Parameters
    ----------
    features : {"suffix", "ngram"}, default "suffix"
    C : float > 0 or sequence of float > 0, default (1e-3, 3e-4, 1e-4, 3e-5)
        L1 strengths to try (tie on dev: the earlier value).
    n_rounds : int >= 1, default 20000
    min_count : int >= 1, default 2
    lengths : int or sequence of int, default (2, 3, 4)
    lowercase : bool, default False
    widen : int >= 0, default 0
        A best C on an edge of the grid adds up to this many values past it (one grid step
        each, geometric), and a best prefix at the cap of ``n_rounds`` reruns the path with
        twice the rounds up to this many times.  0 records the edges in ``grid_edges_``.

    Attributes
    ----------
    C_ : float
        The chosen L1 strength.
    features_, coef_, decoder_weight_, n_rounds_, n_pairs_, tuning_, grid_edges_
        As in :class:`BoostingReranker`; so are ``path_features_``, ``path_deltas_``,
        ``path_objective_`` and ``dev_accuracy_path_``, for the chosen C.

    References
    ----------
    M. Collins and T. Koo (2005).  Discriminative reranking for natural language parsing.
    Computational Linguistics 31(1), pp. 25-70.

    Z. Huang, M. P. Harper and W. Wang (2007).  Mandarin part-of-speech tagging and
    discriminative reranking.  Proceedings of EMNLP-CoNLL 2007.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> from sparsecca.tagging import TrigramHMM, jackknife_nbest
    >>> train, dev = train_test_split(synthetic_corpus(200, random_state=0), test_size=50,
    ...                               random_state=0)
    >>> train_nbest = jackknife_nbest(TrigramHMM(), train, k=5, folds=2)
    >>> dev_nbest = TrigramHMM().fit(train).nbest(dev, k=5)
    >>> from sparsecca.rerank import RegularizedBoostingReranker
    >>> reranker = RegularizedBoostingReranker(C=(1e-3, 1e-4), n_rounds=200)
    >>> reranker = reranker.fit(train_nbest, dev_nbest)
    >>> [entry["C"] for entry in reranker.tuning_], reranker.C_ in (1e-3, 1e-4)
    ([0.001, 0.0001], True)
    >>> sorted(reranker.tuned_params())
    ['C', 'decoder_weight', 'n_rounds']
    >>> bool(0.5 < reranker.score(dev_nbest) <= 1.0)
    True
    """

    def __init__(self, features="suffix", C=(1e-3, 3e-4, 1e-4, 3e-5), n_rounds=20000,
                 min_count=2, lengths=(2, 3, 4), lowercase=False, widen=0):
        self.features = features
        self.C = C
        self.n_rounds = n_rounds
        self.min_count = min_count
        self.lengths = lengths
        self.lowercase = lowercase
        self.widen = widen

    def _reg_grid(self):
        return check_grid("C", self.C, 0.0, strict=True), 0.0

    _extra_attrs = _ExpLossBoosting._extra_attrs + ("C_",)

    def _set_reg(self, reg):
        self.C_ = float(reg)
