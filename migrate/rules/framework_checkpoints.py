"""RTM104: framework checkpoint classes."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule, Milder
from migrate.tables import FRAMEWORK_CHECKPOINTS

# The directory-based replacement for each framework checkpoint (shown in the finding).
REPLACEMENTS = {
    "TorchCheckpoint": 'd = tempfile.mkdtemp(); torch.save(model.state_dict(), os.path.join(d, "model.pt")); '
    "ckpt = Checkpoint.from_directory(d); to load: with ckpt.as_directory() as d: "
    'model.load_state_dict(torch.load(os.path.join(d, "model.pt")))',
    "LegacyTorchCheckpoint": "as for TorchCheckpoint: torch.save(model.state_dict(), ...) into a directory, "
    "then Checkpoint.from_directory",
    "TensorflowCheckpoint": 'd = tempfile.mkdtemp(); model.save(os.path.join(d, "model.keras")); '
    "ckpt = Checkpoint.from_directory(d)",
    "XGBoostCheckpoint": "ray.train.xgboost.RayTrainReportCallback writes the checkpoint; "
    "RayTrainReportCallback.get_model(ckpt) loads the booster",
    "LightGBMCheckpoint": "ray.train.lightgbm.RayTrainReportCallback writes the checkpoint; "
    "RayTrainReportCallback.get_model(ckpt) loads the booster",
    "TransformersCheckpoint": "ray.train.huggingface.transformers.RayTrainReportCallback writes the checkpoint; "
    'load with: with ckpt.as_directory() as d: AutoModel.from_pretrained(os.path.join(d, "checkpoint"))',
    "LightningCheckpoint": "ray.train.lightning.RayTrainReportCallback writes the checkpoint; load with: "
    'with ckpt.as_directory() as d: MyModule.load_from_checkpoint(os.path.join(d, "checkpoint.ckpt"))',
    "SklearnCheckpoint": 'd = tempfile.mkdtemp(); joblib.dump(estimator, os.path.join(d, "model.joblib")); '
    "ckpt = Checkpoint.from_directory(d)",
}

# The classes Ray 2.60 still has, under V2 too: using them only warns (DeprecationWarning).
STILL_IN_RAY = frozenset({"TorchCheckpoint", "XGBoostCheckpoint", "LightGBMCheckpoint"})


class FrameworkCheckpoints(FlagRule):
    """## What it does
    Flags ``TorchCheckpoint`` and the other framework checkpoint classes.

    ## Why is this bad?
    They are deprecated and not supported by Ray Train V2; a plain ``ray.train.Checkpoint``
    over a directory works in both. Ray 2.60 no longer has ``LegacyTorchCheckpoint``,
    ``TensorflowCheckpoint``, ``TransformersCheckpoint``, ``LightningCheckpoint`` or
    ``SklearnCheckpoint`` (the import fails: severity ``breaks``); ``TorchCheckpoint``,
    ``XGBoostCheckpoint`` and ``LightGBMCheckpoint`` still exist and only warn (``warns``),
    but a result's checkpoint comes back as a plain ``Checkpoint`` (RTM127).

    ## Example
    ```python
    from ray.train.torch import TorchCheckpoint

    ckpt = TorchCheckpoint.from_model(model)
    ```

    ## Use instead
    ```python
    import os
    import tempfile

    import torch
    from ray.train import Checkpoint

    directory = tempfile.mkdtemp()
    torch.save(model.state_dict(), os.path.join(directory, "model.pt"))
    ckpt = Checkpoint.from_directory(directory)
    ```

    ## Fix safety
    No fix: the saved files and the loading code both change.
    """

    code = "RTM104"
    severity = "breaks"
    name = "framework-checkpoint"
    trigger = re.compile(r"Checkpoint")
    summary = "TorchCheckpoint and other framework checkpoints are not supported by V2"
    advice = "Checkpoints are directories of your own files: ray.train.Checkpoint.from_directory."

    refs = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        found = index.qualified(item.node) & FRAMEWORK_CHECKPOINTS
        if found:
            name = sorted(found)[0].rsplit(".", 1)[1]
            message = (
                f"`{name}` is not supported by V2; instead: `{REPLACEMENTS.get(name, 'Checkpoint.from_directory')}`"
            )
            return Milder(message, "warns") if name in STILL_IN_RAY else message
        return None
