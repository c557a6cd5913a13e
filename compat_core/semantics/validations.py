"""The outcomes of a run's validations as its directory holds them, so that ``Result.from_path``
gives each checkpoint's validated metrics and status as ``fit()`` gave them: those compat's run
ledger ran, stored with the run (below), and the statuses Ray's own V2 validation (2.56 and
later) records in its checkpoint manager snapshot (:func:`rays_statuses`).

compat's ledger runs a checkpoint's validation (``validate_fn``, ``ValidationConfig``) where Ray's
engine does not: under V1 semantics on either engine, and under V2 semantics on releases before
2.56. Ray's own files then hold each checkpoint's reported metrics only (V1's ``result.json``,
V2's checkpoint manager snapshot), so each ``fit()`` writes its outcomes into the run's directory
as it ends (``compat_validations.pkl``; a restored run's added to the earlier fits'), through the
run's filesystem. Each metric's value is pickled on its own and read back as the run's other
stored values are (:func:`compat_core.files.pickled.load_stored`: nothing read runs code unless
the reader trusts the storage); a file that cannot be read costs only the validations, with a
:class:`~compat_core.files.pickled.CorruptStoredDataWarning` naming it.
"""

from __future__ import annotations

import json
import pickle
import warnings
from collections.abc import Iterable

from compat_core import messages
from compat_core.files import pickled
from compat_core.files.pickled import CorruptStoredDataWarning
from compat_core.files.storage import RunStorage
from compat_core.releases.standins import V2_SNAPSHOT
from compat_core.semantics.rounds import CheckpointStatus, ReportRound, ValidationOutcome

FILE = "compat_validations.pkl"
# Where Ray's V2 snapshot lists the checkpoints its validation ended each way (2.56 and later).
_RAYS_STATUS_KEYS = {
    "validated_checkpoint_dir_names": CheckpointStatus.VALIDATED,
    "timed_out_validation_checkpoint_dir_names": CheckpointStatus.VALIDATION_TIMEOUT,
    "failed_validation_checkpoint_dir_names": CheckpointStatus.VALIDATION_FAILED,
}


def rays_statuses(run: RunStorage) -> dict[str, CheckpointStatus]:
    """The checkpoints Ray's V2 validation ended, by directory name, with how ({} when the run
    has no snapshot, or one that does not say: a corrupt one is Ray's reading's to report)."""
    try:
        state = json.loads(run.read_text(V2_SNAPSHOT) or "{}")
    except ValueError:
        return {}
    statuses: dict[str, CheckpointStatus] = {}
    for key, status in _RAYS_STATUS_KEYS.items():
        names = state.get(key) if isinstance(state, dict) else None
        for name in names if isinstance(names, list) else []:
            statuses[str(name)] = status
    return statuses


def write(run: RunStorage, rounds: Iterable[ReportRound]) -> None:
    """Store the validation outcomes of ``rounds`` (by checkpoint directory name) with the run,
    after those of its earlier fits (a checkpoint validated again keeps its newest outcome)."""
    outcomes = {r.checkpoint_dir_name: r.validation for r in rounds if r.checkpoint_dir_name and r.validation}
    if not outcomes:
        return
    from ray import cloudpickle

    try:
        stored = _load(run)
    except OSError:
        raise  # the storage cannot be read now: what it holds is left as it is (the caller warns)
    except Exception:
        stored = {}  # a file of another form gives nothing back: replaced
    for name, outcome in outcomes.items():
        # As the workers' reports are stored: what Ray's cloudpickle carried from the validation
        # task (a class of the user's script, by value), it stores.
        metrics = {str(key): cloudpickle.dumps(value) for key, value in outcome.metrics.items()}  # type: ignore[no-untyped-call]
        stored[name] = (outcome.status.name, metrics, outcome.error)
    run.filesystem.create_dir(run.run_dir, recursive=True)
    with run.filesystem.open_output_stream(run.path(FILE)) as f:
        f.write(pickle.dumps(stored))


def read(run: RunStorage, trusted: bool = False) -> list[ReportRound]:
    """The stored outcomes, each as the round of its checkpoint (what
    :func:`compat_core.semantics.result.ledger_validated` matches checkpoints to); none when the
    run has no such file."""
    rounds = []
    for name, (status, metrics, error) in _read(run, warn=True).items():
        values = {key: pickled.load_stored(data, trusted) for key, data in metrics.items()}
        outcome = ValidationOutcome(CheckpointStatus.__members__[status], values, error)
        rounds.append(ReportRound(index=-1, reports=(), checkpoint_dir_name=name, validation=outcome))
    return rounds


def _read(run: RunStorage, warn: bool) -> dict[str, tuple[str, dict[str, bytes], str | None]]:
    """:func:`_load`, or {} when the file cannot be read (with a warning naming it when ``warn``)."""
    try:
        return _load(run)
    except Exception as exc:  # whatever the storage holds: the run's other results are still read
        if warn:
            warnings.warn(
                messages.stored_validations_unreadable(run.path(FILE), exc),
                CorruptStoredDataWarning,
                stacklevel=4,
            )
        return {}


def _load(run: RunStorage) -> dict[str, tuple[str, dict[str, bytes], str | None]]:
    """The file's outcomes, checked for the form :func:`write` gives them ({} when there is none).
    An ``OSError`` when the storage cannot be read; another error for a file of another form."""
    if not run.exists(FILE):
        return {}
    with run.filesystem.open_input_stream(run.path(FILE)) as f:
        stored = pickled.safe_loads(f.read())
    if not isinstance(stored, dict):
        raise ValueError(f"a {type(stored).__name__}, not a dict")
    for name, entry in stored.items():
        status, metrics, error = entry
        if not (
            isinstance(name, str)
            and status in CheckpointStatus.__members__
            and isinstance(metrics, dict)
            and all(isinstance(k, str) and isinstance(v, bytes) for k, v in metrics.items())
            and (error is None or isinstance(error, str))
        ):
            raise ValueError(f"an entry of another form for {name!r}")
    return stored
