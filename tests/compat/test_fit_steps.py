"""A fit's steps without Ray: the trainer's ``_fit`` on a fake engine (the training function run
in this process as the one worker) with the run ledger in this process (its plain code).

What the trainer adds around any engine, checked where it is cheap to: the services it starts
(the ledger, the restore state), the result it builds from the engine's parts and the ledger's
records, the files it leaves with the run, and how a failure maps to compat's errors. The
engines themselves run on real Ray in the rest of the suite."""

from __future__ import annotations

import json
import os
import types
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import ray

import compat as train
from compat.callbacks import UserCallback
from compat.errors import CallbackError
from compat.readiness import _record as readiness
from compat.torch import TorchTrainer
from compat_core import switch
from compat_core.config import RunConfig
from compat_core.files import storage
from compat_core.migration import usage
from compat_core.run import worker
from compat_core.run.engine import EngineReport, PreparedRun, TrainJob
from compat_core.run.ledger import LedgerClient, RunLedger
from compat_core.semantics import restore, worker_reports
from compat_core.semantics.observed import V1Semantics, V2Semantics
from compat_core.semantics.records import LedgerSnapshot
from compat_core.semantics.result import ResultParts

pytestmark = pytest.mark.one_pass  # no Ray, no mode: each test picks its mode


class LocalLedger(LedgerClient):
    """The run ledger in this process: each call runs :class:`RunLedger`'s method directly."""

    def __init__(self, world_size: int, **options: Any) -> None:
        super().__init__(actor=None, run_id="local", pid=os.getpid(), journal_path=None, world_size=world_size)
        self.run = RunLedger(world_size, **options)

    def _send(self, method: Any, *args: Any) -> Any:
        return getattr(self.run, method.__name__)(*args)

    def _ask(self, method: Any, *args: Any) -> Any:
        return self._send(method, *args)

    def vote_free_round(self, attempt: int, index: int, rank: int, free: bool) -> bool:
        return bool(self.run.vote_free_round(attempt, index, rank, free, free)) and free

    def close(self) -> LedgerSnapshot:
        return self.run.close()


class FakeWorkerSide:
    """The worker half: every report goes straight to compat's sink, as an engine's hook does."""

    validates_in_ledger = True
    amp_helpers = False

    def __init__(self) -> None:
        self.sink: Any = None

    def start(self, session: Any) -> None:
        pass

    def rank_and_size(self) -> tuple[int, int]:
        return 0, 1

    def worker_group(self) -> str | None:
        return None

    def install(self, sink: Any) -> Any:
        self.sink = sink
        return lambda: None

    def report(self, metrics: dict[str, Any], checkpoint: Any, **_: Any) -> None:
        name = f"checkpoint_{len(metrics)}" if checkpoint is not None else None
        self.sink(EngineReport(dict(metrics), checkpoint is not None, checkpoint, name))

    def context(self) -> Any:
        return types.SimpleNamespace(get_world_rank=lambda: 0, get_world_size=lambda: 1)

    def finish(self) -> None:
        pass

    def get_checkpoint(self) -> Any:
        return None


class FakeEngine:
    """Runs the job's training function in this process; fails after it when told to."""

    ledger_runs_validation = True
    unscored_checkpoints_newest = False

    def __init__(self, mode: switch.Mode, fail: BaseException | None = None) -> None:
        self.mode = mode
        self.fail = fail

    def worker_side(self, prepared: PreparedRun) -> FakeWorkerSide:
        return FakeWorkerSide()

    def prepare(self, run: RunConfig, v1_config: Any, start_time: float, trainer_name: str, restoring=None):
        return PreparedRun(experiment=storage.resolve(run.storage_path, run.storage_filesystem, run.name or "fake"))

    def round_sink(self, prepared: PreparedRun) -> None:
        return None

    def round_rows(self, prepared: PreparedRun, other_callbacks: list) -> None:
        return None

    def ledger_consumers(self, prepared: PreparedRun, in_trial: bool, other_callbacks: list) -> tuple[str, ...]:
        return ()

    def engine_env(self) -> dict[str, str]:
        return {}

    def run(self, job: TrainJob) -> Any:
        takes_config = isinstance(job.train_fn, worker._EntryWithConfig)
        job.train_fn(job.train_loop_config) if takes_config else job.train_fn()
        if self.fail is not None:
            raise self.fail
        experiment = job.prepared.experiment
        return types.SimpleNamespace(checkpoint=None, error=None, path=experiment.run_dir, best_checkpoints=[])

    def result_parts(self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: Any) -> ResultParts:
        semantics = V1Semantics() if self.mode.keeps_every_report else V2Semantics()
        outcome = semantics.outcome(snapshot.rounds())
        frame = pd.DataFrame(outcome.dataframe_rows) if outcome.dataframe_rows else None
        return ResultParts(outcome.result_metrics, job.prepared.experiment.run_dir, frame)


