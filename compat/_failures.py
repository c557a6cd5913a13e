"""What a failed ``fit()`` raises, as raw Ray raises it in each mode: compat's error of Ray's
family carrying the result, the error a run Ray refused before training raised as it is, and
what the error is raised from."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from compat_core import messages
from compat_core.errors import CallbackError, CompatError, preempted, training_failed
from compat_core.semantics.records import LedgerSnapshot
from compat_core.semantics.result import Result


@dataclass(frozen=True)
class Failure:
    """What a failed ``fit()`` raises (``error``) and from what (``cause``). ``refused``: Ray refused
    the run before any worker started, and raw Ray raises its error as it is, from nothing."""

    error: BaseException
    cause: BaseException | None = None
    refused: bool = False

    def raise_(self) -> NoReturn:
        if self.refused:
            raise self.error
        raise self.error from self.cause


def of_fit(
    outcome: Result,
    snapshot: LedgerSnapshot,
    error: BaseException | None,
    train_fn: Callable[..., Any],
    *,
    keeps_every_report: bool,
) -> Failure | None:
    """What a fit that did not succeed raises, as raw Ray raises it: a run Ray refused before
    training, Ray's own error; a failed run, compat's error (also Ray's class of its engine)
    carrying the result, from the worker's own exception under V1 (``v1_cause``) and Ray's error
    under V2; a user callback that raised, compat's CallbackError. ``None``: the fit succeeded."""
    if error is not None and refused_before_training(error, snapshot):
        return Failure(as_ray_raises_it(error, train_fn), refused=True)
    raised = _raised(outcome, snapshot, error)
    if raised is None:
        return None
    return Failure(raised, v1_cause(error, snapshot) if keeps_every_report else error)


def _raised(outcome: Result, snapshot: LedgerSnapshot, error: BaseException | None) -> Exception | None:
    """For a failed run compat's error (also Ray's class of its engine), carrying the result; for
    a user callback that raised, compat's CallbackError."""
    if error is not None:
        last = snapshot.failures[-1] if snapshot.failures else {}
        causes = [f"worker {rank}: {type(e).__name__}: {e}" for rank, e in sorted(last.items())]
        if preempted(error):
            # Ray's reason first: what a worker raised as its node went away (an actor of the
            # node died under it) is a consequence of the preemption, not the run's cause.
            causes.insert(0, str(error).splitlines()[0])
        cause = "; ".join(causes) or f"{type(error).__name__}: {error}"
        if snapshot.host_lost is not None:
            cause = messages.ledger_host_lost(snapshot.host_lost, cause)
        return training_failed(messages.training_failed(cause), outcome, last, error)
    if snapshot.callback_failures:
        first = snapshot.callback_failures[0]
        return CallbackError(first.message(), outcome, snapshot.callback_failures)
    return None


def refused_before_training(error: BaseException, snapshot: LedgerSnapshot) -> bool:
    """Whether Ray refused the run before any worker started (a ``ValueError`` for an option the
    trainer does not take, a ``TypeError`` for a training function that cannot be pickled):
    raw Ray raises such an error from ``fit()`` as it is, in both settings, not as a training
    failure. compat's own errors and Ray's training failures are not."""
    from ray.train.base_trainer import TrainingFailedError as V1TrainingFailedError

    if snapshot.workers_started or snapshot.host_lost is not None:
        return False
    training_failures: tuple[type[BaseException], ...] = (V1TrainingFailedError, CompatError)
    with contextlib.suppress(ImportError):
        from ray.train.v2.api.exceptions import TrainingFailedError as V2TrainingFailedError

        training_failures += (V2TrainingFailedError,)
    return not isinstance(error, training_failures)


def as_ray_raises_it(error: BaseException, train_fn: Callable[..., Any]) -> BaseException:
    """``error`` as raw Ray's ``fit()`` raises it: a training function that cannot be pickled
    named as the user's function (Ray's check of what cannot be pickled in it), not compat's
    wrapper of it."""
    import ray

    if isinstance(error, TypeError) and str(error).startswith("Could not serialize"):
        try:
            ray.put(train_fn)  # raises Ray's TypeError for the user's function
        except TypeError as theirs:
            # Where Ray passes the function to its controller as an argument (V2 before 2.52),
            # its error names that task, not a put value: the same words for the user's function.
            passed = re.match(r"Could not serialize the argument .* for a task or actor (\S+):", str(error))
            if passed is None:
                return theirs
            trace = str(theirs).partition("\n")[2]
            return TypeError(messages.ray_could_not_serialize(train_fn, passed.group(1), trace))
    return error


def v1_cause(error: BaseException | None, snapshot: LedgerSnapshot) -> BaseException | None:
    """What raw V1's ``TrainingFailedError`` is raised from: the failed worker's own exception
    (Ray's ``RayTaskError`` that is also the user's class), so ``isinstance(error.__cause__,
    MyError)`` holds as with raw V1, on either engine; not Ray's error wrapping it (``.cause``
    keeps that)."""
    from ray.train.base_trainer import TrainingFailedError as V1TrainingFailedError

    if isinstance(error, V1TrainingFailedError) and error.__cause__ is not None:
        return error.__cause__
    last = snapshot.failures[-1] if snapshot.failures else {}
    return last[min(last)] if last else error
