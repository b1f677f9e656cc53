"""The reusable solver: fixed X and Y, any tau and any cross-covariance factor M.

Scaling (the paper's, Eq. 11): Cxx = (1 - tau) X^T X + tau I, Cyy = (1 - tau) Y^T Y + tau I,
Cxy = X^T M *unscaled*.  With tau > 0 the generalized eigenvalues are therefore not bounded
by 1: sqrt(omega) = a^T Cxy b with a^T Cxx a = b^T Cyy b = 1 can reach 1 / (1 - tau) (count
data with strongly correlated views come close to it).  At tau = 0 they are the classical
canonical correlations.
"""

from __future__ import annotations

import time
import warnings
import weakref
from contextlib import nullcontext

import numpy as np

from .._params import check_bool
from ._dask_operator import DaskViews, is_dask
from ._gram import (
    CrossCovariance,
    _ColumnMerge,
    _DataMatrix,
    column_sums,
)
from ._inverse import TAILS, GramFactor, RegularizedInverse
from ._lobpcg import _default_oversamples
from ._preconditioning import _preconditioner_used, _Preconditioning
from ._randomized_solve import _error_estimate, solve_randomized
from ._reduced import STRATEGIES, SolveOptions, solve_reduced
from ._result import CCAResult
from ._threads import small_blas
from ._thresholds import active, applied, check_thresholds, with_own_thresholds
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

__all__ = ["CCAEngine"]

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


def _beyond_dense_whitener(shape):
    """Whether a (n, d2) Y is too wide and tall for a dense whitener of C_yy (neither its
    d2 x d2 Cholesky factor nor its n x n dual form within ``y_dense_max``)."""
    return min(shape) > active().y_dense_max


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


