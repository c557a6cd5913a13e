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

import numpy as np
import pytest

import compat as train
from compat.result import StoredError, StoredValue
from compat_core.errors import UnsafeStateDirectoryError
from compat_core.files import journal, private
from compat_core.files.storage import at
from compat_core.run.ledger import host
from compat_core.semantics import v1_logs, worker_reports
from compat_core.semantics.records import Record

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


def test_the_result_fit_returned_runs_no_code_from_a_file_replaced_in_storage(tmp_path, monkeypatch) -> None:
    """``fit()``'s own result reads its stored reports when first read, as the objects reported,
    while the file is the bytes it wrote; one replaced in storage since is read as
    ``from_path`` reads it (nothing unpickled that could run code), with a warning naming it."""
    import pickle
    import types

    import ray

    from compat import _trainer
    from compat.torch import TorchTrainer
    from compat_core.files.pickled import CorruptStoredDataWarning
    from tests.compat.test_fit_steps import V1_MODE, FakeEngine, LocalLedger

    monkeypatch.setattr(_trainer, "ensure_ray", lambda: None)  # a fit's steps without Ray (test_fit_steps)
    monkeypatch.setattr(ray, "get_runtime_context", lambda: types.SimpleNamespace(get_actor_id=lambda: None))
    monkeypatch.setattr(_trainer, "open_ledger", LocalLedger)
    monkeypatch.setenv("COMPAT_RECORD_CHANNEL", "actor")

    def reporting():
        train.report({"loss": 1.0, "weights": np.array([0.1, 0.2])})

    fits = []
    for name in ("job0", "job1"):
        trainer = TorchTrainer(reporting, run_config=train.RunConfig(name=name, storage_path=str(tmp_path)))
        fits.append(trainer._fit(FakeEngine(V1_MODE), in_trial=False))
    kept, replaced = fits
    (weights,) = kept.worker_metrics_dataframe["weights"]  # its own bytes: as reported
    np.testing.assert_array_equal(weights, [0.1, 0.2])

    (stored,) = (tmp_path / "job1").glob("compat_worker_reports.*.arrow")
    ran = tmp_path / "ran"
    planted = [Record(0, 0, {"loss": 1.0, "weights": Planted(str(ran))}, False, False, 0.0)]
    stored.unlink()
    worker_reports.write(at(str(tmp_path / "job1")), lambda: iter(planted))  # the same name, new bytes
    with pytest.warns(CorruptStoredDataWarning, match=rf"{stored}.* not the file this fit\(\) wrote"):
        frame = pickle.loads(pickle.dumps(replaced)).worker_metrics_dataframe  # pickling reads it too
    assert not ran.exists()
    assert list(frame["weights"]) == [StoredValue("io.open")]


def _corrupt_cell(path: Path, column: str, row: int, data: bytes) -> None:
    import pyarrow as pa

    with pa.OSFile(str(path)) as f:
        table = pa.ipc.open_file(f).read_all()
    values = table.column(column).to_pylist()
    values[row] = data
    index = table.schema.get_field_index(column)
    table = table.set_column(index, table.schema.field(index), pa.array(values, pa.binary()))
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as writer:
        writer.write_table(table)


