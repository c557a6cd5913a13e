"""Job-level restore, V1's ``Trainer.restore(path)``/``Trainer.can_restore(path)``, in both
modes: the V1 fault-tolerance idiom (after the driver died, a new driver resumes the experiment
from its latest checkpoint) with only its imports moved to compat."""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pyarrow.fs as pafs
import pytest

import compat as train
from compat.errors import RestoreError
from compat.torch import TorchTrainer
from compat_core.files.storage import resolve
from compat_core.migration import usage
from compat_core.releases import facts
from compat_core.semantics import restore
from tests.compat.calls import CallLog, calls

EPOCHS = 4


def _score(checkpoint, config) -> dict:
    """Each checkpoint's validation (compat's ledger runs it: V1 semantics)."""
    return {"score": config["epoch"] * 10.0}


def _score_of(checkpoint, epoch: int) -> dict:
    return {"score": epoch * 10.0}


def _epochs(config) -> None:
    """V1's documented pattern: resume from ``get_checkpoint()``; the first run is cut off
    after the checkpoint of epoch ``config["cut_at"]`` (as a driver or head node lost).
    Each checkpoint is validated (``score``)."""
    start = 0
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            start = int(Path(d, "epoch").read_text()) + 1
    for epoch in range(start, EPOCHS):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "epoch").write_text(str(epoch))
            train.report(
                {"epoch": epoch, "start": start, "lr": config["lr"]},
                checkpoint=train.Checkpoint.from_directory(d),
                validate_fn=_score,
                validate_config={"epoch": epoch},
            )
        if epoch == config["cut_at"] and start == 0:
            raise RuntimeError("the head node went away")


@pytest.mark.ray
@pytest.mark.one_pass
@pytest.mark.extended_rerun  # CI: V1's restore on V2's engine in test_storage_paths.py's second pass
def test_restore_resumes_an_interrupted_run_from_its_latest_checkpoint(backend, storage, monkeypatch) -> None:
    monkeypatch.setattr(usage, "_warned", set())  # "once" is per process
    experiment = os.path.join(storage, "job")
    warns = pytest.warns(train.V1OnlyWarning) if backend == "v2" else contextlib.nullcontext()
    with warns:  # V2 has no job-level restore: the guard warns (once per process)
        assert not TorchTrainer.can_restore(experiment)
    trainer = TorchTrainer(
        _epochs,
        train_loop_config={"lr": 0.1, "cut_at": 1},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(name="job", storage_path=storage),
    )
    with pytest.raises(train.TrainingFailedError):
        trainer.fit()

    # A new driver: the V1 guard, then restore with nothing but the path.
    assert TorchTrainer.can_restore(experiment)
    restored = TorchTrainer.restore(experiment)
    assert restored.scaling_config.num_workers == 2  # the first run's configuration, kept
    result = restored.fit()

    frame = result.worker_metrics_dataframe
    assert list(frame[frame["world_rank"] == 0]["epoch"]) == [2, 3]  # resumed after epoch 1's checkpoint
    assert set(frame["start"]) == {2} and set(frame["lr"]) == {0.1}
    assert result.metrics["epoch"] == EPOCHS - 1
    # The earlier run's checkpoints are kept with the new ones, where each engine keeps them,
    # each with its validation's metrics (the first driver's too).
    assert [m["epoch"] for _, m in result.best_checkpoints] == list(range(EPOCHS))
    assert [m.get("score") for _, m in result.best_checkpoints] == [10.0 * e for e in range(EPOCHS)]
    assert [c.status for c in result.reported_checkpoints] == [train.CheckpointStatus.VALIDATED] * EPOCHS
    if backend == "v1":  # V1: one trial; its log has the earlier run's rows, then the new ones
        assert list(result.metrics_dataframe["epoch"]) == list(range(EPOCHS))
        assert list(result.metrics_dataframe["training_iteration"]) == [1, 2, 3, 4]
        names = sorted(n for n in os.listdir(result.path) if re.fullmatch(r"checkpoint_\d+", n))
        assert names == [f"checkpoint_{i:06d}" for i in range(EPOCHS)]  # numbered on
    else:
        assert any(u.kind == "restore" for u in result.v1_usage)
    assert result.config == {"train_loop_config": {"lr": 0.1, "cut_at": 1}}  # V1's content, both modes
    # Read back from its directory by a new driver: what the fit returned, by the same semantics.
    loaded = train.Result.from_path(result.path)
    assert loaded.metrics["epoch"] == EPOCHS - 1 and loaded.checkpoint.path == result.checkpoint.path
    assert [m["epoch"] for _, m in loaded.best_checkpoints] == list(range(EPOCHS))
    assert [m.get("score") for _, m in loaded.best_checkpoints] == [10.0 * e for e in range(EPOCHS)]
    assert list(loaded.metrics_dataframe["epoch"]) == list(result.metrics_dataframe["epoch"])
    assert loaded.config["train_loop_config"] == {"lr": 0.1, "cut_at": 1}
    # Every worker's reports of both fits, stored with the run: the first driver's, then these.
    workers = loaded.worker_metrics_dataframe
    assert list(workers["epoch"]) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert list(workers["world_rank"]) == [0, 1] * EPOCHS and set(workers["lr"]) == {0.1}


