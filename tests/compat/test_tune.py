"""``tune.Tuner(compat_trainer, param_space=...)`` on real Ray Tune, in both modes: the
V1 way of running a hyperparameter search, which raw V2 rejects, with compat's configs where
V1 code passes ``ray.train``'s (``Tuner(run_config=train.RunConfig(...))``, ``tune.run``)."""

from __future__ import annotations

import os
import tempfile

import pytest

import compat as train
from compat_core.run import tune

EPOCHS = 4
STOP_AT = 2  # ASHA's max_t: Tune stops every trial while its run is still going


def _train_fn(config):
    for epoch in range(EPOCHS):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "epoch"), "w") as f:
                f.write(str(epoch))
            train.report(
                {"loss": config["lr"] * (EPOCHS - epoch), "epoch": epoch}, checkpoint=train.Checkpoint.from_directory(d)
            )


def _train_fn_asking_its_trial(config):
    """:func:`_train_fn`, asking V1's trial API first (a V1-only behaviour the workers record
    while the trial runs, not known when its fit() starts; it reaches the ledger with the first
    report, before Tune can stop the trial at it)."""
    for epoch in range(EPOCHS):
        if epoch == 0:
            train.get_context().get_trial_name()
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "epoch"), "w") as f:
                f.write(str(epoch))
            train.report(
                {"loss": config["lr"] * (EPOCHS - epoch), "epoch": epoch}, checkpoint=train.Checkpoint.from_directory(d)
            )


def _warm_up_then_train(config):
    train.report({"warm_up": 1.0})  # no checkpoint: Tune keeps it as a result, in both modes
    _train_fn(config)


SWEEP = """
import json, os, sys, tempfile, time
import ray
from ray import tune
from ray.tune.schedulers import ASHAScheduler
import compat as train
from tests.compat.test_tune import STOP_AT, _train_fn_asking_its_trial, _warm_up_then_train

ray.init(num_cpus=2, include_dashboard=False, address="local")
trainer = train.torch.TorchTrainer(_train_fn_asking_its_trial, scaling_config=train.ScalingConfig(num_workers=1))
grid = tune.Tuner(
    trainer,
    param_space={"train_loop_config": {"lr": tune.grid_search([0.1, 1.0])}},
    tune_config=tune.TuneConfig(metric="loss", mode="min", scheduler=ASHAScheduler(max_t=STOP_AT, grace_period=1)),
    # V1 code passes train.RunConfig here; its nested configs left unset (Tune reads them).
    run_config=train.RunConfig(name="sweep", storage_path=sys.argv[1]),
).fit()
best = grid.get_best_result()
with open(os.path.join(best.checkpoint.path, "epoch")) as f:
    stored = f.read()
# Every CPU free again once the trials ended (under v2, the worker groups of the nested runs
# Tune stopped too).
deadline = time.monotonic() + 30
while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
    time.sleep(0.2)
free = ray.available_resources().get("CPU", 0)
# Each trial leaves its readiness record in its directory, counted under the sweep's job: ASHA
# stops every trial (its process ends at a report), so its record is the one written first.
from compat.readiness import _record as readiness
records = []
for trial_result in grid:
    lines = open(os.path.join(trial_result.path, readiness.RECORD_FILE)).read()
    records += [
        [r.job, r.path, r.outcome, r.mode, r.call_site, sorted(b.kind for b in r.behaviours)]
        for r in readiness.parse_lines(lines)[0]
    ]
trial_paths = sorted(r.path for r in grid)
sweep_report = train.migration_report(grid)
print("SWEEP " + json.dumps({
    "records": records, "trial_paths": trial_paths, "report": sweep_report.splitlines()[0], "report_text": sweep_report,
    "trials": len(grid), "errors": len(grid.errors), "config": best.config,
    "loss": best.metrics["loss"], "epoch": best.metrics["epoch"], "stored": stored,
    "epochs": list(best.metrics_dataframe["epoch"]), "free_cpus": free,
}), flush=True)
if free < 2:
    sys.exit(0)  # what follows would wait forever for the CPUs

# The experiment restored (finished: Tune gives back its trials), and tune.run with compat's
# nested configs, in the same cluster.
restored = tune.Tuner.restore(os.path.join(sys.argv[1], "sweep"), trainable=trainer).get_results()
warm_up_first = train.torch.TorchTrainer(_warm_up_then_train, scaling_config=train.ScalingConfig(num_workers=1))
analysis = tune.run(
    warm_up_first, config={"train_loop_config": {"lr": 0.5}}, name="run", storage_path=sys.argv[1], verbose=0,
    checkpoint_config=train.CheckpointConfig(num_to_keep=1), max_failures=1,
)
trial = analysis.trials[0]
kept = sorted(n for n in os.listdir(trial.path) if n.startswith("checkpoint_"))
print("RESTORED " + json.dumps({
    "trials": len(restored), "best": restored.get_best_result().config,
    "run": [trial.status, trial.last_result["loss"]], "kept": len(kept),
}))

# A plain Tune function trainable calling ray.train's functions, and compat's: the same rows.
import importlib


def function_trainable(config):
    api = importlib.import_module(config["api"])
    try:
        start = api.get_checkpoint()
        for i in range(2):
            api.report({"i": i, "resumed": start is not None, "rank": api.get_context().get_world_rank()})
    except Exception as error:  # what the call raised (its built-in class: compat's subclasses Ray's), as a result
        builtin = next(c for c in type(error).__mro__ if c.__module__ == "builtins")
        tune.report({"error": builtin.__name__ + ": " + str(error).splitlines()[0]})


rows = {}
for api in ("ray.train", "compat"):
    result = tune.Tuner(
        function_trainable, param_space={"api": api},
        run_config=tune.RunConfig(name="fn-" + api, storage_path=sys.argv[1]),
    ).fit()[0]
    frame = result.metrics_dataframe
    rows[api] = frame[[c for c in ("i", "resumed", "rank", "error") if c in frame]].to_dict("records")
print("FUNCTION " + json.dumps(rows))
ray.shutdown()
"""


