"""A module of the user's named ``compat`` that Ray's processes would import instead of this
package: a ``compat.py`` or ``compat/`` of py2/py3 helpers or vendored shims at a repository's
root is common. Ray puts the driver's script directory and working directory first on its
workers' import path (``ray.init``'s ``py_driver_sys_path``), so such a module shadows this
package in every worker and in the run ledger's process, whose imports then fail far from the
cause. :func:`check` runs when ``fit()`` starts, before anything is started, and names the file.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder
from pathlib import Path

from compat_core import messages
from compat_core.errors import CompatShadowedError

_PACKAGE = Path(__file__).resolve().parent


def _module_in(directory: str) -> str | None:
    """What ``import compat`` finds with ``directory`` first on the path, when that is not this
    package: a ``compat.py``, a ``compat/`` package, or (where this package is installed in
    editable mode, which Python's path search does not see) a bare ``compat/`` directory, which
    Python then imports as a namespace package."""
    spec = PathFinder.find_spec("compat", [directory, *sys.path])
    if spec is None:
        return None
    if spec.origin and Path(spec.origin).resolve() == _PACKAGE / "__init__.py":
        return None
    locations = [Path(location).resolve() for location in spec.submodule_search_locations or []]
    if spec.origin is None and not any(location.parent == Path(directory).resolve() for location in locations):
        return None  # a namespace package from elsewhere on the path: not this directory's doing
    return (
        str(Path(spec.origin).resolve()) if spec.origin else f"{locations[0]}{os.sep} (a directory without __init__.py)"
    )


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
    """Raise :class:`compat.errors.CompatShadowedError` when a module of the user's would be
    imported as ``compat`` by Ray's processes."""
    for why, directory in ray_code_paths():
        found = _module_in(directory)
        if found is not None:
            raise CompatShadowedError(messages.compat_shadowed(found, str(_PACKAGE), directory, why))