def _epochs_until_killed(config) -> None:
    """Epochs with a validated checkpoint each; the first run, after epoch 1, waits for its
    driver to be killed (each rank once: a restored run goes on)."""
    start = 0
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            start = int(Path(d, "epoch").read_text()) + 1
    waited = Path(f"{config['waited']}.{train.get_context().get_world_rank()}")
    for epoch in range(start, EPOCHS):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "epoch").write_text(str(epoch))
            saved = train.Checkpoint.from_directory(d)
            validation = train.ValidationTaskConfig(fn_kwargs={"epoch": epoch})
            train.report({"epoch": epoch, "start": start}, checkpoint=saved, validation=validation)
        if epoch == 1 and not waited.exists():
            waited.write_text("")
            time.sleep(600)


KILLED_DRIVER = """
import sys
import compat as train
from compat.torch import TorchTrainer
from tests.compat.test_restore import _epochs_until_killed, _score_of

TorchTrainer(
    _epochs_until_killed,
    train_loop_config={"waited": sys.argv[2]},
    scaling_config=train.ScalingConfig(num_workers=2),
    run_config=train.RunConfig(name="job", storage_path=sys.argv[1]),
    # No CPU: the workers hold the machine's two while the run waits to be killed.
    validation_config=train.ValidationConfig(fn=_score_of, ray_remote_kwargs={"num_cpus": 0}),
).fit()
"""


