"""compat observes the engine: every report from any caller, on every attempt, on any storage.

Real 2-worker runs on the shared local cluster, in both modes.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest

import compat as train
from compat import DataParallelTrainer
from compat.readiness import _record as readiness
from compat_core.releases import standins

pytestmark = pytest.mark.ray
# Each scenario runs under both backends via the fixtures; only the error-family test depends
# on the setting the test process started with (which ray.train classes it imported).


def readiness_records(run_dir: str) -> list[readiness.RunRecord]:
    records, problems = readiness.parse_lines(Path(run_dir, readiness.RECORD_FILE).read_text())
    assert problems == []
    return records


class CallLog(train.UserCallback):
    """Callbacks run in V2's controller process, so this one appends what it sees to a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _write(self, entry: dict) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def after_report(self, run_context, metrics, checkpoint):
        self._write({"report": metrics, "checkpoint": checkpoint is not None})

    def after_exception(self, run_context, worker_exceptions):
        self._write({"exception": {str(rank): str(e) for rank, e in worker_exceptions.items()}})


def read_log(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()] if os.path.exists(path) else []


def save(directory: str, value: float) -> train.Checkpoint:
    with open(os.path.join(directory, "model.txt"), "w") as f:
        f.write(str(value))
    return train.Checkpoint.from_directory(directory)


def through_every_door(config):
    import ray.train
    from ray.air import session

    train.report({"door": 0})
    ray.train.report({"door": 1})  # a helper module still on `from ray import train`
    session.report({"door": 2})  # a helper module still on ray.air.session
    with tempfile.TemporaryDirectory() as d:
        ray.train.report({"door": 3}, checkpoint=save(d, 3.0))
    rank = ray.train.get_context().get_world_rank()
    return {"rank_seen_by_raw_ray": rank, "air_rank": session.get_world_rank()}


@pytest.mark.one_pass
@pytest.mark.parametrize("channel", ["socket", "actor"])  # how records reach the ledger (§20)
def test_reports_from_ray_train_and_air_session_are_recorded_and_reach_after_report(
    backend, storage, monkeypatch, channel
) -> None:
    if channel == "actor" and backend == "v1" and os.environ.get("COMPAT_V1_ENGINE", "v1") == "v1":
        # CI's time: the actor channel is the same on every engine (a worker's calls to the
        # ledger's actor); it runs with v2 here, and with v1 on V2's engine in the second pass.
        pytest.skip("the actor channel runs with v2 in this pass, and with v1 on V2's engine in the other")
    monkeypatch.setenv("COMPAT_RECORD_CHANNEL", channel)
    monkeypatch.setenv("COMPAT_CAPTURE_DIR", os.path.join(storage, "captured"))  # compare's record of each fit
    log = os.path.join(storage, "calls.jsonl")
    result = DataParallelTrainer(
        through_every_door,
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage, name="doors", callbacks=[CallLog(log)]),
    ).fit()
    frame = result.worker_metrics_dataframe
    assert frame[["door", "world_rank"]].values.tolist() == [[d, r] for d in range(4) for r in (0, 1)]
    reports = [c["report"] for c in read_log(log)]
    assert reports == [[{"door": d}, {"door": d}] for d in range(4)]
    assert [r.has_checkpoint for r in result.report_rounds] == [False, False, False, True]
    assert result.report_rounds[3].checkpoint_dir_name == os.path.basename(result.checkpoint.path)
    kinds = {u.kind: u.count for u in result.v1_usage}
    assert kinds["free-floating-report"] == 3  # rank 0's three reports without a checkpoint
    assert kinds["session-api"] == 4  # session.report and session.get_world_rank, on 2 workers
    assert "behaves the same under V2" not in result.migration_report()
    # The run's readiness record, in its directory, for `python -m compat readiness`.
    (record,) = readiness_records(result.path)
    assert (record.job, record.outcome, record.mode, record.trainer) == (
        "doors",
        "succeeded",
        backend,
        "DataParallelTrainer",
    )
    assert {b.kind: b.count for b in record.behaviours} == kinds
    assert record.call_site.startswith(f"{__file__}:") and record.ended_at >= record.started_at
    assert record.worst == "silent" and [b.kind for b in record.behaviours] == sorted(kinds)
    # The user reads the frame: V1's has 4 rows, V2's the checkpoint's only. Read under either
    # setting, it is recorded the same way (under V2 as what the flip changed): one trend.
    assert len(result.metrics_dataframe) == (4 if backend == "v1" else 1)
    (read,) = [u for u in result.v1_usage if u.kind == "metrics-dataframe"]
    assert read.detail.startswith("4 rows under V1, 1 under V2") and read.first_site.startswith(__file__)
    first, again = readiness_records(result.path)  # appended again with the read
    assert again.started_at == first.started_at and "metrics-dataframe" in {b.kind for b in again.behaviours}
    # A key V1 adds: V2's result.metrics lacks it.
    assert result.metrics.get("training_iteration") == (4 if backend == "v1" else None)
    (keys,) = [u for u in result.v1_usage if u.kind == "v1-result-keys"]
    assert keys.detail == "result.metrics['training_iteration']" and keys.severity == "breaks"
    # The same kinds under either setting: a job's readiness trend does not improve with the flip.
    *_, last = readiness_records(result.path)
    expected = {"free-floating-report", "session-api", "metrics-dataframe", "v1-result-keys"}
    assert {b.kind for b in last.behaviours} == expected and last.worst == "breaks"
    if backend == "v2":
        assert result.migration_report().startswith("Changed by the flip")
    (captured,) = Path(storage, "captured").iterdir()  # compare counts the reads too
    assert {u["kind"] for u in json.loads(captured.read_text())["v1_usage"]} == expected


