"""Codemod throughput, against ruff and against floors measured in the same run.

    python -m benchmarks.bench_migrate [--files 5000] [--ray-share 0.1] [--jobs 2] [--repeat 3]
                                       [--tree both|ray|generated]

Two trees:

* **the installed Ray package** (copied out of the virtualenv, ``__pycache__`` left
  behind): ``python -m migrate --diff`` against ``ruff check --select UP --diff`` on the
  same tree, both as whole commands (start-up included; the codemod's modules compiled to
  bytecode first, as pip compiles them at install), best of ``--repeat`` rounds, each round
  running every command once;
* **a generated tree** of ``--files`` modules, ``--ray-share`` of them V1-era Ray Train
  code, the rest plain Python: the codemod (``--check``, every rule, in this process)
  against two floors: (1) read every file and run the pre-filter; (2) additionally
  parse (``ast``) the files the pre-filter lets through; and (3) the libcst parse of
  those files, which every file that is rewritten needs.

On the Ray tree both tools run at their defaults (each uses every core), and ``migrate`` also in
one process (``--jobs 1``); ``--jobs`` sets the generated tree's parallel run.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import libcst as cst
import ray

from migrate import engine
from migrate.files import iter_files

PLAIN = '''"""Module {i}: nothing to do with the training library."""
import os
import json


def load_{i}(path):
    with open(path) as f:
        return json.load(f)


class Thing{i}:
    def __init__(self, value):
        self.value = value

    def double(self):
        return [v * 2 for v in self.value]
'''

RAY = """from ray.air import session, ScalingConfig
from ray.air.config import RunConfig
from ray.train.torch import TorchTrainer


def train_func(config):
    for epoch in range(config["epochs"]):
        rank = session.get_world_rank()
        session.report({{"epoch": epoch, "rank": rank, "id": {i}}})


def run():
    trainer = TorchTrainer(
        train_func,
        train_loop_config={{"epochs": 2}},
        scaling_config=ScalingConfig(num_workers=2, trainer_resources={{"CPU": 0}}),
        run_config=RunConfig(name="job{i}", verbose=0),
    )
    result = trainer.fit()
    return result.metrics_dataframe
"""


def generate(root: Path, files: int, ray_share: float, seed: int = 0) -> int:
    rng = random.Random(seed)
    with_ray = 0
    for i in range(files):
        directory = root / f"pkg{i // 100}"
        directory.mkdir(exist_ok=True)
        uses_ray = rng.random() < ray_share
        with_ray += uses_ray
        (directory / f"mod{i}.py").write_text((RAY if uses_ray else PLAIN).format(i=i))
    return with_ray


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def command(*args: str, cwd: Path) -> Callable[[], object]:
    def run() -> None:
        subprocess.run(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)

    return run


def table(rows: list[tuple[str, float]], files: int, reference: float, label: str) -> None:
    print(f"| measurement | seconds | files/s | {label} |")
    print("| --- | --- | --- | --- |")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {files / seconds:,.0f} | {seconds / reference:.2f}x |")


def ray_package(tmp: Path, jobs: int, repeat: int) -> None:
    tree = tmp / "ray"
    shutil.copytree(os.path.dirname(ray.__file__), tree, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    files = len(list(iter_files([str(tree)])))
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or "ruff"
    measures = {
        "ruff check --select UP --diff": command(
            ruff, "check", "--no-cache", "--select", "UP", "--diff", ".", cwd=tree
        ),
        # both tools at their defaults: ruff uses every core unasked, and so does migrate on a tree
        # of PARALLEL_FROM files or more
        "python -m migrate --diff (defaults)": command(sys.executable, "-m", "migrate", "--diff", ".", cwd=tree),
        "python -m migrate --diff --jobs 1": command(
            sys.executable, "-m", "migrate", "--diff", "--jobs", "1", ".", cwd=tree
        ),
    }
    # The codemod as pip installs it: its modules compiled to bytecode (pip compiles at install;
    # under PYTHONDONTWRITEBYTECODE, as on this project's machines, a checkout never is, and each
    # run, each worker process too, compiled the codemod's sources again: 0.2 s of start-up).
    compileall.compile_dir(os.path.dirname(engine.__file__), quiet=1)
    for run in measures.values():
        run()  # warm the page cache
    samples: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(repeat):  # alternating, so that the machine's drift falls on every command alike
        for name, run in measures.items():
            start = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - start)
    times = [(name, min(values)) for name, values in samples.items()]
    print(f"\nInstalled Ray {ray.__version__} package: {files} files (best of {repeat}, alternating)\n")
    table(times, files, times[0][1], "/ ruff")


def generated(tmp: Path, count: int, share: float, jobs: int, repeat: int) -> None:
    root = tmp / "generated"
    root.mkdir()
    with_ray = generate(root, count, share)
    paths = list(iter_files([str(root)]))
    codes = [r.code for r in engine.select_rules()]

    def scan() -> None:
        for p in paths:
            engine.needs_parsing(Path(p).read_text(), "ray")

    def parse(parser: Callable[[str], object]) -> Callable[[], None]:
        def run() -> None:
            for p in paths:
                text = Path(p).read_text()
                if engine.needs_parsing(text, "ray"):
                    parser(text)

        return run

    def codemod() -> None:
        for p in paths:
            engine.process_file(p, codes, "ray", write=False)

    def codemod_parallel() -> None:
        from migrate.__main__ import run

        run([(p, tuple(codes), "ray") for p in paths], False, jobs)

    scan(), parse(ast.parse)()  # warm the page cache and imports
    rows = [
        ("codemod --check, 1 process", best(codemod, repeat)),
        (f"codemod --check, --jobs {jobs}", best(codemod_parallel, repeat)),
        ("floor 1: read + pre-filter every file", best(scan, repeat)),
        ("floor 2: + ast-parse the files it lets through", best(parse(ast.parse), repeat)),
        ("floor 3: + libcst-parse them instead", best(parse(cst.parse_module), repeat)),
    ]
    print(f"\nGenerated tree: {len(paths)} files, {with_ray} with V1-era Ray code (best of {repeat})\n")
    table(rows, len(paths), rows[3][1], "/ floor 2")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--ray-share", type=float, default=0.1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tree", choices=("both", "ray", "generated"), default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.tree in ("both", "ray"):
            ray_package(Path(tmp), args.jobs, args.repeat)
        if args.tree in ("both", "generated"):
            generated(Path(tmp), args.files, args.ray_share, args.jobs, args.repeat)


if __name__ == "__main__":
    main()
