"""RTM117: a Trainer passed to ``tune.Tuner``."""

from __future__ import annotations

import ast
import re

from migrate._roles import TUNE_RESTORE, TUNE_RUNNERS, argument, is_trainer
from migrate._values import values_of
from migrate.rules._flags import FlagRule


class TunerWithTrainer(FlagRule):
    """## What it does
    Flags ``tune.Tuner(trainer, ...)`` (and ``tune.run(trainer)``, ``tune.Tuner.restore(path,
    trainable=trainer)``) where ``trainer`` is a Ray Train Trainer, written in the call or
    bound to a module-level name.

    ## Why is this bad?
    V2 Trainers are not Tune trainables: ``Tuner(trainer)`` fails (``TuneError: Improper
    'run' - not string nor trainable``). Under V2 the trainer runs inside a function
    trainable, and ``TuneReportCallback`` hands its reports to Tune. A trainer's own run is
    no Tune experiment under V2 either: ``Tuner.restore`` cannot resume it (run the trainer
    again with the same ``RunConfig(name, storage_path)``: V2 resumes it).

    ## Example
    ```python
    from ray import tune
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_func, scaling_config=scaling)
    tuner = tune.Tuner(trainer, param_space={"train_loop_config": {"lr": tune.loguniform(1e-4, 1e-1)}})
    ```

    ## Use instead
    ```python
    from ray import train, tune
    from ray.train.torch import TorchTrainer
    from ray.tune.integration.ray_train import TuneReportCallback


    def train_driver(config):
        trainer = TorchTrainer(
            train_func,
            train_loop_config=config,
            scaling_config=scaling,
            run_config=train.RunConfig(callbacks=[TuneReportCallback()]),
        )
        trainer.fit()


    tuner = tune.Tuner(train_driver, param_space={"lr": tune.loguniform(1e-4, 1e-1)})
    ```

    With ``--target compat``, and for a trainer already imported from compat, nothing is
    flagged: compat's trainers are Tune trainables in both modes (docs/compatibility.md §24).

    ## Fix safety
    No fix: the parameter space moves from ``train_loop_config`` to the function's
    ``config``, and each trial needs resources for its workers (``tune.with_resources``).
    """

    code = "RTM117"
    targets = ("ray", "native")  # compat's trainers run in a Tuner in both modes
    severity = "breaks"
    name = "tuner-with-trainer"
    trigger = re.compile(r"Tuner|tune\.run")
    summary = "A Trainer passed to tune.Tuner: V2 runs trainers inside a function trainable"
    advice = (
        "Under V2 run the trainer inside a function (def train_driver(config): TorchTrainer(..., "
        "train_loop_config=config, run_config=RunConfig(callbacks=[TuneReportCallback()])).fit()) and pass "
        "that function to the Tuner (ray.tune.integration.ray_train.TuneReportCallback)."
    )
    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        called = index.qualified(node.func)
        if not called.isdisjoint(TUNE_RESTORE):  # Tuner.restore(path, trainable=trainer)
            trainable = argument(node, 1, "trainable")
        elif not called.isdisjoint(TUNE_RUNNERS):
            trainable = argument(node, 0, "trainable", "run_or_experiment")
        else:
            return None
        if trainable is None:
            return None
        # Written inline or bound to a name first, at module level or in a function (`def main():
        # trainer = TorchTrainer(...); tune.Tuner(trainer)`): every value the name may hold.
        values = values_of(index).of(trainable)
        calls = [v for v in values if isinstance(v, ast.Call)]
        if not calls or len(calls) != len(values):
            return None
        names = [index.qualified(v.func) for v in calls]
        if any(n.startswith("compat.") for found in names for n in found):
            return None  # compat's trainer: a Tune trainable in both modes
        if all(is_trainer(found) for found in names):
            return f"`{index.source(trainable)}` is a Trainer: V2 Trainers cannot be passed to a Tuner"
        return None
