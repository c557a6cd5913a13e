"""What an earlier compat pickled (the restore state, the ledger's journal) still reads back after
the core's modules moved: a restore across an upgrade keeps its trainer and every record."""

from __future__ import annotations

import pickle
import sys
import types
from pathlib import Path

import pytest

from compat_core.config import RunConfig
from compat_core.files import journal, pickled
from compat_core.semantics import restore
from compat_core.semantics.records import Record

pytestmark = pytest.mark.one_pass  # plain code: no Ray, no mode


def _as_written_by(old_module: str, value: object, monkeypatch: pytest.MonkeyPatch, cls: type | None = None) -> bytes:
    """``value`` pickled as a compat whose class (``cls``, else the value's) lived in ``old_module`` wrote it."""
    cls = cls or type(value)
    monkeypatch.setattr(cls, "__module__", old_module)
    monkeypatch.setitem(sys.modules, old_module, types.SimpleNamespace(**{cls.__qualname__: cls}))
    data = pickle.dumps(value)
    monkeypatch.undo()
    assert old_module.encode() in data
    return data


def test_a_restore_state_from_before_the_move_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = restore.TrainerState(dict, {"run_config": RunConfig(name="old"), "train_loop_config": {"lr": 0.1}})
    (tmp_path / restore.STATE_FILE).write_bytes(_as_written_by("compat_core.restore", state, monkeypatch))
    with pytest.raises(ModuleNotFoundError):
        pickle.loads((tmp_path / restore.STATE_FILE).read_bytes())  # what the move alone would do

    spec = restore.load(str(tmp_path))
    assert isinstance(spec.state, restore.TrainerState)
    assert spec.state.arguments["run_config"].name == "old"
    assert spec.state.arguments["train_loop_config"] == {"lr": 0.1}


@pytest.mark.parametrize(
    ("old_module", "value"),
    [
        ("compat_core.frameworks", "framework"),  # the trainer's Framework, in compat_trainer.pkl
        ("compat_core.storage", "storage"),  # a Tune trial's RunStorage, pickled with its trainer
        ("compat_core.usage", "usage"),  # a worker's usages, journaled with its records
    ],
)
def test_state_naming_a_root_module_of_the_core_loads_after_the_grouping(
    old_module: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The core's root modules moved into packages by job (``migration``, ``integration``,
    ``files``): what an earlier compat pickled with their names reads back as the same values."""
    import pyarrow.fs as pafs

    from compat_core.files.storage import RunStorage
    from compat_core.integration.frameworks import TORCH
    from compat_core.migration.usage import Usage

    made = {
        "framework": TORCH,
        "storage": RunStorage(pafs.LocalFileSystem(), "/runs/trial"),
        "usage": Usage("tune-callback", 2, "job.py:3"),
    }[value]
    data = _as_written_by(old_module, made, monkeypatch)
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(data)  # what the move alone would do
    assert pickled.loads(data) == made


def test_a_restore_state_naming_the_torch_trainer_where_it_was_defined_loads() -> None:
    """An experiment started before the torch trainer moved to ``compat.torch`` (it subclasses
    Ray's, which imports torch) names ``compat._trainer.TorchTrainer`` in its restore state."""
    from compat.torch import TorchTrainer

    with pytest.raises(AttributeError):
        pickle.loads(b"ccompat._trainer\nTorchTrainer\n.")  # what the move alone would do
    assert pickled.loads(b"ccompat._trainer\nTorchTrainer\n.") is TorchTrainer


def test_a_journaled_trial_usage_sink_named_where_it_was_defined_loads() -> None:
    """A Tune trial's usage sink, journaled by its ledger before the trainer's bookkeeping left
    ``compat._trainer``, loads as the class it is now (a restarted host reopens the journal)."""
    from compat._bookkeeping import TrialUsages

    with pytest.raises(AttributeError):
        pickle.loads(b"ccompat._trainer\n_TrialUsages\n.")
    assert pickled.loads(b"ccompat._trainer\n_TrialUsages\n.") is TrialUsages


@pytest.mark.parametrize(
    "old_module",
    [
        "compat_core.ledger.records",  # before the core was grouped by job (2026-11-29)
        "compat_core.run.ledger.records",  # before the core's parts depended one way (2026-12-02)
    ],
)
def test_a_journal_from_before_the_move_gives_back_its_records(
    old_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver killed before the upgrade left its journal; the restored fit reads it back."""
    record = Record(rank=1, index=3, metrics={"loss": 0.5}, has_checkpoint=False, wants_validation=False, timestamp=1.0)
    event = _as_written_by(old_module, ("record", record), monkeypatch, cls=Record)
    path = tmp_path / "old.journal"
    path.write_bytes(journal._LENGTH.pack(len(event)) + event)

    assert list(journal.read(str(path))) == [("record", record)]
    assert all(old.startswith("compat_core.") and new != old for old, new in pickled.MOVED.items())


def test_a_v1_driver_reads_a_journal_its_host_wrote_with_v2s_names(tmp_path: Path) -> None:
    """The ledger's host runs with the cluster's setting, the driver with its own: a cluster
    started without ``RAY_TRAIN_V2_ENABLED`` (V2 by default) journals a V1 fit's validation
    config as ``ray.train.ValidationConfig`` (V2's ``ray.train`` gives its classes that module),
    a name a driver with ``RAY_TRAIN_V2_ENABLED=0`` has not. Its fit must still read its records
    back (it failed at the end of every fit with an ``AttributeError``)."""
    import os
    import subprocess

    path = tmp_path / "host.journal"
    write = f"""
import ray.train
from compat_core.releases.standins import ValidationConfig
from compat_core.files.journal import Journal
from compat_core.semantics.records import Record
assert ValidationConfig.__module__ == "ray.train"
j = Journal({str(path)!r})
j.append("validation_config", ValidationConfig(fn=print))
j.append("record", Record(0, 0, {{"loss": 0.5}}, False, False, 1.0))
j.close()
"""
    read = f"""
import ray.train
assert not hasattr(ray.train, "ValidationConfig")  # V1's ray.train
from compat_core.semantics.records import journaled_records
print([r.metrics for r in journaled_records({str(path)!r})])
"""
    for setting, code in (("1", write), ("0", read)):
        env = {**os.environ, "RAY_TRAIN_V2_ENABLED": setting}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[{'loss': 0.5}]"