def fails_once(config):
    """Attempt 0 reports twice, checkpointing the first, then rank 1 dies; the retry resumes
    from the checkpoint when ``config["resume"]`` and reports twice more."""
    import ray.train

    rank = train.get_context().get_world_rank()
    start = 0
    checkpoint = train.get_checkpoint()
    if checkpoint is not None and config["resume"]:
        start = int(float(Path(checkpoint.path, "model.txt").read_text())) + 1
    marker = Path(config["marker"])
    for step in range(start, start + 2):
        with tempfile.TemporaryDirectory() as d:
            if step == 0:
                train.report({"step": step, "rank": rank}, checkpoint=save(d, step))
            else:
                ray.train.report({"step": step, "rank": rank})  # a raw report, too
    if rank == 1 and not marker.exists():
        marker.write_text("failed once")
        raise RuntimeError("injected failure")


@pytest.mark.one_pass
@pytest.mark.parametrize("resume", [True, False], ids=["resuming", "from-scratch"])
@pytest.mark.extended_cases("v2-resuming", "v1")  # CI: a v2 run from scratch; V1 retries in test_v1_engine.py
@pytest.mark.extended_rerun
def test_a_retried_run_keeps_every_attempt(backend, storage, resume) -> None:
    if not resume and backend == "v1" and os.environ.get("COMPAT_V1_ENGINE", "v1") == "v1":
        # CI's time: starting the retry from scratch only changes the training function's own
        # steps; it runs with v2 in this pass, and with v1 on V2's engine in the other.
        pytest.skip("from scratch runs with v2 in this pass, and with v1 on V2's engine in the other")
    log = os.path.join(storage, "calls.jsonl")
    result = DataParallelTrainer(
        fails_once,
        train_loop_config={"marker": os.path.join(storage, "marker"), "resume": resume},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(
            storage_path=storage,
            name="retry",
            failure_config=train.FailureConfig(max_failures=1),
            callbacks=[CallLog(log)],
        ),
    ).fit()
    second = [1, 2] if resume else [0, 1]  # the checkpoint was taken at step 0
    frame = result.worker_metrics_dataframe
    assert frame[["attempt", "report_index", "world_rank", "step"]].values.tolist() == [
        [a, i, r, s] for a, steps in ((0, [0, 1]), (1, second)) for i, s in enumerate(steps) for r in (0, 1)
    ]
    assert [(r.attempt, r.index) for r in result.report_rounds] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    calls = read_log(log)
    assert [c.get("report", [{}])[0].get("step", "exception") for c in calls] == [0, 1, "exception", *second]
    (failure,) = [c["exception"] for c in calls if "exception" in c]
    assert list(failure) == ["1"] and "injected failure" in failure["1"]


def diverges(config):
    train.report({"loss": 1.0})
    raise ValueError("diverged")


