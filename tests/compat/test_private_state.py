"""compat's state is private to the user who runs it (docs/architecture.md, "Threat model").

On a shared machine another local user may create compat's state directory first, make it
writable, or plant a symlink where a journal goes; whoever can write a run's storage may craft a
stored report. None of it may make compat read, write or run what that user chose. Plain code, no
Ray: the directory checks, the journal's and staged logs' opens, and ``Result.from_path``."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

import pytest

import compat as train
from compat.result import StoredError, StoredValue
from compat_core import private
from compat_core.errors import UnsafeStateDirectoryError
from compat_core.run.ledger import Record, host, journal
from compat_core.semantics import v1_logs, worker_reports
from compat_core.storage import at

pytestmark = pytest.mark.one_pass  # no Ray, no mode

OTHER_USER = 65534  # "nobody"


@pytest.fixture
def shared_tmp(tmp_path, monkeypatch) -> Path:
    """A shared temporary directory (sticky and world-writable, as /tmp) that compat's default
    state directory goes under; ``COMPAT_STATE_DIR`` unset."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.delenv(private.ENV_VAR, raising=False)
    return shared


def test_the_state_directory_is_the_users_own_and_created_private(shared_tmp) -> None:
    journals = Path(host.journal_dir())
    base = shared_tmp / f"ray-train-compat-{os.geteuid()}"
    assert journals == base / "journals"
    for directory in (base, journals):
        info = directory.lstat()
        assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()
    assert Path(v1_logs.staging_dir()) == base / "staging"
    assert host.journal_dir() == str(journals)  # an existing private one is used as it is


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user's takes root")
def test_a_state_directory_another_user_created_first_is_refused(shared_tmp) -> None:
    base = shared_tmp / f"ray-train-compat-{os.geteuid()}"
    base.mkdir(mode=0o700)
    os.chown(base, OTHER_USER, OTHER_USER)
    with pytest.raises(UnsafeStateDirectoryError, match=rf"belongs to user id {OTHER_USER}, not to you") as raised:
        host.journal_dir()
    assert str(base) in str(raised.value) and "COMPAT_STATE_DIR" in str(raised.value)
    assert isinstance(raised.value, PermissionError)
    assert not (base / "journals").exists()  # nothing created in it


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777])
def test_a_state_directory_others_can_write_is_refused(shared_tmp, mode: int) -> None:
    base = shared_tmp / f"ray-train-compat-{os.geteuid()}"
    base.mkdir()
    base.chmod(mode)
    with pytest.raises(UnsafeStateDirectoryError, match=rf"other users can write to it \(mode {mode:04o}\)"):
        host.journal_dir()
    with pytest.raises(UnsafeStateDirectoryError):
        v1_logs.staging_dir()


def test_a_symlink_where_the_state_directory_goes_is_refused(shared_tmp, tmp_path) -> None:
    elsewhere = tmp_path / "attackers"
    elsewhere.mkdir(mode=0o700)
    (shared_tmp / f"ray-train-compat-{os.geteuid()}").symlink_to(elsewhere)
    with pytest.raises(UnsafeStateDirectoryError, match="it is a symbolic link"):
        host.journal_dir()
    assert list(elsewhere.iterdir()) == []


