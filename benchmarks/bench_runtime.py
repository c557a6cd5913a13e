"""Per-report cost and per-fit overhead of compat vs raw ``ray.train``, in each mode.

    python -m benchmarks.bench_runtime [--reports 20] [--repeat 3] [--modes v1 v2]
    python -m benchmarks.bench_runtime --engines [--reports 20] [--repeat 3]

``--engines`` compares compat's v1 backend (V1 semantics) on Ray's V1 engine with the same
on Ray's V2 engine (``COMPAT_V1_ENGINE=v2``), in turns, instead.

``--records`` measures compat's own work per report, isolated from the engine: a worker's
``on_report`` (building the record and sending it to a run ledger actor) over the socket
channel and as an actor call, timed in a Ray actor (wall and CPU), with the ledger's CPU.

``--growth [ROUNDS ...]`` (default 2000 8000) measures memory against a run's length: 2 workers
report ROUNDS free-floating rounds of 10 metrics, compat beside raw Ray, in each mode; the
peak growth of the ledger host's RSS during the fit and the driver's RSS growth once ``fit()``
returned (the result kept), per record, and the fit time per round. ``--repeat N`` runs each
length N times, raw and compat in turns (which goes first alternates): the time per round is
each side's median and the ratio the median of each turn's pair (quartiles beside it), the
memory the largest growth of any turn. ``--compat-only``: compat's
fits alone, one after another on one host (``--growth 2000 6000 2000``: a host's first long
run grows its process once; what follows shows whether a run's length does).

All numbers come from one run on one local cluster (2 CPUs), so the ratios compare like
with like. Per-report cost is timed inside the training function on rank 0, from the
first to the last of N reports of 2 workers, for free-floating rounds and for checkpoint
rounds (a small checkpoint every report); per-fit overhead is the wall time of a fit
with a single report. Raw V2 is measured at Ray's default controller poll (2 s) and at
compat's default (0.05 s), so the poll's share is visible.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

POLL = "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"


def loop(config: dict[str, Any]) -> None:
    """N reports (free-floating, or each with a small checkpoint), then one checkpoint
    carrying rank 0's loop time."""
    import ray.train
    from ray.train import Checkpoint

    report = config["report"]
    start = time.perf_counter()
    for step in range(config["reports"]):
        if config["checkpoints"]:
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "weights.txt"), "w") as f:
                    f.write(str(step))
                report({"step": step, "loss": 1.0 / (step + 1)}, checkpoint=Checkpoint.from_directory(d))
        else:
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


def fit_raw(mode: str, reports: int, storage: str, checkpoints: bool = False) -> tuple[float, float]:
    config = {"reports": reports, "report": raw_report(mode), "checkpoints": checkpoints}
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


def fit_compat(mode: str, reports: int, storage: str, checkpoints: bool = False) -> tuple[float, float]:
    import compat

    config = {"reports": reports, "report": compat.report, "checkpoints": checkpoints}
    # V1's console table of every result costs the driver as much as compat's own work:
    # off on both sides, as raw V1 runs here (V2 has no such table).
    quiet = {"verbose": 0} if mode == "v1" else {}
    start = time.perf_counter()
    result = compat.torch.TorchTrainer(
        loop,
        train_loop_config=config,
        scaling_config=compat.ScalingConfig(num_workers=2),
        run_config=compat.RunConfig(storage_path=storage, **quiet),
    ).fit()
    metrics = result.reported_checkpoints[-1].metrics
    return time.perf_counter() - start, float(metrics["elapsed"])


Fit = Callable[..., tuple[float, float]]
Samples = dict[str, list[float]]


def sample(fit: Fit, reports: int, into: Samples, checkpoints: bool = True) -> None:
    """One sample of each measurement: free-floating and checkpoint rounds, and a fit."""
    with tempfile.TemporaryDirectory() as storage:
        into["free_ms"].append(1000 * fit(reports, storage)[1] / reports)
    if checkpoints:
        with tempfile.TemporaryDirectory() as storage:
            into["checkpoint_ms"].append(1000 * fit(reports, storage, checkpoints=True)[1] / reports)
    with tempfile.TemporaryDirectory() as storage:
        into["per_fit_s"].append(fit(0, storage)[0])


