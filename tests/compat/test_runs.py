"""Real runs on a local Ray cluster, in both modes (one shared cluster per session)."""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import tempfile
import time
from pathlib import Path

import pytest

import compat as train
from compat import DataParallelTrainer
from compat_core import switch
from compat_core.migration import usage
from compat_core.releases import facts
from tests.compat.calls import CallLog, calls

pytestmark = pytest.mark.ray


class FileLogger(train.UserCallback):
    """Callbacks run outside the driver, so this one writes what it sees to a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def after_report(self, run_context, metrics, checkpoint):
        with open(self.path, "a") as f:
            f.write(json.dumps({"metrics": metrics, "checkpoint": checkpoint is not None}) + "\n")


def seed_validate(checkpoint, config):
    with open(os.path.join(checkpoint.path, "model.txt")) as f:
        weight = float(f.read())
    return {"loss": weight / 10, "score": config["epoch"] * 1.0}


def validate(checkpoint, scale=1.0):
    return {"accuracy": 0.5 * scale}


def save(directory: str, value: float) -> train.Checkpoint:
    with open(os.path.join(directory, "model.txt"), "w") as f:
        f.write(str(value))
    return train.Checkpoint.from_directory(directory)


def rich_train_func(config):
    rank = train.session.get_world_rank()
    size = train.get_context().get_world_size()
    for epoch in range(4):
        metrics = {"loss": 4.0 - epoch, "rank": rank, "size": size}
        if epoch == 1:
            metrics["late_key"] = 7
        with tempfile.TemporaryDirectory() as d:
            if epoch == 0:
                train.report(
                    metrics,
                    checkpoint=save(d, 40.0),
                    validate_fn=seed_validate,
                    validate_config={"epoch": epoch},
                )
            elif epoch == 2:
                train.report(
                    metrics,
                    checkpoint=save(d, 20.0),
                    validation=train.ValidationTaskConfig(fn_kwargs={"scale": 2.0}),
                )
            else:
                train.report(metrics)
    return {"rank0_returned": rank}


@pytest.fixture(scope="module", params=["v1", "v2"])
def rich_run(request, ray_cluster, tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("RAY_TRAIN_V2_ENABLED", "0" if request.param == "v1" else "1")
    mp.setattr(usage, "_warned", set())  # "once" is per process: earlier tests may have warned
    base = tmp_path_factory.mktemp(f"rich_{request.param}")
    log = base / "after_report.jsonl"
    trainer = DataParallelTrainer(
        rich_train_func,
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(name="rich", storage_path=str(base), callbacks=[FileLogger(str(log))]),
        validation_config=train.ValidationConfig(fn=validate),
    )
    with pytest.warns(train.V1OnlyWarning) if request.param == "v2" else _nothing():
        result = trainer.fit()
    mp.undo()
    return request.param, result, log


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_two_workers_finish_on_two_cores(rich_run) -> None:
    backend, result, _ = rich_run
    assert result.backend == backend and result.error is None
    assert result.return_value == {"rank0_returned": 0}


def test_result_metrics_follow_each_backend(rich_run) -> None:
    backend, result, _ = rich_run
    if backend == "v1":  # the last report, free-floating, with V1's auto-filled keys
        assert result.metrics["loss"] == 1.0 and result.metrics["training_iteration"] == 4
        assert {"timestamp", "time_this_iter_s", "time_total_s", "trial_id"} <= set(result.metrics)
    else:  # the latest checkpoint's metrics, validated
        assert result.metrics == {"loss": 2.0, "rank": 0, "size": 2, "accuracy": 1.0}


def test_metrics_dataframe_rows(rich_run) -> None:
    backend, result, _ = rich_run
    frame = result.metrics_dataframe
    if backend == "v1":
        assert list(frame["loss"]) == [4.0, 3.0, 2.0, 1.0]  # one row per report of rank 0
        assert frame["late_key"].tolist()[1] == 7
    else:
        assert len(frame) == 2  # one row per checkpoint
        assert list(frame["accuracy"].fillna(-1)) == [-1, 1.0]


def test_validation_in_both_forms_merges_into_checkpoint_metrics(rich_run) -> None:
    _, result, _ = rich_run
    first, second = result.reported_checkpoints
    assert first.status == second.status == train.CheckpointStatus.VALIDATED
    assert first.metrics["loss"] == 4.0 and first.metrics["score"] == 0.0  # same key overwritten
    assert second.metrics["accuracy"] == 1.0 and second.metrics["loss"] == 2.0
    assert [m["loss"] for _, m in result.best_checkpoints] == [4.0, 2.0]


def test_a_new_driver_reads_back_what_fit_returned(rich_run, monkeypatch) -> None:
    """``Result.from_path`` of the run's directory gives what ``fit()`` gave, by the same
    semantics, on every release: Ray's own V2 ``Result.from_path`` reads a run from 2.52 only
    (before, it raises ``NotImplementedError``), and compat then reads V2's snapshot itself;
    the validations compat's ledger ran (V1 semantics; V2's before 2.56) are stored with the run
    and merged as ``fit()`` merged them."""
    backend, result, _ = rich_run
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "0" if backend == "v1" else "1")
    loaded = train.Result.from_path(result.path)
    keep = ("loss", "rank", "accuracy", "score")

    def kept(metrics):
        return {k: v for k, v in metrics.items() if k in keep}

    assert kept(loaded.metrics) == kept(result.metrics) and kept(result.metrics)
    assert loaded.checkpoint.path == result.checkpoint.path
    assert [(c.path, kept(m)) for c, m in loaded.best_checkpoints] == [
        (c.path, kept(m)) for c, m in result.best_checkpoints
    ]
    assert list(loaded.metrics_dataframe["loss"]) == list(result.metrics_dataframe["loss"])
    assert list(loaded.metrics_dataframe["accuracy"].fillna(-1)) == list(
        result.metrics_dataframe["accuracy"].fillna(-1)
    )
    # Each status as fit() gave it: from compat's ledger (v1; v2 before 2.56) or Ray's snapshot.
    statuses = [(c.checkpoint.path, c.status) for c in result.reported_checkpoints]
    assert [(c.checkpoint.path, c.status) for c in loaded.reported_checkpoints] == statuses
    assert len(loaded.worker_metrics_dataframe) == len(result.worker_metrics_dataframe) == 8
    if backend == "v2" and facts.V2_READS_RUNS:  # compat's reading of V2's snapshot, against Ray's own
        from ray.train.v2.api.result import Result as RaysResult

        from compat_core.files.storage import at
        from compat_core.releases.standins import v2_result_from_snapshot

        rays = RaysResult.from_path(result.path)
        run = at(result.path)
        ours = v2_result_from_snapshot(run.run_dir, run.filesystem)
        assert (ours.metrics, ours.checkpoint.path, ours.path) == (rays.metrics, rays.checkpoint.path, rays.path)
        assert [(c.path, m) for c, m in ours.best_checkpoints] == [(c.path, m) for c, m in rays.best_checkpoints]
        assert ours.metrics_dataframe.equals(rays.metrics_dataframe)


def test_after_report_sees_every_worker_once_per_round(rich_run) -> None:
    _, _, log = rich_run
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["checkpoint"] for c in calls] == [True, False, True, False]
    assert [[m["rank"] for m in c["metrics"]] for c in calls] == [[0, 1]] * 4
    assert "score" not in calls[0]["metrics"][0]  # pre-validation metrics only


def test_every_workers_reports_are_kept(rich_run) -> None:
    _, result, _ = rich_run
    frame = result.worker_metrics_dataframe
    assert len(frame) == 8
    assert (frame["rank"] == frame["world_rank"]).all()
    assert frame[frame.world_rank == 1]["loss"].tolist() == [4.0, 3.0, 2.0, 1.0]


def test_v1_logs_keep_keys_first_reported_later(rich_run) -> None:
    backend, result, _ = rich_run
    progress = Path(result.path) / "progress.csv"
    if backend == "v2":
        assert not progress.exists()
        return
    with open(progress, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["late_key"] for r in rows] == ["", "7", "", ""]  # raw Ray V1 drops this column
    assert len((Path(result.path) / "result.json").read_text().splitlines()) == 4


def test_usage_report_names_free_floating_reports_and_the_session_api(rich_run) -> None:
    _, result, _ = rich_run
    usage = {u.kind: u for u in result.v1_usage}
    assert usage["free-floating-report"].count == 2
    path, line = usage["free-floating-report"].first_site.rsplit(":", 1)
    assert path == __file__
    assert Path(path).read_text().splitlines()[int(line) - 1].strip() == "train.report(metrics)"
    assert usage["session-api"].count == 2  # one get_world_rank per worker
    assert "free-floating-report" in result.migration_report()


def failing_validations(config):
    with tempfile.TemporaryDirectory() as d:
        train.report({"loss": 1.0}, checkpoint=save(d, 1), validate_fn=_raise, validate_config={})
    with tempfile.TemporaryDirectory() as d:
        timeout = train.ValidationTaskConfig(fn_kwargs={"sleep": 60}, timeout_s=2)
        train.report({"loss": 0.5}, checkpoint=save(d, 1), validation=timeout)


def _raise(checkpoint, config):
    raise ValueError("validation broke")


def _sleepy(checkpoint, sleep=0):
    time.sleep(sleep)
    return {"never": 1}


@pytest.mark.extended_rerun
def test_failed_and_timed_out_validations_keep_training_metrics(backend, storage) -> None:
    result = DataParallelTrainer(
        failing_validations,
        run_config=train.RunConfig(name="val", storage_path=storage),
        validation_config=train.ValidationConfig(fn=_sleepy),
    ).fit()
    statuses = [c.status for c in result.reported_checkpoints]
    assert statuses == [train.CheckpointStatus.VALIDATION_FAILED, train.CheckpointStatus.VALIDATION_TIMEOUT]
    assert [c.metrics["loss"] for c in result.reported_checkpoints] == [1.0, 0.5]
    assert not any("never" in c.metrics for c in result.reported_checkpoints)


def _which_ray_functions(checkpoint):
    import ray.train.torch

    return {"v2_functions": float(ray.train.torch.get_device.__module__.startswith("ray.train.v2"))}


def one_validated_checkpoint(config):
    with tempfile.TemporaryDirectory() as d:
        train.report({"loss": 1.0}, checkpoint=save(d, 1), validation=True)


def test_a_v1_validation_gets_v1s_ray_functions_whatever_the_cluster_started_with(v1, storage) -> None:
    # The shared cluster's workers read the RAY_TRAIN_V2_ENABLED this process started with
    # (1 in CI's second pass): compat's own validation task reads the v1 backend's value, so
    # ray.train.torch.get_device() there is V1's, as on a V1 cluster (Ray 2.50's V2 one
    # raises outside a training worker, failing Ray Data's iter_torch_batches).
    result = DataParallelTrainer(
        one_validated_checkpoint,
        scaling_config=train.ScalingConfig(num_workers=1),
        run_config=train.RunConfig(storage_path=storage),
        validation_config=train.ValidationConfig(fn=_which_ray_functions),
    ).fit()
    [reported] = result.reported_checkpoints
    assert reported.status == train.CheckpointStatus.VALIDATED
    assert reported.metrics["v2_functions"] == 0.0


def nan_in_round_two(config):
    train.report({"loss": 1.0, "step": 0})
    train.report({"loss": math.nan, "step": 1})
    train.report({"loss": math.inf, "step": 2})


@pytest.mark.extended_rerun
def test_nan_and_inf_are_recorded_with_one_warning_per_key(backend, storage) -> None:
    with pytest.warns(train.NonFiniteMetricWarning) as caught:
        result = DataParallelTrainer(nan_in_round_two, run_config=train.RunConfig(storage_path=storage)).fit()
    frame = result.worker_metrics_dataframe
    assert frame["step"].tolist() == [0, 1, 2]
    assert math.isnan(frame["loss"][1]) and math.isinf(frame["loss"][2])
    messages = [str(w.message) for w in caught if issubclass(w.category, train.NonFiniteMetricWarning)]
    assert len(messages) == 1 and "'loss' was NaN or infinite in 2 report(s) (first: worker 0, report 1)" in messages[0]
    if backend == "v1":
        assert math.isinf(result.metrics["loss"])  # V1 keeps it, as raw Ray does


def one_unscored_checkpoint(config):
    for step, loss in enumerate([1.0, 2.0, None, 3.0]):  # the third report lacks the score
        with tempfile.TemporaryDirectory() as d:
            train.report({"step": step} if loss is None else {"step": step, "loss": loss}, checkpoint=save(d, step))
    listed = train.get_all_reported_checkpoints()
    return [(r.metrics["step"], open(os.path.join(r.checkpoint.path, "model.txt")).read()) for r in listed]


@pytest.mark.extended_rerun
def test_reported_checkpoints_are_the_ones_the_engine_keeps(backend, storage) -> None:
    # A checkpoint without the score attribute: V1's checkpoint manager (Ray 2.49+) ranks it
    # as the newest, V2's by -inf. get_all_reported_checkpoints() lists what the engine
    # running the run keeps (docs §27, §28).
    result = DataParallelTrainer(
        one_unscored_checkpoint,
        scaling_config=train.ScalingConfig(num_workers=1),
        run_config=train.RunConfig(
            storage_path=storage,
            checkpoint_config=train.CheckpointConfig(num_to_keep=2, checkpoint_score_attribute="loss"),
        ),
    ).fit()
    engine = switch.mode_of(switch.Generation(backend)).engine  # the v1 backend may run on V2's engine
    kept = [2, 3] if engine is switch.V1 and facts.UNSCORED_CHECKPOINTS_NEWEST else [1, 3]
    on_disk = sorted(int(open(os.path.join(c.path, "model.txt")).read()) for c, _ in result.best_checkpoints)
    assert on_disk == kept  # what the engine kept
    assert result.return_value == [(step, str(step)) for step in kept]  # what the workers were told


class Exploding(train.UserCallback):
    def after_report(self, run_context, metrics, checkpoint):
        raise RuntimeError("tracker is down")


def two_reports(config):
    for step in range(2):
        with tempfile.TemporaryDirectory() as d:
            train.report({"step": step}, checkpoint=save(d, step))


@pytest.mark.extended_rerun
def test_a_raising_callback_does_not_stop_training(backend, storage) -> None:
    with pytest.raises(train.CallbackError, match="Exploding.after_report at report round 0") as info:
        DataParallelTrainer(
            two_reports, run_config=train.RunConfig(storage_path=storage, callbacks=[Exploding()])
        ).fit()
    assert [m["step"] for _, m in info.value.result.best_checkpoints] == [0, 1]
    assert len(info.value.failures) == 2


def echo_env(config):
    with tempfile.TemporaryDirectory() as d:
        train.report(
            {
                "backend": os.environ["RAY_TRAIN_V2_ENABLED"],
                "poll": os.environ.get("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", ""),
            },
            checkpoint=save(d, 0),
        )


@pytest.mark.one_pass  # it sets the variable itself, fit by fit: a process started under V2 changes nothing
def test_flipping_the_variable_between_runs_in_one_process(monkeypatch, ray_cluster, storage) -> None:
    seen = []
    for setting in ["0", "1", "0"]:
        monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", setting)
        result = DataParallelTrainer(echo_env, run_config=train.RunConfig(storage_path=storage)).fit()
        seen.append((result.backend, result.metrics["backend"]))
    # Driver and workers agree; workers see the variable of the engine they run on (with
    # COMPAT_V1_ENGINE=v2 the v1 backend's workers run on V2's engine, with it set to 1).
    modes = [switch.mode_of(switch.Generation(b)) for b in ("v1", "v2", "v1")]
    assert seen == [(m.backend, m.engine_env[switch.ENV_VAR]) for m in modes]
    assert [b for b, _ in seen] == ["v1", "v2", "v1"] and seen[1][1] == "1"


def test_v2_report_rounds_use_a_short_poll_unless_overridden(v2, monkeypatch, storage) -> None:
    monkeypatch.delenv("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", raising=False)  # tests/conftest.py sets 0.1
    result = DataParallelTrainer(echo_env, run_config=train.RunConfig(storage_path=storage)).fit()
    assert result.metrics["poll"] == "0.05"
    monkeypatch.setenv("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.5")
    result = DataParallelTrainer(echo_env, run_config=train.RunConfig(storage_path=storage)).fit()
    assert result.metrics["poll"] == "0.5"


def free_floating(config):
    train.report({"loss": 2.0})
    with tempfile.TemporaryDirectory() as d:
        train.report({"loss": 1.0, "new": 1}, checkpoint=save(d, 0))


def test_keep_v1_logs_opt_in_under_v2(v2, storage) -> None:
    result = DataParallelTrainer(
        free_floating, run_config=train.RunConfig(storage_path=storage, keep_v1_logs=True)
    ).fit()
    assert result.metrics == {"loss": 1.0, "new": 1}  # V2's meaning is kept
    assert result.metrics_dataframe["loss"].tolist() == [2.0, 1.0]
    assert result.metrics_dataframe["training_iteration"].tolist() == [1, 2]
    with open(Path(result.path) / "progress.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["new"] for r in rows] == ["", "1"]
    assert len((Path(result.path) / "result.json").read_text().splitlines()) == 2


def test_strict_mode_turns_v1_only_usage_into_errors(v2, monkeypatch, storage) -> None:
    monkeypatch.setenv("COMPAT_STRICT", "1")
    with pytest.raises(train.V1OnlyWarning, match="trainer-resources"):
        DataParallelTrainer(free_floating, scaling_config=train.ScalingConfig(trainer_resources={"CPU": 0})).fit()
    with pytest.raises(train.TrainingFailedError, match=r"worker 0: V1OnlyWarning: \[free-floating-report\]") as info:
        DataParallelTrainer(free_floating, run_config=train.RunConfig(storage_path=storage)).fit()
    assert "strict mode" in str(info.value)
    # Ray's error, intact (Ray before 2.49 has one failure class)
    families = {"WorkerGroupError", "ControllerError"} if facts.FAILURE_FAMILIES else {"TrainingFailedError"}
    assert type(info.value.__cause__).__name__ in families


def v1_calls_on_a_worker(config):
    train.get_context().get_trial_name()  # <- worker call
    train.report({"x": 1})  # <- report


def _line_of(marker: str) -> int:
    return next(i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1) if line.endswith(marker))


@pytest.mark.one_pass  # v2 only: the second pass (v1 on V2's engine) would run the same
def test_every_warning_points_at_the_users_line(v2, storage, monkeypatch) -> None:
    """Python's location of a warning (what IDEs, pytest's summary, ``-W error`` and
    ``filterwarnings(module=...)`` use) is the user's line, not compat's: a trainer option at
    the fit() call, a worker's report and a worker-side call at their lines in the training
    function (repeated on the driver from the workers' records)."""
    import warnings

    monkeypatch.setattr(usage, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = DataParallelTrainer(
            v1_calls_on_a_worker,
            scaling_config=train.ScalingConfig(trainer_resources={"CPU": 0}),
            run_config=train.RunConfig(storage_path=storage),
        )
        trainer.fit()  # <- fit
    where = {
        str(w.message).split("]")[0] + "]": (w.filename, w.lineno)
        for w in caught
        if issubclass(w.category, train.V1OnlyWarning)
    }
    assert where == {
        "[trainer-resources]": (__file__, _line_of("# <- fit")),
        "[trial-api]": (__file__, _line_of("# <- worker call")),
        "[free-floating-report]": (__file__, _line_of("# <- report")),
    }


def _trial_name_and_its_warnings(config):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train.get_context().get_trial_name()  # <- trial name
    train.report({"warned_at": ";".join(f"{w.filename}:{w.lineno}" for w in caught)})


def test_rays_deprecation_of_a_call_compat_makes_for_the_user_points_at_the_users_line(v1, storage) -> None:
    """Under V1 semantics ``get_context().get_trial_name()`` is Ray's deprecated method: Ray's
    warning is at the user's line (as with raw V1), not in compat's context."""
    result = DataParallelTrainer(_trial_name_and_its_warnings, run_config=train.RunConfig(storage_path=storage)).fit()
    warned_at = [w for w in result.metrics["warned_at"].split(";") if w]
    if not switch.mode().emulates_v1_engine:  # V2's engine has no such method: compat answers
        assert warned_at, "Ray 2.60's V1 get_trial_name is deprecated"
    assert warned_at == [f"{__file__}:{_line_of('# <- trial name')}"] * len(warned_at)


def test_v1_only_options_warn_once_per_kind_under_v2(v2, storage, monkeypatch) -> None:
    import warnings

    monkeypatch.setattr(usage, "_warned", set())  # "once" is per process
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        trainer = DataParallelTrainer(
            echo_env,
            scaling_config=train.ScalingConfig(trainer_resources={"CPU": 0}),
            run_config=train.RunConfig(
                storage_path=storage,
                verbose=0,
                stop={"x": 1},
                checkpoint_config=train.CheckpointConfig(checkpoint_frequency=2),
            ),
        )
        result = trainer.fit()
    kinds = [str(w.message).split("]")[0] + "]" for w in caught if issubclass(w.category, train.V1OnlyWarning)]
    assert sorted(kinds) == ["[checkpoint-frequency]", "[trainer-resources]", "[tune-run-option]"]
    found = {u.kind: u.count for u in result.v1_usage}
    assert found == {"trainer-resources": 1, "tune-run-option": 2, "checkpoint-frequency": 1}
    assert all("issues/49454" in str(w.message) for w in caught if issubclass(w.category, train.V1OnlyWarning))


def test_report_outside_a_training_function() -> None:
    with pytest.raises(train.NotInTrainingFunctionError, match="inside the function you pass"):
        train.report({"loss": 1.0})
    with pytest.raises(train.NotInTrainingFunctionError):
        train.session.get_world_rank()


@pytest.mark.extended_rerun
def test_ray_tune_callbacks_still_work_under_v1(v1, storage) -> None:
    from ray.tune import Callback

    class CountResults(Callback):
        def __init__(self, path):
            self.path = path

        def on_trial_result(self, iteration, trials, trial, result, **info):
            with open(self.path, "a") as f:
                f.write(f"{result['loss']}\n")

    import warnings

    log = os.path.join(storage, "tune.log")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = DataParallelTrainer(
            free_floating, run_config=train.RunConfig(storage_path=storage, callbacks=[CountResults(log)])
        ).fit()
    # compat's default trainer_resources is not blamed on the user
    assert not [w for w in caught if "trainer_resources" in str(w.message)]
    assert Path(log).read_text().split() == ["2.0", "1.0"]  # the driver-side Tune callback saw both reports
    assert {u.kind for u in result.v1_usage} >= {"tune-callback", "free-floating-report"}


class ExceptionLogger(train.UserCallback):
    def __init__(self, path: str) -> None:
        self.path = path

    def after_exception(self, run_context, worker_exceptions):
        with open(self.path, "a") as f:
            f.write(json.dumps({str(rank): str(error) for rank, error in worker_exceptions.items()}) + "\n")


def fails_after_one_report(config):
    train.report({"step": 0})
    raise ValueError("boom in training")


def test_after_exception_gets_the_worker_error_and_results_survive(backend, storage) -> None:
    log = os.path.join(storage, "exceptions.jsonl")
    with pytest.raises(train.TrainingFailedError, match="worker 0: ValueError: boom in training") as info:
        DataParallelTrainer(
            fails_after_one_report, run_config=train.RunConfig(storage_path=storage, callbacks=[ExceptionLogger(log)])
        ).fit()
    calls = [json.loads(line) for line in Path(log).read_text().splitlines()]
    assert calls and list(calls[0]) == ["0"] and "boom in training" in calls[0]["0"]
    assert info.value.result.worker_metrics_dataframe["step"].tolist() == [0]
    if backend == "v1":  # raised from the worker's own error, as raw V1's (Ray's error: .cause)
        assert isinstance(info.value.__cause__, ValueError), type(info.value.__cause__).__mro__


def _three_reports() -> None:
    for step in range(3):
        train.report({"step": step})


def _ledger_pid() -> int:
    from compat_core.run.ledger import open_ledger

    probe = open_ledger(1)
    probe.close()
    return probe.pid


@pytest.mark.one_pass
def test_fits_share_the_ledgers_process_and_a_dead_one_is_replaced(ray_cluster, storage) -> None:
    """The run ledger's process starts once per driver process, not once per fit (that cost
    every fit 0.6-2.2 s); when it died between fits (the OOM killer, a user callback that took
    it down) the next fit starts another and keeps every report."""
    import signal

    def fit(name: str) -> train.Result:
        trainer = train.DataParallelTrainer(_three_reports, run_config=train.RunConfig(name=name, storage_path=storage))
        return trainer.fit()

    fit("first")
    pid = _ledger_pid()
    second = fit("second")
    assert _ledger_pid() == pid
    assert len(second.worker_metrics_dataframe) == 3
    os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 30
    while time.time() < deadline and os.path.exists(f"/proc/{pid}"):
        time.sleep(0.1)
    third = fit("third")
    assert list(third.worker_metrics_dataframe["step"]) == [0, 1, 2]
    assert _ledger_pid() != pid


def _resumes(config) -> None:
    """Reports where it started from, checkpoints one step further, and fails once."""
    checkpoint = train.get_checkpoint()
    start = None
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            start = int(Path(d, "step.txt").read_text())
    with tempfile.TemporaryDirectory() as d:
        Path(d, "step.txt").write_text(str((start or 0) + 1))
        train.report({"start": start}, checkpoint=train.Checkpoint.from_directory(d))
    marker = Path(config["marker"])
    if not marker.exists():
        marker.write_text("failed once")
        raise RuntimeError("preempted")


@pytest.mark.one_pass
@pytest.mark.extended_rerun
def test_resume_from_checkpoint_starts_the_first_attempt_and_later_ones_resume_their_own(
    backend, storage, monkeypatch
) -> None:
    """V1's ``Trainer(resume_from_checkpoint=...)``: the first attempt's ``get_checkpoint()``
    is that checkpoint, a retried attempt gets its own latest (raw V2 drops the argument and
    training silently starts from scratch)."""
    monkeypatch.setattr(usage, "_warned", set())  # "once" is per process
    given = Path(storage, "given")
    given.mkdir()
    (given / "step.txt").write_text("5")
    with pytest.warns(train.V1OnlyWarning) if backend == "v2" else contextlib.nullcontext():
        result = DataParallelTrainer(
            _resumes,
            train_loop_config={"marker": str(Path(storage, "marker"))},
            resume_from_checkpoint=train.Checkpoint.from_directory(str(given)),
            run_config=train.RunConfig(storage_path=storage, failure_config=train.FailureConfig(max_failures=1)),
        ).fit()
    assert list(result.worker_metrics_dataframe["start"]) == [5, 6]
    assert list(result.worker_metrics_dataframe["attempt"]) == [0, 1]
    assert any(u.kind == "resume-from-checkpoint" for u in result.v1_usage)


def _dies_then_loses_its_placement_group(config) -> None:
    """Attempt 0: rank 1 exits without a word after the first round (as a process the OOM
    killer took). Attempt 1: after its first round the run's placement group goes away (as
    Ray removes one whose node or job is gone), and every worker with it. Attempt 2 finishes."""
    import ray

    rank = train.get_context().get_world_rank()
    work = Path(config["work"])
    # Which attempt this is, read before the first report: read after it, a rank could see
    # what the other rank of the same attempt just wrote (CI saw rank 0 of attempt 0 remove
    # the group right after rank 1 exited: one failure instead of two).
    died, lost = (work / "died").exists(), (work / "lost").exists()
    train.report({"step": 0})
    if not died:
        if rank == 1:
            (work / "died").write_text("")
            os._exit(1)
    elif not lost:
        if rank == 1:  # its report is recorded: the group goes after this attempt's first round
            (work / "reported").write_text("")
        else:
            deadline = time.monotonic() + 60
            while not (work / "reported").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            (work / "lost").write_text("")
            ray.util.remove_placement_group(ray.util.get_current_placement_group())
        time.sleep(60)
    train.report({"step": 1})


@pytest.mark.one_pass
def test_a_dead_worker_and_a_lost_placement_group_each_reach_after_exception_once(backend, storage) -> None:
    """Failures without a Python exception: ``after_exception`` is called once per failure,
    after the rounds completed before it, naming the rank that died (the lost placement
    group: the ranks it took); the retries keep every report."""
    log = Path(storage, "calls.jsonl")
    result = train.DataParallelTrainer(
        _dies_then_loses_its_placement_group,
        train_loop_config={"work": storage},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(
            storage_path=storage, callbacks=[CallLog(str(log))], failure_config=train.FailureConfig(max_failures=2)
        ),
    ).fit()
    made = calls(log)
    kinds = [c[0] for c in made]
    assert kinds == ["report", "exception", "report", "exception", "report", "report"]
    assert list(made[1][1]) == ["1"]  # the rank that died, and only it
    assert set(made[3][1]) <= {"0", "1"} and made[3][1]  # the ranks the group took
    frame = result.worker_metrics_dataframe
    rows = sorted(zip(frame["attempt"], frame["world_rank"], frame["step"], strict=True))
    # Each attempt's first round from both ranks; the last attempt's second too. Nothing the
    # lost processes sent is missing, and nothing they did not send is made up. (Rank 0's
    # second report of attempt 0 is kept where the engine took it: V1's reports do not wait
    # for the other ranks, V2's do.)
    assert [r for r in rows if r[2] == 0] == [(a, rank, 0) for a in (0, 1, 2) for rank in (0, 1)]
    assert [r for r in rows if r[2] == 1 and r[0] > 0] == [(2, 0, 1), (2, 1, 1)]
    assert (0, 1, 1) not in rows
