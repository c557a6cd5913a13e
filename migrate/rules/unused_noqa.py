"""RTM900: a ``noqa`` comment naming a code that suppresses nothing on its line (ruff's RUF100)."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule


class UnusedNoqa(FlagRule):
    """## What it does
    Flags a ``# noqa: RTMnnn`` comment whose code suppresses nothing on its line (the code of
    a rule that ran). A ``# noqa`` without codes is left alone: other tools read it too.

    ## Why is this bad?
    A suppression that outlived its finding hides the next real finding on that line, and
    tells readers that something there still needs V1.

    ## Example
    ```python
    from ray import train


    def train_func(config):
        train.report({"loss": 0.1}, checkpoint=config["ckpt"])  # noqa: RTM101
    ```

    ## Use instead
    ```python
    from ray import train


    def train_func(config):
        train.report({"loss": 0.1}, checkpoint=config["ckpt"])
    ```

    ## Fix safety
    No fix: remove the code from the comment (or the comment).
    """

    code = "RTM900"
    severity = "warns"
    name = "unused-noqa"
    trigger = re.compile(r"noqa", re.IGNORECASE)
    summary = "A noqa comment naming a code that flags nothing on its line"
    advice = ""
    # Run by the engine over the final findings (migrate.noqa), not over the tree.

    def message(self, what: str) -> str:
        return what