@pytest.mark.extended_rerun  # CI: V1's failure on V2's engine in test_runs.py's and test_v1_engine.py's
def test_a_failed_run_raises_an_error_that_ray_handlers_catch(backend, storage) -> None:
    import ray.train
    from ray.train.base_trainer import TrainingFailedError as V1Failed
    from ray.train.v2.api.exceptions import TrainingFailedError as V2Failed

    _, worker_group_error, _ = standins.v2_failure_classes()  # V2's WorkerGroupError from Ray 2.49
    # ray.train exports the class (whichever engine it was imported for) from Ray 2.51.
    handler = getattr(ray.train, "TrainingFailedError", V1Failed)
    try:
        DataParallelTrainer(diverges, run_config=train.RunConfig(storage_path=storage)).fit()
    except handler as error:
        caught = error
    assert isinstance(caught, train.TrainingFailedError) and isinstance(caught, train.CompatError)
    assert isinstance(caught, V1Failed) and isinstance(caught, V2Failed)
    assert isinstance(caught, worker_group_error) and isinstance(caught, train.WorkerGroupFailedError)
    assert list(caught.worker_failures) == [0] and "diverged" in str(caught.worker_failures[0])
    assert caught.result.worker_metrics_dataframe["loss"].tolist() == [1.0]
    (record,) = readiness_records(caught.result.path)  # a failed run leaves its record too
    assert record.outcome == "failed" and "diverged" in record.error and record.job == "pytest"
    assert [(b.kind, b.count, b.severity) for b in record.behaviours] == [("free-floating-report", 1, "silent")]


def scored_checkpoints(config):
    # Scores fall then rise, so Ray's score-sorted list is not in report order.
    for step, score in enumerate([3.0, 1.0, 2.0]):
        with tempfile.TemporaryDirectory() as d:
            train.report({"score": score, "step": step}, checkpoint=save(d, step), validation=True)


def validate_step(checkpoint):
    return {"validated_step": float(Path(checkpoint.path, "model.txt").read_text())}


@pytest.mark.one_pass
@pytest.mark.extended_rerun
@pytest.mark.extended_cases("v1")  # CI: V2's; V1's validation in test_runs.py
def test_validation_outcomes_land_on_their_own_round_with_a_score_attribute(backend, storage) -> None:
    result = DataParallelTrainer(
        scored_checkpoints,
        validation_config=train.ValidationConfig(validate_step),
        run_config=train.RunConfig(
            storage_path=storage,
            checkpoint_config=train.CheckpointConfig(checkpoint_score_attribute="score", checkpoint_score_order="max"),
        ),
    ).fit()
    for round_ in result.report_rounds:
        assert round_.validation is not None and round_.validation.status is train.CheckpointStatus.VALIDATED
        assert round_.validation.metrics["validated_step"] == round_.rank0_metrics["step"]


def one_checkpoint(config):
    seen = train.get_checkpoint()
    with tempfile.TemporaryDirectory() as d:
        train.report({"resumed": seen is not None}, checkpoint=save(d, 1.0))


@pytest.mark.one_pass
@pytest.mark.extended_rerun
@pytest.mark.extended_cases("v1")  # CI: V2's (where the run resumes)
def test_rerunning_a_named_run_is_named_as_a_v1_v2_difference(backend, storage) -> None:
    def fit():
        return DataParallelTrainer(one_checkpoint, run_config=train.RunConfig(storage_path=storage, name="same")).fit()

    assert "rerun-same-name" not in {u.kind for u in fit().v1_usage}
    if backend == "v2":
        with pytest.warns(train.V1OnlyWarning, match=r"\[rerun-same-name\].*V2 resumes the stored run"):
            second = fit()
        assert second.metrics["resumed"] is True  # what raw V2 does; V1 starts fresh
    else:
        second = fit()
        assert second.metrics["resumed"] is False
    (usage,) = [u for u in second.v1_usage if u.kind == "rerun-same-name"]
    assert "test_every_report.py" in usage.first_site
    # V2 resumes the stored run in its directory: the second record is added beside the first.
    records = readiness_records(second.path)
    assert [sorted(b.kind for b in r.behaviours) for r in records][-1] == ["rerun-same-name"]
    assert len(records) == (2 if backend == "v2" else 1)


def logs_while_training(config):
    """Rank 0 waits, at each report, until the previous rounds are in the live logs."""
    progress = Path(config["run_dir"], "result.json")
    for step in range(3):
        if train.get_context().get_world_rank() == 0 and step:
            deadline = time.time() + 30
            while time.time() < deadline:
                if progress.exists() and len(progress.read_text().splitlines()) == step:
                    break
                time.sleep(0.05)
            else:
                raise AssertionError(f"result.json did not have {step} rows while training")
        with tempfile.TemporaryDirectory() as d:
            train.report({"step": step}, checkpoint=save(d, step) if step == 1 else None)
    if train.get_context().get_world_rank() == 0:
        raise RuntimeError("fails after three rounds")


