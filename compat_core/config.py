"""Run configuration accepted under both backends.

Each class is a subclass of Ray's class of its name (V2's, and V1's too where V2's is not
already one: ``standins.ray_config_bases``), so ``isinstance(config, ray.train.RunConfig)``
holds whichever setting ``ray.train`` was imported under and Ray's own trainers and Tuner take
compat's configs. Each takes the union of the V1 and V2 arguments, so the same script
constructs under either setting, and fills in what Ray's does when made (a ``storage_path``,
the default ``FailureConfig``, ...). At ``fit()`` time compat gives Ray's engine Ray's class
for the selected backend; V1-only arguments are kept under v1 and, under v2, warned about (or
rejected in strict mode) and dropped, since V2 raises on them.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ray.train import SyncConfig

from compat_core import messages, switch
from compat_core.migration import usage
from compat_core.releases import standins

# V2's ScalingConfig fields only V2's engine has a use for, with their "not set" value (Ray's default).
V2_ENGINE_SCALING: dict[str, Any] = {
    "label_selector": None,
    "use_tpu": False,
    "topology": None,
    "elastic_resize_monitor_interval_s": 60.0,
}
# V2's FailureConfig fields only V2's engine has a use for (controller retries, preemption).
V2_ENGINE_FAILURE: dict[str, Any] = {
    "controller_failure_limit": -1,
    "max_preemption_failures": -1,
    "relax_collectives_on_preemption": False,
    "preemption_grace_s": 0.0,
}


def _set_options(config: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """The options of ``defaults`` (name -> "not set" value) that ``config`` sets, with their values."""
    return {name: getattr(config, name) for name, unset in defaults.items() if getattr(config, name) != unset}


def _v2_engine_options(config: Any, defaults: dict[str, Any], cls: str) -> list[str]:
    return [f"{cls}({name}=...)" for name in _set_options(config, defaults)]


def _check_engine(features: list[str]) -> None:
    """A V2 engine feature set where V1's engine runs V1 semantics fails when the config is
    made (docs/compatibility.md §31); under v2, or V1 semantics on V2's engine, it works."""
    if not features:
        return
    mode = switch.mode()
    if mode.semantics is switch.V1 and mode.engine is switch.V1:
        from compat_core import messages
        from compat_core.errors import CompatError

        raise CompatError(messages.needs_v2_engine(", ".join(features), "it"))


def _strict_v2(which: int, fields: dict[str, tuple[Any, str, str]]) -> None:
    """``COMPAT_STRICT=1`` under v2: a V1-only field set when the config is made raises there,
    as raw V2's class raises (a ``DeprecationWarning``: compat's ``V1OnlyWarning``, Ray's message
    as its first line when this Ray's class raises one, then compat's advice).

    ``which``: the index of the V2 class in ``standins.v2_config_classes()``; ``fields``:
    name -> (value, V1-only kind, detail), for the fields set."""
    if not fields or not usage.strict_enabled() or not switch.mode().warns_v1_only:
        return
    name, (value, kind, detail) = next(iter(fields.items()))
    try:
        standins.v2_config_classes()[which](**{name: value})
        theirs = ""
    except DeprecationWarning as error:
        theirs = f"{str(error).splitlines()[0]}\n"
    except Exception:  # this Ray's V2 class has no such field, or fails otherwise: compat's words only
        theirs = ""
    from compat_core.migration import v1_only

    raise usage.V1OnlyWarning(messages.in_strict_mode(theirs + v1_only.message(kind, detail), usage.STRICT_ENV_VAR))