def _default_max_rank(n, d1):
    # the basis, its Gram image, the factor and the whitener (4 x d1 x r float64): ~640 MB
    return int(min(n, d1, max(256, 20_000_000 // max(d1, 1))))


class CCAEngine(_Preconditioning):
    """Fixed X and Y, any tau and any cross-covariance factor M: the reusable solver.

    The tau-independent factorisations of X^T X and Y^T Y (:class:`GramFactor`) and the
    per-tau inverse operators are cached, so the rerankers' repeated solves with different
    M (C_xy = X^T M) and a small tau grid pay for them once.  :class:`SparseCCA` and
    :func:`cca_path` are built on it.

    Parameters
    ----------
    X : (n, d1) ndarray or scipy.sparse matrix, or dask.array.Array
        Input view, one example per row.  A Dask array (both views then, with the same row
        chunks, one chunk across the columns; chunks NumPy arrays or scipy.sparse matrices)
        is persisted and never gathered: the statistics are tree reductions over its
        chunks and the solvers' products map-reduces (see docs/engine.md).
    Y : (n, d2) ndarray or scipy.sparse matrix, or dask.array.Array
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
    A LOBPCG or 'krylov' solve starts from the block the engine's previous solve ended with
    (a tau grid, a sequence of M), so ``n_iter`` depends on the order of the solves, never
    the answer beyond ``tol``.  The fast solvers hold BLAS to one thread outside the calls
    that ask for both cores, and split their sparse and tall dense products over two
    threads instead (docs/engine.md).

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
        self.center = bool(center)
        rng = check_random_state(random_state)
        self._rng = rng
        self._dask = None
        if is_dask(X) or is_dask(Y):
            # row-chunked Dask views: statistics by tree reductions, products by map-reduces
            # over the chunks persisted where they are (see _dask_operator)
            self._dask = DaskViews(X, Y, self.center, merge_duplicates)
            X, Y, n = self._dask.X, self._dask.Y, check_n_samples(self._dask.n)
            self._xmerge = self._dask.merge
            self._xdata, ydata = self._dask.xdata, self._dask.ydata
        else:
            X = check_matrix(X, "X")
            Y = check_matrix(Y, "Y")
            n = check_n_samples(check_same_rows(X=X, Y=Y))
            check_magnitude(X, "X")
            check_magnitude(Y, "Y")
            # duplicate input columns are merged exactly (see _ColumnMerge); weights are
            # mapped back to the original columns
            self._xmerge = _ColumnMerge(X) if merge_duplicates else None
            Xm = X if self._xmerge is None else self._xmerge.merged
            self._xdata = _DataMatrix(Xm, self.center, "X")
            ydata = _DataMatrix(Y, self.center, "Y")
        self.X, self.Y = X, Y
        self.n_merged_features_ = self._xdata.d
        self.xfactor = GramFactor(self._xdata, center=self.center, random_state=rng)
        self.yfactor = GramFactor(ydata, center=self.center, random_state=rng, name="Y")
        d1, d2 = self._xdata.d, Y.shape[1]
        if solver == "auto" and self._dask is not None:
            # no dual n x n form from the chunks: a dense factor is the primal d1 x d1 one
            self.solver_, self.solver_reason_ = _auto_solver(max(n, d1), d1, d2)
            self.solver_reason_ += " (Dask views: no dual form, d1 counts)"
        elif solver == "auto":
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
        self._krylov_warm = None
        self._colsums = {}
        self._ycross = None
        if self.verbose:
            self._say(f"X {n:,} x {X.shape[1]:,}{_nnz(X)}"
                      + (f", {d1:,} columns after merging duplicates" if d1 != X.shape[1]
                         else "")
                      + f"; Y {n:,} x {d2:,}{_nnz(Y)}; solver '{self.solver_}' "
                        f"({self.solver_reason_})"
                      + ("" if self.solver_ == "dense" else f", tol {self.tol:g}"))

    def _exact_size(self):
        """The order of the dense factor of C_xx: Dask views have no dual form, so d1
        (after merging) whatever n (see :meth:`exact_preconditioner_fits`)."""
        return super()._exact_size() if self._dask is None else self.n_merged_features_

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
    @with_own_thresholds
    def y_inverse(self, tau):
        """The whitenable inverse of C_yy for ``tau`` (dense up to 10,000 features)."""
        return self._y_inverse(check_tau(tau))

    def _y_inverse(self, tau):
        if tau not in self._yinv:
            d2 = self.Y.shape[1]
            t0 = time.perf_counter()
            if not _beyond_dense_whitener(self.Y.shape):
                inv = RegularizedInverse._trusted(self.yfactor, tau, "dense", name="Cyy")
            elif self.lowrank_y:
                inv = RegularizedInverse._trusted(
                    self.yfactor, tau, "randomized", rank=min(d2, active().lowrank_y_rank),
                    name="Cyy", max_dim=active().dense_max_dim)
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

    @with_own_thresholds
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
        return self._x_inverse(check_tau(tau), check_positive_int(rank, "rank", allow_none=True),
                               check_choice(tail, "tail", TAILS + ("auto",)))

    def _x_inverse(self, tau, rank=None, tail="auto"):
        key = (tau, rank, tail)
        if key not in self._xinv:
            t0 = time.perf_counter()
            s = self.solver_
            if s == "dense":
                # the size rule is the solver's choice ('auto' or the user's): a dense
                # reference of a wide problem may exceed RegularizedInverse's own limit
                inv = RegularizedInverse._trusted(self.xfactor, tau, "dense", name="Cxx")
            elif s == "randomized":
                inv = RegularizedInverse._trusted(self.xfactor, tau, "randomized", rank=rank,
                                                  tail=tail, name="Cxx",
                                                  max_dim=active().dense_max_dim)
            else:
                default = active().precond_rank if self.precond_rank is None else self.precond_rank
                inv = RegularizedInverse._trusted(
                    self.xfactor, tau, "iterative", tail=tail,
                    rank=int(default if rank is None else rank),
                    tol=float(max(np.sqrt(self.tol) / 10.0, 1e-14)), name="Cxx",
                    max_dim=active().dense_max_dim)
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

    # -- solving ----------------------------------------------------------------------------
    @with_own_thresholds
    def solve(self, M, tau, n_components, *, strategy="auto"):
        """Projections for C_xy = Xc^T M at regularisation ``tau``.

        Parameters
        ----------
        M : (n, d2) ndarray or sparse matrix, the cross-covariance factor (Y for plain CCA);
            a Dask array with X's row chunks when the engine's views are Dask arrays (C_xy =
            Xc^T M is then reduced over the chunks, where they are)
        tau : float in [0, 1]
        n_components : int in [1, min(d1, d2)]
        strategy : {'auto', 'full', 'dual', 'operator', 'krylov', 'lobpcg'}, see
            :func:`reduced_cca`

        Returns
        -------
        CCAResult, unpacking as ``A, B, omega`` (x weights, y weights, eigenvalues)

        Notes
        -----
        LOBPCG (the iterative solver's, and the randomized solver's refinement) and 'krylov'
        start from the block the engine's previous solve ended with, so ``n_iter`` (never the answer
        beyond ``tol``) depends on the order of the solves: a fresh engine reproduces a
        result.
        """
        tau = check_tau(tau)
        plain = M is self.Y or (M is not None and M is self._y_given())
        if self._dask is not None:
            k = _check_distinct_columns(
                self, check_n_components(n_components, self.X.shape[1], self.Y.shape[1]))
            strategy = check_choice(strategy, "strategy", STRATEGIES)
            # C_xy = Xc^T M reduced over the row chunks (M's chunking validated first)
            return self._solve(self.Y if plain else self._dask.cross(M), tau, k, strategy,
                               plain)
        M = self.Y if plain else check_matrix(M, "M")
        check_same_rows(X=self.X, M=M)
        if not plain:
            check_magnitude(M, "M")
        if M.shape[1] != self.Y.shape[1]:
            raise ValueError(f"M must have d2 = {self.Y.shape[1]} columns like Y, "
                             f"got {M.shape[1]}")
        k = _check_distinct_columns(
            self, check_n_components(n_components, self.X.shape[1], self.Y.shape[1]))
        return self._solve(M, tau, k, check_choice(strategy, "strategy", STRATEGIES), plain)

    def _solve(self, M, tau, k, strategy="auto", plain=True):
        """:meth:`solve` on validated arguments (``plain``: M is the engine's Y)."""
        t0 = time.perf_counter()
        if self._dask is not None:  # M: the reduced C_xy, or the engine's Y
            cross = self._dask.cross() if plain else M
        elif plain:
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
        yinv = self._y_inverse(tau)
        if self.solver_ == "randomized":
            res = solve_randomized(self, cross, yinv, tau, k, strategy, omega_max)
            self._keep_warm(res)
            return res
        rank, tail = (self._preconditioner(k, strategy) if self.solver_ == "iterative"
                      else (None, "auto"))
        xinv = self._x_inverse(tau, rank=rank, tail=tail)
        if self.solver_ == "iterative":
            xinv = self._precondition_exactly(xinv, tau)
        # LOBPCG starts from the block the previous solve ended with (a tau grid, the
        # rerankers' sequence of M) instead of its own preconditioned guess; only LOBPCG
        # returns a block, so a dense engine never has one
        res = self._reduce(xinv, yinv, cross, k, strategy, tau, omega_max)
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

    def _reduce(self, xinv, yinv, cross, k, strategy, tau, omega_max, refine=True):
        """:func:`solve_reduced` with the engine's options; ``refine``: a LOBPCG solve with
        the engine's warm start, progress report, stall rescue and ``certify``."""
        opts = SolveOptions(tol=self.tol, oversamples=_default_oversamples(k),
                            random_state=self._rng, omega_max=omega_max,
                            krylov_start=self._krylov_warm)
        if not refine:
            return solve_reduced(xinv, yinv, cross, k, strategy, opts)
        opts.callback, opts.certify = self._lobpcg_report(tau), self.certify
        return solve_reduced(xinv, yinv, cross, k, strategy, opts, self._warm,
                             self._handover_inverse(xinv, tau))

    def column_sums(self, which):
        """Column sums of the given X or Y ('X' or 'Y'), (d,) float64 (cached)."""
        return self._column_sums(check_choice(which, "which", ("X", "Y")))

    def _column_sums(self, which):
        if which not in self._colsums:
            M = self.X if which == "X" else self.Y
            self._colsums[which] = (column_sums(M) if self._dask is None
                                    else self._dask.colsums[which])
        return self._colsums[which]

    def _keep_warm(self, res):
        """Keep a LOBPCG solve's final block (with its images), and a 'krylov' solve's Ritz
        block, as the next solve's start."""
        krylov = res.__dict__.pop("krylov_warm", None)
        if krylov is not None:
            self._krylov_warm = krylov
        res.__dict__.pop("lobpcg_block", None)
        warm = res.__dict__.pop("lobpcg_warm", None)
        if warm is not None:
            self._warm = warm


def _nnz(X):
    if is_dask(X):
        return f" (Dask, {X.numblocks[0]} row chunks)"
    return f" (nnz {X.nnz:,})" if hasattr(X, "nnz") else " (dense)"
