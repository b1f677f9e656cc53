"""The three low-dimensional rerankers of Jagarlamudi & Daume III (2012).

All three learn projections A (input view) and B (output view) from one eigenproblem
(Eq. 11 / 12, solved in the reduced form of Eq. 14-15 by :mod:`sparsecca.linalg`); they differ
only in the cross-covariance factor M of C_xy = X^T M:

* generative (plain CCA): M = Y
* softened discriminative: M = (1 - lam) Y + lam R_L, R_L the loss-weighted mean residuals
* discriminative (Algorithm 1): M = ((1 - lam) / lam) Y + R_alpha, the multipliers alpha
  updated from the slacks of the margin constraints.

A candidate is scored by p_ij = cos(A^T x_i, B^T yhat_ij) (Eq. 1) and the final score is
s_ij + w p_ij (Eq. 13), w tuned on dev.  The number of components k is tuned on dev from one
fit at the largest k (components are nested), tau and lam on small grids that reuse the X
factorisation across every solve.
"""

from __future__ import annotations

import numpy as np

from .._params import ParamsMixin, check_bool, check_float, check_int
from .._persist import ModelFormatError, PersistMixin, state_array
from ..exceptions import TagsetMismatchError
from ..features import SuffixView, TagNgramView
from ..linalg import CCAEngine, RankDeficientError, centred_projection
from ._base import (
    PLATEAU_TIE,
    BaseReranker,
    check_dev_tagset,
    check_nbest,
    check_tuning_dev,
    losses_of_choice,
    note_edge,
    plateau_score,
    tune_weight,
)
from ._cca_data import DevData, TrainingData, scaled_sum
from ._cca_solve import SolveLog
from ._cca_views import check_view, clone_view, cosine_prefix_scores, view_problem
from ._joint_features import check_grid, check_ints

__all__ = ["GenerativeReranker", "SoftenedReranker", "DiscriminativeReranker"]


#: the largest w of tune_weight's default grid (0, 1, ..., 100)
_W_GRID_TOP = 100.0


def _as_grid(name, value, *, low_open=False):
    """A number or a non-empty sequence of numbers in [0, 1] (``(0, 1]``), as an array."""
    return np.asarray(check_grid(name, value, 0.0, strict=low_open, high=1.0),
                      dtype=np.float64)


def _rank_cause(rank, n_sentences, center):
    """Why the cross-covariance has so few nonzero correlations, when the training set is why."""
    bound = n_sentences - int(bool(center))
    if rank < bound:
        return ""
    return (f" (at most one per training sentence{', less one when centred' if center else ''}"
            f": {n_sentences} sentences; a larger training set lifts it)")


