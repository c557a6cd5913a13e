"""What the rewrites leave that a reader would fix by hand, repaired on the rewritten text: an
import guard whose branches no longer bind the same name, a comment that went with the line it
was on. (An ``import X`` a rewrite would add beside the same one is never written: the rules'
libcst forms leave it out, :func:`migrate.rules._cst.imports.without_added_duplicates`.)

These are not import planning (the rules plan their imports on libcst's tree,
:mod:`migrate.rules._cst.imports`): they read the whole module before and after every rule ran,
which no single rule's visitor sees.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from migrate import _directives, _imports
from migrate._lines import line_map_of, opcodes


def guards_bind_alike(before: ast.Module, after: str) -> str:
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


def comments_kept(before: str, after: str) -> str:
    """``after`` with every comment of a line the rewrites removed or replaced that it lost
    (``RunConfig,  # storage`` of an import whose name went): a replaced line's after the code
    of the line it became, when that has none; else, and for a line removed, on a line of its
    own where it was, at its indentation. A tool's directive (``# noqa``, ``# type: ignore``,
    ...) served its line: it is not moved."""
    if "#" not in before:
        return after
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    plain_a, plain_b = before.splitlines(), after.splitlines()  # compared as line_map compares them
    ops = opcodes(plain_a, plain_b)
    lost: list[tuple[int, str, str, bool]] = []  # (old line's number, its text, its comment, it is gone)
    for tag, i1, i2, _, _ in ops:
        if tag not in ("delete", "replace"):
            continue
        for i in range(i1, i2):
            comment = _comment_of(a[i]) if "#" in a[i] else None
            if comment and not _DIRECTIVE.match(comment) and comment not in after:
                lost.append((i, a[i], comment, tag == "delete"))
    if not lost:
        return after
    mapping = line_map_of(plain_a, plain_b, ops)
    ends_inside = _directives.comment_lines(after)  # 1-based lines whose end is inside a string or continued
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
        comment = _directives.line_comment(line)
    except _directives.PartOfLarger:  # not sure there is one: not moved
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


def unread_imports_removed(before_text: str, before: ast.Module, after: str) -> str:
    """A module-level import of Ray's (or compat's) whose name the rewrites left unread is
    removed: one a rewrite wrote and a later one made unused (``air.RunConfig(...)`` in a Tuner
    call: RTM001 imports ``train`` for ``train.RunConfig``, RTM005 makes it ``tune.RunConfig``),
    and one the input read and the output reads no more (``from ray import train`` once the
    Tune trainable's ``train.report`` is ``tune.report``). An import the input had and never
    read stays: a re-export, or the project's own business. Only a one-line ``from ... import``
    without a comment (``import ray`` stays: the docs' "no second import ray" table row); it goes
    when none of its names is left, else the name leaves it."""
    if "import" not in after:
        return after
    bound_before = {name for node in ast.walk(before) if isinstance(node, (ast.Import, ast.ImportFrom))
                    for name in _import_names(node)}  # fmt: skip
    try:
        tree = ast.parse(after)
    except SyntaxError:
        return after
    statements = [
        statement
        for statement in tree.body
        if isinstance(statement, ast.ImportFrom)
        and statement.lineno == statement.end_lineno
        and _is_ray_import(statement)
        and all(a.name != "*" for a in statement.names)  # a star import binds what it does not name
    ]
    if not statements:
        return after
    read_before, read_after = _reads(before, before_text), _reads(tree, after)

    def unread(alias: ast.alias) -> bool:
        name = _import_name(alias)
        return name not in read_after and (name not in bound_before or name in read_before)

    lines = after.splitlines(keepends=True)
    for statement in statements:
        line = lines[statement.lineno - 1]
        keep = [a for a in statement.names if not unread(a)]
        if len(keep) == len(statement.names) or "#" in line or ";" in line:
            continue
        ending = line[len(line.rstrip("\r\n")) :]
        indent = line[: len(line) - len(line.lstrip())]
        if not keep:
            lines[statement.lineno - 1] = ""
        else:
            names = ", ".join(map(_alias, keep))
            lines[statement.lineno - 1] = f"{indent}from {statement.module} import {names}{ending}"
    return "".join(lines)


def _reads(tree: ast.Module, text: str) -> set[str]:
    """Names the module reads: loaded names, the first name of a dotted path in a string (a string
    annotation: ``x: "train.Checkpoint"``), and what it re-exports (:func:`_imports.exported`)."""
    read = _imports.exported(tree, text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            read.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 200:
            read.update(_ANNOTATION_NAME.findall(node.value))
    return read


_ANNOTATION_NAME = re.compile(r"\b([A-Za-z_]\w*)\.")


def _import_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [_import_name(a) for a in node.names if a.name != "*"]


def _import_name(alias: ast.alias) -> str:
    return alias.asname or alias.name.split(".")[0]


def _is_ray_import(statement: ast.ImportFrom) -> bool:
    return not statement.level and (statement.module or "").split(".")[0] in ("ray", "compat")


MERGE_WIDTH = 100  # a merged import longer than this is left as separate lines


def imports_merged(before: ast.Module, after: str) -> str:
    """A ``from ray.train import X`` the rewrites wrote at module level is folded into a
    ``from ray.train import ...`` the file already had above it (one line, no parentheses, no
    comment), as LibCST's ``AddImportsVisitor`` merges the imports it adds: a reviewer keeps one
    import line per module. Without one, imports the rewrites wrote in one block of imports
    (``from ray.air.config import RunConfig`` and ``from ray.air.result import Result`` above
    each other) become one line. An import the input had is never moved, and none is merged into
    a later one (the name would be bound later)."""
    if after.count("from ray.train import") < 2:
        return after
    original = {ast.unparse(s) for s in before.body if _plain_train_import(s)}
    try:
        tree = ast.parse(after)
    except SyntaxError:
        return after
    lines = after.splitlines(keepends=True)
    anchor: ast.ImportFrom | None = None
    written_anchor = False  # the anchor is a line the rewrites wrote (then: only imports in between)
    names: list[str] = []
    dropped: list[ast.ImportFrom] = []
    rebound: set[str] = set()  # names bound at module level since the anchor
    for statement in tree.body:
        if not _plain_train_import(statement):
            if anchor is not None:
                if written_anchor and not isinstance(statement, (ast.Import, ast.ImportFrom)):
                    break  # two imports the rewrites wrote are merged within one block of imports
                rebound.update(_bindings_of(statement))
            continue
        assert isinstance(statement, ast.ImportFrom)
        text = ast.unparse(statement)
        line = lines[statement.lineno - 1]
        simple = statement.lineno == statement.end_lineno and "(" not in line and "#" not in line
        if anchor is None:
            if simple:
                anchor, names, written_anchor = statement, [_alias(a) for a in statement.names], text not in original
            continue
        if text not in original and simple:
            if rebound & {a.asname or a.name for a in statement.names}:
                break  # bound in between: the import's place decides what the name holds
            new = [_alias(a) for a in statement.names if _alias(a) not in names]
            if len(f"from ray.train import {', '.join([*names, *new])}") > MERGE_WIDTH:
                break
            names += new
            dropped.append(statement)
    if anchor is None or not dropped:
        return after
    indent = lines[anchor.lineno - 1][: len(lines[anchor.lineno - 1]) - len(lines[anchor.lineno - 1].lstrip())]
    ending = lines[anchor.lineno - 1][len(lines[anchor.lineno - 1].rstrip("\r\n")) :]
    lines[anchor.lineno - 1] = f"{indent}from ray.train import {', '.join(names)}{ending}"
    for statement in dropped:
        lines[statement.lineno - 1] = ""
    return "".join(lines)


def _bindings_of(statement: ast.stmt) -> set[str]:
    """Names a module-level statement may bind (assignments, definitions, imports, loop targets)."""
    found: set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(_import_names(node))
    return found


def _plain_train_import(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "ray.train" and not statement.level


def _alias(alias: ast.alias) -> str:
    return f"{alias.name} as {alias.asname}" if alias.asname else alias.name


def continuations_reindented(before: str, after: str) -> str:
    """A call whose callee a rewrite renamed (``session.report(`` -> ``train.report(``) keeps its
    continuation lines under its first argument: a line of the input aligned one column right of
    an opening bracket (a hanging, "visual" indent) that the rewrite left as it was moves with
    that bracket. Only brackets on a line the rewrite changed, matched in order with the same
    line's brackets after it, and only lines whose text the rewrite left alone."""
    old_lines = before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    old_open = _visual_brackets(before)
    if not old_open:
        return after
    new_open = _visual_brackets(after)
    same: dict[int, int] = {}  # input line -> output line, for the lines the rewrites left as they were
    changed: dict[int, int] = {}  # input line -> output line, for lines replaced one for one
    for tag, i1, i2, j1, j2 in opcodes(old_lines, new_lines):
        if tag == "equal":
            same.update({i1 + k: j1 + k for k in range(i2 - i1)})
        elif tag == "replace" and i2 - i1 == j2 - j1:
            changed.update({i1 + k: j1 + k for k in range(i2 - i1)})
    edits: dict[int, str] = {}
    for line, brackets in old_open.items():
        target = changed.get(line)
        if target is None or len(new_open.get(target, [])) != len(brackets):
            continue
        for (column, last), (new_column, _) in zip(brackets, new_open[target], strict=True):
            if column == new_column:
                continue
            for inner in range(line + 1, last + 1):
                text = old_lines[inner]
                if len(text) - len(text.lstrip(" ")) != column + 1 or inner not in same:
                    continue
                edits[same[inner]] = " " * (new_column + 1) + text.lstrip(" ")
    if not edits:
        return after
    return "".join(edits.get(i, line) for i, line in enumerate(new_lines))


def _visual_brackets(text: str) -> dict[int, list[tuple[int, int]]]:
    """0-based line -> (column, 0-based line of its closing bracket) of each opening bracket on
    that line that closes on a later line and has its first item on its own line (the brackets
    a hanging indent aligns to)."""
    found: dict[int, list[tuple[int, int]]] = {}
    stack: list[tuple[int, int, bool]] = []  # (line, column, an item follows on the same line)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return {}
    previous_open: tuple[int, int] | None = None
    for token in tokens:
        if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            previous_open = None
            continue
        if previous_open is not None and stack and (stack[-1][0], stack[-1][1]) == previous_open:
            stack[-1] = (*previous_open, token.start[0] - 1 == previous_open[0])
        previous_open = None
        if token.type == tokenize.OP and token.string in "([{":
            stack.append((token.start[0] - 1, token.start[1], False))
            previous_open = (token.start[0] - 1, token.start[1])
        elif token.type == tokenize.OP and token.string in ")]}" and stack:
            line, column, follows = stack.pop()
            if follows and token.start[0] - 1 > line:
                found.setdefault(line, []).append((column, token.start[0] - 1))
    for brackets in found.values():
        brackets.sort()
    return found
