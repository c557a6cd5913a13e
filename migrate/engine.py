"""Running the rules over one source text, one file, or a tree of files.

The engine never imports or executes the code it reads: it parses it with `ast`, and with
libcst where a rewrite needs it.
"""

from __future__ import annotations

import ast
import difflib
import io
import os
import re
import stat
import sys
import tempfile
import tokenize
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING

from migrate import _deep, _index, noqa, notebooks
from migrate.rules import RULES, Context, Diagnostic, Rule
from migrate.rules._flags import FlagRule, run_flag_rules

if TYPE_CHECKING:  # imported when a file needs a libcst form: most runs never pay for it
    import libcst as cst
    from libcst.metadata import MetadataWrapper

# The pre-filter's anchors: see needs_parsing.
_ANCHORS = ("ray.air", "ray.train", "ray.tune")
_SUBMODULES = re.compile(r"\b(?:air|train|tune)\b")
_RAY = re.compile(r"\bray\b")
_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"  # the interpreter running the codemod
_NOQA_WORD = re.compile(r"noqa", re.IGNORECASE)
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)  # PEP 263
_UNQUALIFIED = tuple(sorted({w for r in RULES if issubclass(r, FlagRule) for w in r.unqualified_words}))
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "env", ".tox", ".nox", "site-packages", "node_modules",
     "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)  # fmt: skip


@dataclass
class FileResult:
    path: str
    changed: bool = False
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: str | None = None
    error_line: int = 1  # where the error is (a parse error's own line; 1 for a file-level error)
    error_col: int = 1
    internal: bool = False  # the error is a bug of the tool (a rule crashed), not of the file
    suppressed: int = 0  # findings a `noqa` comment silenced (counted in the summary, not reported)
    new_text: str | None = None
    old_text: str | None = None
    parsed: bool = False
    encoding: str = "utf-8"  # the file's own, which a write keeps
    bom: bool = False


def select_rules(
    select: Iterable[str] | None = None, ignore: Iterable[str] | None = None, target: str = "ray"
) -> list[type[Rule]]:
    """Rules in run order, filtered by code prefixes (``RTM1`` selects RTM100-RTM199)."""
    chosen = []
    select_list, ignore_list = list(select or []), list(ignore or [])
    for rule in RULES:
        if target not in rule.targets:
            continue
        if select_list and not any(rule.code.startswith(s) for s in select_list):
            continue
        if any(rule.code.startswith(i) for i in ignore_list):
            continue
        chosen.append(rule)
    return chosen


def migrate_source(
    text: str, rules: Sequence[type[Rule]], context: Context, *, lines_of: str = "input", fast: bool = True
) -> tuple[str, list[Diagnostic]]:
    """Run ``rules`` over ``text``; raises ``SyntaxError`` (also for what only libcst refuses) or :class:`RuleCrash`.

    One ``ast`` parse indexes the names; the flag rules run on that index in one walk.
    libcst parses the file only when the index shows that a rewriting rule may apply; the
    rewriting rules then run in order, each seeing the previous one's output. RTM100
    (``after_rewrites``) runs on the index of the final text. Findings are moved to the
    lines of the ``"input"`` text (what --diff/--check users have) or of the ``"output"``
    text (what a write leaves on disk). ``fast=False`` runs every rewrite on libcst (the
    reference the fast path is tested against).
    """
    try:
        return _migrate_source(text, rules, context, lines_of, fast)
    except RecursionError:  # a long generated expression: again, on a thread with room to recurse
        return _deep.run(_migrate_source, text, rules, context, lines_of, fast)


