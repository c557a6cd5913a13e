"""``compat.Result``: one result type for both engines."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from ray.air.result import Result as _V1Result
from ray.train import Checkpoint
from ray.train.v2.api.result import Result as _V2Result

from compat_core import messages, switch
from compat_core.files.storage import checkpoint_dir_name
from compat_core.migration import v1_only
from compat_core.migration.usage import Usage
from compat_core.releases import standins
from compat_core.semantics import stored
from compat_core.semantics.reads import KIND, ReadWatch, Watched
from compat_core.semantics.rounds import (
    CheckpointStatus,
    Metrics,
    ReportRound,
    checkpoint_status,
    merge_validation,
)

if TYPE_CHECKING:
    from compat_core.semantics.records import LedgerSnapshot
    from compat_core.switch import Mode


@dataclass
class ReportedCheckpoint(*standins.reported_checkpoint_bases()):  # type: ignore[misc]
    """A registered checkpoint, its metrics (validation merged) and its status (Ray's
    ``ReportedCheckpointStatus``): a subclass of Ray's ``ReportedCheckpoint`` (2.50+)."""

    checkpoint: Checkpoint
    metrics: dict[str, Any]
    status: CheckpointStatus


@dataclass(frozen=True)
class Load:
    """A field's value not made yet: ``function()`` makes it, at the field's first read."""

    function: Callable[[], Any]


class Deferred:
    """A dataclass field whose value may be a :class:`Load`: made at its first read, then
    kept (``worker_metrics_dataframe``: read from the run's file only when the user reads it).
    ``empty``: the field's value when not given (a new one each time: ``list``); None without."""

    def __init__(self, empty: Callable[[], Any] | None = None) -> None:
        self.empty = empty

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}_value"

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return _NOT_GIVEN if self.empty is not None else None  # the dataclass's default for the field
        value = obj.__dict__.get(self.slot)
        if isinstance(value, Load):
            value = obj.__dict__[self.slot] = value.function()
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        if value is _NOT_GIVEN:
            assert self.empty is not None
            value = self.empty()
        obj.__dict__[self.slot] = value


class _NotGiven:
    """The default of a ``Deferred(empty=...)`` field: its ``empty()`` is made instead."""


_NOT_GIVEN: Any = _NotGiven()


