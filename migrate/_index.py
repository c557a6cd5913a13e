"""A fast index of one module: what each name refers to, found with the standard ``ast``.

The flag rules run on this index, and the engine uses it to decide whether a file needs
libcst at all (only files a rewriting rule can change do). ``ast.parse`` is several
times faster than libcst's parser, and the name resolution here is a single walk with
plain dictionaries instead of libcst's full scope analysis.

Resolution follows Python's scoping closely enough for a linter: a name bound by an
import resolves to what was imported; a function's own bindings (parameters,
assignments, loop targets, ...) shadow the module's imports inside that function;
class bodies do not leak into their methods. Where a name has several bindings in one
scope (an import and an assignment), the import counts, as with libcst's
``QualifiedNameProvider``.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from migrate.tables import SESSION_FUNCTIONS, SESSION_MODULES

RAY_ROOTS = ("ray.", "compat.")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(slots=True)
class Node:
    """A Call, Attribute or Name outside import statements, with what the rules need."""

    node: ast.expr
    parent: ast.AST | None
    functions: tuple[str, ...]  # names of the enclosing function definitions, outermost first

    @property
    def function_depth(self) -> int:
        return len(self.functions)


@dataclass
class Index:
    text: str
    tree: ast.Module
    nodes: list[Node] = field(default_factory=list)
    names: set[str] = field(default_factory=set)  # every qualified name imported or referenced
    imports: list[tuple[str, str]] = field(default_factory=list)  # (bound name, qualified name), any scope
    loaded: set[str] = field(default_factory=set)  # every identifier read anywhere
    star_imports: list[ast.ImportFrom] = field(default_factory=list)  # `from m import *`, any scope
    star_resolved: set[int] = field(default_factory=set)  # ids of bare names resolved through a session star import
    # Every import statement: (statement, the statement holding it or None at module level,
    # names of the enclosing function definitions).
    import_statements: list[tuple[ast.Import | ast.ImportFrom, ast.AST | None, tuple[str, ...]]] = field(
        default_factory=list
    )
    module_scope_imports: set[int] = field(default_factory=set)  # ids of those that bind module globals
    _resolved: dict[int, frozenset[str]] = field(default_factory=dict)
    _lines: list[str] | None = None
    # What analyses built on the index computed for this file, by name (migrate._roles.roles_of).
    cache: dict[str, Any] = field(default_factory=dict)
    _assignments: dict[str, ast.expr] | None = None
    _identifiers: tuple[set[str], Counter[str]] | None = None
    _line_starts: list[int] | None = None
    # (function, "tune" | "train"): this module's functions other modules of the tree hand to
    # Tune or a Trainer (migrate._roles; the command line's tree pass finds them).
    given_roles: tuple[tuple[str, str], ...] = ()

    @property
    def assignments(self) -> dict[str, ast.expr]:
        """Module-level ``name = value`` bindings (the last one of each name)."""
        if self._assignments is None:
            self._assignments = {
                target.id: statement.value
                for statement in self.tree.body
                if isinstance(statement, ast.Assign)
                for target in statement.targets
                if isinstance(target, ast.Name)
            }
        return self._assignments

    def qualified(self, node: ast.AST) -> frozenset[str]:
        """Qualified names ``node`` (a Name or an Attribute chain) refers to."""
        found = self._resolved.get(id(node))
        if found is not None:
            return found
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            found = frozenset(f"{b}.{node.attr}" for b in base) if base else frozenset()
        else:
            found = frozenset()
        self._resolved[id(node)] = found
        return found

    def position(self, node: ast.AST) -> tuple[int, int]:
        """1-based line and column (in characters, as libcst counts them)."""
        line, offset = node.lineno, node.col_offset  # type: ignore[attr-defined]
        text = self.line(line)
        if not text.isascii():
            offset = len(text.encode("utf-8")[:offset].decode("utf-8", "replace"))
        return line, offset + 1

    def line(self, number: int) -> str:
        """Line ``number`` (1-based) as the parser counts lines (not str.splitlines, which
        also breaks at form feeds and other separators)."""
        if self._lines is None:
            self._lines = _LINE_BREAK.split(self.text)
        return self._lines[number - 1] if 0 < number <= len(self._lines) else ""

    def source(self, node: ast.AST) -> str:
        """The source text of ``node`` when it is on one line (the rules' case), else unparsed."""
        line, end = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        if line == end:
            raw = self.line(line).encode("utf-8")
            return raw[node.col_offset : node.end_col_offset].decode("utf-8", "replace")  # type: ignore[attr-defined]
        return ast.unparse(node)

    @property
    def identifiers(self) -> set[str]:
        """Every identifier the module binds or reads, in any scope: names, definitions,
        parameters, keyword arguments, import bindings, ``global`` names; not attribute
        names or import paths (what libcst's ``Name`` nodes and import aliases hold, so a
        new import's name is chosen as the libcst rewrites choose it)."""
        if self._identifiers is None:
            self._identifiers = _identifiers(self.tree)
        return self._identifiers[0]

    @property
    def bindings(self) -> Counter[str]:
        """How many times each name is bound, over every scope (assignment targets,
        definitions, parameters, imports, ``except ... as``, match captures)."""
        if self._identifiers is None:
            self._identifiers = _identifiers(self.tree)
        return self._identifiers[1]

    def offset(self, line: int, byte_col: int) -> int:
        """The offset in ``text`` (characters) of ``ast``'s position (line, UTF-8 byte column)."""
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in _LINE_BREAK.finditer(self.text))]
        text = self.line(line)
        if not text.isascii():
            byte_col = len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))
        return self._line_starts[line - 1] + byte_col

    def refers_to(self, prefixes: tuple[str, ...]) -> bool:
        return any(n.startswith(prefixes) for n in self.names)


