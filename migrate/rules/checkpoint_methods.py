"""RTM103: dict/bytes/URI checkpoint methods were removed."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule
from migrate.tables import CHECKPOINT_CLASSES, REMOVED_CHECKPOINT_METHODS

# What to write instead, method by method (shown in the finding).
REPLACEMENTS = {
    "from_dict": 'd = tempfile.mkdtemp(); torch.save(state, os.path.join(d, "state.pt")); '
    "ckpt = Checkpoint.from_directory(d)",
    "to_dict": 'with ckpt.as_directory() as d: state = torch.load(os.path.join(d, "state.pt"))',
    "from_bytes": 'd = tempfile.mkdtemp(); pathlib.Path(d, "data.bin").write_bytes(data); '
    "ckpt = Checkpoint.from_directory(d)",
    "to_bytes": 'with ckpt.as_directory() as d: data = pathlib.Path(d, "data.bin").read_bytes()',
    "from_uri": "ckpt = Checkpoint(path=uri)  # any pyarrow filesystem URI, or a local path",
    "to_uri": "ckpt.path (on ckpt.filesystem) is where it lives; ckpt.to_directory(local_dir) copies it",
}


class CheckpointMethods(FlagRule):
    """## What it does
    Flags ``Checkpoint.from_dict/to_dict/from_bytes/to_bytes/from_uri/to_uri``. Instance
    calls (``ckpt.to_dict()``) are flagged when the receiver's name mentions a checkpoint.

    ## Why is this bad?
    The AIR checkpoint API was replaced by directory checkpoints in Ray 2.7; these
    methods fail under V1 and V2 alike.

    ## Example
    ```python
    from ray.train import Checkpoint

    ckpt = Checkpoint.from_dict({"weights": weights})
    ```

    ## Use instead
    ```python
    import os
    import tempfile

    import torch
    from ray.train import Checkpoint

    directory = tempfile.mkdtemp()
    torch.save({"weights": weights}, os.path.join(directory, "state.pt"))
    ckpt = Checkpoint.from_directory(directory)
    ```

    ## Fix safety
    No fix: the files to write depend on what the dict held.
    """

    code = "RTM103"
    severity = "breaks"
    name = "checkpoint-dict-methods"
    trigger = re.compile(r"_(dict|bytes|uri)\b")
    summary = "Checkpoint.from_dict/to_dict/from_bytes/from_uri no longer exist"
    advice = "Checkpoints are directories: Checkpoint.from_directory to make one, checkpoint.as_directory() to read."

    attrs = frozenset(REMOVED_CHECKPOINT_METHODS)
    unqualified_words = ("to_dict", "to_bytes", "to_uri")
    unqualified_needs = (re.compile("checkpoint|ckpt", re.IGNORECASE),)  # in the receiver: see check()

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        if index.qualified(node.value) & CHECKPOINT_CLASSES:
            return f"`Checkpoint.{node.attr}` was removed; instead: `{REPLACEMENTS[node.attr]}`"
        receiver = index.source(node.value).lower()
        if node.attr.startswith("to_") and ("checkpoint" in receiver or "ckpt" in receiver):
            return f"`.{node.attr}()` on a checkpoint was removed; instead: `{REPLACEMENTS[node.attr]}`"
        return None
