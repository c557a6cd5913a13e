"""A module of the user's with the name of one of this distribution's packages, found first on an
import path: a ``compat.py`` of py2/py3 helpers, an API's ``v2/`` package, a ``compat_core/``
beside the script. Python puts the script's directory first on the driver's path, and Ray puts the
driver's script directory and working directory first on its workers' (``ray.init``'s
``py_driver_sys_path``), so such a module replaces this distribution's package there and its
imports fail far from the cause (``No module named 'v2.backend'``), or, in an editable install,
compat runs with its warnings pointing at its own lines.

:func:`check_this_process` runs first thing in ``import compat`` (and ``python -m compat
readiness``, which also reads the codemod) and :func:`check` when ``fit()`` starts, before anything
is started, for what Ray's processes will find; both name the file. The runtime imports nothing of
the codemod, so a project's own ``migrate`` package (database migrations) is no concern of a run's.

This module imports only the standard library at import time: it must work when ``compat_core``
itself is the user's.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType

HOME = Path(__file__).resolve().parent.parent  # where this distribution's packages are installed
RUNTIME = ("compat", "compat_core", "v1", "v2")  # the top-level packages a run imports
COMMANDS = ("migrate",)  # imported only by the commands that read the codemod (readiness)


def _foreign(name: str, spec: ModuleSpec | None, directory: str | None = None) -> str | None:
    """Where ``spec``'s module lives when it is not this distribution's ``name`` (a file, a
    package's ``__init__.py``, or a directory without one, which Python imports as a namespace
    package where its path search does not see this distribution: an editable install); with
    ``directory``, only a module found in it."""
    if spec is None:
        return None
    ours = HOME / name
    within = Path(directory).resolve() if directory is not None else None
    if spec.origin is not None:  # a module's file or a package's __init__.py
        found = Path(spec.origin).resolve()
        home = found.parent if found.name != "__init__.py" else found.parent.parent
        return None if found == ours / "__init__.py" or within not in (None, home) else str(found)
    locations = [Path(location).resolve() for location in spec.submodule_search_locations or []]
    if ours in locations:
        return None
    locations = [location for location in locations if within in (None, location.parent)]
    return f"{locations[0]}{os.sep} (a directory without __init__.py)" if locations else None


def _spec_here(name: str) -> ModuleSpec | None:
    """What ``import name`` gives in this process (the module already imported, or the one the
    import system would find)."""
    module = sys.modules.get(name)
    if module is not None:
        return module.__spec__
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _core(module: str) -> ModuleType:
    """This distribution's ``compat_core.<module>`` (errors, messages: they import no other part of
    it at import time), read from its file where ``import compat_core`` finds the user's."""
    if _foreign("compat_core", _spec_here("compat_core")) is None:
        return importlib.import_module(f"compat_core.{module}")
    spec = importlib.util.spec_from_file_location(f"compat_core.{module}", HOME / "compat_core" / f"{module}.py")
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def _raise(name: str, found: str, where: str) -> None:
    messages, errors = _core("messages"), _core("errors")
    raise errors.CompatShadowedError(messages.package_shadowed(name, found, str(HOME / name), where))


def check_this_process(names: tuple[str, ...] = RUNTIME[1:]) -> None:
    """Raise :class:`compat.errors.CompatShadowedError` when ``import`` of one of ``names`` in this
    process would give a module of the user's instead of this distribution's."""
    for name in names:
        found = _foreign(name, _spec_here(name))
        if found is not None:
            _raise(name, found, "this process's import path (Python puts the script's directory and PYTHONPATH first)")


def ray_code_paths() -> list[tuple[str, str]]:
    """The directories Ray adds to its workers' import path, as ``ray.init`` chooses them
    (without a ``runtime_env`` working directory): the script's directory when the driver's
    path has it, and the working directory."""
    paths: list[tuple[str, str]] = []
    if sys.argv and sys.argv[0] not in ("", "-c", "-"):
        script_directory = os.path.dirname(os.path.realpath(sys.argv[0]))
        if script_directory in sys.path:
            paths.append(("script directory", script_directory))
    paths.append(("working directory", os.path.abspath(os.curdir)))
    return paths


def check() -> None:
    """Raise :class:`compat.errors.CompatShadowedError` when Ray's processes would import a module
    of the user's as one of the packages a run imports."""
    check_this_process()
    for why, directory in ray_code_paths():
        for name in RUNTIME:
            found = _foreign(name, PathFinder.find_spec(name, [directory, *sys.path]), directory)
            if found is not None:
                where = f"the import path of Ray's workers (Ray puts the driver's {why}, {directory}, first)"
                _raise(name, found, where)
