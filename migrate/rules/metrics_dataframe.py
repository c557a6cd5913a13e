"""RTM102: ``Result.metrics_dataframe`` changes meaning under V2."""

from __future__ import annotations

import re

from migrate._index import Index
from migrate._roles import is_trainer, roles_of
from migrate.rules._flags import FlagRule


class MetricsDataframe(FlagRule):
    """## What it does
    Flags reads of ``.metrics_dataframe``, except on a Tune ``ResultGrid``'s results
    (``grid[0]``, ``grid.get_best_result()``, ``for r in grid``), which keep a row per report
    under V2 too.

    ## Why is this bad?
    Under V1 it has one row per report (rank 0); under V2 one row per checkpoint, and
    ``None`` when no checkpoint was reported. Code that plots every step breaks silently.

    ## Example
    ```python
    losses = result.metrics_dataframe["loss"]
    ```

    ## Use instead
    ```python
    losses = [metrics["loss"] for _, metrics in result.best_checkpoints]
    ```

    ## Fix safety
    No fix: what the code wants from the rows decides the replacement.
    """

    code = "RTM102"
    severity = "silent"
    name = "metrics-dataframe"
    trigger = re.compile(r"metrics_dataframe")
    summary = "metrics_dataframe has one row per checkpoint under V2, not per report"
    advice = (
        "Under V2 it has one row per checkpoint (None without checkpoints). Use "
        "result.best_checkpoints, or log per-step metrics to a tracker."
    )

    attrs = frozenset({"metrics_dataframe"})
    unqualified_words = ("metrics_dataframe",)

    def check(self, index, item):  # type: ignore[no-untyped-def]
        if roles_of(index).tune and not roles_of(index).train and not _runs_a_trainer(index):
            return None  # a Tune ResultGrid's results: Tune keeps every row under V1 and V2
        if self.is_tune_result(index, item.node.value):
            return None  # `grid.get_best_result().metrics_dataframe`: Tune's, the same under V2
        return "`.metrics_dataframe` changes meaning under V2"


def _runs_a_trainer(index: Index) -> bool:
    return is_trainer(index.names)
