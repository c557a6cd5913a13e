"""--target native: code on compat goes back onto native ray.train V2 (RTM007), and what only
compat provides is flagged (RTM119)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from migrate import engine
from migrate.files import iter_files
from tests.migrate.conftest import migrate
from tests.migrate.test_rewrites import check

ROOT = Path(__file__).parents[2]


def test_compat_imports_become_native() -> None:
    check(
        """\
        import compat as train
        from compat import ScalingConfig, WorkerGroupFailedError
        from compat.torch import TorchTrainer, prepare_model


        def loop(config):
            train.report({"a": 1}, checkpoint=train.Checkpoint.from_directory("d"))


        try:
            TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=2)).fit()
        except (WorkerGroupFailedError, train.ControllerFailedError):
            pass
        """,
        """\
        from ray import train
        from ray.train import ScalingConfig, WorkerGroupError as WorkerGroupFailedError
        from ray.train.torch import TorchTrainer, prepare_model


        def loop(config):
            train.report({"a": 1}, checkpoint=train.Checkpoint.from_directory("d"))


        try:
            TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=2)).fit()
        except (WorkerGroupFailedError, train.ControllerError):
            pass
        """,
        "RTM007",
        target="native",
    )


def test_compat_framework_modules_become_ray_trains_own() -> None:
    found = check(
        """\
        import lightning.pytorch as pl
        from compat.huggingface.transformers import RayTrainReportCallback as HFReport
        from compat.lightgbm import LightGBMTrainer
        from compat.lightning import RayDDPStrategy, RayLightningEnvironment, RayTrainReportCallback, prepare_trainer
        from compat.xgboost import XGBoostTrainer


        def loop(config):
            trainer = pl.Trainer(strategy=RayDDPStrategy(), plugins=[RayLightningEnvironment()],
                                 callbacks=[RayTrainReportCallback()])
            prepare_trainer(trainer)
        """,
        """\
        import lightning.pytorch as pl
        from ray.train.huggingface.transformers import RayTrainReportCallback as HFReport
        from ray.train.lightgbm import LightGBMTrainer
        from ray.train.lightning import RayDDPStrategy, RayLightningEnvironment, RayTrainReportCallback, prepare_trainer
        from ray.train.xgboost import XGBoostTrainer


        def loop(config):
            trainer = pl.Trainer(strategy=RayDDPStrategy(), plugins=[RayLightningEnvironment()],
                                 callbacks=[RayTrainReportCallback()])
            prepare_trainer(trainer)
        """,
        target="native",
    )
    assert not [d for d in found if not d.fixed]  # ray.train.lightning's own names: no RTM119


def test_bare_import_compat_and_attributes() -> None:
    check(
        """\
        import compat

        compat.report({"a": 1}, checkpoint=compat.Checkpoint.from_directory("d"))
        trainer = compat.torch.TorchTrainer(f)
        """,
        """\
        import ray.train.torch

        ray.train.report({"a": 1}, checkpoint=ray.train.Checkpoint.from_directory("d"))
        trainer = ray.train.torch.TorchTrainer(f)
        """,
        "RTM007",
        target="native",
    )


def test_bare_import_of_compat_torch() -> None:
    # `import compat.torch` binds `compat` too: `compat.report` is ray.train's, not ray.train.torch's.
    check(
        """\
        import compat.torch

        compat.report({})
        trainer = compat.torch.TorchTrainer(f)
        """,
        """\
        import ray.train.torch

        ray.train.report({})
        trainer = ray.train.torch.TorchTrainer(f)
        """,
        "RTM007",
        target="native",
    )


def test_compat_only_uses_keep_the_import_and_are_flagged() -> None:
    source = """\
import compat as train
from compat import session

rc = train.RunConfig(name="job", keep_v1_logs=True)
result = trainer.fit()
frame = result.worker_metrics_dataframe
rank = session.get_world_rank()
warning = train.NonFiniteMetricWarning
"""
    out, found = migrate(source, target="native")
    assert "import compat as train" in out and "from compat import session" in out  # they keep the module working
    flags = {(d.code, d.line) for d in found if not d.fixed}
    assert ("RTM007", 1) in flags and ("RTM007", 2) in flags
    assert {("RTM119", 4), ("RTM119", 6), ("RTM119", 8)} <= flags
    keep = next(d for d in found if d.code == "RTM119" and d.line == 4)
    assert "after_report" in keep.message


def test_no_compat_no_change() -> None:
    source = "from ray import train\n\ntrain.report({'a': 1})\n"
    out, found = migrate(source, target="native")
    assert out == source and not [d for d in found if d.code in ("RTM007", "RTM119")]


def test_the_examples_go_native_and_one_runs_on_ray_v2(tmp_path: Path) -> None:
    """compat -> native over examples/: every compat import rewritten or flagged with a reason;
    the torchmetrics example then runs on native Ray Train V2 (a fresh Ray, in a subprocess)."""
    for runtime in ("ray", "torch", "torchmetrics"):  # the codemod's own install has none of them
        pytest.importorskip(runtime, reason="runs the migrated example: needs the runtime, not the codemod install")
    package = tmp_path / "native_examples"  # not `examples`: the repository's own package would shadow it
    shutil.copytree(ROOT / "examples", package, ignore=shutil.ignore_patterns("__pycache__"))
    codes = [r.code for r in engine.select_rules(target="native")]
    files = iter_files([str(package)])
    results = {Path(p).name: engine.process_file(p, codes, "native", write=True) for p in files}
    for name, result in results.items():
        text = (package / name).read_text()
        kept = [d for d in result.diagnostics if d.code == "RTM007" and not d.fixed]
        imports_compat = re.search(r"^\s*(import compat|from compat)", text, flags=re.MULTILINE)
        assert not imports_compat or kept, name
    migrated = (package / "torchmetrics_aggregation.py").read_text()
    assert "from ray import train\nfrom ray.train.torch import TorchTrainer, prepare_model" in migrated
    script = (
        "import sys; import native_examples.torchmetrics_aggregation as m; "
        "r = m.main(sys.argv[1], num_epochs=2); print('NATIVE', 'compat' in sys.modules, sorted(r.metrics))"
    )
    env = {**os.environ, "RAY_TRAIN_V2_ENABLED": "1", "PYTHONPATH": str(tmp_path)}  # the workers import it too
    run = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "runs")],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(x for x in run.stdout.splitlines() if x.startswith("NATIVE "))
    assert line.split()[1] == "False"  # compat was never imported: native Ray Train V2 ran it
    assert "mean_valid_loss_collected" in line
