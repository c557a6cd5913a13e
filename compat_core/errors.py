"""Every exception compat raises, in one module, under one base: :class:`CompatError`.

``fit()``'s failure keeps Ray's families: :class:`TrainingFailedError` is a
``ray.train.TrainingFailedError`` whichever engine ``ray.train`` was imported for (V1's
``ray.train.base_trainer.TrainingFailedError`` and V2's), so ``except
ray.train.TrainingFailedError:`` keeps catching after a team adopts compat. When V2 said
the cause was the worker group or the controller, the error is also a
``ray.train.WorkerGroupError`` / ``ray.train.ControllerError``, and when V2 gave up on a
preempted run, a ``ray.train.PreemptionError``.
"""

from __future__ import annotations

from typing import Any


def _ray_bases() -> tuple[tuple[type[BaseException], ...], type[BaseException], type[BaseException]]:
    """Ray's failure classes: (V1 and V2 ``TrainingFailedError``, ``WorkerGroupError``,
    ``ControllerError``). Falls back to ``RuntimeError`` where a Ray lacks one."""
    bases: list[type[BaseException]] = []
    worker_group: type[BaseException] = RuntimeError
    controller: type[BaseException] = RuntimeError
    try:
        from ray.train.base_trainer import TrainingFailedError as V1Failed

        bases.append(V1Failed)
    except Exception:  # an unsupported Ray: the version check reports it
        pass
    try:
        from compat_core.releases.standins import v2_failure_classes

        failed, worker_group, controller = v2_failure_classes()
        if failed is not None:
            bases.append(failed)
    except Exception:
        pass
    return tuple(bases) or (RuntimeError,), worker_group, controller


_FAILED_BASES, _WORKER_GROUP_ERROR, _CONTROLLER_ERROR = _ray_bases()


def _ray_preemption_error() -> type[BaseException]:
    """Ray's ``PreemptionError`` (2.58+; a stand-in Ray never raises before)."""
    try:
        from compat_core.releases.standins import PreemptionError

        return PreemptionError
    except Exception:  # an unsupported Ray: the version check reports it
        return RuntimeError


_PREEMPTION_ERROR = _ray_preemption_error()


class CompatError(Exception):
    """Base class of every exception compat raises."""


class UnsupportedRayError(CompatError, ImportError):
    """The installed ray is outside the range compat supports."""


class MissingRayError(CompatError, ModuleNotFoundError):
    """Ray is not installed: the base install is the codemod's; the runtime is an extra."""


class CompatShadowedError(CompatError, ImportError):
    """A module of the user's named ``compat`` would be imported instead of this package (by
    Ray's workers, which put the driver's working and script directories first on their path)."""


class InvalidSwitchValueError(CompatError, ValueError):
    """A variable compat reads (``RAY_TRAIN_V2_ENABLED``, any ``COMPAT_*`` of
    :mod:`compat_core.settings`) holds a value it does not accept; the message names the variable
    and what it accepts."""


class ReportError(CompatError, ValueError):
    """A ``report()`` argument cannot be stored; the message says how to fix it."""


class RestoreError(CompatError, ValueError):
    """``Trainer.restore(path)`` cannot restore from ``path`` (a ``ValueError``, as V1's)."""


class ResultNotFoundError(CompatError, RuntimeError):
    """``Result.from_path(path)``: no run's result at ``path`` (a ``RuntimeError``, as Ray's)."""


class WorkerLostError(CompatError, RuntimeError):
    """A worker's process ended without a word: neither its return nor an error reached
    compat, and the engine retried without saying why (``after_exception`` gets this)."""


class NotInTrainingFunctionError(CompatError, RuntimeError):
    """A worker-only function was called on the driver."""


class TrainingFailedError(CompatError, *_FAILED_BASES):  # type: ignore[misc]  # bases depend on Ray
    """Training failed (either backend). ``.result`` holds every metric reported before.

    ``.worker_failures`` maps world rank to the exception each failed worker raised (last
    attempt); ``.cause`` is the error Ray raised. Built by a user as Ray's are (a message).
    """

    def __init__(
        self,
        message: str = "",
        result: Any = None,
        worker_failures: dict[int, BaseException] | None = None,
        cause: BaseException | None = None,
    ) -> None:
        Exception.__init__(self, message)
        self.result = result
        self.worker_failures = dict(worker_failures or {})
        self.cause = cause
        # V2's WorkerGroupError / ControllerError attributes, for handlers that read them.
        self._error_message = message
        self.controller_failure = cause

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> Any:
        return (_rebuilt, (type(self), str(self), self.result, self.worker_failures, self.cause))


