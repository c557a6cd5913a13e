"""The pipeline: the rules run over one source text, or one file.

One ``ast`` index of the text; the flag rules on it; the rewriting rules in order (by text edits
where their fast form can, on libcst's tree where not: :mod:`migrate._parse`); the repairs of
the whole rewritten module (:mod:`migrate._repairs`); the findings moved to the lines the user
sees (:mod:`migrate._lines`) and filtered by ``noqa``. Files are found, read and written by
:mod:`migrate.files`. The engine never imports or executes the code it reads.
"""

from __future__ import annotations

import ast
import difflib
import gc
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from migrate import _deep, _directives, _index, _repairs, noqa, notebooks, tree
from migrate._lines import line_map
from migrate._parse import LibcstSyntaxError, newer_python, parse_module, wrap
from migrate.files import MAX_FILE_BYTES, Unreadable, atomic_write, read_source, too_large
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
# The rules that judge an attribute by its name alone: (their words, what the text also needs).
# The words of the rule's trigger first (where it has any): a rule whose trigger is not in the text
# has nothing to do there, and one word (RTM121's `metrics`) costs less than its thirteen keys.
_UNQUALIFIED = tuple(
    (r.trigger_words(), r.unqualified_words, r.unqualified_needs)
    for r in RULES
    if issubclass(r, FlagRule) and r.unqualified_words
)


@dataclass
class FileResult:
    path: str
    changed: bool = False
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: str | None = None
    error_line: int = 1  # where the error is (a parse error's own line; 1 for a file-level error)
    error_col: int = 1
    internal: bool = False  # the error is a bug of the tool (a rule crashed), not of the file
    recordable: bool = True  # the error is a fact of the file's content (--add-noqa records it)
    suppressed: int = 0  # findings a `noqa` comment silenced (counted in the summary, not reported)
    new_text: str | None = None
    old_text: str | None = None
    parsed: bool = False
    handoffs: list[tree.Handoff] = field(default_factory=list)  # functions it hands to Tune or a Trainer
    written: bool = False  # the rewrite is on disk (commit)
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
    text: str,
    rules: Sequence[type[Rule]],
    context: Context,
    *,
    lines_of: str = "input",
    fast: bool = True,
    handed: list[tree.Handoff] | None = None,
) -> tuple[str, list[Diagnostic]]:
    """Run ``rules`` over ``text``; raises ``SyntaxError`` (also for what only libcst refuses) or :class:`RuleCrash`.

    One ``ast`` parse indexes the names; the flag rules run on that index in one walk.
    libcst parses the file only when the index shows that a rewriting rule may apply; the
    rewriting rules then run in order, each seeing the previous one's output. RTM100
    (``after_rewrites``) runs on the index of the final text. Findings are moved to the
    lines of the ``"input"`` text (what --diff/--check users have) or of the ``"output"``
    text (what a write leaves on disk). ``fast=False`` runs every rewrite on libcst (the
    reference the fast path is tested against). ``handed`` receives the functions the text
    imports and hands to Tune or a Trainer (:mod:`migrate.tree`).
    """
    try:
        return _migrate_source(text, rules, context, lines_of, fast, handed)
    except RecursionError:  # a long generated expression: again, on a thread with room to recurse
        return _deep.run(_migrate_source, text, rules, context, lines_of, fast, handed)