@dataclass
class ScalingConfig(*standins.ray_config_bases("ScalingConfig")):  # type: ignore[misc]
    """How many workers and what each needs. ``trainer_resources`` is V1-only.

    Under v1, an unset ``trainer_resources`` becomes ``{"CPU": 0}`` (V2's controller
    reserves no CPU either), so ``num_workers=2`` runs on a 2-core machine.

    V2's own (Ray 2.60): ``num_workers=(min, max)`` (elastic training),
    ``elastic_resize_monitor_interval_s``, ``label_selector``, ``use_tpu``, ``topology``:
    passed to V2's engine (under v2, and V1 semantics on V2's engine); with V1 semantics on
    V1's engine, a ``CompatError`` when the config is made (V1's engine has none of them).
    The computed attributes (``total_resources``, ``num_cpus_per_worker``, ...) are those of
    Ray's ``ScalingConfig`` compat gives the engine of the mode selected now.
    """

    num_workers: int | tuple[int, int] = 1
    use_gpu: bool = False
    resources_per_worker: dict[str, float] | None = None
    placement_strategy: str = "PACK"
    accelerator_type: str | None = None
    trainer_resources: dict[str, float] | None = None
    label_selector: dict[str, str] | list[dict[str, str]] | None = None
    use_tpu: bool = False
    topology: str | None = None
    elastic_resize_monitor_interval_s: float = 60.0

    def __post_init__(self) -> None:
        workers = self.num_workers
        fixed = isinstance(workers, int) and not isinstance(workers, bool)
        elastic = (
            isinstance(workers, tuple)
            and len(workers) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in workers)
        )
        if not (fixed or elastic):
            raise ValueError(messages.SCALING_WORKERS_FORM)
        if isinstance(workers, tuple) and workers[0] > workers[1]:
            raise ValueError(messages.scaling_min_over_max(workers, workers[0], workers[1]))
        if self.min_workers < (1 if isinstance(workers, tuple) else 0):
            raise ValueError(messages.scaling_workers_range(workers))
        if self.elastic_resize_monitor_interval_s < 0:
            raise ValueError(messages.SCALING_NEGATIVE_MONITOR_INTERVAL)
        if isinstance(self.label_selector, list) and len(self.label_selector) != self.max_workers:
            raise ValueError(messages.RAY_LABEL_SELECTOR_LENGTH)
        if self.trainer_resources is not None:
            _strict_v2(3, {"trainer_resources": (self.trainer_resources, "trainer-resources", "")})
        features = _v2_engine_options(self, V2_ENGINE_SCALING, "ScalingConfig")
        _check_engine(["ScalingConfig(num_workers=(min, max))"] * self.elasticity_enabled + features)

    @property
    def elasticity_enabled(self) -> bool:
        return isinstance(self.num_workers, tuple)

    @property
    def min_workers(self) -> int:
        return self.num_workers[0] if isinstance(self.num_workers, tuple) else self.num_workers

    @property
    def max_workers(self) -> int:
        return self.num_workers[1] if isinstance(self.num_workers, tuple) else self.num_workers

    def ray(self) -> Any:
        """Ray's ``ScalingConfig`` for the engine of the mode selected now, as ``fit()`` gives it."""
        return ray_scaling_config(self, v2_engine=switch.mode().engine is switch.V2)

    @property
    def total_resources(self) -> dict[str, float]:
        return dict(self.ray().total_resources)

    @property
    def num_cpus_per_worker(self) -> float:
        return self.ray().num_cpus_per_worker

    @property
    def num_gpus_per_worker(self) -> float:
        return self.ray().num_gpus_per_worker

    @property
    def num_tpus_per_worker(self) -> float:
        return self.resources_per_worker.get("TPU", 0) if self.resources_per_worker else int(self.use_tpu)

    @property
    def additional_resources_per_worker(self) -> dict[str, float]:
        return dict(self.ray().additional_resources_per_worker)

    def as_placement_group_factory(self) -> Any:
        """Ray Tune's ``PlacementGroupFactory`` for these resources (Ray's, of the engine selected now)."""
        return self.ray().as_placement_group_factory()

    @classmethod
    def from_placement_group_factory(cls, pgf: Any) -> ScalingConfig:
        """The config whose resources are ``pgf``'s (Ray Tune's ``PlacementGroupFactory``), as V1's."""
        from ray.air.config import ScalingConfig as V1ScalingConfig

        return coerce(cls, V1ScalingConfig.from_placement_group_factory(pgf), "pgf")


