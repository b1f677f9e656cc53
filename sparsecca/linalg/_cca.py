"""Regularised CCA at corpus scale: the reusable engine, the estimator and the tau path.

Scaling (the paper's, Eq. 11): Cxx = (1 - tau) X^T X + tau I, Cyy = (1 - tau) Y^T Y + tau I,
Cxy = X^T M *unscaled*.  With tau > 0 the generalized eigenvalues are therefore not bounded
by 1: sqrt(omega) = a^T Cxy b with a^T Cxx a = b^T Cyy b = 1 can reach 1 / (1 - tau) (count
data with strongly correlated views come close to it).  At tau = 0 they are the classical
canonical correlations.  The Pearson correlations of the training projections are reported
separately (``empirical_correlations_``).
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
import weakref
from collections.abc import Mapping
from collections.abc import Set as AbcSet
from contextlib import nullcontext

import numpy as np

from .._params import ParamsMixin, check_bool
from .._persist import ModelFormatError, PersistMixin, state_array, to_json
from ..exceptions import NotFittedError
from ._gram import (
    CrossCovariance,
    _ColumnMerge,
    _DataMatrix,
    centred_projection,
    column_mean,
    column_sums,
)
from ._inverse import TAILS, GramFactor, RegularizedInverse
from ._lobpcg import lobpcg_fits
from ._reduced import reduced_cca
from ._result import CCAResult
from ._stopping import dense_factor_cost
from ._threads import small_blas
from ._thresholds import Thresholds, active, applied, check_thresholds
from ._validation import (
    check_choice,
    check_magnitude,
    check_matrix,
    check_n_components,
    check_n_samples,
    check_positive_int,
    check_random_state,
    check_same_rows,
    check_tau,
    check_tolerance,
    check_verbose,
)

__all__ = ["CCAEngine", "SparseCCA", "cca_path"]

SOLVERS = ("auto", "dense", "randomized", "iterative")
#: what preconditions the fast solvers' LOBPCG and block CG (see CCAEngine)
PRECONDITIONERS = ("auto", "dense", "low-rank")








def _default_tol(solver):
    """The default relative accuracy target of the correlations for ``solver``."""
    t = active()
    return {"randomized": t.tol_randomized, "iterative": t.tol_iterative}.get(solver, 1e-8)


def _auto_solver(n, d1, d2):
    m = min(n, d1)
    if m <= active().auto_dense_max:
        side = "dual n x n" if n < d1 else "primal d1 x d1"
        return "dense", f"min(n, d1) = {m} <= {active().auto_dense_max}: dense Cholesky ({side})"
    return "iterative", (f"min(n, d1) = {m} > {active().auto_dense_max}: LOBPCG (or block CG) "
                         f"preconditioned by a randomized low-rank-plus-diagonal factor "
                         f"(exact to tol)")


def _shape2(M):
    shape = getattr(M, "shape", None)
    if shape is None:
        try:
            shape = np.shape(M)
        except Exception:  # ragged: check_matrix says so
            return None
    return tuple(shape) if len(shape) == 2 else None


def _beyond_dense_whitener(shape):
    """Whether a (n, d2) Y is too wide and tall for a dense whitener of C_yy (neither its
    d2 x d2 Cholesky factor nor its n x n dual form within ``y_dense_max``)."""
    return min(shape) > active().y_dense_max


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


def _check_distinct_columns(engine, k, x_name="X"):
    """``k`` within the engine's d1 after merging identical columns of its X, refused in the
    caller's terms (``x_name``): a CCA has no more nonzero correlations than distinct columns,
    and the reduced problem is solved on those."""
    merged, d1, d2 = engine.n_merged_features_, engine.X.shape[1], engine.Y.shape[1]
    if k > min(merged, d2):
        raise ValueError(f"n_components={k} exceeds min(d1, d2) = {min(merged, d2)} counting "
                         f"identical columns of {x_name} once: {x_name} has {merged} distinct "
                         f"columns of {d1} (the others repeat one of them and are merged "
                         f"exactly); give n_components <= {min(merged, d2)}")
    return k


def _user_dims(engine, swapped):
    """(d1, d2) in the caller's order."""
    d1, d2 = engine.X.shape[1], engine.Y.shape[1]
    return (d2, d1) if swapped else (d1, d2)


