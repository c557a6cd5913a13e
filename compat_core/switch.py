"""The one place that makes the :class:`Mode` of a run, from ``RAY_TRAIN_V2_ENABLED`` and
``COMPAT_V1_ENGINE`` (read through :mod:`compat_core.settings`) and the installed Ray.

Ray parses the variable with ``env_bool``: ``"1"`` or ``"true"`` (any case) mean V2,
every other value means V1, and an unset variable means Ray's own default: V2 from Ray 2.51,
V1 before (:data:`compat_core.releases.facts.V2_IS_DEFAULT`).
That silently turns a typo such as ``"yes"`` or ``" 1"`` into V1, so compat accepts
exactly the values Ray gives a meaning to on purpose and rejects the rest.

A Ray without Train V1 may refuse a false value where it reads the variable (docs/compatibility.md
§34). There compat keeps the user's selection in ``COMPAT_RAY_TRAIN_V2_ENABLED`` and gives Ray
``1`` in its place (:func:`give_ray_what_it_accepts`, at ``import compat`` and at every
:func:`mode`): Ray's processes inherit both, and V1's semantics run on V2's engine.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from compat_core import settings

ENV_VAR = settings.V2_ENABLED.name
ENGINE_ENV_VAR = settings.V1_ENGINE.name
KEPT_ENV_VAR = settings.V2_ENABLED_KEPT.name
ACCEPTED = "1"  # what compat gives a Ray that refuses the user's false value
# The name users and results see for a semantics: ``compat.backend()``, ``Result.backend``.
Backend = Literal["v1", "v2"]


class Generation(Enum):
    """Ray Train's two generations: of semantics (what a run keeps and returns) and of
    engine (whose controller and workers run it)."""

    V1 = "v1"
    V2 = "v2"


V1, V2 = Generation.V1, Generation.V2


@dataclass(frozen=True)
class Mode:
    """Which semantics a run has and which Ray engine runs it. Made by :func:`mode` (the
    only place), handed down; code asks it, never compares names.

    ``Mode(V1, V1)``: V1 on Ray's V1 engine. ``Mode(V2, V2)``: V2. ``Mode(V1, V2)``: V1
    semantics on Ray's V2 engine (``COMPAT_V1_ENGINE=v2``; the default on a Ray without V1's
    engine), where compat itself does what V1's engine did (docs/compatibility.md §28).
    """

    semantics: Generation
    engine: Generation

    @property
    def backend(self) -> Backend:
        """The semantics' name: ``"v1"`` or ``"v2"``."""
        return "v1" if self.semantics is V1 else "v2"

    @property
    def keeps_every_report(self) -> bool:
        """V1's semantics: every report is kept, logged and in ``metrics_dataframe``."""
        return self.semantics is V1

    @property
    def warns_v1_only(self) -> bool:
        """V2's semantics: a V1-only behaviour is warned about (an error in strict mode)."""
        return self.semantics is V2

    @property
    def raises_ray_v1_warnings(self) -> bool:
        """V1's semantics: Ray V1's own deprecation warnings, where raw V1 raises them
        (docs/compatibility.md §32); under V2's, compat records the usage as V1-only instead."""
        return self.semantics is V1

    @property
    def emulates_v1_engine(self) -> bool:
        """V1 semantics on V2's engine: compat writes V1's trial directory, logs and
        checkpoint names, and the V1-only options V2's engine has no place for do nothing."""
        return self.semantics is V1 and self.engine is V2

    @property
    def engine_env(self) -> dict[str, str]:
        """The ``RAY_TRAIN_V2_ENABLED`` Ray's own functions must see while this mode's engine
        runs (in the driver during ``fit()`` and in every worker)."""
        return {ENV_VAR: _value(self.engine)}

    @property
    def outside_training_env(self) -> dict[str, str]:
        """The ``RAY_TRAIN_V2_ENABLED`` of a Ray task compat runs outside training (a
        checkpoint validation): Ray's functions answer there as this semantics' Ray does
        outside a training worker, V1's while Ray ships them, whichever engine runs it."""
        from compat_core.releases import adapters

        return {ENV_VAR: _value(self.semantics if adapters.has_v1_engine() else V2)}

    def export(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The variables that make :func:`mode` give this mode again (in a Tune trial's
        process), merged over ``environ``."""
        return {**(environ or {}), **selecting(self.semantics), ENGINE_ENV_VAR: self.engine.value}

    def __str__(self) -> str:
        return f"{self.backend} on Ray's {self.engine.name} engine"


def _value(generation: Generation) -> str:
    return "1" if generation is V2 else "0"


def selecting(semantics: Generation) -> dict[str, str]:
    """The variables that select ``semantics`` (in this process, or a new one): on a Ray that
    refuses V1's value, the selection in ``COMPAT_RAY_TRAIN_V2_ENABLED`` and Ray's ``1``."""
    if ray_refuses_v1_value():
        return {ENV_VAR: ACCEPTED, KEPT_ENV_VAR: _value(semantics)}
    return {ENV_VAR: _value(semantics)}


_refuses: bool | None = None  # whether the installed Ray refuses a false value: asked once


def ray_refuses_v1_value() -> bool:
    """Whether the installed Ray refuses ``RAY_TRAIN_V2_ENABLED=0`` where it reads it (a Ray
    without Train V1 may, docs/compatibility.md §34), asked of Ray's own switch once per process
    (Ray's train package is imported with a value it takes, if it is not yet)."""
    global _refuses
    if _refuses is None:
        _refuses = _refused("0")
    return _refuses


def _refused(false_value: str) -> bool:
    switch = settings.V2_ENABLED
    before = switch.raw()
    if "ray.train" not in sys.modules:
        try:
            importlib.import_module("ray.train")  # with the user's value, as raw Ray imports it
        except Exception:
            if before is None or _names_v2(before):
                raise  # not the value: Ray's own error, as raw Ray raises it
            _forget_orphans()
            switch.set_raw(ACCEPTED)  # the same import with the value every Ray takes
            try:
                importlib.import_module("ray.train")
            finally:
                switch.set_raw(before)
            return True
    from compat_core.releases import adapters

    switch.set_raw(false_value)
    try:
        adapters.rays_switch_answer()
    except ImportError:  # no V2 switch: a Ray older than compat supports (the version check says so)
        return False
    except Exception:  # where Ray reads it: Ray refuses the value
        return True
    finally:
        switch.set_raw(before)
    return False


def _forget_orphans() -> None:
    """Ray's modules a refused import of its train package loaded, whose package Python
    discarded (this one's, or an earlier import's): made again with the package (else ``import
    ray.train.constants`` finds a module no ``ray.train`` has as its attribute)."""
    for name in [n for n in sys.modules if n.startswith("ray.")]:
        parts = name.split(".")
        if any(".".join(parts[:i]) not in sys.modules for i in range(2, len(parts))):
            del sys.modules[name]


def _names_v2(value: str) -> bool:
    """Whether ``value`` selects V2 as Ray reads it (a value compat refuses is none Ray reads so)."""
    try:
        return parse(value) is V2
    except ValueError:
        return False


def give_ray_what_it_accepts() -> None:
    """Where the user selected V1 (``RAY_TRAIN_V2_ENABLED`` false) and the installed Ray refuses
    the value, keep the selection in ``COMPAT_RAY_TRAIN_V2_ENABLED`` and give Ray ``1``, in this
    process and every process Ray starts from it. Nothing changes on a Ray that takes the value.
    ``import compat`` calls it before any module of compat imports Ray's train package (compat's
    errors subclass Ray's classes: imported under a refused value, they would lose them)."""
    value = settings.V2_ENABLED.raw()
    try:
        if value is None or settings.V2_ENABLED.parse(value) or not ray_refuses_v1_value():
            return
    except ValueError:  # InvalidSwitchValueError: not a value Ray gives a meaning to; fit() says so
        return
    settings.V2_ENABLED_KEPT.set_raw(value)
    settings.V2_ENABLED.set_raw(ACCEPTED)


def selected() -> str | None:
    """``RAY_TRAIN_V2_ENABLED`` as the user set it: the value compat kept where Ray refuses it
    (:func:`give_ray_what_it_accepts`) while Ray still has compat's ``1`` in its place."""
    give_ray_what_it_accepts()
    value = settings.V2_ENABLED.raw()
    kept = settings.V2_ENABLED_KEPT.raw()
    if kept is not None and value == ACCEPTED:
        return kept
    return value


def parse(value: str | None) -> Generation:
    """The semantics a raw ``RAY_TRAIN_V2_ENABLED`` value selects (``None``: unset)."""
    if value is None:
        from compat_core.releases.facts import V2_IS_DEFAULT

        return V2 if V2_IS_DEFAULT else V1
    return V2 if settings.V2_ENABLED.parse(value) else V1


def v1_engine() -> Generation:
    """The Ray engine V1 semantics run on: ``COMPAT_V1_ENGINE`` (``v1``: Ray's V1 engine;
    ``v2``: V1 semantics on Ray's V2 engine). Unset, or set but empty (``export
    COMPAT_V1_ENGINE=``): Ray's V1 engine while the installed Ray can run one
    (:func:`compat_core.releases.adapters.has_v1_engine`), else V1 semantics on V2's."""
    value = settings.V1_ENGINE.get()
    if value is None:
        from compat_core.releases import adapters

        return V1 if adapters.has_v1_engine() else V2
    return Generation(value)


def mode_of(semantics: Generation) -> Mode:
    """The mode that runs ``semantics`` now: V2 on V2's engine, V1 on :func:`v1_engine`."""
    return Mode(semantics, v1_engine() if semantics is V1 else V2)


def mode() -> Mode:
    """The mode selected now. Read at every call, so flips between runs work."""
    return mode_of(parse(selected()))


def backend() -> Backend:
    """The semantics selected now: ``"v1"`` or ``"v2"``."""
    return "v1" if parse(selected()) is V1 else "v2"
