"""RTM115: ``report(..., validate_fn=, validate_config=)``."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule, is_report, keyword


class OldValidationForm(FlagRule):
    """## What it does
    Flags ``report(..., validate_fn=..., validate_config=...)``.

    ## Why is this bad?
    This documented form is rejected by Ray 2.60 (``TypeError: unexpected keyword argument
    'validate_fn'``). compat accepts it under both backends.

    ## Example
    ```python
    from ray import train


    def train_func(config):
        train.report(metrics, checkpoint=ckpt, validate_fn=validate, validate_config={"epoch": 1})
    ```

    ## Use instead
    ```python
    from ray import train


    def train_func(config):
        train.report(metrics, checkpoint=ckpt, validation=train.ValidationTaskConfig(fn_kwargs={"epoch": 1}))
    ```

    ## Fix safety
    No fix: the function moves to ``TorchTrainer(validation_config=ValidationConfig(fn))``
    and takes keyword arguments instead of a config dict.
    """

    code = "RTM115"
    severity = "breaks"
    name = "old-validation-form"
    trigger = re.compile(r"validate_fn|validate_config")
    summary = "report(validate_fn=, validate_config=) is rejected by Ray 2.60"
    advice = (
        "Pass TorchTrainer(validation_config=ValidationConfig(fn)) and report(..., validation="
        "ValidationTaskConfig(fn_kwargs={...})); fn takes keyword arguments."
    )

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        if is_report(index.qualified(node.func)):
            if keyword(node, "validate_fn") is not None or keyword(node, "validate_config") is not None:
                return "`report(validate_fn=, validate_config=)` is rejected by Ray 2.60"
        return None