@pytest.mark.one_pass
def test_keep_v1_logs_are_written_live_and_survive_a_failure(v2, storage) -> None:
    run_dir = os.path.join(storage, "live")
    os.makedirs(run_dir)
    Path(run_dir, "progress.csv").write_text("step\n99\n")  # an earlier run's log
    with pytest.raises(train.TrainingFailedError) as info:
        DataParallelTrainer(
            logs_while_training,
            train_loop_config={"run_dir": run_dir},
            scaling_config=train.ScalingConfig(num_workers=2),
            run_config=train.RunConfig(storage_path=storage, name="live", keep_v1_logs=True),
        ).fit()
    rows = [json.loads(line) for line in Path(run_dir, "result.json").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert [r["training_iteration"] for r in rows] == [1, 2, 3]
    assert rows[1]["should_checkpoint"] is True and "should_checkpoint" not in rows[0]
    assert rows[1]["checkpoint_dir_name"].startswith("checkpoint_")
    assert os.path.isdir(os.path.join(run_dir, rows[1]["checkpoint_dir_name"]))
    assert all(r["time_this_iter_s"] >= 0 for r in rows)
    assert rows[0]["pid"] != os.getpid()  # the worker's, as V1 logs it
    assert Path(run_dir, "progress.csv.1").read_text() == "step\n99\n"  # set aside, not lost
    assert Path(run_dir, "progress.csv").read_text().splitlines()[1:] != ["99"]
    assert info.value.result.metrics_dataframe["step"].tolist() == [0, 1, 2]
    assert list(Path(run_dir).glob("events.out.tfevents.*"))  # TensorBoard, as V1's TBX logger


def three_checkpoints(config):
    for step in range(2):
        with tempfile.TemporaryDirectory() as d:
            train.report({"step": step}, checkpoint=save(d, step) if step else None)


@pytest.mark.one_pass
@pytest.mark.parametrize("how", ["subtree", "uri"])
@pytest.mark.extended_rerun
def test_storage_goes_through_the_runs_filesystem(backend, tmp_path, monkeypatch, how) -> None:
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    root = tmp_path / "bucket"
    root.mkdir()
    if how == "subtree":
        run = train.RunConfig(
            storage_path="experiments",
            storage_filesystem=pafs.SubTreeFileSystem(str(root), pafs.LocalFileSystem()),
            name="fs",
            keep_v1_logs=True,
        )
    else:
        run = train.RunConfig(storage_path=f"file://{root}/experiments", name="fs", keep_v1_logs=True)
    result = DataParallelTrainer(three_checkpoints, run_config=run).fit()
    assert list(work.iterdir()) == []  # nothing lands in the working directory
    run_dir = root / "experiments" / "fs"
    logged = list(run_dir.rglob("result.json"))
    assert len(logged) == 1
    assert [json.loads(line)["step"] for line in logged[0].read_text().splitlines()] == [0, 1]
    assert result.metrics_dataframe["step"].tolist() == [0, 1]
    assert result.checkpoint is not None


@pytest.mark.one_pass
def test_every_round_can_still_go_through_rays_controller(v2, storage, monkeypatch) -> None:
    monkeypatch.setenv("COMPAT_V2_RAY_ROUNDS", "1")  # compat delivers free-floating rounds itself otherwise
    log = os.path.join(storage, "calls.jsonl")
    result = DataParallelTrainer(
        through_every_door,
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage, name="doors", callbacks=[CallLog(log)]),
    ).fit()
    assert [c["report"] for c in read_log(log)] == [[{"door": d}, {"door": d}] for d in range(4)]
    assert len(result.worker_metrics_dataframe) == 8


def losses(config):
    for step in range(3):
        with tempfile.TemporaryDirectory() as d:
            train.report({"loss": 1.0 / (step + 1)}, checkpoint=save(d, step) if step == 2 else None)