def stored_run(tmp_path: Path, reports: int = 6) -> tuple[Path, Path]:
    trial = tmp_path / "exp" / "trial"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text(json.dumps({"loss": 1.0, "training_iteration": 1}) + "\n")
    records = [
        Record(i % 2, i // 2, {"loss": float(i), "curve": [float(i)]}, False, False, float(i)) for i in range(reports)
    ]
    monkeypatched_batch = worker_reports.BATCH
    worker_reports.BATCH = 2  # three record batches: a cut loses only what follows it
    try:
        worker_reports.write(at(str(trial)), lambda: iter(records))
    finally:
        worker_reports.BATCH = monkeypatched_batch
    (stored,) = trial.glob("compat_worker_reports.*.arrow")
    return trial, stored


def test_a_corrupt_stored_value_is_named_by_file_and_report_and_the_rest_is_read(tmp_path) -> None:
    from compat.result import UnreadableValue
    from compat_core.files.pickled import CorruptStoredDataWarning

    trial, stored = stored_run(tmp_path)
    _corrupt_cell(stored, "curve", 3, b"\x80\x05garbage")
    with pytest.warns(CorruptStoredDataWarning) as warned:
        frame = train.Result.from_path(str(trial)).worker_metrics_dataframe
    (message,) = [str(w.message) for w in warned]
    assert str(stored) in message and "'curve' of rank 1's report 1 (attempt 0, row 3)" in message
    assert list(frame["loss"]) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    curve = list(frame["curve"])
    assert isinstance(curve[3], UnreadableValue) and curve[:3] + curve[4:] == [[0.0], [1.0], [2.0], [4.0], [5.0]]


@pytest.mark.parametrize("keep", [0.9, 0.5, 0.02])
def test_a_stored_reports_file_cut_short_gives_the_reports_before_the_cut(tmp_path, monkeypatch, keep) -> None:
    from compat_core.files.pickled import CorruptStoredDataWarning

    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "0")
    trial, stored = stored_run(tmp_path)
    data = stored.read_bytes()
    stored.write_bytes(data[: int(len(data) * keep)])
    with pytest.warns(
        CorruptStoredDataWarning,
        match=rf"{stored} is cut short or corrupt .*: worker_metrics_dataframe holds the \d+ report",
    ):
        result = train.Result.from_path(str(trial))
    frame = result.worker_metrics_dataframe
    losses = [] if frame is None else list(frame["loss"])
    assert losses == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0][: len(losses)]  # a prefix, in report order
    if keep > 0.5:
        assert len(losses) >= 2  # at least the batches before the cut
    assert result.metrics["loss"] == 1.0  # the rest of the run: read


@pytest.mark.parametrize("mode", [0o777, 0o775])
def test_a_configured_state_directory_under_a_parent_others_can_write_is_refused(tmp_path, monkeypatch, mode) -> None:
    """Another user could rename the checked directory away and put their own in its place."""
    parent = tmp_path / "shared"
    parent.mkdir()
    (parent / "compat").mkdir(mode=0o700)  # private itself: the parent is the problem
    parent.chmod(mode)
    monkeypatch.setenv(private.ENV_VAR, str(parent / "compat"))
    why = rf"other users can write to it and it is not sticky \(mode {mode:04o}\)"
    with pytest.raises(UnsafeStateDirectoryError, match=rf"the directory {parent} above it is not safe \({why}\)"):
        host.journal_dir()
    parent.chmod(mode | 0o1000)  # sticky, as /tmp: nobody renames another's entry
    assert host.journal_dir() == str(parent / "compat" / "journals")


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user's takes root")
def test_a_configured_state_directory_under_another_users_directory_is_refused(tmp_path, monkeypatch) -> None:
    parent = tmp_path / "theirs"
    parent.mkdir(mode=0o755)
    os.chown(parent, OTHER_USER, OTHER_USER)
    monkeypatch.setenv(private.ENV_VAR, str(parent / "compat"))
    with pytest.raises(
        UnsafeStateDirectoryError, match=rf"{parent} above it is not safe \(it belongs to user id {OTHER_USER}"
    ):
        host.journal_dir()
    assert not (parent / "compat").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user's takes root")
def test_a_journal_directory_swapped_after_its_check_is_not_read(tmp_path) -> None:
    """The checked directory renamed away and another user's put in its place, a journal planted
    in it under the name compat reads: the re-read goes through the directory as it is now, is
    checked, and refused."""
    directory = tmp_path / "journals"
    private.ensure_private(str(directory))
    writer = journal.Journal(str(directory / f"run{journal.JOURNAL_SUFFIX}"))
    writer.close()
    directory.rename(tmp_path / "moved")
    directory.mkdir(mode=0o755)
    (directory / f"run{journal.JOURNAL_SUFFIX}").write_bytes(b"planted")
    os.chown(directory, OTHER_USER, OTHER_USER)
    with pytest.raises(UnsafeStateDirectoryError, match=rf"{directory}: it belongs to user id {OTHER_USER}"):
        list(journal.read(str(directory / f"run{journal.JOURNAL_SUFFIX}")))