@dataclass
class Result(*standins.ray_bases(_V2Result, _V1Result)):  # type: ignore[misc]
    """What ``TorchTrainer.fit()`` returns, under either backend: a subclass of Ray's
    ``Result`` (V2's, itself V1's), so ``isinstance(result, ray.train.Result)`` holds.

    ``metrics``: v1, the last report (free-floating or not) with V1's auto-filled keys;
    v2, the latest checkpoint's metrics, or None without checkpoints.
    ``metrics_dataframe``: v1, one row per report of rank 0; v2, one row per retained
    checkpoint (V1-style rows with ``RunConfig(keep_v1_logs=True)``).
    ``worker_metrics_dataframe`` (compat only): every report of every worker, whatever
    called ``report`` (compat, ``ray.train``, ``ray.air.session``, Lightning's or
    Transformers' callback), with ``attempt``, ``world_rank`` and ``report_index`` columns
    (a retried run's attempts are 0, 1, ...), in both modes.
    ``v1_usage`` (compat only): the V1-only behaviours this run relied on.
    ``config``: V1's, ``{"train_loop_config": ...}`` when the trainer was given one, in both
    modes (raw V2 raises on it).
    ``report_rounds`` (compat only): every complete round of reports of every attempt, each worker's metrics,
    whether a checkpoint was attached and the validation outcome (see ``compat.testing``).
    """

    # Ray's fields, in Ray's order: ``Result(metrics=, checkpoint=, error=, path=)`` builds one as Ray's does.
    metrics: dict[str, Any] | None
    checkpoint: Checkpoint | None
    error: BaseException | None
    path: str
    # Watched: under V1 semantics the user's first read of a frame V2 would build otherwise is
    # recorded as a V1-only behaviour (compat_core.semantics.reads).
    metrics_dataframe: pd.DataFrame | None = Watched()
    best_checkpoints: list[tuple[Checkpoint, dict[str, Any]]] | None = None  # Ray's None when built without
    _storage_filesystem: Any = field(default=None, repr=False)
    return_value: Any = None
    # compat's own.
    backend: str = field(default_factory=lambda: switch.mode().backend)
    reported_checkpoints: list[ReportedCheckpoint] = field(default_factory=list)
    # Deferred: made when first read (from the run's stored reports after a fit()).
    worker_metrics_dataframe: pd.DataFrame | None = Deferred()
    v1_usage: list[Usage] = field(default_factory=list)
    # Deferred: made when first read (from the run's journal after a fit()).
    report_rounds: list[ReportRound] = Deferred(empty=list)  # type: ignore[assignment]
    raw: Any = field(default=None, repr=False)
    # None: a Result a user built, whose config is its metrics' "config", as Ray's V1 gives it.
    config: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.config is None:
            self.config = (self.metrics or {}).get("config")

    @property
    def filesystem(self) -> Any:
        """The ``pyarrow.fs.FileSystem`` that reaches ``path`` (local when none was given), as Ray's."""
        import pyarrow.fs

        return self._storage_filesystem or pyarrow.fs.LocalFileSystem()

    @classmethod
    def from_path(cls, path: Any, storage_filesystem: Any = None, *, trust_stored_objects: bool = False) -> Result:
        """The result of the run whose directory is ``path`` (``result.path``: V1's trial
        directory or V2's run directory, of either engine), by the semantics selected now.
        ``worker_metrics_dataframe``: every report of every ``fit()`` compat ran there (None
        for a run compat did not start); ``v1_usage`` is not stored with a run: [].

        Nothing read runs code, as Ray's own ``from_path`` (JSON and CSV): a reported value
        compat stored pickled comes back when it is plain (numbers, strings, containers, numpy
        arrays), else as a ``StoredValue`` naming its class. ``trust_stored_objects=True``
        loads every value, trusting whoever can write the storage as ``Trainer.restore`` does
        (compat extension)."""
        mode = switch.mode()
        run = stored.read_run(path, storage_filesystem, mode, trusted=trust_stored_objects)
        return assemble(
            mode,
            stored_parts(run),
            checkpoint=run.checkpoint,
            error=getattr(run.raw, "error", None),
            raw=run.raw,
            worker_metrics_dataframe=run.worker_metrics_dataframe,
            rounds=[],
            config=run.config,
            filesystem=getattr(run.raw, "_storage_filesystem", None) or storage_filesystem,
        )

    def __repr__(self) -> str:
        """As a dataclass's, without the fields made when read (printing them would make them)."""
        deferred = {name for name, value in type(self).__dict__.items() if isinstance(value, Deferred)}
        shown = [f for f in dataclasses.fields(self) if f.repr and f.name not in deferred]
        return f"Result({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in shown)})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its read watch (a callback into the process that ran ``fit()``), and
        with what it had not made yet made (a file read elsewhere may not be there)."""
        return {k: v.function() if isinstance(v, Load) else v for k, v in self.__dict__.items() if k != "_reads"}

    def read_later(self, name: str, function: Callable[[], Any]) -> None:
        """The deferred field ``name`` is ``function()``, made when first read."""
        if not isinstance(type(self).__dict__.get(name), Deferred):
            raise AttributeError(f"Result.{name} is not made when read")
        self.__dict__[f"_{name}_value"] = Load(function)

    def watch_reads(self, watch: ReadWatch | None) -> None:
        """Report the user's reads of V1-only parts to ``watch`` (``fit()`` sets it under V1)."""
        self.__dict__["_reads"] = watch

    def get_best_checkpoint(self, metric: str, mode: str) -> Checkpoint | None:
        """The checkpoint whose ``metric`` (``"a/b"`` reaches a nested value) is best; ``mode`` is
        ``"max"`` or ``"min"``. Raises as Ray's: ``RuntimeError`` without checkpoints or when
        none has ``metric``, ``ValueError`` for another ``mode``."""
        from compat_core.releases.adapters import unflattened_lookup

        if not self.best_checkpoints:
            raise RuntimeError(messages.RAY_NO_CHECKPOINT)
        if mode not in ["max", "min"]:
            raise ValueError(messages.ray_unsupported_mode(mode))
        scored = [(c, m) for c, m in self.best_checkpoints if unflattened_lookup(metric, m, default=None) is not None]
        if not scored:
            raise RuntimeError(
                messages.ray_invalid_metric(metric, (self.metrics or {}).keys(), sorted(self.best_checkpoints[-1][1]))
            )
        pick = max if mode == "max" else min
        return pick(scored, key=lambda pair: unflattened_lookup(metric, pair[1]))[0]

    def migration_report(self) -> str:
        """A readable list of the V1-only behaviours the run relied on, and of what it gives
        that V2 would give otherwise though the program has not read it yet."""
        watch: ReadWatch | None = self.__dict__.get("_reads")
        unread = watch is not None and watch.difference and all(u.kind != KIND for u in self.v1_usage)
        flipped = switch.Generation(self.backend) is switch.V2  # the flip: a run with V2's semantics
        if not self.v1_usage and not unread:
            if flipped:
                return "No V1-only behaviour used: this run gives what it would under V1."
            return "No V1-only behaviour used: this run behaves the same under V2."
        if flipped:
            lines = [
                "Changed by the flip: this run has V2's semantics and relied on behaviours V1 gives otherwise, "
                "worst first:"
            ]
        else:
            lines = ["V1-only behaviours this run relied on (they change when V2 is on), worst first:"]
        lines += v1_only.report_lines(self.v1_usage)
        if unread:
            assert watch is not None
            other = "from V1's" if flipped else "under V2"
            lines.append(f"  {KIND} [silent], not read yet: this result's metrics_dataframe differs {other}")
            lines.append(f"    {v1_only.message(KIND, watch.difference)}")
        lines.append(v1_only.REPORT_FOOTER)
        return "\n".join(lines)


