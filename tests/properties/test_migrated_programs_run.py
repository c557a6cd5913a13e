"""A migrated program, when run, reports the same metrics as the original (real Ray, V1)."""

from __future__ import annotations

import types

import pytest
from hypothesis import HealthCheck, given, settings

from migrate import engine
from migrate.rules import Context
from tests.properties.programs import v1_programs

pytestmark = pytest.mark.ray


def load(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)  # not importable: Ray pickles its functions by value
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def run_v1(function) -> list[dict]:
    from ray.air.config import RunConfig, ScalingConfig
    from ray.train.torch.torch_trainer import TorchTrainer

    result = TorchTrainer(
        function,
        train_loop_config={"steps": 2},
        scaling_config=ScalingConfig(num_workers=1, trainer_resources={"CPU": 0}),
        run_config=RunConfig(verbose=0),
    ).fit()
    user = [
        c
        for c in result.metrics_dataframe.columns
        if c in {"step", "get_world_rank", "get_world_size", "get_local_rank"}
    ]
    return result.metrics_dataframe[user].to_dict("records")


@settings(max_examples=2, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(v1_programs())
@pytest.mark.extended  # CI: test_graduation.py runs a migrated project against its original on raw Ray
def test_a_migrated_program_reports_what_the_original_did(v1, program) -> None:
    migrated, _ = engine.migrate_source(program.source, engine.select_rules(), Context())
    original = load(program.source, "original_program")
    rewritten = load(migrated, "migrated_program")
    before = run_v1(getattr(original, program.function))
    after = run_v1(getattr(rewritten, program.function))
    assert before == after and [r["step"] for r in before] == [0, 1]
