"""The day Ray deletes Train V1, rehearsed on the installed Ray (docs/compatibility.md §34).

Python imports this module at start-up when its directory is on ``PYTHONPATH`` (``site`` imports
``sitecustomize``), in the driver and, as Ray's processes inherit the driver's environment, in
every Ray worker, the controller and compat's run ledger. With ``COMPAT_REHEARSE_NO_V1`` set it
makes the installed Ray one without Train V1:

- ``answers-v2``: Ray answers V2 whatever ``RAY_TRAIN_V2_ENABLED`` says (``is_v2_enabled()`` is
  true, as when the option is dropped); ``refuses``: Ray raises where it reads the variable set to
  a false value (as a removed option often does), and answers V2 otherwise;
- V1's engine entry points raise when called: ``BackendExecutor.start``, ``BaseTrainer.fit``,
  ``BaseTrainer.as_trainable``, ``TrainingIterator``;
- ``ray.air.session`` (V1's session API) is gone: importing it raises ``ModuleNotFoundError``.

Nothing else of Ray changes. Unset, the module does nothing. Used by tests/compat/test_deletion_day.py
and the CI step of scripts/test.sh; a user can rehearse a job the same way (``PYTHONPATH=tests/deletion
COMPAT_REHEARSE_NO_V1=answers-v2 python job.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

VARIANT_VAR = "COMPAT_REHEARSE_NO_V1"
VARIANTS = ("answers-v2", "refuses")
GONE = ("ray.air.session",)
REMOVED = "Ray Train V1 was removed (the deletion rehearsal, tests/deletion/sitecustomize.py): {what} is V1's engine."


def _removed(what: str) -> Callable[..., Any]:
    def entry_point(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(REMOVED.format(what=what))

    return entry_point


def _answers_v2() -> bool:
    return True


def _refuses() -> bool:
    value = os.environ.get("RAY_TRAIN_V2_ENABLED")
    if value is not None and value.strip().lower() in ("0", "false", "no", "off", "n", "f"):
        raise ValueError(
            f"RAY_TRAIN_V2_ENABLED={value!r} is no longer supported: Ray Train V1 was removed "
            "(the deletion rehearsal). Unset it."
        )
    return True


def _patch_constants(module: ModuleType) -> None:
    module.is_v2_enabled = _answers_v2 if os.environ.get(VARIANT_VAR) == "answers-v2" else _refuses  # type: ignore[attr-defined]


def _patch_backend_executor(module: ModuleType) -> None:
    module.BackendExecutor.start = _removed("BackendExecutor.start")  # type: ignore[attr-defined]


def _patch_base_trainer(module: ModuleType) -> None:
    module.BaseTrainer.fit = _removed("BaseTrainer.fit")  # type: ignore[attr-defined]
    module.BaseTrainer.as_trainable = _removed("BaseTrainer.as_trainable")  # type: ignore[attr-defined]


def _patch_trainer(module: ModuleType) -> None:
    module.TrainingIterator.__init__ = _removed("TrainingIterator")  # type: ignore[attr-defined]


PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "ray.train.v2._internal.constants": _patch_constants,
    "ray.train._internal.backend_executor": _patch_backend_executor,
    "ray.train.base_trainer": _patch_base_trainer,
    "ray.train.trainer": _patch_trainer,
}


class _Patched(Loader):
    def __init__(self, loader: Loader, patch: Callable[[ModuleType], None]) -> None:
        self._loader, self._patch = loader, patch

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._patch(module)


class WithoutTrainV1(MetaPathFinder):
    """Finds Ray's modules as the other finders do, and patches the ones named above as they load."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name in GONE:
            gone = f"No module named {name!r} (Ray Train V1 was removed: the deletion rehearsal)"
            raise ModuleNotFoundError(gone, name=name)
        patch = PATCHES.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Patched(spec.loader, patch)
                return spec
        return None


if os.environ.get(VARIANT_VAR):
    if os.environ[VARIANT_VAR] not in VARIANTS:
        choices = ", ".join(VARIANTS)
        raise SystemExit(f"{VARIANT_VAR}={os.environ[VARIANT_VAR]!r}: set it to one of {choices}, or unset it")
    sys.meta_path.insert(0, WithoutTrainV1())
