"""RTM111: the trial API of the train context."""

from __future__ import annotations

import re

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
    advice = "Use get_context().get_experiment_name() and get_context().get_storage()."

    call_attrs = frozenset(TRIAL_METHODS)
    unqualified_words = ("get_trial_",)

    def check(self, index, item):  # type: ignore[no-untyped-def]
        return f"`{item.node.func.attr}()` is rejected by V2"
