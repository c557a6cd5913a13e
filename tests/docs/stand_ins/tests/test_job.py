"""The project's own test of the docs' `src/job.py` (what `pytest` runs in the docs' steps)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import job  # noqa: E402


def test_the_training_function_is_importable():
    assert callable(job.train_func)
