"""RTM009: legacy ``tune.report(loss=...)`` keyword metrics become a dict."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from migrate._index import Index
from migrate.rules._base import Rule
from migrate.rules._names import REPORT_KEYWORDS, is_any_report

if TYPE_CHECKING:  # libcst only when a file needs the libcst form
    import libcst as cst
    from libcst.metadata import MetadataWrapper


def metric_keywords(call: ast.Call) -> bool:
    """``call`` passes its metrics as keywords (``report(loss=0.1)``, ``report(**metrics)``)."""
    if call.args or any(k.arg == "metrics" for k in call.keywords):
        return False
    return any(k.arg is None or k.arg not in REPORT_KEYWORDS for k in call.keywords)


class ReportKeywordMetrics(Rule):
    """## What it does
    Turns metrics passed as keywords, Ray Tune's legacy ``tune.report(loss=0.1, step=i)``
    (and ``tune.report(**metrics)``), into the dict every current ``report`` takes:
    ``tune.report({"loss": 0.1, "step": i})``. Its own keywords (``checkpoint=``, ...) stay.

    ## Why is this bad?
    ``report`` takes one dict of metrics since Ray 2.7, in Tune and in Train, V1 and V2 alike:
    the keyword form raises ``TypeError: report() got an unexpected keyword argument``.

    ## Example
    ```python
    from ray import tune


    def trainable(config):
        for step in range(3):
            tune.report(loss=0.1, step=step)
    ```

    ## Use instead
    ```python
    from ray import tune


    def trainable(config):
        for step in range(3):
            tune.report({"loss": 0.1, "step": step})
    ```

    ## Fix safety
    Safe: the keywords were the metrics' names and values, in the same order.
    """

    code = "RTM009"
    name = "report-keyword-metrics"
    trigger = re.compile(r"report")
    summary = "Pass report()'s metrics as a dict, not as keywords (the legacy tune.report form)"
    fix_safety = "safe"

    @classmethod
    def could_apply(cls, index: Index) -> bool:
        return any(
            isinstance(item.node, ast.Call)
            and metric_keywords(item.node)
            and is_any_report(index.qualified(item.node.func))
            for item in index.nodes
        )

    @classmethod
    def may_apply_after_rewrites(cls, first: Index) -> bool:
        # The rules before this one move report's import and rename its callee
        # (session.report -> train.report); none changes its arguments.
        return any(
            isinstance(item.node, ast.Call) and metric_keywords(item.node) and _spelled_report(item.node.func)
            for item in first.nodes
        )

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        from migrate.rules._cst import report_keyword_metrics

        return report_keyword_metrics.apply(self, wrapper)


def _spelled_report(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "report") or (
        isinstance(func, ast.Name) and func.id == "report"
    )