class _LowDimReranker(PersistMixin, ParamsMixin, BaseReranker):
    """Shared fitting, tuning and scoring; subclasses define the cross-covariance factor."""

    _has_lam = True
    _fits_partitions = True
    # what the fit reads of its lists (a partitioned fit runs their per-block computations)
    _training_data = TrainingData
    _dev_data = DevData
    # what save() stores; load() rebuilds the views from their own (validated) state
    _state_arrays = ("x_weights_", "y_weights_", "eigenvalues_", "x_mean_", "y_mean_")
    _state_values = ("n_components_", "tau_", "w_", "solver_", "solver_error_", "dev_accuracy_",
                     "grid_scores_")
    _state_children = ("input_view_", "output_view_")

    def _check_state(self):
        """Validate what load() restored (shapes against the views, finite values)."""
        # a stored view of the wrong kind (one reading tags as input_view_ would see gold tags)
        for name in ("input_view", "output_view"):
            problem = view_problem(name, getattr(self, name + "_"))
            if problem is not None:
                raise ModelFormatError(problem.replace(name, name + "_", 1))
        k = self.n_components_
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ModelFormatError(f"n_components_ must be an int >= 1, got {k!r}")
        d1, d2 = self.input_view_.n_features_, self.output_view_.n_features_
        a = {"x_weights_": self.x_weights_, "y_weights_": self.y_weights_,
             "eigenvalues_": self.eigenvalues_}
        self.x_weights_ = state_array(a, "x_weights_", "float", ndim=2, shape=(d1, k))
        self.y_weights_ = state_array(a, "y_weights_", "float", ndim=2, shape=(d2, k))
        self.eigenvalues_ = state_array(a, "eigenvalues_", "float", shape=(k,))
        m = {"x_mean_": self.x_mean_, "y_mean_": self.y_mean_}
        self.x_mean_ = state_array(m, "x_mean_", "float", shape=(d1,))
        self.y_mean_ = state_array(m, "y_mean_", "float", shape=(d2,))
        if not self.center and (np.any(self.x_mean_) or np.any(self.y_mean_)):
            raise ModelFormatError("x_mean_ and y_mean_ must be zero for center=False")
        if not isinstance(self.w_, float) or not np.isfinite(self.w_):
            raise ModelFormatError(f"w_ must be a finite float, got {self.w_!r}")

    def __init__(self, n_components=100, tau=(0.9, 0.99), lam=(0.5, 0.75, 0.9),
                 k_grid=None, w=None, solver="randomized", max_rank=512, input_view=None,
                 output_view=None, random_state=0, w_window=2, center=False, progress=False):
        self.n_components = n_components
        self.tau = tau
        self.lam = lam
        self.k_grid = k_grid
        self.w = w
        self.solver = solver
        self.max_rank = max_rank
        self.input_view = input_view
        self.output_view = output_view
        self.random_state = random_state
        self.w_window = w_window
        self.center = center
        self.progress = progress

    # -- validation ------------------------------------------------------------------------
    def _validate(self):
        K = check_int("n_components", self.n_components, 1)
        taus = _as_grid("tau", self.tau)
        lams = self._lam_grid()
        if self.k_grid is None:
            ks = np.unique(np.clip([1, 2, 5, 10, 15, 20, 30, 40, 50, 75, 100, K], 1, K))
        else:
            ks = np.unique(np.array(check_ints("k_grid", self.k_grid, 1), dtype=np.int64))
            if ks.max() > K:
                raise ValueError(f"k_grid values must lie in [1, n_components={K}], "
                                 f"got {self.k_grid!r}")
        if self.w is not None:  # None: tuned on dev
            check_float("w", self.w, 0.0, strict=False)
        if self.solver not in ("auto", "dense", "randomized", "iterative"):
            raise ValueError(f"solver must be 'auto', 'dense', 'randomized' or 'iterative', "
                             f"got {self.solver!r}")
        check_bool("center", self.center)   # a TypeError, as everywhere else
        check_bool("progress", self.progress)
        check_int("w_window", self.w_window, 0)
        check_int("max_rank", self.max_rank, 1)
        check_view("input_view", self.input_view)
        check_view("output_view", self.output_view)
        return taus, lams, ks

    def _lam_grid(self):
        return _as_grid("lam", self.lam)

    # -- views -----------------------------------------------------------------------------
    def _candidate_view(self, nbest, name="nbest", output_view=None):
        view = self.output_view_ if output_view is None else output_view
        try:
            return view.transform_sequences(nbest.tag_ids, nbest.cand_offsets, nbest.tags)
        except TagsetMismatchError as exc:  # say which list, and whose tagset
            raise TagsetMismatchError(
                f"the candidates of {name} do not fit the tagset this {type(self).__name__} "
                f"was fitted on: {exc}") from None

    def _views(self, nbest, name="nbest", views=None):
        input_view, output_view = views or (self.input_view_, self.output_view_)
        X = input_view.transform(nbest.corpus)
        return X, self._candidate_view(nbest, name, output_view)

    # -- the model-specific part -----------------------------------------------------------
    def _cross_factor(self, Y, R, lam):  # pragma: no cover - abstract
        raise NotImplementedError

    def _solve_family(self, log, data, tau, lam, K, means):
        """Projections (A, B, omega, info) for one (tau, lam); ``means`` = (mu_x, mu_y);
        ``log`` (a :class:`SolveLog`) runs the engine's solves; ``data`` the training lists
        (a :class:`TrainingData`, or its partitioned counterpart)."""
        M = data.residual_factor(data.losses(), self._cross_factor, lam)
        A, B, omega, err = log.solve(M, tau, K)
        return A, B, omega, {"error": err}

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, train, dev=None):
        """Learn A and B on the (jackknifed) training n-best lists and tune on ``dev``.

        Parameters
        ----------
        train : NBestList with gold tags
        dev : NBestList with gold tags, optional
            Needed when any of tau, lam, k or w is to be tuned; without it the first grid
            values, k = n_components and w (which must then be given) are used.

        Returns
        -------
        self

        Warns
        -----
        RerankerToleranceWarning
            Once per fit, when the solves of some grid points missed the solver's tolerance
            by their own residuals (the estimate of the selected point is ``solver_error_``).
        """
        taus, lams, ks = self._validate()
        fit_partitioned = getattr(train, "_fit_cca_reranker", None)
        if fit_partitioned is not None:  # a sparsecca.distributed.PartitionedNBest
            return fit_partitioned(self, dev, (taus, lams, ks))
        train, dev = self._check_lists(train, dev, taus, lams, ks)
        input_view, output_view = views = self._new_views()
        X = input_view.fit_transform(train.corpus)
        Y = output_view.fit_transform(train.corpus)
        Yhat = self._candidate_view(train, "train", output_view)
        dev_data = None if dev is None else DevData(dev, *self._views(dev, "dev", views))
        return self._fit_data(TrainingData(train, X, Y, Yhat), dev_data, views,
                              (taus, lams, ks))

    def _new_views(self):
        """Unfitted clones of the views (the defaults for None)."""
        return (SuffixView() if self.input_view is None else clone_view(self.input_view),
                TagNgramView() if self.output_view is None else clone_view(self.output_view))

    def _fit_data(self, data, dev_data, views, grids):
        """The fit on the views of the training lists (``data``) and of dev (``dev_data``,
        None without dev): the engine, the grid search, the fitted attributes."""
        taus, lams, ks = grids
        # everything learned stays in locals until the grid is done: a refit that fails
        # (a rank-deficient solve, a bad dev list) leaves the previous fit intact and usable
        # the rank cap is part of the model (rank-plus-ridge C_xx): no adaptive doubling
        # a tag n-gram view too wide for a dense C_yy whitener (1-3 grams of a large XPOS
        # tagset reach tens of thousands of columns) gets a rank-2048 one under the
        # randomized solver, part of its model
        engine = CCAEngine(data.X, data.Y, solver=self.solver, max_rank=int(self.max_rank),
                           random_state=self.random_state, adaptive_rank=False,
                           center=bool(self.center), lowrank_y=self.solver == "randomized")
        # identical input columns (a tiny corpus) are merged by the engine: its d1 is the cap
        K = min(int(self.n_components), engine.n_merged_features_, data.Y.shape[1])
        ks = ks[ks <= K] if np.any(ks <= K) else np.array([K])
        # training means of the views (zero without centring): every projection is taken
        # of the centred vector, A^T (x - mu_x) and B^T (yhat - mu_y)
        means = data.means(bool(self.center))
        log = SolveLog(engine, type(self).__name__)
        best, grid_acc = self._search(log, data, dev_data, (taus, lams, ks), K, means)
        _, acc, tau, lam, k, w, A, B, omega, info = best
        dev = None if dev_data is None else dev_data.nbest
        # the fit succeeded: only now does it replace the previous one
        self.input_view_, self.output_view_ = views
        self.x_mean_, self.y_mean_ = means
        self._set_info(info)
        self.x_weights_ = np.ascontiguousarray(A[:, :k])
        self.y_weights_ = np.ascontiguousarray(B[:, :k])
        self.eigenvalues_ = np.asarray(omega[:k])
        self.n_components_ = int(k)
        self.tau_ = float(tau)
        self.w_ = float(w)
        if self._has_lam:
            self.lam_ = float(lam)
        self.solver_ = engine.solver_
        self.dev_accuracy_ = None if dev is None else float(acc)
        self.grid_scores_ = None if dev is None else {
            "tau": taus.tolist(), "lam": lams.tolist(), "accuracy": grid_acc.tolist()}
        self.grid_edges_ = self._edges(dev, taus, lams, ks, tau, lam, k, w)
        log.warn(self._point(tau, lam), self.solver_error_, stacklevel=4)
        return self

    def _check_lists(self, train, dev, taus, lams, ks):
        """Validate ``fit``'s lists; dev is needed when anything is to be tuned."""
        train = check_nbest(train, "train", need_gold=True)
        if train.n_sentences < 2:   # one row of X and Y: no covariance to estimate
            raise ValueError(f"train has {train.n_sentences} sentence; CCA needs at least 2")
        return train, self._check_dev(dev, train.corpus.tags, (taus, lams, ks))

    def _check_dev(self, dev, train_tags, grids):
        """``dev`` validated against the gold tagset of train; needed when anything is to
        be tuned (``grids``: tau, lam and k)."""
        taus, lams, ks = grids
        tuning = taus.size > 1 or lams.size > 1 or ks.size > 1 or self.w is None
        if dev is not None:
            dev = check_nbest(dev, "dev", need_gold=True)
            check_dev_tagset(train_tags, dev)
            if tuning:
                check_tuning_dev(dev, "fix scalar tau and lam, k_grid=[n_components] and a "
                                      "number for w")
        elif tuning:
            raise ValueError(
                "dev n-best list is required to tune tau, lam, k and w; give dev, or fix "
                "them (scalar tau and lam, k_grid=[n_components], a number for w)")
        return dev

    def _point(self, tau, lam):
        """A grid point in the user's terms."""
        return f"tau={tau:g}" + (f", lam={lam:g}" if self._has_lam else "")

    def _search(self, log, data, dev, grids, K, means):
        """The best grid point, as (score, dev accuracy, tau, lam, k, w, A, B, omega,
        info), and the dev accuracies of the (tau, lam) grid (``dev``: a DevData)."""
        taus, lams, ks = grids
        grid_acc = np.full((taus.size, lams.size), -np.inf)
        best = None
        points = [(a, b) for a in range(taus.size) for b in range(lams.size)]
        from tqdm.auto import tqdm

        # a point takes seconds: every update is drawn (no rate limit)
        bar = tqdm(total=len(points), desc=type(self).__name__, unit="grid point",
                   leave=False, mininterval=0, disable=not self.progress)
        for a, b in points:
            tau, lam = taus[a], lams[b]
            try:
                A, B, omega, info = self._solve_family(log, data, tau, lam, K, means)
            except RankDeficientError as exc:
                # say it in the user's terms: K is n_components capped at min(d1, d2)
                capped = (f" (capped at min(d1, d2) = {K}, d1 counting identical input "
                          f"columns once)" if K != self.n_components else "")
                raise ValueError(
                    f"n_components={self.n_components!r}{capped} exceeds the number of nonzero "
                    f"canonical correlations at {self._point(tau, lam)}: the cross-covariance "
                    f"has rank {exc.rank}{_rank_cause(exc.rank, data.n_sentences, self.center)}; "
                    f"give n_components <= {exc.rank}") from None
            log.close_point(self._point(tau, lam))
            if dev is None:
                cand = (-np.inf, -np.inf, tau, lam, K, float(self.w), A, B, omega, info)
            else:
                score, acc, k, w = self._tune_k_w(dev.nbest, dev.prefix_scores(A, B, means),
                                                  ks)
                grid_acc[a, b] = acc
                cand = (score, acc, tau, lam, k, w, A, B, omega, info)
            if best is None or cand[0] > best[0] + PLATEAU_TIE:  # ties: the earlier point
                best = cand
            bar.set_postfix(tau=f"{tau:g}", lam=f"{lam:g}",
                            best_dev=("-" if dev is None else f"{100 * best[1]:.2f}%"))
            bar.update()
        bar.close()
        return best, grid_acc

    def _edges(self, dev, taus, lams, ks, tau, lam, k, w):
        """What dev chose on an edge of its grid (the grids are not widened here: each
        point is an eigenproblem, and k cannot pass n_components without a refit)."""
        edges: list = []
        if dev is not None:
            note_edge(edges, "tau", taus, tau, low=0.0, high=1.0)
            if self._has_lam:
                note_edge(edges, "lam", lams, lam, low=0.0, high=1.0)
            note_edge(edges, "k", ks, k, low=1)
            if self.w is None and w > _W_GRID_TOP - 1.0:
                edges.append({"param": "w", "value": float(w), "side": "upper",
                              "tried": [0.0, _W_GRID_TOP], "widened": 0})
        return edges

    def _set_info(self, info):
        """Record what the solve of the selected grid point reported."""
        self.solver_error_ = info.get("error")

    def _tune_k_w(self, dev, P, ks):
        """Best (selection score, dev accuracy, k, w) over the k grid for one (tau, lam),
        ``P`` the dev candidates' prefix projection scores.

        The selection score is the plateau-averaged dev accuracy of :func:`tune_weight`
        (``w_window``), so k, tau and lam are compared on the same robust criterion as w.
        """
        best = (-np.inf, -np.inf, None, None)
        for k in ks:
            p = P[:, k - 1]
            if self.w is None:
                w, acc, curve = tune_weight(dev, p, window=int(self.w_window))
                score = plateau_score(curve, w, int(self.w_window))
            else:
                w = float(self.w)
                acc = 1.0 - losses_of_choice(dev, dev.argmax(dev.scores + w * p)) \
                    / dev.corpus.n_tokens
                score = acc
            if score > best[0] + PLATEAU_TIE:
                best = (score, acc, int(k), w)
        return best

    # -- scoring ---------------------------------------------------------------------------
    def projection_scores(self, nbest):
        """p_ij = cos(A^T x_i, B^T yhat_ij) (Eq. 1), shape (n_candidates,)."""
        self._check_fitted("x_weights_")
        nbest = check_nbest(nbest)
        X, Yhat = self._views(nbest)
        P = cosine_prefix_scores(centred_projection(X, self.x_weights_, self.x_mean_),
                                  centred_projection(Yhat, self.y_weights_, self.y_mean_),
                                  nbest.cand_sentence)
        return P[:, -1]

    def decision_function(self, nbest):
        """s_ij + w p_ij (Eq. 13), shape (n_candidates,)."""
        self._check_fitted("x_weights_")  # before w_ is read: NotFittedError, not AttributeError
        return nbest.scores + self.w_ * self.projection_scores(nbest)

    def tuned_params(self) -> dict:
        """The values chosen on dev (for reports)."""
        self._check_fitted("x_weights_")
        out = {"k": self.n_components_, "tau": self.tau_, "w": self.w_, "solver": self.solver_}
        if self._has_lam:
            out["lam"] = self.lam_
        return out


