"""RTM100: every old-API reference no rule rewrote."""

from __future__ import annotations

import ast
import re

from migrate.rules._flags import FlagRule

OLD_PREFIXES = ("ray.air", "ray.train.session")


class LeftoverOldApi(FlagRule):
    """## What it does
    Runs after every rewrite and flags each remaining reference to ``ray.air`` or the
    session module: imports of names without a ``ray.train`` home, a session object
    used as a value (passed to a Lightning callback, ``session = None`` fallbacks), and
    anything else the codemod could not rewrite safely. Nothing old is left unreported.

    ## Why is this bad?
    These references either fail under V2 or are silently wrong there.

    ## Example
    ```python
    from ray.air import session

    callback = ReportCallback(session)
    ```

    ## Use instead
    ```python
    from ray import train

    callback = ReportCallback(train)
    ```

    ## Fix safety
    No fix: each case needs a person to decide.
    """

    code = "RTM100"
    name = "leftover-old-api"
    trigger = re.compile(r"\bair\b|session")
    summary = "A ray.air / session reference that no rule could rewrite"
    advice = "Replace it with its ray.train equivalent by hand."

    refs = True
    after_rewrites = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        if isinstance(item.parent, ast.Attribute) and item.parent.value is item.node:
            return None  # report the longest expression only
        names = sorted(n for n in index.qualified(item.node) if n.startswith(OLD_PREFIXES))
        if names:
            return f"`{names[0]}` is old API and was not rewritten"
        return None