def _migrate_source(
    text: str,
    rules: Sequence[type[Rule]],
    context: Context,
    lines_of: str,
    fast: bool,
    handed: list[tree.Handoff] | None = None,
) -> tuple[str, list[Diagnostic]]:
    index = _index.build(text, given_roles=context.given_roles)
    if handed is not None:
        handed[:] = tree.handoffs(index)
    stages: list[tuple[str, list[Diagnostic]]] = []
    before = [r(context) for r in rules if issubclass(r, FlagRule) and not r.after_rewrites and r.triggered(text)]
    stages.append((text, _flag(before, index)))
    current = text
    rewriters = [r for r in rules if not issubclass(r, FlagRule)]
    if any(r.triggered(text) and r.could_apply(index) for r in rewriters):
        input_tree = index.tree  # the input's, parsed once
        current, index = _rewrite(text, rewriters, context, index, stages, fast)
        current = _repairs.guards_bind_alike(input_tree, current)
        current = _repairs.comments_kept(text, current)
        current = _repairs.continuations_reindented(text, current)
        current = _repairs.unread_imports_removed(text, input_tree, current)
        current = _repairs.imports_merged(input_tree, current)
    after = [r(context) for r in rules if issubclass(r, FlagRule) and r.after_rewrites and r.triggered(current)]
    if current != text:
        # What the rewrites wrote is flagged too: a rewrite can make a use recognisable that the
        # input hid (compat's names become ray.train's under --target native), and a write must
        # report everything a `--check` of its output will find. Findings already made on the
        # input at the same line are not repeated.
        flags = [r for r in rules if issubclass(r, FlagRule) and not r.after_rewrites]
        after += [r(context) for r in flags if r.triggered(current)]
    if after:
        output_index = index if index.text == current else _index.build(current, given_roles=context.given_roles)
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
    deferring = {r.code for r in rules if issubclass(r, FlagRule) and r.defers}
    if deferring:  # a finding of a more specific rule at the same place says it better
        taken = {(d.line, d.col) for d in diagnostics if d.code not in deferring and not d.fixed}
        diagnostics = [d for d in diagnostics if d.code not in deferring or (d.line, d.col) not in taken]
    if _NOQA_WORD.search(reference):
        diagnostics = noqa.apply(diagnostics, reference, {r.code for r in rules})
    diagnostics = list(dict.fromkeys(diagnostics))  # a rule run again (a cleanup) finds what it found
    diagnostics.sort(key=lambda d: (d.line, d.col, d.code))  # file order, as ruff reports
    return current, diagnostics


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
            index = _index.build(current, given_roles=context.given_roles)
        if not rule_class.could_apply(index) or (again and not rule_class.cleanup_needed(first, index)):
            continue
        rule = rule_class(context, index)
        try:
            new_text = rule.fast(index) if fast else None
            if new_text is None:
                if module is None or wrapper is None:
                    module = parse_module(current)
                    wrapper = wrap(module)
                new_module = rule.apply(wrapper)
                if new_module is not module:
                    module, new_text = new_module, new_module.code
                    wrapper = wrap(module)
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
        if new_text != current and _NOQA_WORD.search(current):
            held = _directives.held_lines(current, rule.code)
            if held:
                kept = _held(current, new_text, held, rule)
                if kept != new_text:
                    new_text, module, wrapper = kept, None, None  # libcst's tree is of the full rewrite
        stages.append((current, rule.diagnostics))
        current = new_text
    return current, index


def _held(current: str, new_text: str, held: set[int], rule: Rule) -> str:
    """``new_text`` (``rule``'s rewrite of ``current``) with the lines a ``# noqa`` for the rule
    holds kept as they are in ``current``; the rule's findings there become flags (which the
    directive then suppresses). When that would leave the rule's other changes unsound (the
    text does not parse, or reads a name nothing binds), or every finding of the rule is held,
    the rule changes nothing: ``current``, every finding a flag."""
    old, new = current.splitlines(keepends=True), new_text.splitlines(keepends=True)
    out: list[str] = []
    stopped: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        touched = {i + 1 for i in range(i1, i2)} & held
        if tag == "equal" or not touched:
            out += new[j1:j2]
            continue
        out += _merge_hunk(old[i1:i2], new[j1:j2], [i + 1 in held for i in range(i1, i2)])
        stopped |= touched
    if not stopped:
        return new_text
    kept = "".join(out)
    everything_held = all(d.line in held for d in rule.diagnostics if d.fixed)
    if everything_held or not _sound(current, new_text, kept):
        lines = sorted(stopped)
        why = f" (not applied: `# noqa: {rule.code}` on line {lines[0]} holds a line this rewrite depends on)"
        rule.diagnostics = [
            replace(d, fixed=False, message=d.message if d.line in held or everything_held else d.message + why)
            for d in rule.diagnostics
        ]
        return current
    rule.diagnostics = [replace(d, fixed=False) if d.fixed and d.line in held else d for d in rule.diagnostics]
    return kept


