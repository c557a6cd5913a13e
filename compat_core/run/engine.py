"""The interface each engine implements (``v1/``, ``v2/``); the trainer talks only to this.

An engine is Ray's engine of one generation running a :class:`~compat_core.switch.Mode`: its
driver half (:class:`Engine`, one per ``fit()``) and its worker half (:class:`WorkerSide`, one
per training worker, chosen on the driver and shipped with the training function).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from compat_core.integration.frameworks import TORCH

if TYPE_CHECKING:  # the interface names these types; it runs none of their modules' code
    from compat_core.config import RunConfig, ScalingConfig
    from compat_core.files.storage import RunStorage
    from compat_core.integration.frameworks import Framework
    from compat_core.run.ledger import LedgerClient
    from compat_core.semantics.records import LedgerSnapshot
    from compat_core.semantics.restore import RestoreSpec
    from compat_core.semantics.result import ResultParts
    from compat_core.switch import Mode


@dataclass(frozen=True)
class PreparedRun:
    """What an engine's ``prepare()`` decided before the run starts; engines subclass it with
    what they decided for themselves (the run's name and storage, V1's rows). Frozen: nothing
    is filled in later."""

    # The experiment directory (``<storage_path>/<name>``) where the trainer stores what
    # ``restore()`` needs; None where the engine has none (a Tune trial's run).
    experiment: RunStorage | None = None
    # V1 semantics on V2's engine: the trial directory a restored run continues.
    trial: dict[str, str] = field(default_factory=dict)
    # V1's number of the run's first checkpoint where compat names them (a restored trial's).
    first_checkpoint_index: int = 0
    # A restored run the engine cannot resume itself (the other engine wrote it): the
    # checkpoint its first attempt starts from.
    start_checkpoint: Any = None


@dataclass(frozen=True)
class TrainJob:
    """What an engine reads to run one ``fit()`` (the trainer's decisions, made before it runs:
    the wrapped training function, the run's configs, the ledger, the framework)."""

    train_fn: Callable[..., Any]
    train_loop_config: dict[str, Any] | None
    scaling: ScalingConfig
    run: RunConfig
    other_callbacks: list[Any]  # Ray Tune callbacks (the UserCallbacks run in the ledger)
    ledger: LedgerClient
    framework: Framework = TORCH
    backend_config: Any = None
    datasets: dict[str, Any] | None = None
    dataset_config: Any = None
    validation_config: Any = None
    metadata: dict[str, Any] | None = None
    resume_from_checkpoint: Any = None
    prepared: PreparedRun = field(default_factory=PreparedRun)  # what the engine's prepare() returned
    # The V1-only options the trainer honours itself (the tree trainers' V1 form: the checkpoint
    # frequency, in its report callback): ``config.record_v1_only_options``' kinds.
    consumed_options: frozenset[str] = frozenset()


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
    """What an engine does inside each training worker. Chosen on the driver, once per run."""

    # True when compat's ledger runs asynchronous validations (the engine has none).
    validates_in_ledger: bool
    # The engine has V1's torch mixed-precision helpers (accelerate, prepare_optimizer, backward).
    amp_helpers: bool

    def start(self, session: Any) -> None:
        """The worker's session is set up (rank, attempt, ledger): called before the
        training function runs."""
        ...

    def rank_and_size(self) -> tuple[int, int]: ...

    def worker_group(self) -> str | None:
        """An id of this worker's group, the same for its every rank and new each time the
        engine starts one (V2's engine may start one of another size: an elastic run); None
        where every attempt restarts every rank (V1's engine)."""
        ...

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
        upload_fn: Any = None,
        delete_local: bool | None = None,
    ) -> None:
        """Report through the engine (the installed hook records it). ``upload_fn`` and
        ``delete_local``: V2's ``checkpoint_upload_fn`` and ``delete_local_checkpoint_after_upload``."""
        ...

    def context(self) -> Any: ...

    def finish(self) -> None:
        """The training function returned or raised (called before the worker reports done)."""
        ...

    def reported_checkpoints(self, session: Any, validated: bool, timeout_s: float | None) -> list[Any]:
        """``get_all_reported_checkpoints``: ``(checkpoint, metrics, status value)`` triples."""
        ...

    def preemption_info(self) -> Any:
        """``get_preemption_info``: V2's notice of an imminent node preemption, or None."""
        ...

    def get_checkpoint(self) -> Any: ...

    def get_dataset_shard(self, dataset_name: str | None) -> Any: ...


class Engine(Protocol):
    """The driver half of an engine; one instance per ``fit()``."""

    # The mode it runs: its semantics, and the engine's generation.
    mode: Mode
    # The ledger runs asynchronous validations (V1 has none; V2's controller runs its own).
    ledger_runs_validation: bool
    # Ray's checkpoint manager ranks a checkpoint without the score attribute as the newest
    # (V1's from Ray 2.49), not by a score of -inf; the ledger's retention follows it.
    unscored_checkpoints_newest: bool

    def worker_side(self, prepared: PreparedRun) -> WorkerSide:
        """The worker half of the run ``prepared``, shipped to every training worker."""
        ...

    def prepare(
        self,
        run: RunConfig,
        v1_config: dict[str, Any],
        start_time: float,
        trainer_name: str,
        restoring: RestoreSpec | None = None,
    ) -> PreparedRun:
        """Before the run: resolve its storage, notice a re-run, set logs aside; what it decided.
        ``v1_config``: the trial config V1 gives the run (``{"train_loop_config": ...}`` when the
        trainer was given one, else ``{}``: ``Result.config``, ``params.json``); ``trainer_name``
        is the V1 trainer class's name (V1 names experiments after it); ``restoring``: the run
        continues the experiment ``Trainer.restore()`` was given. The trainer hands the result
        back in ``TrainJob.prepared``."""
        ...

    def round_sink(self, prepared: PreparedRun) -> Callable[[Any], None] | None:
        """Called by the ledger with each complete round (``DeliveredRound``), in order (e.g.
        live logs)."""
        ...

    def round_rows(self, prepared: PreparedRun, other_callbacks: list[Any]) -> Any:
        """The maker of V1's row of each round (``v1_logs.V1Rows``) when the round sink or a
        consumer on the driver needs them: the ledger makes each round's row with it, once, for
        all of them. None: no rows."""
        ...

    def ledger_consumers(self, prepared: PreparedRun, in_trial: bool, other_callbacks: list[Any]) -> tuple[str, ...]:
        """Who on the driver reads the ledger's delivered rounds during the run
        (``RunLedger.delivered_since``): the ledger keeps a round until each has read it."""
        ...

    def engine_env(self) -> dict[str, str]:
        """Variables the engine needs set during ``fit()`` (unless the user set them)."""
        ...

    def in_trial(self, run: RunConfig, trial_dir: str) -> RunConfig:
        """The run's configuration inside a Ray Tune trial whose directory is ``trial_dir``."""
        ...

    def run(self, job: TrainJob) -> Any:
        """Run the job on Ray's engine; return Ray's result or raise Ray's error."""
        ...

    def run_in_trial(self, job: TrainJob) -> Any:
        """Run the job inside a Ray Tune trial, every result reaching Tune (see compat_core.run.tune)."""
        ...

    def trial_resources(self, scaling: ScalingConfig) -> Any:
        """The ``PlacementGroupFactory`` a Tune trial running this job asks for."""
        ...

    def result_parts(
        self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: BaseException | None
    ) -> ResultParts:
        """What a user observes of the run, from Ray's result (None after a failure) and the
        ledger, by the mode's semantics (:func:`compat_core.semantics.result.build` makes the Result)."""
        ...
