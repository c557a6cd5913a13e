"""V1 log files as plain file operations."""

import csv
import io
import json

import pytest

from compat_core.run.ledger import Record
from compat_core.semantics import v1_logs


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_repair_adds_keys_that_appear_after_the_first_report(tmp_path) -> None:
    rows = [{"loss": 1, "config": {"lr": 0.1}}, {"loss": 0.5, "late": 7, "config": {"lr": 0.1}}]
    (tmp_path / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "progress.csv").write_text("loss,config/lr\n1,0.1\n0.5,0.1\n")  # as Ray V1 writes it
    assert v1_logs.repair_progress_csv(tmp_path)
    table = read_csv(tmp_path / "progress.csv")
    assert list(table[0]) == ["loss", "config/lr", "late"]
    assert [r["late"] for r in table] == ["", "7"]
    assert not v1_logs.repair_progress_csv(tmp_path)  # a second repair changes nothing


def test_live_logs_write_v1s_rows_as_rounds_complete_and_the_repair_adds_late_keys(tmp_path) -> None:
    """What the ledger's round sink writes under V1 semantics on V2's engine and keep_v1_logs."""
    rows = v1_logs.V1Rows(start_time=99.0, config={"train_loop_config": {"n": 2}}, trial_id="t")
    live = v1_logs.LiveV1Logs(v1_logs.storage_of(tmp_path), rows)
    live({0: Record(0, 0, {"a": 1}, False, False, 100.0)})
    assert [r["a"] for r in v1_logs.read_result_json(tmp_path)] == [1]  # written as the round completes
    live({0: Record(0, 1, {"a": 2, "b": 3}, True, False, 101.5, checkpoint_dir_name="checkpoint_x")})
    back = v1_logs.read_result_json(tmp_path)
    assert [r["training_iteration"] for r in back] == [1, 2]
    assert back[1]["checkpoint_dir_name"] == "checkpoint_x" and back[0]["checkpoint_dir_name"] is None
    assert back[1]["should_checkpoint"] is True and "should_checkpoint" not in back[0]
    assert back[1]["time_this_iter_s"] == 1.5 and back[1]["time_total_s"] == 2.5
    assert "b" not in read_csv(tmp_path / "progress.csv")[1]  # V1's live CSV: the first row's columns
    assert v1_logs.repair_progress_csv(tmp_path)
    table = read_csv(tmp_path / "progress.csv")
    assert table[1]["b"] == "3" and table[0]["b"] == "" and table[0]["config/train_loop_config/n"] == "2"


def test_live_logs_in_a_restarted_ledger_number_on_and_never_write_a_row_twice(tmp_path) -> None:
    """The ledger's host died while writing round 2's row (journaled as handed over: rounds 0
    and 1): the restarted ledger's sink, unpickled afresh, takes up after rounds 0 and 1, skips
    round 2 when it is handed over again (its row is in the file), and writes round 3 as the 4th."""
    import pickle

    rounds = [{0: Record(0, i, {"a": i}, False, False, 100.0 + i)} for i in range(4)]
    rows = v1_logs.V1Rows(start_time=99.0, config={}, trial_id="t")
    sink = v1_logs.LiveV1Logs(v1_logs.storage_of(tmp_path), rows)
    opened = pickle.dumps(sink)  # as the journal keeps it: before any round
    for round_ in rounds[:3]:
        sink(round_)
    again = pickle.loads(opened)
    for round_ in rounds[:2]:
        again.replay(round_)
    again.resume()
    again(rounds[2])
    again(rounds[3])
    back = v1_logs.read_result_json(tmp_path)
    assert [(r["a"], r["training_iteration"]) for r in back] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert [r["a"] for r in read_csv(tmp_path / "progress.csv")] == ["0", "1", "2", "3"]


def test_an_earlier_runs_logs_are_set_aside_not_overwritten(tmp_path) -> None:
    (tmp_path / "result.json").write_text('{"a": 1}\n')
    (tmp_path / "result.json.1").write_text('{"a": 0}\n')
    v1_logs.set_aside(v1_logs.storage_of(tmp_path))
    assert not (tmp_path / "result.json").exists() and not (tmp_path / "progress.csv.1").exists()
    assert (tmp_path / "result.json.2").read_text() == '{"a": 1}\n'
    assert (tmp_path / "result.json.1").read_text() == '{"a": 0}\n'


