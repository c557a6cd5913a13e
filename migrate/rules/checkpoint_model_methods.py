"""RTM127: a framework checkpoint's methods (``checkpoint.get_model()``) on a result's checkpoint."""

from __future__ import annotations

import ast
import re

from migrate.rules._flags import FlagRule

METHODS = ("get_model", "get_preprocessor", "get_estimator", "get_network", "get_booster")


class CheckpointModelMethods(FlagRule):
    """## What it does
    Flags ``get_model()``, ``get_preprocessor()`` and the other framework checkpoint methods
    called on a checkpoint: ``result.checkpoint.get_model(...)``, ``best.checkpoint...``, or a
    variable named ``checkpoint``/``ckpt``.

    ## Why is this bad?
    They came from V1's framework checkpoints (``TorchCheckpoint``, ``XGBoostCheckpoint``,
    ...). Under V2 a result's checkpoint is a plain ``ray.train.Checkpoint``, a directory:
    ``AttributeError``.

    ## Example
    ```python
    def load(result):
        return result.checkpoint.get_model()
    ```

    ## Use instead
    ```python
    import os

    import torch


    def load(result, model):
        with result.checkpoint.as_directory() as d:
            model.load_state_dict(torch.load(os.path.join(d, "model.pt")))
        return model
    ```

    ## Fix safety
    No fix: the loading code depends on what the training function saved.
    """

    code = "RTM127"
    severity = "breaks"
    name = "checkpoint-model-methods"
    trigger = re.compile(r"get_model|get_preprocessor|get_estimator|get_network|get_booster")
    summary = "checkpoint.get_model()/get_preprocessor() came from V1's framework checkpoints"
    advice = (
        "Open the directory (with checkpoint.as_directory() as d) and load what the training function saved "
        "there; for XGBoost/LightGBM, RayTrainReportCallback.get_model(checkpoint)."
    )

    call_attrs = frozenset(METHODS)
    unqualified_words = METHODS
    # check() needs a receiver named like a checkpoint: `best_ckpt.get_model()`.
    unqualified_needs = (
        re.compile(r"(?:checkpoint|ckpt)\w*[\s\\]*\.[\s\\]*(?:{})\b".format("|".join(METHODS)), re.IGNORECASE),
    )

    def check(self, index, item):  # type: ignore[no-untyped-def]
        receiver = item.node.func.value
        if isinstance(receiver, ast.Attribute):
            named = receiver.attr
        elif isinstance(receiver, ast.Name):
            named = receiver.id
        else:
            return None
        if "checkpoint" not in named.lower() and "ckpt" not in named.lower():
            return None  # RayTrainReportCallback.get_model(checkpoint) and other APIs take it as an argument
        if any(n.startswith("ray.") for n in index.qualified(receiver)):
            return None  # a Ray class's own method, not a checkpoint object's
        return f"`{named}.{item.node.func.attr}()` is a V1 framework checkpoint method"
