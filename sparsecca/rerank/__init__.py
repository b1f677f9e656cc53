"""Rerankers of n-best lists: the low-dimensional (CCA) models and the baselines."""

from ..exceptions import NotFittedError
from ._base import BaseReranker, check_nbest, losses_of_choice, plateau_score, tune_weight
from ._baselines import BASELINE_ROWS, baseline_rerankers
from ._boosting import BoostingReranker, RegularizedBoostingReranker
from ._cca import DiscriminativeReranker, GenerativeReranker, SoftenedReranker
from ._joint_features import JointFeatures
from ._perceptron import PerceptronReranker
from ._registry import CCA_ROWS, default_rerankers

__all__ = [
    "BASELINE_ROWS",
    "BaseReranker",
    "BoostingReranker",
    "CCA_ROWS",
    "DiscriminativeReranker",
    "GenerativeReranker",
    "JointFeatures",
    "NotFittedError",
    "PerceptronReranker",
    "RegularizedBoostingReranker",
    "SoftenedReranker",
    "baseline_rerankers",
    "check_nbest",
    "default_rerankers",
    "losses_of_choice",
    "tune_weight",
    "plateau_score",
]
