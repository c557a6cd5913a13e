"""compat's errors: every one a ``compat.CompatError``; the failures of a run are also Ray's
own classes of the engine that ran it (defined in :mod:`compat_core.errors`)."""

from compat_core.errors import (
    CallbackError,
    CompatError,
    CompatShadowedError,
    ControllerFailedError,
    InvalidSwitchValueError,
    MissingRayError,
    NotInTrainingFunctionError,
    PreemptedFailedError,
    ReportError,
    RestoreError,
    ResultNotFoundError,
    TrainingFailedError,
    UnsafeStateDirectoryError,
    UnsupportedRayError,
    WorkerGroupFailedError,
    WorkerLostError,
)

__all__ = [
    "CallbackError",
    "CompatError",
    "CompatShadowedError",
    "ControllerFailedError",
    "InvalidSwitchValueError",
    "MissingRayError",
    "NotInTrainingFunctionError",
    "PreemptedFailedError",
    "ReportError",
    "RestoreError",
    "ResultNotFoundError",
    "TrainingFailedError",
    "UnsafeStateDirectoryError",
    "UnsupportedRayError",
    "WorkerGroupFailedError",
    "WorkerLostError",
]
