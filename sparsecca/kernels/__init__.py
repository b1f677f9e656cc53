"""Numba kernels on raw arrays, each behind a validating public wrapper."""

from ._residuals import aggregate_residuals, slack_update

__all__ = ["aggregate_residuals", "slack_update"]