def summary(name: str, samples: Samples) -> dict[str, float]:
    row = {key: statistics.median(values) if values else float("nan") for key, values in samples.items()}
    print(
        f"{name:<34} free-floating {row['free_ms']:8.2f} ms   checkpoint {row['checkpoint_ms']:8.2f} ms   "
        f"fit {row['per_fit_s']:6.2f} s",
        flush=True,
    )
    return row


def compare_in_turns(mode: str, reports: int, repeat: int) -> tuple[dict[str, float], dict[str, float]]:
    """Raw and compat samples taken in turns (raw, compat, compat, raw, ...), so drift of the
    machine or the cluster over the run falls on both alike."""
    raw: Samples = {"free_ms": [], "checkpoint_ms": [], "per_fit_s": []}
    ours: Samples = {"free_ms": [], "checkpoint_ms": [], "per_fit_s": []}

    def raw_turn() -> None:
        if mode == "v2":
            os.environ[POLL] = "0.05"  # the poll compat uses, so only compat's own work differs
        sample(lambda *a, **k: fit_raw(mode, *a, **k), reports, raw)
        os.environ.pop(POLL, None)  # compat applies its own default

    def compat_turn() -> None:
        sample(lambda *a, **k: fit_compat(mode, *a, **k), reports, ours)

    for i in range(repeat):
        for turn in (raw_turn, compat_turn) if i % 2 == 0 else (compat_turn, raw_turn):
            turn()
    rows = summary(f"raw {mode}", raw), summary(f"compat {mode}", ours)
    spread(mode, raw, ours)
    return rows


def spread(mode: str, raw: Samples, ours: Samples) -> None:
    """The ratio of each turn's compat sample to the raw sample next to it, as quartiles:
    how far one pair of fits moves the ratio on this machine."""
    parts = []
    for key, label in (("checkpoint_ms", "checkpoint"), ("free_ms", "free-floating"), ("per_fit_s", "fit")):
        ratios = [o / r for o, r in zip(ours[key], raw[key], strict=True)]
        if len(ratios) >= 2:
            q1, q2, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
            parts.append(f"{label} {q2:.2f}x (quartiles {q1:.2f}x-{q3:.2f}x)")
    if parts:
        print(f"{'paired compat/raw ' + mode:<34} " + ", ".join(parts), flush=True)


def compare_engines(reports: int, repeat: int) -> None:
    """compat's v1 backend on V1's engine and on V2's, samples in turns; prints the table."""
    samples: dict[str, Samples] = {
        engine: {"free_ms": [], "checkpoint_ms": [], "per_fit_s": []} for engine in ("v1", "v2")
    }
    os.environ["RAY_TRAIN_V2_ENABLED"] = "0"

    def turn(engine: str) -> None:
        os.environ["COMPAT_V1_ENGINE"] = engine
        sample(lambda *a, **k: fit_compat("v1", *a, **k), reports, samples[engine])

    for i in range(repeat):
        for engine in ("v1", "v2") if i % 2 == 0 else ("v2", "v1"):
            turn(engine)
    os.environ.pop("COMPAT_V1_ENGINE", None)
    on_v1 = summary("compat v1 on V1's engine", samples["v1"])
    on_v2 = summary("compat v1 on V2's engine", samples["v2"])
    print("\n| measure | on V2's engine / on V1's engine |")
    print("| --- | --- |")
    for key, label, unit in (
        ("checkpoint_ms", "checkpoint round", "ms"),
        ("free_ms", "free-floating round", "ms"),
        ("per_fit_s", "fit", "s"),
    ):
        print(f"| {label} | {on_v2[key]:.2f} {unit} / {on_v1[key]:.2f} {unit} = {on_v2[key] / on_v1[key]:.2f}x |")


