"""The interface both backends implement; the trainer talks only to this."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from compat_core import storage, usage
from compat_core.config import RunConfig, ScalingConfig
from compat_core.frameworks import TORCH, Framework
from compat_core.ledger import LedgerSnapshot
from compat_core.model import Semantics
from compat_core.result import Result
from compat_core.switch import Engine


@dataclass
class TrainJob:
    """Everything a backend needs to run one ``fit()``."""

    train_fn: Callable[..., Any]
    train_loop_config: dict[str, Any] | None
    scaling: ScalingConfig
    run: RunConfig
    user_callbacks: list[Any]
    other_callbacks: list[Any]
    ledger: Any
    framework: Framework = TORCH
    backend_config: Any = None
    datasets: dict[str, Any] | None = None
    dataset_config: Any = None
    validation_config: Any = None
    metadata: dict[str, Any] | None = None
    resume_from_checkpoint: Any = None
    start_time: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EngineReport:
    """One report as the engine delivered it, whoever called ``report``.

    ``checkpoint`` is the persisted checkpoint (in the run's storage), ``checkpoint_dir_name``
    the directory it went to (on V2, the name this rank proposed; rank 0's wins);
    ``validation`` is what V2's ``report(validation=...)`` got (False under V1).
    """

    metrics: dict[str, Any]
    has_checkpoint: bool
    checkpoint: Any = None
    checkpoint_dir_name: str | None = None
    validation: Any = False


ReportSink = Callable[[EngineReport], None]


class WorkerSide(Protocol):
    """What a backend does inside each training worker. One is chosen per worker, once."""

    name: str
    # True when compat's ledger runs asynchronous validations (the engine has none).
    validates_in_ledger: bool

    def rank_and_size(self) -> tuple[int, int]: ...

    def torch_utils(self) -> Any:
        """The engine's ``train_loop_utils`` module (prepare_model, prepare_data_loader, ...)."""
        ...

    def install(self, sink: ReportSink) -> Callable[[], None]:
        """Route every report of this worker, whatever door it comes through, to ``sink``
        (and ``ray.train``'s functions to this engine); returns the undo function."""
        ...

    def report(
        self,
        metrics: dict[str, Any],
        checkpoint: Any,
        *,
        checkpoint_dir_name: str | None,
        upload_mode: Any,
        validation: Any,
    ) -> None:
        """Report through the engine (the installed hook records it)."""
        ...

    def context(self) -> Any: ...

    def reported_checkpoints(self, session: Any, validated: bool, timeout_s: float | None) -> list[Any]:
        """``get_all_reported_checkpoints``: ``(checkpoint, metrics, status value)`` triples."""
        ...

    def preemption_info(self) -> Any:
        """``get_preemption_info``: V2's notice of an imminent node preemption, or None."""
        ...

    def get_checkpoint(self) -> Any: ...

    def get_dataset_shard(self, dataset_name: str | None) -> Any: ...


class Backend(Protocol):
    """The driver half of a backend; one instance per ``fit()``."""

    @property
    def name(self) -> str: ...

    @property
    def semantics(self) -> Semantics: ...

    # The Ray engine that runs it: "v1" or "v2" (the v1 backend can run on V2's engine).
    @property
    def engine(self) -> Engine: ...

    # The ledger plays V2's controller for UserCallbacks (after_report, after_exception):
    # one process sees every round in order, whichever way each round travelled.
    ledger_runs_callbacks: bool
    # The ledger runs asynchronous validations (V1 has none; V2's controller runs its own).
    ledger_runs_validation: bool
    # V1-only usage seen in workers is repeated as a warning on the driver.
    warns_v1_only: bool

    def prepare(
        self, run: RunConfig, train_loop_config: dict[str, Any] | None, start_time: float, trainer_name: str
    ) -> None:
        """Before the run: resolve its storage, notice a re-run, set logs aside.
        ``trainer_name`` is the V1 trainer class's name (V1 names trials after it)."""
        ...

    def round_sink(self) -> Callable[[dict[int, Any]], None] | None:
        """Called by the ledger with each complete round, in order (e.g. live logs)."""
        ...

    def engine_env(self) -> dict[str, str]:
        """Variables the engine needs set during ``fit()`` (unless the user set them)."""
        ...

    def run(self, job: TrainJob) -> Any:
        """Run the job on Ray's engine; return Ray's result or raise Ray's error."""
        ...

    def run_in_trial(self, job: TrainJob) -> Any:
        """Run the job inside a Ray Tune trial, every result reaching Tune (see compat_core.tune)."""
        ...

    def trial_resources(self, scaling: ScalingConfig) -> Any:
        """The ``PlacementGroupFactory`` a Tune trial running this job asks for."""
        ...

    def build_result(self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: BaseException | None) -> Result:
        """Combine Ray's result (None after a failure) with the ledger into a compat Result."""
        ...


def note_v1_rerun(run: RunConfig) -> None:
    """A named run whose directory already holds an earlier run: V1 (on either engine) starts
    a fresh trial beside it, V2 would resume it. Recorded as the V1-only behaviour
    ``rerun-same-name``."""
    if run.name:
        run_dir = storage.resolve(run.storage_path, run.storage_filesystem, run.name)
        if run_dir.has_entries():
            usage.relied_on("rerun-same-name", f"{run.name!r} in {run_dir}", backend="v1")
