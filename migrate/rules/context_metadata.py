"""RTM120: ``get_context().get_metadata()``: V2 keeps no metadata."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule


class ContextMetadata(FlagRule):
    """## What it does
    Flags ``get_metadata()`` called in a module that uses Ray Train's context
    (``ray.train.get_context().get_metadata()``, or on a context kept in a variable).

    ## Why is this bad?
    V1 handed a trainer's ``metadata=`` to every worker and attached it to each checkpoint;
    V2 keeps no metadata, and ``get_metadata()`` raises under V2.

    ## Example
    ```python
    from ray import train


    def train_func(config):
        version = train.get_context().get_metadata()["version"]
    ```

    ## Use instead
    ```python
    from ray import train


    def train_func(config):
        version = config["version"]  # pass it in train_loop_config
    ```

    ## Fix safety
    No fix: where the values come from instead (``train_loop_config``, a file in the
    checkpoint directory) is the code's choice.
    """

    code = "RTM120"
    severity = "breaks"
    name = "context-metadata"
    trigger = re.compile(r"get_metadata")
    summary = "get_context().get_metadata() raises under V2: V2 keeps no metadata"
    advice = (
        "Pass the values in train_loop_config; to keep them with a checkpoint, write them into the "
        "checkpoint directory (a JSON file beside the model)."
    )

    call_attrs = frozenset({"get_metadata"})
    unqualified_words = ("get_metadata",)
    unqualified_needs = (re.compile("get_context"),)  # see check()

    def check(self, index, item):  # type: ignore[no-untyped-def]
        if "get_context" not in index.text:
            return None  # another library's get_metadata()
        return "`get_metadata()` raises under V2"
