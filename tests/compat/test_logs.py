"""V1 log files as plain file operations."""

import csv
import json

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
