"""The one place an engine is chosen: the mode's engine generation picks ``v1/`` or ``v2/``.

The public layer imports the engines; the engines import only the core and Ray."""

from __future__ import annotations

from compat_core.engine import Engine
from compat_core.switch import V1, Mode


def engine_for(mode: Mode) -> Engine:
    """The driver half of the Ray engine that runs ``mode``, for one ``fit()``."""
    if mode.engine is V1:
        from v1.backend import V1Engine

        return V1Engine(mode)
    from v2.backend import V2Engine

    return V2Engine(mode)
