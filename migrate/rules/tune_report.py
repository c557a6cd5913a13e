"""RTM114: ``tune.report`` inside a training function."""

from __future__ import annotations

import re

from migrate._roles import roles_of
from migrate.rules._flags import FlagRule

TUNE_REPORT = {"ray.tune.report", "ray.air.session.report_tune", "ray.tune.trainable.session.report"}


class TuneReport(FlagRule):
    """## What it does
    Flags ``tune.report(...)`` called inside a function that the module does not hand to
    Ray Tune (``tune.Tuner``, ``tune.run``, ...) as a function trainable, where it is right
    (and what RTM005 writes).

    ## Why is this bad?
    In a Ray Train training function it reports nothing under V2; in a Tune function it is
    right. Only a person can tell which the function is.

    ## Example
    ```python
    from ray import tune


    def train_func(config):
        tune.report({"loss": 0.1})
    ```

    ## Use instead
    ```python
    from ray import train


    def train_func(config):
        train.report({"loss": 0.1})
    ```

    ## Fix safety
    No fix: correct in a Tune trainable, wrong in a Train worker.
    """

    code = "RTM114"
    severity = "silent"
    name = "tune-report"
    trigger = re.compile(r"report")
    summary = "tune.report inside a function: use train.report in a Train training function"
    advice = "In a Ray Train training function use ray.train.report; keep tune.report only in Tune trainables."

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        if item.function_depth > 0 and index.qualified(item.node.func) & TUNE_REPORT:
            if roles_of(index).of(item.functions) == "tune":
                return None  # a Tune function trainable: where tune.report belongs
            return "`tune.report` in a function"
        return None
