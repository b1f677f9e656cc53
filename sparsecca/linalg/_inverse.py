"""Regularised inverse (and inverse square root) operators of C = (1 - tau) Xc^T Xc + tau I.

Three methods, one interface (:class:`RegularizedInverse`):

``dense``
    Cholesky of the d x d matrix (the exact reference; d small).  When n < d the dual form is
    used instead: an eigendecomposition of the n x n Gram Xc Xc^T gives the exact full SVD of
    Xc, hence C^-1 for every tau (C^-1 = V diag(1/((1-tau) s^2 + tau)) V^T + (I - V V^T)/tau).
``randomized``
    From a rank-r factor G ~ V diag(lam) V^T of G = Xc^T Xc (randomized Nystrom, lam ~ s^2):

        tail='identity':  C^-1 ~ V diag(1/((1-tau) lam + tau)) V^T + (I - V V^T) / tau
        tail='diagonal':  C ~ (1-tau) (V diag(lam) V^T + diag(e)) + tau I,  inverted by Woodbury

    where e = diag(G) - diag(V diag(lam) V^T) >= 0 is the exact diagonal of the residual.  Both
    are exact when rank(X) <= r.  The identity tail is Halko et al.'s formula; it treats every
    unresolved direction as s = 0, which for count features (whose spectrum is flat: the
    tail's s^2 are far from 0) overweights the tail by (1-tau) s^2 / tau and can give
    correlation errors of order 1 even at r = d/2.  Keeping the tail's diagonal (the
    features' own frequencies) cuts those errors by orders of magnitude and makes a far
    better conditioned preconditioner (figures in docs/engine.md).
``iterative``
    Block conjugate gradients on C, preconditioned by the ``randomized`` operator; exact to a
    relative residual tolerance.  Which tail preconditions better depends on the data (see
    ``tail='auto'``): the diagonal one when n > d with roughly independent features, the
    identity one when n < d (exact on the null space of X) or with many nearly collinear
    features (nested suffixes).

The factorisation that does not depend on tau -- the dense Gram, the dual eigendecomposition,
the randomized Nystrom factor -- lives in :class:`GramFactor`, so a grid of tau values reuses it.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager, nullcontext

import numpy as np
import scipy.linalg as la
import scipy.linalg.blas as blas
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._params import check_bool, check_float, check_float_dtype
from ._errors import FactorizationError, SingularCovarianceError
from ._gram import RegularizedGram, _as_block, _DataMatrix, _source
from ._rsvd import _adaptive
from ._threads import small_blas, tall_matmul, tall_tmatmul, wide_blas
from ._thresholds import active
from ._validation import (
    ShapeCheckedOperator,
    check_block,
    check_choice,
    check_dense_size,
    check_positive_int,
    check_random_state,
    check_shape,
    check_tau,
    check_tolerance,
)

__all__ = ["GramFactor", "RegularizedInverse", "block_cg"]

METHODS = ("dense", "randomized", "iterative")

TAILS = ("diagonal", "identity")


class _GramOperator(LinearOperator):
    """G = Xc^T Xc of a Gram source, as a symmetric operator (for the range finder)."""

    def __init__(self, src):
        self.src = src
        self.n_products = 0
        super().__init__(dtype=np.float64, shape=(src.d, src.d))

    def _matmat(self, V):
        self.n_products += 1
        return self.src.gram_matmat(V)

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _adjoint(self):
        return self

    _rmatmat = _matmat
    _rmatvec = _matvec


class GramFactor:
    """Factorisations of G = Xc^T Xc that do not depend on tau, computed lazily and cached.

    One object serves every tau (and both :class:`RegularizedInverse` methods that need it):
    pass it instead of X to :class:`RegularizedInverse`, :class:`~sparsecca.linalg.CCAEngine`
    or :func:`~sparsecca.linalg.cca_path` to fit a tau grid for the price of one factorisation.

    Parameters
    ----------
    X : (n, d) ndarray or scipy.sparse matrix, or :class:`~sparsecca.linalg.GramStats`
        Data, one example per row (statistics accumulated from row blocks also work, except
        for the dual dense form which needs the rows).
    center : bool, default False
        Factor the centred Gram: a sparse X implicitly (never densified), a dense X through
        a centred float64 copy (see :mod:`sparsecca.linalg._gram`).
    random_state : None, int, numpy Generator or RandomState
        Seed of the randomized range finder.
    name : str, default "X"
        What messages and warnings call the data.

    Attributes
    ----------
    n_samples, n_features : int
    colsq : (d,) float64 ndarray
        diag(G).
    rank_ : int
        Size of the current low-rank factor (0 before :meth:`lowrank`).
    range_error_ : float
        Halko a-posteriori estimate of ||(I - Q Q^T) G|| for that factor (0.0 when the
        range of G is exhausted, i.e. the factor is exact).

    Notes
    -----
    Three factorisations, each formed on first use: the dense Gram matrix G (``dense``
    inverses of order d; cached up to DENSE_CACHE_MAX features), the eigendecomposition of
    the dual n x n Gram matrix Xc Xc^T (the exact SVD of Xc when n is small), and the
    randomized Nystrom factor G ~ V diag(lam) V^T (:meth:`lowrank`), which a later call
    with a larger rank extends rather than recomputes.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import GramFactor, RegularizedInverse
    >>> X = sp.random(100, 40, density=0.1, format="csr", random_state=0)
    >>> factor = GramFactor(X, random_state=0)
    >>> V, lam = factor.lowrank(10)
    >>> V.shape, lam.shape, factor.rank_
    ((40, 10), (10,), 10)
    >>> bool(np.all(np.diff(lam) <= 0))
    True

    One factor serves a tau grid (here the dense Gram matrix, formed once):

    >>> G = (X.T @ X).toarray()
    >>> for tau in (0.1, 0.5):
    ...     inv = RegularizedInverse(factor, tau, method="dense")
    ...     C = (1 - tau) * G + tau * np.eye(40)
    ...     print(tau, bool(np.allclose(inv @ np.eye(40), np.linalg.inv(C))))
    0.1 True
    0.5 True
    """

    def __init__(self, X, center: bool = False, random_state=None, *, name: str = "X"):
        center = check_bool("center", center)
        self._src = _source(X, center, name)
        self.center = bool(center)
        self.n_samples = self._src.n
        self.n_features = self._src.d
        self.colsq = self._src.colsq
        self._rng = check_random_state(random_state)
        self._dense = None
        self._dual = None
        self._lowrank = None  # (V, lam)
        self._tail_cache = None  # (V, rank, tail_diagonal)
        self.rank_ = 0
        self.range_error_ = np.inf
        self.n_gram_products_ = 0

    @property
    def has_rows(self) -> bool:
        return isinstance(self._src, _DataMatrix)

    def gram_matmat(self, V):
        """G V, (d, b) float64 (also for a (d,) V); a ValueError unless V has d rows."""
        V = np.asarray(V)
        check_block(V, "V", self.n_features)
        self.n_gram_products_ += 1
        return self._src.gram_matmat(V)

    # -- dense ---------------------------------------------------------------------------
    #: dense Gram matrices up to this size are cached for reuse across tau; larger ones are
    #: rebuilt per tau (a sparse product) and factorised in place, halving peak memory
    DENSE_CACHE_MAX = 4096

    def dense_gram(self, copy=False, max_dim="auto"):
        """G as a dense (d, d) float64 array (d * d * 8 bytes).

        Cached when d <= DENSE_CACHE_MAX; ``copy=True`` returns an array the caller may
        overwrite.

        Parameters
        ----------
        copy : bool
        max_dim : int >= 1, None or 'auto', default 'auto'
            Refuse d > max_dim before allocating; None for no limit; 'auto': the active
            ``Thresholds.dense_max_dim`` (20,000: 3.0 GiB).

        Raises
        ------
        ValueError
            If d > max_dim.
        TypeError
            If max_dim is not an int or None.
        """
        if isinstance(max_dim, str) and max_dim == "auto":
            max_dim = active().dense_max_dim
        check_dense_size((self.n_features,) * 2, max_dim, "Gram matrix",
                         "; the 'randomized' and 'iterative' RegularizedInverse never form it")
        if self._dense is not None:
            return self._dense.copy() if copy else self._dense
        G = self._src.dense_gram()
        if self.n_features <= self.DENSE_CACHE_MAX:
            self._dense = G
            return G.copy() if copy else G
        return G

    def dual_eigh(self):
        """(U, lam, V) with Xc = U diag(sqrt(lam)) V^T restricted to lam > 0 (exact SVD).

        From the n x n Gram Xc Xc^T; only sensible when n is small.  Cached.
        """
        if self._dual is None:
            if not self.has_rows:
                raise ValueError("the dual (n x n) form needs the data rows; GramStats only "
                                 "hold X^T X")
            K = self._src.dense_outer_gram()
            with small_blas(0):
                lam, U = la.eigh(K, overwrite_a=True, check_finite=False)
            lam = lam[::-1]
            U = U[:, ::-1]
            # numerically zero eigenvalues: the null space of Xc^T, not part of the SVD
            cut = max(float(lam[0]), 0.0) * K.shape[0] * np.finfo(np.float64).eps * 10
            pos = lam > cut
            lam, U = lam[pos], np.ascontiguousarray(U[:, pos])
            V = self._src.rmatmat(U) / np.sqrt(lam)
            self._dual = (U, lam, V)
        return self._dual

    # -- randomized ----------------------------------------------------------------------
    def lowrank(self, rank=None, *, tol=None, block_size=64, n_iter=1, max_rank=None):
        """Randomized Nystrom factor G ~ V diag(lam) V^T with G - V diag(lam) V^T PSD.

        The range basis is grown with the blocked adaptive range finder (Halko et al.
        Alg. 4.2) until it has ``rank`` columns, or until the a-posteriori estimate of
        ||(I - Q Q^T) G|| is below ``tol``; an existing factor is extended from its basis V,
        never recomputed.

        Parameters
        ----------
        rank : int, optional
            Target size (at most min(n, d)).
        tol : float, optional
            Absolute tolerance on the range error of G, finite and > 0 (used when ``rank``
            is None; checked either way).
        block_size : int
            Probes per range-finder step (grows geometrically).
        n_iter : int
            Power iterations per block.
        max_rank : int, optional
            Cap when growing by ``tol``.

        Returns
        -------
        V : (d, r) float64 orthonormal columns;  lam : (r,) float64 descending, >= 0
        """
        cap = min(self.n_samples, self.n_features)
        if rank is None and tol is None:
            raise ValueError("lowrank needs rank or tol, got neither")
        block_size = check_positive_int(block_size, "block_size")
        n_iter = check_positive_int(n_iter, "n_iter", minimum=0)
        max_rank = check_positive_int(max_rank, "max_rank", allow_none=True)
        if tol is not None:  # checked also beside a rank, which it then does not affect
            # finite: tol = inf would return an empty factor at once
            tol = check_float("tol", tol, 0.0, strict=True)
        if rank is not None:
            rank = min(check_positive_int(rank, "rank"), cap)
            if self.rank_ >= rank and self._lowrank is not None:
                V, lam = self._lowrank
                return V[:, :rank], lam[:rank]
            target_rank, target_tol = rank, 0.0
        else:
            if self._lowrank is not None and self.range_error_ <= tol:
                return self._lowrank
            target_rank = cap if max_rank is None else min(max_rank, cap)
            target_tol = tol
        G = _GramOperator(self._src)
        # an existing factor's V is the basis to extend: orthonormal, and its span (that of
        # G Q for the range basis Q it came from) is at least as good as Q's
        Q0 = np.zeros((self.n_features, 0)) if self._lowrank is None else self._lowrank[0]
        with small_blas(target_rank if rank is not None else block_size):
            # rank(G) <= n as well: a basis of min(n, d) columns is checked for exhaustion
            Q, err = _adaptive(G, max(target_tol, 1e-300), block_size, target_rank, n_iter,
                               self._rng, Q0, rank_bound=cap)
        self.n_gram_products_ += G.n_products
        if Q.shape[1] > Q0.shape[1] or self._lowrank is None:
            # G is applied to the whole basis again on extension (rare: the adaptive rank
            # doubling) rather than Q and G Q being kept beside V, which tripled the factor's
            # memory
            GQ = self.gram_matmat(Q) if Q.shape[1] else np.zeros_like(Q)
            with small_blas(Q.shape[1]):
                self._lowrank = _nystrom(Q, GQ)
            del GQ, Q
        self.rank_ = self._lowrank[0].shape[1]
        # an exhausted range (err == 0) stays exact; otherwise keep the latest estimate
        self.range_error_ = err if (err == 0.0 or self.range_error_ != 0.0) else 0.0
        V, lam = self._lowrank
        if rank is not None:
            return V[:, :rank], lam[:rank]
        return V, lam

    def tail_diagonal(self, rank=None):
        """e = diag(G - V diag(lam) V^T) >= 0 for the current factor (first ``rank`` columns).

        ``e.sum()`` is a deterministic upper bound on ||G - V diag(lam) V^T||_2 (PSD residual).
        """
        if self._lowrank is None:
            raise ValueError("tail_diagonal needs a low-rank factor: call lowrank first")
        # a negative rank would slice columns off the end: V[:, :-1]
        rank = check_positive_int(rank, "rank", minimum=0, allow_none=True)
        V, lam = self._lowrank
        r = V.shape[1] if rank is None else min(rank, V.shape[1])
        # tau-independent: a tau grid's inverses share it (cached for this factor and rank)
        cached = self._tail_cache
        if cached is None or cached[0] is not V or cached[1] != r:
            e = np.maximum(self.colsq - (V[:, :r] * V[:, :r]) @ lam[:r], 0.0)
            e.flags.writeable = False
            self._tail_cache = cached = (V, r, e)
        return cached[2]


def _nystrom(Q, GQ):
    """Stable Nystrom approximation from an orthonormal basis Q and Y = G Q.

    Tropp, Yurtsever, Udell & Cevher (2017), Alg. 3: shift by nu ~ eps ||Y|| so that the core
    Q^T Y is safely positive definite, then remove the shift from the eigenvalues.  The
    Frobenius norm bounds the spectral one (at most sqrt(rank) times larger) and costs one
    pass instead of an SVD of Y (a noticeable share of a small fit).
    """
    if Q.shape[1] == 0:
        return np.zeros_like(Q), np.zeros(0)
    nu = np.sqrt(Q.shape[0]) * np.finfo(np.float64).eps * np.linalg.norm(GQ)
    Y = GQ + nu * Q
    core = Q.T @ Y
    core = 0.5 * (core + core.T)
    try:
        C = la.cholesky(core, lower=False, check_finite=False)
    except la.LinAlgError:
        # fall back to an eigen-square-root of the (numerically) semidefinite core
        w, U = la.eigh(core)
        w = np.maximum(w, nu)
        C = (U * np.sqrt(w)).T
        C = la.qr(C, mode="r")[0]
    B = la.solve_triangular(C, Y.T, trans="T", lower=False, check_finite=False).T
    U, s, _ = la.svd(B, full_matrices=False, check_finite=False)
    lam = np.maximum(s * s - nu, 0.0)
    return np.ascontiguousarray(U), lam


class RegularizedInverse(ShapeCheckedOperator):
    """C^-1 for C = (1 - tau) Xc^T Xc + tau I as a symmetric operator.

    Parameters
    ----------
    X : (n, d) ndarray or sparse matrix, :class:`GramStats`, or a :class:`GramFactor`
        Pass a :class:`GramFactor` to share the tau-independent factorisation across taus.
    tau : float in [0, 1]
    method : {'dense', 'randomized', 'iterative'}
    center : bool, default False
        Ignored when X is a GramFactor (its own setting is used).
    rank : int >= 1, optional
        'randomized': size of the low-rank factor (default 256, capped at min(n, d)).
        'iterative': size of the preconditioner's factor (default 128).
    tol : float in (0, 1), optional
        'iterative': relative residual (in the preconditioner's norm) at which block CG stops
        (default 1e-8).  'randomized': if given (and ``rank`` is None), the factor grows until
        the operator-level bound (1 - tau) * range_error / tau <= tol; by Weyl's theorem this
        bounds the relative change of the whitened cross-covariance.
    tail : {'diagonal', 'identity', 'auto'}
        Model of the unresolved part of the spectrum (see the module notes).  'auto':
        'identity' when X is rank deficient by shape (n < d, the identity model is then
        exact on the null space of X), else 'diagonal'.
    maxiter : int, optional
        'iterative': block CG iterations (default 500).
    random_state : None, int, numpy Generator or RandomState
    dense_space : {'auto', 'primal', 'dual'}
        'dense': Cholesky of the d x d matrix ('primal') or eigendecomposition of the n x n
        Gram ('dual'); 'auto' picks the smaller.
    max_dim : int >= 1, None or 'auto', default 'auto'
        'dense': the largest order of the dense matrix factored (d for 'primal', n for
        'dual'), refused before it is allocated (d^2 * 8 bytes); None for no limit.  'auto':
        the active ``Thresholds.dense_max_dim`` (20,000: 3.0 GiB).  (``CCAEngine`` passes
        None: its solver chose the dense form, also for a wider C_xx when the user asked for
        it.)
    name : str
        What error messages call C.

    Every option is checked whatever the method, also those it ignores ('dense' ignores
    ``rank``, ``tol``, ``maxiter`` and ``tail``, the others ``dense_space`` and
    ``max_dim``): a bad value is reported at once, not when the method is changed.

    Attributes
    ----------
    factor : GramFactor
    covariance : RegularizedGram, the exact C (its products are used by every method)
    rank_ : int, rank of the low-rank factor used ('randomized' / 'iterative')
    n_iter_ : int, block CG iterations of the last solve ('iterative')

    Raises
    ------
    SingularCovarianceError
        C is singular to working precision (tau = 0 with rank-deficient X).
    FactorizationError
        The dense Cholesky factor of C broke down although tau > 0.
    ValueError
        'dense' with a matrix of order above ``max_dim``; a bad option.

    Notes
    -----
    'dense' is exact and costs O(d^3) (or O(n^3) in its dual form); 'randomized' is a model
    of C^-1 of rank r (exact when rank(X) <= r), applied in O(d r) per column by the
    Woodbury identity; 'iterative' is exact to ``tol`` and costs a few products with C per
    block CG iteration.  The module notes give the formulas.

    References
    ----------
    Halko, Martinsson & Tropp (2011) for the randomized factor; Tropp, Yurtsever, Udell &
    Cevher (2017), "Fixed-rank approximation of a positive-semidefinite matrix from
    streaming data", for its stable Nystrom form.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import RegularizedInverse
    >>> X = sp.random(200, 30, density=0.1, format="csr", random_state=0)
    >>> Xd = X.toarray()
    >>> C = 0.9 * Xd.T @ Xd + 0.1 * np.eye(30)
    >>> B = np.random.default_rng(0).standard_normal((30, 3))
    >>> exact = np.linalg.solve(C, B)
    >>> dense = RegularizedInverse(X, tau=0.1, method="dense")
    >>> bool(np.allclose(dense @ B, exact))
    True

    Block CG, preconditioned by a rank-5 factor, is exact to its tolerance:

    >>> it = RegularizedInverse(X, 0.1, "iterative", rank=5, tol=1e-10, random_state=0)
    >>> bool(np.allclose(it.solve(B), exact)), it.last_info_["converged"]
    (True, True)

    The randomized model is exact once its rank reaches rank(X):

    >>> model = RegularizedInverse(X, 0.1, "randomized", rank=30, random_state=0)
    >>> bool(np.allclose(model @ B, exact))
    True

    A whitener W (W^T W = C^-1) for the direct methods:

    >>> W = dense.inv_sqrt() @ np.eye(30)
    >>> bool(np.allclose(W @ C @ W.T, np.eye(30)))
    True
    """

    def __init__(self, X, tau, method="dense", center=False, *, rank=None, tol=None,
                 tail="diagonal", maxiter=None, random_state=None, dense_space="auto",
                 name="C", max_dim="auto"):
        tau = check_tau(tau)
        center = check_bool("center", center)
        method = check_choice(method, "method", METHODS)
        tail = check_choice(tail, "tail", TAILS + ("auto",))
        dense_space = check_choice(dense_space, "dense_space", ("auto", "primal", "dual"))
        rank = check_positive_int(rank, "rank", allow_none=True)
        tol = None if tol is None else check_tolerance(tol)
        maxiter = check_positive_int(maxiter, "maxiter", allow_none=True)
        if isinstance(max_dim, str) and max_dim == "auto":
            max_dim = active().dense_max_dim
        elif max_dim is not None:
            max_dim = check_positive_int(max_dim, "max_dim")
        self.factor = X if isinstance(X, GramFactor) else GramFactor(
            X, center=center, random_state=random_state)
        f = self.factor
        if tail == "auto":
            # on count data with n > d (roughly independent features) the diagonal model
            # preconditions far better than the identity; when n < d the identity model is
            # exact on the null space of X (where C = tau I), which wins on text views with
            # nested, nearly collinear suffix features (figures in docs/engine.md)
            tail = "identity" if f.n_samples - int(f.center) < f.n_features else "diagonal"
        self.tau = tau
        self.method = method
        self.tail = tail
        self.name = str(name)
        self.covariance = RegularizedGram(f._src, tau, center=f.center, dtype=np.float64)
        d = f.n_features
        super().__init__(dtype=np.float64, shape=(d, d))
        self.n_iter_ = 0
        self.rank_ = 0
        self._exact = None  # a 'dense' inverse preconditioning a low-rank one (use_exact)
        self._single_factor = None  # float32 copy of a 'dense' factor (_dense_factor_single)
        if method == "dense":
            if dense_space == "auto":
                dense_space = "dual" if (f.has_rows and f.n_samples < d) else "primal"
            self.dense_space = dense_space
            primal = dense_space == "primal"
            order = d if primal else f.n_samples
            check_dense_size((order, order), max_dim,
                             f"{'covariance' if primal else 'dual (n x n) matrix of'} "
                             f"{self.name}", "; method='randomized' or 'iterative' never "
                             "forms it", dim="d" if primal else "n")
            if dense_space == "primal":
                self._chol = _regularized_cholesky(f.dense_gram(copy=True, max_dim=None), tau,
                                                   self.name)
            else:
                if tau == 0.0:
                    raise SingularCovarianceError(
                        f"{self.name} is singular with tau = 0: the data have rank at most "
                        f"n = {f.n_samples} < d = {d}; use tau > 0 (e.g. tau = 1e-3)")
                # C^-1 = (I - (1 - tau) Xc^T K^-1 Xc) / tau cancels ~(1 - tau) ||G|| / tau
                # digits; the primal factor's pivot test in its terms (its smallest
                # eigenvalue is tau when n < d): below, the solve returns noise
                level = d * np.finfo(np.float64).eps * (
                    (1.0 - tau) * float(np.max(f.colsq, initial=0.0)) + tau)
                if tau <= level:
                    raise SingularCovarianceError(
                        f"{self.name} is singular to working precision with tau = {tau:g}: "
                        f"tau is below the rounding level d * eps * max diag = {level:.3g} "
                        f"of a covariance whose data have rank < d; use tau >= "
                        f"{10 * level:.1g}")
                # Cholesky of the n x n (1 - tau) Xc Xc^T + tau I: C^-1 by Woodbury, n^3 / 3
                # flops (BLAS-3) where the dual eigendecomposition (needed only for the
                # symmetric whitener, computed on demand) costs several times more
                self._dual_chol = _regularized_cholesky(f._src.dense_outer_gram(), tau,
                                                        f"the dual form of {self.name}")
        elif method == "randomized":
            if rank is None and tol is not None:
                if tau == 0.0:
                    raise ValueError("tol needs tau > 0 for method='randomized' (the bound "
                                     "scales with 1/tau), got tau = 0")
                # (1 - tau) ||E|| / tau <= tol
                V, lam = f.lowrank(tol=tol * tau / max(1.0 - tau, 1e-300), max_rank=4096)
            else:
                V, lam = f.lowrank(256 if rank is None else rank)
            self._setup_lowrank(V, lam)
        else:
            self.rtol = 1e-8 if tol is None else tol
            self.maxiter = 500 if maxiter is None else maxiter
            if tau == 0.0:
                self._check_tau0_iterative()
            V, lam = f.lowrank(active().precond_rank if rank is None else rank)
            self._setup_lowrank(V, lam)
            self._precond = _Preconditioner(self)

    # -- setup ---------------------------------------------------------------------------
    def _check_tau0_iterative(self):
        f = self.factor
        if np.any(f.colsq <= 0):
            why = "a feature is constant zero"
        elif f.n_samples - int(f.center) < f.n_features:
            why = f"n = {f.n_samples} rows cannot span d = {f.n_features} features"
        else:
            return
        raise SingularCovarianceError(f"{self.name} is singular with tau = 0 ({why}); "
                                      f"use tau > 0 (e.g. tau = 1e-3)")

    def _setup_lowrank(self, V, lam, tail=None):
        tail = self.tail if tail is None else tail
        tau = self.tau
        f = self.factor
        self.rank_ = V.shape[1]
        if tau == 0.0 and f.range_error_ == 0.0 and f.rank_ < f.n_features:
            raise SingularCovarianceError(
                f"{self.name} is singular with tau = 0: the data have rank {f.rank_} < "
                f"d = {f.n_features}; use tau > 0 (e.g. tau = 1e-3)")
        if self.rank_ == f.n_features:
            self._setup_full(V, lam)
            return
        e = f.tail_diagonal(self.rank_) if tail == "diagonal" else np.zeros(f.n_features)
        delta = (1.0 - tau) * e + tau
        # e = colsq - diag(V lam V^T) carries rounding of order d eps colsq: a tail at that
        # level is zero variance, and whether it lands on +0 or just above it depends on the
        # BLAS, so test against the working-precision floor, not against 0
        floor = f.n_features * np.finfo(np.float64).eps * f.colsq if tau == 0.0 else 0.0
        if not np.all(delta > floor):
            raise SingularCovarianceError(
                f"the low-rank model of {self.name} is singular with tau = {tau:g} (an "
                f"unresolved direction has zero variance); use tau > 0 (e.g. tau = 1e-3)")
        gam2 = (1.0 - tau) * lam
        self._isd = 1.0 / np.sqrt(delta)  # delta^-1/2
        if tail == "identity" or np.ptp(delta) == 0:
            # W' = V diag(sqrt((1-tau) lam / delta)) has orthogonal columns: closed forms
            self._P = np.ascontiguousarray(V)
            self._g2 = gam2 / delta[0]
            self._Wp = None
        else:
            # W' = diag(delta)^-1/2 V diag(sqrt((1-tau) lam)); C^-1 by Woodbury through the
            # Cholesky factor of the r x r core I + W'^T W' (one d r^2 product per tau: a
            # tau grid pays little beyond the shared factor).  The symmetric whitener needs
            # the SVD of W' and is formed on first use.
            with small_blas(V.shape[1]):
                Wp = V * np.sqrt(gam2) * self._isd[:, None]
                core = tall_tmatmul(Wp, Wp)  # rows split over both cores
                core[np.diag_indices_from(core)] += 1.0
                self._core_chol = la.cholesky(core, lower=True, check_finite=False)
            self._Wp = np.ascontiguousarray(Wp)
            self._P = None
            self._g2 = None

    def _setup_full(self, V, lam):
        """The closed form for a basis V of all d features: the model is C itself, with no
        tail (its diagonal is rounding, which at tau = 0 would read as zero variance).

        C = V diag(g) V^T with g = (1 - tau) lam + tau, written as c (I + V diag(g / c - 1)
        V^T) for c = min(g), so that the identity-tail closed form serves it.
        """
        g = (1.0 - self.tau) * lam + self.tau
        c = float(g.min())
        # relative to the largest eigenvalue: at tau = 0 a rank-deficient X leaves rounding
        if not c > lam.size * np.finfo(np.float64).eps * max(float(g.max()), 0.0):
            advice = ("use tau > 0 (e.g. tau = 1e-3)" if self.tau == 0 else
                      "rescale or centre the columns of X, or raise tau")
            raise SingularCovarianceError(
                f"{self.name} is singular with tau = {self.tau:g} (its smallest eigenvalue is "
                f"{c:.3g}, at the rounding level of its largest, {float(g.max()):.3g}); "
                f"{advice}")
        self._isd = np.full(V.shape[0], 1.0 / np.sqrt(c))
        self._P = np.ascontiguousarray(V)
        self._g2 = g / c - 1.0
        self._Wp = None

    def _whitener_factors(self):
        """(P, g2) with W' = P diag(sqrt(g2)) Q^T (thin SVD), for the symmetric whitener."""
        if self._P is None:
            with small_blas(self._Wp.shape[1]):
                Qv, Rv = la.qr(self._Wp, mode="economic", check_finite=False)
                Us, g, _ = la.svd(Rv, check_finite=False)
                self._P = np.ascontiguousarray(Qv @ Us)
            self._g2 = g * g
        return self._P, self._g2

    # -- products ------------------------------------------------------------------------
    def sandwich(self, B, u=None, v=None):
        """B^T C^-1 B for B = Bs - u v^T (Bs (d, m), sparse or dense; u, v an optional
        rank-one term, the centring of a cross-covariance), as a dense (m, m) array
        ('randomized' only).

        With C^-1 = S (I - U K^-1 U^T) S (S = diag(delta)^-1/2, see ``_lowrank_inverse``) and
        F = S B, B^T C^-1 B = F^T F - (U^T F)^T K^-1 (U^T F): a sparse product (or a BLAS
        syrk on a dense or dense-enough block) and O(nnz(B) r + m^2 r) dense work.
        """
        if self.method != "randomized":
            raise ValueError(f"sandwich needs method='randomized', got {self.method!r}")
        d, m = check_block(B, "B", self.shape[0], vector=False)
        if (u is None) != (v is None):
            raise ValueError(f"u and v go together (the rank-one term u v^T); got "
                             f"{'u without v' if v is None else 'v without u'}")
        if u is not None and (np.shape(u) != (d,) or np.shape(v) != (m,)):
            raise ValueError(f"u and v must have shapes (d,) = ({d},) and (m,) = ({m},), got "
                             f"{np.shape(u)} and {np.shape(v)}")
        U = self._woodbury_basis()
        if sp.issparse(B):
            F = (sp.diags(self._isd) @ sp.csr_matrix(B, dtype=np.float64)).tocsc()
            t = active()
            dense = (F.nnz >= t.sandwich_dense_min_density * d * m
                     and 8 * d * m <= t.sandwich_dense_max_bytes)
        else:
            F, dense = None, True
        if dense:
            # a cross-covariance with residuals is 10-20% dense: BLAS syrk on the dense block
            # beats scipy's sparse product with its dense-ish (m, m) result, and U^T F as a
            # dense product beats the sparse one by more
            if F is None:  # one Fortran-ordered copy, scaled in place (B may be read-only)
                Fd = np.array(B, dtype=np.float64, order="F")
                Fd *= self._isd[:, None]
            else:
                Fd = np.asfortranarray(F.toarray())
            # a large syrk takes both cores even where the fast solvers pin BLAS
            wide = (wide_blas() if d * m * m >= active().sandwich_wide_min_flops
                    else nullcontext())
            with small_blas(m), wide:
                G = blas.dsyrk(1.0, Fd, trans=1, lower=0)
            G = np.triu(G) + np.triu(G, 1).T
            Q = tall_tmatmul(U, Fd)  # (r, m); the Fortran-ordered block as it is
            fs_of = Fd
        else:
            G = np.asarray((F.T @ F).toarray(), dtype=np.float64)
            Q = np.asarray(F.T @ U).T  # (r, m)
            fs_of = F
        if u is not None and np.any(u):
            su = np.asarray(u, dtype=np.float64) * self._isd
            v = np.asarray(v, dtype=np.float64)
            fs = np.asarray(fs_of.T @ su).ravel()  # F^T S u, (m,)
            G -= np.outer(fs, v) + np.outer(v, fs)
            G += float(su @ su) * np.outer(v, v)
            Q -= np.outer(U.T @ su, v)
        with small_blas(Q.shape[0]):
            G -= Q.T @ self._woodbury_core_solve(Q)
        return 0.5 * (G + G.T)

    def _woodbury_basis(self):
        """U of C^-1 = S (I - U K^-1 U^T) S: P (orthonormal, identity tail) or W'."""
        return self._P if self._Wp is None else self._Wp

    def _woodbury_core_solve(self, Q):
        """K^-1 Q for the r x r core of the Woodbury form (diagonal for the identity tail,
        the Cholesky factor of I + W'^T W' otherwise)."""
        if self._Wp is None:
            return (self._g2 / (1.0 + self._g2))[:, None] * Q
        return la.cho_solve((self._core_chol, True), Q, check_finite=False)

    def use_exact(self, exact):
        """Precondition with ``exact``, a 'dense' RegularizedInverse of the same C, instead
        of the low-rank-plus-diagonal model ('randomized' / 'iterative'); None goes back.

        The model's products are unchanged (a 'randomized' inverse stays the model): only
        :meth:`precondition` -- LOBPCG's preconditioner, block CG's, and the norm in which
        residuals are measured -- becomes exact.  Worth it when the dense factor is cheap
        beside the rest of the solve (see ``CCAEngine``).
        """
        if self.method == "dense":
            raise ValueError("use_exact is for a 'randomized' or 'iterative' inverse")
        if exact is None:  # back to the model (lets the dense factor go)
            self._exact = None
            return
        if not isinstance(exact, RegularizedInverse):
            raise TypeError(f"exact must be None or a 'dense' RegularizedInverse of the same "
                            f"GramFactor and tau, got {type(exact).__name__}")
        if (exact.method != "dense" or exact.shape != self.shape or exact.tau != self.tau
                or exact.factor is not self.factor):
            raise ValueError("use_exact needs a 'dense' RegularizedInverse of the same "
                             "GramFactor and tau")
        self._exact = exact

    @property
    def exact_preconditioner(self) -> bool:
        """Whether :meth:`precondition` applies the exact C^-1 (see :meth:`use_exact`)."""
        return self._exact is not None

    def precondition(self, B):
        """T B for the preconditioner T ~ C^-1: the exact inverse given to
        :meth:`use_exact` (in B's precision: float32 blocks get a float32 factor), else the
        low-rank-plus-diagonal model.  (d, b), float64 unless B is float32 and T exact; B a
        (d, b) array (a ValueError otherwise)."""
        check_block(B, "B", self.shape[0], vector=False)
        if self._exact is not None:
            return self._exact.solve_as(B, np.float32 if B.dtype == np.float32
                                        else np.float64)
        return self._lowrank_inverse(B)

    def solve_as(self, B, dtype):
        """C^-1 B by a 'dense' inverse in ``dtype`` (float32: a float32 copy of the
        Cholesky factor, formed once, and half the flops' time; rounding ~ cond(L) * 6e-8,
        enough for a preconditioner).

        Raises
        ------
        ValueError
            If the method is not 'dense', B not a (d,) or (d, b) array-like or ``dtype``
            not float32 or float64.
        """
        if self.method != "dense":
            raise ValueError(f"solve_as needs method='dense', got {self.method!r}")
        dtype = check_float_dtype(dtype)
        B = np.asarray(B)
        check_block(B, "B", self.shape[0])
        if dtype == np.float64:
            Z = self._matmat(B)
            return Z[:, 0] if B.ndim == 1 else Z
        return self._dense_solve(np.asarray(B, dtype=dtype), self._dense_factor_single())

    def _dense_factor_single(self):
        """:meth:`_dense_factor` in float32, copied once (float32 solves and whiteners)."""
        if self._single_factor is None:
            self._single_factor = self._dense_factor().astype(np.float32)
        return self._single_factor

    def _dense_factor(self):
        """The Cholesky factor of a 'dense' inverse: of C ('primal') or of the dual n x n
        matrix (1 - tau) Xc Xc^T + tau I."""
        return self._chol if self.dense_space == "primal" else self._dual_chol

    def _dense_solve(self, B, L):
        """C^-1 B through ``L``, :meth:`_dense_factor` or a copy of it, in L's precision."""
        if self.dense_space == "primal":
            with _dense_threads(L.shape[0]):
                return la.cho_solve((L, True), B, check_finite=False)
        # C^-1 = (I - (1 - tau) Xc^T ((1 - tau) Xc Xc^T + tau I)^-1 Xc) / tau
        tau = self.tau
        src = self.factor._src
        with _dense_threads(L.shape[0]):
            T = la.cho_solve((L, True), np.asarray(src.matmat(B), dtype=L.dtype),
                             check_finite=False)
        return (B - (1.0 - tau) * np.asarray(src.rmatmat(T), dtype=L.dtype)) / tau

    def _lowrank_inverse(self, B):
        """Woodbury inverse of the low-rank-plus-diagonal model."""
        Bs = B * self._isd[:, None]
        U = self._woodbury_basis()
        with small_blas(min(U.shape[1], B.shape[1])):
            Bs -= tall_matmul(U, self._woodbury_core_solve(tall_tmatmul(U, Bs)))
        Bs *= self._isd[:, None]
        return Bs

    def lowrank_galerkin(self, B, chunk_bytes=64 * 2**20):
        """B^T T B for the low-rank-plus-diagonal model T of C^-1 and a dense (d, c) B.

        Formed from row chunks of B (about ``chunk_bytes`` each) through the Woodbury form
        T = S (I - U K^-1 U^T) S, so no second (d, c) array is allocated.  Returns a
        symmetric (c, c) float64 array.
        """
        if self.method == "dense":
            raise ValueError("lowrank_galerkin needs a 'randomized' or 'iterative' inverse "
                             "(a low-rank-plus-diagonal model), got method='dense'")
        d, c = check_block(B, "B", self.shape[0], vector=False)
        U = self._woodbury_basis()
        G = np.zeros((c, c))
        UtSB = np.zeros((U.shape[1], c))
        step = max(1, int(chunk_bytes // (8 * max(c, 1))))
        with small_blas(c):
            for lo in range(0, d, step):
                hi = min(d, lo + step)
                SB = B[lo:hi] * self._isd[lo:hi, None]
                G += SB.T @ SB
                UtSB += U[lo:hi].T @ SB
            G -= UtSB.T @ self._woodbury_core_solve(UtSB)
        return 0.5 * (G + G.T)

    def _matmat(self, B):
        B, _ = _as_block(B)
        if self.method == "dense":
            return self._dense_solve(B, self._dense_factor())
        if self.method == "randomized":
            return self._lowrank_inverse(B)
        return self._solve_blocks(B, None)[0]

    def solve(self, B, X0=None):
        """C^-1 B (for 'iterative', optionally warm-started at X0); float64 of B's shape,
        (d,) for a (d,) B as ``C^-1 @ B`` gives it.

        Parameters
        ----------
        B : (d,) or (d, b) array-like
        X0 : array-like of B's shape, optional
            The initial guess of 'iterative' (checked, then ignored, by the direct methods);
            a (d, 1) X0 also serves a (d,) B.

        Raises
        ------
        ValueError
            If B or X0 has the wrong shape.
        """
        B = np.asarray(B)
        self._check_rhs(B, X0)
        Z = self._matmat(B) if self.method != "iterative" else self._solve_blocks(B, X0)[0]
        return Z[:, 0] if B.ndim == 1 else Z

    def _check_rhs(self, B, X0):
        """B a (d,) or (d, b) array and X0 None or of B's shape (O(1): shapes only)."""
        check_block(B, "B", self.shape[0])
        if X0 is not None and not (B.ndim == 1 and np.shape(X0) == (B.shape[0], 1)):
            check_shape(X0, "X0", B.shape, "like B")

    def chunk_width(self, m):
        """Block CG width for ``m`` right-hand sides in 'iterative'.

        A wide block converges in few iterations (its Krylov space grows by the width per
        step) but costs O(d * width^2) dense work per iteration; more than
        ``Thresholds.chunk_max`` columns are split into equal chunks of at most that many.
        """
        n_chunks = -(-m // active().chunk_max)
        return -(-m // n_chunks)

    def solve_with_residual(self, B, X0=None):
        """(C^-1 B, B - C Z) for 'iterative' (block CG, chunked); residual 0 otherwise.

        The residual lets the caller form the variational estimate B^T Z + Z^T R of
        B^T C^-1 B, whose error is second order in the error of Z even across chunks.
        Both float64 of B's shape ((d,) for a (d,) B).
        """
        B = np.asarray(B)
        self._check_rhs(B, X0)
        Z, R = self._solve_blocks(B, X0)
        return (Z[:, 0], R[:, 0]) if B.ndim == 1 else (Z, R)

    def _solve_blocks(self, B, X0):
        """(Z, R) of :meth:`solve_with_residual` as (d, b) blocks (arguments checked)."""
        B, _ = _as_block(B)
        if self.method != "iterative":
            return self.matmat(B), np.zeros_like(B)
        Z = np.empty_like(B)
        R = np.empty_like(B)
        w = self.chunk_width(B.shape[1])
        self.n_iter_ = 0
        infos = []
        for j in range(0, B.shape[1], w):
            sl = slice(j, min(j + w, B.shape[1]))
            x0 = None if X0 is None else np.asarray(X0).reshape(B.shape)[:, sl]
            # the operators and settings are the inverse's own, checked at construction
            with small_blas(sl.stop - sl.start):
                Zc, info = _block_cg(self.covariance, np.ascontiguousarray(B[:, sl]),
                                     self._precond, x0, self.rtol, self.maxiter)
            Z[:, sl] = Zc
            R[:, sl] = info.pop("residual_block")
            self.n_iter_ += info["n_iter"]
            infos.append(info)
        self.last_info_ = {
            "n_iter": self.n_iter_, "converged": all(i["converged"] for i in infos),
            "residuals": np.concatenate([i["residuals"] for i in infos]),
            "chunks": len(infos)}
        return Z, R

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _adjoint(self):
        return self

    _rmatmat = _matmat
    _rmatvec = _matvec

    def gram_matmat(self, V):
        """Xc^T Xc V (no tau), (d, b) float64: by the factor's cached dense Gram matrix when
        it keeps one (a dense C_yy: d^2 b flops instead of two passes over the data), else
        by the data.  C V is ``self.covariance.from_gram_image(gram_matmat(V), V)``.

        Raises
        ------
        ValueError
            If V is not a (d,) vector or (d, b) block.
        """
        G = self.factor._dense
        if G is None:
            return self.covariance.gram_matmat(V)
        V = np.asarray(V, dtype=np.float64)
        check_block(V, "V", self.shape[0])
        return G @ V

    def inv_sqrt(self):
        """A whitener W (d x d operator) with W^T W = C^-1 (so W C W^T = I).

        'dense' primal: W = L^-1 from C = L L^T (triangular, not symmetric);
        'dense' dual and 'randomized' with tail='identity': the symmetric C^-1/2;
        'randomized' with tail='diagonal': (I + W'W'^T)^-1/2 diag(delta)^-1/2.

        Raises
        ------
        NotImplementedError
            For 'iterative', which only provides C^-1 (the reduced problem does not need a
            whitener on that path).
        """
        if self.method == "iterative":
            raise NotImplementedError("method='iterative' provides C^-1 products only; use "
                                      "method='dense' or 'randomized' for a whitener")
        return _Whitener(self)


class _Preconditioner(LinearOperator):
    """``inv.precondition`` as an operator, float64: block CG's M (the low-rank-plus-diagonal
    model, or the exact inverse given to ``use_exact``)."""

    def __init__(self, inv):
        self.inv = inv
        super().__init__(dtype=np.float64, shape=inv.shape)

    def _matmat(self, B):
        return self.inv.precondition(np.asarray(B, dtype=np.float64))

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)


class _Whitener(LinearOperator):
    """W with W^T W = C^-1 for a dense or randomized RegularizedInverse."""

    def __init__(self, inv):
        self.inv = inv
        super().__init__(dtype=np.float64, shape=inv.shape)

    def _matmat(self, B):
        B, _ = _as_block(B)
        inv = self.inv
        if inv.method == "dense":
            if inv.dense_space == "primal":
                return _triangular_solve(inv._chol, B, "N")
            _, lam, V = inv.factor.dual_eigh()
            tau = inv.tau
            C = V.T @ B
            out = V @ (C / np.sqrt((1.0 - tau) * lam + tau)[:, None])
            if tau > 0:
                out += (B - V @ C) / np.sqrt(tau)
            return out
        Bs = B * inv._isd[:, None]
        P, g2 = inv._whitener_factors()
        h = 1.0 - 1.0 / np.sqrt(1.0 + g2)
        return Bs - P @ (h[:, None] * (P.T @ Bs))

    def _rmatmat(self, U):
        U, _ = _as_block(U)
        inv = self.inv
        if inv.method == "dense":
            if inv.dense_space == "primal":
                return _triangular_solve(inv._chol, U, "T")
            return self._matmat(U)
        P, g2 = inv._whitener_factors()
        h = 1.0 - 1.0 / np.sqrt(1.0 + g2)
        out = U - P @ (h[:, None] * (P.T @ U))
        return out * inv._isd[:, None]

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _rmatvec(self, v):
        return self._rmatmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def apply_to_rows(self, R):
        """Overwrite the rows of R with (W R^T)^T, R a (r, d) C-contiguous float64 block.

        The dense primal form solves in place (R^T is the Fortran-ordered block LAPACK
        works on), where ``matmat(R.T).T`` holds two more copies of R.
        """
        inv = self.inv
        if inv.method == "dense" and inv.dense_space == "primal":
            out = _triangular_solve(inv._chol, R.T, "N", overwrite=True)
            if not np.shares_memory(out, R):  # LAPACK worked on a copy after all
                R[...] = out.T
        else:
            R[...] = self._matmat(R.T).T
        return R

    def single(self):
        """This whitener in float32, for iterations whose tolerance is far above float32's
        rounding: the dense primal factor L is copied once to float32 (and kept by the
        inverse for its next whitener and float32 solves), so its triangular
        solves run at twice the speed; the other forms compute in float64 and round."""
        return _SingleWhitener(self)


class _SingleWhitener(LinearOperator):
    """A :class:`_Whitener` in float32 (see :meth:`_Whitener.single`)."""

    def __init__(self, whitener):
        self.whitener = whitener
        inv = whitener.inv
        self._L = (inv._dense_factor_single() if inv.method == "dense"
                   and inv.dense_space == "primal" else None)
        super().__init__(dtype=np.float32, shape=whitener.shape)

    def _matmat(self, B):
        if self._L is None:
            return self.whitener.matmat(B).astype(np.float32)
        return _triangular_solve(self._L, np.ascontiguousarray(B, dtype=np.float32), "N")

    def _rmatmat(self, U):
        if self._L is None:
            return self.whitener.rmatmat(U).astype(np.float32)
        return _triangular_solve(self._L, np.ascontiguousarray(U, dtype=np.float32), "T")

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _rmatvec(self, v):
        return self._rmatmat(np.asarray(v).reshape(-1, 1)).reshape(-1)


def _triangular_solve(L, B, trans, overwrite=False):
    """L^-1 B (trans 'N') or L^-T B ('T') for a lower triangular d x d factor L, on the BLAS
    threads its size calls for (see _dense_threads); ``overwrite`` lets LAPACK
    solve in B itself when B's layout and dtype allow it."""
    with _dense_threads(L.shape[0]):
        return la.solve_triangular(L, B, lower=True, trans=trans, overwrite_b=overwrite,
                                   check_finite=False)


def _wide(d):
    """Both cores for a solve with a d x d factor too large for small_blas (see wide_blas)."""
    t = active()
    return wide_blas() if t.small_blas_max < d < t.dense_single_thread_min else nullcontext()


@contextmanager
def _dense_threads(d):
    """BLAS threads for work with a d x d dense factor: one for small (see small_blas) and
    for very large factors (``Thresholds.dense_single_thread_min``: OpenBLAS 0.3.x's threaded
    Cholesky has crashed (SIGSEGV) on a covariance of order 30,000 with two threads, see
    docs/engine.md), both cores in between, also inside a pinned region (_wide)."""
    with small_blas(0 if d >= active().dense_single_thread_min else d), _wide(d):
        yield


def _chol_or_none(G):
    """Lower Cholesky factor of a small SPD matrix, or None if it is (nearly) singular."""
    try:
        L = la.cholesky(G, lower=True, check_finite=False)
    except la.LinAlgError:
        return None
    d = np.diag(L)
    if not np.all(np.isfinite(d)) or d.min() ** 2 <= 1e-13 * G.shape[0] * d.max() ** 2:
        return None
    return L


def _regularized_cholesky(G, tau, name="C"):
    """Lower Cholesky factor of (1 - tau) G + tau I (G is overwritten), with a loud failure
    when singular."""
    d = G.shape[0]
    C = G
    C *= 1.0 - tau
    C[np.diag_indices_from(C)] += tau
    scale = float(np.max(np.diag(C))) if d else 1.0
    try:
        with _dense_threads(d):
            L = la.cholesky(C, lower=True, overwrite_a=True, check_finite=False)
    except la.LinAlgError as exc:
        if tau == 0.0:
            raise SingularCovarianceError(
                f"{name} is singular with tau = 0 (Cholesky failed: {exc}); use tau > 0 "
                f"(e.g. tau = 1e-3)") from None
        raise FactorizationError(f"Cholesky of {name} failed with tau = {tau}: {exc}") from None
    dmin = float(np.min(np.abs(np.diag(L)))) ** 2
    # a pivot below d * eps * max diag means C is singular to working precision: the solve
    # would amplify rounding by more than 1/eps, so refuse instead of returning noise
    if not np.isfinite(dmin) or dmin <= d * np.finfo(np.float64).eps * max(scale, 1e-300):
        if tau == 0.0:
            raise SingularCovarianceError(
                f"{name} is singular to working precision with tau = 0 (smallest pivot "
                f"{dmin:.3g}, largest diagonal {scale:.3g}); use tau > 0 (e.g. tau = 1e-3)")
        raise FactorizationError(f"{name} is numerically singular with tau = {tau} "
                                 f"(smallest pivot {dmin:.3g})")
    return L


def block_cg(A, B, *, M=None, X0=None, rtol=1e-8, maxiter=500):
    """Block preconditioned conjugate gradients for A X = B, A symmetric positive definite.

    Each iteration applies A to one block of search directions, A-orthonormalised by a
    small eigendecomposition (directions that have become linearly dependent -- converged
    or redundant right-hand sides -- are dropped instead of breaking the recurrence), and
    conjugated against the previous block.  Columns that meet ``rtol`` leave the search block.
    Started from zero the iterate is a Galerkin approximation: B^T X = X^T A X, so B^T X
    approaches B^T A^-1 B from below with an error quadratic in the A-norm error of X.

    Parameters
    ----------
    A : (d, d) operator / array, symmetric positive definite
    B : (d, m) or (d,) right-hand sides
    M : (d, d) operator, optional
        Symmetric positive definite preconditioner (an approximation of A^-1).
    X0 : (d, m) initial guess, optional
    rtol : float in (0, 1)
        Stop when every column has ||r||_M <= rtol ||b||_M.
    maxiter : int >= 0

    Returns
    -------
    X : (d, m) (or (d,)) float64
    info : dict with 'n_iter', 'residuals' (final relative residual per column),
        'converged' (bool), 'history' (max relative residual per iteration) and
        'residual_block' (the final residual B - A X)

    Raises
    ------
    TypeError, ValueError
        For arguments of the wrong kind or shape, or non-finite B or X0.
    FactorizationError
        If A is found not to be positive definite (a non-positive curvature direction), or
        M (b^T M b <= 0 for a nonzero right-hand side b).

    Warns
    -----
    RuntimeWarning
        If ``rtol`` is not reached in ``maxiter`` iterations.

    References
    ----------
    D. P. O'Leary, "The block conjugate gradient algorithm and related methods", Linear
    Algebra and its Applications 29, 293-322, 1980.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.linalg import block_cg
    >>> rng = np.random.default_rng(0)
    >>> F = rng.standard_normal((60, 30))
    >>> A = F.T @ F + 0.1 * np.eye(30)
    >>> B = rng.standard_normal((30, 3))
    >>> X, info = block_cg(A, B, rtol=1e-10)
    >>> X.shape, info["converged"]
    ((30, 3), True)
    >>> bool(np.allclose(A @ X, B))
    True

    With the exact inverse as preconditioner one iteration suffices:

    >>> X, info = block_cg(A, B, M=np.linalg.inv(A), rtol=1e-10)
    >>> info["n_iter"]
    1
    """
    B, one_d, X0, rtol, maxiter = _check_block_cg(A, B, M, X0, rtol, maxiter)
    with small_blas(B.shape[1]):
        X, info = _block_cg(A, B, M, X0, rtol, maxiter)
    return (X[:, 0] if one_d else X), info


def _check_block_cg(A, B, M, X0, rtol, maxiter):
    """The arguments of :func:`block_cg`: B as a finite (d, m) float64 block (and whether it
    was 1-D), X0 as (d, m) or None, rtol and maxiter; O(d m), once per call."""
    try:
        B, one_d = _as_block(B)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"B must be a (d,) or (d, m) real array, got {type(B).__name__} "
                        f"({exc})") from None
    if B.ndim != 2:
        raise ValueError(f"B must be a (d,) or (d, m) array, got shape {B.shape}")
    if not np.all(np.isfinite(B)):
        raise ValueError("B must contain only finite values")
    d = B.shape[0]
    for name, op in (("A", A), ("M", M)):
        if op is None and name == "M":
            continue
        shape = getattr(op, "shape", None)
        if shape is None or not hasattr(op, "__matmul__"):
            raise TypeError(f"{name} must be a (d, d) array or LinearOperator, got "
                            f"{type(op).__name__}")
        if tuple(shape) != (d, d):
            raise ValueError(f"{name} must be (d, d) = ({d}, {d}) like the rows of B, got "
                             f"shape {tuple(shape)}")
    if X0 is not None:
        X0 = np.asarray(X0, dtype=np.float64)
        want = (d,) if one_d else B.shape
        if X0.shape != want and not (one_d and X0.shape == B.shape):
            raise ValueError(f"X0 must have the shape of B, {want}, got {X0.shape}")
        if not np.all(np.isfinite(X0)):
            raise ValueError("X0 must contain only finite values")
    rtol = check_tolerance(rtol, "rtol")
    maxiter = check_positive_int(maxiter, "maxiter", minimum=0)
    return B, one_d, X0, rtol, maxiter


def _block_cg(A, B, M, X0, rtol, maxiter):
    d, m = B.shape

    def Aop(V):
        return np.asarray(A @ V, dtype=np.float64)

    def Mop(V):
        return np.asarray(M @ V, dtype=np.float64) if M is not None else V.copy()

    if X0 is None:
        X = np.zeros_like(B)
        R = B.copy()
    else:
        X = np.array(X0, dtype=np.float64).reshape(d, m)
        R = B - Aop(X)
    MB = Mop(B)
    bmb = (B * MB).sum(axis=0)
    if not np.all(bmb > 0):
        # b^T M b <= 0 for b != 0 (M zero or indefinite) would read as a zero residual and
        # "converge" at once; b = 0 columns are legitimately 0
        bad = ~(bmb > 0) & np.any(B != 0, axis=0)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise FactorizationError(f"the preconditioner M is not positive definite (b^T M b "
                                     f"= {bmb[j]:.3g} <= 0 for column {j} of B)")
    bnorm = np.sqrt(np.maximum(bmb, 0.0))
    bnorm[bnorm == 0] = 1.0
    Z = MB if X0 is None else Mop(R)
    res = np.sqrt(np.maximum((R * Z).sum(axis=0), 0.0)) / bnorm
    history = [float(res.max()) if m else 0.0]
    Pp = APp = Lp = None
    it = 0
    converged = bool(res.max() <= rtol) if m else True
    while not converged and it < maxiter:
        P = Z[:, res > rtol]
        if Pp is not None:  # conjugate against the previous block
            P -= Pp @ la.cho_solve((Lp, True), APp.T @ P, check_finite=False)
        AP = Aop(P)
        Gm = P.T @ AP
        Gm = 0.5 * (Gm + Gm.T)
        L = _chol_or_none(Gm)
        if L is None:
            # the block lost rank (converged or redundant columns): keep an A-orthonormal
            # basis of what is left instead of breaking down
            with small_blas(0):
                w, U = la.eigh(Gm, check_finite=False)
            wmax = float(w.max()) if w.size else 0.0
            if wmax <= 0 or not np.isfinite(wmax):
                raise FactorizationError(
                    "block CG found a direction of non-positive curvature: the operator is "
                    "not positive definite (singular covariance? use tau > 0)")
            keep = w > wmax * 1e-13 * Gm.shape[0]
            S = U[:, keep] / np.sqrt(w[keep])
            P = P @ S
            AP = AP @ S
            L = np.eye(P.shape[1])
        alpha = la.cho_solve((L, True), P.T @ R, check_finite=False)
        X += P @ alpha
        R -= AP @ alpha
        Z = Mop(R)
        res = np.sqrt(np.maximum((R * Z).sum(axis=0), 0.0)) / bnorm
        it += 1
        history.append(float(res.max()))
        if not np.all(np.isfinite(res)):
            raise FactorizationError("block CG produced non-finite residuals")
        converged = bool(res.max() <= rtol)
        Pp, APp, Lp = P, AP, L
    if not converged:
        warnings.warn(f"block CG did not reach rtol={rtol:g} in {maxiter} iterations "
                      f"(max relative residual {res.max():.3g})", RuntimeWarning,
                      stacklevel=2)
    info = {"n_iter": it, "residuals": res, "converged": converged, "history": history,
            "residual_block": R}
    return X, info

