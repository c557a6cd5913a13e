"""Temporary changes, each with an exact undo: module attributes inside a worker,
environment variables for the duration of a run."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any

_MISSING = object()


def rebind(module: ModuleType, values: Mapping[str, Any]) -> Callable[[], None]:
    """Set ``module.<name> = value`` for each item; the returned function restores them."""
    old = {name: getattr(module, name, _MISSING) for name in values}
    for name, value in values.items():
        setattr(module, name, value)

    def undo() -> None:
        for name, value in old.items():
            if value is _MISSING:
                delattr(module, name)
            else:
                setattr(module, name, value)

    return undo


def override_method(obj: Any, name: str, replacement: Callable[..., Any]) -> Callable[[], None]:
    """Shadow ``obj.<name>`` with ``replacement`` on this instance only; the returned function
    removes it again (if nothing replaced it since), so the class's method shows through."""
    setattr(obj, name, replacement)

    def undo() -> None:
        if obj.__dict__.get(name) is replacement:
            delattr(obj, name)

    return undo


def undo_all(undos: list[Callable[[], None]]) -> Callable[[], None]:
    def undo() -> None:
        for step in reversed(undos):
            step()

    return undo


@contextmanager
def scoped_env(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables inside the ``with`` block only, then restore them."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
