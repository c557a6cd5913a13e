"""``compat.Result.from_path(path)``: a run's result read back from its directory, for both
engines' directories, by the semantics selected now.

A directory is one of: V1's trial directory (``result.json``/``progress.csv`` and
``checkpoint_00000N``; Ray's V1 engine, or V1 semantics on V2's engine, which also leaves V2's
snapshot there), or V2's run directory (``checkpoint_manager_snapshot.json``; with V1's logs
when the run had ``keep_v1_logs``). Ray reads each kind itself (V1's and V2's
``Result.from_path``); compat picks what the semantics keeps:

* V1: ``metrics`` the last report (V1's row, auto-filled keys and all), ``metrics_dataframe``
  one row per report, ``best_checkpoints`` every checkpoint with its report's row. From a V2
  run directory without V1's logs only the checkpoints' metrics exist: those are used.
* V2: ``metrics`` the latest checkpoint's, ``metrics_dataframe`` one row per kept checkpoint
  (V1's rows for a ``keep_v1_logs`` run, as its ``fit()`` gave them).

Every worker's reports (``worker_metrics_dataframe``) are compat's own: each ``fit()`` stores
them in the run's directory when it ends (:mod:`compat_core.semantics.worker_reports`: one Arrow
file per fit; a restored run's after the earlier run's, and after those of a driver killed
before its ``fit()`` ended, read from that run ledger's journal).
"""

from __future__ import annotations

import operator
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow.fs as pafs

from compat_core import messages, switch
from compat_core.errors import ResultNotFoundError
from compat_core.files import pickled
from compat_core.files.storage import RunStorage, at
from compat_core.releases.standins import V2_SNAPSHOT, v2_result_from_path
from compat_core.semantics import validations, worker_reports
from compat_core.semantics.restore import CONFIG_FILE, STATE_FILE, v1_trials
from compat_core.semantics.v1_logs import AUTO_KEYS, PROGRESS_CSV, RESULT_JSON

REPORT_ORDER = operator.attrgetter("attempt", "index", "rank")  # the order of every worker's reports


