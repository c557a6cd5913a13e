"""The one place an engine is chosen: the mode's engine generation picks ``v1/`` or ``v2/``, and
on V2's engine its semantics pick V2's engine class or V1's semantics on it.

The public layer imports the engines; the engines import only the core and Ray."""

from __future__ import annotations

from compat_core.run.engine import Engine
from compat_core.switch import V1, Mode


def engine_for(mode: Mode) -> Engine:
    """The driver half of the Ray engine that runs ``mode``, for one ``fit()``."""
    if mode.engine is V1:
        from v1.backend import V1Engine

        return V1Engine(mode)
    if mode.emulates_v1_engine:
        from v2.v1_on_v2 import V1OnV2Engine

        return V1OnV2Engine(mode)
    from v2.backend import V2Engine

    return V2Engine(mode)
