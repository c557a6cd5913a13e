"""Shared machinery of the flag-only rules: they run on the fast ``ast`` index
(:mod:`migrate._index`), never on libcst, and match calls and attributes by qualified name."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from migrate._index import RAY_ROOTS, Index, Node
from migrate._roles import TUNE_RUNNERS, TuneResults
from migrate._values import values_of
from migrate.rules._base import Context, Diagnostic, Rule
from migrate.severity import Severity
from migrate.tables import GUIDE

REPORT_NAMES = frozenset(
    {
        "ray.train.report",
        "ray.air.session.report",
        "ray.train.session.report",
        "compat.report",
        "compat.session.report",
        "ray.train.v2.api.train_fn_utils.report",
    }
)


def is_ray_class(names: Iterable[str], class_name: str) -> bool:
    """``names`` include ``<ray or compat module>.class_name``."""
    return any(n.endswith("." + class_name) and n.startswith(RAY_ROOTS) for n in names)


def is_report(names: Iterable[str]) -> bool:
    return not REPORT_NAMES.isdisjoint(names)


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for arg in call.keywords:
        if arg.arg == name:
            return arg
    return None


def is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


@dataclass(frozen=True)
class Milder:
    """A finding milder than its rule's severity, which is the worst its findings have
    (``TorchCheckpoint`` only warns under V2 where ``LightningCheckpoint`` is gone)."""

    message: str
    severity: Severity


class FlagRule(Rule):
    """A rule that never rewrites: subclasses implement :meth:`check` and say which nodes
    it wants to see, so the engine checks each node against the few rules that care.

    The engine runs all flag rules together in one walk over the index
    (:func:`run_flag_rules`).
    """

    fix_safety = "none"
    advice: str = ""
    calls: ClassVar[bool] = False  # Call nodes whose callee resolves into Ray or compat
    call_attrs: ClassVar[frozenset[str]] = frozenset()  # Call nodes of `<anything>.<one of these>(...)`
    attrs: ClassVar[frozenset[str]] = frozenset()  # Attribute nodes `<anything>.<one of these>`
    refs: ClassVar[bool] = False  # Name and Attribute nodes that resolve into Ray or compat
    after_rewrites: ClassVar[bool] = False  # sees the rewritten text (RTM100), not the input
    # Yields to any other rule's finding at the same line and column (RTM128, the catalogue:
    # a rule about that one API says what to do more precisely).
    defers: ClassVar[bool] = False
    # Words that make a file worth checking although it names nothing from Ray: the rules
    # that judge an attribute by its name alone (``result.metrics_dataframe``).
    unqualified_words: ClassVar[tuple[str, ...]] = ()
    # Patterns such a file must also match for check() to find anything (each one a
    # condition check() itself needs): keeps the pre-filter from parsing every file that
    # merely uses a common word (Ray's own package says ``training_iteration`` everywhere).
    unqualified_needs: ClassVar[tuple[re.Pattern[str], ...]] = ()
    _tune_results: tuple[Index, TuneResults] | None = None  # is_tune_result's, for one index

    def __init__(self, context: Context, index: Index | None = None) -> None:
        super().__init__(context, index)
        self._complete: set[str] = set()  # findings that say what to do themselves (:meth:`complete`)

    def check(self, index: Index, item: Node) -> str | Milder | None:
        """Return a message when ``item`` is a finding (a :class:`Milder` one when it is less
        severe than the rule says)."""
        raise NotImplementedError

    def complete(self, text: str) -> str:
        """``text`` as a finding that says what to do itself: the rule's general advice is not
        appended (:meth:`message`)."""
        self._complete.add(text)
        return text

    def is_tune_result(self, index: Index, node: ast.expr) -> bool:
        """``node`` is a result of a Tune ``ResultGrid``, which keeps V1's rows and keys under
        V2 too (:class:`migrate._roles.TuneResults`, made once per index)."""
        cached = self._tune_results
        if cached is None or cached[0] is not index:
            cached = self._tune_results = (index, TuneResults(index))
        return cached[1].holds(node)

    def check_module(self, index: Index) -> list[tuple[ast.AST, str | Milder]]:
        """Findings about the module as a whole (statements rather than expressions)."""
        return []

    def message(self, what: str) -> str:
        if what in self._complete:
            return f"{what}. See {GUIDE}"
        return f"{what}. {self.advice} See {GUIDE}"


@dataclass(frozen=True)
class Rejected:
    """A row of :class:`RejectedKeyword`: ``keywords`` of Ray's config class ``ray_class``
    that a release rejects (none: the class itself, flagged when no keyword row of it is), the
    finding's text (``{given}``: the keywords used, as ``fail_fast=...`` or ``stop=, verbose=``),
    and whether Tune's own class of that name (``ray.tune.RunConfig``) takes them."""

    ray_class: str
    keywords: tuple[str, ...] = ()
    message: str = "`{ray_class}({given})` is rejected by V2"
    tune_takes_it: bool = False
    complete: bool = False  # the message says what to do itself (the rule's advice is not appended)


