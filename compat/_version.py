"""The supported Ray range, checked at import."""

from __future__ import annotations

from importlib import metadata

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from compat import _messages
from compat.errors import UnsupportedRayError

SUPPORTED_RAY = SpecifierSet(">=2.60.0,<2.61")


def check(installed: str | None = None) -> str:
    version = installed if installed is not None else metadata.version("ray")
    if Version(version) not in SUPPORTED_RAY:
        raise UnsupportedRayError(_messages.unsupported_ray(version, str(SUPPORTED_RAY)))
    return version
