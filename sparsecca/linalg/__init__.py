"""The linear-algebra engine: regularised CCA without dense d x d matrices.

Row convention (one example per row), the paper's scaling (Eq. 11)::

    Cxx = (1 - tau) Xc^T Xc + tau I,   Cyy = (1 - tau) Yc^T Yc + tau I,   Cxy = Xc^T M

with Xc = X unless centring is asked for (sparse views implicitly, by rank-one corrections;
dense ones explicitly, in float64 copies).  Because Cxy
is not scaled by (1 - tau), sqrt(omega) of Eq. 14 can exceed 1 (up to 1 / (1 - tau)).

Estimator
    :class:`SparseCCA` (scikit-learn transformer API, ``fit_path`` for a tau grid),
    :func:`cca_path`
The reusable solver
    :class:`CCAEngine` (fixed X, Y; any tau and cross-covariance factor M), its results
    :class:`CCAResult`; :class:`Thresholds`, the numeric thresholds of its choices;
    :func:`column_mean` and :func:`centred_projection` (projections of implicitly centred
    rows, for a centred fit)
Streamed statistics
    :class:`GramStats`, :class:`CrossCovariance` (accumulated from CSR row blocks with
    ``from_blocks``) and :func:`cca_from_stats`, the CCA from them alone;
    :func:`in_precision`, an operator's products in float32 (a solve's one cast)
Randomized SVD (Halko, Martinsson & Tropp 2011)
    :func:`randomized_svd`
Errors
    :class:`FactorizationError`, :class:`SingularCovarianceError`
    (subclasses of ``numpy.linalg.LinAlgError`` and hence of ``ValueError``),
    :class:`RankDeficientError` (a ``ValueError``: more components than nonzero correlations),
    :class:`SolverToleranceError`; :class:`CentringPrecisionWarning` (a ``RuntimeWarning``:
    implicit centring of a sparse view whose column means dominate its spread cancels
    digits), :class:`SVDConvergenceWarning`

The building blocks (the inverse operators of Cxx, ``reduced_cca``, the range finders,
block CG) live in the private modules, for the package's own use (docs/engine.md, "For
developers").
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
from ._gram import CrossCovariance, GramStats, centred_projection, column_mean
from ._precision import in_precision
from ._result import CCAResult
from ._rsvd import randomized_svd
from ._stats_cca import cca_from_stats
from ._thresholds import Thresholds

__all__ = [
    "CCAEngine",
    "CCAResult",
    "CentringPrecisionWarning",
    "CrossCovariance",
    "FactorizationError",
    "GramStats",
    "RankDeficientError",
    "SVDConvergenceWarning",
    "SingularCovarianceError",
    "SolverToleranceError",
    "SparseCCA",
    "Thresholds",
    "cca_from_stats",
    "cca_path",
    "centred_projection",
    "column_mean",
    "in_precision",
    "randomized_svd",
]
