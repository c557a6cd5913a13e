"""Codemod throughput over a generated tree, against two floors measured in the same run.

    python -m benchmarks.bench_migrate [--files 5000] [--ray-share 0.1] [--jobs 2]

Floors: (1) read every file and run the pre-filter's scan; (2) additionally libcst-parse
the files that mention Ray. The codemod (``--check``: every rule, nothing written) is
reported as a ratio to each floor; ``--jobs`` adds a parallel run.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import libcst as cst

from migrate import engine

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


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--ray-share", type=float, default=0.1)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with_ray = generate(root, args.files, args.ray_share)
        paths = list(engine.iter_files([str(root)]))
        codes = [r.code for r in engine.select_rules()]

        def scan() -> None:
            for p in paths:
                engine.needs_parsing(Path(p).read_text(), "ray")

        def parse() -> None:
            for p in paths:
                text = Path(p).read_text()
                if engine.needs_parsing(text, "ray"):
                    cst.parse_module(text)

        def codemod() -> None:
            for p in paths:
                engine.process_file(p, codes, "ray", write=False)

        def codemod_parallel() -> None:
            from migrate.__main__ import run

            run(paths, codes, "ray", False, args.jobs)

        scan(), parse()  # warm the page cache and imports
        t_scan, t_parse, t_codemod, t_parallel = timed(scan), timed(parse), timed(codemod), timed(codemod_parallel)
    print(f"{len(paths)} files, {with_ray} mention Ray")
    print("| measurement | seconds | files/s | codemod / this |")
    print("| --- | --- | --- | --- |")
    for name, t in [
        ("floor 1: read + scan every file", t_scan),
        ("floor 2: + libcst-parse the Ray files", t_parse),
        ("codemod --check, 1 process", t_codemod),
        (f"codemod --check, --jobs {args.jobs}", t_parallel),
    ]:
        print(f"| {name} | {t:.2f} | {len(paths) / t:,.0f} | {t_codemod / t:.1f}x |")


if __name__ == "__main__":
    main()
