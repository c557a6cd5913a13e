"""RTM105: ``Result.log_dir`` does not exist."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule


class LogDir(FlagRule):
    """## What it does
    Flags ``.log_dir`` reads (``result.log_dir``).

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
        return "`.log_dir` no longer exists"
