"""report()'s input checks: each bad input gets an error that names the fix."""

import math

import numpy as np
import pytest
import torch

from compat._checks import ReportError, check_metrics, non_finite_keys

pytestmark = pytest.mark.one_pass  # plain code, no Ray: the same in either setting (CI's first pass)


def check(metrics):
    return check_metrics(metrics)


def test_plain_metrics_pass_and_are_copied() -> None:
    metrics = {
        "loss": 0.5,
        "epoch": 3,
        "name": "a",
        "flag": True,
        "nested": {"a": [1, 2.0]},
        "np": np.float32(1),
    }
    copy = check(metrics)
    assert copy == metrics and copy is not metrics


@pytest.mark.parametrize("bad", [[("loss", 1.0)], 0.5, "loss", None])
def test_non_dict_metrics(bad) -> None:
    with pytest.raises(ReportError, match="needs a dict of metrics"):
        check(bad)


def test_a_checkpoint_in_the_metrics_position_is_named() -> None:
    from ray.train import Checkpoint

    with pytest.raises(ReportError, match=r"looks like a Checkpoint: call report\(metrics, checkpoint=ckpt\)"):
        check(Checkpoint("/tmp"))


@pytest.mark.parametrize("bad", [{1: 0.5}, {("a", "b"): 1}, {"ok": {2: 1}}])
def test_non_string_keys(bad) -> None:
    with pytest.raises(ReportError, match="keys must be str"):
        check(bad)


def test_tensors_ask_for_item() -> None:
    with pytest.raises(ReportError, match=r"call\s+\.item\(\)"):
        check({"loss": torch.tensor(0.5)})


@pytest.mark.parametrize("bad", [object(), {1, 2}, lambda: 1, b"raw"])
def test_values_that_cannot_be_stored(bad) -> None:
    with pytest.raises(ReportError, match="cannot\\s+be stored"):
        check({"x": bad})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float64("nan"), np.array([1.0, np.nan])])
def test_non_finite_values_are_accepted_as_ray_accepts_them(value) -> None:
    assert check({"loss": value, "nested": {"loss": value}})["loss"] is value


def test_non_finite_keys_names_the_diverged_metrics_only() -> None:
    metrics = {"loss": math.nan, "lr": math.inf, "ok": 1.0, "flag": True, "name": "nan", "n": np.float32("nan")}
    assert non_finite_keys(metrics) == ["loss", "lr", "n"]


def test_a_nested_non_finite_value_is_named_as_v1_flattens_it() -> None:
    metrics = {"eval": {"acc": 0.5, "per_class": {"dog": -math.inf, "cat": 0.1}}, "loss": 1.0}
    assert non_finite_keys(metrics) == ["eval/per_class/dog"]
