"""The installed Ray, checked at ``import compat``: the releases compat runs on.

Below :data:`OLDEST` is an error that says what to install. Above :data:`NEWEST_TESTED`,
compat warns once and does its best: a Ray upgrade must never break ``import compat``.
"""

from __future__ import annotations

from importlib import metadata

from packaging.version import Version

from compat_core import messages
from compat_core.errors import MissingRayError, UnsupportedRayError
from compat_core.migration import where

OLDEST = Version("2.44.0")
NEWEST_TESTED = Version("2.60.0")  # the newest release the test suite ran on


class UntestedRayWarning(UserWarning):
    """The installed Ray is newer than any release compat was tested on."""


def check(installed: str | None = None) -> str:
    """The installed Ray version, after refusing one that is too old and warning (once)
    about one newer than :data:`NEWEST_TESTED`."""
    if installed is None:
        try:
            installed = metadata.version("ray")
        except metadata.PackageNotFoundError:
            raise MissingRayError(messages.missing_ray(f">={OLDEST}"), name="ray") from None
    version = installed
    parsed = Version(version)
    if parsed < OLDEST:
        raise UnsupportedRayError(messages.unsupported_ray(version, f">={OLDEST}"))
    if parsed.release[:2] > NEWEST_TESTED.release[:2]:
        where.warn(messages.untested_ray(version, str(NEWEST_TESTED)), UntestedRayWarning)  # at `import compat`
    return version