class GenerativeReranker(_LowDimReranker):
    """Plain regularised CCA between the sentence view and the gold tag-sequence view (M = Y).

    Parameters
    ----------
    n_components : int >= 1
        Largest number of components fitted; k <= n_components is tuned on dev.
    tau : float in [0, 1] or sequence
        Regularisation, C = (1 - tau) X^T X + tau I; a sequence is tuned on dev.
    k_grid : sequence of int, optional
        Prefix sizes tried on dev (default: 1, 2, 5, 10, 15, 20, 30, ... up to n_components).
    w : float >= 0 or None
        Weight of the projection score in Eq. 13; None tunes it on dev (grid 0..100 step 1,
        then a finer search around the best).
    solver : {'randomized', 'auto', 'dense', 'iterative'}
        Passed to the engine (:class:`sparsecca.linalg.CCAEngine`).
    max_rank : int >= 1
        With ``solver='randomized'``, the largest rank of the X factor: C_xx is then exact on
        the top ``max_rank`` singular directions of X and tau * I beyond (a rank-plus-ridge
        regulariser; exact whenever rank(X) <= max_rank).  ``solver_error_`` records the
        engine's a-posteriori error estimate against the exact regularised problem; when
        the solves of some grid points miss the solver's tolerance, ``fit`` says so in one
        :class:`RerankerToleranceWarning`.
    input_view, output_view : unfitted views
        Default ``SuffixView()`` (suffixes 2-4) and ``TagNgramView()`` (tag 1- and 2-grams).
        The input view must read the words only (its ``reads`` is ``{"words"}``:
        SuffixView, CharNgramView, WordView or an HStackView of them), since it is applied
        to the dev and test corpora, which hold their gold tags; the output view must read
        tags only (TagNgramView or an HStackView of them).  Anything else is a TypeError.
    random_state : int or None
    center : bool, default False
        Centre both views (implicitly: sparse inputs stay sparse) before the eigenproblem,
        and score A^T (x - mu_x) against B^T (yhat - mu_y) with the training means
        ``x_mean_`` / ``y_mean_``.  Uncentred (the paper's Eq. 11), the first canonical pair
        is the mean direction, shared by every candidate of a sentence.
    w_window : int >= 0, default 2
        w, k, tau and lam are chosen by the dev accuracy averaged over +-``w_window``
        neighbouring w grid points (see :func:`sparsecca.rerank.tune_weight`): a broad
        plateau beats a spike of a few tokens.  0 selects the raw dev maximum.
    progress : bool, default False
        A tqdm progress bar over the (tau, lam) grid points (one eigenproblem each, and for
        the discriminative model one per Algorithm 1 iteration), with the best dev accuracy
        so far.

    Attributes
    ----------
    x_weights_ : (d1, k) A;  y_weights_ : (d2, k) B;  eigenvalues_ : (k,) omega of Eq. 14
    n_components_, tau_, w_ : the tuned values;  solver_ : the engine solver used
    solver_error_ : float or None
        The engine's estimate of the relative error of the selected point's correlations
        (its last solve's, for the discriminative model); None when it gives none.
    grid_scores_ : dict of the dev accuracies over the tau grid (for Figure 1)
    grid_edges_ : list of dict
        The tuned values (tau, lam, k, w) that lie on an edge of their dev grid, which is not
        widened (``"param"``, ``"value"``, ``"side"``, ``"tried"``, ``"widened"``: 0); empty
        when none does.  A domain's end (tau or lam = 0 or 1, k = 1, w = 0) is no edge.

    Notes
    -----
    With X (n x d1) the input view of the training sentences and Y (n x d2) the output view
    of their gold tag sequences, the projections A, B solve the regularised CCA
    eigenproblem (Eq. 11) with ``C_xx = (1 - tau) X^T X + tau I``, the same for Y, and the
    cross-covariance ``C_xy = X^T M`` with ``M = Y``.  A candidate yhat_ij of sentence x_i
    scores ``p_ij = cos(A^T x_i, B^T yhat_ij)`` (Eq. 1) and is ranked by ``s_ij + w p_ij``
    (Eq. 13), s_ij its decoder log-probability.  Components are nested, so one fit at the
    largest k serves every k of ``k_grid``.

    References
    ----------
    J. Jagarlamudi and H. Daumé III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> from sparsecca.tagging import TrigramHMM, jackknife_nbest
    >>> train, dev = train_test_split(synthetic_corpus(200, random_state=0), test_size=50,
    ...                               random_state=0)
    >>> train_nbest = jackknife_nbest(TrigramHMM(), train, k=5, folds=2)
    >>> dev_nbest = TrigramHMM().fit(train).nbest(dev, k=5)
    >>> from sparsecca.rerank import GenerativeReranker
    >>> reranker = GenerativeReranker(n_components=10, tau=(0.9, 0.99), k_grid=[5, 10])
    >>> reranker = reranker.fit(train_nbest, dev_nbest)
    >>> sorted(reranker.tuned_params()), reranker.n_components_ in (5, 10)
    (['k', 'solver', 'tau', 'w'], True)
    >>> reranker.x_weights_.shape == (reranker.input_view_.n_features_, reranker.n_components_)
    True
    >>> reranker.rerank(dev_nbest).shape, reranker.projection_scores(dev_nbest).shape
    ((50,), (...,))
    >>> bool(0.5 < reranker.score(dev_nbest) <= 1.0)
    True

    Without dev, nothing is tuned: fix tau, k and w.

    >>> fixed = GenerativeReranker(n_components=5, tau=0.9, k_grid=[5], w=10.0)
    >>> fixed.fit(train_nbest).tuned_params()["k"]
    5
    """

    _has_lam = False

    def __init__(self, n_components=100, tau=(0.9, 0.99, 0.999), k_grid=None, w=None,
                 solver="randomized", max_rank=512, input_view=None, output_view=None,
                 random_state=0, w_window=2, center=False, progress=False):
        super().__init__(n_components=n_components, tau=tau, lam=0.0, k_grid=k_grid, w=w,
                         solver=solver, max_rank=max_rank, input_view=input_view,
                         output_view=output_view, random_state=random_state,
                         w_window=w_window, center=center, progress=progress)

    def _lam_grid(self):
        return np.array([0.0])

    def _solve_family(self, log, data, tau, lam, K, means):
        A, B, omega, err = log.solve(data.Y, tau, K)
        return A, B, omega, {"error": err}


