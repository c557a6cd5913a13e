"""report()'s argument checks inside a worker session (plain code: the ledger is a stand-in
that records what would be sent; nothing reaches Ray because every call here is rejected)."""

from __future__ import annotations

import pytest

import compat
from compat_core import switch
from compat_core.run import worker
from v2.worker import V2WorkerSide


class _RejectingLedger:
    """Any message reaching the ledger means a bad report got through."""

    def __getattr__(self, name):
        raise AssertionError(f"bad input reached the ledger ({name})")


@pytest.fixture
def session(monkeypatch):
    mode = switch.Mode(switch.V2, switch.V2)
    side = V2WorkerSide(mode)
    settings = worker.WorkerSettings(mode, side, _RejectingLedger(), {}, False, keep_v1_logs=False)
    monkeypatch.setattr(worker, "_session", worker.WorkerSession(settings, side, rank=0, world_size=1))
    return settings


def test_a_positional_checkpoint_that_is_not_one(session) -> None:
    with pytest.raises(compat.ReportError, match="Checkpoint.from_directory"):
        compat.report({"loss": 1.0}, "/tmp/ckpt")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"validation": True}, "no checkpoint was given"),
        ({"validate_fn": lambda c, cfg: {}}, "no checkpoint was given"),
        ({"validate_config": {"a": 1}}, "without validate_fn"),
        ({"validation": "yes"}, "takes True/False or a compat.ValidationTaskConfig"),
    ],
)
def test_validation_arguments_without_what_they_need(session, kwargs, message) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        compat.report({"loss": 1.0}, **kwargs)


def test_validation_forms_cannot_be_mixed_and_need_a_function(session, tmp_path) -> None:
    checkpoint = compat.Checkpoint.from_directory(str(tmp_path))
    with pytest.raises(ValueError, match="Use one"):
        compat.report({}, checkpoint=checkpoint, validation=True, validate_fn=lambda c, cfg: {})
    with pytest.raises(ValueError, match="trainer has no validation function"):
        compat.report({}, checkpoint=checkpoint, validation=True)
    with pytest.raises(TypeError, match="must be a function"):
        compat.report({}, checkpoint=checkpoint, validate_fn="validate")


def test_upload_mode_must_be_the_enum(session) -> None:
    with pytest.raises(TypeError, match="CheckpointUploadMode"):
        compat.report({}, checkpoint_upload_mode="async")


def test_a_report_is_copied_once_and_a_dict_given_to_rays_report_is_the_callers(session) -> None:
    """The engine's hook on Ray's report records compat's checked copy as it is (one copy per
    report), and copies a dict given to Ray's own report: the caller may change it after."""
    checked = {"loss": 1.0}
    active = worker.current()
    active.compat_call = worker.CompatCall(False, metrics=checked)
    try:
        assert worker.reported_metrics(checked) == (checked, True)
        assert worker.reported_metrics(checked)[0] is checked
        theirs = {"loss": 2.0}
        recorded, by_compat = worker.reported_metrics(theirs)
        theirs["loss"] = 3.0  # a loop reusing its dict
        assert recorded == {"loss": 2.0} and not by_compat
    finally:
        active.compat_call = None
    recorded, by_compat = worker.reported_metrics(checked)  # no report() under way: the caller's
    assert recorded is not checked and not by_compat
