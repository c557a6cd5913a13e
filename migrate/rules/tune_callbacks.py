"""RTM106: Tune callbacks in ``RunConfig(callbacks=...)``."""

from __future__ import annotations

import ast
import re

from migrate._roles import resolve
from migrate.rules._flags import FlagRule, is_ray_class, keyword
from migrate.tables import TUNE_CALLBACK_PREFIXES


class TuneCallbacks(FlagRule):
    """## What it does
    Flags Ray Tune callbacks (``ray.tune.*``, ``ray.air.integrations.*`` such as
    ``WandbLoggerCallback``) passed to ``RunConfig(callbacks=[...])``, and any callback
    list whose items cannot be seen to be ``UserCallback`` instances.

    ## Why is this bad?
    V2 raises ``ValueError: All callbacks must be instances of ray.train.UserCallback``.

    ## Example
    ```python
    from ray.air.integrations.wandb import WandbLoggerCallback
    from ray.train import RunConfig

    run_config = RunConfig(callbacks=[WandbLoggerCallback(project="p")])
    ```

    ## Use instead
    ```python
    from ray.train import RunConfig

    run_config = RunConfig(callbacks=[])  # log from the workers, or a UserCallback
    ```

    ## Fix safety
    No fix: a Tune callback's hooks do not map one-to-one onto ``after_report``.
    """

    code = "RTM106"
    severity = "breaks"
    name = "tune-callbacks"
    trigger = re.compile(r"callbacks")
    summary = "Tune callbacks in RunConfig(callbacks=...) are rejected by V2"
    advice = (
        "Subclass ray.train.UserCallback and implement after_report(run_context, metrics, "
        "checkpoint), or log to the tracker from the training function."
    )

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        if not is_ray_class(index.qualified(node.func), "RunConfig"):
            return None
        arg = keyword(node, "callbacks")
        given = resolve(index, arg.value) if arg is not None else None  # also a list bound to a module name
        if not isinstance(given, (ast.List, ast.Tuple)):
            return None
        for value in given.elts:
            target = value.func if isinstance(value, ast.Call) else value
            if any(n.startswith(TUNE_CALLBACK_PREFIXES) for n in index.qualified(target)):
                return f"`{index.source(target)}` is a Ray Tune callback"
        return None