@pytest.mark.ray
@pytest.mark.one_pass
@pytest.mark.extended_cases("v2")  # restore is V1's API: CI kills the driver of a v1 run
@pytest.mark.extended_rerun
def test_a_restore_after_the_driver_was_killed_keeps_every_report_of_both_drivers(
    backend, storage, tmp_path, monkeypatch
) -> None:
    """SIGKILL of the driver mid-run (its run ledger's host dies with it, and its fit() never
    stores its workers' reports nor its validations' outcomes), then a restore by a new driver:
    ``Result.from_path`` on the run has every report of both drivers, the killed one's first, and
    the restored fit and ``from_path`` every checkpoint's validation, the killed driver's too."""
    import ray

    from compat_core.semantics.records import journaled_records, journaled_validations

    experiment = os.path.join(storage, "job")
    rays_engine_validates = backend == "v2" and facts.VALIDATION  # else compat's ledger, journaled
    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address}
    env["RAY_TRAIN_V2_ENABLED"] = "1" if backend == "v2" else "0"
    script = tmp_path / "driver.py"
    script.write_text(KILLED_DRIVER)
    log = tmp_path / "driver.log"
    with open(log, "w") as out:
        argv = [sys.executable, str(script), storage, str(tmp_path / "waited")]
        driver = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        # The killed driver's journal, named in the experiment's restore state, has both
        # workers' reports of epochs 0 and 1: the run is waiting to be killed.
        journal = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and driver.poll() is None:
            if journal is None and restore.can_restore(experiment):
                journal = restore.load(experiment).state.journals[-1][1]
            if (
                journal is not None
                and os.path.exists(journal)
                and len(list(journaled_records(journal))) == 4
                and len(journaled_validations(journal)) == (0 if rays_engine_validates else 2)
            ):
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the driver did not reach epoch 1 (exit {driver.poll()}):\n{log.read_text()[-4000:]}")
    finally:
        driver.kill()  # SIGKILL
        driver.wait()
    killed = list(journaled_records(journal))
    monkeypatch.setattr(usage, "_warned", set())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", train.V1OnlyWarning)  # restore is V1-only under v2
        result = TorchTrainer.restore(experiment).fit()

    assert result.metrics["epoch"] == EPOCHS - 1
    workers = train.Result.from_path(result.path).worker_metrics_dataframe
    restored = result.worker_metrics_dataframe
    assert list(workers["epoch"]) == [0, 0, 1, 1] + list(restored["epoch"])
    assert list(workers["world_rank"]) == [0, 1, 0, 1] + list(restored["world_rank"])
    assert sorted(r.metrics["epoch"] for r in killed) == [0, 0, 1, 1]
    scores = [m.get("score") for _, m in result.best_checkpoints]
    assert [m.get("score") for _, m in train.Result.from_path(result.path).best_checkpoints] == scores
    if not rays_engine_validates:  # compat's ledger validated the killed driver's checkpoints
        assert scores == [10.0 * e for e in range(EPOCHS)]
    assert not os.path.exists(journal)  # read into the run's directory, then removed


@pytest.mark.ray
@pytest.mark.one_pass
@pytest.mark.parametrize("setting", ["0", "1"])
@pytest.mark.extended_cases("0")  # CI: a run started under V2, restored under V1
@pytest.mark.extended_rerun
def test_a_run_restored_after_the_switch_flipped_starts_from_its_latest_checkpoint(
    setting: str, ray_cluster, storage, monkeypatch
) -> None:
    """The first driver ran one semantics, the one that restores runs the other (a team that
    flipped RAY_TRAIN_V2_ENABLED between the crash and the restart): the other engine's
    directory has nothing its engine resumes, so the run starts from the latest checkpoint."""
    monkeypatch.setattr(usage, "_warned", set())
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", setting)
    experiment = os.path.join(storage, "job")
    trainer = TorchTrainer(
        _epochs,
        train_loop_config={"lr": 0.1, "cut_at": 1},
        run_config=train.RunConfig(name="job", storage_path=storage),
    )
    with pytest.raises(train.TrainingFailedError):
        trainer.fit()
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1" if setting == "0" else "0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = TorchTrainer.restore(experiment).fit()
    # compat, not the user, chose where the run starts: Ray's deprecation of
    # resume_from_checkpoint is not raised for it.
    assert not [w for w in caught if "resume_from_checkpoint" in str(w.message)]
    frame = result.worker_metrics_dataframe
    assert list(frame["epoch"]) == [2, 3] and set(frame["start"]) == {2}
    assert result.metrics["epoch"] == EPOCHS - 1