def bucket(name: str):
    """A bucket on the S3-compatible server of the ``s3`` fixture, and the run directory in it."""
    import pyarrow.fs as pafs

    from compat_core.storage import RunStorage

    filesystem, _ = pafs.FileSystem.from_uri(f"s3://{name}?allow_bucket_creation=true")
    filesystem.create_dir(name)
    return RunStorage(filesystem, f"{name}/experiment/run")


def lines(storage, name="result.json"):
    return [json.loads(line) for line in (storage.read_text(name) or "").splitlines()]


@pytest.fixture
def staging(tmp_path, monkeypatch):
    """Where V1's logs for an object store are staged on this node: the test's own directory."""
    monkeypatch.setattr(v1_logs, "STAGING_DIR", str(tmp_path / "staging"))
    return tmp_path / "staging"


@pytest.mark.one_pass
def test_on_an_object_store_rows_are_appended_on_this_node_and_uploaded_each_period_and_at_the_end(s3, staging) -> None:
    """A row costs a local append, not a rewrite of the whole object: the object store sees
    the files once per sync period (V1's SyncConfig.sync_period) and when the run ends."""
    run = bucket("periods")
    rows = v1_logs.V1Rows(start_time=99.0, config={}, trial_id="t")
    live = v1_logs.LiveV1Logs(run, rows, sync_period_s=60.0, key="periods-run")
    now = [0.0]
    live.out._clock = lambda: now[0]  # the run's clock, moved by hand: a minute is a step here
    live.out._uploaded_at = 0.0
    for index in range(5):
        live({0: Record(0, index, {"a": index}, False, False, 100.0 + index)})
    assert not run.exists("result.json")  # five rows in the first minute: nothing uploaded yet
    now[0] = 61.0
    live({0: Record(0, 5, {"a": 5}, False, False, 105.0)})  # the first row after the period
    assert [r["a"] for r in lines(run)] == [0, 1, 2, 3, 4, 5]
    for index in range(6, 9):
        live({0: Record(0, index, {"a": index}, False, False, 100.0 + index)})
    assert len(lines(run)) == 6  # the next period has not passed
    staged = staging / "periods-run"
    assert staged.is_dir() and len((staged / "result.json").read_text().splitlines()) == 9  # every row, here
    live.finish()  # the run ended: everything uploaded, nothing left on this node
    assert [r["a"] for r in lines(run)] == list(range(9))
    assert [r["a"] for r in csv.DictReader(io.StringIO(run.read_text("progress.csv")))] == [str(i) for i in range(9)]
    assert not staged.exists()


@pytest.mark.one_pass
def test_on_an_object_store_a_restarted_ledger_goes_on_from_this_nodes_rows_the_driver_uploads_a_lost_ones(
    s3, staging
) -> None:
    import pickle

    run = bucket("restarts")
    (run.filesystem.open_output_stream(run.path("result.json"))).close()  # an empty file: a restored trial's
    rows = v1_logs.V1Rows(start_time=99.0, config={}, trial_id="t")
    sink = v1_logs.LiveV1Logs(run, rows, key="restarts-run")  # uploaded at the end only
    opened = pickle.dumps(sink)  # as the journal keeps it
    rounds = [{0: Record(0, i, {"a": i}, i == 3, False, 100.0 + i, checkpoint_dir_name="c" if i == 3 else None)}
              for i in range(5)]  # fmt: skip
    for round_ in rounds[:3]:
        sink(round_)
    # The host dies; the restarted one replays the handed-over rounds and goes on.
    again = pickle.loads(opened)
    for round_ in rounds[:3]:
        again.replay(round_)
    again.resume()
    again(rounds[3])
    assert lines(run) == []  # not uploaded yet
    # It dies too, for good, before the run's end: the driver uploads what this node holds.
    v1_logs.upload_staged(run, "restarts-run")
    assert [(r["a"], r["training_iteration"]) for r in lines(run)] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert not (staging / "restarts-run").exists()
    # A trial restored later (from its checkpoint, the 4th row) appends to what the store holds.
    restored = v1_logs.LiveV1Logs(run, v1_logs.V1Rows(start_time=99.0, config={}, trial_id="t"), key="restored")
    restored.rows.continue_after(run.read_text("result.json"))
    restored(rounds[4])
    restored.finish()
    assert [(r["a"], r["training_iteration"]) for r in lines(run)] == [(i, i + 1) for i in range(5)]
