"""``python -m compat readiness`` over a fleet of generated runs, and over this Python's packages.

    python -m benchmarks.bench_readiness [--local 10000] [--s3 1000] [--repeat 3] [--demo DIR]

* **local**: ``--local`` run directories on local disk (half V1's layout, ``<job>/<trial>/`` with
  a checkpoint directory, half V2's, ``<run>/``), each with its readiness record, 5 runs a job;
  the whole command (start-up included), JSON to a file, best of ``--repeat``;
* **s3**: ``--s3`` run directories (V2's layout) uploaded to an S3-compatible server on loopback
  (moto's server mode, started here), read through ``s3://`` as a team reads its bucket;
* **site-packages**: ``--site-packages`` over this Python's distributions against the codemod's
  ``--check`` over the same files (the file list ``--site-packages`` reads), both whole commands.

Targets (issue: readiness): local 10,000 runs <= 20 s; S3 1,000 runs <= 20 s; site-packages
<= 2x the codemod's --check. ``--demo DIR`` only writes the fleet docs/readiness.png shows.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from compat.readiness._record import RECORD_FILE, Behaviour, RunRecord
from compat_core.migration import v1_only

KINDS = ["free-floating-report", "session-api", "tune-callback", "checkpoint-frequency", "trial-api"]
DAY = 86400.0
START = 1_790_000_000.0


def record(job: str, index: int, day: float, kinds: list[str], path: str, failed: bool) -> RunRecord:
    behaviours = tuple(
        Behaviour(k, 3, f"/jobs/{job}.py:{20 + i}", v1_only.KINDS[k].severity, v1_only.KINDS[k].rule)
        for i, k in enumerate(sorted(kinds, key=lambda k: (v1_only.KINDS[k].severity != "breaks", k)))
    )
    ended = START + day * DAY
    return RunRecord(
        job, f"{job}-{index}", path, f"/jobs/{job}.py", f"/jobs/{job}.py:60", "TorchTrainer", "2.60.0", "0.1.0",
        "3.11.9", "v1", "v1", ended - 600, ended, "failed" if failed else "succeeded",
        "TrainingFailedError: worker 0: ValueError: diverged" if failed else None, behaviours,
    )  # fmt: skip


def write_runs(root: str, runs: int, *, layouts: tuple[str, ...] = ("v1", "v2"), seed: int = 0) -> None:
    """``runs`` run directories, 5 per job, each job dropping a behaviour now and then."""
    rng = random.Random(seed)
    first: dict[str, list[str]] = {}  # each job's behaviours in its first run
    for n in range(runs):
        job, index = f"job{n // 5:05d}", n % 5
        if index == 0:
            first[job] = [k for k in KINDS if rng.random() < 0.4]
        kinds = first[job][: max(0, len(first[job]) - index // 2)]
        layout = layouts[n % len(layouts)]
        if layout == "v1":
            run_dir = os.path.join(root, job, f"TorchTrainer_{index:05d}_00000_0")
            os.makedirs(os.path.join(run_dir, "checkpoint_000000"), exist_ok=True)
            with open(os.path.join(run_dir, "checkpoint_000000", "model.pt"), "wb") as f:
                f.write(b"\0" * 64)
            with open(os.path.join(run_dir, "result.json"), "w") as f:
                f.write('{"loss": 1.0}\n')
        else:
            run_dir = os.path.join(root, f"{job}-{index}")
            os.makedirs(run_dir, exist_ok=True)
        with open(os.path.join(run_dir, RECORD_FILE), "a") as f:
            f.write(record(job, index, index + rng.random(), kinds, run_dir, rng.random() < 0.05).line())


def write_demo(root: str) -> None:
    """40 jobs over 14 days migrating a behaviour at a time: the trend docs/readiness.png shows."""
    rng = random.Random(7)
    for j in range(40):
        job = f"{rng.choice(['ranker', 'embedder', 'forecaster', 'detector', 'tagger'])}-{j:02d}"
        kinds = [k for k in KINDS if rng.random() < 0.45]
        for day in range(0, 14, 2):
            if kinds and rng.random() < 0.3:
                kinds = kinds[1:]
            run_dir = os.path.join(root, f"{job}-{day}")
            os.makedirs(run_dir, exist_ok=True)
            rec = record(job, day, day + 0.5, kinds, run_dir, rng.random() < 0.05)
            with open(os.path.join(run_dir, RECORD_FILE), "a") as f:
                f.write(rec.line())


def timed(command: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, int]:
    best, code = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        best = min(best, time.perf_counter() - start)
        code = done.returncode
        if code not in (0, 1, 3, 4, 5, 6):
            raise SystemExit(f"{' '.join(command[:6])} ... failed ({code}):\n{done.stderr[-3000:]}")
    return best, code


def readiness(*args: str) -> list[str]:
    return [sys.executable, "-m", "compat", "readiness", *args, "--output-format", "json", "-o", os.devnull]


def bench_local(runs: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as root:
        write_runs(root, runs)
        seconds, _ = timed(readiness(root), repeat)
        print(f"local: {runs} runs in {seconds:.2f} s (target <= 20 s)")


def bench_s3(runs: int, repeat: int) -> None:
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
    }
    os.environ.update(
        {k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL")}
    )
    try:
        with tempfile.TemporaryDirectory() as root:
            write_runs(root, runs, layouts=("v2",))
            filesystem, _ = pafs.FileSystem.from_uri("s3://bench?allow_bucket_creation=true")
            filesystem.create_dir("bench")
            pafs.copy_files(root, "s3://bench/ray_results", use_threads=True)
        seconds, _ = timed(readiness("s3://bench/ray_results"), repeat, env)
        print(f"s3 (moto on loopback): {runs} runs in {seconds:.2f} s (target <= 20 s)")
    finally:
        server.stop()


def bench_site_packages(repeat: int) -> None:
    from compat.readiness._collect import package_files

    files = sorted(package_files()[0])
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(files, f)
    check = [
        sys.executable, "-c",
        "import json, sys; from migrate.__main__ import main; "
        f"sys.exit(main(['--check', '--exit-zero', '--output-format', 'json', *json.load(open({f.name!r}))]))",
    ]  # fmt: skip
    try:
        ours, _ = timed(readiness("--site-packages"), repeat)
        codemod, _ = timed(check, repeat)
    finally:
        os.unlink(f.name)
    print(
        f"site-packages: {len(files)} files; readiness --site-packages {ours:.2f} s, "
        f"migrate --check over the same files {codemod:.2f} s: {ours / codemod:.2f}x (target <= 2x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--local", type=int, default=10_000)
    parser.add_argument("--s3", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--demo", metavar="DIR", help="only write the demo fleet into DIR")
    args = parser.parse_args()
    if args.demo:
        write_demo(args.demo)
        print(f"wrote the demo fleet into {args.demo}")
        return
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    bench_local(args.local, args.repeat)
    bench_s3(args.s3, args.repeat)
    bench_site_packages(args.repeat)


if __name__ == "__main__":
    main()
