"""V1 log files as plain file operations."""

import csv
import json

from compat_core import v1_logs


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


def test_write_logs_round_trips(tmp_path) -> None:
    rows = v1_logs.auto_filled(
        [{"a": 1}, {"a": 2, "b": 3}],
        [100.0, 101.5],
        [None, "checkpoint_x"],
        start_time=99.0,
        config={"train_loop_config": {"n": 2}},
        trial_id="t",
    )
    v1_logs.write_logs(tmp_path, rows)
    back = v1_logs.read_result_json(tmp_path)
    assert [r["training_iteration"] for r in back] == [1, 2]
    assert back[1]["should_checkpoint"] is True and "should_checkpoint" not in back[0]
    assert back[1]["time_this_iter_s"] == 1.5 and back[1]["time_total_s"] == 2.5
    table = read_csv(tmp_path / "progress.csv")
    assert table[1]["b"] == "3" and table[0]["config/train_loop_config/n"] == "2"
