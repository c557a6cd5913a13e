"""Run configuration accepted under both backends.

Each class takes the union of the V1 and V2 arguments, so the same script constructs
under either setting. At ``fit()`` time it becomes Ray's class for the selected backend;
V1-only arguments are kept under v1 and, under v2, warned about (or rejected in strict
mode) and dropped, since V2 raises on them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from compat_core import switch, usage


@dataclass
class ScalingConfig:
    """How many workers and what each needs. ``trainer_resources`` is V1-only.

    Under v1, an unset ``trainer_resources`` becomes ``{"CPU": 0}`` (V2's controller
    reserves no CPU either), so ``num_workers=2`` runs on a 2-core machine.
    """

    num_workers: int = 1
    use_gpu: bool = False
    resources_per_worker: dict[str, float] | None = None
    placement_strategy: str = "PACK"
    accelerator_type: str | None = None
    trainer_resources: dict[str, float] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.num_workers, int) or self.num_workers < 1:
            raise ValueError(f"ScalingConfig(num_workers={self.num_workers!r}): num_workers must be an int >= 1.")


@dataclass
class CheckpointConfig:
    """Which checkpoints to keep. ``checkpoint_frequency``/``checkpoint_at_end`` are V1-only."""

    num_to_keep: int | None = None
    checkpoint_score_attribute: str | None = None
    checkpoint_score_order: Literal["max", "min"] = "max"
    checkpoint_frequency: int | None = None
    checkpoint_at_end: bool | None = None

    def __post_init__(self) -> None:
        if self.checkpoint_score_order not in ("max", "min"):
            raise ValueError(
                f"CheckpointConfig(checkpoint_score_order={self.checkpoint_score_order!r}): use 'max' or 'min'."
            )
        if self.num_to_keep is not None and self.num_to_keep < 1:
            raise ValueError(f"CheckpointConfig(num_to_keep={self.num_to_keep!r}): use None (keep all) or >= 1.")


@dataclass
class FailureConfig:
    """How many worker-group failures to retry. ``fail_fast`` is V1-only."""

    max_failures: int = 0
    fail_fast: bool | None = None


@dataclass
class RunConfig:
    """Where and how a run is stored, and its callbacks.

    ``callbacks`` takes :class:`compat.UserCallback` instances (both backends); Ray Tune
    callbacks are V1-only. ``keep_v1_logs=True`` is compat's migration opt-in: under v2
    it also writes V1's ``progress.csv``/``result.json`` and gives a V1-style
    ``metrics_dataframe`` with free-floating reports. Under v1 it changes nothing.

    As Ray's, an unset ``failure_config``/``checkpoint_config`` is the default one (not
    ``None``), so Ray Tune takes this class where V1 code passes it (``tune.Tuner(...,
    run_config=train.RunConfig(...))``) and code reading ``run_config.checkpoint_config``
    finds one.
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
    log_to_file: Any = None

    def __post_init__(self) -> None:
        self.failure_config = self.failure_config or FailureConfig()
        self.checkpoint_config = self.checkpoint_config or CheckpointConfig()
        if self.callbacks is None:
            self.callbacks = []
        if not isinstance(self.callbacks, (list, tuple)):
            raise TypeError(f"RunConfig(callbacks=...) takes a list of callbacks, got {type(self.callbacks).__name__}.")
        self.callbacks = list(self.callbacks)


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
            if kwargs.get("failure_config") is not None:
                kwargs["failure_config"] = coerce(FailureConfig, kwargs["failure_config"], "failure_config")
            if kwargs.get("checkpoint_config") is not None:
                kwargs["checkpoint_config"] = coerce(CheckpointConfig, kwargs["checkpoint_config"], "checkpoint_config")
        return cls(**kwargs)
    raise TypeError(
        f"{arg}= takes a compat.{cls.__name__} (or ray.train.{cls.__name__}), got "
        f"{type(value).__module__}.{type(value).__name__}."
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
    if run.sync_config is not None:
        found.append(("sync-config", ""))
    for name in ("stop", "verbose", "progress_reporter"):
        if getattr(run, name) is not None:
            found.append(("tune-run-option", f"RunConfig({name}=...)"))
    if run.log_to_file not in (None, False):
        found.append(("tune-run-option", "RunConfig(log_to_file=...)"))
    if run.failure_config.fail_fast is not None:
        found.append(("fail-fast", ""))
    checkpoint = run.checkpoint_config
    if "checkpoint-frequency" not in consumed and (
        checkpoint.checkpoint_frequency or checkpoint.checkpoint_at_end is not None
    ):
        found.append(("checkpoint-frequency", ""))
    for kind, detail in found:
        usage.relied_on(kind, detail, mode=mode)
        if mode.emulates_v1_engine:
            usage.dropped_by_v2_engine(kind, detail)