def _merge_hunk(old: list[str], new: list[str], held: list[bool]) -> list[str]:
    """One changed stretch: the held old lines as they were, each other old line as rewritten.
    Each new line belongs to the old line it is most like (in order); a held line's own new
    lines are dropped, the lines it held stand instead. A new line like none of them (an added
    statement) is kept where it stands."""
    owner: list[tuple[int, bool]] = []  # (old line, whether it is like that line)
    last = 0
    for line in new:
        scores = [(difflib.SequenceMatcher(None, o, line).ratio(), -k) for k, o in enumerate(old) if k >= last]
        score, k = max(scores) if scores else (0.0, -last)
        like = score >= 0.3
        last = -k if like else last
        owner.append((last, like))
    out: list[str] = []
    for k, line in enumerate(old):
        if held[k]:
            out.append(line)
        out += [n for n, (w, like) in zip(new, owner, strict=True) if w == k and (not like or not held[k])]
    return out


def _sound(before: str, after: str, kept: str) -> bool:
    """``kept`` parses and reads no name that neither ``before`` nor ``after`` leaves unbound."""
    try:
        kept_tree = ast.parse(kept)
    except SyntaxError:
        return False
    return _unbound(kept_tree) <= _unbound(ast.parse(before)) | _unbound(ast.parse(after))


