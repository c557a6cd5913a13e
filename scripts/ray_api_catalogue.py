"""The V1-era API Ray shipped, read from its releases and held against the newest one's V2 API.

    python scripts/ray_api_catalogue.py                 # read every release, print what changed
    python scripts/ray_api_catalogue.py --write         # ... and write migrate/catalogue/entries.py
    python scripts/ray_api_catalogue.py --releases 2.0.1 2.60.0   # only these

For each release (the newest patch of every 2.x minor from 2.0 to the newest supported one) the
wheel is fetched with ``pip download ray==X --no-deps --only-binary=:all: --python-version 3.10
--platform manylinux2014_x86_64`` into a cache (``$RAY_WHEELS``, default
``~/.cache/ray-api-wheels``) and its source is read with ``ast`` (nothing is imported):

- every public module of ``ray.train``, ``ray.air`` and ``ray.tune`` (no path part starting
  with ``_``, no ``tests``/``examples``, not V2's own ``ray.train.v2``: ``ray.tune.trial``,
  ``ray.tune.suggest.optuna`` and ``ray.tune.integration.comet`` are V1-era API users import
  too), with the names each exports (its ``__all__``, else what it defines, and a package's imports);
- the public methods, properties and ``__init__`` keywords of the classes users call
  (``MEMBER_CLASSES``), their Ray base classes' included.

Each name ever shipped is then classified against the newest release's V2 API (the branch of
``if is_v2_enabled(): ...`` Ray takes under ``RAY_TRAIN_V2_ENABLED=1``): ``same`` (it is there),
``moved`` (the name is exported by another public module there: its new home), ``removed``.
The result, with the first and last release that shipped each name and the file it came from, is
``migrate/catalogue/entries.py``; the codemod's rules read it and ``migrate/catalogue/advice.py``
(the reviewed, hand-written part: what to do instead, by family). Run again on a new release:
the printed summary shows what changed, ``--write`` stores it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import pprint
import re
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "migrate" / "catalogue" / "entries.py"
WHEELS = Path(os.environ.get("RAY_WHEELS", Path.home() / ".cache" / "ray-api-wheels"))
FIRST, NEWEST = Version("2.0"), Version("2.60")
OLDEST_SUPPORTED = Version("2.44")  # a moved name's new home must exist from here on to be rewritten

# Classes whose members users call; by name, in whichever public module defines them.
MEMBER_CLASSES = frozenset(
    {
        "Checkpoint", "Result", "TrainContext", "ScalingConfig", "RunConfig", "CheckpointConfig",
        "FailureConfig", "DataConfig", "BaseTrainer", "DataParallelTrainer", "TorchTrainer",
        "XGBoostTrainer", "LightGBMTrainer", "TensorflowTrainer", "TorchConfig", "SyncConfig",
    }
)  # fmt: skip
# Names too generic to follow to a new home by name alone (keras' Callback is not Tune's).
GENERIC = frozenset({"Callback", "Config", "Trainer", "Result"})
# Names a module binds that are not API: loggers, typing helpers, constants of the module itself.
NOT_API = re.compile(r"^(logger|log|T|[A-Z_]+_T|PublicAPI|DeveloperAPI|Deprecated|annotations|TYPE_CHECKING)$")


@dataclass
class Module:
    path: str  # ray.train.torch
    file: str  # ray/train/torch/__init__.py
    names: dict[str, str] = field(default_factory=dict)  # exported name -> kind (class, function, module, value)
    imports: dict[str, str] = field(default_factory=dict)  # bound name -> qualified name it comes from
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    bound: set[str] = field(default_factory=set)  # every public name the module binds (importable)
    stars: list[str] = field(default_factory=list)  # modules it imports * from (a shim's re-exports)


def releases(wanted: list[str] | None) -> list[Version]:
    """The newest patch of every 2.x minor from 2.0 to NEWEST with a cp310 manylinux2014 wheel."""
    if wanted:
        return [Version(v) for v in wanted]
    request = urllib.request.Request(
        "https://pypi.org/simple/ray/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    newest: dict[int, Version] = {}
    for f in files:
        match = re.fullmatch(r"ray-([\d.]+)-cp310-cp310-manylinux2014_x86_64\.whl", f["filename"])
        if not match:
            continue
        v = Version(match.group(1))
        if v.major == 2 and FIRST <= Version(f"2.{v.minor}") <= NEWEST and v > newest.get(v.minor, Version("0")):
            newest[v.minor] = v
    return [newest[m] for m in sorted(newest)]


def wheel(version: Version) -> Path:
    found = sorted(WHEELS.glob(f"ray-{version}-cp310-*.whl"))
    if found:
        return found[0]
    WHEELS.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", f"ray=={version}", "--no-deps", "--only-binary=:all:",
               "--python-version", "3.10", "--platform", "manylinux2014_x86_64", "-d", str(WHEELS), "-q"]  # fmt: skip
    subprocess.run(command, check=True)
    return sorted(WHEELS.glob(f"ray-{version}-cp310-*.whl"))[0]


def is_public_module(path: str) -> bool:
    """``ray/train/torch/torch_trainer.py`` and the like: a module users import from."""
    if not path.startswith(("ray/train/", "ray/air/", "ray/tune/")) or not path.endswith(".py"):
        return False
    parts = path[:-3].split("/")
    if parts[:3] == ["ray", "train", "v2"]:
        return False
    return not any(p.startswith("_") and p != "__init__" or p in ("tests", "examples", "benchmarks") for p in parts)


def module_name(path: str) -> str:
    parts = path[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources(whl: Path) -> Iterator[tuple[str, str]]:
    """(path inside the package tree, text) of every .py file of ray/train, ray/air and ray/tune."""
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            name = info.filename
            cut = name.find("ray/")
            if cut < 0 or not name.endswith(".py"):
                continue
            if name[:cut] and not name[:cut].endswith("purelib/") and not name[:cut].endswith("platlib/"):
                continue
            path = name[cut:]
            if path.startswith(("ray/train/", "ray/air/", "ray/tune/")):
                yield path, z.read(info).decode("utf-8", "replace")


def _is_v2_test(test: ast.expr) -> bool | None:
    """For ``if <test>:``, whether its body is V2's branch (True), V1's (False), or neither (None)."""
    text = ast.unparse(test)
    if "v2_enabled" not in text and "V2_ENABLED" not in text:
        return None
    return not text.startswith("not ")


def _statements(body: list[ast.stmt], v2: bool | None) -> Iterator[ast.stmt]:
    """Module-level statements, into ``if``/``try`` blocks. Of a V1/V2 switch, ``v2=True`` takes
    V2's branch only (what ``RAY_TRAIN_V2_ENABLED=1`` imports), ``False`` V1's, ``None`` both
    (what a release shipped in either setting)."""
    for statement in body:
        if isinstance(statement, ast.If):
            if "TYPE_CHECKING" in ast.unparse(statement.test):
                continue
            side = _is_v2_test(statement.test)
            if v2 is not None and side is not None:
                yield from _statements(statement.body if side else statement.orelse, v2)
                continue
            yield from _statements(statement.body, v2)
            yield from _statements(statement.orelse, v2)
        elif isinstance(statement, ast.Try):
            yield from _statements(statement.body, v2)
            for handler in statement.handlers:
                yield from _statements(handler.body, v2)
        else:
            yield statement


def read_module(path: str, text: str, v2: bool | None) -> Module:
    module = Module(module_name(path), path)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return module
    package = module.path if path.endswith("__init__.py") else module.path.rpartition(".")[0]
    bound: dict[str, str] = {}
    listed: list[str] | None = None
    for statement in _statements(tree.body, v2):
        if isinstance(statement, ast.ClassDef):
            bound[statement.name] = "class"
            module.classes[statement.name] = statement
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound[statement.name] = "function"
        elif isinstance(statement, ast.ImportFrom):
            base = statement.module or ""
            if statement.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - statement.level + 1] + ([base] if base else [])
                )
            for alias in statement.names:
                if alias.name == "*":
                    module.stars.append(base)
                    continue
                local = alias.asname or alias.name
                module.imports[local] = f"{base}.{alias.name}"
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    module.imports[alias.asname] = alias.name
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    if target.id == "__all__" and isinstance(statement.value, (ast.List, ast.Tuple)):
                        listed = [e.value for e in statement.value.elts if isinstance(e, ast.Constant)]
                    elif not target.id.startswith("_"):
                        bound.setdefault(target.id, "value")
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            if statement.target.id == "__all__" and isinstance(statement.value, (ast.List, ast.Tuple)):
                listed = (listed or []) + [e.value for e in statement.value.elts if isinstance(e, ast.Constant)]
        elif (  # __all__.extend([...]) / __all__.append("x")
            isinstance(statement, ast.Expr)
            and isinstance(call := statement.value, ast.Call)
            and ast.unparse(call.func) in ("__all__.extend", "__all__.append")
            and call.args
        ):
            arg = call.args[0]
            items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
            listed = (listed or []) + [e.value for e in items if isinstance(e, ast.Constant)]
    module.bound = {n for n in set(bound) | set(module.imports) if not n.startswith("_")}
    if listed is not None:
        for name in listed:
            if isinstance(name, str):
                module.names[name] = bound.get(name) or ("imported" if name in module.imports else "value")
        return module
    for name, kind in bound.items():
        if not name.startswith("_") and not NOT_API.match(name) and kind != "value":
            module.names[name] = kind
    # A package re-exports what it imports; so does a shim, a module that binds nothing but its
    # imports (Ray 2.0's ray.tune.function_runner: wrap_function from its new home), whose names
    # are never a new home (kind "shim": a moved name goes where it is defined or a package has it).
    shim = not path.endswith("__init__.py") and not any(not n.startswith("_") for n in bound)
    if path.endswith("__init__.py") or shim:
        for name, source in module.imports.items():
            private = any(part.startswith("_") for part in source.split(".")[:-1])
            if not name.startswith("_") and not NOT_API.match(name) and source.startswith("ray."):
                if not shim:
                    module.names.setdefault(name, "imported")
                elif not private:
                    module.names.setdefault(name, "shim")
    return module


@dataclass
class Release:
    version: Version
    modules: dict[str, Module]
    public: set[str]  # the modules users import from

    def find_class(self, qualified: str, seen: frozenset[str] = frozenset()) -> tuple[Module, ast.ClassDef] | None:
        """The definition of the class ``qualified`` names, through re-exports."""
        if qualified in seen:
            return None
        module_path, _, name = qualified.rpartition(".")
        module = self.modules.get(module_path)
        if module is None:
            return None
        if name in module.classes:
            return module, module.classes[name]
        if name in module.imports:
            return self.find_class(module.imports[name], seen | {qualified})
        return None

    def members(self, qualified: str, seen: frozenset[str] = frozenset()) -> dict[str, str]:
        """Public members of a class: name -> "method"/"property"/"keyword" (bases' included)."""
        found = self.find_class(qualified, seen)
        if found is None:
            return {}
        module, cls = found
        out: dict[str, str] = {}
        for base in cls.bases:
            dotted = ast.unparse(base)
            head, _, rest = dotted.partition(".")
            source = module.imports.get(head) or (f"{module.path}.{head}" if head in module.classes else None)
            if source and source.startswith("ray."):
                out.update(self.members(f"{source}.{rest}" if rest else source, seen | {qualified}))
        is_dataclass = any("dataclass" in ast.unparse(d) for d in cls.decorator_list)
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = {ast.unparse(d) for d in item.decorator_list}
                if item.name == "__init__":
                    for arg in item.args.args[1:] + item.args.kwonlyargs:
                        if not arg.arg.startswith("_"):
                            out[f"({arg.arg}=)"] = "keyword"
                    for node in ast.walk(item) if not cls.name.endswith("Trainer") else ():  # self.path = ...
                        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                            if ast.unparse(node.value) == "self" and not node.attr.startswith("_"):
                                out.setdefault(node.attr, "attribute")
                elif not item.name.startswith("_"):
                    out[item.name] = "property" if "property" in decorators else "method"
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and is_dataclass:
                if not item.target.id.startswith("_") and "ClassVar" not in ast.unparse(item.annotation):
                    out[f"({item.target.id}=)"] = "keyword"
                    out.setdefault(item.target.id, "attribute")
        return out


def read_release(version: Version, v2: bool | None) -> Release:
    files = dict(sources(wheel(version)))
    modules, public = {}, set()
    for path, text in files.items():  # every module (re-exports are followed into private ones)
        modules[module_name(path)] = read_module(path, text, v2)
        if is_public_module(path):
            public.add(module_name(path))
    for module in modules.values():  # `from ray.tune.experiment.trial import *`: the names it brings
        for name, source in _starred(modules, module.path, frozenset()).items():
            module.imports.setdefault(name, source)
            module.names.setdefault(name, "imported")
            module.bound.add(name)
    return Release(version, modules, public)


def _starred(modules: dict[str, Module], path: str, seen: frozenset[str]) -> dict[str, str]:
    """The names ``from <source> import *`` brings into the module ``path`` (through the sources'
    own star imports): name -> the qualified name it comes from."""
    out: dict[str, str] = {}
    for source in modules[path].stars:
        if source in seen or source not in modules or any(part.startswith("_") for part in source.split(".")):
            continue  # a private module's names are not API (2.60's ray.air.session is V1's session, starred)
        for name in modules[source].names:
            out.setdefault(name, f"{source}.{name}")
        for name, origin in _starred(modules, source, seen | {path}).items():
            out.setdefault(name, origin)
    return out


def api(release: Release, importable: bool = False) -> dict[str, tuple[str, str]]:
    """Qualified name -> (kind, evidence file) of every public name and member of a release:
    what its modules export, or (``importable``) every public name they bind."""
    out: dict[str, tuple[str, str]] = {}
    for module in release.modules.values():
        if module.path not in release.public:
            continue
        file = module.file
        names = dict(module.names)
        if importable:
            names.update({n: "imported" for n in module.bound if n not in names})
        for name, kind in names.items():
            out[f"{module.path}.{name}"] = (kind, file)
            if name in MEMBER_CLASSES and kind != "shim":  # a shim's class: its members are its home's
                for member, member_kind in release.members(f"{module.path}.{name}").items():
                    out[f"{module.path}.{name}.{member}"] = (member_kind, file)
    return out


def classify(history: dict[str, list[tuple[Version, str, str]]], newest: dict[str, tuple[str, str]],
             exports: dict[str, tuple[str, str]], stable: set[str]) -> dict[str, tuple]:  # fmt: skip
    """Each name ever shipped -> (status, new home or "", first, last, kind, evidence).

    ``newest``: what the newest release binds under V2 (importable: ``same``); ``exports``: what
    its modules export (a moved name's candidate homes); ``stable``: what every supported
    release binds in both settings (a new home outside it is ``moved-late``: flagged, not
    rewritten). A member of a class that moved is judged against the class's new home."""
    homes: dict[str, list[str]] = {}
    for qualified, (kind, _) in exports.items():
        owner, _, name = qualified.rpartition(".")
        if kind != "shim" and "(" not in name and owner.rpartition(".")[2] not in MEMBER_CLASSES:
            homes.setdefault(name, []).append(qualified)
    out: dict[str, tuple] = {}
    for qualified, seen in sorted(history.items(), key=lambda item: item[0].count(".")):
        first, last = str(seen[0][0]), str(seen[-1][0])
        kind, evidence = seen[-1][1], seen[-1][2]
        owner, _, name = qualified.rpartition(".")
        if qualified in newest:
            status, home = "same", ""
        elif kind in ("method", "property", "keyword", "attribute"):
            moved = out.get(owner, ("", ""))[1]  # the class moved: is the member there?
            status, home = ("same", "") if moved and f"{moved}.{name}" in newest else ("removed", "")
        else:
            candidates = sorted(homes.get(name, []) if name not in GENERIC else [], key=lambda q: _nearness(owner, q))
            home = candidates[0] if candidates else ""
            status = "moved" if home else "removed"
            if home and home not in stable:
                status = "moved-late"
        out[qualified] = (status, home, first, last, kind, f"ray=={last}: {evidence}")
    return dict(sorted(out.items()))


def _nearness(owner: str, home: str) -> tuple[int, int, str]:
    """Prefer a new home in the same framework module, then ray.train itself, then shorter paths."""
    home_module = home.rpartition(".")[0]
    shared = len(os.path.commonprefix([owner.split("."), home_module.split(".")]))
    return (-shared, home_module.count("."), home)


def every_member_name(release: Release) -> set[str]:
    """The name of every method, property and attribute of every class in a release's ray.train,
    ray.air and ray.tune (private modules and V1's included): a removed member whose name is none
    of these can be recognised on any object, its class unknown."""
    names: set[str] = set()
    for module in release.modules.values():
        for cls in module.classes.values():
            for item in ast.walk(cls):
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
                elif isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store):
                    names.add(item.attr)
    return names


