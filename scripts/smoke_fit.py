"""The installed package's smoke run (scripts/test_installed.sh): one compat fit with three
reports, the last with a checkpoint, on DataParallelTrainer (no torch needed). Prints what a
user would check: the backend and result.metrics (V1: the last report; V2: the checkpoint's)."""

import os
import sys
import tempfile

import compat as train


def loop(config):
    for step in range(3):
        if step == 2:
            with tempfile.TemporaryDirectory() as d:
                open(os.path.join(d, "w"), "w").write("x")
                train.report({"step": step}, checkpoint=train.Checkpoint.from_directory(d))
        else:
            train.report({"step": step})


if __name__ == "__main__":
    storage = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    result = train.DataParallelTrainer(
        loop,
        scaling_config=train.ScalingConfig(num_workers=1),
        run_config=train.RunConfig(name="smoke", storage_path=storage),
    ).fit()
    expected = {"step": 2}
    metrics = {k: v for k, v in (result.metrics or {}).items() if k == "step"}
    assert metrics == expected, (train.backend(), result.metrics)
    assert len(result.worker_metrics_dataframe) == 3, result.worker_metrics_dataframe
    print(f"smoke: {train.backend()} fit ok, result.metrics step {metrics['step']}, 3 reports recorded")
