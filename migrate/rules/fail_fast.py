"""RTM109: ``FailureConfig(fail_fast=...)``."""

from __future__ import annotations

import re

from migrate.rules._flags import Rejected, RejectedKeyword


class FailFast(RejectedKeyword):
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
    name = "fail-fast"
    trigger = re.compile(r"fail_fast")
    summary = "FailureConfig(fail_fast=...) is rejected by V2"
    advice = "Remove it; FailureConfig(max_failures=0) already stops at the first failure."

    rejected = (Rejected("FailureConfig", ("fail_fast",), tune_takes_it=True),)  # Tune's keeps it
