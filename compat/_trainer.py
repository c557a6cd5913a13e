"""compat's trainers: the mode is read at ``fit()``, its engine runs the job.

A fit (:meth:`DataParallelTrainer._fit`) reads as Ray V2's: prepare, run, build. Prepare
(:meth:`~DataParallelTrainer._start`): note the user's call site and that no module of theirs
shadows compat, connect to Ray, and start the run's services (the V1-only options recorded, the
engine's storage, the run ledger, what the workers are told:
:meth:`~DataParallelTrainer._start_services`). Run: the engine runs the job. Build
(:meth:`~DataParallelTrainer._build`): the ledger closes with everything it recorded, the result
is made from the engine's parts and the ledger's records, and what ``fit()`` raises is decided.
Everything a fit leaves beside its result (the restore state, a Tune trial's records, the stored
worker reports, the readiness record, compare's record, the reads watched, the warnings) is a
callback of compat/_fit_callbacks.py, called before the run and after the build.
``tests/compat/test_fit_steps.py`` runs these steps on a fake engine, without Ray.
:class:`TrainerArguments` describes the keywords every trainer takes, once.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

from compat import _bookkeeping as bookkeeping
from compat import _engines, _local, _shadowing
from compat import _failures as failures
from compat._fit_callbacks import FitCallback, FitEnd, FitStart, default_callbacks
from compat.callbacks import is_user_callback
from compat.readiness import _record as readiness
from compat.session import route_air_session
from compat_core import messages, switch
from compat_core.config import RunConfig, ScalingConfig, coerce, record_v1_only_options
from compat_core.errors import CompatError, RestoreError
from compat_core.files.storage import RunStorage
from compat_core.integration.frameworks import DATA_PARALLEL, Framework
from compat_core.integration.patch import scoped_env
from compat_core.integration.validation import trainer_config
from compat_core.migration import usage, where
from compat_core.migration.usage import UsageLog
from compat_core.releases import adapters
from compat_core.run import tune, worker
from compat_core.run.engine import Engine, TrainJob
from compat_core.run.ledger import LedgerClient, open_ledger, ray_validation_runner
from compat_core.run.ledger.votes import vote_timeout_s
from compat_core.semantics import restore, result
from compat_core.semantics.records import LedgerSnapshot
from compat_core.semantics.result import Result
from compat_core.semantics.rounds import Retention

if TYPE_CHECKING:
    from typing_extensions import Unpack


class TrainerArguments(TypedDict, total=False):
    """The keywords every compat trainer takes, as Ray's trainers of both engines do (each
    trainer adds its backend config: ``torch_config=``, ``xgboost_config=``, ...)."""

    train_loop_config: dict[str, Any] | None
    scaling_config: Any  # compat's ScalingConfig, or Ray's of either engine
    run_config: Any  # compat's RunConfig, or Ray's of either engine
    datasets: dict[str, Any] | None
    dataset_config: Any
    validation_config: Any
    metadata: dict[str, Any] | None
    resume_from_checkpoint: Any


TRAINER_KEYWORDS = tuple(TrainerArguments.__annotations__)


def trainer_arguments(kind: str, given: dict[str, Any]) -> TrainerArguments:
    """``given`` checked against :class:`TrainerArguments`: an unknown keyword is Python's
    ``TypeError``, with the closest known one."""
    unknown = sorted(set(given) - set(TRAINER_KEYWORDS))
    if unknown:
        raise TypeError(messages.unexpected_keyword(kind, unknown[0], TRAINER_KEYWORDS))
    return TrainerArguments(**given)  # type: ignore[typeddict-item]  # keys checked above


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


def ray_trainer_bases(framework: Framework) -> tuple[type, ...]:
    """The bases of compat's trainer of ``framework``'s kind: Ray's V2 and V1 trainer classes
    of that kind, so ``isinstance(trainer, ray.train.torch.TorchTrainer)`` holds in either
    setting and Ray (Tune's ``Tuner``, a team's own checks) takes it as Ray's trainer."""
    from compat_core.releases import standins

    try:
        v2, v1 = framework.public_classes()
    except ImportError:  # a Ray without V1's engine
        return (framework.trainer_class(switch.V2),)
    return standins.ray_bases(v2, v1)