class SoftenedReranker(_LowDimReranker):
    """Softened discriminative model (section 2.5): M = (1 - lam) Y + lam R.

    R's row i is (1/m_i) sum_j L_ij (y_i - yhat_ij), the loss-weighted mean residual of the
    sentence's candidates (:func:`sparsecca.kernels.aggregate_residuals`): the gold
    sequence is pulled towards its sentence and the bad candidates, in proportion to their
    Hamming loss L_ij, pushed away.  Scoring and tuning as in :class:`GenerativeReranker`.

    Parameters
    ----------
    lam : float in [0, 1] or sequence, default (0.5, 0.75, 0.9)
        Weight of the residual term; a sequence is tuned on dev (with tau, k and w).
    n_components, tau, k_grid, w, solver, max_rank, input_view, output_view
        As in :class:`GenerativeReranker` (``tau`` defaults to (0.9, 0.99)); so are
        ``random_state``, ``w_window``, ``center`` and ``progress``.

    Attributes
    ----------
    lam_ : float
        The tuned lam; the others as in :class:`GenerativeReranker`.

    References
    ----------
    J. Jagarlamudi and H. Daumé III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> from sparsecca.tagging import TrigramHMM, jackknife_nbest
    >>> train, dev = train_test_split(synthetic_corpus(200, random_state=0), test_size=50,
    ...                               random_state=0)
    >>> train_nbest = jackknife_nbest(TrigramHMM(), train, k=5, folds=2)
    >>> dev_nbest = TrigramHMM().fit(train).nbest(dev, k=5)
    >>> from sparsecca.rerank import SoftenedReranker
    >>> reranker = SoftenedReranker(n_components=10, tau=0.9, lam=(0.5, 0.9), k_grid=[5, 10])
    >>> reranker = reranker.fit(train_nbest, dev_nbest)
    >>> reranker.lam_ in (0.5, 0.9), reranker.tau_
    (True, 0.9)
    >>> len(reranker.grid_scores_["accuracy"][0])  # one dev accuracy per lam
    2
    >>> bool(0.5 < reranker.score(dev_nbest) <= 1.0)
    True
    """

    _state_values = _LowDimReranker._state_values + ("lam_",)

    def _cross_factor(self, Y, R, lam):
        return ((1.0 - lam) * Y + lam * R).tocsr()


