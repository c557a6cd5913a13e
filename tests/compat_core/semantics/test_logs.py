"""V1 log files as plain file operations."""

import csv
import io
import json

import pytest

from compat_core.semantics import v1_logs
from compat_core.semantics.records import DeliveredRound, Record


def handed(rows: v1_logs.V1Rows, record: Record) -> DeliveredRound:
    """A round as the run ledger hands it to its sink: with its row, made once by the ledger's
    ``V1Rows`` (which a restarted ledger unpickles afresh and runs again over the rounds it replays)."""
    return DeliveredRound(record.key, {0: record}, rows.round_row({0: record}))


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
    live = v1_logs.LiveV1Logs(v1_logs.storage_of(tmp_path))
    live(handed(rows, Record(0, 0, {"a": 1}, False, False, 100.0)))
    assert [r["a"] for r in v1_logs.read_result_json(tmp_path)] == [1]  # written as the round completes
    live(handed(rows, Record(0, 1, {"a": 2, "b": 3}, True, False, 101.5, checkpoint_dir_name="checkpoint_x")))
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

    rounds = [Record(0, i, {"a": i}, False, False, 100.0 + i) for i in range(4)]
    rows = v1_logs.V1Rows(start_time=99.0, config={}, trial_id="t")
    sink = v1_logs.LiveV1Logs(v1_logs.storage_of(tmp_path))
    opened = pickle.dumps((sink, rows))  # as the journal keeps them: before any round
    for round_ in rounds[:3]:
        sink(handed(rows, round_))
    again, rows_again = pickle.loads(opened)
    for round_ in rounds[:2]:
        again.replay(handed(rows_again, round_))
    again.resume()
    again(handed(rows_again, rounds[2]))
    again(handed(rows_again, rounds[3]))
    back = v1_logs.read_result_json(tmp_path)
    assert [(r["a"], r["training_iteration"]) for r in back] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert [r["a"] for r in read_csv(tmp_path / "progress.csv")] == ["0", "1", "2", "3"]


def test_a_host_lost_for_good_leaves_no_complete_round_out_of_v1s_logs(tmp_path) -> None:
    """The ledger's host handed rounds 0 and 1 to V1's logs, stored rounds 2 and 3 in its
    journal and died before handing them over, and was not restarted: the driver, rebuilding
    the run from the journal, writes them after the two already written, once each."""
    from compat_core.files.journal import Journal
    from compat_core.run.ledger.replay import recover
    from compat_core.run.ledger.run import RunLedger

    path, run = str(tmp_path / "run.journal"), tmp_path / "run"
    run.mkdir()
    rows = v1_logs.V1Rows(start_time=99.0, config={}, trial_id="t")
    ledger = RunLedger(1, round_sink=v1_logs.LiveV1Logs(v1_logs.storage_of(run)), rows=rows, journal_path=path)
    for i in range(2):
        ledger.record(Record(0, i, {"a": i}, False, False, 100.0 + i))
    ledger._delivery.flush()
    stored = Journal(path)  # the host's last acts before it died: two records stored
    for i in (2, 3):
        stored.append("record", Record(0, i, {"a": i}, False, False, 100.0 + i), None)
    stored.close()
    snapshot = recover(path, 1, "killed")
    assert [r.index for r in snapshot.records] == [0, 1, 2, 3]
    back = v1_logs.read_result_json(run)
    assert [(r["a"], r["training_iteration"]) for r in back] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert [r["a"] for r in read_csv(run / "progress.csv")] == ["0", "1", "2", "3"]


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

    from compat_core.files.storage import RunStorage

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
    live = v1_logs.LiveV1Logs(run, sync_period_s=60.0, key="periods-run")
    now = [0.0]
    live.out._clock = lambda: now[0]  # the run's clock, moved by hand: a minute is a step here
    live.out._uploaded_at = 0.0
    for index in range(5):
        live(handed(rows, Record(0, index, {"a": index}, False, False, 100.0 + index)))
    assert not run.exists("result.json")  # five rows in the first minute: nothing uploaded yet
    now[0] = 61.0
    live(handed(rows, Record(0, 5, {"a": 5}, False, False, 105.0)))  # the first row after the period
    assert [r["a"] for r in lines(run)] == [0, 1, 2, 3, 4, 5]
    for index in range(6, 9):
        live(handed(rows, Record(0, index, {"a": index}, False, False, 100.0 + index)))
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
    sink = v1_logs.LiveV1Logs(run, key="restarts-run")  # uploaded at the end only
    opened = pickle.dumps((sink, rows))  # as the journal keeps them
    rounds = [Record(0, i, {"a": i}, i == 3, False, 100.0 + i, checkpoint_dir_name="c" if i == 3 else None)
              for i in range(5)]  # fmt: skip
    for round_ in rounds[:3]:
        sink(handed(rows, round_))
    # The host dies; the restarted one replays the handed-over rounds and goes on.
    again, rows_again = pickle.loads(opened)
    for round_ in rounds[:3]:
        again.replay(handed(rows_again, round_))
    again.resume()
    again(handed(rows_again, rounds[3]))
    assert lines(run) == []  # not uploaded yet
    # It dies too, for good, before the run's end: the driver uploads what this node holds.
    v1_logs.upload_staged(run, "restarts-run")
    assert [(r["a"], r["training_iteration"]) for r in lines(run)] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert not (staging / "restarts-run").exists()
    # A trial restored later (from its checkpoint, the 4th row) appends to what the store holds.
    restored = v1_logs.LiveV1Logs(run, key="restored")
    restored_rows = v1_logs.V1Rows(start_time=99.0, config={}, trial_id="t")
    restored_rows.continue_after(run.read_text("result.json"))
    restored(handed(restored_rows, rounds[4]))
    restored.finish()
    assert [(r["a"], r["training_iteration"]) for r in lines(run)] == [(i, i + 1) for i in range(5)]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