@dataclass
class CheckpointConfig(*standins.ray_config_bases("CheckpointConfig")):  # type: ignore[misc]
    """Which checkpoints to keep. ``checkpoint_frequency``/``checkpoint_at_end`` are V1-only."""

    num_to_keep: int | None = None
    checkpoint_score_attribute: str | None = None
    checkpoint_score_order: Literal["max", "min"] = "max"
    checkpoint_frequency: int | None = None
    checkpoint_at_end: bool | None = None
    # V1's experimental options, deprecated in Ray: setting one raises as Ray's does.
    _checkpoint_keep_all_ranks: bool | None = None
    _checkpoint_upload_from_workers: bool | None = None

    def __post_init__(self) -> None:
        if self._checkpoint_keep_all_ranks is not None:
            raise DeprecationWarning(messages.RAY_CHECKPOINT_KEEP_ALL_RANKS)
        if self._checkpoint_upload_from_workers is not None:
            raise DeprecationWarning(messages.RAY_CHECKPOINT_UPLOAD_FROM_WORKERS)
        if self.checkpoint_score_order not in ("max", "min"):
            raise ValueError(messages.checkpoint_score_order(self.checkpoint_score_order))
        if self.num_to_keep is not None and self.num_to_keep < 1:
            raise ValueError(messages.checkpoint_num_to_keep(self.num_to_keep))
        given = {"checkpoint_frequency": self.checkpoint_frequency} if self.checkpoint_frequency else {}
        if self.checkpoint_at_end is not None:
            given["checkpoint_at_end"] = self.checkpoint_at_end
        _strict_v2(0, {n: (v, "checkpoint-frequency", "") for n, v in given.items()})


@dataclass
class FailureConfig(*standins.ray_config_bases("FailureConfig")):  # type: ignore[misc]
    """How many worker-group failures to retry. ``fail_fast`` is V1-only.

    V2's controller and preemption options (Ray 2.58+: ``controller_failure_limit``,
    ``max_preemption_failures``, ``relax_collectives_on_preemption``, ``preemption_grace_s``)
    are passed to V2's engine; with V1 semantics on V1's engine, a ``CompatError`` when the
    config is made (V1's engine has no controller to retry and no preemption notice)."""

    max_failures: int = 0
    fail_fast: bool | None = None
    controller_failure_limit: int = -1
    max_preemption_failures: int = -1
    relax_collectives_on_preemption: bool = False
    preemption_grace_s: float = 0.0

    def __post_init__(self) -> None:
        if self.fail_fast is not None:
            _strict_v2(1, {"fail_fast": (self.fail_fast, "fail-fast", "")})
        _check_engine(_v2_engine_options(self, V2_ENGINE_FAILURE, "FailureConfig"))