class RejectedKeyword(FlagRule):
    """What Ray's config classes reject: a rule is rows of data (:class:`Rejected`) with its
    code, summary, advice and docs as any rule's; the check is this class's. A call's findings
    from several rows are joined in row order."""

    rejected: ClassVar[tuple[Rejected, ...]]
    severity: ClassVar[Severity] = "breaks"
    calls = True

    def check(self, index: Index, item: Node) -> str | None:
        node = item.node
        assert isinstance(node, ast.Call)  # calls = True: the engine hands this rule calls only
        qualified = index.qualified(node.func)
        not_tune = frozenset(n for n in qualified if not n.startswith("ray.tune."))
        to_tune = tune_configs(index).get(id(node))  # a Train config that reaches a Tuner's run_config
        found: list[str] = []
        complete = True  # every row that found something says what to do itself
        flagged: set[str] = set()  # the classes a keyword row found something on
        for row in self.rejected:
            if not is_ray_class(not_tune if row.tune_takes_it else qualified, row.ray_class):
                continue
            if not row.keywords:
                if row.ray_class not in flagged:
                    found.append(row.message.format(ray_class=row.ray_class, given=""))
                    complete = complete and row.complete
                continue
            used = [k for k in row.keywords if keyword(node, k) is not None]
            if used and row.tune_takes_it and to_tune is not None:
                if to_tune == "inline":
                    return None  # RTM005 rewrites it to Tune's class, which takes these keywords
                given = ", ".join(f"{k}=" for k in used)
                return self.complete(
                    f"`{row.ray_class}({given})` goes to a Tune runner's run_config (through `{to_tune}`): make it "
                    f"`ray.tune.{row.ray_class}`, which keeps {given} (Ray Train's V2 class rejects them)"
                )
            if used:
                flagged.add(row.ray_class)
                given = f"{used[0]}=..." if len(row.keywords) == 1 else ", ".join(f"{k}=" for k in used)
                found.append(row.message.format(ray_class=row.ray_class, given=given))
                complete = complete and row.complete
        if found and complete:
            return self.complete("; ".join(found))
        return "; ".join(found) or None


_NESTED_CONFIGS = ("checkpoint_config", "failure_config", "sync_config")


def tune_configs(index: Index) -> dict[int, str]:
    """Ray Train config calls that a Tune runner (``tune.Tuner``, ``tune.run``) is given as its
    ``run_config`` (and the configs nested in it), by id: ``"inline"`` when written in the call
    (RTM005 rewrites those), else the name it went through."""
    found: dict[int, str] | None = index.cache.get("tune_configs")
    if found is not None:
        return found
    found = index.cache["tune_configs"] = {}

    for item in index.nodes:
        node = item.node
        if isinstance(node, ast.Call) and index.qualified(node.func) & TUNE_RUNNERS:
            config = keyword(node, "run_config")
            if config is not None:
                _reach(index, found, config.value, config.value.id if isinstance(config.value, ast.Name) else "inline")
    return found


def _reach(index: Index, found: dict[int, str], expression: ast.expr, via: str) -> None:
    """Record the config calls ``expression`` is (through ``via``), and those nested in them.
    (Not a closure in tune_configs: a recursive closure is a reference cycle that would keep the
    file's tree alive until the garbage collector runs, which engine.process_file pauses.)"""
    # a name's values are looked up only when a config goes through one (most files: never)
    for value in values_of(index).of(expression) if isinstance(expression, ast.Name) else [expression]:
        if isinstance(value, ast.Call):
            found.setdefault(id(value), via)
            for arg in value.keywords:
                if arg.arg in _NESTED_CONFIGS:  # inline in an inline config, or through a name
                    named = isinstance(arg.value, ast.Name) and via == "inline"
                    _reach(index, found, arg.value, arg.value.id if named else via)  # type: ignore[attr-defined]


def _ray(names: frozenset[str]) -> bool:
    if not names:  # most nodes: a local name's attribute, a call of a builtin
        return False
    return any(n.startswith(RAY_ROOTS) or n in ("ray", "compat") for n in names)


def run_flag_rules(rules: list[FlagRule], index: Index) -> None:
    """Run several flag rules in one pass over ``index``; each appends to its own ``diagnostics``."""
    if not rules:
        return
    calls = [r for r in rules if r.calls]
    call_attrs = [r for r in rules if r.call_attrs]
    attrs = [r for r in rules if r.attrs]
    refs = [r for r in rules if r.refs]
    wanted_call_attrs = frozenset().union(*(r.call_attrs for r in call_attrs))
    wanted_attrs = frozenset().union(*(r.attrs for r in attrs))
    for rule in rules:
        for statement, message in rule.check_module(index):
            line, col = index.position(statement)
            milder = message.severity if isinstance(message, Milder) else None
            text = rule.message(message.message if isinstance(message, Milder) else message)
            rule.diagnostics.append(Diagnostic(rule.code, line, col, text, False, severity=milder))
    qualified = index.qualified
    for item in index.nodes:
        node = item.node
        candidates: list[FlagRule] = []
        if type(node) is ast.Call:
            func = node.func
            if calls and _ray(qualified(func)):
                candidates += calls
            if type(func) is ast.Attribute and func.attr in wanted_call_attrs:
                candidates += [r for r in call_attrs if func.attr in r.call_attrs and r not in candidates]
        else:
            if type(node) is ast.Attribute and node.attr in wanted_attrs:
                candidates += [r for r in attrs if node.attr in r.attrs]
            if refs and _ray(qualified(node)):
                candidates += [r for r in refs if r not in candidates]
        for rule in candidates:
            finding = rule.check(index, item)
            if finding:
                line, col = index.position(node)
                milder = finding.severity if isinstance(finding, Milder) else None
                message = rule.message(finding.message if isinstance(finding, Milder) else finding)
                rule.diagnostics.append(Diagnostic(rule.code, line, col, message, False, severity=milder))
