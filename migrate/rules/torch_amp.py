"""RTM124: ``ray.train.torch.accelerate``, ``prepare_optimizer`` and ``backward``."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule

AMP_FUNCTIONS = frozenset(
    {
        f"{module}.{name}"
        for module in ("ray.train.torch", "ray.train.torch.train_loop_utils")
        for name in ("accelerate", "prepare_optimizer", "backward")
    }
)


class TorchAmp(FlagRule):
    """## What it does
    Flags ``ray.train.torch.accelerate()``, ``prepare_optimizer()`` and ``backward()``
    (V1's automatic mixed precision helpers).

    ## Why is this bad?
    V2 raises on each of them.

    ## Example
    ```python
    import ray.train.torch


    def train_func(config):
        ray.train.torch.accelerate(amp=True)
        optimizer = ray.train.torch.prepare_optimizer(optimizer)
        ray.train.torch.backward(loss)
    ```

    ## Use instead
    ```python
    import torch


    def train_func(config):
        scaler = torch.amp.GradScaler()
        with torch.autocast("cuda"):
            loss = model(batch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    No fix: mixed precision moves into the training loop (``torch.autocast`` and a
    ``GradScaler``).
    """

    code = "RTM124"
    severity = "breaks"
    name = "torch-amp"
    targets = ("ray", "native")
    trigger = re.compile(r"accelerate|prepare_optimizer|backward")
    summary = "ray.train.torch.accelerate/prepare_optimizer/backward raise under V2"
    advice = "Use torch.autocast and torch.amp.GradScaler in the training loop (loss.backward() as usual)."

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        found = index.qualified(item.node.func) & AMP_FUNCTIONS
        if found:
            return f"`ray.train.torch.{sorted(found)[0].rsplit('.', 1)[1]}()` raises under V2"
        return None
