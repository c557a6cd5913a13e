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
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

RAY_ROOTS = ("ray.", "compat.")
_ROOT_NAMES = frozenset({"ray", "compat"})

_Scope = dict[str, frozenset[str]]  # name -> qualified names (empty: a local, non-import binding)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_NEW_SCOPES = (*_FUNCTIONS, ast.ClassDef)


@dataclass
class Node:
    """A Call, Attribute or Name outside import statements, with what the rules need."""

    node: ast.expr
    parent: ast.AST | None
    function_depth: int


@dataclass
class Index:
    text: str
    tree: ast.Module
    nodes: list[Node] = field(default_factory=list)
    names: set[str] = field(default_factory=set)  # every qualified name imported or referenced
    _resolved: dict[int, frozenset[str]] = field(default_factory=dict)
    _lines: list[str] | None = None

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
        if self._lines is None:
            self._lines = self.text.splitlines()
        text = self._lines[line - 1] if line - 1 < len(self._lines) else ""
        if not text.isascii():
            offset = len(text.encode("utf-8")[:offset].decode("utf-8", "replace"))
        return line, offset + 1

    def source(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ast.unparse(node)

    def refers_to(self, prefixes: tuple[str, ...]) -> bool:
        return any(n.startswith(prefixes) for n in self.names)


def parse(text: str) -> ast.Module:
    """``ast.parse`` without the SyntaxWarnings some files print, and without a depth limit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text)
        except RecursionError:
            with _deeper_recursion():
                return ast.parse(text)


class _deeper_recursion:
    def __enter__(self) -> None:
        self.limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.limit, 100_000))

    def __exit__(self, *exc: object) -> None:
        sys.setrecursionlimit(self.limit)


def build(text: str, tree: ast.Module | None = None) -> Index:
    """Index ``text`` (raises ``SyntaxError`` when it does not parse)."""
    index = Index(text, tree if tree is not None else parse(text))
    try:
        _Walker(index).module(index.tree)
    except RecursionError:
        index.nodes.clear()
        with _deeper_recursion():
            _Walker(index).module(index.tree)
    return index


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


def _bindings(body: list[ast.stmt] | ast.expr, arguments: ast.arguments | None) -> _Scope:
    """The names one function (or the module) binds, without descending into nested scopes."""
    scope: dict[str, set[str]] = {}
    globals_: set[str] = set()

    def bind(name: str, qualified: str | None = None) -> None:
        names = scope.setdefault(name, set())
        if qualified:
            names.add(qualified)

    if arguments is not None:
        for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            bind(arg.arg)
        for extra in (arguments.vararg, arguments.kwarg):
            if extra is not None:
                bind(extra.arg)
    stack: list[ast.AST] = list(body) if isinstance(body, list) else [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name, qualified in _import_bindings(node):
                bind(name, qualified)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name)
            stack.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bind(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bind(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            globals_.update(node.names)
        stack.extend(ast.iter_child_nodes(node))
    return {name: frozenset(q) for name, q in scope.items() if name not in globals_}


class _Walker:
    """One pre-order walk: resolves Names through the scope chain, records the nodes."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.chain: list[_Scope] = []
        self.depth = 0

    def module(self, tree: ast.Module) -> None:
        scope = _bindings(tree.body, None)
        for qualified in scope.values():
            self.index.names.update(qualified)
        self.chain.append(scope)
        for statement in tree.body:
            self.visit(statement, None)

    def lookup(self, name: str) -> frozenset[str]:
        for scope in reversed(self.chain):
            found = scope.get(name)
            if found is not None:
                return found
        return frozenset()

    def visit(self, node: ast.AST, parent: ast.AST | None) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return
        if isinstance(node, _NEW_SCOPES):
            self.scoped(node)
            return
        if isinstance(node, ast.Name):
            found = self.lookup(node.id)
            self.index._resolved[id(node)] = found
            if found:
                self.index.names.update(found)
                self.index.nodes.append(Node(node, parent, self.depth))
            return
        if isinstance(node, (ast.Attribute, ast.Call)):
            self.index.nodes.append(Node(node, parent, self.depth))
        for child in ast.iter_child_nodes(node):
            self.visit(child, node)
        if isinstance(node, ast.Attribute):
            found = self.index.qualified(node)
            if found:
                self.index.names.update(found)

    def scoped(self, node: ast.AST) -> None:
        # Decorators, defaults and base classes are evaluated in the enclosing scope.
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                self.visit(decorator, node)
        if isinstance(node, ast.ClassDef):
            for base in (*node.bases, *node.keywords):
                self.visit(base, node)
            self.body(node.body, _bindings(node.body, None), node, function=False)
            return
        assert isinstance(node, _FUNCTIONS)
        for default in (*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)):
            self.visit(default, node)
        if not isinstance(node, ast.Lambda):
            for annotation in _annotations(node):
                self.visit(annotation, node)
        body = node.body
        self.body(body if isinstance(body, list) else [body], _bindings(body, node.args), node, function=True)

    def body(
        self, statements: list[ast.stmt] | list[ast.expr], scope: _Scope, owner: ast.AST, *, function: bool
    ) -> None:
        for qualified in scope.values():
            self.index.names.update(qualified)
        saved = self.chain
        if function:  # a class scope is not visible from the functions inside it
            self.chain = [s for s in self.chain if not getattr(s, "is_class", False)] + [scope]
            self.depth += isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef))
        else:
            self.chain = [*self.chain, _ClassScope(scope)]
        try:
            for statement in statements:
                self.visit(statement, owner)
        finally:
            self.chain = saved
            if function:
                self.depth -= isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef))


class _ClassScope(dict[str, frozenset[str]]):
    is_class = True


def _annotations(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    arguments = node.args
    for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg):
        if arg is not None and arg.annotation is not None:
            yield arg.annotation
    if node.returns is not None:
        yield node.returns
