"""RTM128: a name of Ray's V1-era API that the newest release no longer has (the catalogue)."""

from __future__ import annotations

import ast
import re

from migrate import catalogue
from migrate._index import Index, Node
from migrate.rules._flags import FlagRule
from migrate.tables import GUIDE

# ray.air and the session modules are RTM100's (it reports what the rewrites left of them, with
# the catalogue's advice): RTM128 takes the rest of Ray.
LEFT_TO_RTM100 = ("ray.air.", "ray.train.session.", "ray.train._internal.session.")


class V1EraApi(FlagRule):
    """## What it does
    Flags every use of a name, method or keyword of Ray's V1-era API that the newest Ray
    release does not have (or has only as V1's): Ray 2.0's `Trainer`, `train.world_size()`
    and `save_checkpoint`, the Predictors, the removed trainers (`LightningTrainer`,
    `HuggingFaceTrainer`, `SklearnTrainer`, ...), AIR's checkpoint methods, Tune's
    `checkpoint_dir`, and the rest of the catalogue that `scripts/ray_api_catalogue.py` reads
    from Ray's releases 2.0 to 2.60. Each finding names what replaces it.

    ## Why is this bad?
    The import fails, or the attribute or keyword does not exist, on the Ray releases compat
    supports, whatever `RAY_TRAIN_V2_ENABLED` says.

    ## Example
    ```python
    from ray import train

    def train_func(config):
        for epoch in range(2):
            rank = train.world_rank()
            train.report({"epoch": epoch, "rank": rank})
    ```

    ## Use instead
    ```python
    from ray import train

    def train_func(config):
        for epoch in range(2):
            rank = train.get_context().get_world_rank()
            train.report({"epoch": epoch, "rank": rank})
    ```

    ## Fix safety
    No fix: the replacement is a different API (the catalogue's advice says which).
    """

    code = "RTM128"
    severity = "breaks"
    name = "v1-era-api"
    trigger = re.compile(r"ray")
    summary = "A name of Ray's V1-era API that Ray 2.60 no longer has (from Ray's releases 2.0-2.60)"

    refs = True
    calls = True
    attrs = frozenset(catalogue.DISTINCT_MEMBERS) - catalogue.COMMON_MEMBER_NAMES
    after_rewrites = True  # judges what the rewrites left: a rewritten name is not a finding
    defers = True

    def check_module(self, index: Index) -> list[tuple[ast.AST, str]]:
        """`from ray.train import Trainer`: the import is where it breaks (its uses are not repeated)."""
        found: list[tuple[ast.AST, str]] = []
        for statement, _, _ in index.import_statements:
            if not isinstance(statement, ast.ImportFrom) or statement.level or not statement.module:
                continue
            for alias in statement.names:
                entry = _entry(f"{statement.module}.{alias.name}")
                if entry is not None:
                    found.append((statement, entry.message()))
        return found

    def check(self, index: Index, item: Node) -> str | None:
        node = item.node
        if isinstance(node, ast.Call):
            return self._keywords(index, node)
        if isinstance(item.parent, ast.Attribute) and item.parent.value is node:
            return None  # the longest expression is the finding
        if isinstance(node, ast.Name) and _imported_from(index, node.id):
            return None  # its import is the finding
        names = index.qualified(node)
        for name in sorted(names):
            entry = _entry(name)
            if entry is not None:
                return entry.message()
        if not names and isinstance(node, ast.Attribute) and node.attr in self.attrs:
            entry = catalogue.member_by_name(node.attr)
            if entry is not None:
                return entry.message()
        return None

    def _keywords(self, index: Index, call: ast.Call) -> str | None:
        found = []
        for callee in sorted(index.qualified(call.func)):
            for keyword in call.keywords:
                if keyword.arg is None:
                    continue
                entry = _entry(f"{callee}.({keyword.arg}=)", exact=True)
                if entry is not None:
                    found.append(entry.message())
            if found:
                break
        return "; ".join(found) or None

    def message(self, what: str) -> str:
        return f"{what}. See {GUIDE}"


def _entry(qualified: str, *, exact: bool = False) -> catalogue.Entry | None:
    if qualified.startswith(LEFT_TO_RTM100):
        return None
    return catalogue.lookup(qualified, exact=exact)


def _imported_from(index: Index, name: str) -> bool:
    """``name`` is bound by a from-import of a catalogue name (that import is flagged)."""
    return any(bound == name and _entry(q) is not None for bound, q in index.imports)
