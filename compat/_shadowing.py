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
from pathlib import Path

from compat_core import messages
from compat_core.errors import CompatShadowedError

_PACKAGE = Path(__file__).resolve().parent


def _module_in(directory: str) -> Path | None:
    """The module ``import compat`` finds in ``directory``, if any (a namespace directory,
    with no ``__init__.py``, never wins over an installed package)."""
    for candidate in (Path(directory, "compat.py"), Path(directory, "compat", "__init__.py")):
        if candidate.is_file():
            return candidate.resolve()
    return None


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
        if found is not None and found.parent != _PACKAGE and found != _PACKAGE / "__init__.py":
            raise CompatShadowedError(messages.compat_shadowed(str(found), str(_PACKAGE), directory, why))
