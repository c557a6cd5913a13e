"""Before/after for the rewriting rules: aliases, scopes, no-ops, idempotence."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tests.migrate.conftest import ROADS, migrate, unreported_after_write


def check(before: str, after: str, *codes: str, target: str = "ray") -> list:
    out, found = migrate(before, *codes, target=target)
    assert out == textwrap.dedent(after)
    again, refound = migrate(out, *codes, target=target)
    assert again == out, "a second run must change nothing"
    assert not [d for d in refound if d.fixed]
    for road in ROADS:  # every before/after case is a case of the self-consistency property
        assert unreported_after_write(before, road) == [], f"--target {' then '.join(road)}"
    return found


# --- RTM001 air imports ---------------------------------------------------------------


def test_air_config_imports_keep_aliases_and_comments() -> None:
    check(
        """
        from ray.air.config import ScalingConfig as SC  # sizes
        from ray.air import RunConfig, CheckpointConfig
        from ray.air.checkpoint import Checkpoint
        from ray.air.result import Result
        """,
        """
        from ray.train import ScalingConfig as SC  # sizes
        from ray.train import RunConfig, CheckpointConfig, Checkpoint, Result
        """,
        "RTM001",
    )  # the rewritten lines of one block become one (the commented one is left as written)


def test_air_attribute_style_and_stale_import_removed() -> None:
    check(
        """
        import ray
        from ray import air

        ray.init()
        config = air.RunConfig(name="x")
        scaling = air.ScalingConfig(num_workers=2)
        """,
        """
        import ray
        from ray import train

        ray.init()
        config = train.RunConfig(name="x")
        scaling = train.ScalingConfig(num_workers=2)
        """,
        "RTM001",
    )


def test_air_import_inside_a_function_stays_in_that_function() -> None:
    check(
        """
        def build():
            from ray.air.config import ScalingConfig
            return ScalingConfig(num_workers=2)
        """,
        """
        def build():
            from ray.train import ScalingConfig
            return ScalingConfig(num_workers=2)
        """,
        "RTM001",
    )


def test_names_without_a_train_home_stay_and_are_flagged() -> None:
    out, found = migrate(
        """
        from ray.air import ScalingConfig, AcquiredResources

        x = AcquiredResources
        s = ScalingConfig
        """
    )
    assert "from ray.train import ScalingConfig\nfrom ray.air import AcquiredResources\n" in out
    assert [d.code for d in found if not d.fixed] == ["RTM100"]


# --- RTM002 session calls --------------------------------------------------------------


def test_session_calls_and_import() -> None:
    found = check(
        """
        from ray.air import session


        def train_func(config):
            shard = session.get_dataset_shard("train")
            ckpt = session.get_checkpoint()
            session.report({"r": session.get_world_rank(), "n": session.get_world_size()})
        """,
        """
        from ray import train


        def train_func(config):
            shard = train.get_dataset_shard("train")
            ckpt = train.get_checkpoint()
            train.report({"r": train.get_context().get_world_rank(), "n": train.get_context().get_world_size()})
        """,
        "RTM002",
    )
    assert len(found) == 5 and all(d.code == "RTM002" and d.fixed for d in found)


def test_session_alias() -> None:
    check(
        """
        from ray.air import session as s

        def f():
            s.report(metrics={"a": 1})
        """,
        """
        from ray import train

        def f():
            train.report(metrics={"a": 1})
        """,
        "RTM002",
    )


def test_existing_train_import_is_reused() -> None:
    check(
        """
        from ray import train as rt
        from ray.air import session

        def f():
            session.report({})
            rt.get_context()
        """,
        """
        from ray import train as rt

        def f():
            rt.report({})
            rt.get_context()
        """,
        "RTM002",
    )


def test_a_function_named_train_gets_a_non_clashing_alias() -> None:
    check(
        """
        from ray.air import session


        def train(config):
            session.report({"loss": 1})
        """,
        """
        from ray import train as ray_train


        def train(config):
            ray_train.report({"loss": 1})
        """,
        "RTM002",
    )


def test_fully_qualified_session_module() -> None:
    check(
        """
        import ray.air.session

        def f():
            ray.air.session.report({"a": 1})
        """,
        """
        from ray import train

        def f():
            train.report({"a": 1})
        """,
        "RTM002",
    )


def test_import_ray_air_session_keeps_ray_bound_when_ray_is_used() -> None:
    check(
        """
        import ray.air.session

        ray.init()
        ray.air.session.report({"a": 1})
        """,
        """
        import ray
        from ray import train

        ray.init()
        train.report({"a": 1})
        """,
        "RTM002",
    )


def test_function_imports_of_session_functions() -> None:
    check(
        """
        from ray.air.session import report, get_world_rank as rank

        def f():
            report({"r": rank()})
        """,
        """
        from ray import train

        def f():
            train.report({"r": train.get_context().get_world_rank()})
        """,
        "RTM002",
    )


def test_session_import_inside_function_is_replaced_in_place() -> None:
    check(
        """
        def train_func(config):
            from ray.air import session

            def inner():
                session.report(metrics={"a": 1})
            inner()
        """,
        """
        def train_func(config):
            from ray import train

            def inner():
                train.report(metrics={"a": 1})
            inner()
        """,
        "RTM002",
    )


def test_session_used_as_a_value_keeps_its_import_and_is_flagged() -> None:
    out, found = migrate(
        """
        from ray.air import session


        def f(callbacks):
            session.report({})
            callbacks.append(ReportCallback(session))
        """
    )
    assert "from ray.air import session" in out and "train.report({}" in out
    assert "from ray import train" in out
    flagged = [d for d in found if d.code == "RTM100"]
    assert len(flagged) == 1 and flagged[0].line == 7


def test_guarded_import_with_fallback_stays_valid() -> None:
    out, found = migrate(
        """
        try:
            from ray.air import session
        except ImportError:
            session = None


        def f():
            if session is not None:
                session.report({"a": 1}, checkpoint=ckpt)
        """
    )
    cst.parse_module(out)
    assert "train.report" in out
    assert any(d.code == "RTM100" for d in found)  # the fallback needs a person


LOOP = """