def _migrate_source(
    text: str, rules: Sequence[type[Rule]], context: Context, lines_of: str, fast: bool
) -> tuple[str, list[Diagnostic]]:
    index = _index.build(text)
    stages: list[tuple[str, list[Diagnostic]]] = []
    before = [r(context) for r in rules if issubclass(r, FlagRule) and not r.after_rewrites and r.triggered(text)]
    stages.append((text, _flag(before, index)))
    current = text
    rewriters = [r for r in rules if not issubclass(r, FlagRule)]
    if any(r.triggered(text) and r.could_apply(index) for r in rewriters):
        tree = index.tree  # the input's, parsed once
        current, index = _rewrite(text, rewriters, context, index, stages, fast)
        current = _without_added_duplicates(text, current)
        current = _guards_bind_alike(tree, current)
        current = _comments_kept(text, current)
    after = [r(context) for r in rules if issubclass(r, FlagRule) and r.after_rewrites and r.triggered(current)]
    if current != text:
        # What the rewrites wrote is flagged too: a rewrite can make a use recognisable that the
        # input hid (compat's names become ray.train's under --target native), and a write must
        # report everything a `--check` of its output will find. Findings already made on the
        # input at the same line are not repeated.
        flags = [r for r in rules if issubclass(r, FlagRule) and not r.after_rewrites]
        after += [r(context) for r in flags if r.triggered(current)]
    if after:
        output_index = index if index.text == current else _index.build(current)
        found = _flag(after, output_index)
        if current != text:
            found = _not_yet_found(found, stages[0][1], line_map(text, current))
        stages.append((current, found))
    reference = text if lines_of == "input" else current
    diagnostics: list[Diagnostic] = []
    maps: dict[str, list[int]] = {}
    for seen, found in stages:
        if not found:
            continue
        if seen == reference:
            diagnostics.extend(found)
            continue
        mapping = maps.get(seen) or maps.setdefault(seen, line_map(seen, reference))
        diagnostics.extend(replace(d, line=mapping[min(d.line, len(mapping)) - 1] + 1) for d in found)
    if _NOQA_WORD.search(reference):
        diagnostics = noqa.apply(diagnostics, reference, {r.code for r in rules})
    diagnostics.sort(key=lambda d: (d.line, d.col, d.code))  # file order, as ruff reports
    return current, diagnostics


def _without_added_duplicates(before: str, after: str) -> str:
    """``after`` without the plain module-level ``import X`` lines the rewrites added where
    the module already had one (``import ray.air`` becomes ``import ray`` beside an
    ``import ray``: pyflakes' "redefinition of unused"). Duplicates the input had stay."""
    lines = after.splitlines(keepends=True)
    plain = [i for i, line in enumerate(lines) if line.startswith("import ") and _PLAIN_IMPORT.match(line)]
    seen: dict[str, int] = {}
    for i in plain:
        seen[lines[i].strip()] = seen.get(lines[i].strip(), 0) + 1
    duplicated = {statement for statement, n in seen.items() if n > 1}
    if not duplicated:
        return after
    old = [line.strip() for line in before.splitlines() if line.startswith("import ")]
    had = {statement: old.count(statement) for statement in duplicated}
    top_level = {node.lineno - 1 for node in ast.parse(after).body if isinstance(node, ast.Import)}
    drop: set[int] = set()
    for statement in duplicated:
        at = [i for i in plain if lines[i].strip() == statement and i in top_level]
        extra = len(at) - max(had[statement], 1)
        drop |= set(at[len(at) - extra :]) if extra > 0 else set()
    return "".join(line for i, line in enumerate(lines) if i not in drop)


def _guards_bind_alike(before: ast.Module, after: str) -> str:
    """Each branch of a module-level ``try``/``except`` or ``if``/``else`` import guard binds
    the module name the rewritten code uses. A rewrite that turned one branch's
    ``from ray.air import session`` into ``from ray import train`` (and ``session.report``
    into ``train.report``) leaves ``train`` unbound on the other branch (``from ray.train
    import report``, or ``session = None``): that branch gets the same import, or
    ``train = None`` beside its ``= None`` fallback. Names the input already bound at module
    level are the user's: left alone. ``before`` is the input's tree: no rewrite adds a guard,
    so a module without one at its top level is left as it is without parsing ``after``."""
    if not any(isinstance(node, (ast.Try, ast.If)) for node in before.body):
        return after
    tree = ast.parse(after)
    old = _module_bindings(before)
    lines = after.splitlines(keepends=True)
    inserts: list[tuple[int, str]] = []  # (after this 0-based line, text)
    emptied: set[int] = set()  # 0-based lines of a `pass` a rewrite left alone in a branch
    for node in tree.body:
        branches = _branches(node)
        if len(branches) < 2:
            continue
        bound = [{name: statement for statement in branch for name in _bound_by(statement)} for branch in branches]
        for name, statement in {n: s for b in bound for n, s in b.items()}.items():
            if name in old or not _is_api_module_import(statement):
                continue
            source = ast.get_source_segment(after, statement)
            for branch, names in zip(branches, bound, strict=True):
                if name in names or isinstance(branch[-1], ast.Raise):  # a branch that raises binds nothing
                    continue
                indent = " " * branch[0].col_offset
                fallback = any(_assigns_none(s) for s in branch) and not any(
                    isinstance(s, (ast.Import, ast.ImportFrom)) for s in branch
                )
                text = f"{name} = None" if fallback else source
                inserts.append((branch[-1].end_lineno - 1, f"{indent}{text}\n"))  # type: ignore[operator]
                only = branch[0]
                if len(branch) == 1 and isinstance(only, ast.Pass) and lines[only.lineno - 1].strip() == "pass":
                    emptied.add(only.lineno - 1)  # the import takes the place of the `pass`
    for line, text in sorted(inserts, reverse=True):
        if not lines[line].endswith("\n"):
            lines[line] += "\n"
        lines.insert(line + 1, text)
    for line in sorted(emptied, reverse=True):
        del lines[line]
    return "".join(lines)