class DiscriminativeReranker(_LowDimReranker):
    """Discriminative model (section 2.4), solved by Algorithm 1.

    The multipliers alpha start at the losses L (so iteration 0 is the softened model up to
    the factor 1/lam); each iteration solves Eq. 12 with M = ((1 - lam)/lam) Y + R_alpha,
    normalises A and B to the length constraints ||X a|| = ||Y b|| = 1, computes the margins
    x_i^T A_n B_n^T r_ij, the slacks xi_i (smallest positive psi_ij = (1 - margin) L_ij) and
    moves alpha by gamma * d_ij for sentences with positive slack; it stops after ``n_iter``
    iterations or when no slack changes.

    Parameters
    ----------
    lam : float in (0, 1] or sequence, default (0.3, 0.5, 0.75)
        lam = 0 is refused (the objective divides by lam).  The default grid spans the
        paper's best English value (lam = 0.3 with tau = 0.95, k = 75, section 4) and the
        values the softened model tends to pick (0.5-0.75).
    gamma : float > 0, default 0.1
        Step size of the multiplier update.
    n_iter : int >= 0, default 5
        Multiplier updates (the paper uses 5); 0 gives the softened model.
    tau : float in [0, 1] or sequence, default (0.99,)
    n_components, k_grid, w, solver, max_rank, input_view, output_view
        As in :class:`GenerativeReranker`; so are ``random_state``, ``w_window``,
        ``center`` and ``progress``.

    Attributes
    ----------
    n_iter_ : int, updates run;  slacks_ : (n_iter_, n) history of the slacks
    lam_ : float
        The tuned lam; the others as in :class:`GenerativeReranker`.

    Notes
    -----
    The margin constraints are ``x_i^T A B^T (y_i - yhat_ij) >= 1 - xi_i / L_ij`` for every
    candidate with loss L_ij > 0; the multiplier update is
    :func:`sparsecca.kernels.slack_update` (Algorithm 1, steps 9-14).  The tau grid defaults
    to the single value 0.99; every (tau, lam) point runs up to ``n_iter + 1`` solves.

    References
    ----------
    J. Jagarlamudi and H. Daumé III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> from sparsecca.tagging import TrigramHMM, jackknife_nbest
    >>> train, dev = train_test_split(synthetic_corpus(200, random_state=0), test_size=50,
    ...                               random_state=0)
    >>> train_nbest = jackknife_nbest(TrigramHMM(), train, k=5, folds=2)
    >>> dev_nbest = TrigramHMM().fit(train).nbest(dev, k=5)
    >>> from sparsecca.rerank import DiscriminativeReranker
    >>> reranker = DiscriminativeReranker(n_components=10, tau=0.9, lam=0.5, k_grid=[5, 10],
    ...                                   n_iter=2)
    >>> reranker = reranker.fit(train_nbest, dev_nbest)
    >>> reranker.n_iter_ <= 2, reranker.slacks_.shape[1] == train_nbest.n_sentences
    (True, True)
    >>> bool((reranker.slacks_ >= 0).all())
    True
    >>> bool(0.5 < reranker.score(dev_nbest) <= 1.0)
    True
    """

    _state_arrays = _LowDimReranker._state_arrays + ("slacks_",)
    _state_values = _LowDimReranker._state_values + ("lam_", "n_iter_")

    def __init__(self, n_components=100, tau=(0.99,), lam=(0.3, 0.5, 0.75), gamma=0.1,
                 n_iter=5, k_grid=None, w=None, solver="randomized", max_rank=512,
                 input_view=None, output_view=None, random_state=0, w_window=2,
                 center=False, progress=False):
        super().__init__(n_components=n_components, tau=tau, lam=lam, k_grid=k_grid, w=w,
                         solver=solver, max_rank=max_rank, input_view=input_view,
                         output_view=output_view, random_state=random_state,
                         w_window=w_window, center=center, progress=progress)
        self.gamma = gamma
        self.n_iter = n_iter

    def _lam_grid(self):
        return _as_grid("lam", self.lam, low_open=True)

    def _validate(self):
        out = super()._validate()
        check_float("gamma", self.gamma, 0.0, strict=True)
        check_int("n_iter", self.n_iter, 0)
        return out

    def _solve_family(self, log, data, tau, lam, K, means):
        L = data.losses()
        alpha = data.losses()
        X = log.engine.X
        scale = (1.0 - lam) / lam
        xi_prev = None
        history = []
        for it in range(int(self.n_iter) + 1):
            M = data.residual_factor(alpha, scaled_sum, scale)
            A, B, omega, err = log.solve(M, tau, K)
            if it == int(self.n_iter):
                break
            xi, alpha = data.slack_step(X, A, B, means, L, alpha, float(self.gamma))
            history.append(xi)
            if xi_prev is not None and np.allclose(xi, xi_prev, rtol=1e-9, atol=1e-12):
                break
            xi_prev = xi
        return A, B, omega, {"slacks": history, "n": data.n_sentences, "error": err}

    def _set_info(self, info):
        super()._set_info(info)
        hist = info["slacks"]
        self.n_iter_ = len(hist)
        self.slacks_ = np.array(hist) if hist else np.zeros((0, info["n"]))

    def tuned_params(self) -> dict:
        out = super().tuned_params()
        out.update(gamma=float(self.gamma), n_iter=self.n_iter_)
        return out
