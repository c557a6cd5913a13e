"""RTM104: framework checkpoint classes."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule
from migrate.tables import FRAMEWORK_CHECKPOINTS


class FrameworkCheckpoints(FlagRule):
    """## What it does
    Flags ``TorchCheckpoint`` and the other framework checkpoint classes.

    ## Why is this bad?
    They are deprecated and not supported by Ray Train V2; a plain ``ray.train.Checkpoint``
    over a directory works in both.

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
    name = "framework-checkpoint"
    trigger = re.compile(r"Checkpoint")
    summary = "TorchCheckpoint and other framework checkpoints are not supported by V2"
    advice = "Write the model files yourself and use ray.train.Checkpoint.from_directory."

    refs = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        found = index.qualified(item.node) & FRAMEWORK_CHECKPOINTS
        if found:
            return f"`{sorted(found)[0].rsplit('.', 1)[1]}` is not supported by V2"
        return None
