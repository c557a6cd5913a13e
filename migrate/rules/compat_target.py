"""RTM004: move ``ray.train`` usage onto ``compat`` (``--target compat`` only)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from migrate.rules._base import Rule

if TYPE_CHECKING:  # libcst only when a file needs the libcst form
    import libcst as cst
    from libcst.metadata import MetadataWrapper


class CompatTarget(Rule):
    """## What it does
    With ``--target compat``, moves ``ray.train`` usage onto ray-train-compat, whose
    behaviour follows ``RAY_TRAIN_V2_ENABLED``: ``from ray import train`` -> ``import
    compat as train``, ``from ray.train import X`` -> ``from compat import X``,
    ``from ray.train.torch import TorchTrainer`` -> ``from compat.torch import
    TorchTrainer`` (likewise ``ray.train.xgboost``, ``lightgbm``, ``lightning`` and
    ``huggingface.transformers``), ``ray.train.report`` -> ``compat.report``. Names compat does not
    provide stay on ``ray.train``; a module whose ``train.<name>`` uses include such a
    name keeps ``from ray import train`` and is flagged.

    ## Why is this bad?
    Code that must run under V1 and V2 semantics during a migration needs one interface
    that works under both.

    ## Example
    ```python
    from ray import train
    from ray.train.torch import TorchTrainer


    def train_func(config):
        train.report({"loss": 0.1})
    ```

    ## Use instead
    ```python
    import compat as train
    from compat.torch import TorchTrainer


    def train_func(config):
        train.report({"loss": 0.1})
    ```

    ## Fix safety
    Safe: compat exposes these names with the same signatures.
    """

    code = "RTM004"
    name = "compat-target"
    trigger = re.compile(r"ray")
    wants = ("ray.train", "ray.air")
    summary = "Use ray-train-compat's interface instead of ray.train (--target compat)"
    fix_safety = "safe"
    targets = ("compat",)

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        from migrate.rules._cst import compat_target

        return compat_target.apply(self, wrapper)
