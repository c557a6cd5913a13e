"""Ray's V2 engine under compat: the driver half (backend.py), the worker half (worker.py), V1
semantics on V2's engine (v1_on_v2.py), Tune callbacks and placement-group watching."""

import os

from compat_core.migration import where

where.add_library(os.path.dirname(__file__))  # its frames are not the user's line
