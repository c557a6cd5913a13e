"""Run configuration accepted under both settings: ``ScalingConfig``, ``RunConfig``,
``CheckpointConfig``, ``FailureConfig`` (defined in the shared core, :mod:`compat_core.config`)."""

from compat_core.config import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig

__all__ = ["CheckpointConfig", "FailureConfig", "RunConfig", "ScalingConfig"]
