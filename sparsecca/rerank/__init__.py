"""Rerankers of n-best lists: the low-dimensional (CCA) models and the baselines.

The Table 2 line-up of these models, by row name, is :mod:`sparsecca.registry`'s
(:func:`sparsecca.registry.default_rerankers`).
"""

from ..exceptions import NotFittedError
from ._base import BaseReranker, check_nbest, losses_of_choice, plateau_score, tune_weight
from ._boosting import BoostingReranker, RegularizedBoostingReranker
from ._cca import DiscriminativeReranker, GenerativeReranker, SoftenedReranker
from ._cca_solve import RerankerToleranceWarning
from ._hidden import HiddenVariableReranker
from ._joint_features import JointFeatures
from ._perceptron import PerceptronReranker

__all__ = [
    "BaseReranker",
    "BoostingReranker",
    "DiscriminativeReranker",
    "GenerativeReranker",
    "HiddenVariableReranker",
    "JointFeatures",
    "NotFittedError",
    "PerceptronReranker",
    "RegularizedBoostingReranker",
    "RerankerToleranceWarning",
    "SoftenedReranker",
    "check_nbest",
    "losses_of_choice",
    "tune_weight",
    "plateau_score",
]
