"""The linear-algebra engine: regularised CCA without dense d x d matrices.

Row convention (one example per row), the paper's scaling (Eq. 11)::

    Cxx = (1 - tau) Xc^T Xc + tau I,   Cyy = (1 - tau) Yc^T Yc + tau I,   Cxy = Xc^T M

with Xc = X unless centring is asked for (sparse views implicitly, by rank-one corrections;
dense ones explicitly, in float64 copies).  Because Cxy
is not scaled by (1 - tau), sqrt(omega) of Eq. 14 can exceed 1 (up to 1 / (1 - tau)).

Covariance builders
    :class:`RegularizedGram`, :class:`CrossCovariance` (LinearOperators; accumulate from CSR
    row blocks with ``from_blocks``), :class:`GramStats`; :func:`column_mean` and
    :func:`centred_projection` (projections of implicitly centred rows)
Randomized SVD (Halko, Martinsson & Tropp 2011)
    :func:`randomized_svd`, :func:`randomized_range_finder`, :func:`adaptive_range_finder`,
    :func:`svd_flip`
Inverse operators of Cxx
    :class:`GramFactor` (the tau-independent factorisation), :class:`RegularizedInverse`
    (``dense`` / ``randomized`` / ``iterative``), :func:`block_cg`
The reduced problem (Eq. 14-15)
    :func:`reduced_cca` (low level: fitted inverses + any cross-covariance),
    :class:`CCAEngine` (fixed X, Y; any tau and M), :class:`CCAResult`
Estimator
    :class:`SparseCCA` (scikit-learn transformer API, ``fit_path`` for a tau grid),
    :func:`cca_path`
Errors
    :class:`FactorizationError`, :class:`SingularCovarianceError`
    (subclasses of ``numpy.linalg.LinAlgError`` and hence of ``ValueError``),
    :class:`RankDeficientError` (a ``ValueError``: more components than nonzero correlations);
    :class:`CentringPrecisionWarning` (a ``RuntimeWarning``: implicit centring of a sparse
    view whose column means dominate its spread cancels digits)
"""

from ._cca import SparseCCA, cca_path
from ._engine import CCAEngine
from ._errors import (
    CentringPrecisionWarning,
    FactorizationError,
    RankDeficientError,
    SingularCovarianceError,
    SolverToleranceError,
    SVDConvergenceWarning,
)
from ._gram import CrossCovariance, GramStats, RegularizedGram, centred_projection, column_mean
from ._inverse import GramFactor, RegularizedInverse, block_cg
from ._reduced import reduced_cca
from ._result import CCAResult
from ._rsvd import SVDInfo, adaptive_range_finder, randomized_range_finder, randomized_svd, svd_flip
from ._thresholds import Thresholds

__all__ = [
    "CCAEngine",
    "CCAResult",
    "CentringPrecisionWarning",
    "CrossCovariance",
    "FactorizationError",
    "GramFactor",
    "GramStats",
    "RankDeficientError",
    "RegularizedGram",
    "RegularizedInverse",
    "SVDConvergenceWarning",
    "SVDInfo",
    "SingularCovarianceError",
    "SolverToleranceError",
    "SparseCCA",
    "Thresholds",
    "adaptive_range_finder",
    "block_cg",
    "cca_path",
    "centred_projection",
    "column_mean",
    "randomized_range_finder",
    "randomized_svd",
    "reduced_cca",
    "svd_flip",
]
