"""RTM100: every old-API reference no rule rewrote."""

from __future__ import annotations

import ast
import re

from migrate import catalogue
from migrate._index import Index
from migrate.rules._flags import FlagRule, Milder
from migrate.rules._names import exported as exported_names
from migrate.tables import AIR_TO_TRAIN, SESSION_FUNCTIONS, SESSION_MODULES

OLD_PREFIXES = ("ray.air", "ray.train.session")
# Under ray.air but not old: Ray 2.60 keeps Tune's integrations here (WandbLoggerCallback,
# setup_mlflow, keras' ReportCheckpointCallback), valid in either setting (the catalogue's
# moved names, like ray.air.callbacks.*, are still flagged with their new home), and its private
# ray.air._internal modules, which V2's own code imports (uri_utils, usage, filelock, ...):
# private API, but not V1's, and flipping the setting does not remove them.
STILL_THERE = ("ray.air.integrations.", "ray.air._internal.")


class LeftoverOldApi(FlagRule):
    """## What it does
    Runs after every rewrite and flags each remaining reference to ``ray.air`` or the
    session module: imports of names without a ``ray.train`` home, a session object
    used as a value (passed to a Lightning callback, ``session = None`` fallbacks), and
    anything else the codemod could not rewrite safely. Nothing old is left unreported. What
    Ray 2.60 keeps under ``ray.air`` in either setting is not old: ``ray.air.integrations``
    (Tune's callbacks) and the private ``ray.air._internal`` modules V2's own code imports.

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
    severity = "breaks"
    name = "leftover-old-api"
    trigger = re.compile(r"\bair\b|session")
    summary = "A ray.air / session reference that no rule could rewrite"
    advice = "Replace it with its ray.train equivalent by hand."

    refs = True
    after_rewrites = True

    def check_module(self, index: Index) -> list[tuple[ast.AST, str | Milder]]:
        found: list[tuple[ast.AST, str | Milder]] = []
        imported = {name for name, _ in index.imports}
        for node in index.star_imports:
            if node.level or not node.module or not node.module.startswith(OLD_PREFIXES):
                continue
            if node.module in SESSION_MODULES:  # the session's functions, called by their bare names
                called = sorted(set(SESSION_FUNCTIONS) & index.loaded - imported)
                moves = ", ".join(f"`{n}(...)` -> `train.{SESSION_FUNCTIONS[n]}(...)`" for n in called)
                hint = (
                    f"names used here: {', '.join(called)}; import instead: `from ray import train` and {moves}"
                    if called
                    else "no name it brings is used here: remove it"
                )
                found.append((node, f"`from {node.module} import *` hides which old names this module uses; {hint}"))
                continue
            used = sorted((set(AIR_TO_TRAIN) | {"session"}) & index.loaded - imported)
            instead = [f"`from ray.train import {', '.join(AIR_TO_TRAIN[n] for n in used if n != 'session')}`"]
            if "session" in used:
                instead.append("`from ray import train` (`session.X(...)` -> `train.X(...)`)")
            if len(instead) == 2 and not [n for n in used if n != "session"]:
                instead = instead[1:]
            hint = (
                f"names used here: {', '.join(used)}; import instead: {' and '.join(instead)}"
                if used
                else ("no name it brings is used here: remove it")
            )
            found.append((node, f"`from {node.module} import *` hides which old names this module uses; {hint}"))
        # A test's mock of a path the rewrites move: it silently stops mocking (nothing raises).
        found += [(node, Milder(self.complete(text), "silent")) for node, text in _patched_paths(index)]
        found += _unused_imports(self, index)
        old = {name: q for name, q in index.imports if q.startswith(OLD_PREFIXES)}
        for statement in index.tree.body:
            if not isinstance(statement, ast.Assign) or not any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in statement.targets
            ):
                continue
            if isinstance(statement.value, (ast.List, ast.Tuple)):
                for element in statement.value.elts:
                    if isinstance(element, ast.Constant) and element.value in old:
                        found.append((element, f"`__all__` re-exports `{element.value}` ({old[element.value]})"))
        return found

    def check(self, index, item):  # type: ignore[no-untyped-def]
        if isinstance(item.parent, ast.Attribute) and item.parent.value is item.node:
            return None  # report the longest expression only
        if id(item.node) in index.star_resolved:
            return None  # named in the star import's own finding
        names = sorted(n for n in index.qualified(item.node) if _old(n))
        if names:
            entry = catalogue.lookup(names[0])  # what Ray's releases say replaces it
            if entry is not None:
                return self.complete(f"{entry.message()} (not rewritten)")
            return f"`{names[0]}` is old API and was not rewritten"
        return None


def _unused_imports(rule: FlagRule, index: Index) -> list[tuple[ast.AST, str | Milder]]:
    """Old imports the rewrites left that nothing here reads (RTM006 keeps those marked
    ``# noqa: F401`` and those of a package's ``__init__.py``: re-exports, deliberate): the
    import alone breaks the module the day Ray removes what it names, with no use to flag."""
    found: list[tuple[ast.AST, str | Milder]] = []
    exported = exported_names(index)  # re-exports in __all__ are flagged on their own
    for node, _, _ in index.import_statements:
        if isinstance(node, ast.ImportFrom) and (node.level or not node.module):
            continue  # a relative import is the project's own code
        for alias in node.names:
            if isinstance(node, ast.Import):
                if alias.asname is None:
                    continue  # `import ray.air.x` binds `ray`: its uses are attribute paths, judged there
                name, qualified = alias.asname, alias.name
            else:
                name, qualified = alias.asname or alias.name, f"{node.module}.{alias.name}"
            if alias.name == "*" or name in index.loaded or name in exported or not _old(qualified):
                continue
            entry = catalogue.lookup(qualified)
            what = entry.message() if entry is not None else f"`{qualified}` is old API"
            found.append(
                (
                    alias,
                    rule.complete(
                        f"{what}; imported and unused here, kept (a re-export?): the import breaks this "
                        "module the day Ray removes it. Re-export its replacement, or remove the import"
                    ),
                )
            )
    return found


def _old(qualified: str) -> bool:
    """Old API: under ray.air or V1's session module, but not what 2.60 keeps there (its
    integrations) unless the catalogue says it moved or went."""
    return qualified.startswith(OLD_PREFIXES) and (
        not qualified.startswith(STILL_THERE) or catalogue.lookup(qualified) is not None
    )


PATCHERS = frozenset({"unittest.mock.patch", "mock.patch", "pytest_mock.MockerFixture.patch"})


def _patched_paths(index: Index) -> list[tuple[ast.AST, str]]:
    """``mock.patch("ray.air.session.get_checkpoint")`` (also ``mocker.patch(...)``, a decorator):
    the rewrites move the code it mocks to ``ray.train``, so the test would silently stop mocking
    it. Flagged with the path the migrated code is looked up at."""
    found: list[tuple[ast.AST, str]] = []
    if "patch" not in index.text:
        return found
    for item in index.nodes:
        node = item.node
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name != "patch" and not index.qualified(func) & PATCHERS:
            continue
        target = node.args[0]
        if not isinstance(target, ast.Constant) or not isinstance(target.value, str):
            continue
        path = target.value
        module, _, function = path.rpartition(".")
        new = None
        if module in SESSION_MODULES and function in SESSION_FUNCTIONS:
            call = SESSION_FUNCTIONS[function]
            new = f"ray.train.{call}" if "(" not in call else "ray.train.get_context"
        elif path.startswith(OLD_PREFIXES) and not path.startswith(STILL_THERE):
            entry = catalogue.lookup(path)
            if entry is not None and entry.home:
                new = entry.home
            elif module.startswith(("ray.air.config", "ray.air.result", "ray.air.checkpoint")) or module == "ray.air":
                new = f"ray.train.{AIR_TO_TRAIN[function]}" if function in AIR_TO_TRAIN else None
            if new is None:
                found.append(
                    (
                        target,
                        f"`patch({path!r})` mocks old API the rewrites move off it: patch what the migrated code calls",
                    )
                )
                continue
        if new is not None:
            found.append(
                (
                    target,
                    f"`patch({path!r})` mocks old API that the rewrites move: the migrated code calls "
                    f"`{new}`; patch {new!r} (the test stops mocking it otherwise)",
                )
            )
    return found
