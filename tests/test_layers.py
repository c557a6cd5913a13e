"""Which way imports go: read from the source (module level, inside functions and under
``if TYPE_CHECKING:``: a type-only import is still a dependency a reader follows), over every
package and top-level module the wheel ships, with no package imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.one_pass  # reads files: no Ray, no mode


TOP_LEVEL = ("compat_pytest_plugin",)  # the wheel's top-level modules (pyproject's py-modules)


def modules(*packages: str) -> dict[str, Path]:
    found = {}
    for name in TOP_LEVEL:
        found[name] = ROOT / f"{name}.py"
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, known: dict[str, Path], *, type_checking: bool = True) -> set[str]:
    """The project modules ``name`` imports, anywhere (``type_checking=False``: not under
    ``if TYPE_CHECKING:``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node) and not type_checking:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    found.add(target)
                elif base in known:
                    found.add(base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    found.discard(name)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return out


def graph_of(*packages: str) -> dict[str, set[str]]:
    known = modules(*packages)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_the_reader_sees_imports_in_functions_and_under_type_checking_on_request(tmp_path: Path) -> None:
    known = {"pkg.a": tmp_path / "a.py", "pkg.b": tmp_path / "b.py", "pkg.c": tmp_path / "c.py"}
    known["pkg.a"].write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\ndef f():\n    from pkg import b\n"
    )
    assert imports_of("pkg.a", known["pkg.a"], known, type_checking=False) == {"pkg.b"}
    assert imports_of("pkg.a", known["pkg.a"], known) == {"pkg.b", "pkg.c"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_codemod_has_no_import_circle() -> None:
    """Each rule's libcst form imports the shared helpers (migrate.rules._names), never its
    rule module back; the rule modules import their libcst forms only when a file needs them."""
    assert cycles(graph_of("migrate")) == []


def test_the_runtime_has_no_import_circle() -> None:
    assert cycles(graph_of("compat", "compat_core", "v1", "v2")) == []


def test_nothing_the_wheel_ships_has_an_import_circle() -> None:
    """Every package and top-level module together (the pytest plugin, the readiness command
    reading the codemod), type-only imports included."""
    assert cycles(graph_of("compat", "compat_core", "v1", "v2", "migrate")) == []


def _package(module: str) -> str:
    return module.partition(".")[0]


def test_the_core_imports_no_engine_and_not_the_public_package() -> None:
    graph = graph_of("compat", "compat_core", "v1", "v2")
    wrong = sorted(
        (a, b)
        for a, targets in graph.items()
        if _package(a) == "compat_core"
        for b in targets
        if _package(b) != "compat_core"
    )
    assert wrong == []


CORE_ORDER = (
    "releases",
    "messages",
    "errors",
    "settings",
    "files",
    "switch",
    "migration",
    "installed",
    "config",
    "integration",
    "semantics",
    "run",
)
"""compat_core's parts, bottom first: each imports only the parts before it (docs/architecture.md)."""


def _core_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "compat_core" and len(parts) > 1 else None


def arrows_against(order: tuple[str, ...], graph: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for each import from a core part to a part at or above it in ``order`` (none
    sideways: two parts are never at one level)."""
    rank = {part: i for i, part in enumerate(order)}
    wrong = []
    for a, targets in sorted(graph.items()):
        for b in sorted(targets):
            pa, pb = _core_part(a), _core_part(b)
            if pa is None or pb is None or pa == pb:
                continue
            if pa not in rank or pb not in rank or rank[pb] > rank[pa]:
                wrong.append(f"{a} -> {b}")
    return wrong


def test_the_core_s_parts_depend_one_way() -> None:
    graph = graph_of("compat_core")
    assert {_core_part(m) for m in graph} - {None} == set(CORE_ORDER)  # a new part takes a place here
    assert arrows_against(CORE_ORDER, graph) == []
    # The check sees an arrow up, and a part not in the order.
    assert arrows_against(("a", "b"), {"compat_core.a.x": {"compat_core.b.y"}}) == [
        "compat_core.a.x -> compat_core.b.y"
    ]
    assert arrows_against(("a",), {"compat_core.a.x": {"compat_core.c"}}) == ["compat_core.a.x -> compat_core.c"]


def test_the_architecture_guide_draws_the_core_s_order() -> None:
    guide = (ROOT / "docs" / "architecture.md").read_text()
    assert " → ".join(f"`{part}`" for part in CORE_ORDER) in guide


def test_the_engines_import_the_core_only_and_never_each_other() -> None:
    graph = graph_of("compat", "compat_core", "v1", "v2")
    wrong = sorted(
        (a, b)
        for a, targets in graph.items()
        if _package(a) in ("v1", "v2")
        for b in targets
        if _package(b) not in ("compat_core", _package(a))
    )
    assert wrong == []


def test_one_module_chooses_the_engine() -> None:
    """Of the public package, only compat._engines imports an engine."""
    graph = graph_of("compat", "compat_core", "v1", "v2")
    choosers = {
        a for a, targets in graph.items() if _package(a) == "compat" for b in targets if _package(b) in ("v1", "v2")
    }
    assert choosers == {"compat._engines"}


def test_the_layer_checks_see_a_crossing(tmp_path: Path) -> None:
    """The checks above read what they claim: a core module importing an engine is seen."""
    core, engine = tmp_path / "compat_core" / "x.py", tmp_path / "v1" / "y.py"
    core.parent.mkdir()
    engine.parent.mkdir()
    core.write_text("def f():\n    from v1 import y\n")
    engine.write_text("")
    known = {"compat_core.x": core, "v1.y": engine}
    assert imports_of("compat_core.x", core, known) == {"v1.y"}


COMMANDS_READING_THE_CODEMOD = "compat.readiness"  # python -m compat readiness: source trees through the codemod


def test_the_runtime_imports_nothing_of_the_codemod() -> None:
    """A project's own ``migrate`` package (database migrations) beside its script is then no
    concern of a run's; only the readiness command reads source trees with the codemod."""
    graph = graph_of("compat", "compat_core", "v1", "v2", "migrate")
    wrong = sorted(
        (a, b)
        for a, targets in graph.items()
        if _package(a) != "migrate" and not (a + ".").startswith(COMMANDS_READING_THE_CODEMOD + ".")
        for b in targets
        if _package(b) == "migrate"
    )
    assert wrong == []
    assert any(_package(b) == "migrate" for b in graph["compat.readiness._collect"])  # the check reads imports


def test_the_runtime_and_the_codemod_name_one_migration_guide() -> None:
    import tomllib

    from compat_core import messages
    from migrate import tables

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert messages.GUIDE == tables.GUIDE == project["urls"]["Migration guide"]


def test_importing_the_core_patches_nothing_in_ray_and_imports_no_public_module() -> None:
    """Every module of the core, imported in a fresh process: ``ray.train`` keeps exactly the
    names it had, and neither ``compat`` nor an engine is imported."""
    import subprocess
    import sys

    names = sorted(modules("compat_core"))
    script = (
        "import sys, ray.train\n"
        "before = sorted(vars(ray.train))\n"
        f"for name in {names!r}:\n"
        "    __import__(name)\n"
        "assert sorted(vars(ray.train)) == before, set(vars(ray.train)) ^ set(before)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('compat', 'v1', 'v2'))\n"
        "assert loaded == [], loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def _compares_a_backend_name(node: ast.AST) -> bool:
    if not isinstance(node, ast.Compare):
        return False
    operands = [node.left, *node.comparators]
    for operand in operands:
        values = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
        if any(isinstance(v, ast.Constant) and v.value in ("v1", "v2") for v in values):
            return True
    return False


def test_no_module_but_the_switch_tests_a_backend_name() -> None:
    """Decisions ask the mode (``Mode.keeps_every_report``, ``emulates_v1_engine``, ...), never
    compare ``"v1"``/``"v2"``: only compat_core.switch turns names into a mode."""
    found = sorted(
        f"{name}:{node.lineno}"
        for name, path in modules("compat", "compat_core", "v1", "v2").items()
        if name != "compat_core.switch"
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if _compares_a_backend_name(node)
    )
    assert found == []
    assert _compares_a_backend_name(ast.parse("x == 'v2'").body[0].value)  # type: ignore[attr-defined]
    assert _compares_a_backend_name(ast.parse("x in ('v1', 'v2')").body[0].value)  # type: ignore[attr-defined]


ADAPTERS = "compat_core.releases.adapters"  # where compat reaches every private name of Ray


def ray_private_imports(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line`` (relative to ``root``) of each import of a private module of Ray (a ``_``-prefixed part:
    ``ray.train._internal``) or of a private name from one (``_train_coordinator_fn``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ray" and not node.level:
            names = [a.name for a in node.names]
            if any(p.startswith("_") for p in node.module.split(".")) or any(n.startswith("_") for n in names):
                found.append(f"{path.relative_to(root)}:{node.lineno}: from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ray" and any(p.startswith("_") for p in alias.name.split(".")):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: import {alias.name}")
    return found


def test_ray_private_names_are_reached_only_through_the_adapters_module() -> None:
    """A Ray release that moves a private name breaks one module, which says what each is for."""
    outside = [
        hit
        for name, path in modules("compat", "compat_core", "v1", "v2").items()
        if name != ADAPTERS
        for hit in ray_private_imports(path)
    ]
    assert outside == [], "import these through compat_core/releases/adapters.py:\n" + "\n".join(outside)
    assert ray_private_imports(modules("compat_core")[ADAPTERS])  # the check reads imports at all


def test_the_private_import_check_sees_each_form(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import ray.train._internal.session\nfrom ray.air._internal import torch_utils\n"
        "from ray.train.base_trainer import _train_coordinator_fn\nfrom ray.train import report\n"
        "from ._private import x\n"
    )
    found = [hit.partition(": ")[2] for hit in ray_private_imports(module, tmp_path)]
    assert found == [
        "import ray.train._internal.session",
        "from ray.air._internal import torch_utils",
        "from ray.train.base_trainer import _train_coordinator_fn",
    ]