def loop(config):
    report({"b": 2}, checkpoint=Checkpoint.from_directory("d"))
"""
GUARDS = {
    "try-except": (
        "try:\n    from ray.train import report\nexcept ImportError:\n    from ray.air.session import report\n",
        "try:\n    from ray import train\nexcept ImportError:\n    from ray import train\n",
    ),
    "version-if": (
        'if ray.__version__ < "2.7":\n    from ray.air.session import report\n'
        "else:\n    from ray.train import report\n",
        'if ray.__version__ < "2.7":\n    from ray import train\nelse:\n    from ray import train\n',
    ),
    "duplicate": (
        "from ray.air.session import report  # a duplicate\nfrom ray.train import report\n",
        "from ray import train  # a duplicate\n",
    ),
}


@pytest.mark.parametrize("shape", GUARDS)
def test_a_name_bound_by_a_guard_or_a_duplicate_import_leaves_no_unused_import(shape: str) -> None:
    """Once ``report(...)`` is ``train.report(...)``, the other binding of ``report`` (the
    ``ray.train`` branch of a guard, or a second import) is unused: it goes too."""
    before, after = GUARDS[shape]
    header = "import ray\nfrom ray.train import Checkpoint\n"
    found = check(header + before + LOOP, header + after + LOOP.replace("    report(", "    train.report("))
    assert any(d.fixed and "`report` no longer used: import removed" in d.message for d in found)


def test_no_ray_reference_no_change() -> None:
    src = "import os\n\ndef session():\n    return os.getcwd()\n"
    assert migrate(src) == (src, [])


def test_a_local_name_session_is_not_touched() -> None:
    src = "session = requests.Session()\nsession.get('x')\n"
    assert migrate(src)[0] == src


# --- RTM009 keyword metrics -------------------------------------------------------------


def test_a_report_written_one_metric_per_line_stays_so_with_its_comments() -> None:
    """A reviewer accepts the dict in the call's own layout: not joined onto one line, the comment
    beside its metric, a hanging indent moved with the `{`, other arguments on their lines."""
    check(
        """
        from ray import train


        def f(config):
            train.report(
                loss=1.0,  # the loss
                acc=0.5,
            )
            train.report(
                loss=1.0,
                acc=2,
                checkpoint=c,
            )
            train.report(loss=1.0,
                         acc=2)
            train.report(loss=1.0, acc=2)
        """,
        """
        from ray import train


        def f(config):
            train.report({
                "loss": 1.0,  # the loss
                "acc": 0.5,
            })
            train.report(
                {"loss": 1.0, "acc": 2},
                checkpoint=c,
            )
            train.report({"loss": 1.0,
                          "acc": 2})
            train.report({"loss": 1.0, "acc": 2})
        """,
        "RTM009",
    )


def test_legacy_keyword_metrics_become_one_dict_in_tune_and_train() -> None:
    check(
        """
        from ray import tune
        from ray.tune import report as send

        def trainable(config):
            for step in range(3):
                tune.report(loss=0.5, step=step)
                send(_metric=1.0)
                tune.report(**config["metrics"], epoch=step)
                tune.report(score=2, checkpoint=None)

        tune.run(trainable)
        """,
        """
        from ray import tune
        from ray.tune import report as send

        def trainable(config):
            for step in range(3):
                tune.report({"loss": 0.5, "step": step})
                send({"_metric": 1.0})
                tune.report({**config["metrics"], "epoch": step})
                tune.report({"score": 2}, checkpoint=None)

        tune.run(trainable)
        """,
    )


def test_reports_already_given_a_dict_and_look_alikes_stay() -> None:
    source = """
        from ray import tune

        def trainable(config, logger):
            tune.report({"loss": 0.5})
            tune.report(metrics={"loss": 0.5})
            logger.report(loss=0.5)

        tune.run(trainable)
        """
    check(source, source)


# --- RTM003 checkpoint keyword ------------------------------------------------------------


def test_positional_checkpoint_becomes_keyword_including_rewritten_session_calls() -> None:
    check(
        """
        from ray import train
        from ray.air import session

        def f(ckpt):
            train.report({"a": 1}, ckpt)
            session.report({"b": 2}, ckpt)
        """,
        """
        from ray import train

        def f(ckpt):
            train.report({"a": 1}, checkpoint=ckpt)
            train.report({"b": 2}, checkpoint=ckpt)
        """,
    )


def test_positional_checkpoint_becomes_keyword_on_calls_through_an_alias() -> None:
    # The engine decides from the input whether RTM003 may apply after the earlier rewrites;
    # a report imported under another name must still count.
    check(
        """
        from ray.air.session import report as send

        def f(ckpt):
            send({"a": 1}, ckpt)
        """,
        """
        from ray import train

        def f(ckpt):
            train.report({"a": 1}, checkpoint=ckpt)
        """,
    )


# --- RTM004 compat target -------------------------------------------------------------


def test_compat_target_moves_the_framework_modules_compat_has() -> None:
    check(
        """\
        from ray.train.xgboost import XGBoostTrainer, RayTrainReportCallback
        from ray.train.lightgbm import LightGBMTrainer
        from ray.train.lightning import RayDDPStrategy, prepare_trainer
        import ray.train.torch

        cfg = ray.train.torch.TorchConfig(backend="gloo")
        """,
        """\
        from compat.xgboost import XGBoostTrainer, RayTrainReportCallback
        from compat.lightgbm import LightGBMTrainer
        from compat.lightning import RayDDPStrategy, prepare_trainer
        import ray.train.torch
        import compat

        cfg = compat.torch.TorchConfig(backend="gloo")
        """,
        "RTM004",
        target="compat",
    )


def test_compat_target_tables_match_what_compat_exports() -> None:
    """The codemod must never move a name onto compat that compat lacks (a NameError), nor leave
    on Ray a name compat takes over (``COMPAT_NAMES`` is kept in step with ``compat.__all__``)."""
    import importlib

    from migrate.tables import COMPAT_MODULES

    for ray_module, (compat_module, names) in COMPAT_MODULES.items():
        try:
            module = importlib.import_module(compat_module)
        except ImportError:  # the framework is not installed here (transformers)
            continue
        missing = sorted(n for n in names if not hasattr(module, n))
        assert not missing, f"{compat_module} lacks {missing} that migrate moves from {ray_module}"
        # and every name compat takes over from Ray's module is one the codemod moves
        ray_names = set(getattr(importlib.import_module(ray_module), "__all__", ()))
        left = sorted((set(module.__all__) & ray_names) - names)
        assert not left, f"migrate leaves {left} on {ray_module} though {compat_module} exports them"


def test_compat_target() -> None:
    check(
        """
        from ray.air import session, ScalingConfig
        from ray.train.torch import TorchTrainer, TorchConfig

        def f():
            session.report({"a": 1})

        trainer = TorchTrainer(f, scaling_config=ScalingConfig(num_workers=2))
        """,
        """
        from compat import ScalingConfig
        import compat as train
        from compat.torch import TorchTrainer, TorchConfig

        def f():
            train.report({"a": 1})

        trainer = TorchTrainer(f, scaling_config=ScalingConfig(num_workers=2))
        """,
        target="compat",
    )


def test_compat_target_keeps_ray_train_when_compat_lacks_a_name() -> None:
    out, found = migrate(
        """
        from ray import train

        trainer_class = train.xgboost.XGBoostTrainer  # compat.xgboost is not an attribute of compat
        """,
        target="compat",
    )
    assert "from ray import train" in out
    assert any(d.code == "RTM004" and not d.fixed and "xgboost" in d.message for d in found)


def test_compat_target_moves_a_module_alias_import_where_compat_has_every_use() -> None:
    """``import ray.train as train`` (Ray 2.60's own examples keep it beside compat's trainer)."""
    check(
        """
        import os, ray.train as train
        from ray.train.torch import TorchTrainer

        def loop(config):
            train.report({"loss": 1.0}, checkpoint=train.Checkpoint.from_directory(os.getcwd()))

        TorchTrainer(loop, scaling_config=train.ScalingConfig(num_workers=2)).fit()
        """,
        """
        import compat as train
        import os
        from compat.torch import TorchTrainer

        def loop(config):
            train.report({"loss": 1.0}, checkpoint=train.Checkpoint.from_directory(os.getcwd()))

        TorchTrainer(loop, scaling_config=train.ScalingConfig(num_workers=2)).fit()
        """,
        target="compat",
    )
    out, found = migrate(
        """
        import ray.train as rt

        trainer_class = rt.xgboost.XGBoostTrainer
        rt.report({})
        """,
        target="compat",
    )
    assert "import ray.train as rt" in out and "compat.report({})" in out
    assert any(
        d.code == "RTM004" and not d.fixed and "kept `import ray.train as rt` for `xgboost`" in d.message for d in found
    )


def test_compat_target_blockers_are_scoped_to_the_train_names_used() -> None:
    # `tune.*` beside `train` blocks nothing; a real blocker keeps the import for itself only.
    check(
        """\
        from ray import train, tune


        def f(config):
            train.report({"lr": tune.loguniform(1e-4, 1e-1)})
        """,
        """\
        import compat as train
        from ray import tune


        def f(config):
            train.report({"lr": tune.loguniform(1e-4, 1e-1)})
        """,
        "RTM004",
        target="compat",
    )
    found = check(
        """\
        from ray import train, tune


        def f(config):
            train.report({"lr": tune.loguniform(1e-4, 1e-1)})


        trainer_class = train.xgboost.XGBoostTrainer
        """,
        """\
        from ray import train, tune
        import compat


        def f(config):
            compat.report({"lr": tune.loguniform(1e-4, 1e-1)})


        trainer_class = train.xgboost.XGBoostTrainer
        """,
        "RTM004",
        target="compat",
    )
    assert [d.fixed for d in found if d.code == "RTM004"].count(False) == 1


def test_compat_target_fully_qualified() -> None:
    out, _ = migrate(
        """
        import ray.train

        def f():
            ray.train.report({"a": 1})
        """,
        target="compat",
    )
    assert 'compat.report({"a": 1})' in out and "import compat\n" in out


@pytest.mark.parametrize(
    "source",
    [
        "from ray.air import session\nsession.report({})\n",
        "from ray import air\nx = air.RunConfig()\n",
        "import ray\nray.air.session.report({})\n",
    ],
)
def test_output_never_has_unbound_names(source: str) -> None:
    out, _ = migrate(source)
    namespace: dict = {}
    compiled = compile(out, "<migrated>", "exec")
    names = set(compiled.co_names)
    bound = {
        n for line in out.splitlines() for n in line.replace(",", " ").split() if line.startswith(("import", "from"))
    }
    assert {"train"} & names <= bound | set(namespace)


# --- RTM008 deprecated module paths -------------------------------------------------------


def test_trainers_are_imported_from_their_public_modules() -> None:
    found = check(
        """\
        from ray.train.torch.torch_trainer import TorchTrainer  # the trainer
        from ray.train.xgboost.xgboost_trainer import XGBoostTrainer as XT
        from ray.train.torch.train_loop_utils import (
            prepare_model,  # wraps DDP
            get_device,
        )
        """,
        """\
        from ray.train.torch import TorchTrainer  # the trainer
        from ray.train.xgboost import XGBoostTrainer as XT
        from ray.train.torch import (
            prepare_model,  # wraps DDP
            get_device,
        )
        """,
        "RTM008",
    )
    assert [(d.line, d.message) for d in found][:2] == [
        (1, "`ray.train.torch.torch_trainer` -> `ray.train.torch`"),
        (2, "`ray.train.xgboost.xgboost_trainer` -> `ray.train.xgboost`"),
    ]


def test_v1s_data_parallel_trainer_is_flagged_not_rewritten_to_a_name_ray_train_does_not_export() -> None:
    """No release exports ``ray.train.DataParallelTrainer`` (the catalogue): rewriting the import
    to it made an ImportError. V1's class stays, flagged with V2's home (RTM128)."""
    source = "from ray.train.data_parallel_trainer import DataParallelTrainer\n\ntrainer = DataParallelTrainer(f)\n"
    text, found = migrate(source)
    assert text == source
    assert [(d.line, d.code) for d in found] == [(1, "RTM128")]
    assert "ray.train.v2.api.data_parallel_trainer.DataParallelTrainer" in found[0].message


def test_v1s_failure_class_by_its_v1_module_becomes_the_public_name_and_rtm118_stays_for_the_rest() -> None:
    """``ray.train.TrainingFailedError`` is the failure class of the engine in use: the handler
    keeps catching under V2. What the import swap cannot reach (a module alias) stays flagged."""
    found = check(
        """\
        from ray.train.base_trainer import TrainingFailedError
        import ray.train.base_trainer as bt

        try:
            trainer.fit()
        except TrainingFailedError:
            alert()
        except bt.TrainingFailedError:
            pass
        """,
        """\
        from ray.train import TrainingFailedError
        import ray.train.base_trainer as bt

        try:
            trainer.fit()
        except TrainingFailedError:
            alert()
        except bt.TrainingFailedError:
            pass
        """,
    )
    assert [(d.line, d.code, d.fixed) for d in found] == [(1, "RTM008", True), (8, "RTM118", False)]


def test_private_names_of_those_modules_stay_where_they_are() -> None:
    source = "from ray.train.torch.train_loop_utils import _TorchAccelerator, prepare_model\n"
    assert migrate(source, "RTM008") == (source, [])
    source = "from ray.train.torch.torch_trainer import *\n"
    assert migrate(source, "RTM008") == (source, [])


# --- layout ---------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["ray", "compat"])
def test_a_black_style_import_keeps_one_name_per_line(target: str) -> None:
    """A parenthesized import with one name per line (black's and ruff's format) stays so
    when names leave it, move to another module or are removed as unused."""
    module = {"ray": "ray.train", "compat": "compat"}[target]
    torch = {"ray": "ray.train.torch", "compat": "compat.torch"}[target]
    session = {"ray": "from ray import train", "compat": "import compat as train"}[target]
    check(
        """\
        from ray.air import (
            Checkpoint,  # directories
            CheckpointConfig,
            RunConfig,
            session,
        )
        from ray.air.config import (
            FailureConfig,
            ScalingConfig as SC,
        )
        from ray.train.torch import (  # trainers
            TorchTrainer,
        )


        def loop(config):
            session.report({"a": 1}, checkpoint=Checkpoint.from_directory("d"))


        TorchTrainer(loop, run_config=RunConfig()).fit()
        """,
        f"""\
        from {module} import (
            Checkpoint,  # directories
            RunConfig,
        )
        {session}
        from {torch} import (  # trainers
            TorchTrainer,
        )


        def loop(config):
            train.report({{"a": 1}}, checkpoint=Checkpoint.from_directory("d"))


        TorchTrainer(loop, run_config=RunConfig()).fit()
        """,
        target=target,
    )


def test_the_comment_of_a_name_the_rewrite_removed_stays_where_it_was() -> None:
    """``RunConfig,  # storage`` goes (nothing uses RunConfig): its comment stays, on its own
    line where it was; a name marked ``# noqa: F401`` (deliberate: a re-export) stays, moved."""
    check(
        """\
        from ray.air import (  # configs
            ScalingConfig,  # workers
            RunConfig,  # storage: s3://bucket/runs
            CheckpointConfig,  # noqa: F401
        )
        from ray.air import session


        def loop(config):
            session.report({"a": 1}, checkpoint=config["c"])


        print(ScalingConfig)
        """,
        """\
        from ray.train import (  # configs
            ScalingConfig,  # workers
            # storage: s3://bucket/runs
            CheckpointConfig,  # noqa: F401
        )
        from ray import train


        def loop(config):
            train.report({"a": 1}, checkpoint=config["c"])


        print(ScalingConfig)
        """,
    )