def record_cost(records: int, repeat: int) -> None:
    """compat's own work per report, socket channel vs actor call, in turns; medians."""
    import psutil
    import ray

    from compat_core.run.ledger import LedgerClient, open_ledger

    @ray.remote(num_cpus=0)
    class Worker:
        def send(self, ledger: LedgerClient, use_socket: bool, records: int) -> tuple[float, float]:
            from compat_core import switch
            from compat_core.run import channel, worker
            from compat_core.run.engine import EngineReport

            address = ledger.open_channel() if use_socket else None
            mode = switch.Mode(switch.V1, switch.V1)
            settings = worker.WorkerSettings(mode, None, ledger, {}, False, False, use_channel=use_socket)
            session = worker.WorkerSession(settings, None, 0, 1, sender=channel.connect(address))
            wall, cpu = time.perf_counter(), time.process_time()
            for step in range(records):
                session.on_report(EngineReport({"step": step, "loss": 1.0 / (step + 1)}, False))
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if session.sender is not None:
                session.sender.close()
            ledger.worker_done(0, None, [], None, 0, records)  # all stored
            return wall / records, cpu / records

    worker = Worker.remote()
    samples: dict[str, dict[str, list[float]]] = {
        how: {"wall": [], "cpu": [], "ledger_cpu": []} for how in ("socket", "actor")
    }
    for i in range(repeat):
        for how in ("socket", "actor") if i % 2 == 0 else ("actor", "socket"):
            ledger = open_ledger(1)
            process = psutil.Process(ledger.pid)
            before = sum(process.cpu_times()[:2])
            wall, cpu = ray.get(worker.send.remote(ledger, how == "socket", records))
            ledger_cpu = (sum(process.cpu_times()[:2]) - before) / records
            ledger.close()
            for key, value in (("wall", wall), ("cpu", cpu), ("ledger_cpu", ledger_cpu)):
                samples[how][key].append(1e6 * value)
    print("\n| record sent | worker wall per report | worker CPU per report | ledger CPU per report |")
    print("| --- | --- | --- | --- |")
    for how, label in (("socket", "socket channel (default)"), ("actor", "actor call (COMPAT_RECORD_CHANNEL=actor)")):
        row = {key: statistics.median(values) for key, values in samples[how].items()}
        print(f"| {label} | {row['wall']:.0f} us | {row['cpu']:.0f} us | {row['ledger_cpu']:.0f} us |")


GROWTH_METRICS = 10


def growth_loop(config: dict[str, Any]) -> None:
    """``rounds`` free-floating rounds of ``GROWTH_METRICS`` metrics, then one checkpoint."""
    import ray.train
    from ray.train import Checkpoint

    report = config["report"]
    for step in range(config["rounds"]):
        report({f"metric_{i}": step + i / 10 for i in range(GROWTH_METRICS)})
    with tempfile.TemporaryDirectory() as d:
        report({"done": 1}, checkpoint=Checkpoint.from_directory(d))
    del ray.train


def fit_growth(kind: str, mode: str, rounds: int, storage: str) -> Any:
    """One fit of :func:`growth_loop`, raw or compat; its result (kept by the caller)."""
    if kind == "compat":
        import compat

        quiet = {"verbose": 0} if mode == "v1" else {}
        return compat.torch.TorchTrainer(
            growth_loop,
            train_loop_config={"rounds": rounds, "report": compat.report},
            scaling_config=compat.ScalingConfig(num_workers=2),
            run_config=compat.RunConfig(storage_path=storage, **quiet),
        ).fit()
    config = {"rounds": rounds, "report": raw_report(mode)}
    if mode == "v1":
        from ray.air.config import RunConfig, ScalingConfig
        from ray.train.torch.torch_trainer import TorchTrainer

        scaling = ScalingConfig(num_workers=2, trainer_resources={"CPU": 0})
        run = RunConfig(storage_path=storage, verbose=0)
        return TorchTrainer(growth_loop, train_loop_config=config, scaling_config=scaling, run_config=run).fit()
    from ray.train.v2.api.config import RunConfig as RunConfig2
    from ray.train.v2.api.config import ScalingConfig as ScalingConfig2
    from ray.train.v2.torch.torch_trainer import TorchTrainer as TorchTrainer2

    return TorchTrainer2(
        growth_loop,
        train_loop_config=config,
        scaling_config=ScalingConfig2(num_workers=2),
        run_config=RunConfig2(storage_path=storage),
    ).fit()


