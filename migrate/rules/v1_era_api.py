"""RTM128: a name of Ray's V1-era API that the newest release no longer has (the catalogue)."""

from __future__ import annotations

import ast
import re

from migrate import catalogue
from migrate._index import Index, Node
from migrate._roles import is_trainer, roles_of
from migrate._values import values_of
from migrate.rules._flags import FlagRule, Milder
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
    `checkpoint_dir` (also as a function trainable's parameter, silent: Tune no longer passes it),
    and the rest of the catalogue that `scripts/ray_api_catalogue.py` reads
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
    attrs = catalogue.MEMBER_NAMES | (frozenset(catalogue.DISTINCT_MEMBERS) - catalogue.COMMON_MEMBER_NAMES)
    _distinct = frozenset(catalogue.DISTINCT_MEMBERS) - catalogue.COMMON_MEMBER_NAMES
    defers = True  # (what a rewrite of the input leaves is judged too: the engine flags its output)

    def check_module(self, index: Index) -> list[tuple[ast.AST, str | Milder]]:
        """`from ray.train import Trainer`: the import is where it breaks (its uses are not repeated)."""
        found: list[tuple[ast.AST, str | Milder]] = []
        flagged: set[str] = set()  # names bound by those imports
        for statement, _, _ in index.import_statements:
            if not isinstance(statement, ast.ImportFrom) or statement.level or not statement.module:
                continue
            newest = catalogue.NEWEST_NAMES.get(statement.module)
            for alias in statement.names:
                entry = _entry(f"{statement.module}.{alias.name}")
                if entry is not None:
                    found.append((statement, entry.message()))
                    flagged.add(alias.asname or alias.name)
                elif (
                    newest is not None
                    and alias.name != "*"
                    and alias.name not in newest
                    and catalogue.lookup(f"{statement.module}.{alias.name}", exact=True) is None
                ):  # (a catalogue name of ray.air is RTM100's: not unknown)
                    found.append((statement, unknown(statement.module, alias.name)))
                    flagged.add(alias.asname or alias.name)
        found += _trainable_checkpoint_dir(index)
        # Whether any name the module refers to is in the catalogue (most files of Ray code have
        # none): the walk's checks of names and calls are skipped where none is.
        live = any(not n.startswith(LEFT_TO_RTM100) and catalogue.may_concern(n) for n in index.names)
        self._state = (index, flagged, live)
        return found

    def check(self, index: Index, item: Node) -> str | None:
        node = item.node
        state = self._state
        if state is None or state[0] is not index:
            self.check_module(index)
            state = self._state
        assert state is not None
        _, flagged, live = state
        if not live:  # nothing the module names is in the catalogue: only a member by its name can be
            if isinstance(node, ast.Attribute) and node.attr in self._distinct and not index.qualified(node):
                entry = catalogue.member_by_name(node.attr)
                return entry.message() if entry is not None else None
            return None
        if isinstance(node, ast.Call):
            return self._keywords(index, node)
        if isinstance(item.parent, ast.Attribute) and item.parent.value is node:
            return None  # the longest expression is the finding
        if isinstance(node, ast.Name) and node.id in flagged:
            return None  # its import is the finding
        names = index.qualified(node)
        for name in sorted(names):
            entry = _entry(name)
            if entry is not None:
                return entry.message()
        if not names and isinstance(node, ast.Attribute):
            owner = receiver_class(index, node.value)  # `result = trainer.fit(); result.config`
            entry = catalogue.lookup(f"{owner}.{node.attr}", exact=True) if owner else None
            if entry is None and node.attr in self._distinct:
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

    _state: tuple[Index, set[str], bool] | None = None  # (the index, names its flagged imports bind, live)

    def message(self, what: str) -> str:
        return f"{what}. See {GUIDE}"


CHECKPOINT_FACTORIES = frozenset(
    {"ray.train.get_checkpoint", "ray.train.Checkpoint.from_directory", "ray.train.Checkpoint",
     "ray.train.Checkpoint.from_uri", "ray.train.Checkpoint.from_dict"}
)  # fmt: skip


def _trainable_checkpoint_dir(index: Index) -> list[tuple[ast.AST, str | Milder]]:
    """A Tune function trainable of the ``tune.checkpoint_dir`` era's signature, ``def f(config,
    checkpoint_dir=None)``: Ray 2.60's Tune calls a function trainable with ``config`` alone, so
    the parameter stays None and the restore code under it never runs; nothing raises."""
    if "checkpoint_dir" not in index.text:
        return []
    tune = roles_of(index).tune
    found: list[tuple[ast.AST, str | Milder]] = []
    for statement in index.tree.body:
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) or statement.name not in tune:
            continue
        arguments = statement.args
        for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            if arg.arg == "checkpoint_dir" and _reads_parameter(statement, arg.arg):
                found.append((arg, Milder(_CHECKPOINT_DIR_PARAMETER.format(function=statement.name), "silent")))
    return found


