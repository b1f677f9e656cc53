"""Regularised CCA at corpus scale: the estimator and the tau path (on :class:`CCAEngine`).

Scaling (the paper's, Eq. 11): Cxx = (1 - tau) X^T X + tau I, Cyy = (1 - tau) Y^T Y + tau I,
Cxy = X^T M *unscaled*.  With tau > 0 the generalized eigenvalues are therefore not bounded
by 1: sqrt(omega) = a^T Cxy b with a^T Cxx a = b^T Cyy b = 1 can reach 1 / (1 - tau) (count
data with strongly correlated views come close to it).  At tau = 0 they are the classical
canonical correlations.  The Pearson correlations of the training projections are reported
separately (``empirical_correlations_``).
"""


from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from collections.abc import Set as AbcSet

import numpy as np

from .._params import ParamsMixin, check_bool
from .._persist import ModelFormatError, PersistMixin, state_array, to_json
from ..exceptions import NotFittedError
from ._centring import _pearson
from ._dask_operator import dask_transform, is_dask
from ._engine import (
    PRECONDITIONERS,
    SOLVERS,
    CCAEngine,
    _beyond_dense_whitener,
    _check_distinct_columns,
)
from ._gram import centred_projection
from ._thresholds import Thresholds, active, applied, check_thresholds
from ._validation import (
    check_choice,
    check_matrix,
    check_n_components,
    check_same_rows,
    check_tau,
    check_verbose,
)

__all__ = ["SparseCCA", "cca_path"]


def _shape2(M):
    shape = getattr(M, "shape", None)
    if shape is None:
        try:
            shape = np.shape(M)
        except Exception:  # ragged: check_matrix says so
            return None
    return tuple(shape) if len(shape) == 2 else None


def _whitens_x_instead(X, Y):
    """Whether SparseCCA should solve (Y, X): Y is beyond a dense whitener and X is
    narrower."""
    sx, sy = _shape2(X), _shape2(Y)
    if sx is None or sy is None:
        return False  # the engine's validation reports it
    return _beyond_dense_whitener(sy) and sx[1] < sy[1]


def _swap_note():
    """What SparseCCA says (verbose, solver_reason_) when it solved (Y, X)."""
    return (f"views swapped (Y has more than {active().y_dense_max:,} features, X fewer: the solve "
            f"whitens X's covariance)")


def _user_dims(engine, swapped):
    """(d1, d2) in the caller's order."""
    d1, d2 = engine.X.shape[1], engine.Y.shape[1]
    return (d2, d1) if swapped else (d1, d2)


# -- the estimator ------------------------------------------------------------------------

