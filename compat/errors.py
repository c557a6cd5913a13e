"""Exceptions ``fit()`` raises; each carries the run's :class:`compat.Result`."""

from __future__ import annotations

from typing import Any


class TrainingFailedError(RuntimeError):
    """Training failed (either backend). ``.result`` holds every metric reported before."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


class CallbackError(RuntimeError):
    """A ``UserCallback`` raised. Training went on; ``.result`` is the complete result."""

    def __init__(self, message: str, result: Any, failures: list[Any]) -> None:
        super().__init__(message)
        self.result = result
        self.failures = failures
