"""RTM107: ``ScalingConfig(trainer_resources=...)``."""

from __future__ import annotations

import re

import libcst as cst

from migrate.rules._flags import FlagRule, is_ray_class, keyword, qualified


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
    name = "trainer-resources"
    trigger = re.compile(r"trainer_resources")
    summary = "ScalingConfig(trainer_resources=...) is rejected by V2"
    advice = "Remove it when you switch to V2 (its controller reserves no CPU)."

    def check(self, visitor, node):  # type: ignore[no-untyped-def]
        if (
            isinstance(node, cst.Call)
            and is_ray_class(qualified(visitor, node.func), "ScalingConfig")
            and keyword(node, "trainer_resources") is not None
        ):
            return "`ScalingConfig(trainer_resources=...)` is rejected by V2"
        return None