@pytest.mark.parametrize("session_import", ["import ray.air.session", "from ray.air import session"])
def test_import_ray_read_only_through_the_rewritten_calls_goes(session_import: str) -> None:
    """`import ray` served `ray.air.session.report(...)`: once that is `train.report(...)`,
    nothing reads `ray`. Where something still does (`ray.init()`), it stays."""
    check(
        f"""\
        import ray
        {session_import}


        def loop(config):
            ray.air.session.report({{"a": 1}}, checkpoint=config["c"])
        """,
        """\
        from ray import train


        def loop(config):
            train.report({"a": 1}, checkpoint=config["c"])
        """,
    )
    out, _ = migrate(
        f"""\
        import ray
        {session_import}

        ray.init()


        def loop(config):
            ray.air.session.report({{"a": 1}}, checkpoint=config["c"])
        """
    )
    assert out.startswith("import ray\n") and "train.report(" in out


# --- imports the rewrites write, merged into the file's own ------------------------------


def test_a_rewritten_import_is_merged_into_the_files_own_ray_train_import_above_it() -> None:
    check(
        """
        from ray.train import ScalingConfig
        from ray.air import RunConfig
        from ray.air.config import CheckpointConfig as CC

        x = RunConfig(checkpoint_config=CC())
        s = ScalingConfig()
        """,
        """
        from ray.train import ScalingConfig, RunConfig, CheckpointConfig as CC

        x = RunConfig(checkpoint_config=CC())
        s = ScalingConfig()
        """,
    )