class SparseCCA(PersistMixin, ParamsMixin):
    """Regularised CCA for sparse, high-dimensional views (scikit-learn transformer API).

    Solves Eq. 11 of Jagarlamudi & Daume III (2012) in the reduced form of Eq. 14-15:

        Cxx = (1 - tau) Xc^T Xc + tau I,   Cyy = (1 - tau) Yc^T Yc + tau I,   Cxy = Xc^T Yc

    (Xc = X unless ``center=True``; Cxy is not scaled by 1 - tau, so the correlations can
    exceed 1, up to 1 / (1 - tau)).  No d x d covariance is formed unless a dense factor is
    chosen: the fast solvers apply the covariances as sparse products.

    Parameters
    ----------
    n_components : int in [1, min(d1, d2)], default 2
        Number k of projection pairs.
    tau : float in [0, 1], default 0.1
        tau = 0 is classical CCA (needs nonsingular X^T X and Y^T Y); tau = 1 makes both
        covariances the identity (a PLS-like SVD of Cxy).
    solver : {'auto', 'dense', 'randomized', 'iterative'}, default 'auto'
        'dense': Cholesky factors of Cxx and Cyy (or of their n x n dual forms when n is
        the smaller side), the exact reference; O(min(n, d1)^3) time, min(n, d1)^2 memory.
        'randomized': a low-rank-plus-diagonal model of Cxx^-1 from a randomized factor of
        X, refined by LOBPCG on the exact problem until the error estimate meets ``tol``
        (when LOBPCG's block of about 1.5 k columns is thin against d1; else the factor's
        rank grows).  'iterative': LOBPCG on the pencil (Cxy Cyy^-1 Cyx, Cxx) preconditioned
        by a small factor (block CG solves when the block would not be thin), exact to
        ``tol``.  'auto': 'dense' while min(n, d1) <= 8000, else 'iterative'
        (``solver_reason_`` says why).
    center : bool, default False
        Centre both views: a sparse view implicitly (never densified; a
        :class:`~sparsecca.linalg.CentringPrecisionWarning` when its column means dominate
        its spread so much that the correction cancels more than eight digits), a dense one
        in a float64 copy (exact whatever its offsets).
    tol : float in (0, 1), optional
        Relative accuracy target of the correlations (default 1e-3 for 'randomized', 1e-7
        for 'iterative').  Both fast solvers warn (RuntimeWarning) when their error estimate
        does not certify it.
    max_rank : int, optional
        Largest rank of the randomized factor.
    preconditioner : {'auto', 'dense', 'low-rank'}, default 'auto'
        What preconditions the fast solvers' LOBPCG, and so the norm ``error_estimate_`` is
        measured in: 'dense' the Cholesky factor of Cxx whatever its size (min(n, d1)^2
        floats), 'low-rank' the low-rank-plus-diagonal model of Cxx^-1 (also when LOBPCG
        stalls), 'auto' the dense factor while min(n, d1) <= min(8192, max(d2, 2048)), else
        the model, handing over to the dense factor while min(n, d1) <= 8192 when LOBPCG is
        too slow under the model (:meth:`CCAEngine.exact_preconditioner_fits`,
        :meth:`CCAEngine.exact_rescue_fits`; ``solver_reason_`` says which was used).
    certify : bool, default False
        Under the low-rank model, check LOBPCG's stopping test in the exact Cxx^-1 norm
        (bounded by preconditioned CG) before it stops, so that ``error_estimate_`` is
        measured in that norm, at the cost of extra products with Cxx.  Off, the estimate
        past the dense factor's reach is a heuristic that can understate the error on text
        views.  Where the exact norms stop falling under the model's preconditioning,
        LOBPCG gives up with a warning after 20 steps without progress; the dense factor
        (``preconditioner='dense'``) or ``solver='iterative'`` is then the way to a
        certified solve.
    random_state : None, int, numpy Generator or RandomState
        Seed of the randomized factor and of the randomized starting blocks.
    verbose : int or bool, default 0
        Progress on stdout: 1 reports the problem and solver, each factorisation with its
        time, LOBPCG every 10 steps (relative residual and error estimate against their
        targets) and the outcome; 2 every step.
    thresholds : Thresholds, optional
        The engine's numeric thresholds (``sparsecca.linalg.Thresholds``: sizes, ratios
        and step counts of its rules), in force during ``fit``, ``fit_path`` and
        ``transform``; None: the defaults.

    Attributes
    ----------
    x_weights_ : (d1, k) float64 ndarray
        A, with A^T Cxx A = I.
    y_weights_ : (d2, k) float64 ndarray
        B, with B^T Cyy B = I.
    eigenvalues_ : (k,) float64 ndarray
        omega of Eq. 14, descending.
    correlations_ : (k,) float64 ndarray
        sqrt(omega) = a_j^T Cxy b_j (up to 1 / (1 - tau)).
    empirical_correlations_ : (k,) float64 ndarray
        Pearson correlation of X a_j and Y b_j on the training data (from the second
        moments the solve forms, or from the projections themselves when subtracting the
        mean would cancel most digits).
    residual_norms_ : (k,) float64 ndarray
        A-posteriori bound: an exact sqrt(omega) lies within this distance.
    error_estimate_ : float
        Estimated relative error of the correlations (see Notes).
    solver_ : str
        The solver used.
    solver_reason_ : str
        Why: 'auto''s rule (or "requested"), whether the views were swapped (see Notes)
        and, for the fast solvers, what preconditioned LOBPCG or block CG: the dense factor
        of Cxx, in whose exact norm ``error_estimate_`` is measured, or the
        low-rank-plus-diagonal model.
    rank_ : int
        Rank of the randomized factor of X (0 for 'dense').
    n_iter_ : int
        LOBPCG steps (or block CG iterations when 'iterative' used them).
    x_mean_, y_mean_ : (d1,) and (d2,) float64 ndarrays, or None
        Column means (``center=True``), else None.
    n_features_in_ : int
        d1.
    n_merged_features_ : int
        Columns of X left after merging identical columns (an exact reduction).

    See Also
    --------
    CCAEngine : the solver behind the estimator (any tau, any cross-covariance factor).
    cca_path : a tau grid sharing the tau-independent factorisations (also :meth:`fit_path`).

    Notes
    -----
    The randomized low-rank-plus-ridge model of Cxx^-1 is exact once its rank reaches
    rank(X) and accurate earlier only when the spectrum of X^T X decays; for sparse count
    features it does not.  So 'randomized' uses the model as the preconditioner and starting
    point of LOBPCG on the exact problem and stops at ``tol``; 'iterative' is the same
    method at a tight ``tol`` with a smaller factor.  Every solver ends with a Rayleigh-Ritz
    step in the exact metrics, so the Cxx- and Cyy-orthonormality holds to rounding and
    ``correlations_`` are achieved values (lower bounds of the exact ones), with
    ``residual_norms_`` as a-posteriori error bounds.

    ``error_estimate_`` is LOBPCG's squared residual over the spectral gap when it ran (the
    residual measured in the preconditioner's norm: the exact Cxx^-1 norm with the dense
    factor or ``certify=True``, an approximation of it under the low-rank model), else the
    first-order residual bound (loose: the correlations are accurate to about its square);
    or, when smaller, the bound 1 - (1 - tau) correlations_[-1] (the correlations are lower
    bounds of the exact ones, which 1 / (1 - tau) caps: saturated clusters, where LOBPCG
    also stops on it).

    The solve whitens Cyy by a dense factor, so a Y with more than 10,000 features and rows
    is solved as (Y, X) when X has fewer features; CCA is symmetric in its views and every
    attribute is in the caller's order.

    A fitted model is written with ``save(path)`` and read back with
    ``SparseCCA.load(path)`` (or :func:`sparsecca._persist.load_model`): one ``.npz`` of the
    learned arrays plus JSON metadata, never pickle; the loaded model's ``transform`` is
    bit-identical.  A random_state given as a numpy Generator or RandomState is stored as
    None.  docs/engine.md gives the reasons for each solver rule and the measurements
    behind them.

    References
    ----------
    J. Jagarlamudi and H. Daume III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709.
    A. V. Knyazev (2001).  Toward the optimal preconditioned eigensolver: locally optimal
    block preconditioned conjugate gradient method.  SIAM J. Sci. Comput. 23(2), 517-541.
    N. Halko, P. G. Martinsson and J. A. Tropp (2011).  Finding structure with randomness.
    SIAM Review 53(2), 217-288.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import SparseCCA
    >>> X = sp.random(300, 40, density=0.1, format="csr", random_state=0)
    >>> Y = sp.random(300, 8, density=0.3, format="csr", random_state=1)
    >>> cca = SparseCCA(n_components=3, tau=0.1).fit(X, Y)
    >>> cca.solver_
    'dense'
    >>> cca.x_weights_.shape, cca.y_weights_.shape
    ((40, 3), (8, 3))
    >>> x_scores, y_scores = cca.transform(X, Y)
    >>> x_scores.shape
    (300, 3)
    >>> bool(np.all(np.diff(cca.correlations_) <= 0))
    True

    Uncentred, the first component of count data follows the mean direction, so its
    correlation in the paper's sense and its Pearson correlation differ:

    >>> [round(float(c), 3) for c in cca.correlations_[:2]]
    [0.867, 0.501]
    >>> [round(float(c), 3) for c in cca.empirical_correlations_[:2]]
    [0.251, 0.455]

    A fast solver agrees with the dense one to its tolerance:

    >>> fast = SparseCCA(3, tau=0.1, solver="iterative", random_state=0).fit(X, Y)
    >>> bool(np.allclose(fast.correlations_, cca.correlations_, rtol=1e-6))
    True

    Centred views at tau = 0 give the classical canonical correlations, which are the
    Pearson correlations of the projections:

    >>> rng = np.random.default_rng(0)
    >>> Z = rng.standard_normal((200, 2))
    >>> Xd = Z @ rng.standard_normal((2, 6)) + rng.standard_normal((200, 6))
    >>> Yd = Z @ rng.standard_normal((2, 4)) + rng.standard_normal((200, 4))
    >>> cca0 = SparseCCA(2, tau=0.0, center=True).fit(Xd, Yd)
    >>> bool(np.allclose(cca0.correlations_, cca0.empirical_correlations_))
    True

    A tau grid shares the factorisations:

    >>> [model.tau_ for model in cca.fit_path(X, Y, [0.1, 0.5])]
    [0.1, 0.5]
    """

    # what save() stores (the merged-duplicate mapping is not needed: the weights are stored
    # for the original columns); load() validates it all in _check_state
    _state_arrays = ("x_weights_", "y_weights_", "eigenvalues_", "correlations_",
                     "residual_norms_", "empirical_correlations_", "x_mean_", "y_mean_")
    _state_values = ("error_estimate_", "solver_", "solver_reason_", "rank_", "n_iter_", "tau_",
                     "n_components_", "n_features_in_", "n_merged_features_")

    def __init__(self, n_components=2, *, tau=0.1, solver="auto", center=False, tol=None,
                 max_rank=None, preconditioner="auto", certify=False, random_state=None,
                 verbose=0, thresholds=None):
        self.n_components = n_components
        self.tau = tau
        self.solver = solver
        self.center = center
        self.tol = tol
        self.max_rank = max_rank
        self.preconditioner = preconditioner
        self.certify = certify
        self.random_state = random_state
        self.verbose = verbose
        self.thresholds = thresholds

    def _engine(self, X, Y):
        """(engine, swapped): the engine gets (Y, X) when only that order keeps C_yy's
        whitener dense (Y with more than ``y_dense_max`` features and rows, X with fewer
        features than Y); CCA is symmetric in its views, so the result is swapped back."""
        check_choice(self.solver, "solver", SOLVERS)
        check_bool("center", self.center)
        swapped = _whitens_x_instead(X, Y)
        if swapped:
            X, Y = Y, X
        engine = CCAEngine(X, Y, solver=self.solver, center=bool(self.center), tol=self.tol,
                           max_rank=self.max_rank, preconditioner=self.preconditioner,
                           certify=self.certify, random_state=self.random_state,
                           verbose=self.verbose, thresholds=self.thresholds)
        if swapped:
            engine._say(_swap_note())
        return engine, swapped

    def fit(self, X, Y):
        """Fit A and B.

        Parameters
        ----------
        X : (n, d1) array-like or scipy.sparse matrix, or dask.array.Array
        Y : (n, d2) array-like or scipy.sparse matrix, or dask.array.Array
            n >= 2; finite values whose covariances neither overflow nor underflow float64
            (n * max|x|^2 between 2.2e-308 and 1.8e308), else a ValueError.  Dask arrays:
            both views, chunked by rows only alike (see :class:`CCAEngine`).

        Returns
        -------
        self
        """
        with applied(check_thresholds(self.thresholds)):
            return self._fit(X, Y)

    def _fit(self, X, Y):
        tau = check_tau(self.tau)
        _check_n_components_early(self.n_components, X, Y)
        engine, swapped = self._engine(X, Y)
        k = _check_distinct_columns(
            engine, check_n_components(self.n_components, *_user_dims(engine, swapped)),
            "Y" if swapped else "X")
        res = engine._solve(engine.Y, tau, k)
        self._set_result(engine, res, tau, swapped)
        return self

    def fit_path(self, X, Y, taus):
        """Fit one model per tau, sharing the tau-independent factorisations of X and Y.

        Parameters
        ----------
        X, Y : as in :meth:`fit`
        taus : list, tuple or 1-D array of floats in [0, 1]
            The fits come in this order (a set, having none, is refused).

        Returns
        -------
        list of fitted SparseCCA (copies of self with ``tau`` set), in the order of ``taus``
        """
        with applied(check_thresholds(self.thresholds)):
            return self._fit_path(X, Y, taus)

    def _fit_path(self, X, Y, taus):
        taus = _check_taus(taus)
        _check_n_components_early(self.n_components, X, Y)
        engine, swapped = self._engine(X, Y)
        k = _check_distinct_columns(
            engine, check_n_components(self.n_components, *_user_dims(engine, swapped)),
            "Y" if swapped else "X")
        out = []
        for tau in taus:
            est = type(self)(**{**self.get_params(), "tau": tau})
            est._set_result(engine, engine._solve(engine.Y, tau, k), tau, swapped)
            out.append(est)
        return out

    def _set_result(self, engine, res, tau, swapped=False):
        A, B, omega = res
        # Pearson correlations of the projections: the same in either order of the views
        self.empirical_correlations_ = _training_correlations(engine, A, B, res)
        EX, EY, merged = engine.X, engine.Y, engine.n_merged_features_
        if swapped:  # the engine solved (Y, X); only the engine's X has merged columns
            A, B, EX, EY, merged = B, A, EY, EX, EY.shape[1]
        self.x_weights_ = A
        self.y_weights_ = B
        self.eigenvalues_ = omega
        self.correlations_ = res.correlations
        self.residual_norms_ = res.residual_norms
        self.error_estimate_ = res.error_estimate
        self.solver_ = engine.solver_
        self.solver_reason_ = engine.solver_reason_ + (f"; {_swap_note()}" if swapped else "")
        pre = res.__dict__.get("preconditioner")
        if pre is not None:  # which norm the error estimate was measured in
            self.solver_reason_ += {
                "dense": "; preconditioned by the dense factor of C_xx",
                "low-rank": "; preconditioned by the low-rank-plus-diagonal model of "
                            "C_xx^-1",
                "low-rank, then dense": "; preconditioned by the low-rank-plus-diagonal "
                                        "model of C_xx^-1 until LOBPCG was too slow, then "
                                        "by the dense factor of C_xx"}[pre]
            if "certify_steps" in res.__dict__:
                self.solver_reason_ += (f", its error estimate checked in the exact C_xx^-1 "
                                        f"norm (certify: {res.certify_steps} CG steps)")
        self.rank_ = int(res.rank)
        self.n_iter_ = int(res.n_iter)
        self.tau_ = tau
        self.n_components_ = A.shape[1]
        self.n_features_in_ = EX.shape[1]
        self.n_merged_features_ = merged
        # the engine solves on X with duplicate columns merged; the weights come back expanded,
        # so the means must be those of the original columns
        # (from the engine's cached column sums, also of Dask views)
        means = [engine._column_sums(v) / EX.shape[0] if engine.center else None
                 for v in ("XY" if not swapped else "YX")]
        self.x_mean_, self.y_mean_ = means

    def _check_fitted(self):
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"this {type(self).__name__} instance is not fitted yet; "
                                 f"call fit(X, Y) first")

    def _persist_params(self):
        """The parameters as JSON; ``thresholds`` as the dict of its fields."""
        params = self.get_params()
        if isinstance(params.get("thresholds"), Thresholds):
            params["thresholds"] = dataclasses.asdict(params["thresholds"])
        return to_json(params, "params")["__dict__"]

    def _check_state(self):
        """Validate what load() restored: shapes, dtypes, finite values, consistent scalars."""
        if isinstance(self.thresholds, dict):
            try:
                self.thresholds = Thresholds(**self.thresholds)
            except TypeError as exc:
                raise ModelFormatError(f"parameter thresholds: {exc}") from None
        check_thresholds(self.thresholds)
        check_choice(self.solver, "solver", SOLVERS)
        check_choice(self.preconditioner, "preconditioner", PRECONDITIONERS)
        check_tau(self.tau)
        check_verbose(self.verbose)
        for name in ("center", "certify"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ModelFormatError(f"parameter {name} must be True or False, got "
                                       f"{getattr(self, name)!r}")

        def count(name, low):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ModelFormatError(f"metadata value {name!r} must be an int >= {low}, "
                                       f"got {v!r}")
            return v

        k = count("n_components_", 1)
        d1 = count("n_features_in_", 1)
        if count("n_merged_features_", 1) > d1:
            raise ModelFormatError(f"metadata value 'n_merged_features_' must be at most "
                                   f"n_features_in_ = {d1}, got {self.n_merged_features_}")
        count("rank_", 0)
        count("n_iter_", 0)
        if self.solver_ not in SOLVERS[1:]:
            raise ModelFormatError(f"metadata value 'solver_' must be one of {SOLVERS[1:]}, "
                                   f"got {self.solver_!r}")
        if not isinstance(self.solver_reason_, str):
            raise ModelFormatError(f"metadata value 'solver_reason_' must be a str, got "
                                   f"{self.solver_reason_!r}")
        for name, high in (("tau_", 1.0), ("error_estimate_", None)):
            v = getattr(self, name)
            if isinstance(v, int) and not isinstance(v, bool):
                v = float(v)
            if not isinstance(v, float) or not np.isfinite(v) or v < 0 \
                    or (high is not None and v > high):
                rng = f"[0, {high}]" if high is not None else ">= 0"
                raise ModelFormatError(f"metadata value {name!r} must be a finite float "
                                       f"{rng}, got {v!r}")
            setattr(self, name, v)
        a = {name: getattr(self, name) for name in self._state_arrays}
        yw = a["y_weights_"]
        d2 = yw.shape[0] if isinstance(yw, np.ndarray) and yw.ndim == 2 else -1
        if d2 < 1:
            raise ModelFormatError(f"array 'y_weights_' must be 2-d with at least one row, got "
                                   f"{getattr(yw, 'shape', yw)!r}")
        if k > min(d1, d2):
            raise ModelFormatError(f"n_components_ = {k} exceeds min(d1, d2) = {min(d1, d2)}")
        shapes = {"x_weights_": (d1, k), "y_weights_": (d2, k), "eigenvalues_": (k,),
                  "correlations_": (k,), "residual_norms_": (k,),
                  "empirical_correlations_": (k,), "x_mean_": (d1,), "y_mean_": (d2,)}
        for name, shape in shapes.items():
            if name in ("x_mean_", "y_mean_"):
                if (a[name] is None) == bool(self.center):
                    raise ModelFormatError(
                        f"array {name!r} must be {'present' if self.center else 'absent'} for "
                        f"center={bool(self.center)}")
                if a[name] is None:
                    continue
            elif a[name] is None:
                raise ModelFormatError(f"array {name!r} is missing")
            checked = state_array(a, name, "float", ndim=len(shape), shape=shape)
            if a[name].flags.f_contiguous and not a[name].flags.c_contiguous:
                checked = np.asfortranarray(checked)  # same memory layout, same rounding
            setattr(self, name, checked)

    def transform(self, X, Y=None):
        """Project X (and Y): Xc A, optionally (Xc A, Yc B).

        Parameters
        ----------
        X : (m, d1) array-like or sparse, or dask.array.Array chunked by rows only
        Y : (m, d2) array-like or sparse, optional; a Dask array with X's row chunks when X
            is one

        Returns
        -------
        x_scores : (m, k) array, or (x_scores, y_scores) when Y is given; lazy Dask arrays
            of (chunk rows, k) blocks for Dask input
        """
        self._check_fitted()
        with applied(check_thresholds(self.thresholds)):
            return self._transform(X, Y)

    def _transform(self, X, Y):
        if is_dask(X) or is_dask(Y):
            return dask_transform(self, X, Y)
        X = check_matrix(X, "X")
        if X.shape[1] != self.x_weights_.shape[0]:
            raise ValueError(f"X must have {self.x_weights_.shape[0]} features as in fit, "
                             f"got {X.shape[1]}")
        xs = centred_projection(X, self.x_weights_, self.x_mean_)
        if Y is None:
            return xs
        Y = check_matrix(Y, "Y")
        check_same_rows(X=X, Y=Y)
        if Y.shape[1] != self.y_weights_.shape[0]:
            raise ValueError(f"Y must have {self.y_weights_.shape[0]} features as in fit, "
                             f"got {Y.shape[1]}")
        return xs, centred_projection(Y, self.y_weights_, self.y_mean_)

    def fit_transform(self, X, Y):
        """fit(X, Y) then transform(X, Y): returns (x_scores, y_scores)."""
        return self.fit(X, Y).transform(X, Y)

    def get_feature_names_out(self, input_features=None):
        """Names of the x scores' columns: ``sparsecca0`` ... (scikit-learn's convention).

        Parameters
        ----------
        input_features : sequence of n_features_in_ str, optional
            Only checked for its length (the scores mix every input feature).

        Returns
        -------
        (n_components_,) object array of str
        """
        self._check_fitted()
        if input_features is not None and len(input_features) != self.n_features_in_:
            raise ValueError(f"input_features must have n_features_in_ = "
                             f"{self.n_features_in_} names, got {len(input_features)}")
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self.n_components_)], dtype=object)

    # -- the scikit-learn protocol (scikit-learn is imported only when it asks) ------------
    def __sklearn_is_fitted__(self):
        return hasattr(self, "x_weights_")

    def __sklearn_tags__(self):
        """scikit-learn >= 1.6 asks every step of a Pipeline for its tags (``check_is_fitted``
        among others): a transformer of dense or sparse 2-D X, fitted with a 2-D Y."""
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        return Tags(estimator_type=None,
                    target_tags=TargetTags(required=True, two_d_labels=True,
                                           multi_output=True, single_output=False),
                    transformer_tags=TransformerTags(preserves_dtype=["float64"]),
                    input_tags=InputTags(sparse=True))


