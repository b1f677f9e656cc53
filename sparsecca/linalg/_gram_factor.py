"""The tau-independent factorisations of G = Xc^T Xc (:class:`GramFactor`).

A grid of tau values reuses one :class:`GramFactor`: the dense Gram matrix, the
eigendecomposition of the dual n x n Gram matrix and the randomized Nystrom factor are each
formed once, on first use.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as la
from scipy.sparse.linalg import LinearOperator

from .._params import check_bool, check_float
from ._gram import _DataMatrix, _source
from ._rsvd import _adaptive
from ._threads import small_blas
from ._thresholds import active
from ._validation import check_block, check_dense_size, check_positive_int, check_random_state

__all__ = ["GramFactor"]


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
    >>> from sparsecca.linalg._inverse import GramFactor, RegularizedInverse
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
        return self._gram_matmat(V)

    def _gram_matmat(self, V):
        """:meth:`gram_matmat` of an array V of the right shape (unchecked)."""
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
        return self._dense_gram(copy)

    def _dense_gram(self, copy=False):
        """:meth:`dense_gram` without a size limit (the dense inverse's path: its own rule
        was applied by its constructor)."""
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
        if rank is None and tol is None:
            raise ValueError("lowrank needs rank or tol, got neither")
        block_size = check_positive_int(block_size, "block_size")
        n_iter = check_positive_int(n_iter, "n_iter", minimum=0)
        max_rank = check_positive_int(max_rank, "max_rank", allow_none=True)
        if tol is not None:  # checked also beside a rank, which it then does not affect
            # finite: tol = inf would return an empty factor at once
            tol = check_float("tol", tol, 0.0, strict=True)
        if rank is not None:
            rank = check_positive_int(rank, "rank")
        return self._lowrank_of(rank, tol, block_size, n_iter, max_rank)

    def _lowrank_of(self, rank, tol, block_size=64, n_iter=1, max_rank=None):
        """:meth:`lowrank` on checked arguments (the inverses' path)."""
        cap = min(self.n_samples, self.n_features)
        if rank is not None:
            rank = min(rank, cap)
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
            GQ = self._gram_matmat(Q) if Q.shape[1] else np.zeros_like(Q)
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
        return self._tail_diagonal(check_positive_int(rank, "rank", minimum=0, allow_none=True))

    def _tail_diagonal(self, rank=None):
        """:meth:`tail_diagonal` for a checked ``rank`` (the inverses' path)."""
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