@pytest.mark.parametrize(
    "source",
    [
        # the file's own import comes after: merging would bind RunConfig later
        "from ray.air import RunConfig\nfrom ray.train import ScalingConfig\n\nx = RunConfig()\ns = ScalingConfig()\n",
        # the file's own import carries a comment (or parentheses): left as the user wrote it
        "from ray.train import ScalingConfig  # sizes\nfrom ray.air import RunConfig\n\nx = RunConfig()\n",
    ],
    ids=["own-import-below", "own-import-with-a-comment"],
)
def test_a_rewritten_import_is_not_merged_where_it_would_move_or_reshape_the_users_own(source: str) -> None:
    out, _ = migrate(source)
    assert out.count("from ray.train import") == 2


def test_imports_the_rewrites_write_in_one_block_become_one_line() -> None:
    """``ray.air.config`` and ``ray.air.result`` imports above each other (Ray 2.60's own
    ray/train/__init__.py has them) become one ``from ray.train import`` line, not two; imports
    separated by code are not merged (the name would be bound earlier than the code binds it)."""
    check(
        """
        from ray.air.config import RunConfig, ScalingConfig
        from ray.air.result import Result
        import os

        print(RunConfig, ScalingConfig, Result, os)
        """,
        """
        from ray.train import RunConfig, ScalingConfig, Result
        import os

        print(RunConfig, ScalingConfig, Result, os)
        """,
    )
    out, _ = migrate(
        "from ray.air.config import RunConfig\n\nx = 1\nfrom ray.air.result import Result\n\nprint(RunConfig, Result)\n"
    )
    assert out.count("from ray.train import") == 2


