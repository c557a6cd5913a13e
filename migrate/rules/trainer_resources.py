"""RTM107: ``ScalingConfig(trainer_resources=...)``."""

from __future__ import annotations

import re

from migrate.rules._flags import Rejected, RejectedKeyword


class TrainerResources(RejectedKeyword):
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

    rejected = (Rejected("ScalingConfig", ("trainer_resources",)),)
