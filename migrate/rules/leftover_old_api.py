"""RTM100: every old-API reference no rule rewrote."""

from __future__ import annotations

import re

import libcst as cst
from libcst.metadata import ParentNodeProvider

from migrate.rules._flags import FlagRule, qualified

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

    def check(self, visitor, node):  # type: ignore[no-untyped-def]
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return None
        parent = visitor.get_metadata(ParentNodeProvider, node, None)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return None  # report the longest expression only
        names = sorted(n for n in qualified(visitor, node) if n.startswith(OLD_PREFIXES))
        if names:
            return f"`{names[0]}` is old API and was not rewritten"
        return None
