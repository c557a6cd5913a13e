"""``compat.torch.TorchTrainer``: picks the backend at ``fit()`` and runs it."""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable
from typing import Any

from compat.callbacks import is_user_callback
from compat_core import capture, checks, messages, releases, switch, tune, usage, where, worker
from compat_core.config import (
    RunConfig,
    ScalingConfig,
    coerce,
    record_v1_only_options,
)
from compat_core.engine import Backend, TrainJob
from compat_core.errors import CallbackError, training_failed
from compat_core.frameworks import DATA_PARALLEL, TORCH, Framework
from compat_core.ledger import LedgerSnapshot, ledger_concurrency, ray_validation_runner, remote_ledger_class
from compat_core.model import Retention
from compat_core.patch import scoped_env
from compat_core.result import Result
from compat_core.usage import UsageLog
from compat_core.validation import trainer_config


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


@functools.cache
def _ledger_actor() -> Any:
    return remote_ledger_class()


class DataParallelTrainer:
    """Runs ``train_loop_per_worker`` on ``scaling_config.num_workers`` workers.

    Takes compat's configs or Ray's (V1 or V2), and any ``ray.train.backend.BackendConfig``
    as ``backend_config``. The backend (``RAY_TRAIN_V2_ENABLED``) is read at ``fit()``, not
    at construction, so flipping the variable between two runs in one process works.
    Under v1, a ``UserCallback`` and both validation forms work too.
    """

    _framework: Framework = DATA_PARALLEL

    def __init__(
        self,
        train_loop_per_worker: Callable[..., Any],
        *,
        train_loop_config: dict[str, Any] | None = None,
        backend_config: Any = None,
        scaling_config: Any = None,
        run_config: Any = None,
        datasets: dict[str, Any] | None = None,
        dataset_config: Any = None,
        validation_config: Any = None,
        metadata: dict[str, Any] | None = None,
        resume_from_checkpoint: Any = None,
    ) -> None:
        kind = type(self).__name__
        if not callable(train_loop_per_worker):
            raise TypeError(
                f"{kind} needs a training function as its first argument, got {type(train_loop_per_worker).__name__}."
            )
        if train_loop_config is not None and not isinstance(train_loop_config, dict):
            raise TypeError(f"train_loop_config= takes a dict, got {type(train_loop_config).__name__}.")
        if datasets is not None and not isinstance(datasets, dict):
            raise TypeError(f"datasets= takes a dict of name -> Ray Dataset, got {type(datasets).__name__}.")
        self.train_loop_per_worker = train_loop_per_worker
        self.train_loop_config = train_loop_config
        self.backend_config = backend_config
        self.scaling_config = coerce(ScalingConfig, scaling_config, "scaling_config")
        self.run_config = coerce(RunConfig, run_config, "run_config")
        self.datasets = datasets
        self.dataset_config = dataset_config
        self.validation_config = validation_config
        self.metadata = metadata
        self.resume_from_checkpoint = resume_from_checkpoint
        self.__name__ = kind  # Tune names trials after the trainable
        # RunConfig options this trainer consumes itself (not V1-only for it).
        self._consumed_options: frozenset[str] = frozenset()
        if validation_config is not None:
            trainer_config(validation_config)  # type check now, not at fit()

    # -- as a Ray Tune trainable: tune.Tuner(trainer, param_space=...) ------------------
    def __call__(self, config: dict[str, Any]) -> None:
        """Run one Tune trial (Tune calls this; see :mod:`compat_core.tune`)."""
        selected = self._selected_backend()
        os.environ[switch.ENV_VAR] = switch.env_value(selected)  # the driver's choices
        if "_tuned_engine" in self.__dict__:
            os.environ[switch.ENGINE_ENV_VAR] = self.__dict__["_tuned_engine"]
        trial = tune.with_sample(self, config or {})
        if switch.engine(selected) == "v2" and trial.run_config.storage_path is None:  # the run goes in the trial
            import ray.tune

            trial.run_config = dataclasses.replace(
                trial.run_config, name="train", storage_path=ray.tune.get_context().get_trial_dir()
            )
        trial._run(in_trial=True)

    def _resources(self, config: dict[str, Any]) -> Any:
        """The resources of one trial (Tune reads ``_resources`` of a function trainable)."""
        selected = self._selected_backend()
        scaling = tune.scaling_of(config["scaling_config"]) if "scaling_config" in config else self.scaling_config
        return switch.driver_backend(selected).trial_resources(scaling)

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles the trainable on the driver: the trial runs the backend chosen there.
        return {**self.__dict__, "_tuned_backend": self._selected_backend(), "_tuned_engine": switch.v1_engine()}

    def _backend_config(self, engine: switch.Backend, scaling: Any) -> Any:
        config = self._framework.config_for(self.backend_config, engine)
        return releases.v2_backend_config(config, bool(scaling.use_gpu)) if engine == "v2" else config

    def _selected_backend(self) -> switch.Backend:
        """The backend the driver selected when Tune pickled this trainer, else the current one."""
        chosen: switch.Backend | None = self.__dict__.get("_tuned_backend")
        return chosen or switch.backend()

    def fit(self) -> Result:
        """Run training. Raises :class:`compat.TrainingFailedError` (with ``.result``)."""
        return self._run(in_trial=False)

    def _run(self, *, in_trial: bool) -> Result:
        call_site = where.user_call_site()
        name = switch.backend()
        backend: Backend = switch.driver_backend(name)
        ensure_ray()
        import ray

        usage.take()
        scaling, run = self.scaling_config, self.run_config
        record_v1_only_options(scaling, run, name, consumed=self._consumed_options)
        user_callbacks = [c for c in run.callbacks if is_user_callback(c)]
        other_callbacks = [c for c in run.callbacks if not is_user_callback(c)]
        for callback in other_callbacks:
            usage.relied_on("tune-callback", type(callback).__name__, backend=name)
        if self.resume_from_checkpoint is not None or self.metadata is not None:
            usage.relied_on("resume-from-checkpoint", backend=name)

        run_context = RunContext(run, self.train_loop_config, scaling)
        start_time = time.time()
        backend.prepare(run, self.train_loop_config, start_time, self._framework.trainer_name)
        ledger = (
            _ledger_actor()
            .options(max_concurrency=ledger_concurrency(scaling.num_workers))
            .remote(
                scaling.num_workers,
                callbacks=user_callbacks if backend.ledger_runs_callbacks else [],
                run_context=run_context,
                validation_runner=(
                    functools.partial(ray_validation_runner, switch_value=switch.outside_training_value(name))
                    if backend.ledger_runs_validation
                    else None
                ),
                round_sink=backend.round_sink(),
                retention=_retention(run, backend.engine),
            )
        )
        validation_config = trainer_config(self.validation_config, ledger)
        if backend.ledger_runs_validation:
            ray.get(ledger.use_validation_config.remote(validation_config))
        settings = worker.driver_settings(
            name,
            ledger,
            engine=backend.engine,
            has_validation_config=self.validation_config is not None,
            keep_v1_logs=run.keep_v1_logs,
        )
        job = TrainJob(
            train_fn=worker.wrap(self.train_loop_per_worker, settings),
            train_loop_config=self.train_loop_config,
            scaling=scaling,
            run=run,
            user_callbacks=user_callbacks,
            other_callbacks=other_callbacks,
            ledger=ledger,
            framework=self._framework,
            backend_config=self._backend_config(backend.engine, scaling),
            datasets=self.datasets,
            dataset_config=self.dataset_config,
            validation_config=validation_config,
            metadata=self.metadata,
            resume_from_checkpoint=self.resume_from_checkpoint,
            start_time=start_time,
        )
        env = {switch.ENV_VAR: switch.env_value(backend.engine), **backend.engine_env()}
        raw: Any = None
        error: BaseException | None = None
        driver_usages = usage.take()
        try:
            with scoped_env(env):
                raw = backend.run_in_trial(job) if in_trial else backend.run(job)
        except Exception as exc:  # Ray's failure types differ by engine; one type here
            error = exc
        try:
            snapshot = ray.get(ledger.close.remote())
        finally:
            ray.kill(ledger)
        result = backend.build_result(job, raw, snapshot, error)
        log = UsageLog()
        log.merge(driver_usages + usage.take() + snapshot.usages)
        result.v1_usage = log.as_list()
        call = capture.FitCall(self._framework.trainer_name, run.name, call_site)
        capture.capture(result, time.time() - start_time, error, call)
        if backend.warns_v1_only:
            usage.warn_for_workers(snapshot.usages)
        _warn_non_finite(snapshot)
        if error is not None:
            last = snapshot.failures[-1] if snapshot.failures else {}
            causes = [f"worker {rank}: {type(e).__name__}: {e}" for rank, e in sorted(last.items())]
            cause = "; ".join(causes) or f"{type(error).__name__}: {error}"
            raise training_failed(messages.training_failed(cause), result, last, error) from error
        if snapshot.callback_failures:
            first = snapshot.callback_failures[0]
            raise CallbackError(first.message(), result, snapshot.callback_failures)
        return result


