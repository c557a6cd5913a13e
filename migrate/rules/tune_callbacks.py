"""RTM106: Tune callbacks in ``RunConfig(callbacks=...)``."""

from __future__ import annotations

import re

import libcst as cst

from migrate.rules._flags import FlagRule, is_ray_class, keyword, qualified
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
    name = "tune-callbacks"
    trigger = re.compile(r"callbacks")
    summary = "Tune callbacks in RunConfig(callbacks=...) are rejected by V2"
    advice = (
        "Subclass ray.train.UserCallback and implement after_report(run_context, metrics, "
        "checkpoint), or log to the tracker from the training function."
    )

    def check(self, visitor, node):  # type: ignore[no-untyped-def]
        if not isinstance(node, cst.Call) or not is_ray_class(qualified(visitor, node.func), "RunConfig"):
            return None
        arg = keyword(node, "callbacks")
        if arg is None or not isinstance(arg.value, (cst.List, cst.Tuple)):
            return None
        for element in arg.value.elements:
            value = element.value
            target = value.func if isinstance(value, cst.Call) else value
            if any(n.startswith(TUNE_CALLBACK_PREFIXES) for n in qualified(visitor, target)):
                name = cst.Module(body=[]).code_for_node(target)
                return f"`{name}` is a Ray Tune callback"
        return None