@pytest.mark.ray
@pytest.mark.one_pass
@pytest.mark.parametrize("setting", ["0", "1"])
@pytest.mark.extended_cases("0")  # CI: V2's, and test_graduation.py's sweep of a compat trainer under V1
@pytest.mark.extended_rerun
def test_tuner_runs_a_compat_trainer_with_asha_in_both_modes(setting, tmp_path) -> None:
    """Runs in a Ray cluster of its own, started without the dashboard (as compat starts one):
    under v2, a trial Tune ends (ASHA's stop, ``max_t``) kills its nested V2 controller, and
    only compat frees that run's worker placement group then (docs/compatibility.md §24);
    Tuner.restore and tune.run follow in the same cluster."""
    import json
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_TRAIN_V2_ENABLED"] = setting
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", SWEEP, str(tmp_path)], env=env, capture_output=True, text=True, timeout=600
    )
    # Ray's own PlacementGroupCleaner fails loudly here (no dashboard, two clusters on the
    # machine): leave its lines out of what a failure shows.
    stderr = "\n".join(line for line in out.stderr.splitlines() if "PlacementGroupCleaner" not in line)
    lines = [line for line in out.stdout.splitlines() if line.startswith("SWEEP ")]
    assert lines, stderr[-6000:]
    sweep = json.loads(lines[-1].removeprefix("SWEEP "))
    assert (sweep["trials"], sweep["errors"]) == (2, 0)
    assert sweep["config"] == {"train_loop_config": {"lr": 0.1}}
    assert (sweep["loss"], sweep["epoch"]) == (pytest.approx(0.1 * (EPOCHS - STOP_AT + 1)), STOP_AT - 1)
    assert sweep["stored"] == str(STOP_AT - 1)  # the trial's last checkpoint, as reported
    # The scheduler saw every epoch of the best trial until it stopped it, as a V1 Trainer's
    # trial reports them.
    assert sweep["epochs"] == list(range(STOP_AT))
    assert sweep["free_cpus"] == 2  # nothing the sweep started still holds a CPU
    records = sweep["records"]
    assert {r[0] for r in records} == {"sweep"} and sorted({r[1] for r in records}) == sweep["trial_paths"]
    # One run per trial (the reader keeps a run's last line), stopped by ASHA before its end:
    # its record names what its workers relied on until Tune stopped it (the trial API, asked
    # after the trial started), and the trainer handed to Tune itself (raw V2's trainers are not
    # Tune trainables: the sweep breaks once the trainer is Ray's).
    assert len(records) >= 2 and {r[2] for r in records} <= {"unfinished", "stopped"}
    last = {r[1]: r for r in records}  # each trial's last line: the one the reader keeps
    assert [r[5] for r in last.values()] == [["trial-api", "tuner-with-trainer"]] * 2, records
    assert {r[3] for r in records} == {"v1" if setting == "0" else "v2"}
    # compat.migration_report of the ResultGrid: what its trials' records hold.
    assert sweep["report"] == "Sweep 'sweep' (2 trials), " + (
        "V1-only behaviours its trials relied on (they change when V2 is on), worst first:"
        if setting == "0"
        else "changed by the flip: its trials have V2's semantics and relied on behaviours V1 gives otherwise, "
        "worst first:"
    )
    assert "  trial-api [breaks]: 2x in 2 of 2 trials" in sweep["report_text"], sweep["report_text"]
    assert "  tuner-with-trainer [breaks]: 2x in 2 of 2 trials" in sweep["report_text"], sweep["report_text"]
    assert "python -m migrate: RTM117" in sweep["report_text"]
    fit_line = SWEEP.splitlines().index(").fit()") + 1
    assert {r[4] for r in records} == {f"<string>:{fit_line}"}  # the sweep's fit() in the driver's program
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESTORED ")]
    assert lines, stderr[-6000:]
    restored = json.loads(lines[-1].removeprefix("RESTORED "))
    assert (restored["trials"], restored["best"]) == (2, {"train_loop_config": {"lr": 0.1}})
    assert restored["run"] == ["TERMINATED", pytest.approx(0.5)]
    assert restored["kept"] == 1  # tune.run kept compat's CheckpointConfig(num_to_keep=1)
    # compat's report/get_checkpoint/get_context in a Tune function trainable: as ray.train's.
    lines = [line for line in out.stdout.splitlines() if line.startswith("FUNCTION ")]
    assert lines, stderr[-6000:]
    rows = json.loads(lines[-1].removeprefix("FUNCTION "))
    assert rows["compat"] == rows["ray.train"]
    if setting == "0":  # reported to Tune, as raw V1's
        assert rows["compat"] == [{"i": i, "resumed": False, "rank": None} for i in range(2)]  # no rank: Tune
    else:  # raw V2's DeprecationWarning, first line
        assert [r["error"].split(":")[0] for r in rows["compat"]] == ["DeprecationWarning"]
    # No warning the user did not cause: compat hands Tune its own Checkpoint class, and a report
    # without a checkpoint is no free-floating report in a trial (Tune keeps it as a result).
    output = out.stdout + out.stderr
    assert "The `Checkpoint` class should be imported" not in output
    warned = [line for line in output.splitlines() if "V1OnlyWarning" in line]
    # v2: the trial API, as asked, and the trainer handed to Tune, at the line that did it
    assert all("[trial-api]" in line or "[tuner-with-trainer]" in line for line in warned), warned
    handed = [line for line in warned if "[tuner-with-trainer]" in line]
    assert (setting == "1") == any(f"<string>:{fit_line}: V1OnlyWarning" in line for line in handed), handed