_INT_COLUMNS = {  # what worker_rows adds to each row, but its timestamp
    "attempt": operator.attrgetter("attempt"),
    "world_rank": operator.attrgetter("rank"),
    "report_index": operator.attrgetter("index"),
}
_FIXED = (*_INT_COLUMNS, "timestamp")


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a frame of a million reports is built: every object
    built is freed by reference counting, and each collection would walk every record again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def worker_dataframe(records: list[Any]) -> pd.DataFrame | None:
    """``Result.worker_metrics_dataframe``: :func:`worker_rows` as a frame (None: no report).

    The frame ``pd.DataFrame(worker_rows(records))`` is (its columns in the order keys first
    appear, a key a report lacks as NaN), made from the reports' own metrics dicts without a
    merged copy of each (docs/performance.md: a million reports of 10 metrics)."""
    if not records:
        return None
    with _collector_paused():
        ordered = sorted(records, key=stored.REPORT_ORDER)
        # pandas orders the metrics' columns as they first appear; a row's dict would have the
        # first report's metrics, then the fixed keys, then the keys later reports add.
        frame = pd.DataFrame([r.metrics for r in ordered], index=pd.RangeIndex(len(ordered)))
        order = list(dict.fromkeys([*ordered[0].metrics, *_FIXED, *frame.columns]))
        # As a row's dict would have them: a metric of one of these names keeps its place, not its value.
        for column, field in _INT_COLUMNS.items():
            frame[column] = np.fromiter(map(field, ordered), dtype=np.int64, count=len(ordered))
        frame["timestamp"] = [r.timestamp for r in ordered]  # as the rows have it: float, or a stored run's
        return frame if list(frame.columns) == order else frame[order]


