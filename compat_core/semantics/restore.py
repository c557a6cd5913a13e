"""Job-level restore, V1's ``Trainer.restore(path)``/``Trainer.can_restore(path)``, on both engines.

V1 pickles the trainer's class and constructor arguments into the experiment directory
(``trainer.pkl``) when ``fit()`` starts, so that after the driver died a new driver can build
the same trainer from the path alone and resume the run from its latest checkpoint. compat
does the same with its own trainer (``compat_trainer.pkl``, beside Ray's), whichever engine
runs it: the arguments are the user's (the training function as written, not compat's wrapper
of it, which holds the dead driver's run ledger), and datasets are kept as names only, to be
given again (as V1 asks).

What a restored ``fit()`` does is the engine's: Ray's own restore on V1's engine; on V2's,
a run of the same name and storage, which V2 resumes from its latest checkpoint.
"""

from __future__ import annotations

import pickle
import posixpath
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

from compat_core import messages
from compat_core.errors import RestoreError
from compat_core.files import pickled
from compat_core.files.storage import V1_CHECKPOINT, RunStorage, at, split
from compat_core.releases.standins import V2_SNAPSHOT, v2_result_from_path
from compat_core.semantics.v1_logs import PROGRESS_CSV, RESULT_JSON

STATE_FILE = "compat_trainer.pkl"
# The run's config (train_loop_config) apart from the trainer, each value pickled on its own, for
# Result.from_path's ``config``: read without trusting the storage (pickled.safe_loads), where
# STATE_FILE holds the training function and classes, code only a restore trusts itself to load.
CONFIG_FILE = "compat_config.pkl"
RAY_V1_STATE = "trainer.pkl"  # raw Ray V1's, for a run started before its imports moved to compat


@dataclass
class TrainerState:
    """A trainer as ``fit()`` started it: its class, its constructor arguments (datasets as
    names), for V1 semantics on V2's engine the trial directory the run writes to, and the
    run ledgers' journals whose reports may not be stored with the run yet (``(host, path)``:
    a driver killed before its ``fit()`` ended left them on its node's disk)."""

    trainer_class: type
    arguments: dict[str, Any]
    trial: dict[str, str] = field(default_factory=dict)
    journals: tuple[tuple[str, str], ...] = ()  # a class attribute: a state pickled without it has ()


@dataclass(frozen=True)
class RestoreSpec:
    """What a restored trainer's ``fit()`` resumes: the experiment directory (``path`` as
    given, and as ``RunConfig(storage_path, name)`` name it) and its state."""

    experiment: RunStorage
    path: str
    filesystem: Any
    state: TrainerState
    storage_path: str
    name: str


def save(experiment: RunStorage, state: TrainerState) -> None:
    """Write ``state`` into the experiment directory (when ``fit()`` starts)."""
    from ray import cloudpickle

    arguments = dict(state.arguments)
    if arguments.get("datasets"):
        arguments["datasets"] = dict.fromkeys(arguments["datasets"])  # names only: given again on restore
    state = TrainerState(state.trainer_class, arguments, state.trial, state.journals)
    data = cloudpickle.dumps(state)  # type: ignore[no-untyped-call]  # Ray's cloudpickle is untyped
    experiment.filesystem.create_dir(experiment.run_dir, recursive=True)
    with experiment.filesystem.open_output_stream(experiment.path(STATE_FILE)) as f:
        f.write(data)
    if "train_loop_config" in arguments:
        config = {"train_loop_config": cloudpickle.dumps(arguments["train_loop_config"])}  # type: ignore[no-untyped-call]
        with experiment.filesystem.open_output_stream(experiment.path(CONFIG_FILE)) as f:
            f.write(cloudpickle.dumps(config))  # type: ignore[no-untyped-call]
    if state.trial and not experiment.exists(TUNE_STATE):  # V1 semantics on V2's engine
        with experiment.filesystem.open_output_stream(experiment.path(TUNE_STATE)) as f:
            f.write(pickle.dumps(_NotATuneExperiment(state.trainer_class.__name__)))


def can_restore(path: Any, filesystem: Any = None) -> bool:
    """Whether ``path`` is an experiment directory a trainer's ``fit()`` started in."""
    experiment = at(path, filesystem)
    return experiment.exists(STATE_FILE) or experiment.exists(RAY_V1_STATE)


def load(path: Any, filesystem: Any = None) -> RestoreSpec:
    """The state ``fit()`` left at ``path``, or a :class:`RestoreError` naming what is there."""
    experiment = at(path, filesystem)
    if experiment.exists(STATE_FILE):
        with experiment.filesystem.open_input_stream(experiment.path(STATE_FILE)) as f:
            state = pickled.loads(f.read())
    elif experiment.exists(RAY_V1_STATE):
        with experiment.filesystem.open_input_stream(experiment.path(RAY_V1_STATE)) as f:
            ray_class, arguments = pickled.loads(f.read())
        state = TrainerState(ray_class, dict(arguments))
    else:
        raise RestoreError(messages.nothing_to_restore(str(path), _found(experiment)))
    storage_path, name = split(path, filesystem)
    return RestoreSpec(experiment, str(path), filesystem, state, storage_path, name)


