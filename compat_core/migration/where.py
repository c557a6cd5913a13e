"""Where the user's code is: the first stack frame outside compat, Ray and Python's own
machinery, for call sites in messages and for the location of every warning compat emits.

A warning is attributed to the user's line, not to compat's (as Django does with
``skip_file_prefixes`` on Python 3.12+): what IDEs, pytest's warning summary, ``-W error``
tracebacks and ``warnings.filterwarnings(module=...)`` use is the user's file and module.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

_T = TypeVar("_T")

_library_dirs: tuple[str, ...] = (str(Path(__file__).resolve().parents[1]) + os.sep,)  # the core's; packages add theirs
_user_dirs: tuple[str, ...] = ()  # inside a library directory, yet the user's code
_RAY_DIR = f"{os.sep}ray{os.sep}"


def add_library(directory: str, *, user_code: str | None = None) -> None:
    """Count the frames of the package at ``directory`` as library code, not the user's line
    (each of compat's packages registers itself when imported: the public layer, each engine);
    ``user_code``, a directory inside it, stays the user's (``compat.testing`` replays user
    schedules)."""
    global _library_dirs, _user_dirs
    _library_dirs = _with(_library_dirs, directory)
    if user_code is not None:
        _user_dirs = _with(_user_dirs, user_code)


def _with(directories: tuple[str, ...], directory: str) -> tuple[str, ...]:
    path = str(Path(directory).resolve()) + os.sep
    return directories if path in directories else (*directories, path)


def is_library(filename: str) -> bool:
    """compat's packages, Ray, threading and the import machinery (``<frozen importlib...>``)."""
    if filename.startswith(_user_dirs):  # kept as tuples: str.startswith takes one as it is
        return False
    return (
        filename.startswith(_library_dirs)
        or _RAY_DIR in filename
        or filename == threading.__file__
        or filename.startswith("<frozen ")
    )


def user_frame() -> FrameType | None:
    """The innermost frame of the caller's stack that is not library code."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and is_library(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def user_call_site() -> str:
    """``file:line`` of the first frame outside compat, v1, v2, ray and threading."""
    frame = user_frame()
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "<unknown>"


def warn(message: str, category: type[Warning], *, site: str | None = None) -> None:
    """Warn at the user's line: ``site`` (``"file:line"``, a place recorded elsewhere, such as
    a worker's report) when given, else the first frame outside compat and Ray. Filters,
    ``-W error`` and the once-per-location registry work as for ``warnings.warn`` there."""
    if site is not None and site.rpartition(":")[2].isdigit():
        filename, _, line = site.rpartition(":")
        module = _module_of(filename)
        registry = vars(sys.modules[module]).setdefault("__warningregistry__", {}) if module in sys.modules else None
        warnings.warn_explicit(message, category, filename, int(line), module=module, registry=registry)
        return
    frame = user_frame()
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    globals_ = frame.f_globals
    # No ``module_globals``, as ``warnings.warn`` passes none: with it, Python asks the frame's
    # loader for the source, and the ``__main__`` of ``python -c``, of stdin and of ``python -i``
    # has a loader that raises ImportError instead of warning. The line's source comes from
    # linecache, as for ``warnings.warn`` (files, and Jupyter's cells, which IPython registers).
    warnings.warn_explicit(
        message,
        category,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=globals_.get("__name__", "<unknown>"),
        registry=globals_.setdefault("__warningregistry__", {}),
    )


def call_for_user(function: Callable[..., _T], *args: Any) -> _T:
    """``function(*args)`` called for the user (a Ray method compat's own stands in for): each
    warning it raises is raised again at the user's line, where Ray's would be had the user
    called it directly (Ray's deprecation warnings use ``stacklevel=2``: compat's line)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = function(*args)
    for w in caught:
        warn(str(w.message), w.category)
    return value


def _module_of(filename: str) -> str:
    """The name of the loaded module whose file is ``filename`` (else the file's stem, as
    ``warnings`` names a module it cannot find)."""
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) == filename:
            return name
    return Path(filename).stem
