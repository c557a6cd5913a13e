"""RTM129: ``tune.run``'s checkpoint options of Ray 2.0-2.6."""

from __future__ import annotations

import re

from migrate.rules._flags import Rejected, RejectedKeyword

CHECKPOINT_OPTIONS = ("keep_checkpoints_num", "checkpoint_score_attr", "checkpoint_freq", "checkpoint_at_end")


class TuneRunCheckpointOptions(RejectedKeyword):
    """## What it does
    Flags ``tune.run(keep_checkpoints_num=, checkpoint_score_attr=, checkpoint_freq=,
    checkpoint_at_end=)``.

    ## Why is this bad?
    Ray 2.7 replaced them with ``checkpoint_config=tune.CheckpointConfig(...)``; Ray 2.60 still
    takes them with a ``DeprecationWarning`` each and says they will be removed
    (``ray/tune/tune.py``). The ``min-``/``max-`` prefix of ``checkpoint_score_attr`` is
    deprecated too: the order is ``checkpoint_score_order=``.

    ## Example
    ```python
    from ray import tune

    tune.run(trainable, keep_checkpoints_num=1, checkpoint_score_attr="min-loss")
    ```

    ## Use instead
    ```python
    from ray import tune

    tune.run(
        trainable,
        checkpoint_config=tune.CheckpointConfig(
            num_to_keep=1, checkpoint_score_attribute="loss", checkpoint_score_order="min"
        ),
    )
    ```

    ## Fix safety
    No fix: the options move into another object, with the score's order split off.
    """

    code = "RTM129"
    severity = "warns"
    name = "tune-run-checkpoint-options"
    trigger = re.compile(r"keep_checkpoints_num|checkpoint_score_attr|checkpoint_freq|checkpoint_at_end")
    summary = "tune.run(keep_checkpoints_num/checkpoint_score_attr/checkpoint_freq/checkpoint_at_end)"
    advice = (
        "Give them as `checkpoint_config=tune.CheckpointConfig(num_to_keep=..., checkpoint_score_attribute=..., "
        "checkpoint_score_order=..., checkpoint_frequency=..., checkpoint_at_end=...)`."
    )

    rejected = (
        Rejected(
            "tune.run",
            CHECKPOINT_OPTIONS,
            "`tune.run({given})` is deprecated since Ray 2.7 (a DeprecationWarning on 2.60, to be removed)",
        ),
    )
