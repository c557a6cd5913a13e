"""RTM101: a report without a checkpoint is dropped by V2."""

from __future__ import annotations

import re

import libcst as cst

from migrate.rules._flags import FlagRule, is_report, keyword, qualified


class FreeFloatingReport(FlagRule):
    """## What it does
    Flags ``train.report(metrics)`` / ``session.report(metrics)`` calls without a
    checkpoint.

    ## Why is this bad?
    V1 logs every report to progress.csv/result.json and ``metrics_dataframe``. V2 keeps
    only metrics attached to a checkpoint: these metrics are silently dropped.

    ## Example
    ```python
    from ray import train


    def train_func(config):
        train.report({"loss": 0.1})
    ```

    ## Use instead
    ```python
    from ray import train


    def train_func(config):
        train.report({"loss": 0.1}, checkpoint=train.Checkpoint.from_directory("ckpt"))
    ```

    ## Fix safety
    No fix: whether to attach a checkpoint, log to a tracker, or read metrics in
    ``UserCallback.after_report`` is a design choice.
    """

    code = "RTM101"
    name = "free-floating-report"
    trigger = re.compile(r"report")
    summary = "report() without a checkpoint: V2 drops these metrics"
    advice = (
        "Attach a checkpoint (checkpoint=...), log to an experiment tracker, or read every "
        "worker's metrics in UserCallback.after_report; compat's RunConfig(keep_v1_logs=True) "
        "keeps V1's logs meanwhile."
    )

    def check(self, visitor, node):  # type: ignore[no-untyped-def]
        if not isinstance(node, cst.Call) or not is_report(qualified(visitor, node.func)):
            return None
        positional = [a for a in node.args if a.keyword is None and a.star == ""]
        checkpoint = positional[1] if len(positional) >= 2 else keyword(node, "checkpoint")
        if checkpoint is not None and not (isinstance(checkpoint.value, cst.Name) and checkpoint.value.value == "None"):
            return None
        if any(a.star for a in node.args):
            return None  # **kwargs may carry the checkpoint
        return "report() without a checkpoint: V2 keeps no free-floating metrics"