class TorchTrainer(DataParallelTrainer):
    """Runs ``train_loop_per_worker`` on ``scaling_config.num_workers`` torch workers
    (``torch_config``: a ``compat.torch.TorchConfig``). Everything else as
    :class:`DataParallelTrainer`."""

    _framework = TORCH

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
        super().__init__(
            train_loop_per_worker,
            train_loop_config=train_loop_config,
            backend_config=torch_config,
            scaling_config=scaling_config,
            run_config=run_config,
            datasets=datasets,
            dataset_config=dataset_config,
            validation_config=validation_config,
            metadata=metadata,
            resume_from_checkpoint=resume_from_checkpoint,
        )

    @property
    def torch_config(self) -> Any:
        return self.backend_config


def _retention(run: RunConfig, engine: switch.Engine) -> Retention:
    """The checkpoints the engine's checkpoint manager keeps, which the ledger's answers to
    ``get_all_reported_checkpoints`` follow: V1's manager appends a checkpoint without the
    score attribute from Ray 2.49, V2's always ranks it by -inf (docs §27, §28)."""
    c = run.checkpoint_config
    if c is None:
        return Retention()
    newest = engine == "v1" and releases.UNSCORED_CHECKPOINTS_NEWEST
    return Retention(c.num_to_keep, c.checkpoint_score_attribute, c.checkpoint_score_order, newest)


def _warn_non_finite(snapshot: LedgerSnapshot) -> None:
    """One warning per key that was NaN or infinite in any report of the run."""
    seen: dict[str, tuple[int, str]] = {}
    for record in sorted(snapshot.records, key=lambda r: (r.key, r.rank)):
        for key in checks.non_finite_keys(record.metrics):
            count, first = seen.get(key, (0, f"worker {record.rank}, report {record.index}"))
            seen[key] = (count + 1, first)
    for key, (count, first) in seen.items():
        where.warn(messages.non_finite_metric(key, count, first), usage.NonFiniteMetricWarning)
