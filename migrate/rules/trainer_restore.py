"""RTM112: ``Trainer.restore`` / ``Trainer.can_restore``."""

from __future__ import annotations

import ast
import re

from migrate.rules._flags import FlagRule


class TrainerRestore(FlagRule):
    """## What it does
    Flags ``TorchTrainer.restore(...)`` and ``TorchTrainer.can_restore(...)`` (any Ray
    trainer class), and ``tune.Tuner.restore(path)`` without the trainable (optional until Ray
    2.4, required since 2.5: a TypeError on 2.60).

    ## Why is this bad?
    V2 removed them: a run resumes when it is started again with the same
    ``RunConfig(name=..., storage_path=...)``. With ``--target compat`` they are not flagged:
    compat's trainers keep V1's ``restore``/``can_restore`` in both modes (under v2 they resume
    the run on V2's engine and are reported as V1-only usage; docs/compatibility.md §29).

    ## Example
    ```python
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer.restore("/tmp/results/exp")
    ```

    ## Use instead
    ```python
    from ray.train import RunConfig
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_func, run_config=RunConfig(name="exp", storage_path="/tmp/results"))
    ```

    ## Fix safety
    No fix: the trainer's arguments must be passed again.
    """

    code = "RTM112"
    severity = "breaks"
    name = "trainer-restore"
    targets = ("ray", "native")
    trigger = re.compile(r"restore")
    summary = "Trainer.restore/can_restore are removed in V2"
    advice = "Construct the trainer again with the same RunConfig(name, storage_path); V2 resumes it."

    attrs = frozenset({"restore", "can_restore"})

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        names = index.qualified(node.value)
        if any(n.startswith(("ray.train.", "ray.air.", "compat.")) and n.endswith("Trainer") for n in names):
            return f"`Trainer.{node.attr}` is removed in V2"
        call = item.parent
        if node.attr == "restore" and names & TUNERS and isinstance(call, ast.Call) and call.func is node:
            if len(call.args) < 2 and not any(k.arg in ("trainable", None) for k in call.keywords):
                return self.complete(
                    "`Tuner.restore(path)` without the trainable raises TypeError on Ray 2.60 (required since "
                    "Ray 2.5): pass the trainable the experiment ran, `Tuner.restore(path, trainable=...)`"
                )
        return None


TUNERS = frozenset({"ray.tune.Tuner", "ray.tune.tuner.Tuner"})
