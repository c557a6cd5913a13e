"""What the team reads from its runs."""

import json
import os

from ray.air import Result


def summary(result, log_path):
    frame = result.metrics_dataframe
    with result.checkpoint.as_directory() as d:
        saved = sorted(os.listdir(d))
    again = Result.from_path(result.path)
    with open(log_path) as f:
        logged = [json.loads(line) for line in f]
    return {
        "loss": round(result.metrics["loss"], 6),
        "epoch": result.metrics["epoch"],
        "rows": sorted(int(e) for e in frame["epoch"]),
        "kept": sorted(m["epoch"] for _, m in result.best_checkpoints),
        "saved": saved,
        "from_path": again.metrics["epoch"],
        "logged": logged,
    }


def sweep_summary(swept):
    return {"best_lr": swept["best_lr"], "final_loss": {k: round(v, 6) for k, v in sorted(swept["final_loss"].items())}}
