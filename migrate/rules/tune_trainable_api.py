"""RTM005: inside a Tune function trainable, ``ray.train``'s session API becomes ``ray.tune``'s."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from migrate import _roles
from migrate._index import Index
from migrate._roles import roles_of
from migrate.rules._base import Rule
from migrate.rules._names import TRAIN_TO_TUNE, TUNER_CONFIGS

if TYPE_CHECKING:  # libcst only when a file needs the libcst form
    import libcst as cst
    from libcst.metadata import MetadataWrapper


class TuneTrainableApi(Rule):
    """## What it does
    Inside a Tune *function trainable* (a function the module passes to ``tune.Tuner``,
    ``tune.run`` or ``Tuner.restore``, directly, through ``tune.with_parameters`` /
    ``tune.with_resources`` / ``functools.partial``, or through a module-level name),
    rewrites ``ray.train.report``, ``ray.train.get_checkpoint``, ``ray.train.get_context``
    and ``ray.train.Checkpoint`` to their ``ray.tune`` equivalents (``session.*`` calls in
    such functions become ``ray.tune`` calls through RTM002). The ``RunConfig`` (with its
    ``CheckpointConfig`` and ``FailureConfig``) written in a Tuner's ``run_config=``
    becomes ``ray.tune``'s.

    ## Why is this bad?
    Under V2 (Ray's default from 2.51) ``ray.train.report`` inside a function run by Tune
    raises ``DeprecationWarning: ray.train.report is deprecated when running in a
    function passed to Ray Tune. Please use the equivalent ray.tune API instead``, and a
    Tuner given ``ray.train.RunConfig`` fails in ``fit()`` (``AttributeError: 'str' object
    has no attribute 'value'``).

    ## Example
    ```python
    from ray import train, tune


    def objective(config):
        train.report({"score": config["a"]})


    tune.Tuner(objective, param_space={"a": tune.uniform(0, 1)}).fit()
    ```

    ## Use instead
    ```python
    from ray import tune


    def objective(config):
        tune.report({"score": config["a"]})


    tune.Tuner(objective, param_space={"a": tune.uniform(0, 1)}).fit()
    ```

    ## Fix safety
    Safe: ``ray.tune.report``, ``get_checkpoint``, ``get_context`` and ``Checkpoint`` take the
    same arguments inside a function trainable, under V1 and V2. A function whose role
    this module does not show is left alone (RTM116 flags it).
    """

    code = "RTM005"
    name = "tune-trainable-api"
    trigger = re.compile(r"Tuner|tune\.run|run_experiments")
    summary = "ray.train's report/checkpoint API inside a Tune function trainable becomes ray.tune's"
    fix_safety = "safe"

    @classmethod
    def could_apply(cls, index: Index) -> bool:
        tune = roles_of(index).tune
        for item in index.nodes:
            node = item.node
            if tune and not tune.isdisjoint(item.functions) and not index.qualified(node).isdisjoint(TRAIN_TO_TUNE):
                return True
            if isinstance(node, ast.Call) and not index.qualified(node.func).isdisjoint(_roles.TUNE_RUNNERS):
                config = next((k.value for k in node.keywords if k.arg == "run_config"), None)
                if isinstance(config, ast.Call) and not index.qualified(config.func).isdisjoint(TUNER_CONFIGS):
                    return True
        return False

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        from migrate.rules._cst import tune_trainable_api

        return tune_trainable_api.apply(self, wrapper)
