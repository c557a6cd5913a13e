"""RTM109: ``FailureConfig(fail_fast=...)``."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule, is_ray_class, keyword


class FailFast(FlagRule):
    """## What it does
    Flags ``FailureConfig(fail_fast=...)``.

    ## Why is this bad?
    ``fail_fast`` is a Tune option; V2 raises on it.

    ## Example
    ```python
    from ray.train import FailureConfig

    failure = FailureConfig(max_failures=0, fail_fast=True)
    ```

    ## Use instead
    ```python
    from ray.train import FailureConfig

    failure = FailureConfig(max_failures=0)
    ```

    ## Fix safety
    No fix: removing it is right for V2 only.
    """

    code = "RTM109"
    severity = "breaks"
    name = "fail-fast"
    trigger = re.compile(r"fail_fast")
    summary = "FailureConfig(fail_fast=...) is rejected by V2"
    advice = "Remove it; FailureConfig(max_failures=0) already stops at the first failure."

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        if is_ray_class(index.qualified(node.func), "FailureConfig") and keyword(node, "fail_fast") is not None:
            return "`FailureConfig(fail_fast=...)` is rejected by V2"
        return None
