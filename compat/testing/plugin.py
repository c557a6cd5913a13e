"""The pytest plugin lives in the top-level module :mod:`compat_pytest_plugin`, which
imports no Ray; this name is kept for ``-p compat.testing.plugin``."""

from compat_pytest_plugin import compat_ray_cluster, compat_run_both

__all__ = ["compat_ray_cluster", "compat_run_both"]
