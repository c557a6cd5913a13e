"""RTM007 (--target native): code written against compat goes back onto native ``ray.train`` V2."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from migrate._index import Index
from migrate.rules._base import Rule

if TYPE_CHECKING:  # libcst only when a file needs the libcst form
    import libcst as cst
    from libcst.metadata import MetadataWrapper


class NativeTarget(Rule):
    """## What it does
    With ``--target native``: ``import compat as train`` becomes ``from ray import train``,
    ``from compat import X`` becomes ``from ray.train import X``, ``compat.torch`` becomes
    ``ray.train.torch`` (and ``from compat.lightning``, ``compat.xgboost``, ``compat.lightgbm``, ``compat.tensorflow``,
    ``compat.huggingface.transformers`` their ``ray.train`` modules: the names are Ray's own),
    and ``compat.X`` attributes become ``ray.train.X``. compat's failure
    classes get their V2 names (``WorkerGroupFailedError`` -> ``WorkerGroupError``,
    ``ControllerFailedError`` -> ``ControllerError``). An import whose module also uses
    something only compat has stays, and is flagged with what keeps it.

    ## Why is this bad?
    Once a codebase runs on V2 semantics (``RAY_TRAIN_V2_ENABLED=1``) and uses nothing that
    only compat provides, compat is an extra layer: native ``ray.train`` is the same API.

    ## Example
    ```python
    import compat as train
    from compat.torch import TorchTrainer


    def train_func(config):
        train.report({"loss": 0.1}, checkpoint=train.Checkpoint.from_directory("ckpt"))
    ```

    ## Use instead
    ```python
    from ray import train
    from ray.train.torch import TorchTrainer


    def train_func(config):
        train.report({"loss": 0.1}, checkpoint=train.Checkpoint.from_directory("ckpt"))
    ```

    ## Fix safety
    Safe for the names rewritten: compat's signatures are V2's. What compat adds
    (``keep_v1_logs``, ``worker_metrics_dataframe``, ``migration_report``, the
    ``validate_fn=`` form, free-floating reports kept) is flagged, not rewritten (RTM119,
    RTM115, RTM101).
    """

    code = "RTM007"
    name = "native-target"
    trigger = re.compile(r"\bcompat\b")
    summary = "Use native ray.train instead of ray-train-compat (--target native)"
    fix_safety = "safe"
    targets = ("native",)

    @classmethod
    def could_apply(cls, index: Index) -> bool:
        return any(q == "compat" or q.startswith("compat.") for _, q in index.imports)

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        from migrate.rules._cst import native_target

        return native_target.apply(self, wrapper)
