"""RTM107: ``ScalingConfig(trainer_resources=...)``."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule, is_ray_class, keyword


class TrainerResources(FlagRule):
    """## What it does
    Flags ``ScalingConfig(trainer_resources=...)``.

    ## Why is this bad?
    V2 has no trainer actor; it raises on this argument.

    ## Example
    ```python
    from ray.train import ScalingConfig

    scaling = ScalingConfig(num_workers=2, trainer_resources={"CPU": 0})
    ```

    ## Use instead
    ```python
    from ray.train import ScalingConfig

    scaling = ScalingConfig(num_workers=2)
    ```

    ## Fix safety
    No fix: under V1 removing it makes the trainer reserve a CPU again.
    """

    code = "RTM107"
    severity = "breaks"
    name = "trainer-resources"
    trigger = re.compile(r"trainer_resources")
    summary = "ScalingConfig(trainer_resources=...) is rejected by V2"
    advice = "Remove it when you switch to V2 (its controller reserves no CPU)."

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        if is_ray_class(index.qualified(node.func), "ScalingConfig") and keyword(node, "trainer_resources") is not None:
            return "`ScalingConfig(trainer_resources=...)` is rejected by V2"
        return None