def test_param_space_merges_like_v1_and_names_unknown_keys() -> None:
    trainer = train.torch.TorchTrainer(
        _train_fn, train_loop_config={"lr": 1.0, "opt": {"momentum": 0.9, "nesterov": True}}
    )
    trial = tune.with_sample(
        trainer, {"train_loop_config": {"opt": {"momentum": 0.5}}, "scaling_config": {"num_workers": 2}}
    )
    assert trial.train_loop_config == {"lr": 1.0, "opt": {"momentum": 0.5, "nesterov": True}}
    assert trial.scaling_config.num_workers == 2
    assert trainer.train_loop_config["opt"]["momentum"] == 0.9  # the trainer itself is untouched
    with pytest.raises(ValueError, match=r"got 'lr'.*under 'train_loop_config'"):
        tune.with_sample(trainer, {"lr": 0.1})
    with pytest.raises(ValueError, match=r"got 'params'"):
        tune.with_sample(trainer, {"params": {"eta": 0.1}})  # only the tree trainers' V1 form has params
    merged = tune.with_sample(trainer, {"params": {"eta": 0.1}}, takes_params=True)  # what that form passes
    assert merged.train_loop_config == {**trainer.train_loop_config, "eta": 0.1}


@pytest.mark.one_pass
def test_the_group_watcher_is_only_started_in_a_trial_and_a_registration_that_fails_lets_the_run_go_on(
    ray_cluster, caplog
) -> None:
    """The watcher's guards (v2/groups.py): outside an actor there is no trial whose death
    could take a controller with it, so no watcher; a watcher that is gone is logged, and the
    worker group still trains (the callback returns)."""
    import ray

    from v2 import groups

    assert groups.start_watcher() is None  # the driver is not an actor

    @ray.remote(num_cpus=0)
    class Gone:
        def ready(self) -> None:
            pass

    watcher = Gone.remote()
    ray.get(watcher.ready.remote())
    ray.kill(watcher)
    group = ray.util.placement_group([{"CPU": 0.01}])
    ray.get(group.ready())

    class WorkerGroup:  # stands for V2's WorkerGroup: only the state the callback reads
        def get_worker_group_state(self):
            return type("State", (), {"placement_group_handle": type("Handle", (), {"placement_group": group})})()

    try:
        with caplog.at_level("WARNING", logger="v2.groups"):
            groups.RegisterGroups(watcher).after_worker_group_start(WorkerGroup())
    finally:
        ray.util.remove_placement_group(group)
    assert "could not register a worker group with its watcher" in caplog.text
