"""RTM106: Tune callbacks in ``RunConfig(callbacks=...)``."""

from __future__ import annotations

import ast
import re

from migrate._index import Index
from migrate._values import values_of
from migrate.rules._flags import FlagRule, is_ray_class, keyword
from migrate.tables import TUNE_CALLBACK_PREFIXES


class TuneCallbacks(FlagRule):
    """## What it does
    Flags Ray Tune callbacks (``ray.tune.*``, ``ray.air.integrations.*`` such as
    ``WandbLoggerCallback``, and the module's own classes deriving from one) passed to Ray
    Train's ``RunConfig(callbacks=[...])``, written inline or bound to a name first. Tune's own
    ``tune.RunConfig`` takes them and is not flagged.

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
        qualified = index.qualified(node.func)
        if not is_ray_class(qualified, "RunConfig") or any(n.startswith("ray.tune.") for n in qualified):
            return None  # tune.RunConfig takes Tune's callbacks (valid on 2.60)
        arg = keyword(node, "callbacks")
        if arg is None:
            return None
        values = values_of(index)
        tune_classes = _tune_callback_classes(index)
        for given in values.of(arg.value):  # a list written inline, or bound to a name first
            if not isinstance(given, (ast.List, ast.Tuple)):
                continue
            for element in given.elts:
                for value in values.of(element) or [element]:  # `cb = MLflowLoggerCallback(...)`
                    target = value.func if isinstance(value, ast.Call) else value
                    if any(n.startswith(TUNE_CALLBACK_PREFIXES) for n in index.qualified(target)):
                        return f"`{index.source(target)}` is a Ray Tune callback"
                    if isinstance(target, ast.Name) and target.id in tune_classes:
                        return f"`{target.id}` is a Ray Tune callback (it derives from `{tune_classes[target.id]}`)"
        return None


def _tune_callback_classes(index: Index) -> dict[str, str]:
    """Classes of this module that derive from a Tune callback: name -> the Tune base."""
    found: dict[str, str] | None = index.cache.get("tune_callback_classes")
    if found is None:
        found = index.cache["tune_callback_classes"] = {}
        classes = [n for n in ast.walk(index.tree) if isinstance(n, ast.ClassDef)]
        changed = True
        while changed:  # a class deriving from a class of the module that derives from one
            changed = False
            for cls in classes:
                if cls.name in found:
                    continue
                for base in cls.bases:
                    names = index.qualified(base)
                    tune = sorted(n for n in names if n.startswith(TUNE_CALLBACK_PREFIXES))
                    local = base.id if isinstance(base, ast.Name) and base.id in found else None
                    if tune or local:
                        found[cls.name] = tune[0] if tune else found[local]  # type: ignore[index]
                        changed = True
                        break
    return found