@pytest.mark.one_pass
@pytest.mark.extended_rerun
def test_tune_callbacks_keep_receiving_results_on_the_driver(backend, storage) -> None:
    from ray.tune import Callback
    from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback, TBXLoggerCallback

    class Collect(Callback):  # state on the driver-side object, as V1 users rely on
        def __init__(self):
            self.events = []

        def on_trial_start(self, iteration, trials, trial, **info):
            self.events.append("start")

        def on_trial_result(self, iteration, trials, trial, result, **info):
            self.events.append((result["loss"], result["training_iteration"]))

        def on_trial_complete(self, iteration, trials, trial, **info):
            self.events.append("complete")

    collect = Collect()
    callbacks = [collect, CSVLoggerCallback(), JsonLoggerCallback(), TBXLoggerCallback()]
    run = train.RunConfig(storage_path=storage, name="tune", callbacks=callbacks)
    result = DataParallelTrainer(losses, run_config=run).fit()
    assert collect.events == ["start", (1.0, 1), (0.5, 2), (1.0 / 3, 3), "complete"]
    assert "tune-callback" in {u.kind for u in result.v1_usage}  # still named in the migration report
    run_dir = Path(storage, "tune")
    (progress,) = run_dir.rglob("progress.csv")
    assert len(progress.read_text().splitlines()) == 4  # header + one row per report
    assert list(run_dir.rglob("events.out.tfevents.*"))
    (logged,) = run_dir.rglob("result.json")
    assert [json.loads(line)["loss"] for line in logged.read_text().splitlines()] == [1.0, 0.5, 1.0 / 3]


def only_rank0_checkpoints(config):
    """The Ray docs' pattern: every rank reports, only rank 0 passes a checkpoint."""
    rank = train.get_context().get_world_rank()
    for step in range(3):
        with tempfile.TemporaryDirectory() as d:
            checkpoint = save(d, step) if rank == 0 and step == 1 else None
            train.report({"step": step}, checkpoint=checkpoint)


@pytest.mark.one_pass
@pytest.mark.extended_rerun
def test_a_round_where_only_rank_0_passes_a_checkpoint_is_one_checkpoint_round(backend, storage) -> None:
    log = os.path.join(storage, "calls.jsonl")
    result = DataParallelTrainer(
        only_rank0_checkpoints,
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage, callbacks=[CallLog(log)]),
    ).fit()
    assert [c["checkpoint"] for c in read_log(log)] == [False, True, False]
    assert [r.has_checkpoint for r in result.report_rounds] == [False, True, False]
    assert len(result.best_checkpoints) == 1 and result.metrics["step"] == (2 if backend == "v1" else 1)


def steady_rounds(config):
    """Eight rounds with a checkpoint each; rank 0 marks each round its report returned from."""
    for step in range(8):
        with tempfile.TemporaryDirectory() as d:
            train.report({"step": step}, checkpoint=save(d, step))
        if train.get_context().get_world_rank() == 0:
            Path(config["marks"], f"step{step}").write_text("reported")
        time.sleep(0.25)


def _wait_for(path: Path, timeout_s: float = 120.0) -> None:
    deadline = time.time() + timeout_s
    while not path.exists() and time.time() < deadline:
        time.sleep(0.05)


def rounds_around_host_kills(config):
    """Rank 0 marks when it started, each round its report returned from, and its end; it
    reports nothing until told to go (the host is killed before the first record)."""
    marks = Path(config["marks"])
    rank = train.get_context().get_world_rank()
    if rank == 0:
        (marks / "started").write_text("")
        _wait_for(marks / "go")
    for step in range(8):
        with tempfile.TemporaryDirectory() as d:
            checkpoint = save(d, step) if step % 2 == 0 else None
            validation = train.ValidationTaskConfig(fn_kwargs={"marks": str(marks)}) if step == 4 else False
            train.report({"step": step}, checkpoint=checkpoint, validation=validation)
        if rank == 0:
            (marks / f"step{step}").write_text("")
        time.sleep(0.25)
    if rank == 0:
        (marks / "end").write_text("")


def validated_after_a_host_kill(checkpoint, marks: str) -> dict:
    """A validation that marks its start and waits until the host was killed (a validation
    the restarted host runs again finds the mark and returns at once)."""
    Path(marks, "validating").write_text("")
    _wait_for(Path(marks, "validate"))
    return {"score": 1.0}


