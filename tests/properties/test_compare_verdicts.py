"""``compare``'s verdict on a ``metrics_dataframe`` tells the truth: for any two frames of
generated metrics (nested, non-finite, None, ints beside floats), "identical" on every frame
aspect implies ``pandas.testing.assert_frame_equal`` passes on them (their user columns, in any
order), the standard a careful reviewer holds "identical" to."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compat import _capture as capture
from compat.compare._diff import compare_fit
from compat_core.semantics.result import Result

pytestmark = pytest.mark.one_pass  # plain code: no Ray cluster, no mode

KEYS = ["loss", "acc", "eval", "step"]
leaf = st.one_of(
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.none(),
    st.sampled_from([0.5, 1.0, 2.0]),
)
value = st.one_of(leaf, st.dictionaries(st.sampled_from(["a", "b"]), leaf, min_size=1, max_size=2))
rows = st.lists(st.dictionaries(st.sampled_from(KEYS), value, min_size=1, max_size=3), min_size=1, max_size=4)


def mutate(draw, original: list[dict]) -> list[dict]:
    """The same rows, or rows changed in one way a V2 frame can differ from V1's."""
    rows_ = [dict(r) for r in original]
    how = draw(st.sampled_from(["same", "value", "int-as-float", "drop-row", "drop-key", "reorder-keys"]))
    row = draw(st.integers(0, len(rows_) - 1))
    key = draw(st.sampled_from(sorted(rows_[row])))
    if how == "value":
        rows_[row][key] = draw(value)
    elif how == "int-as-float" and isinstance(rows_[row][key], int):
        rows_[row][key] = float(rows_[row][key])
    elif how == "drop-row" and len(rows_) > 1:
        del rows_[row]
    elif how == "drop-key":
        del rows_[row][key]
    elif how == "reorder-keys":
        rows_ = [dict(reversed(list(r.items()))) for r in rows_]
    return rows_


def fit_record(frame: pd.DataFrame, backend: str) -> dict:
    """The record compare reads, made by compat's own capture from a result with this frame."""
    result = Result(backend=backend, metrics=None, checkpoint=None, error=None, path="", metrics_dataframe=frame)
    record = capture.fit_record(result, 1.0, None)
    record["run_files"] = []
    return record


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), first=rows)
def test_identical_frames_by_compare_are_equal_by_pandas(data, first) -> None:
    second = mutate(data.draw, first)
    frames = pd.DataFrame(first), pd.DataFrame(second)
    fit = compare_fit(0, fit_record(frames[0], "v1"), fit_record(frames[1], "v2"), rtol=1e-9)
    frame_aspects = [d for d in fit.differences if d.aspect.startswith("metrics_dataframe")]
    if frame_aspects:
        return  # a difference is reported: nothing claims "identical"
    columns = sorted(set(frames[0].columns) | set(frames[1].columns))
    pd.testing.assert_frame_equal(
        frames[0].reindex(columns=columns), frames[1].reindex(columns=columns), check_like=True
    )


def test_the_property_sees_a_changed_value() -> None:
    """The check above is not vacuous: a changed value is a reported difference."""
    a, b = pd.DataFrame([{"loss": 1.0}, {"loss": 0.5}]), pd.DataFrame([{"loss": 1.0}, {"loss": 0.25}])
    fit = compare_fit(0, fit_record(a, "v1"), fit_record(b, "v2"), rtol=1e-9)
    assert [d.aspect for d in fit.differences if d.aspect.startswith("metrics_dataframe")]
    assert not math.isclose(0.5, 0.25)
