"""What a result's frames hold and who reads them: the user's code reading a V1
``metrics_dataframe`` that V2 would build otherwise is recorded as a V1-only behaviour, with
what is at stake (compat's own reads are not; on real Ray: tests/compat/test_every_report.py);
``worker_metrics_dataframe`` is exactly the frame of the rows stored with the run."""

from __future__ import annotations

import copy
import pickle

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ray.train import Checkpoint

from compat import _capture as capture
from compat_core.semantics import reads
from compat_core.semantics.result import Result

pytestmark = pytest.mark.one_pass  # plain objects: no Ray cluster, no mode


def v1_result(tmp_path, rows: int = 5, kept: int = 2, frame: pd.DataFrame | None = None) -> Result:
    frame = frame if frame is not None else pd.DataFrame({"loss": [1.0 / (i + 1) for i in range(rows)]})
    checkpoints = [(Checkpoint(str(tmp_path / f"checkpoint_{i}")), {"loss": 0.1}) for i in range(kept)]
    return Result(backend="v1", metrics={"loss": 0.2}, checkpoint=None, error=None, path=str(tmp_path),
                  metrics_dataframe=frame, best_checkpoints=checkpoints)  # fmt: skip


def test_the_users_first_read_of_a_frame_v2_would_shorten_is_recorded_once(tmp_path) -> None:
    result = v1_result(tmp_path)
    calls = []
    difference = reads.frame_difference(result.metrics_dataframe, len(result.best_checkpoints), {"loss"})
    result.watch_reads(reads.ReadWatch(difference, lambda site, detail: calls.append((site, detail))))
    report = result.migration_report()
    assert "behaves the same" not in report  # never, while the frame differs, read or not
    assert "metrics-dataframe [silent], not read yet" in report and "5 rows under V1, 2 under V2" in report

    capture.fit_record(result, 1.0, None)  # compat reads the frame for compare: not the user
    copy.copy(result)
    assert calls == []
    assert len(result.metrics_dataframe) == 5  # the user's read: V1's frame, unchanged
    ((site, detail),) = calls
    assert site.startswith(f"{__file__}:") and detail == "5 rows under V1, 2 under V2 (one per kept checkpoint)"
    result.metrics_dataframe.describe()
    assert len(calls) == 1
    assert pickle.loads(pickle.dumps(result)).metrics_dataframe.equals(result.metrics_dataframe)


def test_a_frame_v2_would_give_alike_is_no_v1_only_read(tmp_path) -> None:
    result = v1_result(tmp_path, rows=2, kept=2)  # every report had a kept checkpoint
    calls = []
    result.watch_reads(reads.ReadWatch(reads.frame_difference(result.metrics_dataframe, 2, {"loss"}), calls.append))
    assert len(result.metrics_dataframe) == 2
    assert calls == [] and result.migration_report().startswith("No V1-only behaviour used")


def test_flattened_nested_metrics_are_named() -> None:
    frame = pd.DataFrame({"eval/acc": [0.9], "eval/per_class/dog": [0.8], "lr/group": [0.1], "training_iteration": [1]})
    # "lr/group" was reported as a key with a slash: not flattened by V1.
    text = reads.frame_difference(frame, 1, {"eval", "lr/group", "training_iteration"})
    assert text == "nested metrics flattened into eval/acc, eval/per_class/dog (V2: 'eval' as dicts)"
    assert reads.frame_difference(None, 0, set()) == ""


metric_values = st.one_of(st.integers(-2, 2), st.floats(allow_nan=True), st.none(), st.text(max_size=2),
                          st.dictionaries(st.sampled_from("xy"), st.integers(0, 1), max_size=1))  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    reports=st.lists(
        st.tuples(
            st.integers(0, 2), st.integers(0, 3), st.integers(0, 1),
            st.dictionaries(st.sampled_from(["loss", "acc", "attempt", "timestamp"]), metric_values, max_size=3),
        ),
        min_size=1, max_size=8,
    )
)  # fmt: skip
def test_the_worker_frame_is_the_frame_of_its_rows(reports) -> None:
    """``worker_metrics_dataframe``, built from the records' own dicts, is exactly the frame of
    the rows of its reports: columns, order, types, holes."""
    from compat_core.semantics.records import Record
    from compat_core.semantics.result import worker_dataframe
    from compat_core.semantics.stored import worker_rows

    records = [Record(rank, index, metrics, False, False, float(n), attempt=attempt)
               for n, (rank, index, attempt, metrics) in enumerate(reports)]  # fmt: skip
    pd.testing.assert_frame_equal(worker_dataframe(records), pd.DataFrame(worker_rows(records)))


