"""RTM101: a report without a checkpoint is dropped by V2."""

from __future__ import annotations

import ast
import re

from migrate._roles import roles_of
from migrate.rules._flags import FlagRule, is_none, is_report, keyword


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

    Not flagged: the report in one branch of an ``if`` whose other branch reports a checkpoint
    (``if rank == 0: report(m, checkpoint=c) else: report(m)``): that round has a checkpoint,
    and V2 keeps its metrics.

    ## Fix safety
    No fix: whether to attach a checkpoint, log to a tracker, or read metrics in
    ``UserCallback.after_report`` is a design choice.
    """

    code = "RTM101"
    severity = "silent"
    name = "free-floating-report"
    trigger = re.compile(r"report")
    summary = "report() without a checkpoint: V2 drops these metrics"
    advice = (
        "Attach a checkpoint (checkpoint=...), log to an experiment tracker, or read every "
        "worker's metrics in UserCallback.after_report; compat's RunConfig(keep_v1_logs=True) "
        "keeps V1's logs meanwhile."
    )

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        if not isinstance(node, ast.Call) or not is_report(index.qualified(node.func)):
            return None
        if roles_of(index).of(item.functions) == "tune":
            return None  # Tune keeps every result of a function trainable, under V1 and V2
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None  # *args / **kwargs may carry the checkpoint
        if _checkpoint_of(node) is not None:
            return None
        if self._other_branch_checkpoints(index, item.parent):
            return None  # the "only rank 0 passes a checkpoint" round: it has a checkpoint
        return "report() without a checkpoint: V2 keeps no free-floating metrics"

    def _other_branch_checkpoints(self, index, statement) -> bool:  # type: ignore[no-untyped-def]
        """``statement`` is a branch of an ``if`` whose other branch reports a checkpoint (``if
        rank == 0: report(m, checkpoint=c) else: report(m)``): every worker reports in the same
        round, one with a checkpoint, so V2 (and compat) keep the round's metrics."""
        branches: dict[int, list[ast.stmt]] | None = getattr(self, "_branches", None)
        if branches is None:
            branches = {}
            self._branches = branches
            for node in ast.walk(index.tree):
                if isinstance(node, ast.If):
                    for child in node.body:
                        branches[id(child)] = node.orelse
                    for child in node.orelse:
                        branches[id(child)] = node.body
        other = branches.get(id(statement))
        if not other:
            return False
        calls = (n for branch in other for n in ast.walk(branch) if isinstance(n, ast.Call))
        return any(is_report(index.qualified(c.func)) and _checkpoint_of(c) is not None for c in calls)


def _checkpoint_of(call: ast.Call) -> ast.expr | None:
    """The checkpoint a report call passes (None: none, or ``None``)."""
    checkpoint = call.args[1] if len(call.args) >= 2 else getattr(keyword(call, "checkpoint"), "value", None)
    return None if checkpoint is None or is_none(checkpoint) else checkpoint