# Comments that speak to the line they are on (a tool's directive): gone with that line.
_DIRECTIVE = re.compile(r"#\s*(?i:noqa\b|type:|fmt:|pragma\b|pylint:|pyright:|mypy:|isort:|ruff:)")


def _comments_kept(before: str, after: str) -> str:
    """``after`` with every comment of a line the rewrites removed or replaced that it lost
    (``RunConfig,  # storage`` of an import whose name went): a replaced line's after the code
    of the line it became, when that has none; else, and for a line removed, on a line of its
    own where it was, at its indentation. A tool's directive (``# noqa``, ``# type: ignore``,
    ...) served its line: it is not moved."""
    if "#" not in before:
        return after
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    plain_a, plain_b = before.splitlines(), after.splitlines()  # compared as line_map compares them
    opcodes = _opcodes(plain_a, plain_b)
    lost: list[tuple[int, str, str, bool]] = []  # (old line's number, its text, its comment, it is gone)
    for tag, i1, i2, _, _ in opcodes:
        if tag not in ("delete", "replace"):
            continue
        for i in range(i1, i2):
            comment = _comment_of(a[i]) if "#" in a[i] else None
            if comment and not _DIRECTIVE.match(comment) and comment not in after:
                lost.append((i, a[i], comment, tag == "delete"))
    if not lost:
        return after
    mapping = _line_map(plain_a, plain_b, opcodes)
    ends_inside = noqa.comment_lines(after)  # 1-based lines whose end is inside a string or continued
    appended: set[int] = set()
    inserts: dict[int, list[str]] = {}
    for i, old, comment, gone in lost:
        j = min(mapping[i], len(b) - 1) if b else 0
        line = b[j] if b else ""
        body = line.rstrip("\r\n")
        free = body.strip() and j not in appended and (j + 1) not in ends_inside and _comment_of(line) is None
        if free and not gone:  # the line became another: its comment follows it
            b[j] = f"{body}  {comment}{line[len(body) :]}"
            appended.add(j)
        elif j not in ends_inside:  # a line of its own above line j, after one that ends cleanly (1-based j)
            indent, ending = old[: len(old) - len(old.lstrip())], old[len(old.rstrip("\r\n")) :] or "\n"
            inserts.setdefault(j, []).append(f"{indent}{comment}{ending}")
    for j in sorted(inserts, reverse=True):
        b[j:j] = inserts[j]
    return "".join(b)


def _comment_of(line: str) -> str | None:
    """The comment of one physical line (not a ``#`` in a string), or None."""
    try:
        comment = noqa.line_comment(line)
    except noqa.PartOfLarger:  # not sure there is one: not moved
        return None
    return comment[1] if comment else None


