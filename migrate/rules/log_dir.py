"""RTM105: ``Result.log_dir`` does not exist."""

from __future__ import annotations

import ast
import re

from migrate._index import Index
from migrate._values import UNKNOWN, values_of
from migrate.rules._flags import FlagRule


class LogDir(FlagRule):
    """## What it does
    Flags ``.log_dir`` reads on what may be a Ray ``Result`` (``result.log_dir``,
    ``trainer.fit().log_dir``, ``grid.get_best_result().log_dir``), not on other objects that
    have one (``args.log_dir``, a Lightning ``Trainer`` or logger, ``self.log_dir``).

    ## Why is this bad?
    ``Result.log_dir`` was removed; it raises ``AttributeError`` under V1 and V2.

    ## Example
    ```python
    print(result.log_dir)
    ```

    ## Use instead
    ```python
    print(result.path)
    ```

    ## Fix safety
    No fix: ``log_dir`` pointed at a checkpoint directory in old releases and at the trial
    directory in others; ``result.path`` or ``result.checkpoint.path`` depends on intent.
    """

    code = "RTM105"
    severity = "breaks"
    name = "result-log-dir"
    trigger = re.compile(r"log_dir")
    summary = "Result.log_dir was removed; use result.path or result.checkpoint.path"
    advice = "Use result.path (the run directory) or result.checkpoint.path."

    attrs = frozenset({"log_dir"})
    unqualified_words = ("log_dir",)

    def check(self, index, item):  # type: ignore[no-untyped-def]
        if self._may_be_result(index, item.node.value):
            return "`.log_dir` no longer exists"
        return None

    def _may_be_result(self, index: Index, node: ast.expr, depth: int = 0) -> bool:
        """``node`` may hold a Ray ``Result``: a trainer's or Tuner's ``fit()``, a grid's
        result, ``Result(...)``, a name any of whose values is one, or a name the module shows
        no value of (a parameter, a loop variable) that reads as a result. Not: a name whose
        every value is something else (``args = parser.parse_args()``, a Lightning logger),
        ``self``, a Lightning callback's ``trainer`` (Lightning's ``Trainer.log_dir`` exists)."""
        if depth > 8:
            return False
        if self.is_tune_result(index, node):
            return True
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("fit", "get_best_result"):
                return True
            return any(n.startswith("ray.") and n.endswith(".Result") for n in index.qualified(node.func))
        if isinstance(node, ast.Subscript):
            return self._may_be_result(index, node.value, depth + 1)
        if isinstance(node, ast.Attribute):
            return _RESULT_NAME.search(node.attr) is not None
        if isinstance(node, ast.Name):
            values = values_of(index).of(node)
            known = [v for v in values if v is not UNKNOWN]
            if any(self._may_be_result(index, v, depth + 1) for v in known):
                return True
            if values and len(known) == len(values):
                return False  # every value the module binds it to is something else
            return _RESULT_NAME.search(node.id) is not None
        return False


# A name that reads as a Ray result: result, results, best_result, res, trial_result, ...
_RESULT_NAME = re.compile(r"result|(?:^|_)res(?:_|$)", re.IGNORECASE)