def ledger_validated(
    best_checkpoints: list[tuple[Checkpoint, dict[str, Any]]], rounds: list[ReportRound]
) -> tuple[list[tuple[Checkpoint, dict[str, Any]]], list[ReportedCheckpoint]]:
    """The engine's kept checkpoints with the outcome of the validation compat's ledger ran
    (its metrics merged in, its status), matched to rounds by checkpoint directory name."""
    by_dir = {r.checkpoint_dir_name: r for r in rounds if r.checkpoint_dir_name}
    best: list[tuple[Checkpoint, dict[str, Any]]] = []
    reported: list[ReportedCheckpoint] = []
    for checkpoint, metrics in best_checkpoints:
        round_ = by_dir.get(checkpoint_dir_name(checkpoint))
        merged = merge_validation(metrics, round_.validation) if round_ else dict(metrics)
        best.append((checkpoint, merged))
        reported.append(
            ReportedCheckpoint(checkpoint, merged, checkpoint_status(round_) if round_ else CheckpointStatus.COMMITTED)
        )
    return best, reported


def latest_checkpoint_metrics(
    best_checkpoints: list[tuple[Checkpoint, dict[str, Any]]], checkpoint: Checkpoint | None, metrics: Metrics | None
) -> Metrics | None:
    """V2's ``result.metrics``: the latest ``checkpoint``'s, as ``best_checkpoints`` holds them
    (validated); ``metrics`` when it is not kept there."""
    if checkpoint is None or metrics is None:
        return metrics
    kept = {checkpoint_dir_name(c): m for c, m in best_checkpoints}
    return kept.get(checkpoint_dir_name(checkpoint), metrics)


def last_report_validated(metrics: Metrics | None, rounds: list[ReportRound]) -> Metrics | None:
    """V1's ``result.metrics``: the last report's row, with its checkpoint's validation merged
    when it was a checkpoint's report (matched by the row's ``checkpoint_dir_name``)."""
    if metrics is None:
        return None
    name = str(metrics.get("checkpoint_dir_name"))
    last = next((r for r in reversed(rounds) if r.checkpoint_dir_name == name), None)
    return merge_validation(metrics, last.validation if last is not None else None)


def with_statuses(
    best_checkpoints: list[tuple[Checkpoint, dict[str, Any]]], statuses: dict[str, CheckpointStatus]
) -> list[ReportedCheckpoint]:
    """The kept checkpoints, each with the status ``statuses`` gives its directory (Ray's V2
    validation's, :func:`compat_core.semantics.validations.rays_statuses`), else ``COMMITTED``."""
    return [
        ReportedCheckpoint(c, m, statuses.get(checkpoint_dir_name(c), CheckpointStatus.COMMITTED))
        for c, m in best_checkpoints
    ]


@dataclass
class ResultParts:
    """What an engine works out of a run for its mode's semantics (the rest of a
    :class:`Result` is the same for every engine: :func:`build`)."""

    metrics: dict[str, Any] | None
    path: str
    metrics_dataframe: pd.DataFrame | None = None
    best_checkpoints: list[tuple[Checkpoint, dict[str, Any]]] = field(default_factory=list)
    reported_checkpoints: list[ReportedCheckpoint] = field(default_factory=list)
    # The ledger's rounds with every validation outcome the engine knows (None: as they are);
    # applied when ``Result.report_rounds`` is first read.
    revise_rounds: Callable[[list[ReportRound]], list[ReportRound]] | None = None


def stored_parts(run: stored.StoredRun) -> ResultParts:
    """A stored run's parts as ``fit()`` gave them: every kept checkpoint with its status
    (``reported_checkpoints``), and the validations compat's ledger ran merged as ``fit()`` merged
    them (Ray's files hold each checkpoint's reported metrics only)."""
    rounds = run.validation_rounds
    if not rounds:  # each kept checkpoint with the status Ray's files give it
        reported = with_statuses(run.best_checkpoints, run.rays_statuses)
        return ResultParts(run.metrics, run.path, run.metrics_dataframe, run.best_checkpoints, reported)
    frame = run.metrics_dataframe
    best, reported = ledger_validated(run.best_checkpoints, rounds)
    if run.metrics_of_latest_checkpoint:
        metrics = latest_checkpoint_metrics(best, run.checkpoint, run.metrics)
    else:
        metrics = last_report_validated(run.metrics, rounds)
    if run.rows_of_v1_logs:  # V1's rows: each checkpoint's row validated
        frame = validated_dataframe(frame, rounds)
    elif best:  # the kept checkpoints' rows, validated
        frame = pd.DataFrame([m for _, m in best])
    return ResultParts(metrics, run.path, frame, best, reported)


