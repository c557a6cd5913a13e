"""RTM110: ``CheckpointConfig(checkpoint_frequency=..., checkpoint_at_end=...)``."""

from __future__ import annotations

import re

from migrate.rules._flags import Rejected, RejectedKeyword


class CheckpointFrequency(RejectedKeyword):
    """## What it does
    Flags ``CheckpointConfig(checkpoint_frequency=...)`` and ``checkpoint_at_end=``.

    ## Why is this bad?
    They drive checkpoints of class trainables; a training function reports its own
    checkpoints, and V2 raises on both options.

    ## Example
    ```python
    from ray.train import CheckpointConfig

    config = CheckpointConfig(num_to_keep=2, checkpoint_frequency=5)
    ```

    ## Use instead
    ```python
    from ray.train import CheckpointConfig

    config = CheckpointConfig(num_to_keep=2)  # report a checkpoint every 5 epochs yourself
    ```

    ## Fix safety
    No fix: the training loop must report the checkpoints instead.
    """

    code = "RTM110"
    name = "checkpoint-frequency"
    trigger = re.compile(r"checkpoint_frequency|checkpoint_at_end")
    summary = "CheckpointConfig(checkpoint_frequency/checkpoint_at_end) is rejected by V2"
    advice = "Report a checkpoint from the training function when you want one."

    rejected = (Rejected("CheckpointConfig", ("checkpoint_frequency", "checkpoint_at_end"), tune_takes_it=True),)
