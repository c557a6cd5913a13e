"""RTM111: the trial API of the train context."""

from __future__ import annotations

import ast
import re

from migrate._values import values_of
from migrate.rules._flags import FlagRule

TRIAL_METHODS = ("get_trial_name", "get_trial_id", "get_trial_dir", "get_trial_resources")


class TrialApi(FlagRule):
    """## What it does
    Flags ``get_trial_name/get_trial_id/get_trial_dir/get_trial_resources`` calls (on the
    train context or the session).

    ## Why is this bad?
    Trials are a Tune concept; V2 raises a ``DeprecationWarning`` exception.

    ## Example
    ```python
    from ray import train


    def train_func(config):
        name = train.get_context().get_trial_name()
    ```

    ## Use instead
    ```python
    from ray import train


    def train_func(config):
        name = train.get_context().get_experiment_name()
    ```

    ## Fix safety
    No fix: a trial directory and a run's storage are not the same place.
    """

    code = "RTM111"
    severity = "breaks"
    name = "trial-api"
    trigger = re.compile(r"get_trial_")
    summary = "get_trial_name/id/dir/resources are rejected by V2"
    advice = (
        "In a Train function use get_context().get_experiment_name() and get_context().get_storage(); "
        "in a Tune trainable, ray.tune.get_context() has the trial API."
    )

    call_attrs = frozenset(TRIAL_METHODS)
    unqualified_words = ("get_trial_",)

    def check(self, index, item):  # type: ignore[no-untyped-def]
        receiver = item.node.func.value
        if any(n.startswith("ray.tune.") for n in index.qualified(item.node.func)):
            return None  # tune.get_trial_dir(): Tune's old function API (RTM128 names its replacement)
        if values_of(index).always(receiver, lambda v: _is_tune_context(index, v)):
            return None  # tune.get_context().get_trial_dir(): Tune's context has trials (valid on 2.60)
        return f"`{item.node.func.attr}()` is rejected by V2"


TUNE_CONTEXTS = frozenset({"ray.tune.get_context", "ray.tune.context.get_context"})


def _is_tune_context(index, value) -> bool:  # type: ignore[no-untyped-def]
    return isinstance(value, ast.Call) and bool(index.qualified(value.func) & TUNE_CONTEXTS)
