"""Numba kernels on raw arrays, each behind a validating public wrapper."""

from ._boosting import boosting_path, check_n_rounds, max_rounds, path_losses
from ._forward_backward import chain_marginals
from ._hidden import hidden_loss_grad, hidden_scores, hidden_sgd_epoch
from ._lookup import grouped_lookup
from ._mms import cluster_scores, psl_average, psl_epoch, segment_first_max
from ._perceptron import PerceptronRerankShard, perceptron_train, weight_path_losses
from ._residuals import aggregate_residuals, slack_update
from ._structured import best_sequences, dense_trigrams, structured_perceptron
from ._structured_shard import PerceptronShard
from ._viterbi import kbest_viterbi, sequence_logprob

__all__ = ["PerceptronRerankShard", "PerceptronShard", "aggregate_residuals", "best_sequences",
           "boosting_path", "chain_marginals",
           "check_n_rounds", "cluster_scores", "dense_trigrams", "grouped_lookup",
           "hidden_loss_grad", "hidden_scores", "hidden_sgd_epoch", "kbest_viterbi", "max_rounds",
           "path_losses", "perceptron_train", "psl_average", "psl_epoch", "segment_first_max",
           "sequence_logprob", "slack_update", "structured_perceptron", "weight_path_losses"]