def test_tuners_restore_of_a_trainers_run_on_v2s_engine_says_what_resumes_it(tmp_path: Path) -> None:
    """V1's engine runs every fit() as a Tune experiment, so V1-era code may ask Tune to restore a
    trainer's run: on V2's engine ``Tuner.can_restore`` answers as V1's does, ``Tuner.restore``
    fails at once naming the call that resumes the run (docs/compatibility.md §28)."""
    from ray import tune

    experiment = resolve(str(tmp_path), None, "job")
    on_v2_engine = restore.TrainerState(TorchTrainer, {"train_loop_per_worker": _epochs}, {"name": "job", "id": "x"})
    restore.save(experiment, on_v2_engine)
    assert tune.Tuner.can_restore(str(tmp_path / "job"))
    with pytest.raises(
        RestoreError, match=r"TorchTrainer run .* Resume it with TorchTrainer\.restore\(path\)\.fit\(\)"
    ):
        tune.Tuner.restore(str(tmp_path / "job"), trainable=TorchTrainer(_epochs))
    assert not restore.has_tune_state(experiment)  # V1's engine, after a flip, resumes it as a V2 engine's run

    (tmp_path / "job" / restore.TUNE_STATE).write_bytes(pickle.dumps({"_tuner_kwargs": {}}))  # Tune's own
    restore.save(experiment, on_v2_engine)  # a restored fit() on V2's engine leaves Tune's file as it is
    assert restore.has_tune_state(experiment)
    ran_on_v1s_engine = resolve(str(tmp_path), None, "v1")
    restore.save(ran_on_v1s_engine, restore.TrainerState(TorchTrainer, {"train_loop_per_worker": _epochs}))
    assert not tune.Tuner.can_restore(str(tmp_path / "v1"))  # V1's engine writes Tune's file itself


def test_can_restore_and_restore_say_what_a_path_holds(tmp_path: Path) -> None:
    assert not TorchTrainer.can_restore(tmp_path / "missing")
    with pytest.raises(ValueError, match="does not exist"):
        TorchTrainer.restore(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RestoreError, match="an empty directory"):
        TorchTrainer.restore(tmp_path / "empty")
    trial = tmp_path / "exp" / "TorchTrainer_abc_00000_0_2026"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text("")
    with pytest.raises(RestoreError, match=r"trial directory \(pass its parent"):
        TorchTrainer.restore(trial)
    (tmp_path / "v2run").mkdir()
    (tmp_path / "v2run" / restore.V2_SNAPSHOT).write_text("{}")
    with pytest.raises(RestoreError, match="a V2 run"):
        TorchTrainer.restore(tmp_path / "v2run")


def test_restore_keeps_the_first_run_arguments_and_asks_for_datasets_again(tmp_path: Path) -> None:
    """Through any pyarrow filesystem: the state the first fit() stored, built again."""
    filesystem = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    experiment = resolve("runs", filesystem, "job")
    first = TorchTrainer(
        _epochs,
        train_loop_config={"lr": 0.1},
        scaling_config=train.ScalingConfig(num_workers=2),
        datasets={"train": object()},
        run_config=train.RunConfig(name="job", storage_path="runs", storage_filesystem=filesystem),
    )
    restore.save(experiment, restore.TrainerState(TorchTrainer, first._init_arguments))
    assert TorchTrainer.can_restore("runs/job", storage_filesystem=filesystem)
    with pytest.raises(RestoreError, match=r"the run had \['train'\], the call gave \[\]"):
        TorchTrainer.restore("runs/job", storage_filesystem=filesystem)
    again = TorchTrainer.restore("runs/job", storage_filesystem=filesystem, datasets={"train": "new"})
    assert again.train_loop_per_worker is _epochs and again.datasets == {"train": "new"}
    assert again.scaling_config.num_workers == 2 and again.run_config.name == "job"
    with pytest.raises(RestoreError, match=r"started by TorchTrainer.*TorchTrainer.restore\(path\)"):
        train.DataParallelTrainer.restore("runs/job", storage_filesystem=filesystem, datasets={"train": "new"})


def test_a_tree_trainer_in_v1_form_is_restored_in_that_form(tmp_path: Path) -> None:
    from compat.xgboost import XGBoostTrainer

    first = XGBoostTrainer(
        params={"eta": 0.3}, label_column="y", num_boost_round=3, datasets={"train": "data"}, verbose_eval=False
    )
    restore.save(resolve(str(tmp_path), None, "trees"), restore.TrainerState(XGBoostTrainer, first._init_arguments))
    again = XGBoostTrainer.restore(tmp_path / "trees", datasets={"train": "data again"})
    assert again.legacy_form and again.train_loop_config == {"eta": 0.3}
    assert again.train_loop_per_worker.keywords["num_boost_round"] == 3  # V1's form, built again
    assert again.datasets == {"train": "data again"}


