"""``compat.migration_report`` of a Ray Tune trial's ``Result`` (and, merged, of a sweep's
trials): read from the readiness records the trials left in their directories. The real sweep
(a ResultGrid of compat trainers' trials, both settings): tests/compat/test_tune.py."""

from __future__ import annotations

import pytest

from compat.readiness import _record as records
from compat.readiness import _results
from tests.readiness.fleet import record

pytestmark = pytest.mark.one_pass


def trial(tmp_path, name: str, *lines: records.RunRecord):
    from ray.train import Result

    directory = tmp_path / name
    directory.mkdir()
    (directory / records.RECORD_FILE).write_text("".join(r.line() for r in lines))
    return Result(metrics={}, checkpoint=None, error=None, path=str(directory))


def test_a_trials_report_is_its_last_record(tmp_path) -> None:
    import compat

    started = record("sweep", 1, {}, outcome="unfinished")
    ended = record("sweep", 1, {"session-api": 4, "trial-api": 1})
    report = compat.migration_report(trial(tmp_path, "t0", started, ended))
    lines = report.splitlines()
    assert lines[0] == "Trial 't0', V1-only behaviours its trials relied on (they change when V2 is on), worst first:"
    assert lines[1].startswith("  trial-api [breaks]: 1x, first at train.py:12; python -m migrate: RTM111")
    assert lines[3].startswith("  session-api [silent]: 4x, first at")
    stopped = compat.migration_report(trial(tmp_path, "t1", started))
    assert stopped.splitlines() == [
        "Trial 't1': no V1-only behaviour recorded in its trials: it behaves the same under V2.",
        "1 of 1 trials ended early (stopped by Tune, or their process ended): their records hold the behaviours "
        "known when their fit started (the configs'), not those their workers reported after.",
    ]
    with pytest.raises(TypeError, match="takes a compat Result, a Ray Tune ResultGrid"):
        compat.migration_report({"loss": 1.0})


def test_a_sweeps_trials_are_merged_by_kind(tmp_path) -> None:
    kept = [
        record("sweep", 1, {"session-api": 2}, mode="v2"),
        record("sweep", 1, {"session-api": 3, "tune-callback": 1}, mode="v2"),
    ]
    lines = _results._render("Sweep 'sweep' (3 trials)", kept, missing=1).splitlines()
    assert lines[0].startswith("Sweep 'sweep' (3 trials), changed by the flip:")
    assert lines[1].startswith("  tune-callback [breaks]: 1x in 1 of 3 trials, first at")
    assert lines[3].startswith("  session-api [silent]: 5x in 2 of 3 trials, first at")
    assert lines[-1] == "1 of 3 trials left no readiness record: nothing is known of them."