def test_a_configured_state_directory_is_used_and_checked(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(private.ENV_VAR, str(tmp_path / "mine" / "compat"))
    assert host.journal_dir() == str(tmp_path / "mine" / "compat" / "journals")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(private.ENV_VAR, str(shared))
    with pytest.raises(UnsafeStateDirectoryError, match="other users can write"):
        host.journal_dir()


def test_a_symlink_planted_where_a_journal_goes_is_not_followed(tmp_path) -> None:
    directory = tmp_path / "journals"
    private.ensure_private(str(directory))
    victim = tmp_path / "victims_file"
    victim.write_bytes(b"keep me")
    planted = directory / f"run{journal.JOURNAL_SUFFIX}"
    planted.symlink_to(victim)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        journal.Journal(str(planted))
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        list(journal.read(str(planted)))  # a planted journal is not read back either
    assert victim.read_bytes() == b"keep me"


def test_staged_logs_do_not_follow_a_planted_symlink(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(v1_logs, "STAGING_DIR", str(tmp_path / "staging"))
    staged = v1_logs.StagedLogs(at(str(tmp_path / "run")), "run-key", period_s=3600.0)
    staged.append_text("progress.csv", "a\n1\n")
    victim = tmp_path / "victims_file"
    victim.write_text("keep me")
    os.symlink(victim, os.path.join(staged.local, "result.json"))
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        staged.append_text("result.json", "{}\n")
    assert victim.read_text() == "keep me"


class Planted:
    """A stored value crafted to run code when unpickled: it creates the file ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


class Weights:
    """A user's own class of reported value (module-level: pickled by reference)."""

    def __init__(self, values: list[float]) -> None:
        self.values = values

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Weights) and other.values == self.values


def test_result_from_path_runs_no_code_from_storage(tmp_path) -> None:
    """A report stored with the run crafted to run code on unpickling: ``Result.from_path``
    reads plain values back as reported and stands a ``StoredValue`` for the rest; only
    ``trust_stored_objects=True`` loads them (and runs what they say)."""
    trial = tmp_path / "exp" / "trial"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text(json.dumps({"loss": 1.0, "training_iteration": 1}) + "\n")
    ran = tmp_path / "ran"
    metrics = [
        {"loss": 1.0, "curve": [1.0, 0.5], "weights": Weights([0.1]), "planted": Planted(str(ran))},
        {"loss": 0.5, "curve": [0.4], "weights": Weights([0.2]), "planted": Planted(str(ran))},
    ]
    records = [Record(0, i, m, False, False, float(i)) for i, m in enumerate(metrics)]
    worker_reports.write(at(str(trial)), lambda: iter(records))

    frame = train.Result.from_path(str(trial)).worker_metrics_dataframe
    assert not ran.exists()
    assert list(frame["loss"]) == [1.0, 0.5] and list(frame["curve"]) == [[1.0, 0.5], [0.4]]
    assert list(frame["planted"]) == [StoredValue("io.open")] * 2
    assert list(frame["weights"]) == [StoredValue(f"{__name__}.Weights")] * 2
    assert "trust_stored_objects=True" in repr(frame["weights"][0])

    trusted = train.Result.from_path(str(trial), trust_stored_objects=True).worker_metrics_dataframe
    assert list(trusted["weights"]) == [Weights([0.1]), Weights([0.2])]
    assert ran.exists()  # what trusting the storage means


def test_result_from_path_does_not_unpickle_a_failed_runs_stored_error(tmp_path, monkeypatch) -> None:
    """V1's trial directory keeps a failed run's error pickled (``error.pkl``), which raw Ray's
    ``from_path`` loads: compat gives a ``StoredError`` with the run's ``error.txt`` instead,
    and the checkpoints on the run's own filesystem; trusting the storage loads the error."""
    from ray import cloudpickle

    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "0")
    trial = tmp_path / "exp" / "trial"
    (trial / "checkpoint_000000").mkdir(parents=True)
    (trial / "result.json").write_text(json.dumps({"loss": 1.0, "checkpoint_dir_name": "checkpoint_000000"}) + "\n")
    ran = tmp_path / "ran"
    (trial / "error.pkl").write_bytes(cloudpickle.dumps(Planted(str(ran))))
    (trial / "error.txt").write_text("ValueError: the last epoch failed")

    result = train.Result.from_path(str(trial))
    assert not ran.exists()
    assert isinstance(result.error, StoredError) and str(result.error) == "ValueError: the last epoch failed"
    assert result.metrics["loss"] == 1.0
    assert [type(c.filesystem).__name__ for c, _ in result.best_checkpoints] == ["LocalFileSystem"]
    assert type(result.filesystem).__name__ == "LocalFileSystem"

    train.Result.from_path(str(trial), trust_stored_objects=True)
    assert ran.exists()  # what trusting the storage means
