"""Ray's V1 engine under compat: the driver half (backend.py) and the worker half (worker.py)."""

import os

from compat_core.migration import where

where.add_library(os.path.dirname(__file__))  # its frames are not the user's line