def _default_max_rank(n, d1):
    # the basis, its Gram image, the factor and the whitener (4 x d1 x r float64): ~640 MB
    return int(min(n, d1, max(256, 20_000_000 // max(d1, 1))))


def _with_thresholds(method):
    """Run an engine's public ``method`` under the engine's thresholds."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with applied(self.thresholds):
            return method(self, *args, **kwargs)

    return wrapper


class CCAEngine:
    """Fixed X and Y, any tau and any cross-covariance factor M: the reusable solver.

    The tau-independent factorisations of X^T X and Y^T Y (:class:`GramFactor`) and the
    per-tau inverse operators are cached, so the rerankers' repeated solves with different
    M (C_xy = X^T M) and a small tau grid pay for them once.  :class:`SparseCCA` and
    :func:`cca_path` are built on it.

    Parameters
    ----------
    X : (n, d1) ndarray or scipy.sparse matrix
        Input view, one example per row.
    Y : (n, d2) ndarray or scipy.sparse matrix
        Output view (defines C_yy); at most 10,000 features or rows unless ``lowrank_y``.
    solver : {'auto', 'dense', 'randomized', 'iterative'}, default 'auto'
        As in :class:`SparseCCA`; 'auto' picks 'dense' while min(n, d1) <= 8000 (d1 after
        merging duplicate columns), else 'iterative'.
    center : bool, default False
        Centre X and Y: sparse views implicitly (rank-one corrections, never densified),
        dense ones in float64 copies.
    tol : float in (0, 1), optional
        Relative accuracy target for the correlations (default 1e-3 for 'randomized', 1e-7
        for 'iterative'): LOBPCG stops at relative Ritz residuals of sqrt(tol) and squared
        residuals over the gap of tol, block CG at sqrt(tol) / 10; a 'randomized' solve
        that cannot run LOBPCG grows its rank until the a-posteriori bound meets tol.
    max_rank : int, optional
        Cap of the randomized factor (default keeps it near 640 MB: min(n, d1,
        max(256, 2e7 / d1))).
    precond_rank : int, optional
        Rank of the iterative solver's preconditioner (default 128; 32 for the LOBPCG
        strategy when n > d1, where on independent count features the rank barely changes
        the number of steps).
    adaptive_rank : bool, default True
        'randomized': refine the model by LOBPCG (factor of rank max(128, 2k)), or, when the
        block is not thin, start at rank max(256, 2k) and double it until the error
        estimate meets ``tol``.  False uses rank ``max_rank`` at once and solves the model
        as it is, for callers that want the rank-plus-ridge model of C_xx itself rather
        than an approximation of the exact one (the rerankers).
    lowrank_y : bool, default False
        When Y has more than 10,000 features and rows (too wide for a dense whitener of
        C_yy): True whitens by a rank-2048 randomized factor of C_yy, a model of its own that
        no solver refines and no error estimate covers (the rerankers' randomized solver,
        whose model is approximate anyway); False refuses such a Y.
    preconditioner : {'auto', 'dense', 'low-rank'}, default 'auto'
        What preconditions the fast solvers' LOBPCG (and block CG), and so the norm their
        error estimate is measured in.  'dense': the dense Cholesky factor of C_xx (of the
        n x n dual form when n < d1), whatever its size; 'low-rank': the
        low-rank-plus-diagonal model of C_xx^-1 from the randomized factor of X, also when
        LOBPCG stalls; 'auto': the dense factor while :meth:`exact_preconditioner_fits`,
        else the model, and the dense factor after all when LOBPCG stalls under the model
        while :meth:`exact_rescue_fits`.  Ignored by the dense solver.
    certify : bool, default False
        Under the low-rank model (``preconditioner`` 'low-rank', or 'auto' beyond
        :meth:`exact_preconditioner_fits`), LOBPCG checks its stopping test again with the
        residuals in the exact C_xx^-1 norm, bounded by preconditioned CG, before it stops
        (``certify`` of :func:`reduced_cca`): the error estimate is then measured in the
        exact norm, at the cost of some products with C_xx per check.  The model's norm
        understates the exact one on text views, so without it the estimate past the
        dense factor's reach is a heuristic that can miss (see docs/engine.md).
    random_state : None, int, numpy Generator or RandomState
    merge_duplicates : bool, default True
        Solve on X with identical columns merged (an exact reduction; the weights are
        returned for the original columns).  Sparse NLP views have many: a word seen once
        and its suffixes share one row pattern.
    verbose : int or bool, default 0
        Progress on stdout: 1 reports the problem and solver, each factorisation with its
        time, LOBPCG every 10 steps (largest relative residual and error estimate against
        their targets) and each solve's outcome; 2 reports every LOBPCG step.
    thresholds : Thresholds, optional
        The engine's numeric thresholds (which solver 'auto' picks, when LOBPCG stops or
        hands over, ...); None: the defaults, or the instance made active by the caller.

    Attributes
    ----------
    X, Y : ndarray or CSR matrix
        The validated inputs.
    xfactor, yfactor : GramFactor
        The tau-independent factorisations (of the merged X, and of Y).
    n_merged_features_ : int
        Columns of X after merging duplicates.
    solver_ : str
        The solver used.
    solver_reason_ : str
        Why 'auto' picked it ("requested" otherwise).
    tol : float
        The accuracy target in force.

    Raises
    ------
    TypeError, ValueError
        For a bad option or input (non-finite values, mismatched rows, fewer than 2 rows,
        values whose covariance over- or underflows float64).

    See Also
    --------
    SparseCCA : the estimator (plain CCA, M = Y, in the caller's order of the views).
    reduced_cca : one solve from fitted inverse operators.

    Notes
    -----
    A LOBPCG solve starts from the block the engine's previous solve ended with (a tau grid,
    a sequence of M), so ``n_iter`` depends on the order of the solves, never the answer
    beyond ``tol``.  The fast solvers hold BLAS to one thread outside the calls that ask for
    both cores, and split their sparse and tall dense products over two threads instead
    (docs/engine.md).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg import CCAEngine
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 6))
    >>> Y = X[:, :4] + 0.5 * rng.standard_normal((100, 4))
    >>> engine = CCAEngine(X, Y, random_state=0)
    >>> engine.solver_, engine.solver_reason_
    ('dense', 'min(n, d1) = 6 <= 8000: dense Cholesky (primal d1 x d1)')
    >>> A, B, omega = engine.solve(Y, tau=0.1, n_components=2)
    >>> A.shape, B.shape, omega.shape
    ((6, 2), (4, 2), (2,))

    Another tau, or another cross-covariance factor M, reuses the factorisations (C_xy =
    X^T M is linear in M, and so are the correlations):

    >>> [round(float(c), 3) for c in engine.solve(Y, tau=0.5, n_components=2).correlations]
    [1.863, 1.823]
    >>> [round(float(c), 3) for c in engine.solve(2 * Y, 0.5, 2).correlations]
    [3.725, 3.646]
    """

    def __init__(self, X, Y, *, solver="auto", center=False, tol=None, max_rank=None,
                 precond_rank=None, random_state=None, merge_duplicates=True,
                 adaptive_rank=True, lowrank_y=False, preconditioner="auto", certify=False,
                 verbose=0, thresholds=None):
        self.thresholds = check_thresholds(thresholds)
        with applied(self.thresholds):
            self._init(X, Y, solver, center, tol, max_rank, precond_rank, random_state,
                       merge_duplicates, adaptive_rank, lowrank_y, preconditioner, certify,
                       verbose)

    def _init(self, X, Y, solver, center, tol, max_rank, precond_rank, random_state,
              merge_duplicates, adaptive_rank, lowrank_y, preconditioner, certify, verbose):
        solver = check_choice(solver, "solver", SOLVERS)
        self.certify = check_bool("certify", certify)
        self.preconditioner = check_choice(preconditioner, "preconditioner", PRECONDITIONERS)
        self.verbose = check_verbose(verbose)
        center = check_bool("center", center)
        merge_duplicates = check_bool("merge_duplicates", merge_duplicates)
        adaptive_rank = check_bool("adaptive_rank", adaptive_rank)
        lowrank_y = check_bool("lowrank_y", lowrank_y)
        # the caller's Y object, so that solve(M=that Y) is recognised as plain CCA
        # (check_matrix returns a new CSR object even when it copies nothing); weakly, so
        # that a converted original is not kept alive beside its conversion
        try:
            self._y_given = weakref.ref(Y)
        except TypeError:  # lists and the like: never the same object again anyway
            self._y_given = lambda: None
        X = check_matrix(X, "X")
        Y = check_matrix(Y, "Y")
        n = check_n_samples(check_same_rows(X=X, Y=Y))
        check_magnitude(X, "X")
        check_magnitude(Y, "Y")
        self.X, self.Y = X, Y
        self.center = bool(center)
        rng = check_random_state(random_state)
        self._rng = rng
        # duplicate input columns are merged exactly (see _ColumnMerge); weights are mapped
        # back to the original columns
        self._xmerge = _ColumnMerge(X) if merge_duplicates else None
        Xm = X if self._xmerge is None else self._xmerge.merged
        self.n_merged_features_ = Xm.shape[1]
        self._xdata = _DataMatrix(Xm, self.center, "X")
        self.xfactor = GramFactor(self._xdata, center=self.center, random_state=rng)
        self.yfactor = GramFactor(Y, center=self.center, random_state=rng, name="Y")
        d1, d2 = Xm.shape[1], Y.shape[1]
        if solver == "auto":
            self.solver_, self.solver_reason_ = _auto_solver(n, d1, d2)
        else:
            self.solver_, self.solver_reason_ = solver, "requested"
        self.tol = (_default_tol(self.solver_) if tol is None
                    else check_tolerance(tol, "tol"))
        self.max_rank = (_default_max_rank(n, d1) if max_rank is None
                         else check_positive_int(max_rank, "max_rank"))
        self.precond_rank = (None if precond_rank is None
                             else check_positive_int(precond_rank, "precond_rank"))
        self.adaptive_rank = bool(adaptive_rank)
        self.lowrank_y = bool(lowrank_y)
        self._xinv = {}
        self._xexact = {}
        self._yinv = {}
        self._warm = None
        self._colsums = {}
        self._ycross = None
        if self.verbose:
            self._say(f"X {n:,} x {X.shape[1]:,}{_nnz(X)}"
                      + (f", {d1:,} columns after merging duplicates" if d1 != X.shape[1]
                         else "")
                      + f"; Y {n:,} x {d2:,}{_nnz(Y)}; solver '{self.solver_}' "
                        f"({self.solver_reason_})"
                      + ("" if self.solver_ == "dense" else f", tol {self.tol:g}"))

    # -- progress -------------------------------------------------------------------------
    def _say(self, msg, level=1):
        if self.verbose >= level:
            print(f"[sparsecca] {msg}", flush=True)

    def _lobpcg_report(self, tau):
        """LOBPCG's progress callback for reduced_cca (None when silent)."""
        if not self.verbose:
            return None
        every = 1 if self.verbose >= 2 else 10
        t0 = time.perf_counter()
        thresh = float(np.sqrt(self.tol))

        def report(step, residual, error):
            if step % every == 0:
                self._say(f"tau={tau:g} LOBPCG step {step}: relative residual {residual:.2e} "
                          f"(target {thresh:.2e}), error estimate {error:.2e} (tol "
                          f"{self.tol:g}), {time.perf_counter() - t0:.1f} s")

        return report

    # -- cached inverses --------------------------------------------------------------------
    @_with_thresholds
    def y_inverse(self, tau):
        """The whitenable inverse of C_yy for ``tau`` (dense up to 10,000 features)."""
        tau = check_tau(tau)
        if tau not in self._yinv:
            d2 = self.Y.shape[1]
            t0 = time.perf_counter()
            if not _beyond_dense_whitener(self.Y.shape):
                inv = RegularizedInverse(self.yfactor, tau, "dense", name="Cyy",
                                         max_dim=None)
            elif self.lowrank_y:
                inv = RegularizedInverse(self.yfactor, tau, "randomized",
                                         rank=min(d2, active().lowrank_y_rank), name="Cyy")
            else:
                # a low-rank whitener would make every solver approximate beyond what its
                # error estimate sees (percents off with estimates far below tol:
                # docs/engine.md): refused rather than answered wrongly
                n, cap = self.Y.shape[0], active().y_dense_max
                raise ValueError(
                    f"Y has {d2:,} features and {n:,} rows, both more than {cap:,}: "
                    f"the reduced problem whitens C_yy by a dense Cholesky factor (or its "
                    f"n x n dual form) only up to {cap:,}. Give the view with fewer "
                    f"features as Y (SparseCCA does this itself when X has fewer features "
                    f"than Y), or reduce Y's features (e.g. a higher min_count)")
            self._say(f"tau={tau:g} C_yy^-1 ({inv.method}, {d2:,} x {d2:,}) in "
                      f"{time.perf_counter() - t0:.1f} s")
            self._yinv = {tau: inv}  # one tau at a time: dense factors are d2 x d2
        return self._yinv[tau]

    @_with_thresholds
    def x_inverse(self, tau, rank=None, tail="auto"):
        """The inverse of C_xx used by ``solver_`` for ``tau`` (cached).

        Parameters
        ----------
        tau : float in [0, 1]
        rank : int >= 1, optional
        tail : {'auto', 'diagonal', 'identity'}
            ``rank`` and ``tail`` set the low-rank-plus-``tail`` factor of the 'randomized'
            inverse and of the 'iterative' one's preconditioner (see
            :class:`RegularizedInverse`); the 'dense' inverse has no use for them, but they
            are checked for every solver (a typo is not accepted on one and refused on
            another).

        Returns
        -------
        RegularizedInverse
        """
        tau = check_tau(tau)
        rank = check_positive_int(rank, "rank", allow_none=True)
        tail = check_choice(tail, "tail", TAILS + ("auto",))
        key = (tau, rank, tail)
        if key not in self._xinv:
            t0 = time.perf_counter()
            s = self.solver_
            if s == "dense":
                # the size rule is the solver's choice ('auto' or the user's): a dense
                # reference of a wide problem may exceed RegularizedInverse's own limit
                inv = RegularizedInverse(self.xfactor, tau, "dense", name="Cxx",
                                         max_dim=None)
            elif s == "randomized":
                inv = RegularizedInverse(self.xfactor, tau, "randomized", rank=rank,
                                         tail=tail, name="Cxx")
            else:
                default = active().precond_rank if self.precond_rank is None else self.precond_rank
                inv = RegularizedInverse(self.xfactor, tau, "iterative", tail=tail,
                                         rank=default if rank is None else rank,
                                         tol=max(np.sqrt(self.tol) / 10.0, 1e-14),
                                         name="Cxx")
            if s == "dense":
                self._xinv = {}  # d1 x d1 (or dual) factors: keep one tau
            else:  # one rank per tau: the adaptive search supersedes smaller factors
                self._xinv = {kk: v for kk, v in self._xinv.items() if kk[0] != tau}
            self._xinv[key] = inv
            d1 = self.n_merged_features_
            if s == "dense" and inv.dense_space == "dual":
                n = self.X.shape[0]
                how = f"dense, through the dual {n:,} x {n:,} Gram matrix"
            else:
                how = f"{inv.method}, {d1:,} x {d1:,}"
                how += f", rank {inv.rank_}" if getattr(inv, "rank_", 0) else ""
            self._say(f"tau={tau:g} C_xx^-1 ({how}) in {time.perf_counter() - t0:.1f} s")
        return self._xinv[key]

    @_with_thresholds
    def exact_preconditioner_fits(self):
        """Whether LOBPCG (and block CG) is preconditioned by the dense inverse of C_xx
        rather than by the low-rank-plus-diagonal model (always with
        ``preconditioner='dense'``, never with 'low-rank'; with 'auto' by the rule below).

        The model's norm understates ||r||_{C^-1} on text views, where nested suffix
        features are nearly collinear, so LOBPCG's error estimate was optimistic and both
        fast solvers stopped short of ``tol``.  With the exact factor the residuals are
        measured in the exact norm and LOBPCG takes a few steps instead of tens or
        hundreds.  The factor, of size s = min(n, d1), costs s^3 / 3 flops and is formed
        per tau, so it is used while s is no larger than the factor of C_yy that every solve
        pays, or below ``exact_precond_small`` (2048, negligible), and at most
        ``exact_precond_max`` (8192).  Beyond that it costs more than the steps it saves where
        the model preconditions well (independent count features, a tau near 1).  The
        measurements behind the rule are in docs/engine.md.

        Returns
        -------
        bool
        """
        if self.preconditioner != "auto":
            return self.preconditioner == "dense"
        n = self.X.shape[0] - int(self.center)
        paid = min(n, self.Y.shape[1])  # the size of C_yy's dense factor
        t = active()
        return self._exact_size() <= min(t.exact_precond_max, max(paid, t.exact_precond_small))

    @_with_thresholds
    def exact_rescue_fits(self):
        """Whether a LOBPCG too slow under the low-rank-plus-diagonal model is resumed
        with the dense inverse of C_xx as its preconditioner (``on_stall`` of
        :func:`reduced_cca`): with ``preconditioner='auto'``, while min(n, d1) <=
        active().exact_precond_max, whether or not :meth:`exact_preconditioner_fits` gave it the
        factor from the start.  Too slow means stalled, or a rate of progress that predicts
        more steps than the factor costs (``rescue_cost``, from :meth:`_rescue_cost`).

        Slow progress is where the model's norm fails: on text views a model-preconditioned
        LOBPCG (or the block CG fallback) can take many times as long as a solve with the
        dense factor (docs/engine.md).

        Returns
        -------
        bool
        """
        if self.preconditioner != "auto":
            return False  # 'dense' has the factor from the start, 'low-rank' never
        return self._exact_size() <= active().exact_precond_max

    def _exact_size(self):
        """The order min(n, d1) of the dense factor of C_xx (d1 after merging duplicate
        columns; n less one when centred)."""
        return min(self.X.shape[0] - int(self.center), self.n_merged_features_)

    def _exact_inverse(self, tau):
        """The dense inverse of C_xx at ``tau`` that preconditions a fast solver's LOBPCG
        (cached for one tau: the cached inverses of other taus let theirs go)."""
        if tau not in self._xexact:
            for other in self._xinv.values():
                other.use_exact(None)
            self._xexact = {}
            t0 = time.perf_counter()
            inv = RegularizedInverse(self.xfactor, tau, "dense", name="Cxx", max_dim=None)
            self._xexact = {tau: inv}
            size = inv.shape[0] if inv.dense_space == "primal" else self.X.shape[0]
            self._say(f"tau={tau:g} C_xx^-1 preconditioner (dense, {inv.dense_space} "
                      f"{size:,} x {size:,}) in {time.perf_counter() - t0:.1f} s")
        return self._xexact[tau]

    def _precondition_exactly(self, xinv, tau):
        """Give ``xinv`` the dense inverse of C_xx at ``tau`` as its preconditioner when
        :meth:`exact_preconditioner_fits`."""
        if not self.exact_preconditioner_fits() or xinv.exact_preconditioner:
            return xinv
        xinv.use_exact(self._exact_inverse(tau))
        return xinv

    def _on_stall(self, xinv, tau):
        """``on_stall`` for :func:`reduced_cca`: the dense inverse of C_xx when
        :meth:`exact_rescue_fits` and ``xinv`` is preconditioned by its model, else None."""
        if xinv.exact_preconditioner or not self.exact_rescue_fits():
            return None

        def rescue(steps):
            self._say(f"tau={tau:g} LOBPCG too slow after {steps} steps under the "
                      f"low-rank-plus-diagonal preconditioner (stalled, or its rate "
                      f"predicted more steps than the dense factor costs); resuming with "
                      f"the dense factor of C_xx")
            return self._exact_inverse(tau)

        return rescue

    def _rescue_cost(self, tau):
        """``rescue_cost`` for :func:`reduced_cca`: the modelled seconds of the dense factor
        of C_xx at ``tau`` (0 when it is at hand)."""
        return 0.0 if tau in self._xexact else dense_factor_cost(self._exact_size())

    # -- solving ----------------------------------------------------------------------------
    @_with_thresholds
    def solve(self, M, tau, n_components, *, strategy="auto"):
        """Projections for C_xy = Xc^T M at regularisation ``tau``.

        Parameters
        ----------
        M : (n, d2) ndarray or sparse matrix, the cross-covariance factor (Y for plain CCA)
        tau : float in [0, 1]
        n_components : int in [1, min(d1, d2)]
        strategy : {'auto', 'full', 'dual', 'operator', 'krylov', 'lobpcg'}, see
            :func:`reduced_cca`

        Returns
        -------
        CCAResult, unpacking as ``A, B, omega`` (x weights, y weights, eigenvalues)

        Notes
        -----
        LOBPCG (the iterative solver's, and the randomized solver's refinement) starts from
        the block the engine's previous solve ended with, so ``n_iter`` (never the answer
        beyond ``tol``) depends on the order of the solves: a fresh engine reproduces a
        result.
        """
        tau = check_tau(tau)
        plain = M is self.Y or (M is not None and M is self._y_given())
        M = self.Y if plain else check_matrix(M, "M")
        check_same_rows(X=self.X, M=M)
        if not plain:
            check_magnitude(M, "M")
        if M.shape[1] != self.Y.shape[1]:
            raise ValueError(f"M must have d2 = {self.Y.shape[1]} columns like Y, "
                             f"got {M.shape[1]}")
        k = _check_distinct_columns(
            self, check_n_components(n_components, self.X.shape[1], self.Y.shape[1]))
        t0 = time.perf_counter()
        if plain:
            # plain CCA: one operator for every tau, so X^T Y is formed once (the engine
            # assumes X and Y unchanged anyway: their factorisations are cached)
            if self._ycross is None:
                self._ycross = CrossCovariance(self._xdata, M, center=self.center)
            cross = self._ycross
        else:
            cross = CrossCovariance(self._xdata, M, center=self.center)
        # plain CCA (one tau on both sides) caps the correlations at 1 / (1 - tau): a
        # certificate for saturated clusters (see reduced_cca)
        omega_max = 1.0 / (1.0 - tau) ** 2 if plain and tau < 1.0 else None
        # the fast solvers' dense work is small or labelled (small_blas, wide_blas): BLAS
        # stays on one thread unless a call asks for both cores, so that no idle OpenBLAS
        # thread spins on the core the split sparse products need; the dense reference
        # keeps the global setting
        with nullcontext() if self.solver_ == "dense" else small_blas(0):
            res = self._solve_with(cross, tau, k, strategy, omega_max)
        if self._xmerge is not None and not self._xmerge.trivial:
            res = CCAResult(self._xmerge.expand(res[0]), res[1], res[2], **res.__dict__)
        if self.verbose:
            steps = f", {res.n_iter} LOBPCG steps" if res.strategy == "lobpcg" else ""
            self._say(f"tau={tau:g} done: {k} components ({res.strategy}{steps}), top "
                      f"correlation {res.correlations[0]:.4f}, error estimate "
                      f"{res.error_estimate:.1e}, {time.perf_counter() - t0:.1f} s")
        return res

    def _solve_with(self, cross, tau, k, strategy, omega_max=None):
        yinv = self.y_inverse(tau)
        if self.solver_ == "randomized":
            return self._solve_randomized(cross, yinv, tau, k, strategy, omega_max)
        rank, tail = (self._preconditioner(k, strategy) if self.solver_ == "iterative"
                      else (None, "auto"))
        xinv = self.x_inverse(tau, rank=rank, tail=tail)
        if self.solver_ == "iterative":
            xinv = self._precondition_exactly(xinv, tau)
        # LOBPCG starts from the block the previous solve ended with (a tau grid, the
        # rerankers' sequence of M) instead of its own preconditioned guess; only LOBPCG
        # returns a block, so a dense engine never has one
        res = reduced_cca(xinv, yinv, cross, k, strategy=strategy, tol=self.tol,
                          random_state=self._rng, start=self._warm,
                          callback=self._lobpcg_report(tau), omega_max=omega_max,
                          on_stall=self._on_stall(xinv, tau),
                          rescue_cost=self._rescue_cost(tau), certify=self.certify,
                          self_check="off")
        self._keep_warm(res)
        err = _error_estimate(res)
        res.__dict__.update(solver=self.solver_, error_estimate=err,
                            preconditioner=_preconditioner_used(xinv, res))
        if self.solver_ == "iterative" and err > self.tol and res.strategy != "lobpcg":
            # (a LOBPCG that stopped short has warned already; converged, it met tol)
            warnings.warn(
                f"iterative solver: estimated relative error {err:.3g} > tol = {self.tol:g} "
                f"at tau = {tau:g}: the tolerance is not certified. After block CG "
                f"('{res.strategy}') the estimate is the first-order residual bound, which "
                f"can overstate the error of an accurate solve many times over; compare "
                f"with solver='dense' where it fits", RuntimeWarning, stacklevel=4)
        return res

    def column_sums(self, which):
        """Column sums of the given X or Y ('X' or 'Y'), (d,) float64 (cached)."""
        which = check_choice(which, "which", ("X", "Y"))
        if which not in self._colsums:
            M = self.X if which == "X" else self.Y
            self._colsums[which] = column_sums(M)
        return self._colsums[which]

    def _keep_warm(self, res):
        """Keep a LOBPCG solve's final block (with its images) as the next solve's start."""
        res.__dict__.pop("lobpcg_block", None)
        warm = res.__dict__.pop("lobpcg_warm", None)
        if warm is not None:
            self._warm = warm

    def _preconditioner(self, k, strategy):
        """(rank, tail) of the iterative solver's preconditioner.

        Block CG keeps RegularizedInverse's 'auto' tail and rank 128.  LOBPCG only needs
        the preconditioner to be a good local model, and the diagonal tail is one whatever
        the shape (with n < d1 the identity tail, block CG's choice there, converged far
        more slowly or not at all).  Its rank matters when n < d1 -- text views with
        nested, nearly collinear features, where rank 128 saves steps over 32 -- and not on
        independent count features with n > d1, where the cheaper factor wins
        (docs/engine.md).
        """
        d1, d2 = self.n_merged_features_, self.Y.shape[1]
        lobpcg = strategy == "lobpcg" or (strategy == "auto" and lobpcg_fits(d1, d2, k))
        if not lobpcg:
            rank = active().precond_rank if self.precond_rank is None else self.precond_rank
            return rank, "auto"
        if self.precond_rank is not None:
            return self.precond_rank, "diagonal"
        n = self.X.shape[0]
        return (active().precond_rank if n < d1 else active().precond_rank_lobpcg), "diagonal"

    def _solve_randomized(self, cross, yinv, tau, k, strategy, omega_max=None):
        """The low-rank-plus-ridge model of C_xx, corrected until the error estimate <= tol.

        The model's own solve is exact when the rank exhausts X and accurate when the
        spectrum of X^T X decays.  Count data decay slowly: at ranks in the thousands the
        model's correlations are still far off, and even an exact Rayleigh-Ritz step on the
        top few thousand singular directions of both views leaves them percents off (the
        canonical directions of rare, deterministic features lie in the tail; see
        docs/engine.md).  So, when the block is thin (:func:`lobpcg_fits`) and the rank does
        not exhaust X, LOBPCG on the exact pencil, preconditioned by the model and started
        from the model's solution, runs until the error estimate meets ``tol`` (no step at
        all when the model already does).  Otherwise, or with ``adaptive_rank=False`` or an
        explicit strategy other than 'lobpcg', the model is solved as it is and its rank
        doubles up to ``max_rank`` until the a-posteriori bound meets ``tol``.
        """
        f = self.xfactor
        cap = min(self.max_rank, f.n_samples, f.n_features)
        d1, d2 = self.n_merged_features_, self.Y.shape[1]
        refine = strategy == "lobpcg" or (self.adaptive_rank and strategy == "auto"
                                          and lobpcg_fits(d1, d2, k))
        # as a preconditioner the factor need not be large (a larger one saves hardly any
        # LOBPCG step and costs more than the steps it saves)
        t = active()
        r = min(cap, max(t.randomized_refine_rank if refine else t.randomized_start_rank, 2 * k))
        r = r if self.adaptive_rank else cap
        # resume from the rank an earlier solve (other tau or M) ended with
        r = min(cap, max(r, getattr(self, "_last_rank", 0)))
        history = []
        if refine and f.rank_ < r:
            # a preconditioner needs the dominant subspace only roughly: one pass of the
            # range finder, no power iteration (which would cost time and save no LOBPCG
            # step)
            t0 = time.perf_counter()
            f.lowrank(r, block_size=r, n_iter=0)
            self._say(f"randomized factor of X^T X: rank {f.rank_} in "
                      f"{time.perf_counter() - t0:.1f} s")
        while True:
            if refine:
                # the factor is formed above; the model is solved as it is only when exact
                exhausted = f.range_error_ == 0.0 and r >= f.rank_
                if not exhausted:
                    break
            xinv = self.x_inverse(tau, rank=r)
            exhausted = f.range_error_ == 0.0 and xinv.rank_ >= f.rank_
            res = reduced_cca(xinv, yinv, cross, k, strategy=strategy, tol=self.tol,
                              random_state=self._rng, omega_max=omega_max, self_check="off")
            err = _error_estimate(res)
            history.append((xinv.rank_, err))
            if err <= self.tol or exhausted or r >= cap:
                break
            r = min(2 * r, cap)
        self._last_rank = r
        n_refine = 0
        if refine and not exhausted:
            # the factor with the diagonal tail: the identity tail (the model's choice when
            # n < d1, exact on the null space of X) preconditions LOBPCG poorly (on text
            # views it may not converge in lobpcg_maxiter steps where the diagonal tail does
            # in tens)
            xinv = self._precondition_exactly(self.x_inverse(tau, rank=r, tail="diagonal"),
                                              tau)
            # LOBPCG's start is the block of the previous solve (a tau grid), or else the
            # model's solution (the top eigenvectors of its Galerkin matrix, or a
            # randomized SVD of its whitened operator)
            res = reduced_cca(xinv, yinv, cross, k, strategy="lobpcg", tol=self.tol,
                              random_state=self._rng, start=self._warm,
                              callback=self._lobpcg_report(tau), omega_max=omega_max,
                              on_stall=self._on_stall(xinv, tau),
                              rescue_cost=self._rescue_cost(tau), certify=self.certify,
                              self_check="off")
            self._keep_warm(res)
            n_refine = res.n_iter
            err = _error_estimate(res)
            history.append((xinv.rank_, err))
        if err > self.tol:
            if exhausted:
                # the model spans X, but its 1/tau tail magnifies the factor's rounding (a
                # rank-12 X at tau = 1e-10: 4e-3 off, estimate 0.11; at 1e-14 garbage)
                why = (f"although its low-rank model spans X (rank {xinv.rank_}): at tau = "
                       f"{tau:g} the model's 1/tau tail magnifies the rounding of its factor. "
                       f"Use solver='dense' or 'iterative', or a larger tau")
            else:
                what = ("after LOBPCG refinement" if refine else
                        f"at the largest allowed rank {xinv.rank_} (max_rank)")
                why = (f"{what}; the correlations are lower bounds of the exact ones. Use "
                       f"solver='iterative' for an exact solve or raise max_rank")
            warnings.warn(f"randomized solver: estimated relative error {err:.3g} > tol = "
                          f"{self.tol:g} {why}", RuntimeWarning, stacklevel=3)
        res.__dict__.update(solver="randomized", error_estimate=err, rank_history=history,
                            preconditioner=_preconditioner_used(xinv, res),
                            exact=exhausted, n_refine=n_refine)
        return res


