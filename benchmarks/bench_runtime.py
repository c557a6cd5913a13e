"""Per-report cost and per-fit overhead of compat vs raw ``ray.train``, in each mode.

    python -m benchmarks.bench_runtime [--reports 20] [--repeat 2]

All numbers come from one run on one local cluster (2 CPUs), so the ratios compare like
with like. Per-report cost is timed inside the training function on rank 0 (from the
first to the last of N free-floating reports of 2 workers); per-fit overhead is the
wall time of a fit with a single report. Raw V2 is measured at Ray's default controller
poll (2 s) and at compat's default (0.05 s), so the poll's share is visible.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

POLL = "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"


def loop(config: dict[str, Any]) -> None:
    """N free-floating reports, then one checkpoint carrying rank 0's loop time."""
    import ray.train
    from ray.train import Checkpoint

    report = config["report"]
    start = time.perf_counter()
    for step in range(config["reports"]):
        report({"step": step, "loss": 1.0 / (step + 1)})
    elapsed = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as d:
        report({"elapsed": elapsed}, checkpoint=Checkpoint.from_directory(d))
    del ray.train


def raw_report(mode: str) -> Callable[..., None]:
    if mode == "v1":
        from ray.train._internal.session import report
    else:
        from ray.train.v2.api.train_fn_utils import report
    return report


def fit_raw(mode: str, reports: int, storage: str) -> tuple[float, float]:
    config = {"reports": reports, "report": raw_report(mode)}
    start = time.perf_counter()
    if mode == "v1":
        from ray.air.config import RunConfig, ScalingConfig
        from ray.train.torch.torch_trainer import TorchTrainer

        scaling = ScalingConfig(num_workers=2, trainer_resources={"CPU": 0})  # else it never starts on 2 CPUs
        result = TorchTrainer(
            loop,
            train_loop_config=config,
            scaling_config=scaling,
            run_config=RunConfig(storage_path=storage, verbose=0),
        ).fit()
    else:
        from ray.train.v2.api.config import RunConfig as RunConfig2
        from ray.train.v2.api.config import ScalingConfig as ScalingConfig2
        from ray.train.v2.torch.torch_trainer import TorchTrainer as TorchTrainer2

        result = TorchTrainer2(
            loop,
            train_loop_config=config,
            scaling_config=ScalingConfig2(num_workers=2),
            run_config=RunConfig2(storage_path=storage),
        ).fit()
    return time.perf_counter() - start, float(result.metrics["elapsed"])


def fit_compat(mode: str, reports: int, storage: str) -> tuple[float, float]:
    import compat

    config = {"reports": reports, "report": compat.report}
    start = time.perf_counter()
    result = compat.torch.TorchTrainer(
        loop,
        train_loop_config=config,
        scaling_config=compat.ScalingConfig(num_workers=2),
        run_config=compat.RunConfig(storage_path=storage),
    ).fit()
    metrics = result.reported_checkpoints[-1].metrics
    return time.perf_counter() - start, float(metrics["elapsed"])


def measure(name: str, fit: Callable[[int, str], tuple[float, float]], reports: int, repeat: int) -> dict[str, float]:
    per_report, per_fit = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as storage:
            _, elapsed = fit(reports, storage)
            per_report.append(elapsed / reports)
        with tempfile.TemporaryDirectory() as storage:
            wall, _ = fit(0, storage)
            per_fit.append(wall)
    row = {"per_report_ms": 1000 * statistics.median(per_report), "per_fit_s": statistics.median(per_fit)}
    print(f"{name:<36} per report {row['per_report_ms']:9.2f} ms   fit {row['per_fit_s']:6.2f} s", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reports", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    import ray

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    rows: dict[str, dict[str, float]] = {}
    try:
        for mode in ("v1", "v2"):
            os.environ["RAY_TRAIN_V2_ENABLED"] = "0" if mode == "v1" else "1"
            os.environ.pop(POLL, None)
            if mode == "v2":
                rows["raw v2 (poll 2 s, Ray default)"] = measure(
                    "raw v2 (poll 2 s, Ray default)", lambda n, s: fit_raw("v2", n, s), args.reports, args.repeat
                )
                os.environ[POLL] = "0.05"
            rows[f"raw {mode}"] = measure(
                f"raw {mode}", lambda n, s, m=mode: fit_raw(m, n, s), args.reports, args.repeat
            )
            os.environ.pop(POLL, None)  # compat applies its own default
            rows[f"compat {mode}"] = measure(
                f"compat {mode}", lambda n, s, m=mode: fit_compat(m, n, s), args.reports, args.repeat
            )
    finally:
        ray.shutdown()
    print("\n| mode | per-report cost, compat / raw | per-fit time, compat / raw |")
    print("| --- | --- | --- |")
    for mode in ("v1", "v2"):
        raw, ours = rows[f"raw {mode}"], rows[f"compat {mode}"]
        print(
            f"| {mode} | {ours['per_report_ms']:.2f} ms / {raw['per_report_ms']:.2f} ms = "
            f"{ours['per_report_ms'] / raw['per_report_ms']:.2f}x | {ours['per_fit_s']:.1f} s / "
            f"{raw['per_fit_s']:.1f} s = {ours['per_fit_s'] / raw['per_fit_s']:.2f}x |"
        )
    default = rows["raw v2 (poll 2 s, Ray default)"]
    print(
        f"| v2, raw at Ray's default poll | {rows['compat v2']['per_report_ms']:.2f} ms / "
        f"{default['per_report_ms']:.2f} ms = {rows['compat v2']['per_report_ms'] / default['per_report_ms']:.3f}x | "
        f"{rows['compat v2']['per_fit_s']:.1f} s / {default['per_fit_s']:.1f} s |"
    )


if __name__ == "__main__":
    main()