def distinct(entries: dict[str, tuple], member_names: set[str]) -> dict[str, str]:
    """Removed members recognisable by their name alone -> one entry that names them."""
    out: dict[str, str] = {}
    for qualified, (status, _, _, _, kind, _) in entries.items():
        name = qualified.rpartition(".")[2]
        if status == "removed" and kind in ("method", "property") and name not in member_names:
            out.setdefault(name, qualified)
    return dict(sorted(out.items()))


# Packages whose every name the newest release binds is listed (NEWEST_NAMES): a name imported
# from one of them that neither the newest release nor the catalogue knows is older than 2.0.
TOP_PACKAGES = ("ray.train", "ray.tune", "ray.air")


def newest_names(newest: dict[str, dict[str, tuple[str, str]]], modules: set[str]) -> dict[str, list[str]]:
    """Every name each of TOP_PACKAGES binds in the newest release, in either setting, and its
    submodules (``from ray.air import session`` imports one)."""
    out: dict[str, set[str]] = {package: set() for package in TOP_PACKAGES}
    for names in [*newest.values(), modules]:
        for qualified in names:
            owner, _, name = qualified.rpartition(".")
            if owner in out:
                out[owner].add(name)
    return {package: sorted(names) for package, names in out.items()}


def render(
    entries: dict[str, tuple], versions: list[Version], distinct_members: dict[str, str], names: dict[str, list[str]]
) -> str:
    counts: dict[str, int] = {}
    for status, *_ in entries.values():
        counts[status] = counts.get(status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    rows = {q: e for q, e in entries.items() if e[0] != "same"}
    return (
        '"""Generated by scripts/ray_api_catalogue.py: do not edit (run it again on a new Ray release).\n\n'
        f"Every public name of ray.train, ray.air and ray.tune's function API in Ray {versions[0]} to "
        f"{versions[-1]}\n({len(versions)} releases: the newest patch of each minor), held against "
        f"{versions[-1]}'s V2 API: {summary}.\nOnly the names that are not the same are listed: "
        "qualified name -> (status, new home, first release,\nlast release, kind, evidence). "
        'Members are ``Class.member``, keywords ``Class.(keyword=)``.\n"""\n\n'
        f"RELEASES = {tuple(str(v) for v in versions)!r}\n\n"
        "ENTRIES: dict[str, tuple[str, str, str, str, str, str]] = "
        f"{pprint.pformat(rows, width=120, sort_dicts=True)}\n\n"
        "# Removed members no class of the newest release has by that name: recognised on any object.\n"
        f"DISTINCT_MEMBERS: dict[str, str] = {pprint.pformat(distinct_members, width=120)}\n\n"
        f"# Every name {', '.join(TOP_PACKAGES)} bind in {versions[-1]} (V1 or V2): what is importable from them.\n"
        "NEWEST_NAMES: dict[str, frozenset[str]] = {\n"
        + "".join(
            f"    {package!r}: frozenset({pprint.pformat(found, width=110, compact=True)}),\n"
            for package, found in names.items()
        )
        + "}\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", nargs="*", help="only these releases (default: 2.0 to the newest supported)")
    parser.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    args = parser.parse_args()
    versions = releases(args.releases)
    history: dict[str, list[tuple[Version, str, str]]] = {}
    stable: set[str] | None = None  # what every supported release exports in both settings
    for version in versions:
        print(f"reading ray=={version}", file=sys.stderr)
        for qualified, (kind, evidence) in api(read_release(version, v2=None)).items():
            history.setdefault(qualified, []).append((version, kind, evidence))
        if version >= OLDEST_SUPPORTED:
            both = set(api(read_release(version, v2=False), True)) & set(api(read_release(version, v2=True), True))
            stable = both if stable is None else stable & both
    newest_release = read_release(versions[-1], v2=True)
    entries = classify(history, api(newest_release, True), api(newest_release), stable or set())
    names = newest_names(
        {"v2": api(newest_release, True), "v1": api(read_release(versions[-1], v2=False), True)},
        set(newest_release.modules),
    )
    member_names = every_member_name(newest_release)
    counts: dict[str, int] = {}
    for status, *_ in entries.values():
        counts[status] = counts.get(status, 0) + 1
    print(f"{len(entries)} names in {len(versions)} releases: {counts}", file=sys.stderr)
    if OUT.exists():
        old: dict[str, tuple] = {}
        exec(compile(OUT.read_text(), str(OUT), "exec"), scope := {})  # noqa: S102 - our own generated file
        old = scope.get("ENTRIES", {})
        new = {q: e for q, e in entries.items() if e[0] != "same"}
        for q in sorted(set(old) | set(new)):
            if old.get(q, ("same",))[:2] != new.get(q, ("same",))[:2]:
                print(f"changed: {q}: {old.get(q, ('same',))[:2]} -> {new.get(q, ('same',))[:2]}")
    if args.write:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(render(entries, versions, distinct(entries, member_names), names))
        subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(OUT)], check=False)  # as the tree is
        print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
