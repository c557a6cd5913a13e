"""The one place that reads ``RAY_TRAIN_V2_ENABLED``.

Ray parses the variable with ``env_bool``: ``"1"`` or ``"true"`` (any case) mean V2,
every other value means V1, and an unset variable means Ray's own default: V2 from Ray 2.51,
V1 before (:data:`compat_core.releases.V2_IS_DEFAULT`).
That silently turns a typo such as ``"yes"`` or ``" 1"`` into V1, so compat accepts
exactly the values Ray gives a meaning to on purpose and rejects the rest.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from compat_core import messages
from compat_core.errors import InvalidSwitchValueError

if TYPE_CHECKING:
    from compat_core.engine import Backend as DriverBackend
    from compat_core.engine import WorkerSide

ENV_VAR = "RAY_TRAIN_V2_ENABLED"
ENGINE_ENV_VAR = "COMPAT_V1_ENGINE"
Backend = Literal["v1", "v2"]
Engine = Literal["v1", "v2"]

_V2_VALUES = frozenset({"1", "true"})
_V1_VALUES = frozenset({"0", "false"})


def parse(value: str | None) -> Backend:
    """Return the backend a raw ``RAY_TRAIN_V2_ENABLED`` value selects (``None``: unset)."""
    if value is None:
        from compat_core.releases import V2_IS_DEFAULT

        return "v2" if V2_IS_DEFAULT else "v1"
    if value.lower() in _V2_VALUES:
        return "v2"
    if value.lower() in _V1_VALUES:
        return "v1"
    raise InvalidSwitchValueError(messages.invalid_switch_value(ENV_VAR, value))


def backend() -> Backend:
    """The backend selected now: ``"v1"`` or ``"v2"``. Read at every call, so flips work."""
    return parse(os.environ.get(ENV_VAR))


def v1_engine() -> Engine:
    """The Ray engine the v1 backend runs on: ``COMPAT_V1_ENGINE`` (``v1``: Ray's V1 engine;
    ``v2``: V1 semantics on Ray's V2 engine). Unset: Ray's V1 engine while Ray has one."""
    value = os.environ.get(ENGINE_ENV_VAR)
    if value is None:
        from compat_core.releases import HAS_V1_ENGINE

        return "v1" if HAS_V1_ENGINE else "v2"
    if value.lower() in ("v1", "v2"):
        return "v2" if value.lower() == "v2" else "v1"
    raise InvalidSwitchValueError(messages.invalid_engine_value(ENGINE_ENV_VAR, value))


def engine(selected: Backend) -> Engine:
    """The Ray engine that runs the ``selected`` backend now."""
    return v1_engine() if selected == "v1" else "v2"


def env_value(selected: Backend) -> str:
    """The ``RAY_TRAIN_V2_ENABLED`` value that makes Ray agree with ``selected``."""
    return "1" if selected == "v2" else "0"


def outside_training_value(selected: Backend) -> str:
    """The ``RAY_TRAIN_V2_ENABLED`` value of a Ray task compat runs for the ``selected``
    backend outside training (a checkpoint validation): Ray's functions answer there as that
    backend's Ray does outside a training worker, V1's while Ray ships them, whichever engine
    runs the training."""
    from compat_core.releases import HAS_V1_ENGINE

    return env_value(selected if HAS_V1_ENGINE else "v2")


def worker_side(selected: Backend, on: Engine) -> WorkerSide:
    """The worker half of the ``selected`` backend running ``on`` a Ray engine (imported
    only inside workers)."""
    if on == "v1":
        from v1.worker import V1WorkerSide

        return V1WorkerSide()
    from v2.worker import V2WorkerSide

    return V2WorkerSide(v1_semantics=selected == "v1")


def driver_backend(selected: Backend) -> DriverBackend:
    """The driver half of the ``selected`` backend."""
    if selected == "v1" and v1_engine() == "v2":
        from v2.backend import V1OnV2Backend

        return V1OnV2Backend()
    if selected == "v1":
        from v1.backend import V1Backend

        return V1Backend()
    from v2.backend import V2Backend

    return V2Backend()