@dataclass
class RunConfig(*standins.ray_config_bases("RunConfig")):  # type: ignore[misc]
    """Where and how a run is stored, and its callbacks.

    ``callbacks`` takes :class:`compat.UserCallback` instances (both backends); Ray Tune
    callbacks are V1-only. ``keep_v1_logs=True`` is compat's migration opt-in: under v2
    it also writes V1's ``progress.csv``/``result.json`` and gives a V1-style
    ``metrics_dataframe`` with free-floating reports. Under v1 it changes nothing.

    As Ray's, what is unset when made is filled in as Ray's class fills it: ``storage_path``
    (``~/ray_results``; under ``RAY_TRAIN_V2_ENABLED=0`` ``RAY_STORAGE`` first, with Ray's
    deprecation warning, as V1's), the default ``failure_config``/``checkpoint_config``/
    ``sync_config``, V1's ``verbose`` and V2's ``logging_config`` and ``worker_runtime_env``:
    Ray's trainers, ``tune.Tuner`` and code reading ``run_config.checkpoint_config`` find
    what they find in Ray's. An unset ``name``: under ``RAY_TRAIN_V2_ENABLED=1``
    ``ray_train_run-<date>`` as V2's (a :class:`GeneratedName`, which V1 semantics do not take:
    they name the run after its trainer); under ``=0`` None, as V1's.
    """

    name: str | None = None
    storage_path: str | None = None
    storage_filesystem: Any = None
    failure_config: FailureConfig = None  # type: ignore[assignment]  # None: the default (__post_init__)
    checkpoint_config: CheckpointConfig = None  # type: ignore[assignment]  # None: the default (__post_init__)
    callbacks: list[Any] = field(default_factory=list)
    worker_runtime_env: dict[str, Any] | None = None
    keep_v1_logs: bool = False
    logging_config: Any = None
    sync_config: Any = None
    verbose: Any = None
    stop: Any = None
    progress_reporter: Any = None
    log_to_file: Any = False
    local_dir: str | None = None  # deprecated in Ray: setting it raises as Ray's V1 does

    def __post_init__(self) -> None:
        if self.local_dir is not None:
            raise DeprecationWarning(messages.RAY_LOCAL_DIR)
        given = self._v1_only_given()
        self._fill_in_as_ray()
        if self.callbacks is None:
            self.callbacks = []
        if not isinstance(self.callbacks, (list, tuple)):
            raise TypeError(
                messages.takes("RunConfig(callbacks=...)", "a list of callbacks", type(self.callbacks).__name__)
            )
        self.callbacks = list(self.callbacks)
        _strict_v2(2, given)

    def _v1_only_given(self) -> dict[str, tuple[Any, str, str]]:
        """The V1-only (Tune) options the program set: name -> (value, V1-only kind, detail).
        What this class filled in (a ``_FilledInSyncConfig``, the default ``verbose``) is not."""
        given: dict[str, tuple[Any, str, str]] = {}
        if self.sync_config is not None and not isinstance(self.sync_config, _FilledInSyncConfig):
            given["sync_config"] = (self.sync_config, "sync-config", "")
        # V1's RunConfig keeps the verbose given in ``_verbose`` and fills ``verbose`` in (a
        # dataclasses.replace() of a made config gives the filled-in one again: not given).
        verbose = self.__dict__.get("_verbose", self.verbose)
        for name, value in (
            ("verbose", None if verbose is _default_verbose() else verbose),
            ("stop", self.stop),
            ("progress_reporter", self.progress_reporter),
            ("log_to_file", self.log_to_file),
        ):
            if value is not None and value is not False:  # verbose=0 is given (0 == False)
                given[name] = (value, "tune-run-option", f"RunConfig({name}=...)")
        return given

    def _fill_in_as_ray(self) -> None:
        """What Ray's ``RunConfig`` fills in when made (V1's and V2's: one class stands for
        both), the V1-only options' values as given kept apart as V1 keeps them."""
        from pathlib import Path

        semantics = switch.mode().semantics
        if self.storage_path is None:
            v1 = semantics is switch.V1
            self.storage_path = os.environ.get("RAY_STORAGE") if v1 else None  # V1's RunConfig reads it
            if self.storage_path is not None:
                import warnings

                from ray.util.annotations import RayDeprecationWarning

                warnings.warn(
                    messages.RAY_STORAGE_VARIABLE,
                    RayDeprecationWarning,
                    stacklevel=4,
                )
            else:
                from compat_core.files.storage import default_storage_path

                self.storage_path = default_storage_path()
        if isinstance(self.storage_path, Path):
            self.storage_path = self.storage_path.as_posix()
        if not self.name and semantics is switch.V2:  # V2's RunConfig names the run when made
            self.name = generated_name()
        self.failure_config = self.failure_config or FailureConfig()
        self.checkpoint_config = self.checkpoint_config or CheckpointConfig()
        self.sync_config = self.sync_config or _FilledInSyncConfig()
        self._verbose = None if self.verbose is _default_verbose() else self.verbose
        if self.verbose is None:
            self.verbose = _default_verbose()
        if self.logging_config is None:  # a field of this class on every release (Ray's stand-in before 2.56)
            self.logging_config = standins.LoggingConfig()
        if self.worker_runtime_env is None:
            self.worker_runtime_env = {}


