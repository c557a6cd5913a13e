"""``compat.torch.TorchTrainer``: picks the backend at ``fit()`` and runs it."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from compat import _messages, _switch, _usage, _worker
from compat._backend import Backend, TrainJob
from compat._ledger import ray_validation_runner, remote_ledger_class
from compat._usage import UsageLog
from compat._validation import trainer_config
from compat.callbacks import is_user_callback
from compat.config import (
    RunConfig,
    ScalingConfig,
    coerce,
    record_v1_only_options,
)
from compat.errors import CallbackError, TrainingFailedError
from compat.result import Result

# V2's controller waits this long between polls of the workers, and so each report round
# waits for it: Ray's default of 2 s makes 20 per-step reports take ~40 s. compat uses a
# shorter default unless the user set the variable. See docs/environment_variables.md.
POLL_ENV_VAR = "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"
COMPAT_POLL_DEFAULT_S = "0.05"


def backend_for(name: _switch.Backend) -> Backend:
    if name == "v1":
        from v1.backend import V1Backend

        return V1Backend()
    from v2.backend import V2Backend

    return V2Backend()


class RunContext:
    """What ``after_report``/``after_exception`` receive as ``run_context`` under v1."""

    def __init__(self, run_config: RunConfig, train_loop_config: Any, scaling_config: ScalingConfig) -> None:
        self.run_config = run_config
        self.train_loop_config = train_loop_config
        self.scaling_config = scaling_config

    def get_run_config(self) -> RunConfig:
        return self.run_config


def ensure_ray() -> None:
    """Start a local Ray cluster if none is connected (Ray would do the same lazily)."""
    import ray

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=True)


@contextmanager
def driver_env(values: Mapping[str, str]) -> Iterator[None]:
    """Set variables for the duration of ``fit()`` only, then restore them."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@functools.cache
def _ledger_actor() -> Any:
    return remote_ledger_class()


class TorchTrainer:
    """Runs ``train_loop_per_worker`` on ``scaling_config.num_workers`` torch workers.

    Takes compat's configs or Ray's (V1 or V2). The backend (``RAY_TRAIN_V2_ENABLED``) is
    read at ``fit()``, not at construction, so flipping the variable between two runs in
    one process works. Under v1, a ``UserCallback`` and both validation forms work too.
    """

    def __init__(
        self,
        train_loop_per_worker: Callable[..., Any],
        *,
        train_loop_config: dict[str, Any] | None = None,
        torch_config: Any = None,
        scaling_config: Any = None,
        run_config: Any = None,
        datasets: dict[str, Any] | None = None,
        dataset_config: Any = None,
        validation_config: Any = None,
        metadata: dict[str, Any] | None = None,
        resume_from_checkpoint: Any = None,
    ) -> None:
        if not callable(train_loop_per_worker):
            raise TypeError(
                f"TorchTrainer needs a training function as its first argument, got "
                f"{type(train_loop_per_worker).__name__}."
            )
        if train_loop_config is not None and not isinstance(train_loop_config, dict):
            raise TypeError(f"train_loop_config= takes a dict, got {type(train_loop_config).__name__}.")
        self.train_loop_per_worker = train_loop_per_worker
        self.train_loop_config = train_loop_config
        self.torch_config = torch_config
        self.scaling_config = coerce(ScalingConfig, scaling_config, "scaling_config")
        self.run_config = coerce(RunConfig, run_config, "run_config")
        self.datasets = datasets
        self.dataset_config = dataset_config
        self.validation_config = validation_config
        self.metadata = metadata
        self.resume_from_checkpoint = resume_from_checkpoint
        if validation_config is not None:
            trainer_config(validation_config)  # type check now, not at fit()

    def fit(self) -> Result:
        """Run training. Raises :class:`compat.TrainingFailedError` (with ``.result``)."""
        name = _switch.backend()
        backend = backend_for(name)
        ensure_ray()
        import ray

        _usage.take()
        scaling, run = self.scaling_config, self.run_config
        record_v1_only_options(scaling, run, name)
        user_callbacks = [c for c in run.callbacks if is_user_callback(c)]
        other_callbacks = [c for c in run.callbacks if not is_user_callback(c)]
        for callback in other_callbacks:
            _usage.relied_on("tune-callback", type(callback).__name__, backend=name)
        if self.resume_from_checkpoint is not None or self.metadata is not None:
            _usage.relied_on("resume-from-checkpoint", backend=name)

        run_context = RunContext(run, self.train_loop_config, scaling)
        ledger = _ledger_actor().remote(
            scaling.num_workers,
            callbacks=user_callbacks if name == "v1" else [],
            run_context=run_context,
            validation_runner=ray_validation_runner if name == "v1" else None,
        )
        validation_config = trainer_config(self.validation_config, ledger)
        if name == "v1":
            ray.get(ledger.use_validation_config.remote(validation_config))
        settings = _worker.driver_settings(
            name,
            ledger,
            has_validation_config=self.validation_config is not None,
            keep_v1_logs=run.keep_v1_logs,
        )
        job = TrainJob(
            train_fn=_worker.wrap(self.train_loop_per_worker, settings),
            train_loop_config=self.train_loop_config,
            scaling=scaling,
            run=run,
            user_callbacks=user_callbacks,
            other_callbacks=other_callbacks,
            ledger=ledger,
            torch_config=self.torch_config,
            datasets=self.datasets,
            dataset_config=self.dataset_config,
            validation_config=validation_config,
            metadata=self.metadata,
            resume_from_checkpoint=self.resume_from_checkpoint,
            start_time=time.time(),
        )
        env = {_switch.ENV_VAR: _switch.env_value(name)}
        if name == "v2" and POLL_ENV_VAR not in os.environ:
            env[POLL_ENV_VAR] = COMPAT_POLL_DEFAULT_S
        raw: Any = None
        error: BaseException | None = None
        driver_usages = _usage.take()
        try:
            with driver_env(env):
                raw = backend.run(job)
        except Exception as exc:  # Ray's failure types differ by engine; one type here
            error = exc
        try:
            snapshot = ray.get(ledger.close.remote(fire_after_exception=error is not None))
        finally:
            ray.kill(ledger)
        result = backend.build_result(job, raw, snapshot, error)
        usage = UsageLog()
        usage.merge(driver_usages + _usage.take() + snapshot.usages)
        result.v1_usage = usage.as_list()
        if name == "v2":
            _usage.warn_for_workers(snapshot.usages)
        if error is not None:
            causes = [f"worker {rank}: {type(e).__name__}: {e}" for rank, e in sorted(snapshot.worker_errors.items())]
            cause = "; ".join(causes) or f"{type(error).__name__}: {error}"
            raise TrainingFailedError(_messages.training_failed(cause), result) from error
        if snapshot.callback_failures:
            first = snapshot.callback_failures[0]
            raise CallbackError(first.message(), result, snapshot.callback_failures)
        return result
