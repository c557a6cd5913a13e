"""compat.testing in a user's own pytest run, exactly as docs/testing.md shows it."""

from __future__ import annotations

import pytest

from compat import ScalingConfig
from compat.testing import assert_equivalent
from examples.torchmetrics_aggregation import train_func

pytestmark = [pytest.mark.ray, pytest.mark.one_pass]  # run_both sets each backend itself


def test_torchmetrics_example_is_equivalent_under_v1_and_v2(compat_run_both):
    comparison = compat_run_both(
        train_func, train_loop_config={"num_epochs": 2}, scaling_config=ScalingConfig(num_workers=2)
    )
    expected = assert_equivalent(comparison)  # raises if checkpoints or their metrics differ
    # Every report here has a checkpoint, so only V1's extra logs differ.
    assert {d.aspect for d in expected} == {"progress.csv/result.json"}
    assert len(comparison.v1.checkpoints) == len(comparison.v2.checkpoints) == 2