class _FilledInSyncConfig(SyncConfig):
    """The ``SyncConfig()`` a ``RunConfig`` made without one is given (equal to any default
    ``SyncConfig``, as Ray's filled-in one is), told apart from one the program passed, through
    ``dataclasses.replace`` too: under v2 a passed one is a V1-only option, even the default."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SyncConfig):
            return NotImplemented
        return dataclasses.astuple(self) == dataclasses.astuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return SyncConfig.__repr__(self).replace(type(self).__name__, "SyncConfig", 1)


class GeneratedName(str):
    """The name a ``RunConfig`` made under V2 without one is given, as V2's is
    (``ray_train_run-<date>``), told apart from one the program gave: V1 semantics name such a
    run after its trainer, and readiness and ``compare`` pair runs by the names programs gave."""

    __slots__ = ()


def generated_name() -> GeneratedName:
    """V2's name for an unnamed run, ``ray_train_run-<date>``, to the millisecond (Ray's is to
    the second: two unnamed configs made in one second would name one run)."""
    from datetime import datetime

    return GeneratedName(f"ray_train_run-{datetime.now().strftime('%Y-%m-%d_%H-%M-%S.%f')[:-3]}")


def given_name(run: Any) -> str | None:
    """The run's name as the program gave it: None when it gave none (a V2-generated name)."""
    name = getattr(run, "name", None)
    return None if name is None or isinstance(name, GeneratedName) else str(name)


def _default_verbose() -> Any:
    """The ``verbose`` Ray's V1 ``RunConfig`` fills in (the output engine's default level)."""
    from ray.tune.experimental.output import AirVerbosity, get_air_verbosity

    return get_air_verbosity(AirVerbosity.DEFAULT) or 3


_Config = TypeVar("_Config", ScalingConfig, CheckpointConfig, FailureConfig, RunConfig)

# V1 defaults that mean "not set"; V2 marks its deprecated fields with "DEPRECATED".
_V1_DEFAULTS: dict[str, Any] = {"checkpoint_frequency": 0, "fail_fast": False, "log_to_file": False}


def _is_unset(name: str, value: Any) -> bool:
    if isinstance(value, str) and value == "DEPRECATED":
        return True
    return name in _V1_DEFAULTS and value is not None and value == _V1_DEFAULTS[name]


def coerce(cls: type[_Config], value: Any, arg: str) -> _Config:
    """Accept compat's config or Ray's V1/V2 equivalent (same field names)."""
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if type(value).__name__ == cls.__name__ and dataclasses.is_dataclass(value):
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if hasattr(value, f.name):
                v = getattr(value, f.name)
                if not _is_unset(f.name, v):
                    kwargs[f.name] = v
        if cls is RunConfig:
            given_verbose = vars(value).get("_verbose")  # V1's: the verbose given, before Ray filled its default in
            if "_verbose" in vars(value) and not _is_unset("verbose", given_verbose):  # 2.44's V2 subclasses V1's
                kwargs["verbose"] = given_verbose
            if kwargs.get("failure_config") is not None:
                kwargs["failure_config"] = coerce(FailureConfig, kwargs["failure_config"], "failure_config")
            if kwargs.get("checkpoint_config") is not None:
                kwargs["checkpoint_config"] = coerce(CheckpointConfig, kwargs["checkpoint_config"], "checkpoint_config")
        return cls(**kwargs)
    raise TypeError(
        messages.takes(
            f"{arg}=",
            f"a compat.{cls.__name__} (or ray.train.{cls.__name__})",
            f"{type(value).__module__}.{type(value).__name__}",
        )
    )


def record_v1_only_options(
    scaling: ScalingConfig, run: RunConfig, mode: switch.Mode, *, consumed: frozenset[str] = frozenset()
) -> None:
    """Record (and under v2 warn about) every V1-only option set in these configs, except
    those the trainer itself ``consumed`` (the tree trainers' V1 form reads the checkpoint
    frequency into its report callback under both engines). Under v1 on Ray's V2 engine,
    which has no place for them, each is also a warning that it has no effect."""
    found: list[tuple[str, str]] = []
    if scaling.trainer_resources is not None:
        found.append(("trainer-resources", ""))
    given = run._v1_only_given()
    found += [(kind, detail) for name, (_, kind, detail) in given.items() if name == "sync_config"]
    found += [(kind, detail) for name, (_, kind, detail) in given.items() if name != "sync_config"]
    if run.failure_config.fail_fast is not None:
        found.append(("fail-fast", ""))
    checkpoint = run.checkpoint_config
    if "checkpoint-frequency" not in consumed and (
        checkpoint.checkpoint_frequency or checkpoint.checkpoint_at_end is not None
    ):
        found.append(("checkpoint-frequency", ""))
    for kind, detail in found:
        usage.relied_on(kind, detail, mode=mode)
        # V1 on V2's engine honours SyncConfig itself (its logs' and artifacts' uploads), and
        # refuses a checkpoint frequency as V1's engine does (refused_checkpoint_options).
        if mode.emulates_v1_engine and kind not in ("sync-config", "checkpoint-frequency"):
            usage.dropped_by_v2_engine(kind, detail)