def _training_correlations(engine, A, B, res):
    """Pearson correlations of the training projections X a_j and Y b_j, (k,).

    From the second moments the solve's final step formed (``projection_moments``) and the
    column means: no pass over the data (which would cost more than the rest of a warm
    solve of a tau grid).  When
    removing the mean would cancel most of a moment (uncentred data, a projection nearly
    constant) the projections are formed and correlated directly instead.
    """
    moments = getattr(res, "projection_moments", None)
    if moments is not None:
        xx, yy, xy = (np.asarray(v, dtype=np.float64) for v in moments)
        if not engine.center:
            n = engine.X.shape[0]
            mx = engine._column_sums("X") @ A / n
            my = engine._column_sums("Y") @ B / n
            cx, cy = n * mx * mx, n * my * my
            cancel = active().moment_cancel_max
            if np.all(cx <= cancel * xx) and np.all(cy <= cancel * yy):
                xx, yy, xy = xx - cx, yy - cy, xy - n * mx * my
            else:
                moments = None
    if moments is None:  # (Dask views: the n x k projections gathered by _pearson)
        return _pearson(centred_projection(engine.X, A), centred_projection(engine.Y, B))
    den = np.sqrt(np.maximum(xx, 0.0) * np.maximum(yy, 0.0))
    out = np.zeros_like(xy)
    np.divide(xy, den, out=out, where=den > 0)
    return out