def _rebuilt(
    cls: type[TrainingFailedError],
    message: str,
    result: Any,
    worker_failures: dict[int, BaseException] | None,
    cause: BaseException | None,
) -> TrainingFailedError:
    """A failure of a ``fit()`` (or one unpickled): every field as compat gives it, whatever
    the constructor a user calls takes (``WorkerGroupError(error_message, worker_failures)``
    and ``ControllerError(controller_failure)`` take Ray's arguments)."""
    error = cls.__new__(cls)
    TrainingFailedError.__init__(error, message, result, worker_failures, cause)
    return error


class WorkerGroupFailedError(TrainingFailedError, _WORKER_GROUP_ERROR):  # type: ignore[misc, valid-type]
    """Training failed in the worker group: also a ``ray.train.WorkerGroupError``.

    Built by a user as Ray's: ``WorkerGroupError(error_message, worker_failures)``, its
    message Ray's (``"Training failed due to worker errors:\n" + error_message``)."""

    def __init__(self, error_message: str, worker_failures: dict[int, BaseException] | None = None) -> None:
        super().__init__("Training failed due to worker errors:\n" + error_message, None, worker_failures)
        self._error_message = error_message


class ControllerFailedError(TrainingFailedError, _CONTROLLER_ERROR):  # type: ignore[misc, valid-type]
    """V2's controller failed: also a ``ray.train.ControllerError``.

    Built by a user as Ray's: ``ControllerError(controller_failure)``."""

    def __init__(self, controller_failure: BaseException) -> None:
        super().__init__("Training failed due to controller error:\n" + str(controller_failure), None, None)
        self.controller_failure = self.cause = controller_failure
        self.with_traceback(controller_failure.__traceback__)


class PreemptedFailedError(TrainingFailedError, _PREEMPTION_ERROR):  # type: ignore[misc, valid-type]
    """V2 gave up on a run its nodes' preemptions interrupted (more of them than
    ``FailureConfig(max_preemption_failures)`` allows): also a ``ray.train.PreemptionError``,
    with its ``preemption_info`` and ``drain_timed_out``.

    Built by a user as Ray's: ``PreemptionError(preemption_info, drain_timed_out=False)``."""

    def __init__(self, preemption_info: Any, drain_timed_out: bool = False) -> None:
        super().__init__(str(_PREEMPTION_ERROR(preemption_info, drain_timed_out)))  # Ray's message
        self.preemption_info, self.drain_timed_out = preemption_info, drain_timed_out


def preempted(error: BaseException | None) -> bool:
    """Whether ``error`` is Ray's ``PreemptionError`` (2.58+): V2 gave up on a run whose nodes
    were preempted."""
    return isinstance(error, _PREEMPTION_ERROR) and _PREEMPTION_ERROR is not RuntimeError


def training_failed(
    message: str, result: Any, worker_failures: dict[int, BaseException], cause: BaseException
) -> TrainingFailedError:
    """The :class:`TrainingFailedError` subclass that keeps the family of Ray's ``cause``."""
    cls: type[TrainingFailedError] = TrainingFailedError
    if preempted(cause):
        error = _rebuilt(PreemptedFailedError, message, result, worker_failures, cause)
        error.preemption_info = getattr(cause, "preemption_info", None)
        error.drain_timed_out = getattr(cause, "drain_timed_out", False)
        return error
    if isinstance(cause, _CONTROLLER_ERROR) and _CONTROLLER_ERROR is not RuntimeError:
        cls = ControllerFailedError
    elif worker_failures or (isinstance(cause, _WORKER_GROUP_ERROR) and _WORKER_GROUP_ERROR is not RuntimeError):
        cls = WorkerGroupFailedError
    return _rebuilt(cls, message, result, worker_failures, cause)


class CallbackError(CompatError, RuntimeError):
    """A ``UserCallback`` raised. Training went on; ``.result`` is the complete result."""

    def __init__(self, message: str, result: Any, failures: list[Any]) -> None:
        super().__init__(message)
        self.result = result
        self.failures = failures


class UnsafeStateDirectoryError(CompatError, PermissionError):
    """compat's directory of run state on this node (journals, staged logs) could be written by
    another user: compat refuses to use it (compat_core.files.private)."""