def test_a_run_started_by_rays_own_v1_trainer_is_restored_by_compats(tmp_path: Path) -> None:
    """A team whose imports moved to compat mid-experiment: Ray's V1 ``trainer.pkl``."""
    from ray import cloudpickle
    from ray.air.config import RunConfig, ScalingConfig
    from ray.train.torch.torch_trainer import TorchTrainer as RayTorchTrainer

    arguments = {
        "train_loop_per_worker": _epochs,
        "train_loop_config": {"lr": 0.1},
        "scaling_config": ScalingConfig(num_workers=2),
        "run_config": RunConfig(name="job", storage_path=str(tmp_path)),
    }
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / restore.RAY_V1_STATE).write_bytes(cloudpickle.dumps((RayTorchTrainer, arguments)))
    assert TorchTrainer.can_restore(tmp_path / "job")
    again = TorchTrainer.restore(tmp_path / "job")
    assert again.train_loop_per_worker is _epochs and again.train_loop_config == {"lr": 0.1}
    assert again.scaling_config.num_workers == 2 and again.run_config.name == "job"


def _v1_trial(directory: Path) -> Path:
    """A V1 trial directory as V1's engine writes one: rows, and the checkpoints still kept."""
    import json

    trial = directory / "exp" / "TorchTrainer_abc_00000_0_2026"
    trial.mkdir(parents=True)
    rows = [
        {"loss": 3.0, "training_iteration": 1, "checkpoint_dir_name": "checkpoint_000000", "config": {"lr": 1}},
        {"loss": 2.0, "training_iteration": 2, "checkpoint_dir_name": None, "config": {"lr": 1}},
        {"loss": 1.0, "training_iteration": 3, "checkpoint_dir_name": "checkpoint_000001", "config": {"lr": 1}},
        {"loss": 0.5, "training_iteration": 4, "checkpoint_dir_name": None, "config": {"lr": 1}},
    ]
    (trial / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("checkpoint_000000", "checkpoint_000001"):
        (trial / name).mkdir()
    return trial


@pytest.mark.parametrize("setting", ["0", "1"])
def test_result_from_path_reads_a_trial_by_the_selected_semantics(setting: str, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", setting)
    trial = _v1_trial(tmp_path)
    result = train.Result.from_path(str(trial))
    assert result.backend == ("v1" if setting == "0" else "v2")
    assert result.checkpoint is not None and result.checkpoint.path.endswith("checkpoint_000001")
    assert [m["loss"] for _, m in result.best_checkpoints] == [3.0, 1.0]
    assert result.config == {"lr": 1}
    assert result.worker_metrics_dataframe is None  # not a run compat started
    assert [c.status.value for c in result.reported_checkpoints] == ["COMMITTED", "COMMITTED"]  # none validated
    if setting == "0":  # V1: every report; the last one
        assert list(result.metrics_dataframe["loss"]) == [3.0, 2.0, 1.0, 0.5]
        assert result.metrics["loss"] == 0.5 and result.metrics["training_iteration"] == 4
    else:  # V2: the checkpoints' reports; the latest checkpoint's
        assert list(result.metrics_dataframe["loss"]) == [3.0, 1.0]
        assert result.metrics == {"loss": 1.0}


def test_result_from_path_says_what_a_path_holds(tmp_path: Path) -> None:
    from compat.errors import ResultNotFoundError

    with pytest.raises(ResultNotFoundError, match="does not exist"):
        train.Result.from_path(tmp_path / "missing")
    _v1_trial(tmp_path)
    with pytest.raises(ResultNotFoundError, match=r"experiment directory: pass one of its trial directories \(Torch"):
        train.Result.from_path(tmp_path / "exp")


def _exits_after_restore(config) -> None:
    """The first driver's run fails after a checkpoint; in the restored run rank 1's process
    exits without a word (the OOM killer, a lost node)."""
    rank = train.get_context().get_world_rank()
    with tempfile.TemporaryDirectory() as d:
        train.report({"step": 0}, checkpoint=train.Checkpoint.from_directory(d))
    if not Path(config["work"], "restored").exists():
        raise RuntimeError("the head node went away")
    if rank == 1:
        os._exit(1)
    train.report({"step": 1})


@pytest.mark.ray
@pytest.mark.extended_rerun
def test_a_restored_run_reports_a_worker_that_dies_to_after_exception(v1, storage) -> None:
    """Ray's V1 engine runs a restored experiment with the Tune callbacks it pickled with it:
    a failure a worker process cannot report itself still reaches ``after_exception`` (on
    V2's engine, in CI's second pass, the restored run is V2's own)."""
    log = Path(storage, "calls.jsonl")
    trainer = train.DataParallelTrainer(
        _exits_after_restore,
        train_loop_config={"work": storage},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(name="job", storage_path=storage, callbacks=[CallLog(str(log))]),
    )
    with pytest.raises(train.TrainingFailedError):
        trainer.fit()
    first = calls(log)
    assert first[0] == ["report", 0] and set(first[1][1].values()) == {"RuntimeError"}
    log.unlink()
    Path(storage, "restored").write_text("")

    with pytest.raises(train.TrainingFailedError, match="worker 1: (ActorDiedError|WorkerHealthCheckFailedError)"):
        train.DataParallelTrainer.restore(os.path.join(storage, "job")).fit()
    made = calls(log)
    assert made[-1][0] == "exception" and list(made[-1][1]) == ["1"]  # the process that exited
    assert [c[0] for c in made].count("exception") == 1


@pytest.mark.parametrize(
    "snapshot",
    ["{}", "not json", '{"checkpoint_results": [{"metrics": {}}], "latest_checkpoint_result": null}'],
    ids=["empty", "not-json", "no-checkpoint-name"],
)
def test_a_corrupt_v2_snapshot_is_rays_error_on_every_release(tmp_path: Path, snapshot: str, monkeypatch) -> None:
    """A V2 run directory whose checkpoint manager snapshot is corrupt: reading it is the error
    Ray's own V2 reading raises (the oracle, where Ray's reads runs: from 2.52), on every release,
    whichever of Ray or compat reads it."""
    from compat_core.releases import adapters, facts, standins

    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1")
    run = tmp_path / "run"
    run.mkdir()
    (run / restore.V2_SNAPSHOT).write_text(snapshot)
    rays_error = adapters.v2_snapshot_error()
    with pytest.raises(rays_error):
        standins.v2_result_from_snapshot(str(run), pafs.LocalFileSystem())
    with pytest.raises(rays_error):
        train.Result.from_path(run)
    if not facts.V2_READS_RUNS:
        assert [p.name for p in run.iterdir()] == [restore.V2_SNAPSHOT]  # compat's read wrote nothing
        return
    from ray.train.v2.api.result import Result as RaysResult

    with pytest.raises(rays_error):
        RaysResult.from_path(str(run))


class _Scorer:
    """A validation metric of the user's own class (stored pickled, loaded only when trusted)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Scorer)


def test_storing_validation_outcomes_keeps_the_earlier_fits_whatever_the_storage_does(
    tmp_path: Path, monkeypatch
) -> None:
    """The next fit's outcomes are added to the stored ones: a storage that cannot be read at that
    moment (an object store's outage; simulated: pyarrow's error raised from the existence check)
    fails the store, leaving the earlier fits' outcomes as they were, not replaced by the new
    fit's alone, and costs a fit reading them only them, with a warning (its result comes first);
    a file that reads as nothing (corrupt) is replaced."""
    from compat_core.files.pickled import CorruptStoredDataWarning
    from compat_core.files.storage import RunStorage, at
    from compat_core.semantics import validations
    from compat_core.semantics.rounds import CheckpointStatus, ReportRound, ValidationOutcome

    run = at(str(tmp_path / "run"))

    def validated(name: str, score: float) -> list[ReportRound]:
        outcome = ValidationOutcome(CheckpointStatus.VALIDATED, {"score": score})
        return [ReportRound(0, (), checkpoint_dir_name=name, validation=outcome)]

    def stored() -> dict:
        return {r.checkpoint_dir_name: r.validation.metrics for r in validations.read(run)}

    validations.write(run, validated("checkpoint_000000", 1.0))
    with monkeypatch.context() as m:

        def unreachable(self, name=""):
            raise OSError("When getting information for key 'run/compat_validations.pkl': AWS Error NETWORK_CONNECTION")

        m.setattr(RunStorage, "exists", unreachable)
        with pytest.raises(OSError, match="NETWORK_CONNECTION"):
            validations.write(run, validated("checkpoint_000001", 2.0))
        # A fit reading them for its result (a restore's) goes on without them, warned.
        with pytest.warns(CorruptStoredDataWarning, match="NETWORK_CONNECTION"):
            assert validations.read(run) == []
    assert stored() == {"checkpoint_000000": {"score": 1.0}}
    validations.write(run, validated("checkpoint_000001", 2.0))
    assert stored() == {"checkpoint_000000": {"score": 1.0}, "checkpoint_000001": {"score": 2.0}}
    (tmp_path / "run" / validations.FILE).write_bytes(b"\x80\x04not a pickle")
    validations.write(run, validated("checkpoint_000002", 3.0))
    assert stored() == {"checkpoint_000002": {"score": 3.0}}


def test_validation_outcomes_stored_with_a_run_read_back_by_each_semantics(tmp_path: Path, monkeypatch) -> None:
    """The outcomes compat's ledger ran, written as a fit ends (a later fit's added), merged into
    what ``Result.from_path`` reads by either semantics; a value of the user's own class comes
    back as a ``StoredValue`` unless trusted; a file that cannot be read costs only the
    validations, with a warning naming it."""
    from compat_core.files.pickled import CorruptStoredDataWarning, StoredValue
    from compat_core.files.storage import at
    from compat_core.semantics import validations
    from compat_core.semantics.rounds import CheckpointStatus, ReportRound, ValidationOutcome

    trial = _v1_trial(tmp_path)
    run = at(str(trial))

    def round_(name: str, status: CheckpointStatus, metrics: dict) -> ReportRound:
        return ReportRound(0, (), checkpoint_dir_name=name, validation=ValidationOutcome(status, metrics))

    class Calibration:  # a value Ray's cloudpickle carried from the validation task, by value
        def __eq__(self, other: object) -> bool:
            return type(other).__name__ == "Calibration"

    validations.write(run, [round_("checkpoint_000000", CheckpointStatus.VALIDATION_FAILED, {})])
    validated = {"acc": 0.9, "s": _Scorer(), "calibration": Calibration()}
    validations.write(run, [round_("checkpoint_000001", CheckpointStatus.VALIDATED, validated)])
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "0")
    v1 = train.Result.from_path(str(trial))
    assert [m.get("acc") for _, m in v1.best_checkpoints] == [None, 0.9]
    assert [c.status for c in v1.reported_checkpoints] == [
        CheckpointStatus.VALIDATION_FAILED,
        CheckpointStatus.VALIDATED,
    ]
    assert list(v1.metrics_dataframe["acc"].fillna(-1)) == [-1, -1, 0.9, -1]  # the checkpoint's row
    assert isinstance(v1.best_checkpoints[1][1]["s"], StoredValue)
    trusted = train.Result.from_path(str(trial), trust_stored_objects=True).best_checkpoints[1][1]
    assert trusted["s"] == _Scorer() and trusted["calibration"] == Calibration()
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1")
    v2 = train.Result.from_path(str(trial))
    assert v2.metrics["acc"] == 0.9 and list(v2.metrics_dataframe["acc"].fillna(-1)) == [-1, 0.9]
    (trial / validations.FILE).write_bytes(b"\x80\x04not a pickle")
    with pytest.warns(CorruptStoredDataWarning, match=validations.FILE):
        cut = train.Result.from_path(str(trial))
    assert [m["loss"] for _, m in cut.best_checkpoints] == [3.0, 1.0] and "acc" not in cut.metrics
