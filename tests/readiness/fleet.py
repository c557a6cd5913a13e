"""A generated fleet: runs of several jobs in both modes and both directory layouts, some
relying on V1-only behaviours, some failed; source trees; written as compat writes them."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from compat.readiness._record import RECORD_FILE, Behaviour, RunRecord
from compat_core.migration import v1_only

DAY = 86400.0
START = 1_790_000_000.0  # 2026-09-21


def behaviour(kind: str, count: int = 1) -> Behaviour:
    k = v1_only.KINDS[kind]
    return Behaviour(kind, count, "train.py:12", k.severity, k.rule, v1_only.message(kind))


def record(job: str, day: int, kinds: dict[str, int], *, mode: str = "v1", outcome: str = "succeeded") -> RunRecord:
    ended = START + day * DAY + 600
    order = ("breaks", "silent", "warns")
    ranked = sorted(kinds.items(), key=lambda kv: (order.index(v1_only.KINDS[kv[0]].severity), kv[0]))
    behaviours = tuple(behaviour(k, n) for k, n in ranked)
    return RunRecord(
        job=job,
        run=f"{job}-{day}",
        path="",
        script=f"/jobs/{job}.py",
        call_site=f"/jobs/{job}.py:40",
        trainer="TorchTrainer",
        ray_version="2.60.0",
        compat_version="0.1.0",
        python_version="3.11.9",
        mode=mode,
        engine=mode,
        started_at=ended - 300,
        ended_at=ended,
        outcome=outcome,
        error="TrainingFailedError: Training failed: worker 0: ValueError: diverged" if outcome == "failed" else None,
        behaviours=behaviours,
    )


# job -> its runs, oldest first: (day, V1-only behaviours, mode, outcome)
FLEET: dict[str, list[tuple[int, dict[str, int], str, str]]] = {
    # Relied on the session API and free-floating reports, then migrated: ready now.
    "ranker": [(0, {"session-api": 4, "free-floating-report": 30}, "v1", "succeeded"),
               (1, {"free-floating-report": 30}, "v1", "succeeded"),
               (3, {}, "v2", "succeeded")],
    # Still on Tune callbacks (breaks) and free-floating reports (silent); last run failed.
    "embedder": [(0, {"tune-callback": 1, "free-floating-report": 12}, "v1", "succeeded"),
                 (2, {"tune-callback": 1, "free-floating-report": 12}, "v1", "failed")],
    # Only free-floating reports (silent), under V2 already.
    "forecaster": [(1, {"free-floating-report": 8}, "v2", "succeeded")],
    # Never relied on anything.
    "clean": [(2, {}, "v2", "succeeded")],
}  # fmt: skip


def write_fleet(root: str, layout: str = "v1") -> dict[str, list[RunRecord]]:
    """Each job's runs under ``root``: V1's trial directories (``<job>/<trial>/``, with
    checkpoints) or V2's run directories (``<job>-<day>/``); the records as compat appends them."""
    written: dict[str, list[RunRecord]] = {}
    for job, runs in FLEET.items():
        for day, kinds, mode, outcome in runs:
            if layout == "v1":
                run_dir = os.path.join(root, job, f"TorchTrainer_{day:05d}_00000_0")
                os.makedirs(os.path.join(run_dir, "checkpoint_000000"), exist_ok=True)
                with open(os.path.join(run_dir, "checkpoint_000000", "model.py"), "w") as f:
                    f.write("# a user's file in a checkpoint: never read as a record or source\n")
            else:
                run_dir = os.path.join(root, f"{job}-{day}")
                os.makedirs(run_dir, exist_ok=True)
            rec = replace(record(job, day, kinds, mode=mode, outcome=outcome), path=run_dir)
            with open(os.path.join(run_dir, RECORD_FILE), "a") as f:
                f.write(rec.line())
            written.setdefault(job, []).append(rec)
    return written


V1_ERA_JOB = """\
from ray.air import session
from ray.train.torch import TorchTrainer
from ray.air.config import RunConfig, ScalingConfig


def train_func(config):
    for epoch in range(3):
        session.report({"loss": 1.0 / (epoch + 1)})


result = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2)).fit()
print(result.metrics_dataframe)
"""

MIGRATED_JOB = """\
import compat as train
from compat.torch import TorchTrainer


def train_func(config):
    train.report({"loss": 1.0})


TorchTrainer(train_func, scaling_config=train.ScalingConfig(num_workers=2)).fit()
"""


def write_tree(root: str) -> dict[str, Any]:
    """Two checkouts (``.git``) under ``root``: ``legacy`` with V1-era code, ``modern`` migrated."""
    for name, text in (("legacy", V1_ERA_JOB), ("modern", MIGRATED_JOB)):
        os.makedirs(os.path.join(root, name, ".git"))
        os.makedirs(os.path.join(root, name, "jobs"))
        with open(os.path.join(root, name, "jobs", "train.py"), "w") as f:
            f.write(text)
    return {"legacy": os.path.join(root, "legacy"), "modern": os.path.join(root, "modern")}