class DataParallelTrainer(*ray_trainer_bases(DATA_PARALLEL)):  # type: ignore[misc]
    """Runs ``train_loop_per_worker`` on ``scaling_config.num_workers`` workers: a subclass of
    Ray's ``DataParallelTrainer`` (V2's and V1's), whose methods are compat's own.

    Takes compat's configs or Ray's (V1 or V2), and any ``ray.train.backend.BackendConfig``
    as ``backend_config``. The mode (``RAY_TRAIN_V2_ENABLED``) is read at ``fit()``, not
    at construction, so flipping the variable between two runs in one process works.
    Under v1, a ``UserCallback`` and both validation forms work too.
    """

    _framework: Framework = DATA_PARALLEL
    legacy_form: bool = (
        False  # the tree trainers' V1 form (params=, label_column=): a param_space sample may set params
    )
    # Set by restore(): the experiment this trainer's fit() resumes.
    _restoring: restore.RestoreSpec | None = None
    _init_arguments: dict[str, Any]

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # The constructor's arguments as the user gave them, for restore() (V1's trainer.pkl).
        self = object.__new__(cls)
        self._init_arguments = _given_arguments(cls, args, kwargs)
        self._param_dict = dict(self._init_arguments)  # as V1's BaseTrainer.__new__ keeps them (its repr)
        return self

    def __init__(
        self,
        train_loop_per_worker: Callable[..., Any],
        *,
        backend_config: Any = None,
        **arguments: Unpack[TrainerArguments],
    ) -> None:
        kind = type(self).__name__
        given = trainer_arguments(kind, dict(arguments))
        train_loop_config, datasets = given.get("train_loop_config"), given.get("datasets")
        if not callable(train_loop_per_worker):
            raise TypeError(messages.needs_training_function(kind, type(train_loop_per_worker).__name__))
        if train_loop_config is not None and not isinstance(train_loop_config, dict):
            raise TypeError(messages.takes("train_loop_config=", "a dict", type(train_loop_config).__name__))
        if datasets is not None and not isinstance(datasets, dict):
            raise TypeError(messages.takes("datasets=", "a dict of name -> Ray Dataset", type(datasets).__name__))
        self.train_loop_per_worker = train_loop_per_worker
        self.train_loop_config = train_loop_config
        self.backend_config = backend_config
        self.scaling_config = coerce(ScalingConfig, given.get("scaling_config"), "scaling_config")
        self.run_config = coerce(RunConfig, given.get("run_config"), "run_config")
        self.datasets = datasets
        self.dataset_config = given.get("dataset_config")
        self.validation_config = given.get("validation_config")
        self.metadata = given.get("metadata")
        self.resume_from_checkpoint = given.get("resume_from_checkpoint")
        self.__name__ = kind  # Tune names trials after the trainable
        # RunConfig options this trainer consumes itself (not V1-only for it).
        self._consumed_options: frozenset[str] = frozenset()
        if self.validation_config is not None:
            trainer_config(self.validation_config)  # type check now, not at fit()
        overridden = [
            m for m in ("setup", "training_loop") if getattr(type(self), m) is not getattr(DataParallelTrainer, m)
        ]
        if overridden:
            raise CompatError(messages.custom_trainer_loop(kind, overridden))
        if switch.mode().raises_ray_v1_warnings:  # Ray's V1 trainer warns when made: its own warnings
            tune_callbacks = [c for c in self.run_config.callbacks if not is_user_callback(c)]
            where.call_for_user(
                adapters.v1_trainer_deprecations,
                self.scaling_config,
                self.run_config,
                tune_callbacks,
                self.metadata,
                self.resume_from_checkpoint,
            )

    def __repr__(self) -> str:
        """As V1's trainers show themselves: the class and the arguments given to it."""
        given = [f"{name}={value!r}" for name, value in self._init_arguments.items() if value is not None]
        return f"<{type(self).__name__}{''.join(' ' + g for g in given)}>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        """A notebook shows the repr (V1's rich display reads V1's private attributes)."""
        return {"text/plain": repr(self)}

    # -- as a Ray Tune trainable: tune.Tuner(trainer, param_space=...) ------------------
    def __call__(self, config: dict[str, Any]) -> None:
        """Run one Tune trial (Tune calls this; see :mod:`compat_core.run.tune`)."""
        mode = self._mode()
        os.environ.update(mode.export())  # the driver's choice, for whatever reads the switch here
        trial = tune.with_sample(self, config or {}, takes_params=self.legacy_form)
        engine = _engines.engine_for(mode)
        import ray.tune

        context = ray.tune.get_context()
        trial.run_config = engine.in_trial(trial.run_config, context.get_trial_dir())
        experiment = context.get_experiment_name()
        trial.__dict__["_tune_experiment"] = experiment  # the trial's job, for its readiness record
        trial.__dict__["_tune_trial"] = {"experiment": experiment, "config": config or {}}  # for compare
        # The trial's directory on the sweep's storage: where its readiness record goes, whichever engine.
        tune_storage = context.get_storage()
        trial.__dict__["_tune_trial_dir"] = RunStorage(tune_storage.storage_filesystem, tune_storage.trial_fs_path)
        if mode.engine is switch.V2:
            # A trial Tune retries (FailureConfig(max_failures)) or restores starts from its
            # latest checkpoint, as V1's trainer does as a trainable (V1's engine does it itself).
            trial.__dict__["_tune_checkpoint"] = ray.tune.get_checkpoint()
        trial._fit(engine, in_trial=True)

    def _resources(self, config: dict[str, Any]) -> Any:
        """The resources of one trial (Tune reads ``_resources`` of a function trainable)."""
        scaling = tune.scaling_of(config["scaling_config"]) if "scaling_config" in config else self.scaling_config
        return _engines.engine_for(self._mode()).trial_resources(scaling)

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles the trainable on the driver: the trial runs the mode chosen there, and
        # its readiness record names the driver's program, not Ray's worker process.
        script = self.__dict__.get("_driver_script") or readiness.script_name()  # a copy keeps the driver's
        # The user's line that handed the trainer to Tune (the Tuner's, tune.run's): a trial's call site.
        site = self.__dict__.get("_driver_call_site") or where.user_call_site()
        return {**self.__dict__, "_tuned_mode": self._mode(), "_driver_script": script, "_driver_call_site": site}

    def _mode(self) -> switch.Mode:
        """The mode the driver selected when Tune pickled this trainer, else the current one."""
        chosen: switch.Mode | None = self.__dict__.get("_tuned_mode")
        return chosen or switch.mode()

    # -- job-level restore: V1's Trainer.restore / Trainer.can_restore ------------------
    @classmethod
    def restore(
        cls,
        path: str | os.PathLike[str],
        train_loop_per_worker: Callable[..., Any] | None = None,
        train_loop_config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """The trainer whose ``fit()`` started in the experiment directory ``path``
        (``<storage_path>/<name>``), built again from what it stored there; its ``fit()``
        resumes the run from its latest checkpoint. As V1's: every argument given here
        (``train_loop_per_worker``, ``train_loop_config``, ``scaling_config``, any other
        constructor keyword) replaces the stored one, ``datasets=`` must give the first
        run's datasets again, ``storage_filesystem=`` is the filesystem of ``path``.
        Under v2, recorded as V1-only (V2 resumes a run started again with the same
        ``RunConfig(name, storage_path)``)."""
        _v1_restore_deprecation()
        filesystem = kwargs.pop("storage_filesystem", None)
        datasets = kwargs.pop("datasets", None)
        spec = restore.load(path, filesystem)
        stored = spec.state.trainer_class
        if stored.__name__ != cls.__name__:  # Ray's own V1 trainer of the same name is fine
            raise RestoreError(messages.restore_other_trainer(stored.__name__, cls.__name__))
        arguments = dict(spec.state.arguments)
        had = sorted(arguments.pop("datasets", None) or {})
        if had != sorted(datasets or {}):
            raise RestoreError(messages.restore_needs_datasets(cls.__name__, had, sorted(datasets or {})))
        given = {"train_loop_per_worker": train_loop_per_worker, "train_loop_config": train_loop_config, **kwargs}
        arguments.update({k: v for k, v in given.items() if v is not None})
        if datasets:
            arguments["datasets"] = datasets
        trainer = cls(**arguments)
        trainer._restoring = spec
        return trainer

    @classmethod
    def can_restore(cls, path: str | os.PathLike[str], storage_filesystem: Any = None) -> bool:
        """Whether ``path`` is an experiment directory a trainer's ``fit()`` started in (a
        compat trainer's, or Ray's V1 trainer's), on ``storage_filesystem`` when given."""
        if switch.mode().raises_ray_v1_warnings:  # Ray V1's own warnings (under V2: recorded as V1-only)
            where.call_for_user(adapters.v1_can_restore_deprecations, path, storage_filesystem)
        usage.relied_on("restore", "can_restore()", mode=switch.mode())
        return restore.can_restore(path, storage_filesystem)

    # -- the rest of Ray's trainer API (V1's BaseTrainer, V2's DataParallelTrainer) ------
    def as_trainable(self) -> Any:
        """A Ray Tune trainable that runs this trainer (V1's ``BaseTrainer.as_trainable``): the
        trainer itself, a function trainable (``tune.Tuner(trainer.as_trainable(), ...)`` and
        ``tune.Tuner(trainer, ...)`` run the same trials)."""
        return self

    def setup(self) -> None:
        """V1's hook, called before training in a trainer that overrides it. compat's trainers
        run Ray's own training loop: a subclass overriding ``setup`` or ``training_loop`` is
        refused when made (docs/compatibility.md §31)."""

    def training_loop(self) -> None:
        """V1's loop Ray Tune calls inside a trial (``BaseTrainer.training_loop``): here, one
        trial of this trainer with no ``param_space`` sample. Outside a trial, call ``fit()``."""
        import ray.tune

        try:
            in_trial = ray.tune.get_context().get_trial_id() is not None
        except Exception:
            in_trial = False
        if not in_trial:
            raise RuntimeError(messages.training_loop_outside_tune(type(self).__name__))
        self({})

    def preprocess_datasets(self) -> None:
        """Deprecated in Ray (trainers take no preprocessor): raises as Ray's does."""
        from ray.train.base_trainer import PREPROCESSOR_DEPRECATION_MESSAGE

        raise DeprecationWarning(messages.ray_preprocess_datasets_deprecated(PREPROCESSOR_DEPRECATION_MESSAGE))

    def get_dataset_config(self) -> Any:
        """The ``ray.train.DataConfig`` the workers' dataset shards are made with (V1's)."""
        return self.data_config

    @property
    def data_config(self) -> Any:
        """``dataset_config=`` as given, else Ray's default ``DataConfig()`` (V2's attribute)."""
        if self.dataset_config is not None:
            return self.dataset_config
        from ray.train import DataConfig

        return DataConfig()

    @property
    def starting_checkpoint(self) -> Any:
        """``resume_from_checkpoint=`` (V1's attribute name)."""
        return self.resume_from_checkpoint

    @property
    def running_in_local_mode(self) -> bool:
        """``ScalingConfig(num_workers=0)``: V2 runs the training function in the driver's
        process (V2's local mode; V1 refuses such a run at ``fit()``)."""
        return bool(self.scaling_config.num_workers == 0)

    def fit(self) -> Result:
        """Run training. Raises :class:`compat.TrainingFailedError` (with ``.result``)."""
        if self.running_in_local_mode:
            return _local.fit(self)
        return self._fit(_engines.engine_for(switch.mode()), in_trial=False)

    def _fit(self, engine: Engine, *, in_trial: bool) -> Result:
        """Prepare, run, build (as Ray V2's ``fit()``); the side products are callbacks."""
        start = self._start(engine, in_trial)
        callbacks = self._create_default_callbacks()
        for callback in callbacks:
            callback.before_run(start)
        raw, error = _run_engine(engine, start.job, in_trial)
        if isinstance(error, SystemExit):  # Tune stopped the trial: its process ends now
            for callback in callbacks:
                callback.after_trial_stopped(start)
            raise error
        end = self._build(start, raw, error)
        for callback in callbacks:
            callback.after_fit(end)
        if end.failure is not None:
            end.failure.raise_()
        return end.outcome

    def _create_default_callbacks(self) -> list[FitCallback]:
        """What the fit leaves beside its result (compat/_fit_callbacks.py), as Ray V2's trainer
        makes its own features."""
        return default_callbacks()

    def _start(self, engine: Engine, in_trial: bool) -> FitStart:
        """Note the user's call site and that no module of theirs shadows compat, connect to
        Ray, start the run's services."""
        call_site = (in_trial and self.__dict__.get("_driver_call_site")) or where.user_call_site()
        if not in_trial:  # before anything starts: Ray's processes would import another compat
            _shadowing.check()
        ensure_ray()
        usage.take()
        start_time = time.time()
        job = self._start_services(engine, start_time, in_trial)
        trial_dir: RunStorage | None = self.__dict__.get("_tune_trial_dir") if in_trial else None
        return FitStart(self, engine, in_trial, job, call_site, start_time, usage.take(), trial_dir)

    def _build(self, start: FitStart, raw: Any, error: BaseException | None) -> FitEnd:
        """The result, from the engine's parts and everything the run ledger recorded (with the
        earlier fits' validations of a restored run), and what ``fit()`` raises."""
        engine, job = start.engine, start.job
        snapshot = _close_ledger(job.ledger)
        experiment = job.prepared.experiment
        earlier = bookkeeping.earlier_journals(self._restoring)
        killed = bookkeeping.validations_left_in_journals(earlier)
        if raw is not None:  # the kept checkpoints may be earlier fits': with their validations
            snapshot.earlier_validations = bookkeeping.earlier_validations(
                bookkeeping.run_storage(experiment, raw, raw.path), killed, trusted=self._restoring is not None
            )
        parts = engine.result_parts(job, raw, snapshot, error)
        outcome = result.build(engine.mode, parts, snapshot, raw, error, config=self._result_config())
        log = UsageLog()
        log.merge(start.driver_usages + usage.take() + snapshot.usages)
        outcome.v1_usage = log.as_list()
        failure = failures.of_fit(
            outcome, snapshot, error, self.train_loop_per_worker, keeps_every_report=engine.mode.keeps_every_report
        )
        run_storage = bookkeeping.run_storage(experiment, raw, outcome.path)
        return FitEnd(start, outcome, snapshot, error, failure, log, run_storage, earlier, killed)

    def _result_config(self) -> dict[str, Any]:
        """``Result.config`` as V1 gives it: the trainer's ``train_loop_config`` when given (to
        the trainer, or by a Tune trial's ``param_space`` sample)."""
        import copy

        given = "train_loop_config" in self._init_arguments or self.train_loop_config is not None
        return {"train_loop_config": copy.deepcopy(self.train_loop_config)} if given else {}

    def _start_services(self, engine: Engine, start_time: float, in_trial: bool) -> TrainJob:
        """Before the engine runs: record the V1-only options, prepare the engine's storage,
        start the run ledger and tell the workers what the driver decided."""

        mode = engine.mode
        scaling, run = self.scaling_config, self.run_config
        record_v1_only_options(scaling, run, mode, consumed=self._consumed_options)
        user_callbacks = [c for c in run.callbacks if is_user_callback(c)]
        other_callbacks = [c for c in run.callbacks if not is_user_callback(c)]
        for callback in other_callbacks:
            usage.relied_on("tune-callback", type(callback).__name__, mode=mode)
        if in_trial:  # raw V2's trainers are not Tune trainables: at the line that gave this one to Tune
            site = self.__dict__.get("_driver_call_site")
            usage.relied_on("tuner-with-trainer", type(self).__name__, mode=mode, site=site)
        if self.resume_from_checkpoint is not None or self.metadata is not None:
            usage.relied_on("resume-from-checkpoint", mode=mode)
        if self._restoring is not None:
            usage.relied_on("restore", f"restore({self._restoring.path!r})", mode=mode)
        trainer_name = self._framework.trainer_name
        prepared = engine.prepare(run, self._result_config(), start_time, trainer_name, self._restoring)
        # Where the first attempt starts: a restored run's latest checkpoint where the engine
        # cannot resume it itself, or a retried Tune trial's (as V1's trial checkpoint wins over
        # resume_from_checkpoint).
        first_checkpoint = prepared.start_checkpoint
        if first_checkpoint is None and in_trial:
            first_checkpoint = self.__dict__.get("_tune_checkpoint")
        if first_checkpoint is None:
            first_checkpoint = self.resume_from_checkpoint
        validation_env = mode.outside_training_env[switch.ENV_VAR]
        ledger = open_ledger(
            scaling.max_workers,
            # The ledger plays V2's controller for UserCallbacks (after_report, after_exception):
            # one process sees every round in order, whichever way each round travelled.
            callbacks=user_callbacks,
            run_context=RunContext(run, self.train_loop_config, scaling),
            validation_runner=(
                functools.partial(ray_validation_runner, switch_value=validation_env)
                if engine.ledger_runs_validation
                else None
            ),
            round_sink=engine.round_sink(prepared),
            rows=engine.round_rows(prepared, other_callbacks),
            retention=_retention(run, engine),
            first_checkpoint_index=prepared.first_checkpoint_index,
            vote_timeout_s=vote_timeout_s(),
            consumers=engine.ledger_consumers(prepared, in_trial, other_callbacks),
        )
        validation_config = trainer_config(self.validation_config, ledger)
        if engine.ledger_runs_validation:
            ledger.use_validation_config(validation_config)
        settings = worker.driver_settings(
            mode,
            engine.worker_side(prepared),
            ledger,
            has_validation_config=self.validation_config is not None,
            keep_v1_logs=run.keep_v1_logs,
            route_air_session=route_air_session,
            resume_from_checkpoint=first_checkpoint,
            in_tune_trial=in_trial,
        )
        return TrainJob(
            train_fn=worker.wrap(self.train_loop_per_worker, settings),
            train_loop_config=self.train_loop_config,
            scaling=scaling,
            run=run,
            other_callbacks=other_callbacks,
            ledger=ledger,
            framework=self._framework,
            backend_config=self.backend_config,
            datasets=self.datasets,
            dataset_config=self.dataset_config,
            validation_config=validation_config,
            metadata=self.metadata,
            resume_from_checkpoint=first_checkpoint,
            prepared=prepared,
            consumed_options=self._consumed_options,
        )