def _check_n_components_early(k, X, Y):
    """:func:`check_n_components` on the shapes X and Y already have, before an engine
    reads them (a bad k fails at once, not after the pass over the data; the check on the
    merged shapes follows as before).  Skipped unless both are 2-D with rows and columns:
    the engine's own errors name what is wrong with them."""
    shapes = [getattr(A, "shape", None) for A in (X, Y)]
    if all(isinstance(s, tuple) and len(s) == 2 and min(s) >= 1 for s in shapes):
        check_n_components(k, shapes[0][1], shapes[1][1])


def _check_taus(taus):
    """A non-empty ordered sequence of taus in [0, 1], as a list of floats.

    The results come in the order of ``taus``: a set (or a dict, or its keys) has no order
    of its own to give them, so it is refused rather than followed in hash order."""
    if isinstance(taus, (AbcSet, Mapping)):
        raise TypeError(f"taus must be an ordered sequence (a list, tuple or array) of floats "
                        f"in [0, 1]: the results come in its order; got a "
                        f"{type(taus).__name__} {taus!r}")
    if (isinstance(taus, (str, bytes)) or np.isscalar(taus)
            or isinstance(taus, np.ndarray) and taus.ndim == 0):
        raise TypeError(f"taus must be a non-empty sequence of floats in [0, 1], got {taus!r}")
    vals = list(taus)
    if not vals:
        raise ValueError("taus must be a non-empty sequence of floats in [0, 1], got []")
    return [check_tau(t, "taus[%d]" % i) for i, t in enumerate(vals)]


