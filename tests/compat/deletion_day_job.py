"""A V1-era job migrated onto compat (``--target compat``), run by tests/compat/test_deletion_day.py
before and after the day Ray deletes Train V1 (tests/deletion/sitecustomize.py), with
``RAY_TRAIN_V2_ENABLED=0`` and ``COMPAT_V1_ENGINE`` unset. Prints one JSON line of what each part
gave, ``RESULTS {...}``, the same on both days where V1's results are kept.

    python deletion_day_job.py STORAGE PARTS [EARLIER_RUN]

PARTS: which of ``job,retried,restored,sweep`` to run (comma-separated); EARLIER_RUN: a run
directory written on the day before, read back with ``Result.from_path``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

# isort: off
import compat as train  # before ray.tune, which imports ray.train: a Ray may refuse =0 there (§34)
from ray import tune

# isort: on
from compat import session
from compat.torch import TorchTrainer
from compat_core import switch


def epochs(config):
    """Three epochs: the first two through compat.session (V1's session API), a checkpoint each."""
    start = 0
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            start = int(Path(d, "epoch").read_text()) + 1
    for epoch in range(start, 3):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "epoch").write_text(str(epoch))
            metrics = {"epoch": epoch, "loss": config.get("lr", 0.1) / (epoch + 1), "start": start}
            report = session.report if epoch < 2 else train.report
            report(metrics, checkpoint=train.Checkpoint.from_directory(d))
        train.report({"epoch": epoch, "free_floating": True})  # V1 keeps it; V2 drops it
        fail_at = config.get("fail_at")
        if fail_at is not None and epoch == fail_at and not Path(config["marker"]).exists():
            Path(config["marker"]).write_text("")
            raise RuntimeError("the first attempt fails")


def rows(result) -> dict[str, object]:
    frame = result.metrics_dataframe
    return {
        "rows": len(frame),
        "epochs": [int(e) for e in frame["epoch"]],
        "last": {k: result.metrics[k] for k in ("epoch", "free_floating") if k in result.metrics},
        "checkpoint": Path(result.checkpoint.path).name if result.checkpoint else None,
        "progress_csv": os.path.exists(os.path.join(result.path, "progress.csv")),
    }


PARTS = ("job", "retried", "restored", "sweep")


def main(storage: str, earlier_run: str | None = None, parts: tuple[str, ...] = PARTS) -> dict[str, object]:
    """Run ``parts`` of the job (the README's ``job`` always: the earlier day's run is its)."""
    out: dict[str, object] = {"mode": str(switch.mode())}

    def trainer(name: str, **loop_config: object) -> TorchTrainer:
        return TorchTrainer(
            epochs,
            train_loop_config=loop_config,
            scaling_config=train.ScalingConfig(num_workers=2),
            run_config=train.RunConfig(name=name, storage_path=storage),
        )

    # The README's job: every report kept.
    job = trainer("job").fit()
    out["job"], out["job_path"] = rows(job), job.path

    if "retried" in parts:  # the first attempt fails after epoch 1's checkpoint; V1 retries from it
        retried = trainer("retried", fail_at=1, marker=os.path.join(storage, "retried.marker"))
        retried.run_config.failure_config = train.FailureConfig(max_failures=1)
        out["retried"] = rows(retried.fit())

    if "restored" in parts:  # an interrupted run restored from its path by TorchTrainer.restore
        interrupted = trainer("restored", fail_at=0, marker=os.path.join(storage, "restored.marker"))
        try:
            interrupted.fit()
        except train.TrainingFailedError:
            out["restored_first_attempt_failed"] = True
        experiment = os.path.join(storage, "restored")
        out["can_restore"] = TorchTrainer.can_restore(experiment)
        out["restored"] = rows(TorchTrainer.restore(experiment).fit())

    if "sweep" in parts:  # a Tune sweep of a compat trainer: each trial's every report
        grid = tune.Tuner(
            trainer("sweep-trainer"),
            param_space={"train_loop_config": {"lr": tune.grid_search([0.1, 0.2])}},
            run_config=tune.RunConfig(name="sweep", storage_path=storage),
        ).fit()
        out["sweep"] = sorted(
            (r.config["train_loop_config"]["lr"], len(r.metrics_dataframe), r.metrics["epoch"]) for r in grid
        )

    # Raw V1, for the record: Ray's own V1 trainer and V1's session module.
    try:
        from ray.train.data_parallel_trainer import DataParallelTrainer

        DataParallelTrainer(epochs, scaling_config=train.ScalingConfig(num_workers=2))
        out["raw_v1_trainer"] = "constructed"
    except Exception as error:  # on V2, Ray refuses V1's trainer (a DeprecationWarning raised)
        out["raw_v1_trainer"] = type(error).__name__
    try:
        import ray.air.session  # noqa: F401

        out["ray_air_session"] = "imported"
    except ImportError as error:
        out["ray_air_session"] = type(error).__name__

    # A run written by V1's engine before the deletion, read back.
    if earlier_run is not None:
        earlier = train.Result.from_path(earlier_run)
        out["earlier"] = rows(earlier) | {"path_kept": earlier.path == earlier_run}
    return out


if __name__ == "__main__":
    earlier = sys.argv[3] if len(sys.argv) > 3 else None
    print("RESULTS " + json.dumps(main(sys.argv[1], earlier, tuple(sys.argv[2].split(","))), sort_keys=True))