class PeakRSS:
    """The highest RSS of a process while the ``with`` block runs (sampled every 0.1 s)."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.process = psutil.Process(pid)
        self.start = self.peak = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)


def growth(sizes: list[int], modes: list[str], kinds: tuple[str, ...] = ("raw", "compat"), turns: int = 1) -> None:
    """Memory against a run's length, compat beside raw Ray, ``turns`` times each; prints the
    table (each fit's line only, without raw Ray's fits)."""
    import gc

    from compat_core.run.ledger import open_ledger

    probe = open_ledger(2)  # the host compat's fits in this process use: its pid
    host_pid = probe.pid
    probe.close()
    rows = []
    for mode in modes:
        os.environ["RAY_TRAIN_V2_ENABLED"] = "0" if mode == "v1" else "1"
        os.environ[POLL] = "0.05"  # compat's default poll, for raw V2 too
        for kind in kinds:  # a short fit first: imports and the host's start are not growth
            with tempfile.TemporaryDirectory() as storage:
                fit_growth(kind, mode, 10, storage)
        for rounds, turn in ((rounds, turn) for rounds in sizes for turn in range(turns)):
            for kind in kinds if turn % 2 == 0 else kinds[::-1]:
                gc.collect()
                with tempfile.TemporaryDirectory() as storage, PeakRSS(os.getpid()) as driver:
                    with PeakRSS(host_pid) as host:
                        start = time.perf_counter()
                        result = fit_growth(kind, mode, rounds, storage)
                        seconds = time.perf_counter() - start
                    gc.collect()
                    kept = driver.process.memory_info().rss - driver.start  # the result still held
                records = 2 * rounds
                rows.append((mode, rounds, kind, kept, host.peak - host.start if kind == "compat" else 0, seconds))
                print(
                    f"{mode} {rounds:>6} rounds {kind:<6} (turn {turn + 1}) "
                    f"driver +{kept / 2**20:7.1f} MiB after fit() ({kept / records:7.0f} B/record)"
                    + (f", host peak +{(host.peak - host.start) / 2**20:7.1f} MiB "
                       f"({(host.peak - host.start) / records:7.0f} B/record)" if kind == "compat" else "")
                    + f", {1000 * seconds / rounds:.2f} ms/round",
                    flush=True,
                )  # fmt: skip
                del result
    os.environ.pop(POLL, None)
    if "raw" not in kinds:
        return
    print("\n| mode | rounds | driver growth, compat / raw | host peak growth | time per round, compat / raw |")
    print("| --- | --- | --- | --- | --- |")
    for mode in modes:
        for rounds in sizes:
            raw = [r for r in rows if r[:3] == (mode, rounds, "raw")]
            ours = [r for r in rows if r[:3] == (mode, rounds, "compat")]
            records = 2 * rounds
            kept, raw_kept, host = max(r[3] for r in ours), max(r[3] for r in raw), max(r[4] for r in ours)
            seconds, raw_seconds = statistics.median(r[5] for r in ours), statistics.median(r[5] for r in raw)
            paired = [a[5] / b[5] for a, b in zip(ours, raw, strict=True)]
            spread = ""
            if len(paired) > 2:
                q1, q2, q3 = statistics.quantiles(paired, n=4, method="inclusive")
                spread = f"; paired {q2:.2f}x (quartiles {q1:.2f}x-{q3:.2f}x)"
            print(
                f"| {mode} | {rounds} | {kept / 2**20:.1f} MiB / {raw_kept / 2**20:.1f} MiB "
                f"({kept / records:.0f} / {raw_kept / records:.0f} B per record) | "
                f"{host / 2**20:.1f} MiB ({host / records:.0f} B per record) | "
                f"{1000 * seconds / rounds:.2f} ms / {1000 * raw_seconds / rounds:.2f} ms = "
                f"{seconds / raw_seconds:.2f}x{spread} |"
            )


def frame_build(count: int, repeat: int) -> None:
    """``worker_metrics_dataframe`` from ``count`` records of 2 workers x 10 metrics, best of
    ``repeat``: compat's build beside the frame of merged row dicts it replaced."""
    import pandas as pd

    from compat_core.semantics.records import Record
    from compat_core.semantics.result import worker_dataframe
    from compat_core.semantics.stored import worker_rows

    records = [
        Record(i % 2, i // 2, {f"m{k}": float(k + i) for k in range(10)}, False, False, 1.8e9 + i) for i in range(count)
    ]
    from compat_core.files.storage import at
    from compat_core.semantics import worker_reports

    with tempfile.TemporaryDirectory() as directory:
        run = at(directory)

        def store() -> None:  # a file per fit: each turn's replaces the last
            for entry in run.entries():
                run.filesystem.delete_file(entry.path)
            worker_reports.write(run, lambda: iter(records))

        for name, build in (
            ("worker_dataframe", lambda: worker_dataframe(records)),
            ("pd.DataFrame(worker_rows)", lambda: pd.DataFrame(worker_rows(records))),
            ("stored with the run (worker_reports.write)", store),
            ("read back from the run (worker_reports.read, Result.from_path)", lambda: worker_reports.read(run)),
        ):
            best = float("inf")
            for _ in range(repeat):
                start = time.perf_counter()
                build()
                best = min(best, time.perf_counter() - start)
            print(f"{name}: {count:,} records of 10 metrics in {best:.2f} s (best of {repeat})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reports", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=None, help="samples in turns (default 4; --growth: 1)")
    parser.add_argument("--engines", action="store_true", help="compare compat v1 on Ray's V1 and V2 engines")
    parser.add_argument("--records", action="store_true", help="compat's own work per report, socket vs actor")
    parser.add_argument("--modes", nargs="+", choices=("v1", "v2"), default=["v1", "v2"], help="modes to compare")
    parser.add_argument(
        "--growth", nargs="*", type=int, metavar="ROUNDS", default=None,
        help="memory against a run's length: ROUNDS rounds of 10 metrics (default 2000 8000)",
    )  # fmt: skip
    parser.add_argument(
        "--compat-only", action="store_true",
        help="--growth without raw Ray's fits: compat's fits one after another, on one ledger host",
    )  # fmt: skip
    parser.add_argument(
        "--frame", type=int, metavar="RECORDS", default=None,
        help="time worker_metrics_dataframe from RECORDS reports of 10 metrics: built, stored, read (no Ray)",
    )  # fmt: skip
    args = parser.parse_args()
    turns = args.repeat or 1  # --growth: each fit is long
    args.repeat = args.repeat or 4
    if args.frame is not None:
        frame_build(args.frame, args.repeat)
        return
    import ray

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    if args.growth is not None:
        try:
            kinds = ("compat",) if args.compat_only else ("raw", "compat")
            growth(args.growth or [2000, 8000], args.modes, kinds, turns=turns)
        finally:
            ray.shutdown()
        return
    if args.records:
        try:
            record_cost(2000, args.repeat)
        finally:
            ray.shutdown()
        return
    if args.engines:
        try:
            compare_engines(args.reports, args.repeat)
        finally:
            ray.shutdown()
        return
    rows: dict[str, dict[str, float]] = {}
    try:
        for mode in args.modes:
            os.environ["RAY_TRAIN_V2_ENABLED"] = "0" if mode == "v1" else "1"
            os.environ.pop(POLL, None)
            if mode == "v2":
                default: Samples = {"free_ms": [], "checkpoint_ms": [], "per_fit_s": []}
                sample(lambda *a, **k: fit_raw("v2", *a, **k), args.reports, default, checkpoints=False)
                rows["raw v2 (poll 2 s, Ray default)"] = summary("raw v2 (poll 2 s, Ray default)", default)
            rows[f"raw {mode}"], rows[f"compat {mode}"] = compare_in_turns(mode, args.reports, args.repeat)
    finally:
        ray.shutdown()
    print("\n| mode | checkpoint round, compat / raw | free-floating round, compat / raw | fit, compat / raw |")
    print("| --- | --- | --- | --- |")
    for mode in args.modes:
        raw, ours = rows[f"raw {mode}"], rows[f"compat {mode}"]
        print(
            f"| {mode} | {ours['checkpoint_ms']:.2f} ms / {raw['checkpoint_ms']:.2f} ms = "
            f"{ours['checkpoint_ms'] / raw['checkpoint_ms']:.2f}x | {ours['free_ms']:.2f} ms / "
            f"{raw['free_ms']:.2f} ms = {ours['free_ms'] / raw['free_ms']:.2f}x | {ours['per_fit_s']:.1f} s / "
            f"{raw['per_fit_s']:.1f} s = {ours['per_fit_s'] / raw['per_fit_s']:.2f}x |"
        )
    if args.modes != ["v1", "v2"]:
        return
    v1, v2, default = rows["compat v1"], rows["compat v2"], rows["raw v2 (poll 2 s, Ray default)"]
    print(
        f"\nfree-floating round, compat v2 / compat v1: {v2['free_ms']:.2f} ms / {v1['free_ms']:.2f} ms = "
        f"{v2['free_ms'] / v1['free_ms']:.2f}x"
    )
    print(
        f"free-floating round, compat v2 / raw v2 at Ray's default poll: {v2['free_ms']:.2f} ms / "
        f"{default['free_ms']:.2f} ms = {v2['free_ms'] / default['free_ms']:.3f}x"
    )


if __name__ == "__main__":
    main()