def _unbound(tree: ast.AST) -> set[str]:
    """Names read in ``tree`` that nothing in it binds (builtins aside): over-approximate
    scoping (a name bound anywhere counts as bound everywhere), enough to see a removed import."""
    import builtins

    read: set[str] = set()
    bound: set[str] = set(dir(builtins)) | {"__file__", "__name__", "__doc__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return read - bound


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
    by its name alone (``unqualified_words``, with what else their check needs:
    ``unqualified_needs``) in any file that says ``ray``. Substring
    tests first: the scan costs about as much as reading the file."""
    if "ray" in text:
        if any(anchor in text for anchor in _ANCHORS) or _imports_from_ray(text):
            return True
        if _judged_by_name(text) and _RAY.search(text):
            return True  # a rule that judges an attribute by name alone, in a file about Ray
    return target != "ray" and "compat" in text


def _judged_by_name(text: str) -> bool:
    return any(
        (not trigger or any(word in text for word in trigger))
        and any(word in text for word in words)
        and all(p.search(text) for p in needs)
        for trigger, words, needs in _UNQUALIFIED
    )


# The code of what does not parse (a notebook cell, a file); ignoring it (``per-file-ignores``,
# ``--ignore``) adds UNPARSED_IGNORED to a file's rule codes: its unparsed cells are not findings.
UNPARSED = notebooks.UNPARSED_CELL
UNPARSED_IGNORED = f"ignore:{UNPARSED}"


def process_file(
    path: str,
    rule_codes: Sequence[str],
    target: str,
    write: bool,
    *,
    max_bytes: int = MAX_FILE_BYTES,
    given_roles: tuple[tuple[str, str], ...] = (),
    commit_write: bool = True,
) -> FileResult:
    """Migrate one file (``.py`` or ``.ipynb``; one over ``max_bytes`` is skipped with an error).
    Errors are returned, never raised. ``given_roles``: what other modules of the tree hand its
    functions to (:mod:`migrate.tree`). ``write`` with ``commit_write=False``: findings are of the
    text a write leaves, and :func:`commit` writes it later."""
    with _collector_paused():
        result = _process_file(path, rule_codes, target, write, max_bytes, given_roles)
    if write and commit_write:
        commit(result, rule_codes)
    _record_error(result, rule_codes)
    return result


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while one file is processed. A file's ``ast`` tree and
    index are hundreds of thousands of objects without cycles, freed by reference counting when
    the file is done; collecting while they are built only walks them again and again (about a
    tenth of the codemod's time on Ray's own tree). The analyses keep no cycles (no recursive
    closures: tests/migrate/test_file_shapes.py checks it on Ray's tree), and what a libcst rewrite
    leaves is collected once the collector runs again, after the file."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _record_error(result: FileResult, rule_codes: Sequence[str]) -> None:
    """`per-file-ignores = ["ERROR"]`: a file known not to be processable (a generated file, one
    that does not parse) is recorded, not an error: --add-noqa writes this entry."""
    if result.error and result.recordable and not result.internal and UNPARSED_IGNORED in rule_codes:
        result.error, result.suppressed = None, result.suppressed + 1


def _process_file(
    path: str,
    rule_codes: Sequence[str],
    target: str,
    write: bool,
    max_bytes: int,
    given_roles: tuple[tuple[str, str], ...],
) -> FileResult:
    from migrate.rules import BY_CODE

    result = FileResult(path)
    rules = [BY_CODE[code] for code in rule_codes if code != UNPARSED_IGNORED]
    context = Context(target=target, path=path, given_roles=given_roles)  # type: ignore[arg-type]
    lines_of = "output" if write else "input"  # findings point at what is on disk afterwards
    try:
        source = read_source(path, max_bytes)
    except Unreadable as exc:
        result.error, result.recordable = str(exc), exc.recordable
        return result
    text, encoding, bom = source.text, source.encoding, source.bom
    result.encoding, result.bom = encoding, bom
    if not needs_parsing(text, target):
        return result  # a file that never names Ray is never read as code, whatever its size
    if source.size > max_bytes:
        code = notebooks.code_size(text) if path.endswith(".ipynb") else source.size
        if code is None or code > max_bytes:  # a notebook by its code cells, not its stored outputs
            what = f" of code cells ({source.size:,} in all)" if code is not None and path.endswith(".ipynb") else ""
            result.error = too_large(code if code is not None else source.size, max_bytes, what)
            return result
    result.parsed = True
    try:
        if path.endswith(".ipynb"):
            new_text, result.diagnostics = notebooks.migrate_notebook(
                text, lambda s: migrate_source(s, rules, context, lines_of=lines_of), lines_of=lines_of
            )
        else:
            new_text, result.diagnostics = migrate_source(
                text, rules, context, lines_of=lines_of, handed=result.handoffs
            )
    except SyntaxError as exc:
        line, col = exc.lineno or 1, exc.offset or 1
        result.error = f"does not parse (line {line}, col {col - 1}): {exc.msg}; skipped"
        if not isinstance(exc, LibcstSyntaxError) and not path.endswith(".ipynb") and newer_python(text):
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
    if UNPARSED_IGNORED in rule_codes:  # cells that do not parse, ignored for this file
        result.diagnostics = [replace(d, suppressed=True) if d.code == UNPARSED else d for d in result.diagnostics]
    result.suppressed = sum(d.suppressed for d in result.diagnostics)
    if result.suppressed:
        result.diagnostics = [d for d in result.diagnostics if not d.suppressed]
    result.changed = new_text != text
    result.old_text, result.new_text = text, new_text
    return result


def commit(result: FileResult, rule_codes: Sequence[str]) -> None:
    """Write ``result``'s rewrite to its file (in the file's own encoding); an encoding that
    cannot hold it is the result's error (recorded as process_file records one), and nothing is
    written."""
    if not result.changed or result.written or result.new_text is None:
        return
    try:
        data = result.new_text.encode(result.encoding)  # written back in the file's own encoding
    except UnicodeEncodeError as exc:
        result.error = f"the rewrite cannot be written in {result.encoding} ({exc.reason}); nothing written"
        result.changed = False
        _record_error(result, rule_codes)
        return
    atomic_write(result.path, data, bom=result.bom)
    result.written = True