V1_MODE = switch.Mode(switch.V1, switch.V1)
V2_MODE = switch.Mode(switch.V2, switch.V2)


@pytest.fixture(autouse=True)
def without_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    from compat import _trainer

    monkeypatch.setattr(_trainer, "ensure_ray", lambda: None)
    # The worker asks Ray for its actor's id (Ray would start a cluster to answer): none here.
    monkeypatch.setattr(ray, "get_runtime_context", lambda: types.SimpleNamespace(get_actor_id=lambda: None))
    monkeypatch.setattr(_trainer, "open_ledger", LocalLedger)
    monkeypatch.setenv("COMPAT_RECORD_CHANNEL", "actor")  # records through the ledger client


def three_epochs(config: dict[str, Any]) -> int:
    for epoch in range(3):
        train.report({"loss": 1.0 / (epoch + 1), "epoch": epoch})
    return 7


def fit(engine: FakeEngine, tmp_path: Path, **run: Any) -> Any:
    trainer = TorchTrainer(
        three_epochs,
        train_loop_config={"lr": 0.1},
        run_config=train.RunConfig(name="job", storage_path=str(tmp_path), **run),
    )
    return trainer._fit(engine, in_trial=False)


def test_a_fits_worker_frame_is_read_from_the_run_when_first_read_and_travels_made(tmp_path) -> None:
    """``worker_metrics_dataframe`` holds no memory until read: the fit stores every report in
    the run's directory and the frame is read from there at its first read (then kept); a
    result pickled before that read carries the frame, not a file of this machine."""
    import pickle

    from compat_core.semantics.records import Record
    from compat_core.semantics.result import worker_dataframe

    result = fit(FakeEngine(V1_MODE), tmp_path)
    copied = pickle.loads(pickle.dumps(result))
    (stored,) = [p for p in (tmp_path / "job").iterdir() if p.suffix == ".arrow"]
    records = [Record(0, i, {"loss": 1.0 / (i + 1), "epoch": i}, False, False, 0.0) for i in range(3)]
    expected = worker_dataframe(records).drop(columns="timestamp")
    assert copied.worker_metrics_dataframe.drop(columns="timestamp").equals(expected)
    stored.rename(stored.with_suffix(".moved"))  # read when first read, so from where it is now
    with pytest.raises(FileNotFoundError, match=r"moved or removed. Read it with Result.from_path"):
        _ = result.worker_metrics_dataframe
    stored.with_suffix(".moved").rename(stored)
    assert result.worker_metrics_dataframe.drop(columns="timestamp").equals(expected)
    stored.unlink()
    assert result.worker_metrics_dataframe.drop(columns="timestamp").equals(expected)  # kept once read


def test_a_fit_builds_its_result_from_every_report_and_leaves_its_records_with_the_run(tmp_path) -> None:
    result = fit(FakeEngine(V1_MODE), tmp_path)
    assert result.backend == "v1" and result.error is None
    assert result.metrics["loss"] == pytest.approx(1 / 3)  # V1: the last report
    assert list(result.metrics_dataframe["epoch"]) == [0, 1, 2]
    assert list(result.worker_metrics_dataframe["epoch"]) == [0, 1, 2]
    assert result.return_value == 7 and result.config == {"train_loop_config": {"lr": 0.1}}
    job = tmp_path / "job"
    assert list(worker_reports.read(storage.at(str(job)))["epoch"]) == [0, 1, 2]  # what Result.from_path reads
    # The record, appended again when the test read V1's auto-filled keys (a V1-only read).
    record = json.loads((job / readiness.RECORD_FILE).read_text().splitlines()[-1])
    assert record["outcome"] == "succeeded" and record["trainer"] == "TorchTrainer" and record["engine"] == "v1"
    assert restore.load(str(job)).state.arguments["train_loop_config"] == {"lr": 0.1}  # restorable