def _branches(node: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of a ``try`` (body, handlers, else) or an ``if`` chain."""
    if isinstance(node, ast.Try):
        return [b for b in [node.body, *(h.body for h in node.handlers), node.orelse] if b]
    if isinstance(node, ast.If):
        out = [node.body]
        rest = node.orelse
        while len(rest) == 1 and isinstance(rest[0], ast.If):  # elif
            out.append(rest[0].body)
            rest = rest[0].orelse
        return out + ([rest] if rest else [])
    return []


def _bound_by(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in statement.names]
    if isinstance(statement, ast.ImportFrom):
        return [a.asname or a.name for a in statement.names if a.name != "*"]
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)]
    return []


def _module_bindings(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        for branch in _branches(node) or [[node]]:
            for statement in branch:
                names.update(_bound_by(statement))
    return names


def _is_api_module_import(statement: ast.stmt) -> bool:
    """What the rewrites write for the API module: ``from ray import train``, ``from ray import
    tune``, ``import compat as train``."""
    if isinstance(statement, ast.ImportFrom):
        return statement.module == "ray" and all(a.name in ("train", "tune") for a in statement.names)
    if isinstance(statement, ast.Import):
        return all(a.name == "compat" for a in statement.names)
    return False


def _assigns_none(statement: ast.stmt) -> bool:
    value = getattr(statement, "value", None)
    return isinstance(statement, ast.Assign) and isinstance(value, ast.Constant) and value.value is None


_PLAIN_IMPORT = re.compile(r"import [\w.]+[ \t]*\r?\n?$")


def _not_yet_found(output: list[Diagnostic], input_: list[Diagnostic], mapping: list[int]) -> list[Diagnostic]:
    """The findings on the output that the input's findings (moved to the output's lines) do
    not already make, counted per code and line."""
    seen = Counter((d.code, mapping[min(d.line, len(mapping)) - 1] + 1) for d in input_)
    new = []
    for d in output:
        if seen[(d.code, d.line)] > 0:
            seen[(d.code, d.line)] -= 1
        else:
            new.append(d)
    return new


def _flag(rules: list[FlagRule], index: _index.Index) -> list[Diagnostic]:
    try:
        run_flag_rules(rules, index)
    except RecursionError:
        raise
    except Exception as exc:
        raise RuleCrash("/".join(r.code for r in rules), exc) from exc
    return [d for r in rules for d in r.diagnostics]


def _rewrite(
    text: str,
    rules: list[type[Rule]],
    context: Context,
    index: _index.Index,
    stages: list[tuple[str, list[Diagnostic]]],
    fast: bool = True,
) -> tuple[str, _index.Index]:
    """The rewriting rules in order, each on the previous one's output. A rule runs when
    its trigger is in the current text and the index of the current text shows it may
    apply (an ``ast`` index costs a small fraction of libcst's metadata); it rewrites by
    text edits when its fast form handles the file's shape (:mod:`migrate._fast`), else on
    libcst, whose tree is parsed only then. Returns the final text and the last index
    built (of the final text, or of an earlier one)."""
    current, first = text, index
    module: cst.Module | None = None  # libcst's tree of `current`, once a rule needed it
    wrapper: MetadataWrapper | None = None  # reused while the module is unchanged
    ran_on: dict[type[Rule], str] = {}  # the text each rule last ran on
    cleanups = [r for r in rules if r.cleanup]
    for position, rule_class in enumerate([*rules, *cleanups]):
        again = position >= len(rules)
        if ran_on.get(rule_class) == current:
            continue  # a cleanup rule on the text it already saw: nothing new to do
        ran_on[rule_class] = current
        if not rule_class.triggered(current):
            continue
        if index.text != current:
            if not again and not rule_class.may_apply_after_rewrites(first):
                continue
            index = _index.build(current)
        if not rule_class.could_apply(index) or (again and not rule_class.cleanup_needed(first, index)):
            continue
        rule = rule_class(context, index)
        try:
            new_text = rule.fast(index) if fast else None
            if new_text is None:
                if module is None or wrapper is None:
                    module = parse_module(current)
                    wrapper = _wrap(module)
                new_module = rule.apply(wrapper)
                if new_module is not module:
                    module, new_text = new_module, new_module.code
                    wrapper = _wrap(module)
                else:
                    new_text = current
            elif new_text != current:
                module = wrapper = None  # libcst's tree is of the old text
        except RecursionError:
            raise
        except LibcstSyntaxError as exc:
            if current != text:  # what an earlier rule wrote: the tool's fault, not the file's
                raise RuleCrash(rule.code, exc) from exc
            raise  # the user's file, which only libcst's parser refuses
        except Exception as exc:
            raise RuleCrash(rule.code, exc) from exc
        stages.append((current, rule.diagnostics))
        current = new_text
    return current, index


def parse_module(text: str) -> cst.Module:
    """libcst's tree of ``text``. libcst's rare refusals of what ``ast`` accepts are raised
    as :class:`LibcstSyntaxError`, a ``SyntaxError``, so callers handle one error type and
    need not import libcst."""
    import libcst as cst

    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise LibcstSyntaxError(exc.message, exc.raw_line, exc.raw_column) from exc


def _wrap(module: cst.Module) -> MetadataWrapper:
    from libcst.metadata import MetadataWrapper

    return MetadataWrapper(module, unsafe_skip_copy=True)


def _newer_python(text: str) -> bool:
    """Whether ``text``, which this interpreter's ``ast`` refuses, is valid in a newer Python
    (libcst's parser reads the grammar of newer releases: a 3.12 ``type`` statement, nested
    f-string quotes)."""
    import libcst as cst

    try:
        cst.parse_module(text)
    except Exception:
        return False
    return True


class LibcstSyntaxError(SyntaxError):
    """Source ``ast`` parses and libcst's parser does not (``offset`` 1-based, as ``SyntaxError``'s)."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message, ("<unknown>", line, column + 1, None))


