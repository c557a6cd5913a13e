"""RTM121: V1's auto-filled result keys read from ``result.metrics`` or ``metrics_dataframe``."""

from __future__ import annotations

import ast
import re

from migrate.rules._flags import FlagRule, Milder

# Keys V1 (Tune's trial runner) adds to every result; V2 adds none of them.
AUTO_KEYS = frozenset(
    {
        "training_iteration", "time_total_s", "time_this_iter_s", "timesteps_total", "episodes_total",
        "done", "trial_id", "date", "timestamp", "pid", "hostname", "node_ip", "time_since_restore",
        "iterations_since_restore", "timesteps_since_restore", "experiment_tag", "checkpoint_dir_name",
        "should_checkpoint",
    }
)  # fmt: skip
RESULT_ATTRS = frozenset({"metrics", "metrics_dataframe"})


class V1ResultKeys(FlagRule):
    """## What it does
    Flags reading a key that V1 adds to every result (``training_iteration``,
    ``time_total_s``, ``timesteps_total``, ``done``, ``trial_id``, ``date``, ...) from
    ``result.metrics`` or ``result.metrics_dataframe``: ``result.metrics["training_iteration"]``,
    ``result.metrics.get("time_total_s")``, ``result.metrics_dataframe["date"]``. Not on a
    Tune ``ResultGrid``'s results (``grid[0]``, ``grid.get_best_result()``, ``for r in grid``):
    Tune fills these keys under V2 too.

    ## Why is this bad?
    V2 adds none of them: the key is missing (``KeyError``: severity ``breaks``; ``None`` from
    ``.get``: ``silent``), and ``result.metrics`` itself is the latest checkpoint's metrics, or
    ``None``.

    ## Example
    ```python
    def summarize(result):
        return result.metrics["training_iteration"]
    ```

    ## Use instead
    ```python
    def summarize(result):
        return result.metrics["epoch"]  # report it yourself: train.report({"epoch": epoch, ...})
    ```

    ## Fix safety
    No fix: the training function must report what the code reads.
    """

    code = "RTM121"
    severity = "breaks"
    name = "v1-result-keys"
    trigger = re.compile(r"metrics")
    summary = "A key V1 adds to every result (training_iteration, time_total_s, ...) is missing under V2"
    advice = (
        "Report the value yourself (train.report({'epoch': epoch, ...})) and read that key; the run's time is "
        "in your own timer, the run's name in RunConfig(name=...)."
    )

    attrs = RESULT_ATTRS
    call_attrs = frozenset({"get"})
    unqualified_words = tuple(sorted(AUTO_KEYS - {"done", "date", "timestamp", "pid", "hostname"}))
    # check() needs `metrics`/`metrics_dataframe` and one of the keys as a string literal.
    unqualified_needs = (
        re.compile(r"\bmetrics(?:_dataframe)?\b"),
        re.compile("[\"']({})[\"']".format("|".join(unqualified_words))),
    )

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        if isinstance(node, ast.Call):  # result.metrics.get("key"): None under V2, nothing raises
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            if isinstance(receiver, ast.Attribute) and receiver.attr in RESULT_ATTRS and node.args:
                if self.is_tune_result(index, receiver.value):
                    return None
                found = _finding(node.args[0], receiver.attr)
                return Milder(found, "silent") if found else None
            return None
        parent = item.parent
        if isinstance(node, ast.Attribute) and isinstance(parent, ast.Subscript) and parent.value is node:
            if self.is_tune_result(index, node.value):
                return None  # a Tune ResultGrid's result: Tune fills these keys under V2 too
            return _finding(parent.slice, node.attr)
        return None


def _finding(key: ast.expr, attr: str) -> str | None:
    if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value in AUTO_KEYS:
        return f"`{attr}[{key.value!r}]` is a key V1 adds to every result; V2 has no such key"
    return None