TUNE_STATE = "tuner.pkl"  # Ray's V1 engine's experiment state, which its own restore reads


class _NotATuneExperiment:
    """The ``tuner.pkl`` of a run of V1 semantics on V2's engine (docs/compatibility.md §28).

    V1's engine runs every ``fit()`` as a Tune experiment and leaves Tune's ``tuner.pkl``
    in its directory, so V1-era code may ask ``tune.Tuner.can_restore(path)`` and call
    ``tune.Tuner.restore(path, trainable=trainer)`` on a trainer's run. V2's engine runs no
    Tune experiment, and Tune cannot resume what it did not run: this file answers
    ``can_restore`` as V1 does, and unpickling it (the first thing ``Tuner.restore`` does)
    raises a :class:`RestoreError` naming the call that resumes the run.
    """

    def __init__(self, trainer: str) -> None:
        self.trainer = trainer

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return _not_a_tune_experiment, (self.trainer,)


def _not_a_tune_experiment(trainer: str) -> None:
    raise RestoreError(messages.tuner_restore_of_a_v2_engine_run(trainer))


def has_tune_state(experiment: RunStorage) -> bool:
    """Ray's V1 engine ran this experiment: its own restore can resume it (not the
    ``tuner.pkl`` compat leaves on V2's engine, which Tune cannot read)."""
    if not experiment.exists(TUNE_STATE):
        return False
    with experiment.filesystem.open_input_stream(experiment.path(TUNE_STATE)) as f:
        return _not_a_tune_experiment.__name__.encode() not in f.read()


def v1_trials(experiment: RunStorage) -> list[pafs.FileInfo]:
    """The experiment's V1 trial directories (V1's engine's, or compat's on V2's engine):
    its subdirectories with V1's logs."""
    return [
        entry
        for entry in experiment.entries()
        if entry.type == pafs.FileType.Directory and at(entry.path, experiment.filesystem).exists(RESULT_JSON)
    ]


def latest_v1_trial(experiment: RunStorage) -> str | None:
    """The newest V1 trial directory of the experiment, by modification time."""
    trials = v1_trials(experiment)
    if not trials:
        return None
    return posixpath.basename(max(trials, key=lambda e: (e.mtime_ns or 0, e.path)).path)


def numbered_checkpoints(directory: RunStorage) -> list[tuple[int, str]]:
    """V1's ``checkpoint_00000N`` directories in a trial directory: ``(N, path)``, in order."""
    return sorted(
        (int(match.group(1)), entry.path)
        for entry in directory.entries()
        if entry.type == pafs.FileType.Directory and (match := V1_CHECKPOINT.fullmatch(posixpath.basename(entry.path)))
    )


def latest_checkpoint(directory: RunStorage) -> Any:
    """The highest-numbered ``checkpoint_00000N`` in a V1 trial directory, as a Checkpoint."""
    from ray.train import Checkpoint

    numbered = numbered_checkpoints(directory)
    return Checkpoint(path=numbered[-1][1], filesystem=directory.filesystem) if numbered else None


def start_checkpoint(experiment: RunStorage) -> Any:
    """Where a restored run starts when its engine cannot resume the stored run itself (it
    was written by the other engine: the switch flipped between the two drivers): the
    latest checkpoint, from V2's snapshot or from the newest V1 trial."""
    if experiment.exists(V2_SNAPSHOT):
        return v2_result_from_path(experiment.run_dir, experiment.filesystem).checkpoint
    trial = latest_v1_trial(experiment)
    return latest_checkpoint(at(experiment.path(trial), experiment.filesystem)) if trial else None


def trial_of(name: str) -> dict[str, str]:
    """A V1 trial directory's name and id (``<Trainer>_<id>_00000_0_<date>``: ``<id>_00000``)."""
    parts = name.split("_")
    return {"name": name, "id": "_".join(parts[1:3])} if len(parts) > 3 else {"name": name}


def _found(experiment: RunStorage) -> str:
    """What ``experiment`` holds, in words, for the error of a path that cannot be restored."""
    if not experiment.exists():
        return "nothing: the path does not exist"
    info = experiment.filesystem.get_file_info(experiment.run_dir)
    if info.type != pafs.FileType.Directory:
        return "a file, not a directory"
    names = sorted(posixpath.basename(e.path) for e in experiment.entries())
    if not names:
        return "an empty directory"
    if V2_SNAPSHOT in names:
        return f"a V2 run ({V2_SNAPSHOT}) that compat did not start"
    if any(n in names for n in (RESULT_JSON, PROGRESS_CSV, "params.json")):
        return "a trial directory (pass its parent, the experiment directory)"
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f"{len(names)} entries ({shown}) but no {STATE_FILE} or {RAY_V1_STATE}"
