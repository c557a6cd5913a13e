"""RTM119 (--target native): what only compat provides, which native V2 does not."""

from __future__ import annotations

import ast
import re

from migrate.rules._flags import FlagRule, keyword
from migrate.rules._names import NATIVE, NATIVE_MODULES

# compat-only API -> what to do on native V2.
INSTEAD = {
    "keep_v1_logs": "V2 writes no progress.csv/result.json: log per-report metrics in a UserCallback.after_report "
    "or to an experiment tracker",
    "worker_metrics_dataframe": "V2 keeps no per-worker metrics: collect them in UserCallback.after_report "
    "(it receives every worker's metrics for each report)",
    "migration_report": "a compat diagnostic: drop it once the code runs natively",
    "session": "the V1 session API: use ray.train.report / get_checkpoint / get_context",
}


class CompatOnly(FlagRule):
    """## What it does
    With ``--target native``, flags what only compat provides: ``RunConfig(keep_v1_logs=...)``,
    ``result.worker_metrics_dataframe``, ``result.migration_report()``, ``compat.session``, and
    compat's own names (``compat.testing``, its warnings and errors), each with what to do on
    native V2.

    ## Why is this bad?
    Native ``ray.train`` V2 has none of these: the code fails (``TypeError`` for an unknown
    keyword, ``AttributeError`` for the result attributes) once compat is taken out.

    ## Example
    ```python
    import compat as train

    run_config = train.RunConfig(name="job", keep_v1_logs=True)
    ```

    ## Use instead
    ```python
    import compat as train

    run_config = train.RunConfig(name="job")
    ```

    ## Fix safety
    No fix: what replaces the V1 logs or the per-worker frame is the team's choice.
    """

    code = "RTM119"
    severity = "breaks"
    name = "compat-only"
    trigger = re.compile(r"keep_v1_logs|worker_metrics_dataframe|migration_report|compat")
    summary = "Something only compat provides (--target native)"
    advice = "Native ray.train V2 has no equivalent; see docs/migrate.md (--target native)."
    targets = ("native",)
    calls = True
    attrs = frozenset({"worker_metrics_dataframe", "migration_report"})
    refs = True
    unqualified_words = ()

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        if isinstance(node, ast.Call):
            names = index.qualified(node.func)
            if any(n.startswith("compat") and n.endswith("RunConfig") for n in names) and keyword(node, "keep_v1_logs"):
                return f"`RunConfig(keep_v1_logs=...)` exists only in compat; {INSTEAD['keep_v1_logs']}"
            return None
        if isinstance(node, ast.Attribute) and node.attr in self.attrs:
            if not any(q == "compat" or q.startswith("compat.") for _, q in index.imports):
                return None  # a module that does not use compat
            return f"`.{node.attr}` exists only in compat; {INSTEAD[node.attr]}"
        if isinstance(item.parent, ast.Attribute) and item.parent.value is node:
            return None  # report the longest expression only
        for name in sorted(index.qualified(node)):
            if not name.startswith("compat."):
                continue
            first = name.split(".")[1]
            if first in NATIVE or first == "torch":
                continue
            module, _, attr = name.rpartition(".")
            if module in NATIVE_MODULES and attr in NATIVE_MODULES[module][1]:
                continue  # compat.lightning.RayDDPStrategy is ray.train.lightning's own
            return f"`{name}` exists only in compat; {INSTEAD.get(first, 'there is no native equivalent')}"
        return None