def _reads_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """The body reads ``name`` before anything rebinds it (``with tune.checkpoint_dir(...) as
    checkpoint_dir:`` is RTM128's own finding): a parameter never read is harmless."""
    loads: list[int] = []
    stores: list[int] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == name:
            (loads if isinstance(node.ctx, ast.Load) else stores).append(node.lineno)
    return bool(loads) and min(loads) <= min(stores, default=min(loads))


_CHECKPOINT_DIR_PARAMETER = (
    "`{function}(config, checkpoint_dir=None)` is the `tune.checkpoint_dir` era's function-trainable signature: "
    "Ray 2.60's Tune calls the trainable with `config` alone, so `checkpoint_dir` stays None and a restored "
    "trial starts over. Read it with `ray.tune.get_checkpoint()` (`with checkpoint.as_directory() as d:`)"
)


def unknown(module: str, name: str) -> str:
    """A name imported from ray.train, ray.tune or ray.air that neither Ray's newest release binds
    nor any release the catalogue read had there (Ray before 2.0: ``ray.tune.track``; a typo)."""
    return (
        f"`{module}.{name}` is in no Ray release from {catalogue.RELEASES[0]} to {catalogue.RELEASES[-1]} "
        f"(an API older than 2.0, or a typo): `from {module} import {name}` raises ImportError on Ray "
        f"{catalogue.RELEASES[-1]}. Find what replaces it in Ray's API reference"
    )


def receiver_class(index: Index, expression: ast.expr, depth: int = 0) -> str | None:
    """The Ray class every value ``expression`` may hold is an instance of, as far as the module
    shows it: a trainer it built (``ray.train.torch.TorchTrainer``), the ``Result`` of its
    ``fit()`` (``ray.train.Result``), a ``Checkpoint`` (``get_checkpoint()``,
    ``result.checkpoint``); None when it cannot tell."""
    if depth > 4:
        return None
    found: set[str] = set()
    for value in values_of(index).of(expression):
        if isinstance(value, ast.Call):
            called = index.qualified(value.func)
            if called & CHECKPOINT_FACTORIES:
                found.add("ray.train.Checkpoint")
            elif is_trainer(called) and not any(n.startswith("compat.") for n in called):
                found.add(sorted(called)[0])
            elif isinstance(value.func, ast.Attribute) and value.func.attr == "fit" and not value.args:
                trainer = receiver_class(index, value.func.value, depth + 1)
                found.add("ray.train.Result" if trainer and trainer.endswith("Trainer") else "")
            else:
                found.add("")
        elif isinstance(value, ast.Attribute) and value.attr == "checkpoint":
            result = receiver_class(index, value.value, depth + 1)
            found.add("ray.train.Checkpoint" if result == "ray.train.Result" else "")
        else:
            found.add("")
    return found.pop() if len(found) == 1 and "" not in found else None


def _entry(qualified: str, *, exact: bool = False) -> catalogue.Entry | None:
    if qualified.startswith(LEFT_TO_RTM100):
        return None
    return catalogue.lookup(qualified, exact=exact)
