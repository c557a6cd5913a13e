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

import posixpath
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

from compat_core import messages
from compat_core.errors import RestoreError
from compat_core.storage import RunStorage, at, split

__all__ = ["RestoreError", "RestoreSpec", "TrainerState", "can_restore", "load", "save"]

STATE_FILE = "compat_trainer.pkl"
RAY_V1_STATE = "trainer.pkl"  # raw Ray V1's, for a run started before its imports moved to compat
V2_SNAPSHOT = "checkpoint_manager_snapshot.json"


@dataclass
class TrainerState:
    """A trainer as ``fit()`` started it: its class, its constructor arguments (datasets as
    names), and, for V1 semantics on V2's engine, the trial directory the run writes to."""

    trainer_class: type
    arguments: dict[str, Any]
    trial: dict[str, str] = field(default_factory=dict)


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
    state = TrainerState(state.trainer_class, arguments, state.trial)
    data = cloudpickle.dumps(state)  # type: ignore[no-untyped-call]  # Ray's cloudpickle is untyped
    experiment.filesystem.create_dir(experiment.run_dir, recursive=True)
    with experiment.filesystem.open_output_stream(experiment.path(STATE_FILE)) as f:
        f.write(data)


def can_restore(path: Any, filesystem: Any = None) -> bool:
    """Whether ``path`` is an experiment directory a trainer's ``fit()`` started in."""
    experiment = at(path, filesystem)
    return experiment.exists(STATE_FILE) or experiment.exists(RAY_V1_STATE)


def load(path: Any, filesystem: Any = None) -> RestoreSpec:
    """The state ``fit()`` left at ``path``, or a :class:`RestoreError` naming what is there."""
    from ray import cloudpickle

    experiment = at(path, filesystem)
    if experiment.exists(STATE_FILE):
        with experiment.filesystem.open_input_stream(experiment.path(STATE_FILE)) as f:
            state = cloudpickle.loads(f.read())
    elif experiment.exists(RAY_V1_STATE):
        with experiment.filesystem.open_input_stream(experiment.path(RAY_V1_STATE)) as f:
            ray_class, arguments = cloudpickle.loads(f.read())
        state = TrainerState(ray_class, dict(arguments))
    else:
        raise RestoreError(messages.nothing_to_restore(str(path), _found(experiment)))
    storage_path, name = split(path, filesystem)
    return RestoreSpec(experiment, str(path), filesystem, state, storage_path, name)


def _found(experiment: RunStorage) -> str:
    """What ``experiment`` holds, in words, for the error of a path that cannot be restored."""
    if not experiment.exists():
        return "nothing: the path does not exist"
    info = experiment.filesystem.get_file_info(experiment.run_dir)
    if info.type != pafs.FileType.Directory:
        return "a file, not a directory"
    entries = experiment.filesystem.get_file_info(pafs.FileSelector(experiment.run_dir, recursive=False))
    names = sorted(posixpath.basename(e.path) for e in entries)
    if not names:
        return "an empty directory"
    if V2_SNAPSHOT in names:
        return f"a V2 run ({V2_SNAPSHOT}) that compat did not start"
    if any(n in names for n in ("result.json", "progress.csv", "params.json")):
        return "a trial directory (pass its parent, the experiment directory)"
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f"{len(names)} entries ({shown}) but no {STATE_FILE} or {RAY_V1_STATE}"