def refused_checkpoint_options(run: RunConfig, consumed: frozenset[str]) -> ValueError | None:
    """What V1's engine raises at ``fit()`` for ``CheckpointConfig(checkpoint_frequency=,
    checkpoint_at_end=)`` on a trainer that does not honour them (one with a training loop:
    Tune's check of ``_handles_checkpoint_freq``), so V1 semantics on V2's engine refuse the same
    run (docs/compatibility.md §28); None where nothing is refused."""
    if "checkpoint-frequency" in consumed:
        return None
    checkpoint = run.checkpoint_config
    if checkpoint.checkpoint_frequency:
        return ValueError(messages.ray_checkpoint_frequency_refused(checkpoint.checkpoint_frequency))
    if checkpoint.checkpoint_at_end is not None:
        return ValueError(messages.ray_checkpoint_at_end_refused(checkpoint.checkpoint_at_end))
    return None


def refused_local_directory_variable() -> DeprecationWarning | None:
    """What V1's engine raises at ``fit()`` while ``TUNE_RESULT_DIR`` or
    ``RAY_AIR_LOCAL_CACHE_DIR`` is set (Tune's check in ``tune.run``, which every V1 trainer's
    fit goes through), so V1 semantics on V2's engine refuse the same run (docs/compatibility.md
    §28); None where nothing is refused."""
    for name in messages.RAY_LOCAL_DIRECTORY_VARIABLES:
        if os.environ.get(name):  # Tune's variables, read as Tune reads them
            return DeprecationWarning(messages.ray_local_directory_variable(name))
    return None


def require_parameter(function: Any, feature: str, name: str) -> None:
    """Raise :class:`CompatError` saying to upgrade Ray when the installed Ray's ``function``
    (a callable or class) has no parameter ``name`` (Ray added it in a later release)."""
    import inspect

    if name not in inspect.signature(function).parameters:
        from compat_core import messages
        from compat_core.errors import CompatError

        raise CompatError(messages.not_in_this_ray(feature))


def ray_scaling_config(scaling: Any, *, v2_engine: bool) -> Any:
    """Ray's ``ScalingConfig`` for compat's ``scaling`` on V1's or V2's engine. V2's own
    options go to V2's engine when set (``CompatError`` if this Ray lacks one)."""
    common = {
        "num_workers": scaling.num_workers,
        "use_gpu": scaling.use_gpu,
        "resources_per_worker": scaling.resources_per_worker,
        "placement_strategy": scaling.placement_strategy,
        "accelerator_type": scaling.accelerator_type,
    }
    if not v2_engine:
        if scaling.trainer_resources is None:
            return standins.NoTrainerCPU(**common)
        from ray.air.config import ScalingConfig as V1ScalingConfig

        return V1ScalingConfig(**common, trainer_resources=scaling.trainer_resources)
    V2ScalingConfig = standins.v2_config_classes()[3]
    given = _set_options(scaling, V2_ENGINE_SCALING)
    if scaling.elasticity_enabled:
        require_parameter(V2ScalingConfig, "ScalingConfig(num_workers=(min, max))", "elastic_resize_monitor_interval_s")
    for name in given:
        require_parameter(V2ScalingConfig, f"ScalingConfig({name}=...)", name)
    return V2ScalingConfig(**common, **given)


def ray_v2_failure_config(failure: Any) -> Any:
    """V2's ``FailureConfig`` for compat's ``failure`` (its V2 engine options when set)."""
    V2FailureConfig = standins.v2_config_classes()[1]
    given = _set_options(failure, V2_ENGINE_FAILURE)
    for name in given:
        require_parameter(V2FailureConfig, f"FailureConfig({name}=...)", name)
    return V2FailureConfig(max_failures=failure.max_failures, **given)
