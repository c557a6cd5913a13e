"""RTM113: ``Trainer(resume_from_checkpoint=..., metadata=...)``."""

from __future__ import annotations

import re

from migrate._roles import is_trainer
from migrate.rules._flags import FlagRule, keyword


class ResumeFromCheckpoint(FlagRule):
    """## What it does
    Flags ``resume_from_checkpoint=`` and ``metadata=`` passed to a Ray trainer.

    ## Why is this bad?
    V2 raises on both. With ``--target compat`` they are not flagged: compat's trainers take
    both in both modes (under v2 the first attempt's ``get_checkpoint()`` is the given
    checkpoint, and the use is reported as V1-only; docs/compatibility.md §14).

    ## Example
    ```python
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_func, resume_from_checkpoint=checkpoint)
    ```

    ## Use instead
    ```python
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_func, train_loop_config={"resume_from": checkpoint})
    ```

    ## Fix safety
    No fix: the training function must load the checkpoint itself.
    """

    code = "RTM113"
    severity = "breaks"
    name = "resume-from-checkpoint"
    targets = ("ray", "native")
    trigger = re.compile(r"resume_from_checkpoint|metadata")
    summary = "Trainer(resume_from_checkpoint=/metadata=) is rejected by V2"
    advice = (
        "Pass the checkpoint in train_loop_config and load it in the training function "
        "(train.get_checkpoint() covers automatic resumption)."
    )

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        names = index.qualified(node.func)
        if not is_trainer(names):
            return None
        used = [k for k in ("resume_from_checkpoint", "metadata") if keyword(node, k) is not None]
        if used:
            return f"`Trainer({', '.join(f'{k}=' for k in used)})` is rejected by V2"
        return None
