"""Numba kernels on raw arrays, each behind a validating public wrapper."""

from ._residuals import aggregate_residuals, slack_update
from ._viterbi import kbest_viterbi, sequence_logprob

__all__ = ["aggregate_residuals", "kbest_viterbi", "sequence_logprob", "slack_update"]