def test_under_v2_the_same_reports_give_v2s_result_and_name_what_v1_kept(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(usage, "_warned", set())  # V1-only warnings are given once per process
    with pytest.warns(train.V1OnlyWarning, match="free-floating"):
        result = fit(FakeEngine(V2_MODE), tmp_path)
    assert result.backend == "v2" and result.metrics is None and result.metrics_dataframe is None
    assert list(result.worker_metrics_dataframe["epoch"]) == [0, 1, 2]  # compat keeps them in both modes
    # The frame read above is what the flip changed (V1's had the 3 rounds): recorded as under V1.
    assert [u.kind for u in result.v1_usage] == ["free-floating-report", "metrics-dataframe"]
    assert result.v1_usage[1].detail.startswith("3 rows under V1, 0 under V2")


def test_an_engine_failure_is_compats_error_with_every_report_recorded_before_it(tmp_path) -> None:
    with pytest.raises(train.TrainingFailedError, match="RuntimeError: the engine broke") as raised:
        fit(FakeEngine(V1_MODE, fail=RuntimeError("the engine broke")), tmp_path)
    result = raised.value.result
    assert list(result.worker_metrics_dataframe["epoch"]) == [0, 1, 2]
    assert isinstance(raised.value.__cause__, RuntimeError)
    [record] = [json.loads(line) for line in (tmp_path / "job" / readiness.RECORD_FILE).read_text().splitlines()]
    assert record["outcome"] == "failed" and "the engine broke" in record["error"]


def _dies_with_its_node() -> None:
    raise RuntimeError("ActorDiedError: The actor died unexpectedly before finishing this task.")


class PreemptingEngine(FakeEngine):
    """Its worker raises as its node goes; then Ray's V2 gives up on the run for the preemption."""

    def run(self, job: TrainJob) -> Any:
        try:
            super().run(job)
        finally:
            raise self.fail


def test_a_preempted_run_names_the_preemption_first_not_what_a_worker_raised_as_its_node_went(
    tmp_path, monkeypatch
) -> None:
    """As raw V2's error says: a worker whose node is drained may raise first (an actor on the
    node died under it); V2 gives up on the run for the preemption (CI's cluster test saw it)."""
    preemption = pytest.importorskip("ray.train.v2.api.exceptions").PreemptionError
    from ray.train.v2.api.preemption import PreemptionInfo

    ray_error = preemption(PreemptionInfo(deadline_ms=1, preempted_node_to_ranks={"n1": [0]}), drain_timed_out=True)
    trainer = TorchTrainer(_dies_with_its_node, run_config=train.RunConfig(name="job", storage_path=str(tmp_path)))
    with pytest.raises(train.PreemptionError) as raised:
        trainer._fit(PreemptingEngine(V2_MODE, fail=ray_error), in_trial=False)
    first = str(raised.value).splitlines()[0]
    assert first.startswith(f"Training failed: {ray_error}; worker 0: RuntimeError: ActorDiedError"), first
    assert raised.value.drain_timed_out and raised.value.preemption_info.preempted_node_to_ranks == {"n1": [0]}


class RefusingEngine(FakeEngine):
    """Refuses the run before any worker starts, as Ray's engines refuse an option a trainer
    does not take (raw V1: ``checkpoint_frequency`` on a function trainable's ``CheckpointConfig``)."""

    def run(self, job: TrainJob) -> Any:
        raise ValueError("You passed `checkpoint_frequency=2` to your CheckpointConfig, but this trainer does not")


@pytest.mark.parametrize("mode", [V1_MODE, V2_MODE], ids=["v1", "v2"])
def test_an_error_ray_refuses_the_run_with_before_any_worker_starts_is_raised_as_ray_raises_it(tmp_path, mode) -> None:
    with pytest.raises(ValueError, match="checkpoint_frequency") as raised:
        fit(RefusingEngine(mode), tmp_path)
    assert type(raised.value) is ValueError  # not a TrainingFailedError around it: raw Ray's fit() raises it so
    [record] = [json.loads(line) for line in (tmp_path / "job" / readiness.RECORD_FILE).read_text().splitlines()]
    assert record["outcome"] == "failed" and record["error"].startswith("ValueError: You passed")


class Raises(UserCallback):
    def __init__(self) -> None:
        self.seen: list[int] = []

    def after_report(self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: Any) -> None:
        self.seen.append(metrics[0]["epoch"])
        if metrics[0]["epoch"] == 1:
            raise ValueError("callback broke")


def test_a_raising_callback_lets_training_finish_then_is_a_callback_error(tmp_path) -> None:
    callback = Raises()
    with pytest.raises(CallbackError, match="callback broke") as raised:
        fit(FakeEngine(V1_MODE), tmp_path, callbacks=[callback])
    assert callback.seen == [0, 1, 2]  # after_report once per round, in order, past the failure
    assert list(raised.value.result.metrics_dataframe["epoch"]) == [0, 1, 2]


def test_a_stopped_trials_record_counts_each_use_once_whichever_source_names_it(tmp_path) -> None:
    """A trial Tune stopped: its record is made of the driver's behaviours, the ledger's answer
    (the workers') and what the trial's record already names (the driver's among them): a use
    named by two sources is one use, and the record loses nothing the ledger did not answer."""
    import pyarrow.fs as pafs

    from compat._bookkeeping import kept_for, stopped_usages
    from compat_core.migration.usage import Usage

    (tmp_path / "trial").mkdir()
    trial = storage.RunStorage(pafs.LocalFileSystem(), str(tmp_path / "trial"))
    trial.append_text(readiness.RECORD_FILE, _record_line(trial.run_dir, [Usage("tune-callback", 1, "job.py:3")]))
    trial.append_text(
        readiness.RECORD_FILE,
        _record_line(trial.run_dir, [Usage("tune-callback", 1, "job.py:3"), Usage("trial-api", 2, "job.py:9")]),
    )
    driver = [Usage("tune-callback", 1, "job.py:3")]
    kept = kept_for(trial)
    counts = lambda usages: {u.kind: u.count for u in usages}  # noqa: E731
    assert counts(stopped_usages(driver, [], kept)) == {"tune-callback": 1, "trial-api": 2}  # no answer
    workers = [Usage("trial-api", 3, "job.py:9")]  # the ledger had one more use by then
    assert counts(stopped_usages(driver, workers, kept)) == {"tune-callback": 1, "trial-api": 3}


def _record_line(path: str, usages: list) -> str:
    return readiness.RunRecord(
        job="sweep",
        run=os.path.basename(path),
        path=path,
        script="job.py",
        call_site="job.py:12",
        trainer="TorchTrainer",
        ray_version="2.60.0",
        compat_version="0",
        python_version="3.11",
        mode="v1",
        engine="v2",
        started_at=0.0,
        ended_at=1.0,
        outcome="unfinished",
        behaviours=readiness.behaviours(usages),
    ).line()


# The fit's side products are callbacks (compat/_fit_callbacks.py): each alone leaves its own.

RESTORE_STATE, WORKER_REPORTS, READINESS, CAPTURE = "restore state", "worker reports", "readiness", "capture"


def _left(tmp_path: Path) -> set[str]:
    """What a fit left beside its result, by kind."""
    job = tmp_path / "job"
    names = {p.name for p in job.iterdir()} if job.exists() else set()
    left = set()
    if restore.STATE_FILE in names:
        left.add(RESTORE_STATE)
    if any(n.startswith("compat_worker_reports") for n in names):
        left.add(WORKER_REPORTS)
    if readiness.RECORD_FILE in names:
        left.add(READINESS)
    if any((tmp_path / "captured").glob("fit-*.json")):
        left.add(CAPTURE)
    return left


def fit_with(callbacks: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, train_fn: Any = three_epochs):
    monkeypatch.setenv("COMPAT_CAPTURE_DIR", str(tmp_path / "captured"))
    monkeypatch.setattr(TorchTrainer, "_create_default_callbacks", lambda self: list(callbacks))
    trainer = TorchTrainer(
        train_fn, train_loop_config={"lr": 0.1}, run_config=train.RunConfig(name="job", storage_path=str(tmp_path))
    )
    return trainer._fit(FakeEngine(V1_MODE), in_trial=False)


def test_a_fit_without_its_callbacks_gives_the_same_result_and_leaves_nothing_beside_it(tmp_path, monkeypatch) -> None:
    from compat._fit_callbacks import default_callbacks

    bare = fit_with([], tmp_path / "bare", monkeypatch)
    assert _left(tmp_path / "bare") == set()
    full = fit_with(default_callbacks(), tmp_path / "full", monkeypatch)
    assert _left(tmp_path / "full") == {RESTORE_STATE, WORKER_REPORTS, READINESS, CAPTURE}
    assert bare.metrics == full.metrics and bare.return_value == full.return_value == 7
    assert bare.metrics_dataframe.equals(full.metrics_dataframe)
    # Without stored reports the result keeps the workers' frame itself.
    assert bare.worker_metrics_dataframe.drop(columns="timestamp").equals(
        full.worker_metrics_dataframe.drop(columns="timestamp")
    )


@pytest.mark.parametrize(
    ("name", "left"),
    [
        ("RestoreState", {RESTORE_STATE}),
        ("StoredWorkerReports", {WORKER_REPORTS}),
        ("ReadinessRecord", {READINESS}),
        ("CompareRecord", {CAPTURE}),
        ("TrialRecord", set()),  # outside a Tune trial: nothing
        ("FitWarnings", set()),
    ],
)
def test_each_of_a_fits_callbacks_alone_leaves_its_own_product(name, left, tmp_path, monkeypatch) -> None:
    from compat import _fit_callbacks

    fit_with([getattr(_fit_callbacks, name)()], tmp_path, monkeypatch)
    assert _left(tmp_path) == left


def _reports_nan(config: dict[str, Any]) -> None:
    train.report({"loss": float("nan")})


def test_a_fits_warnings_are_its_warnings_callbacks(tmp_path, monkeypatch) -> None:
    from compat._fit_callbacks import FitWarnings

    with pytest.warns(usage.NonFiniteMetricWarning, match="loss"):
        fit_with([FitWarnings()], tmp_path / "warned", monkeypatch, _reports_nan)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", usage.NonFiniteMetricWarning)
        fit_with([], tmp_path / "quiet", monkeypatch, _reports_nan)


def test_a_read_is_recorded_by_the_watched_reads_callback_in_the_records_of_the_others(tmp_path, monkeypatch) -> None:
    """The reads watched after fit() are appended to the readiness record and compare's record
    the same fit's other callbacks wrote; without the callback a read records nothing."""
    from compat._fit_callbacks import CompareRecord, ReadinessRecord, WatchedReads

    readiness_record, compare = ReadinessRecord(), CompareRecord()
    result = fit_with([readiness_record, compare, WatchedReads(readiness_record, compare)], tmp_path, monkeypatch)
    kinds = [u.kind for u in result.v1_usage]
    assert kinds == ["free-floating-report"]
    _ = result.metrics_dataframe  # V2 would give none: a V1-only read
    assert [u.kind for u in result.v1_usage] == [*kinds, "metrics-dataframe"]
    lines = (tmp_path / "job" / readiness.RECORD_FILE).read_text().splitlines()
    assert [b["kind"] for b in json.loads(lines[-1])["behaviours"]] == [*kinds, "metrics-dataframe"]
    [captured] = (tmp_path / "captured").glob("fit-*.json")
    assert [u["kind"] for u in json.loads(captured.read_text())["v1_usage"]] == [*kinds, "metrics-dataframe"]

    unwatched = fit_with([ReadinessRecord()], tmp_path / "unwatched", monkeypatch)
    _ = unwatched.metrics_dataframe
    assert [u.kind for u in unwatched.v1_usage] == kinds