# What Arrow types as pandas does, and what it cannot (stored pickled): bools, whole numbers
# beyond int64, lists.
stored_values = st.one_of(metric_values, st.booleans(), st.just(2**70), st.lists(st.integers(0, 1), max_size=2))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    reports=st.lists(
        st.tuples(
            st.integers(0, 2), st.integers(0, 3), st.integers(0, 1),
            st.dictionaries(st.sampled_from(["loss", "acc", "attempt", "timestamp"]), stored_values, max_size=3),
        ),
        min_size=1, max_size=8, unique_by=lambda r: r[:3],
    ),
    batch=st.integers(1, 4),
)  # fmt: skip
def test_the_frame_stored_with_the_run_reads_back_as_the_frame_fit_gave(tmp_path, monkeypatch, reports, batch) -> None:
    """What ``Result.from_path`` reads back (the run's Arrow file, written in batches from
    records in any order) is the frame ``fit()`` builds from the same records: rows, columns,
    order, dtypes, holes; and a second fit's reports come after the first's."""
    import shutil

    from compat_core.files.storage import at
    from compat_core.semantics import worker_reports
    from compat_core.semantics.records import Record
    from compat_core.semantics.result import worker_dataframe

    monkeypatch.setattr(worker_reports, "BATCH", batch)
    records = [Record(rank, index, metrics, False, False, float(n), attempt=attempt)
               for n, (rank, index, attempt, metrics) in enumerate(reports)]  # fmt: skip
    directory = tmp_path / "run"
    shutil.rmtree(directory, ignore_errors=True)
    run = at(str(directory))
    assert worker_reports.write(run, lambda: iter(records)).name == "compat_worker_reports.000000.arrow"
    pd.testing.assert_frame_equal(worker_reports.read(run), worker_dataframe(records))
    worker_reports.write(run, lambda: iter(records[:1]))
    both = pd.concat([worker_dataframe(records), worker_dataframe(records[:1])], ignore_index=True)
    pd.testing.assert_frame_equal(worker_reports.read(run), both)


def test_reading_v1s_auto_filled_keys_from_result_metrics_is_recorded_once_per_key() -> None:
    import json

    calls = []
    metrics = reads.WatchedMetrics(
        {"loss": 0.5, "training_iteration": 4, "time_total_s": 1.5}, lambda *a: calls.append(a)
    )
    assert metrics["loss"] == 0.5 and metrics.get("missing") is None  # the user's own keys: V2 has them
    assert capture.user_metrics(metrics) == {"loss": 0.5}  # compat reading for compare: not the user
    assert dict(metrics) == metrics and json.loads(json.dumps(metrics))["training_iteration"] == 4
    assert calls == []
    assert metrics["training_iteration"] == 4
    assert metrics.get("training_iteration") == 4 and metrics.get("time_total_s") == 1.5
    assert [detail for _, detail in calls] == ["result.metrics['training_iteration']", "result.metrics['time_total_s']"]
    assert all(site.startswith(f"{__file__}:") for site, _ in calls)
    copied = pickle.loads(pickle.dumps(metrics))
    assert type(copied) is dict and copied == {"loss": 0.5, "training_iteration": 4, "time_total_s": 1.5}
    assert type(copy.deepcopy(metrics)) is dict


def test_a_v2_result_records_the_reads_the_flip_changed(tmp_path) -> None:
    """Under V2 (the flip) the same kinds as under V1: the first read of a frame V1 would have
    given with more rows or flattened metrics, and reads of the keys V1 adds, which V2 lacks."""
    frame = pd.DataFrame({"loss": [0.2, 0.1], "eval": [{"acc": 0.8}, {"acc": 0.9}]})
    text = reads.flip_difference(frame, 6, {"loss": 0.1, "eval": {"acc": 0.9}, "lr/group": 0.1})
    assert (
        text == "6 rows under V1, 2 under V2 (one per kept checkpoint); "
        "nested metrics flattened into eval/acc (V2: 'eval' as dicts)"
    )
    assert reads.flip_difference(None, 3, {"loss": 1.0}).startswith("3 rows under V1, 0 under V2")
    assert reads.flip_difference(frame.head(1), 1, {"loss": 1.0}) == ""  # every report had its checkpoint kept

    result = Result(backend="v2", metrics={"loss": 0.1}, checkpoint=None, error=None, path=str(tmp_path),
                    metrics_dataframe=frame)  # fmt: skip
    calls = []
    result.watch_reads(reads.ReadWatch(text, lambda site, detail: calls.append(detail)))
    report = result.migration_report()
    assert report.startswith("Changed by the flip") and "differs from V1's" in report
    assert "behaves the same" not in report and "gives what it would under V1" not in report
    assert len(result.metrics_dataframe) == 2 and calls == [text]

    keys = []
    metrics = reads.WatchedMetrics({"loss": 0.1}, lambda *a: keys.append(a[1]), flipped=True)
    assert metrics["loss"] == 0.1 and metrics.get("epoch") is None and keys == []  # the user's keys: V1 has them too
    assert metrics.get("training_iteration") is None  # V1 would have given 2 here
    with pytest.raises(KeyError):
        metrics["time_total_s"]
    assert keys == ["result.metrics['training_iteration']", "result.metrics['time_total_s']"]
    plain = Result(backend="v2", metrics={"loss": 0.1}, checkpoint=None, error=None, path=str(tmp_path))
    assert plain.migration_report() == "No V1-only behaviour used: this run gives what it would under V1."