def parse(text: str) -> ast.Module:
    """``ast.parse`` without the SyntaxWarnings some files print."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def build(text: str, tree: ast.Module | None = None, given_roles: tuple[tuple[str, str], ...] = ()) -> Index:
    """Index ``text`` (raises ``SyntaxError`` when it does not parse)."""
    index = Index(text, tree if tree is not None else parse(text), given_roles=given_roles)
    _walk(index)
    return index


class _Scope:
    __slots__ = ("bindings", "globals", "is_class", "parent")

    def __init__(self, parent: _Scope | None, *, is_class: bool = False) -> None:
        self.parent = parent
        self.is_class = is_class
        self.bindings: dict[str, set[str]] = {}
        self.globals: set[str] = set()

    def bind(self, name: str, qualified: str | None = None) -> None:
        names = self.bindings.get(name)
        if names is None:
            names = self.bindings[name] = set()
        if qualified:
            names.add(qualified)

    def lookup(self, name: str) -> set[str]:
        found = self.binding(name)
        return found if found is not None else set()

    def binding(self, name: str) -> set[str] | None:
        """What ``name`` is bound to where it is read (its qualified names, empty for a local
        value); None when nothing in the module binds it."""
        scope: _Scope | None = self
        first = True
        while scope is not None:
            if name in scope.globals:
                while scope.parent is not None:
                    scope = scope.parent
            if first or not scope.is_class:  # a class body is not visible from its methods
                found = scope.bindings.get(name)
                if found is not None:
                    return found
            first = False
            scope = scope.parent
        return None


def _import_bindings(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    """(bound name, qualified name) for each alias of an import statement."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                root = alias.name.split(".", 1)[0]
                yield root, root
    elif node.level == 0 and node.module:  # relative imports are the project's own code
        for alias in node.names:
            if alias.name != "*":
                yield alias.asname or alias.name, f"{node.module}.{alias.name}"


def _arguments(arguments: ast.arguments) -> Iterator[ast.arg]:
    yield from arguments.posonlyargs
    yield from arguments.args
    yield from arguments.kwonlyargs
    if arguments.vararg is not None:
        yield arguments.vararg
    if arguments.kwarg is not None:
        yield arguments.kwarg