def cca_path(X, Y, taus, n_components, *, solver="auto", center=False, tol=None,
             max_rank=None, preconditioner="auto", certify=False, random_state=None, M=None,
             verbose=0, thresholds=None):
    """Regularised CCA for a grid of tau values, reusing the tau-independent factorisations.

    Parameters
    ----------
    X : (n, d1), Y : (n, d2) arrays or sparse matrices
    taus : list, tuple or 1-D array of floats in [0, 1]
        The results come in this order (a set, having none, is refused).
    n_components : int
    solver, center, tol, max_rank, preconditioner, certify, random_state, verbose,
    thresholds : as in :class:`SparseCCA`
    M : (n, d2), optional
        Cross-covariance factor (default Y).

    Returns
    -------
    list of CCAResult, one per tau (each unpacks as A, B, omega)

    Raises
    ------
    TypeError, ValueError
        For a bad argument (``taus`` empty, unordered or out of [0, 1]; see also
        :class:`CCAEngine`).

    See Also
    --------
    SparseCCA.fit_path : the same grid as fitted estimators.

    Notes
    -----
    One :class:`CCAEngine` solves the grid in the order given: the factorisations that do
    not depend on tau (the dense Gram matrices, the randomized factor of X, X^T M) are
    formed once, and each LOBPCG solve starts from the previous tau's final block.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import cca_path
    >>> X = sp.random(300, 40, density=0.1, format="csr", random_state=0)
    >>> Y = sp.random(300, 8, density=0.3, format="csr", random_state=1)
    >>> path = cca_path(X, Y, [0.1, 0.5, 0.9], n_components=2)
    >>> [res.tau for res in path]
    [0.1, 0.5, 0.9]
    >>> A, B, omega = path[0]
    >>> A.shape, B.shape
    ((40, 2), (8, 2))

    C_xy is not scaled by 1 - tau, so the correlations can exceed 1 (up to 1 / (1 - tau)):

    >>> [round(float(res.correlations[0]), 3) for res in path]
    [0.867, 1.52, 6.404]
    """
    taus = _check_taus(taus)
    _check_n_components_early(n_components, X, Y)
    engine = CCAEngine(X, Y, solver=solver, center=center, tol=tol, max_rank=max_rank,
                       preconditioner=preconditioner, certify=certify,
                       random_state=random_state, verbose=verbose, thresholds=thresholds)
    M = engine.Y if M is None else M
    return [engine.solve(M, tau, n_components) for tau in taus]