def _run_engine(engine: Engine, job: TrainJob, in_trial: bool) -> tuple[Any, BaseException | None]:
    """Ray's result, or the error it raised (Ray's failure types differ by engine)."""
    env = {**engine.mode.engine_env, **engine.engine_env()}
    try:
        with scoped_env(env):
            return (engine.run_in_trial(job) if in_trial else engine.run(job)), None
    except Exception as exc:
        return None, exc
    except SystemExit as stop:  # Ray Tune's end of a trial, raised at a report in the trial's thread
        if not in_trial:
            raise
        return None, stop


def _close_ledger(ledger: LedgerClient) -> LedgerSnapshot:
    """Everything the run ledger recorded; the run leaves the ledger's host."""
    return ledger.close()


def _v1_restore_deprecation() -> None:
    """Under V1 semantics, Ray V1's own warning at ``restore`` (under V2 the run records the
    V1-only behaviour instead)."""
    if switch.mode().raises_ray_v1_warnings:
        where.call_for_user(adapters.v1_restore_deprecation)


def _retention(run: RunConfig, engine: Engine) -> Retention:
    """The checkpoints the engine's checkpoint manager keeps, which the ledger's answers to
    ``get_all_reported_checkpoints`` follow (docs §27, §28)."""
    c = run.checkpoint_config
    return Retention(
        c.num_to_keep, c.checkpoint_score_attribute, c.checkpoint_score_order, engine.unscored_checkpoints_newest
    )


def _given_arguments(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The constructor arguments given, by name (``**arguments`` flattened); ``{}`` when
    they do not bind (``__init__`` then raises its own error)."""
    signature = inspect.signature(cls.__init__)  # type: ignore[misc]  # the class's own constructor
    try:
        bound = signature.bind(None, *args, **kwargs)
    except TypeError:
        return {}
    given: dict[str, Any] = {}
    for name, value in list(bound.arguments.items())[1:]:
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            given.update(value)
        else:
            given[name] = value
    return given