def test_continuation_lines_under_a_renamed_call_move_with_its_bracket() -> None:
    check(
        """
        from ray.air import session


        def f(config):
            session.report({"a": 1},
                           checkpoint=c)
            shard = session.get_dataset_shard("train",
                                              )
            other(1,
                  2)
        """,
        """
        from ray import train


        def f(config):
            train.report({"a": 1},
                         checkpoint=c)
            shard = train.get_dataset_shard("train",
                                            )
            other(1,
                  2)
        """,
    )


def test_a_rewritten_import_is_not_merged_above_a_statement_that_rebinds_its_name() -> None:
    source = "from ray.train import ScalingConfig\nRunConfig = None\nfrom ray.air import RunConfig\n\nx = RunConfig()\n"
    out, _ = migrate(source)
    assert out == source.replace("from ray.air import", "from ray.train import")  # rewritten in place


def test_compat_target_moves_tensorflow_onto_compat_tensorflow() -> None:
    check(
        """
        from ray.train.tensorflow import TensorflowTrainer, prepare_dataset_shard
        from ray.train.tensorflow.keras import ReportCheckpointCallback
        """,
        """
        from compat.tensorflow import TensorflowTrainer, prepare_dataset_shard
        from compat.tensorflow.keras import ReportCheckpointCallback
        """,
        "RTM004",
        target="compat",
    )