def build(
    mode: Mode,
    parts: ResultParts,
    snapshot: LedgerSnapshot,
    raw: Any,
    error: BaseException | None,
    config: dict[str, Any] | None = None,
) -> Result:
    """A ``fit()``'s :class:`Result`: the engine's ``parts``, Ray's result (``raw``; None after
    a failure) and what the ledger recorded (``snapshot``). Its ``report_rounds`` and
    ``worker_metrics_dataframe`` are made from the records when first read
    (:meth:`Result.read_later`: the snapshot reads them from the run's journal then; a fit reads
    the frame from the run's stored reports instead, once stored)."""
    result = assemble(
        mode,
        parts,
        checkpoint=raw.checkpoint if raw is not None else None,
        error=raw.error if raw is not None else error,
        raw=raw,
        worker_metrics_dataframe=None,
        rounds=[],
        return_value=snapshot.return_value,  # rank 0's, as V1 and V2 (2.5x) give; older V2 has none
        config=config,
        filesystem=getattr(raw, "_storage_filesystem", None),
    )
    revise = parts.revise_rounds
    result.read_later("report_rounds", lambda: revise(snapshot.rounds()) if revise else snapshot.rounds())
    result.read_later("worker_metrics_dataframe", lambda: worker_dataframe(snapshot.records))
    return result


def assemble(
    mode: Mode,
    parts: ResultParts,
    *,
    checkpoint: Checkpoint | None,
    error: BaseException | None,
    raw: Any,
    worker_metrics_dataframe: pd.DataFrame | None,
    rounds: list[ReportRound],
    return_value: Any = None,
    config: dict[str, Any] | None = None,
    filesystem: Any = None,
) -> Result:
    """The one place a :class:`Result` is made, for a ``fit()`` (:func:`build`) and for a run
    read back from its directory (:meth:`Result.from_path`)."""
    return Result(
        backend=mode.backend,
        metrics=parts.metrics,
        checkpoint=checkpoint,
        path=parts.path,
        error=error,
        metrics_dataframe=parts.metrics_dataframe,
        best_checkpoints=list(parts.best_checkpoints),
        reported_checkpoints=parts.reported_checkpoints,
        return_value=return_value,
        worker_metrics_dataframe=worker_metrics_dataframe,
        report_rounds=rounds,
        raw=raw,
        config=dict(config or {}),
        _storage_filesystem=filesystem,
    )


def validated_dataframe(frame: pd.DataFrame | None, rounds: list[ReportRound]) -> pd.DataFrame | None:
    """V1's dataframe with the metrics of the validations compat's ledger ran merged into
    the rows of their checkpoint."""
    validated = {
        r.checkpoint_dir_name: r.validation
        for r in rounds
        if r.checkpoint_dir_name and r.validation is not None and r.validation.status is CheckpointStatus.VALIDATED
    }
    if frame is None or "checkpoint_dir_name" not in frame or not validated:
        return frame  # nothing to merge: the engine's frame itself (a copy would double V1's frame)
    frame = frame.copy()
    added: dict[str, list[Any]] = {}  # new columns, built from the values: their own dtype
    for dir_name, outcome in validated.items():
        rows = frame["checkpoint_dir_name"] == dir_name
        for key, value in outcome.metrics.items():
            if key in frame and key not in added:
                frame.loc[rows, key] = value
                continue
            cells = added.setdefault(key, [None] * len(frame))
            for position in rows.to_numpy().nonzero()[0]:
                cells[position] = value
    for key, cells in added.items():
        # As pandas makes a column of these values anywhere (a hole is NaN, ints stay int64
        # when every row has one), so V1's frame types a validation metric as V2's does.
        frame[key] = pd.Series(cells, index=frame.index)
    return frame