def line_map(old: str, new: str) -> list[int]:
    """For each line of ``old`` (0-based), the line of ``new`` it became (or sits nearest).
    In a block of changed lines, each old line goes to the most similar new line at or after
    the previous one's (``session.report(m)`` to ``train.report(m)``, not to an import the
    rewrite added above it)."""
    a, b = old.splitlines(), new.splitlines()
    return _line_map(a, b, _opcodes(a, b))


Opcodes = Sequence[tuple[str, int, int, int, int]]


def _opcodes(a: list[str], b: list[str]) -> Opcodes:
    """How ``a``'s lines became ``b``'s (difflib's opcodes, computed once per pair)."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


def _line_map(a: list[str], b: list[str], opcodes: Opcodes) -> list[int]:
    mapping = [0] * max(len(a), 1)
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "replace" and (i2 - i1) * (j2 - j1) <= _SIMILARITY_BUDGET:
            _map_by_similarity(a, b, i1, i2, j1, j2, mapping)
            continue
        for i in range(i1, i2):
            mapping[i] = j1 + (i - i1 if tag == "equal" else min(i - i1, max(j2 - j1 - 1, 0)))
    return mapping


# Line pairs compared in one changed block at most; a larger block maps by position.
_SIMILARITY_BUDGET = 400


def _map_by_similarity(a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int, mapping: list[int]) -> None:
    """Map ``a[i1:i2]`` into ``b[j1:j2]``: each line to its most similar line, in order."""
    low = j1
    for i in range(i1, i2):
        left = i2 - i - 1  # old lines still to place after this one
        high = max(low, j2 - 1 - min(left, j2 - 1 - low))  # leave room for them when there is
        scores = [(difflib.SequenceMatcher(None, a[i], b[j], autojunk=False).ratio(), -j) for j in range(low, high + 1)]
        best = -max(scores)[1]
        mapping[i] = best
        low = best


class RuleCrash(Exception):
    def __init__(self, code: str, error: Exception) -> None:
        super().__init__(f"rule {code} crashed: {type(error).__name__}: {error}")
        self.code = code


def _imports_from_ray(text: str) -> bool:
    """``from ray import ...`` naming ``air``, ``train`` or ``tune`` (up to the closing
    parenthesis of a multi-line import)."""
    start = text.find("from ray import")
    while start != -1:
        end = text.find("\n", start)
        statement = text[start : None if end == -1 else end]
        if "(" in statement:
            close = text.find(")", start)
            statement = text[start : None if close == -1 else close]
        if _SUBMODULES.search(statement):
            return True
        start = text.find("from ray import", start + 15)
    return False


def needs_parsing(text: str, target: str) -> bool:
    """Whether ``text`` can give any rule something to do. Every rule is about a name
    from ``ray.air``, ``ray.train`` or ``ray.tune`` (or compat's), and a module cannot
    refer to one without spelling ``ray.air``/``ray.train``/``ray.tune`` or importing
    ``air``/``train``/``tune`` with ``from ray import``; a few flag rules judge an attribute
    by its name alone (``unqualified_words``) in any file that says ``ray``. Substring
    tests first: the scan costs about as much as reading the file."""
    if "ray" in text:
        if any(anchor in text for anchor in _ANCHORS) or _imports_from_ray(text):
            return True
        if any(word in text for word in _UNQUALIFIED) and _RAY.search(text):
            return True  # a rule that judges an attribute by name alone, in a file about Ray
    return target != "ray" and "compat" in text


def process_file(path: str, rule_codes: Sequence[str], target: str, write: bool) -> FileResult:
    """Migrate one file (``.py`` or ``.ipynb``). Errors are returned, never raised."""
    from migrate.rules import BY_CODE

    result = FileResult(path)
    rules = [BY_CODE[code] for code in rule_codes]
    context = Context(target=target, path=path)  # type: ignore[arg-type]
    lines_of = "output" if write else "input"  # findings point at what is on disk afterwards
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        result.error = f"cannot read: {exc.strerror}"
        return result
    bom = raw.startswith(b"\xef\xbb\xbf")
    encoding = "utf-8"
    if not bom and not path.endswith(".ipynb"):
        try:  # a PEP 263 declaration (`# -*- coding: latin-1 -*-`) names the file's encoding
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError as exc:  # an unknown declared encoding; or no declaration and not UTF-8
            if _CODING.search(b"\n".join(raw.split(b"\n", 2)[:2])):
                result.error = f"{exc.msg}; skipped"
                return result
    result.encoding, result.bom = encoding, bom
    try:
        text = raw.decode("utf-8-sig" if bom else encoding)
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding == "utf-8" else encoding
        result.error = f"not {name} (byte {exc.start}); declare the encoding (PEP 263) or convert the file; skipped"
        return result
    if not needs_parsing(text, target):
        return result
    result.parsed = True
    try:
        if path.endswith(".ipynb"):
            new_text, result.diagnostics = notebooks.migrate_notebook(
                text, lambda s: migrate_source(s, rules, context, lines_of=lines_of), lines_of=lines_of
            )
        else:
            new_text, result.diagnostics = migrate_source(text, rules, context, lines_of=lines_of)
    except SyntaxError as exc:
        line, col = exc.lineno or 1, exc.offset or 1
        result.error = f"does not parse (line {line}, col {col - 1}): {exc.msg}; skipped"
        if not isinstance(exc, LibcstSyntaxError) and not path.endswith(".ipynb") and _newer_python(text):
            result.error = (
                f"uses syntax newer than Python {_PYTHON}, which runs the codemod (line {line}, col {col - 1}: "
                f"{exc.msg}); skipped. Run the codemod with the Python the file is written for "
                "(e.g. python3.13 -m migrate)"
            )
        result.error_line, result.error_col = line, col
        return result
    except RecursionError:  # Python 3.12 caps C-level recursion (libcst's tree) whatever the stack
        result.error = (
            f"nested too deeply for libcst on Python {_PYTHON} (a generated expression?); skipped. "
            "Python 3.11 and 3.13 process it"
        )
        return result
    except (RuleCrash, notebooks.CellBoundaryLost) as exc:
        result.error = f"{exc}; file skipped, nothing written"
        result.internal = True
        return result
    except (ValueError, KeyError) as exc:  # malformed notebook JSON
        result.error = f"cannot read notebook: {exc}; skipped"
        return result
    result.suppressed = sum(d.suppressed for d in result.diagnostics)
    if result.suppressed:
        result.diagnostics = [d for d in result.diagnostics if not d.suppressed]
    result.changed = new_text != text
    result.old_text, result.new_text = text, new_text
    if result.changed and write:
        try:
            data = new_text.encode(encoding)  # written back in the file's own encoding
        except UnicodeEncodeError as exc:
            result.error = f"the rewrite cannot be written in {encoding} ({exc.reason}); nothing written"
            result.changed = False
            return result
        atomic_write(path, data, bom=bom)
    return result


def atomic_write(path: str, data: bytes, *, bom: bool = False) -> None:
    """Write via a temporary file in the same directory; keep the mode and a BOM."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".migrate-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write((b"\xef\xbb\xbf" if bom else b"") + data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def iter_files(paths: Iterable[str], excluded: Callable[[str], bool] | None = None) -> Iterator[str]:
    """Python files and notebooks under ``paths``, skipping VCS dirs, venvs, site-packages, and
    the directories and files ``excluded`` rules out. A file named in ``paths`` is yielded
    whatever it says (the caller applies ``--force-exclude``, as ruff does)."""
    skip = excluded or (lambda path: False)
    for root in paths:
        if os.path.isfile(root):
            yield root
            continue
        if not os.path.isdir(root):
            raise FileNotFoundError(root)
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(
                d for d in dirs if d not in SKIP_DIRS and not _is_venv(os.path.join(directory, d))
                and not skip(os.path.join(directory, d))
            )  # fmt: skip
            for name in sorted(files):
                full = os.path.join(directory, name)
                if name.endswith((".py", ".pyi", ".ipynb")) and not skip(full):
                    yield full


def _is_venv(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, "pyvenv.cfg"))


def matches_globs(path: str, patterns: Sequence[str]) -> bool:
    """``path`` (as given, ``./`` dropped) or its file name matches one of the globs."""
    normalized = path.replace(os.sep, "/").removeprefix("./")
    return any(fnmatch(normalized, p) or fnmatch(os.path.basename(path), p) for p in patterns)