def _preconditioner_used(xinv, res):
    """'dense', 'low-rank' or 'low-rank, then dense' (a stalled LOBPCG resumed with the
    dense factor: ``rescued_after``): what preconditioned the solve's LOBPCG (or block CG),
    None when nothing did (the dense solver, or the randomized model solved as it is)."""
    if xinv.method == "dense" or (xinv.method == "randomized" and res.strategy != "lobpcg"):
        return None
    if "rescued_after" in res.__dict__:
        return "low-rank, then dense"
    return "dense" if xinv.exact_preconditioner else "low-rank"


def _nnz(X):
    return f" (nnz {X.nnz:,})" if hasattr(X, "nnz") else " (dense)"


def _rel_err(res):
    c = np.maximum(np.abs(res.correlations), 1e-300)
    return float(np.max(res.residual_norms / c))


def _error_estimate(res):
    """The first-order bound, tightened by LOBPCG's squared residual over the gap once
    LOBPCG converged (unconverged, its residual test failed and the quadratic estimate
    alone would understate the error), and by the ceiling of plain CCA's correlations
    (``ceiling_error``: a bound, not an estimate) when it is smaller."""
    err = _rel_err(res)
    if res.__dict__.get("lobpcg_converged", False):
        err = min(err, res.lobpcg_error)
    if "ceiling_error" in res.__dict__:
        err = min(err, res.ceiling_error)
    return err


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
        X : (n, d1) array-like or scipy.sparse matrix
        Y : (n, d2) array-like or scipy.sparse matrix
            n >= 2; finite values whose covariances neither overflow nor underflow float64
            (n * max|x|^2 between 2.2e-308 and 1.8e308), else a ValueError.

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
        res = engine.solve(engine.Y, tau, k)
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
            est._set_result(engine, engine.solve(engine.Y, tau, k), tau, swapped)
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
        self.x_mean_ = column_mean(EX) if engine.center else None
        self.y_mean_ = column_mean(EY) if engine.center else None

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
        X : (m, d1) array-like or sparse
        Y : (m, d2) array-like or sparse, optional

        Returns
        -------
        x_scores : (m, k) array, or (x_scores, y_scores) when Y is given
        """
        self._check_fitted()
        with applied(check_thresholds(self.thresholds)):
            return self._transform(X, Y)

    def _transform(self, X, Y):
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
            mx = engine.column_sums("X") @ A / n
            my = engine.column_sums("Y") @ B / n
            cx, cy = n * mx * mx, n * my * my
            cancel = active().moment_cancel_max
            if np.all(cx <= cancel * xx) and np.all(cy <= cancel * yy):
                xx, yy, xy = xx - cx, yy - cy, xy - n * mx * my
            else:
                moments = None
    if moments is None:
        return _pearson(centred_projection(engine.X, A), centred_projection(engine.Y, B))
    den = np.sqrt(np.maximum(xx, 0.0) * np.maximum(yy, 0.0))
    out = np.zeros_like(xy)
    np.divide(xy, den, out=out, where=den > 0)
    return out


def _pearson(P, Q):
    """Column-wise Pearson correlations of P and Q, (n, k) each; centred in two passes."""
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    P = P - P.mean(axis=0)
    Q = Q - Q.mean(axis=0)
    num = np.einsum("ij,ij->j", P, Q)
    den = np.sqrt(np.einsum("ij,ij->j", P, P) * np.einsum("ij,ij->j", Q, Q))
    out = np.zeros_like(num)
    np.divide(num, den, out=out, where=den > 0)
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

