"""Rerankers of n-best lists: the low-dimensional (CCA) models and the baselines."""

from ._base import BaseReranker, check_nbest, losses_of_choice, tune_weight
from ._baselines import BASELINE_ROWS, baseline_rerankers
from ._boosting import BoostingReranker, RegularizedBoostingReranker
from ._joint_features import JointFeatures
from ._perceptron import PerceptronReranker

__all__ = [
    "BASELINE_ROWS",
    "BaseReranker",
    "BoostingReranker",
    "JointFeatures",
    "PerceptronReranker",
    "RegularizedBoostingReranker",
    "baseline_rerankers",
    "check_nbest",
    "losses_of_choice",
    "tune_weight",
]
