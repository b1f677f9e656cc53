"""The common base of the regularised inverse operators, and their factory.

:class:`RegularizedInverse` checks the public arguments once and returns the operator of the
chosen method (:mod:`._dense_inverse`, :mod:`._lowrank_inverse`); the engine builds them
through :meth:`RegularizedInverse._trusted`, which skips the checks.  Their float32 products
are :func:`._precision.in_precision`'s.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import LinearOperator

from .._params import check_bool
from ._gram import RegularizedGram, _as_block
from ._gram_factor import GramFactor
from ._thresholds import active
from ._validation import (
    ShapeCheckedOperator,
    check_block,
    check_choice,
    check_positive_int,
    check_shape,
    check_tau,
    check_tolerance,
)

__all__ = ["METHODS", "TAILS", "RegularizedInverse"]

METHODS = ("dense", "randomized", "iterative")
TAILS = ("diagonal", "identity")


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

    ``RegularizedInverse(...)`` is a factory: it returns a :class:`DenseInverse`, a
    :class:`LowRankInverse` ('randomized') or an :class:`IterativeInverse`, each a
    subclass of this one (``method`` names which).  A solve in float32 casts it once, with
    ``sparsecca.linalg._precision.in_precision``; the dense factor then solves in a float32
    copy of itself.

    Attributes
    ----------
    method : {'dense', 'randomized', 'iterative'}
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
    >>> from sparsecca.linalg._inverse import RegularizedInverse
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

    #: the method a subclass implements (the factory's key)
    method: str | None = None
    _classes: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.method is not None:
            RegularizedInverse._classes[cls.method] = cls

    def __new__(cls, X=None, tau=None, method=None, *args, **kwargs):
        if cls is RegularizedInverse:  # the factory: the class of the method
            method = "dense" if method is None else method
            cls = RegularizedInverse._classes[check_choice(method, "method", METHODS)]
        return super().__new__(cls)

    def __init__(self, X, tau, method=None, center=False, *, rank=None, tol=None,
                 tail="diagonal", maxiter=None, random_state=None, dense_space="auto",
                 name="C", max_dim="auto"):
        tau = check_tau(tau)
        center = check_bool("center", center)
        method = self.method if method is None else check_choice(method, "method", METHODS)
        if method != self.method:
            raise ValueError(f"{type(self).__name__} is method={self.method!r}, got "
                             f"method={method!r} (RegularizedInverse picks the class)")
        tail = check_choice(tail, "tail", TAILS + ("auto",))
        dense_space = check_choice(dense_space, "dense_space", ("auto", "primal", "dual"))
        rank = check_positive_int(rank, "rank", allow_none=True)
        tol = None if tol is None else check_tolerance(tol)
        maxiter = check_positive_int(maxiter, "maxiter", allow_none=True)
        if isinstance(max_dim, str) and max_dim == "auto":
            max_dim = active().dense_max_dim
        elif max_dim is not None:
            max_dim = check_positive_int(max_dim, "max_dim")
        factor = X if isinstance(X, GramFactor) else GramFactor(
            X, center=center, random_state=random_state)
        self._init(factor, tau, str(name), tail, rank=rank, tol=tol, maxiter=maxiter,
                   dense_space=dense_space, max_dim=max_dim)

    @classmethod
    def _trusted(cls, factor, tau, method, *, name="C", tail="diagonal", rank=None, tol=None,
                 maxiter=None, dense_space="auto", max_dim=None):
        """The inverse of ``method`` for a :class:`GramFactor` and a tau already checked:
        the engine's path (its arguments were checked at its public entry point), which
        runs none of the constructor's checks."""
        self = LinearOperator.__new__(RegularizedInverse._classes[method])
        self._init(factor, tau, name, tail, rank=rank, tol=tol, maxiter=maxiter,
                   dense_space=dense_space, max_dim=max_dim)
        return self

    def _init(self, factor, tau, name, tail, **options):
        """The state every method shares, then the method's own :meth:`_build`."""
        f = self.factor = factor
        if tail == "auto":
            # on count data with n > d (roughly independent features) the diagonal model
            # preconditions far better than the identity; when n < d the identity model is
            # exact on the null space of X (where C = tau I), which wins on text views with
            # nested, nearly collinear suffix features (figures in docs/engine.md)
            tail = "identity" if f.n_samples - int(f.center) < f.n_features else "diagonal"
        self.tau = tau
        self.tail = tail
        self.name = name
        self.covariance = RegularizedGram._trusted(f._src, tau, dtype=np.float64)
        d = f.n_features
        super().__init__(dtype=np.float64, shape=(d, d))
        self.n_iter_ = 0
        self.rank_ = 0
        self._build(**options)

    def _build(self, **options):  # pragma: no cover - every method defines it
        raise NotImplementedError

    # -- products --------------------------------------------------------------------------
    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _adjoint(self):
        return self

    def _rmatmat(self, B):
        return self._matmat(B)

    def _rmatvec(self, v):
        return self._matvec(v)

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
        Z = self._solve_blocks(B, X0)[0]
        return Z[:, 0] if B.ndim == 1 else Z

    def _check_rhs(self, B, X0):
        """B a (d,) or (d, b) array and X0 None or of B's shape (O(1): shapes only)."""
        check_block(B, "B", self.shape[0])
        if X0 is not None and not (B.ndim == 1 and np.shape(X0) == (B.shape[0], 1)):
            check_shape(X0, "X0", B.shape, "like B")

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
        """(C^-1 B, B - C Z) as (d, b) blocks (arguments checked): a direct method's
        residual is 0 (:class:`IterativeInverse` overrides it)."""
        B, _ = _as_block(B)
        return self._matmat(B), np.zeros_like(B)

    def gram_matmat(self, V):
        """Xc^T Xc V (no tau), (d, b) float64: by the factor's cached dense Gram matrix when
        it keeps one and that is the cheaper way (a dense C_yy: d^2 b multiply-adds against
        2 nnz(X) b for the two passes over the data), else by the data.  C V is
        ``self.covariance.from_gram_image(gram_matmat(V), V)``.

        Raises
        ------
        ValueError
            If V is not a (d,) vector or (d, b) block.
        """
        check_block(np.asarray(V), "V", self.shape[0])
        return self._gram_matmat(V)

    def _gram_matmat(self, V):
        """:meth:`gram_matmat` of an array V of the right shape (unchecked: the engine's)."""
        G = self.factor._dense
        src = self.factor._src
        if G is None or G.shape[0] * G.shape[1] > 2 * getattr(src, "nnz", np.inf):
            return self.covariance._gram_matmat(V)
        return G @ np.asarray(V, dtype=np.float64)

    # -- the preconditioner (the low-rank methods override these) --------------------------
    @property
    def exact_preconditioner(self) -> bool:
        """Whether :meth:`precondition` applies the exact C^-1 (see :meth:`with_exact`)."""
        return False

    def with_exact(self, exact):
        """A copy preconditioned by ``exact`` ('randomized' and 'iterative' inverses only)."""
        raise ValueError("with_exact is for a 'randomized' or 'iterative' inverse")

    def lowrank_galerkin(self, B, chunk_bytes=64 * 2**20):
        """B^T T B for the low-rank-plus-diagonal model T ('randomized' / 'iterative')."""
        raise ValueError("lowrank_galerkin needs a 'randomized' or 'iterative' inverse "
                         f"(a low-rank-plus-diagonal model), got method={self.method!r}")

    def sandwich(self, B, u=None, v=None):
        """B^T C^-1 B by the low-rank formula ('randomized' only)."""
        raise ValueError(f"sandwich needs method='randomized', got {self.method!r}")

    def _lowrank_galerkin(self, B, chunk_bytes=64 * 2**20):
        """:meth:`lowrank_galerkin` of a (d, c) array B (unchecked: the engine's)."""
        return self.lowrank_galerkin(B, chunk_bytes)

    def _sandwich(self, B, u=None, v=None):
        """:meth:`sandwich` of a (d, m) B and its u, v (unchecked: the engine's)."""
        return self.sandwich(B, u, v)

    def inv_sqrt(self):  # pragma: no cover - every method defines it
        raise NotImplementedError


class _Whitener(LinearOperator):
    """W with W^T W = C^-1 for a direct inverse (its methods define the products)."""

    def __init__(self, inv):
        self.inv = inv
        super().__init__(dtype=np.float64, shape=inv.shape)

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _rmatvec(self, v):
        return self._rmatmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def apply_to_rows(self, R):
        """Overwrite the rows of R with (W R^T)^T, R a (r, d) C-contiguous float64 block."""
        R[...] = self._matmat(R.T).T
        return R
