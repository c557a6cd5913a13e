"""RTM118: an exception handler for V1's own failure class."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule

# Raised by V1 only: under V2, fit() raises ray.train.TrainingFailedError (the V2 class),
# which these names are not.
V1_FAILURE_CLASSES = frozenset(
    {
        "ray.train.base_trainer.TrainingFailedError",
        "ray.train.trainer.TrainingFailedError",
    }
)


class V1FailureClass(FlagRule):
    """## What it does
    Flags references to V1's failure class by its V1 module
    (``ray.train.base_trainer.TrainingFailedError``), typically in ``except`` clauses around
    ``trainer.fit()``, that are left after the rewrites: RTM008 rewrites
    ``from ray.train.base_trainer import TrainingFailedError`` to the public name.

    ## Why is this bad?
    Under V2, ``fit()`` raises ``ray.train.TrainingFailedError`` (V2's class, with
    ``WorkerGroupError`` and ``ControllerError`` as subclasses), which is not V1's class: the
    handler silently stops catching, and retry or alerting code never runs. (compat's
    ``TrainingFailedError`` subclasses both V1's and V2's, so handlers around compat
    trainers keep working; this flag is for the V1 module paths.)

    ## Example
    ```python
    import ray.train.base_trainer

    try:
        trainer.fit()
    except ray.train.base_trainer.TrainingFailedError:
        alert()
    ```

    ## Use instead
    ```python
    import ray.train

    try:
        trainer.fit()
    except ray.train.TrainingFailedError:
        alert()
    ```

    ## Fix safety
    No fix for what is left (a module import, an attribute path): code that reads the
    exception's attributes needs to be checked against V2's class. The from-import is RTM008's
    safe fix.
    """

    code = "RTM118"
    severity = "silent"
    name = "v1-failure-class"
    trigger = re.compile(r"TrainingFailedError")
    after_rewrites = True  # RTM008 rewrites `from ray.train.base_trainer import ...`: what is left
    summary = "V1's failure class in a handler: V2's fit() raises ray.train.TrainingFailedError"
    advice = "Catch ray.train.TrainingFailedError (V2: WorkerGroupError and ControllerError are subclasses)."
    refs = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        found = sorted(index.qualified(item.node) & V1_FAILURE_CLASSES)
        if found:
            return f"`{found[0]}` is V1's class: V2's fit() raises ray.train.TrainingFailedError, not this"
        return None