# Fields that never hold a node the walk needs: expression contexts (a Load/Store object
# under every name), and plain values.
_NOT_CHILDREN = frozenset({"ctx", "id", "attr", "arg", "name", "names", "module", "level", "value_kind", "kind",
                           "type_comment", "is_async", "conversion", "op"})  # fmt: skip
_FIELDS: dict[type, tuple[str, ...]] = {}


def _walk(index: Index) -> None:
    """One iterative pre-order walk that records scopes, bindings and nodes; names are
    resolved afterwards, once every binding of every scope is known (Python decides a
    name's scope by all its bindings in a function, not by order)."""
    module = _Scope(None)
    loads: list[tuple[ast.Name, _Scope]] = []
    kept: list[tuple[ast.expr, ast.AST | None, tuple[str, ...]]] = []  # Node's fields, in source order
    Name, Attribute, Call, Load, Constant = ast.Name, ast.Attribute, ast.Call, ast.Load, ast.Constant
    fields_of = _FIELDS
    AST = ast.AST
    stack: list[tuple[ast.AST, ast.AST | None, _Scope, tuple[str, ...]]] = [
        (statement, None, module, ()) for statement in reversed(index.tree.body)
    ]
    while stack:
        node, parent, scope, functions = stack.pop()
        kind = type(node)
        if kind is Name:
            if type(node.ctx) is Load:  # type: ignore[attr-defined]
                loads.append((node, scope))  # type: ignore[arg-type]
                kept.append((node, parent, functions))  # type: ignore[arg-type]
            else:
                scope.bind(node.id)  # type: ignore[attr-defined]
            continue
        if kind is Constant:  # the most common leaf after names
            continue
        if kind is Attribute or kind is Call:
            kept.append((node, parent, functions))  # type: ignore[arg-type]
        elif kind is ast.Import or kind is ast.ImportFrom:
            index.import_statements.append((node, parent, functions))  # type: ignore[arg-type]
            if scope is module:
                index.module_scope_imports.add(id(node))
            if kind is ast.ImportFrom and any(a.name == "*" for a in node.names):  # type: ignore[attr-defined]
                index.star_imports.append(node)  # type: ignore[arg-type]
            for name, qualified in _import_bindings(node):  # type: ignore[arg-type]
                scope.bind(name, qualified)
                index.names.add(qualified)
                index.imports.append((name, qualified))
            continue
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef or kind is ast.Lambda:
            _function(node, parent, scope, functions, stack)  # type: ignore[arg-type]
            continue
        elif kind is ast.ClassDef:
            scope.bind(node.name)  # type: ignore[attr-defined]
            inner = _Scope(scope, is_class=True)
            pending = [(c, node, scope, functions) for c in (*node.decorator_list, *node.bases, *node.keywords)]  # type: ignore[attr-defined]
            pending += [(c, node, inner, functions) for c in node.body]  # type: ignore[attr-defined]
            stack.extend(reversed(pending))
            continue
        elif kind is ast.Global or kind is ast.Nonlocal:
            scope.globals.update(node.names)  # type: ignore[attr-defined]
            continue
        elif kind is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
            scope.bind(node.name)  # type: ignore[attr-defined]
        fields = fields_of.get(kind)
        if fields is None:
            fields = fields_of[kind] = tuple(f for f in kind._fields if f not in _NOT_CHILDREN)
        for name in reversed(fields):  # pushed last first, so popped in source order
            value = getattr(node, name, None)
            if type(value) is list:
                stack += [(child, node, scope, functions) for child in reversed(value) if isinstance(child, AST)]
            elif isinstance(value, AST):
                stack.append((value, node, scope, functions))
    resolved = index._resolved
    index.loaded.update(name_node.id for name_node, _ in loads)
    # `from ray.air.session import *`: the session's functions, called by their bare names, are its.
    starred = sorted({n.module for n in index.star_imports if not n.level and n.module in SESSION_MODULES})
    for name_node, name_scope in loads:
        found = name_scope.binding(name_node.id)
        if found is None and starred and name_node.id in SESSION_FUNCTIONS:
            found = {f"{module}.{name_node.id}" for module in starred}
            index.star_resolved.add(id(name_node))
        resolved[id(name_node)] = frozenset(found) if found else frozenset()
    # An attribute chain's names, children before parents (``kept`` is in pre-order): what
    # Index.qualified would find, without its recursion through every chain.
    empty: frozenset[str] = frozenset()
    names = index.names
    for expression, _, _ in reversed(kept):
        if isinstance(expression, Attribute):
            base = resolved.get(id(expression.value))
            chain = frozenset([f"{b}.{expression.attr}" for b in base]) if base else empty
            resolved[id(expression)] = chain
            names.update(chain)
        elif type(expression) is Name:
            names.update(resolved[id(expression)])
    index.nodes = [Node(*k) for k in kept if type(k[0]) is not Name or resolved[id(k[0])]]


