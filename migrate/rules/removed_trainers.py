"""RTM123: trainers and frameworks that V2 removed."""

from __future__ import annotations

import ast
import re

from migrate.rules._flags import FlagRule
from migrate.tables import GUIDE

# What to do instead, by the removed name's module.
REMOVED = {
    "ray.train.horovod": (
        "HorovodTrainer was removed with V2",
        "Port the training function to TorchTrainer (torch.distributed) or another supported framework.",
    ),
    "ray.train.huggingface.TransformersTrainer": (
        "TransformersTrainer (V1's Hugging Face trainer) was removed",
        "Use TorchTrainer with a training function that builds transformers.Trainer, calls "
        "ray.train.huggingface.transformers.prepare_trainer(trainer) and adds RayTrainReportCallback.",
    ),
    "ray.train.huggingface.AccelerateTrainer": (
        "AccelerateTrainer was removed",
        "Use TorchTrainer with a training function that uses accelerate.Accelerator directly.",
    ),
}


class RemovedTrainers(FlagRule):
    """## What it does
    Flags uses of ``HorovodTrainer`` (``ray.train.horovod``) and V1's Hugging Face trainers
    (``TransformersTrainer``, ``AccelerateTrainer``), naming what to use instead. (Ray 2.60 ships
    a V2 ``TensorflowTrainer``: ``ray.train.tensorflow`` is not flagged; what it no longer has,
    its Predictor and V1's trainer hooks, RTM128 flags from the catalogue.)

    ## Why is this bad?
    V2 has none of them: the import fails or the trainer raises when V2 is on.

    ## Example
    ```python
    from ray.train.horovod import HorovodTrainer

    trainer = HorovodTrainer(train_func)
    ```

    ## Use instead
    ```python
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_func)  # torch.distributed instead of Horovod
    ```

    ## Fix safety
    No fix: the training function changes framework.
    """

    code = "RTM123"
    severity = "breaks"
    name = "removed-trainer"
    trigger = re.compile(r"horovod|Transformers|Accelerate")
    summary = "HorovodTrainer and V1's Hugging Face trainers are removed in V2"
    advice = ""

    refs = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        if isinstance(item.parent, ast.Attribute) and item.parent.value is item.node:
            return None  # `ray.train.tensorflow` inside `ray.train.tensorflow.X`: X is the finding
        for name in sorted(index.qualified(item.node)):
            for prefix, (what, instead) in REMOVED.items():
                if name == prefix or name.startswith(prefix + "."):
                    return f"`{name.rsplit('.', 1)[-1]}`: {what}. {instead}"
        return None

    def message(self, what: str) -> str:
        return f"{what} See {GUIDE}"