scalars = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=3), st.booleans(), st.none())
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.tuples(inner, inner), st.lists(inner, max_size=2), st.dictionaries(st.integers(0, 3), inner, max_size=2)
    ),
    max_leaves=4,
)
# Metric names, V1's auto-filled ones among them (a metric of the same name gives way to most).
names = st.one_of(st.sampled_from(sorted(v1_logs.AUTO_KEYS)), st.text(min_size=1, max_size=4))


@settings(max_examples=200, deadline=None)
@given(
    reports=st.lists(st.tuples(st.dictionaries(names, values, max_size=4), st.booleans()), min_size=1, max_size=4),
    config=st.dictionaries(st.text(max_size=3), values, max_size=2),
)
def test_the_drivers_rows_read_back_from_result_json_are_the_rows_the_ledger_made(reports, config) -> None:
    """The driver never makes a row again: it reads the ledger's back from ``result.json``
    (JSON keeps no tuple, array or non-string key) and puts the values as reported back in,
    from the round's own record: the row, keys in order, that ``V1Rows`` made."""
    rows = v1_logs.V1Rows(start_time=1.8e9, config={"train_loop_config": config}, trial_id="t")
    for index, (metrics, checkpointed) in enumerate(reports):
        record = Record(0, index, metrics, checkpointed, False, 1.8e9 + index, checkpoint_dir_name=f"c{index}")
        made = rows.round_row({0: record})
        logged = json.loads(v1_logs.json_line(made))
        back = v1_logs.with_values(logged, metrics, {"train_loop_config": config})
        assert back == made and list(back) == list(made)


def test_the_driver_reads_this_fits_rows_and_the_checkpoints_in_one_pass_and_repairs_only_when_a_key_came_late(
    tmp_path,
) -> None:
    storage = v1_logs.storage_of(tmp_path)
    earlier = [{"a": 0, "checkpoint_dir_name": "checkpoint_000000"}]  # a restored trial's first fit
    now = [
        {"a": 1, "checkpoint_dir_name": None},
        {"a": 2, "late": {"x": 1}, "checkpoint_dir_name": "checkpoint_000001"},
    ]
    (tmp_path / "result.json").write_text("".join(v1_logs.json_line(r) for r in earlier + now))
    (tmp_path / "progress.csv").write_text("a,checkpoint_dir_name\n0,checkpoint_000000\n1,\n2,checkpoint_000001\n")
    logged = v1_logs.read_logged(storage, skip=len(earlier))
    assert logged.count == 2 and logged.last == now[-1]
    assert list(logged.by_checkpoint) == ["checkpoint_000001"]  # this fit's checkpoints only
    assert logged.columns == ["a", "checkpoint_dir_name", "late/x"]
    assert v1_logs.repair_progress_csv(storage, logged.columns)
    table = read_csv(tmp_path / "progress.csv")
    assert [r["late/x"] for r in table] == ["", "", "1"] and [r["a"] for r in table] == ["0", "1", "2"]
    before = (tmp_path / "progress.csv").stat().st_mtime_ns
    assert not v1_logs.repair_progress_csv(storage, logged.columns)  # every key there: not rewritten
    assert (tmp_path / "progress.csv").stat().st_mtime_ns == before


def test_a_restored_trials_live_csv_goes_on_after_the_rows_it_holds(tmp_path) -> None:
    """A restored trial's sink starts with no columns of its own: it appends under the header
    the CSV already has (as V1's CSV logger goes on in a restored trial), so the CSV keeps the
    earlier fit's rows, and the end of the run has nothing to rewrite."""
    storage = v1_logs.storage_of(tmp_path)
    first = v1_logs.V1Rows(start_time=99.0, config={}, trial_id="t")
    live = v1_logs.LiveV1Logs(storage)
    for index in range(2):
        live(handed(first, Record(0, index, {"a": index}, False, False, 100.0 + index)))
    restored_rows = v1_logs.V1Rows(start_time=99.0, config={}, trial_id="t")
    restored_rows.continue_after(storage.read_text("result.json") or "")
    restored = v1_logs.LiveV1Logs(storage)
    restored(handed(restored_rows, Record(1, 0, {"a": 2}, False, False, 103.0)))
    assert [r["a"] for r in read_csv(tmp_path / "progress.csv")] == ["0", "1", "2"]
    assert not v1_logs.repair_progress_csv(storage)