def _identifiers(tree: ast.Module) -> tuple[set[str], Counter[str]]:
    """(every identifier, how many times each is bound): see Index.identifiers/bindings."""
    names: set[str] = set()
    bound: Counter[str] = Counter()
    add = names.add
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Name:
            add(node.id)  # type: ignore[attr-defined]
            if type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                bound[node.id] += 1  # type: ignore[attr-defined]
        elif kind is ast.arg:
            bound[node.arg] += 1  # type: ignore[attr-defined]
        elif kind is ast.keyword:
            if node.arg:  # type: ignore[attr-defined]
                add(node.arg)  # type: ignore[attr-defined]
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef or kind is ast.ClassDef:
            bound[node.name] += 1  # type: ignore[attr-defined]
        elif kind is ast.Import or kind is ast.ImportFrom:
            bound.update(name for name, _ in _import_bindings(node))  # type: ignore[arg-type]
            if kind is ast.ImportFrom and node.level:  # type: ignore[attr-defined]
                bound.update(a.asname or a.name for a in node.names if a.name != "*")  # type: ignore[attr-defined]
        elif kind is ast.Global or kind is ast.Nonlocal:
            names.update(node.names)  # type: ignore[attr-defined]
        elif kind is ast.ExceptHandler or kind is ast.MatchAs or kind is ast.MatchStar:
            if node.name:  # type: ignore[attr-defined]
                bound[node.name] += 1  # type: ignore[attr-defined]
        elif kind is ast.MatchMapping and node.rest:  # type: ignore[attr-defined]
            bound[node.rest] += 1  # type: ignore[attr-defined]
    names.update(bound)
    return names, bound


def _function(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    parent: ast.AST | None,
    scope: _Scope,
    functions: tuple[str, ...],
    stack: list[tuple[ast.AST, ast.AST | None, _Scope, tuple[str, ...]]],
) -> None:
    """Decorators, defaults and annotations belong to the enclosing scope; the body to a new one."""
    inner = _Scope(scope)
    owner: ast.AST | None = node
    for arg in _arguments(node.args):
        inner.bind(arg.arg)
    pending: list[tuple[ast.AST, ast.AST | None, _Scope, tuple[str, ...]]]
    outer: list[ast.AST] = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    if isinstance(node, ast.Lambda):
        pending = [(c, owner, scope, functions) for c in outer] + [(node.body, owner, inner, functions)]
    else:
        scope.bind(node.name)
        outer += node.decorator_list
        outer += [a.annotation for a in _arguments(node.args) if a.annotation is not None]
        if node.returns is not None:
            outer.append(node.returns)
        inside = (*functions, node.name)
        pending = [(c, owner, scope, functions) for c in outer] + [(c, owner, inner, inside) for c in node.body]
    stack.extend(reversed(pending))