def worker_rows(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Every worker's reports as rows ordered by (attempt, report_index, world_rank): what
    ``worker_metrics_dataframe`` is the frame of."""
    return [
        {**r.metrics, "attempt": r.attempt, "world_rank": r.rank, "report_index": r.index, "timestamp": r.timestamp}
        for r in sorted(records, key=REPORT_ORDER)
    ]


@dataclass(frozen=True)
class StoredRun:
    """What a run's directory holds of its result, read by the semantics selected now;
    :func:`compat_core.semantics.result.assemble` makes the :class:`~compat_core.semantics.result.Result`."""

    metrics: dict[str, Any] | None
    path: str
    metrics_dataframe: pd.DataFrame | None
    best_checkpoints: list[tuple[Any, dict[str, Any]]]
    # The validations compat's ledger ran, as the rounds of their checkpoints: fit() merged them.
    validation_rounds: list[Any]
    rays_statuses: dict[str, Any]  # those Ray's V2 validation ended (2.56+), by checkpoint directory
    metrics_of_latest_checkpoint: bool  # else the last report's row (V1's logs)
    rows_of_v1_logs: bool  # the frame's rows are V1's (else the kept checkpoints')
    checkpoint: Any
    raw: Any  # Ray's own Result of the directory (V1's when it has V1's logs)
    config: dict[str, Any]
    worker_metrics_dataframe: pd.DataFrame | None


def read_run(
    path: Any, storage_filesystem: Any = None, mode: switch.Mode | None = None, trusted: bool = False
) -> StoredRun:
    """The result of the run directory at ``path`` by ``mode``'s semantics (the selected one).
    Values compat pickled there are loaded only when plain (values, containers, numpy) unless
    ``trusted`` (:func:`compat_core.files.pickled.load_stored`): nothing read runs code otherwise."""
    mode = mode or switch.mode()
    run = at(path, storage_filesystem)
    has_logs = run.exists(RESULT_JSON) or run.exists(PROGRESS_CSV)
    has_snapshot = run.exists(V2_SNAPSHOT)
    if not has_logs and not has_snapshot:
        raise ResultNotFoundError(messages.result_not_found(_rays_words(run, mode), str(path), _found(run)))
    v1 = _v1_result(run, trusted) if has_logs else None
    v2 = _v2_result(run) if has_snapshot else None
    metrics: dict[str, Any] | None
    if mode.keeps_every_report and v1 is not None:
        metrics, frame, best, checkpoint = dict(v1.metrics), v1.metrics_dataframe, v1.best_checkpoints, v1.checkpoint
    elif v2 is not None:
        metrics, checkpoint = v2.metrics, v2.checkpoint
        best = list(v2.best_checkpoints or [])
        frame = v1.metrics_dataframe if v1 is not None else v2.metrics_dataframe  # keep_v1_logs: V1's rows
    else:  # V2 semantics over V1's trial directory: the checkpoints' reports
        assert v1 is not None
        best = [(c, _user_metrics(m)) for c, m in v1.best_checkpoints or []]
        metrics = best[-1][1] if best else None
        checkpoint = best[-1][0] if best else None
        frame = pd.DataFrame([m for _, m in best]) if best else None
    return StoredRun(
        metrics=metrics,
        path=run.run_dir,
        metrics_dataframe=frame,
        best_checkpoints=list(best or []),
        validation_rounds=validations.read(run, trusted),
        rays_statuses=validations.rays_statuses(run) if has_snapshot else {},
        metrics_of_latest_checkpoint=not (mode.keeps_every_report and v1 is not None),
        rows_of_v1_logs=v1 is not None and (mode.keeps_every_report or v2 is not None),
        checkpoint=checkpoint,
        raw=v1 if v1 is not None else v2,
        config=_config(run, v1, trusted),
        worker_metrics_dataframe=worker_reports.read(run, trusted),
    )


ERROR_PICKLE, ERROR_TEXT = "error.pkl", "error.txt"  # V1's trial directory, after a failure


def _v1_result(run: RunStorage, trusted: bool) -> Any:
    """Ray's V1 ``Result.from_path`` of ``run``; without ``trusted``, through a view of the
    filesystem without the run's ``error.pkl`` (Ray would unpickle it), its ``error`` then a
    :class:`compat_core.files.pickled.StoredError` holding ``error.txt``."""
    from ray.air.result import Result as V1Result
    from ray.train import Checkpoint

    if trusted or not run.exists(ERROR_PICKLE):
        return V1Result.from_path(run.run_dir, storage_filesystem=run.filesystem)
    view = pafs.PyFileSystem(_Without(run.filesystem, run.path(ERROR_PICKLE)))
    result = V1Result.from_path(run.run_dir, storage_filesystem=view)
    real = run.filesystem
    if result.checkpoint is not None:
        result.checkpoint = Checkpoint(result.checkpoint.path, filesystem=real)
    result.best_checkpoints = [(Checkpoint(c.path, filesystem=real), m) for c, m in result.best_checkpoints or []]
    result._storage_filesystem = real
    result.error = pickled.StoredError(run.read_text(ERROR_TEXT) or f"(the run's {ERROR_PICKLE}, not unpickled)")
    return result


class _Without(pafs.FileSystemHandler):  # type: ignore[misc]  # pyarrow is untyped
    """A ``pyarrow`` filesystem as ``base`` is, but for one file it says is not there."""

    def __init__(self, base: Any, hidden: str) -> None:
        self.base, self.hidden = base, hidden

    def _info(self, info: Any) -> Any:
        return pafs.FileInfo(info.path, pafs.FileType.NotFound) if info.path == self.hidden else info

    def get_type_name(self) -> str:
        return f"compat-view-of-{self.base.type_name}"

    def get_file_info(self, paths: Any) -> Any:
        return [self._info(i) for i in self.base.get_file_info(paths)]

    def get_file_info_selector(self, selector: Any) -> Any:
        return [i for i in self.base.get_file_info(selector) if i.path != self.hidden]

    def open_input_stream(self, path: str) -> Any:
        if path == self.hidden:
            raise FileNotFoundError(path)
        return self.base.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        if path == self.hidden:
            raise FileNotFoundError(path)
        return self.base.open_input_file(path)

    def normalize_path(self, path: str) -> str:
        return str(self.base.normalize_path(path))

    def equals(self, other: Any) -> bool:
        return self is other

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise OSError("compat reads a run through this view; it writes nothing")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only


def _v2_result(run: RunStorage) -> Any:
    return v2_result_from_path(run.run_dir, run.filesystem)


def _user_metrics(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in AUTO_KEYS and not k.startswith("config/")}


def _config(run: RunStorage, v1: Any, trusted: bool) -> dict[str, Any]:
    """V1's ``Result.config``: the ``config`` of its rows; for a V2 run, the config the trainer's
    ``fit()`` stored beside its restore state (each value loaded as
    :func:`compat_core.files.pickled.load_stored` does); a run of an earlier compat has only the
    restore state, read when ``trusted``."""
    if v1 is not None:
        config = v1.metrics.get("config") if v1.metrics else None
        return dict(config) if isinstance(config, dict) else {}
    if run.exists(CONFIG_FILE):
        with run.filesystem.open_input_stream(run.path(CONFIG_FILE)) as f:
            stored = pickled.load_stored(f.read(), trusted=False)  # str -> bytes: plain whatever the storage
        if not isinstance(stored, dict):
            return {}
        return {str(k): pickled.load_stored(v, trusted) for k, v in stored.items() if isinstance(v, bytes)}
    if trusted and run.exists(STATE_FILE):
        with run.filesystem.open_input_stream(run.path(STATE_FILE)) as f:
            arguments = pickled.loads(f.read()).arguments
        if "train_loop_config" in arguments:
            return {"train_loop_config": arguments["train_loop_config"]}
    return {}


def _rays_words(run: RunStorage, mode: switch.Mode) -> str:
    """The first line of raw Ray's own error for the same path, in the same mode."""
    if mode.keeps_every_report:
        if not run.exists():
            return f"Trial folder {run.run_dir} doesn't exist!"
        return (
            f"Failed to restore the Result object: Neither {RESULT_JSON} nor {PROGRESS_CSV} exists in the trial folder!"
        )
    if not run.exists():
        return f"Experiment folder {run.run_dir} doesn't exist."
    return (
        f"Failed to restore the Result object: {V2_SNAPSHOT} doesn't exist in the experiment folder. Make "
        "sure that this is an output directory created by a Ray Train run."
    )


def _found(run: RunStorage) -> str:
    """What ``run`` holds, for the error of a path without a result."""
    if not run.exists():
        return "nothing: the path does not exist"
    trials = sorted(posixpath.basename(e.path) for e in v1_trials(run))
    if trials:
        return f"an experiment directory: pass one of its trial directories ({', '.join(trials)})"
    names = sorted(posixpath.basename(e.path) for e in run.entries())
    if not names:
        return "an empty directory"
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f"no {RESULT_JSON}, {PROGRESS_CSV} or {V2_SNAPSHOT} (it has {shown})"