@pytest.mark.one_pass
# CI: under v2 (and under v1 the next test's host lost for good); the full suite both.
@pytest.mark.extended_cases("v1")
@pytest.mark.extended_rerun
def test_a_run_goes_on_when_its_ledger_host_dies_before_during_and_at_the_end_of_it(backend, storage) -> None:
    """compat's own process, the run ledger's host, SIGKILLed three times in one run (as the OOM
    killer would): before the first report, mid-run while a checkpoint's validation runs, and as
    the workers finish. Ray restarts it,
    it rebuilds the run from its journal, the workers resend what it had not acknowledged: the
    run completes with every report kept once and every round given to after_report in order
    (a round being handed over when the host died may be given twice)."""
    import signal
    import threading

    import ray

    from compat_core.run.ledger import host
    from tests.compat.calls import CallLog, calls

    marks = Path(storage, "marks")
    marks.mkdir()
    killed: list[int] = []

    def kill_host() -> None:
        pid = ray.get(host._host.actor.pid.remote(), timeout=120)  # waits for a restarted host
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    def killer() -> None:
        _wait_for(marks / "started")
        kill_host()
        (marks / "go").write_text("")
        _wait_for(marks / "validating")  # step 4's validation is running
        kill_host()
        (marks / "validate").write_text("")
        _wait_for(marks / "end")
        kill_host()

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    log = os.path.join(storage, "calls.jsonl")
    result = DataParallelTrainer(
        rounds_around_host_kills,
        train_loop_config={"marks": str(marks)},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage, name="host-restarts", callbacks=[CallLog(log)]),
        validation_config=train.ValidationConfig(fn=validated_after_a_host_kill),
    ).fit()
    thread.join(timeout=30)
    assert len(set(killed)) == 3, killed  # three processes of the host, each killed
    # The validation running when the host died (run by the ledger under V1 semantics, by
    # Ray's controller under v2) is reported with its checkpoint.
    (validated,) = [c for c in result.reported_checkpoints if c.metrics["step"] == 4]
    assert validated.metrics["score"] == 1.0 and validated.status.value == "VALIDATED", validated
    frame = result.worker_metrics_dataframe
    assert sorted(zip(frame["step"], frame["world_rank"], strict=True)) == [(s, r) for s in range(8) for r in range(2)]
    steps = [step for kind, step in calls(log) if kind == "report"]
    assert [s for i, s in enumerate(steps) if i == 0 or s != steps[i - 1]] == list(range(8)) and len(steps) <= 11
    if backend == "v1":
        assert list(result.metrics_dataframe["step"]) == list(range(8))  # V1's logs complete
    assert ray.get(host._host.actor.pid.remote()) not in killed  # the fit after it uses the restarted host


class EndsItsProcess(train.UserCallback):
    """A user callback that takes its process (the ledger's host) down from round 3 on, each
    time it is called: a bug, or memory exhausted by what it keeps."""

    def after_report(self, run_context, metrics, checkpoint) -> None:
        if metrics[0]["step"] >= 3:
            os._exit(1)


@pytest.mark.one_pass  # v1 on V1's engine only: what a host lost for good leaves does not depend on the engine
def test_a_ledger_host_that_keeps_dying_ends_the_run_naming_it_and_loses_no_report(
    ray_cluster, storage, monkeypatch
) -> None:
    """compat's own process, the run ledger's host, taken down by a user callback each time it
    is restarted: after COMPAT_LEDGER_MAX_RESTARTS restarts the run fails naming the host and
    the setting, and its error's result has every report the host had been told of, read back
    from the host's journal (LedgerClient.close, the same code for every engine); the next fit
    starts a new host."""
    import ray

    from compat_core.run.ledger import host

    marks = Path(storage, "marks")
    marks.mkdir()
    journals = Path(storage, "journals")  # this test's runs' journals only (other processes run fits too)
    monkeypatch.setattr(host, "JOURNAL_DIR", str(journals))
    monkeypatch.setenv("COMPAT_LEDGER_MAX_RESTARTS", "1")
    with pytest.raises(train.TrainingFailedError) as caught:
        DataParallelTrainer(
            steady_rounds,
            train_loop_config={"marks": str(marks)},
            scaling_config=train.ScalingConfig(num_workers=2),
            run_config=train.RunConfig(storage_path=storage, name="host-lost", callbacks=[EndsItsProcess()]),
        ).fit()
    message = str(caught.value)
    assert "compat's run ledger (LedgerHost" in message and "read back from its journal" in message
    assert "restarted as often as allowed (COMPAT_LEDGER_MAX_RESTARTS=1)" in message
    frame = caught.value.result.worker_metrics_dataframe
    assert {0, 1, 2, 3} <= set(frame[frame["world_rank"] == 0]["step"])  # every round before the loss
    assert journals.is_dir() and not list(journals.glob("*.journal"))  # written, read back, then removed
    lost = host._host.actor
    monkeypatch.delenv("COMPAT_LEDGER_MAX_RESTARTS")
    with tempfile.TemporaryDirectory():
        again = DataParallelTrainer(
            one_checkpoint, run_config=train.RunConfig(storage_path=storage, name="after")
        ).fit()
    assert again.metrics["resumed"] is False and host._host.actor is not lost
    assert ray.get(host._host.actor.reusable.remote())
