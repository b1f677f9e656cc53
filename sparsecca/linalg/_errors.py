"""The errors and warnings of :mod:`sparsecca.linalg`, in one place.

Factorisation failures subclass :class:`numpy.linalg.LinAlgError` (hence ``ValueError``);
a solve that misses its own tolerance raises :class:`SolverToleranceError` or warns; a
randomized SVD that misses its ``tol`` warns with :class:`SVDConvergenceWarning`.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "CentringPrecisionWarning",
    "FactorizationError",
    "RankDeficientError",
    "SVDConvergenceWarning",
    "SingularCovarianceError",
    "SolverToleranceError",
]


class FactorizationError(np.linalg.LinAlgError):
    """A factorisation (Cholesky, eigendecomposition, block CG, LOBPCG) broke down.

    Subclass of :class:`numpy.linalg.LinAlgError`, hence also of ``ValueError``: a broken
    factorisation is reported loudly instead of producing NaN projections.  Raised, for
    example, when block CG meets a direction of non-positive curvature (the operator is not
    positive definite), when a Cholesky factor of a regularised covariance with tau > 0 has
    a pivot at the rounding level, or when LOBPCG loses C_xx even in float64 blocks (a
    breakdown in its float32 blocks is retried in float64 first).

    See Also
    --------
    SingularCovarianceError : the subclass for a singular covariance (tau = 0).

    Examples
    --------
    Every failure to factor a covariance is one (a singular covariance included), so one
    ``except`` catches them, e.g. to retry with a larger tau:

    >>> import numpy as np
    >>> from sparsecca.linalg import FactorizationError, SparseCCA
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((10, 20)), rng.standard_normal((10, 3))
    >>> try:
    ...     SparseCCA(2, tau=0.0, solver="dense").fit(X, Y)
    ... except FactorizationError as exc:
    ...     print(type(exc).__name__)
    SingularCovarianceError
    >>> issubclass(FactorizationError, np.linalg.LinAlgError)
    True
    >>> issubclass(FactorizationError, ValueError)
    True
    """


class SingularCovarianceError(FactorizationError):
    """A covariance matrix is singular (typically tau = 0 with rank-deficient data).

    C = (1 - tau) Xc^T Xc + tau I is positive definite for every tau > 0; at tau = 0 it is
    the plain Gram matrix, singular whenever X has fewer independent rows than columns (n < d,
    a constant-zero feature, duplicated columns).  The message says why and suggests a small
    tau > 0.  A subclass of :class:`FactorizationError` (and so of ``ValueError``).

    Examples
    --------
    Ten rows cannot span twenty features, so the unregularised covariance is singular:

    >>> import numpy as np
    >>> from sparsecca.linalg import SingularCovarianceError, SparseCCA
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((10, 20)), rng.standard_normal((10, 3))
    >>> SparseCCA(2, tau=0.0, solver="dense").fit(X, Y)
    Traceback (most recent call last):
    ...
    sparsecca.linalg...SingularCovarianceError: Cxx is singular with tau = 0: the data have
    rank at most n = 10 < d = 20; use tau > 0 (e.g. tau = 1e-3)
    >>> SparseCCA(2, tau=1e-3, solver="dense").fit(X, Y).x_weights_.shape
    (20, 2)
    """


class CentringPrecisionWarning(RuntimeWarning):
    """Centring a sparse or streamed view implicitly (X^T X - n mu mu^T) cancels digits of
    its covariance because its column means dominate its spread.

    A sparse view is never densified, so ``center=True`` subtracts the rank-one term
    n mu mu^T from the uncentred Gram matrix.  When the means are large against the spread,
    that difference keeps only about -log10(eps a) significant digits, where a is an upper
    bound of ||X^T X|| / ||Xc^T Xc||; the warning is issued when fewer than eight digits
    would be left.  Centre such a view yourself (a dense array is centred exactly, in a
    float64 copy) or shift its largest columns.  Count data are far from the limit.

    Examples
    --------
    A sparse view whose columns sit near 1e6 with unit spread:

    >>> import warnings
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.linalg import CCAEngine, CentringPrecisionWarning
    >>> offset = 1e6 + np.random.default_rng(0).standard_normal((50, 3))
    >>> Y = sp.random(50, 2, density=0.5, format="csr", random_state=0)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = CCAEngine(sp.csr_matrix(offset), Y, center=True).solve(Y, 0.1, 1)
    >>> [w.category.__name__ for w in caught]
    ['CentringPrecisionWarning']

    The same values as a dense array are centred explicitly, without the warning:

    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = CCAEngine(offset, Y, center=True).solve(Y, 0.1, 1)
    >>> caught
    []
    """


class RankDeficientError(ValueError):
    """More components were asked for than the cross-covariance has nonzero correlations.

    C_xy = Xc^T M of rank r has only r nonzero canonical correlations: further components
    would be noise, so the solvers refuse them instead of returning arbitrary directions.

    Parameters
    ----------
    rank : int
        The number of nonzero canonical correlations found.
    n_components : int
        The number asked for.

    Attributes
    ----------
    rank : int
        The number of nonzero canonical correlations (the rank of C_xy).
    n_components : int
        The number asked for.

    Examples
    --------
    Three identical output columns give a cross-covariance of rank 1:

    >>> import numpy as np
    >>> from sparsecca.linalg import RankDeficientError, SparseCCA
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 5))
    >>> Y = np.repeat(rng.standard_normal((50, 1)), 3, axis=1)
    >>> try:
    ...     SparseCCA(n_components=2).fit(X, Y)
    ... except RankDeficientError as exc:
    ...     print(exc.rank, exc.n_components)
    1 2
    >>> SparseCCA(n_components=1).fit(X, Y).n_components_
    1
    """

    def __init__(self, rank: int, n_components: int):
        self.rank, self.n_components = int(rank), int(n_components)
        super().__init__(f"n_components must be at most the number of nonzero canonical "
                         f"correlations ({self.rank} here: the cross-covariance has rank "
                         f"{self.rank}), got {self.n_components}")


class SolverToleranceError(RuntimeError):
    """A solve's own residual test says it missed its tolerance (``self_check='raise'``).

    Examples
    --------
    >>> from sparsecca.linalg import SolverToleranceError
    >>> issubclass(SolverToleranceError, RuntimeError)
    True
    """


class SVDConvergenceWarning(RuntimeWarning):
    """:func:`randomized_svd` did not reach its ``tol`` within its pass limit.

    The triplets are returned all the same, with the residual reached in the message (and
    in the :class:`SVDInfo` of ``return_info=True``).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sparsecca.linalg import SVDConvergenceWarning, randomized_svd
    >>> A = np.random.default_rng(0).standard_normal((60, 40))  # a flat spectrum
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = randomized_svd(A, 5, tol=1e-12, n_iter=1, random_state=0)
    >>> caught[0].category is SVDConvergenceWarning
    True
    """
