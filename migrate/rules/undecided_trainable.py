"""RTM116: a session call in a function whose role (Tune trainable or Train loop) the module does not show."""

from __future__ import annotations

import re

from migrate import _imports
from migrate._roles import roles_of
from migrate.rules._flags import FlagRule
from migrate.tables import SESSION_FUNCTIONS, SESSION_MODULES

# ray.train functions whose right replacement depends on who runs the function.
TRAIN_SESSION = {"ray.train.report": "report", "ray.train.get_checkpoint": "get_checkpoint"}


class UndecidedTrainable(FlagRule):
    """## What it does
    In a module that uses Ray Tune (or whose functions another module of the tree hands to
    Tune), flags ``session.report`` / ``session.get_checkpoint``
    and ``ray.train.report`` / ``ray.train.get_checkpoint`` calls inside a function that the
    module neither passes to a Trainer nor to ``tune.Tuner`` / ``tune.run`` (a helper, or a
    function another module runs).

    ## Why is this bad?
    Inside a Train loop the call must be ``ray.train.report``; inside a Tune function
    trainable it must be ``ray.tune.report`` (under V2 ``ray.train.report`` there raises).
    The codemod rewrites ``session.*`` to ``ray.train`` (RTM002), which is wrong if Tune
    runs the function.

    ## Example
    ```python
    from ray import tune
    from ray.air import session


    def step(config):  # run by a Tuner defined in another module
        session.report({"score": 1.0})
    ```

    ## Use instead
    ```python
    from ray import tune


    def step(config):  # run by a Tuner defined in another module
        tune.report({"score": 1.0})
    ```

    ## Fix safety
    No fix: only the code that runs the function tells which API is right.
    """

    code = "RTM116"
    severity = "silent"
    name = "undecided-trainable"
    # report / get_checkpoint: a module that never names Tune may be one the tree pass says Tune runs.
    trigger = re.compile(r"report|get_checkpoint")
    summary = "Session call in a function not shown to be a Tune trainable or a Train loop"
    advice = (
        "If Ray Tune runs this function (tune.Tuner, tune.run), use ray.tune.report / ray.tune.get_checkpoint; "
        "if a Trainer runs it, use ray.train.report / ray.train.get_checkpoint."
    )
    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        if not item.functions or not roles_of(index).uses_tune or roles_of(index).of(item.functions) is not None:
            return None
        names = index.qualified(item.node.func)
        function = _imports.member(set(names), SESSION_MODULES, SESSION_FUNCTIONS)
        if function not in ("report", "get_checkpoint"):
            function = next((TRAIN_SESSION[n] for n in names if n in TRAIN_SESSION), None)
        if function is None:
            return None
        # The call as its module spells it: a function of the user's named ``report`` is not read
        # as the call itself ("runs `report()`, which calls `ray.train.report()`").
        called = next((n for n in sorted(names) if n.endswith(f".{function}")), function)
        return f"cannot tell whether Tune or a Trainer runs `{item.functions[-1]}()`, which calls `{called}()`"
