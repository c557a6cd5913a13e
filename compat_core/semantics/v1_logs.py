"""V1's run logs, ``progress.csv`` and ``result.json``, on the run's filesystem.

Ray V1 (Tune's CSV logger) freezes the CSV columns at the first report, so a key first
reported later is missing from every row. :func:`repair_progress_csv` rewrites the CSV
from ``result.json`` with every key. :class:`LiveV1Logs` writes both files as each round
completes, for compat's ``keep_v1_logs`` opt-in under v2 and V1's semantics on V2's engine,
with the rows :class:`V1Rows` makes (V1's auto-filled keys) in the run ledger, once per round;
the driver reads them back (:func:`read_logged`), never makes them again.

A target is a :class:`compat_core.files.storage.RunStorage` or a local directory.
"""

from __future__ import annotations

import collections
import contextlib
import csv
import io
import json
import math
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow.fs as pafs

from compat_core.files import private
from compat_core.files.storage import RunStorage
from compat_core.releases.standins import node_ip
from compat_core.semantics.records import DeliveredRound, Record, round_dir_name

PROGRESS_CSV = "progress.csv"
RESULT_JSON = "result.json"

Target = RunStorage | str | os.PathLike[str]

# The keys V1 adds to every report (Tune's auto-filled results; ``experiment_tag`` in
# ``result.metrics`` only).
AUTO_KEYS = frozenset(
    {"timestamp", "checkpoint_dir_name", "should_checkpoint", "done", "training_iteration", "trial_id", "date",
     "time_this_iter_s", "time_total_s", "pid", "hostname", "node_ip", "config", "time_since_restore",
     "iterations_since_restore", "experiment_tag"}
)  # fmt: skip


def storage_of(target: Target) -> RunStorage:
    if isinstance(target, RunStorage):
        return target
    return RunStorage(pafs.LocalFileSystem(), os.path.abspath(os.fspath(target)))


def flatten(row: Mapping[str, Any], prefix: str = "", delimiter: str = "/") -> dict[str, Any]:
    """Tune's ``flatten_dict``: nested dicts become ``a/b`` columns, and an empty one none
    (a run given no ``train_loop_config`` has no ``config`` column, as raw V1's)."""
    flat: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{delimiter}{key}" if prefix else key
        if isinstance(value, Mapping):
            flat.update(flatten(value, name, delimiter))
        else:
            flat[name] = value
    return flat


def columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every key of every row, in order of first appearance."""
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    return list(seen)


def json_line(row: Mapping[str, Any]) -> str:
    """One row as a line of JSON, as V1's ``result.json`` holds it (a value JSON cannot
    hold: its ``tolist()``, else its ``str``)."""
    return json.dumps(dict(row), default=_json_default) + "\n"


def _out(target: Target | StagedLogs) -> RunStorage | StagedLogs:
    return target if isinstance(target, StagedLogs) else storage_of(target)


def iter_json_lines(target: Target | StagedLogs, name: str) -> Generator[dict[str, Any], None, None]:
    """The rows of a file of :func:`json_line` lines, read as they come (none when it does not
    exist); ``target`` may be :class:`StagedLogs` (the copy on this node)."""
    for line in _out(target).read_lines(name):
        if line.strip():
            yield json.loads(line)


def read_json_lines(target: Target | StagedLogs, name: str) -> list[dict[str, Any]]:
    return list(iter_json_lines(target, name))


def read_result_json(target: Target | StagedLogs) -> list[dict[str, Any]]:
    return read_json_lines(target, RESULT_JSON)


def repair_progress_csv(target: Target | StagedLogs, every: Sequence[str] | None = None) -> bool:
    """Rewrite ``progress.csv`` from ``result.json`` with every key (``every``: the flattened
    keys of every row, in order of first appearance, when the caller has them), unless its
    header has them all already. True if it changed. Streamed: no row is held."""
    out = _out(target)
    every = list(every) if every is not None else columns(flatten(r) for r in iter_json_lines(out, RESULT_JSON))
    if not every:
        with contextlib.closing(iter_json_lines(out, RESULT_JSON)) as rows:
            if next(rows, None) is None:
                return False  # no row: no CSV
    if csv_header(out) == every:
        return False
    out.write_lines(PROGRESS_CSV, _csv_lines(iter_json_lines(out, RESULT_JSON), every))
    return True


def csv_header(target: Target | StagedLogs) -> list[str] | None:
    """The columns ``progress.csv`` has (None when it does not exist or is empty)."""
    with contextlib.closing(_out(target).read_lines(PROGRESS_CSV)) as lines:
        first = next(lines, None)
    return next(csv.reader([first])) if first else None


def _csv_lines(rows: Iterable[Mapping[str, Any]], fieldnames: list[str], header: bool = True) -> Iterator[str]:
    """The CSV of ``rows`` (header first, unless ``header`` is false), a batch of lines at a time."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fieldnames, restval="", extrasaction="ignore")
    if header:
        writer.writeheader()
    for row in rows:
        writer.writerow(flatten(row))
        if buffer.tell() > 1 << 16:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


@dataclass
class LoggedRows:
    """What the driver reads back of V1's rows from ``result.json`` (one pass; memory holds the
    checkpoints' rows, not every row): the rows of this ``fit()`` (after the ``skip`` an earlier
    ``fit()`` of a restored trial wrote), its last, and each checkpoint's by its directory's
    name; and the flattened keys of every row in the file, for :func:`repair_progress_csv`."""

    count: int = 0
    last: dict[str, Any] | None = None
    by_checkpoint: dict[str, dict[str, Any]] = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)


def read_logged(target: Target | StagedLogs, skip: int = 0) -> LoggedRows:
    logged = LoggedRows()
    seen: dict[str, None] = {}
    for position, row in enumerate(iter_json_lines(target, RESULT_JSON)):
        seen.update(dict.fromkeys(flatten(row)))
        if position < skip:
            continue
        logged.count += 1
        logged.last = row
        if row.get("checkpoint_dir_name"):
            logged.by_checkpoint[str(row["checkpoint_dir_name"])] = row
    logged.columns = list(seen)
    return logged


def count_rows(result_json: str | None) -> int:
    """How many rows a ``result.json``'s text holds."""
    return sum(1 for line in (result_json or "").splitlines() if line.strip())


def set_aside(storage: RunStorage) -> None:
    """An earlier run's logs in this run's directory renamed to ``progress.csv.N`` and
    ``result.json.N``: they never look like this run's."""
    for name in (PROGRESS_CSV, RESULT_JSON):
        storage.move_aside(name)


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


# The keys :meth:`V1Rows.row` fills in over a metric of the same name (``should_checkpoint``
# too, on a checkpoint's row).
ROW_KEYS = AUTO_KEYS - {"experiment_tag", "should_checkpoint"}


def with_values(logged: Mapping[str, Any], metrics: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """A row as ``result.json`` holds it, with rank 0's ``metrics`` and the run's ``config`` as
    reported (JSON keeps neither a tuple nor an array, nor a key that is not a string): the row
    :meth:`V1Rows.row` made, keys in its order."""
    filled = ROW_KEYS | ({"should_checkpoint"} if logged.get("checkpoint_dir_name") is not None else set())
    row = dict(metrics)
    row.update((key, value) for key, value in logged.items() if key in filled)
    row["config"] = dict(config)
    return row


class V1Rows:
    """Makes rank 0's rows with V1's auto-filled keys, one round at a time, as V1's session
    adds them. ``training_iteration`` and ``time_total_s`` run across attempts;
    ``iterations_since_restore`` and ``time_since_restore`` start again at each attempt.
    The run ledger owns the one that numbers a run's rounds (``RunLedger(rows=...)``)."""

    def __init__(self, *, start_time: float, config: Mapping[str, Any], trial_id: str) -> None:
        self.start_time = start_time
        self.config = dict(config)
        self.trial_id = trial_id
        self.node_ip = node_ip()
        self._iteration = 0
        self._previous = start_time
        self._attempt: int | None = None
        self._attempt_start = start_time
        self._since_restore = 0

    def row(self, record: Record, checkpoint_dir_name: str | None) -> dict[str, Any]:
        ts = max(record.timestamp, self._previous)  # clocks of two workers may disagree
        if record.attempt != self._attempt:
            self._attempt = record.attempt
            self._attempt_start = self._previous if record.attempt else self.start_time
            self._since_restore = 0
        self._iteration += 1
        self._since_restore += 1
        row = dict(record.metrics)
        row.update(
            timestamp=int(ts),
            checkpoint_dir_name=checkpoint_dir_name,
            done=False,
            training_iteration=self._iteration,
            trial_id=self.trial_id,
            date=datetime.fromtimestamp(ts).strftime("%Y-%m-%d_%H-%M-%S"),
            time_this_iter_s=ts - self._previous,
            time_total_s=ts - self.start_time,
            pid=record.pid if record.pid is not None else os.getpid(),
            hostname=record.hostname or "",
            node_ip=self.node_ip,
            config=dict(self.config),
            time_since_restore=ts - self._attempt_start,
            iterations_since_restore=self._since_restore,
        )
        if checkpoint_dir_name is not None:
            row["should_checkpoint"] = True
        self._previous = ts
        return row

    def continue_after(self, result_json: str) -> None:
        """A restored trial numbers on from its latest checkpoint, as V1's does: the next row's
        ``training_iteration`` follows the one of the last row with a checkpoint in the
        trial's ``result.json`` (none: from the start)."""
        for line in reversed(result_json.splitlines()):
            row = json.loads(line) if line.strip() else {}
            if row.get("checkpoint_dir_name"):
                self._iteration = int(row.get("training_iteration", 0))
                return

    def finished_without_reports(self, end_time: float) -> dict[str, Any]:
        """V1's ``result.metrics`` for a run that finished without a report: the trial's
        auto-filled keys only (no ``training_iteration``), ``done`` set."""
        return {
            "trial_id": self.trial_id,
            "date": datetime.fromtimestamp(end_time).strftime("%Y-%m-%d_%H-%M-%S"),
            "timestamp": int(end_time),
            "pid": os.getpid(),
            "hostname": socket.gethostname(),
            "node_ip": self.node_ip,
            "config": dict(self.config),
            "done": True,
        }

    def round_row(self, round_: Mapping[int, Record]) -> dict[str, Any]:
        return self.row(round_[0], round_dir_name(dict(round_)))


def sync_period_s(sync_config: Any) -> float:
    """How often V1 syncs a trial's logs to an object store: ``SyncConfig.sync_period`` as the
    run gives it, else Ray's default."""
    period = getattr(sync_config, "sync_period", None)
    if period is None:
        from ray.train import SyncConfig

        period = SyncConfig().sync_period
    return float(period)


# Where the copies go: the user's private state directory's ``staging`` (compat_core.files.private);
# set (tests): that directory, which must be private too.
STAGING_DIR: str | None = None


def staging_dir() -> str:
    """:data:`STAGING_DIR`, else ``staging`` in the user's private state directory; another
    user's or a shared one is refused (:class:`compat_core.errors.UnsafeStateDirectoryError`)."""
    return private.state_dir("staging", STAGING_DIR)


class StagedLogs:
    """V1's logs of a run whose filesystem has no appends (an object store), as V1 keeps them
    there: each row appended to a copy on this node (the ledger host's, the driver's), and the
    copies uploaded whole, streamed, once ``period_s`` passed since the last upload (V1's
    ``SyncConfig.sync_period``) and when the run ends (:meth:`upload`). A row costs a local
    append, not an upload of the whole file; memory holds no row.

    The copies are in ``<staging_dir()>/<key>`` (``key``: the run's, the same in a restarted ledger
    host, which appends after the rows the lost one wrote); a file the run's directory already
    holds (a restored trial's) is downloaded first. They are removed once uploaded at the end."""

    def __init__(self, storage: RunStorage, key: str, period_s: float, clock: Callable[[], float] = time.monotonic):
        self.storage = storage
        self.local = os.path.join(staging_dir(), key)
        self.period_s = period_s
        self._clock = clock
        self._uploaded_at = clock()
        self._changed: set[str] = set()

    def _copy(self, name: str) -> str:
        path = os.path.join(self.local, name)
        if not os.path.lexists(path):
            private.ensure_private(self.local)
            if self.storage.exists(name):
                pafs.copy_files(self.storage.path(name), path, source_filesystem=self.storage.filesystem,
                                destination_filesystem=pafs.LocalFileSystem())  # fmt: skip
        return path

    def read_text(self, name: str) -> str | None:
        path = self._copy(name)
        if not os.path.exists(path):
            return None
        with private.open_file(path) as f:
            return f.read()

    def read_lines(self, name: str) -> Generator[str, None, None]:
        path = self._copy(name)
        if os.path.exists(path):
            with private.open_file(path) as f:
                yield from f

    def write_text(self, name: str, text: str) -> None:
        self.write_lines(name, [text])

    def write_lines(self, name: str, lines: Iterable[str]) -> None:
        with private.open_file(self._copy(name), "w") as f:
            f.writelines(lines)
        self._changed_now(name)

    def append_text(self, name: str, text: str) -> None:
        with private.open_file(self._copy(name), "a") as f:
            f.write(text)
        self._changed_now(name)

    def _changed_now(self, name: str) -> None:
        self._changed.add(name)
        if self._clock() - self._uploaded_at >= self.period_s:
            self.upload()

    def upload(self, *, last: bool = False) -> None:
        """Upload every copy changed since the last upload; ``last``: every copy (a lost ledger
        host's changes too), then remove them."""
        names = set(self._changed)
        if last and os.path.isdir(self.local):
            names.update(os.listdir(self.local))
        if names:
            self.storage.filesystem.create_dir(self.storage.run_dir, recursive=True)
        for name in sorted(names):
            pafs.copy_files(os.path.join(self.local, name), self.storage.path(name),
                            source_filesystem=pafs.LocalFileSystem(),
                            destination_filesystem=self.storage.filesystem)  # fmt: skip
        self._changed.clear()
        self._uploaded_at = self._clock()
        if last:
            shutil.rmtree(self.local, ignore_errors=True)


def upload_staged(storage: RunStorage, key: str) -> None:
    """What :class:`LiveV1Logs` staged on this node for the run ``key`` and did not upload (its
    ledger host died for good before the run's end), uploaded; nothing when it did."""
    if not storage.appends():
        StagedLogs(storage, key, math.inf).upload(last=True)


class LiveV1Logs:
    """The ledger's round sink under v2 with ``keep_v1_logs`` (and V1's semantics on V2's
    engine): each complete round's row (made by the ledger, :class:`V1Rows`) appended to
    ``result.json`` and ``progress.csv`` as it completes. The CSV's columns are the first row's,
    as V1 writes it live; the engine's :func:`repair_progress_csv` rewrites it with every key
    when the run ends, if a key came later (a restored trial's CSV goes on under the header it
    has, as V1's CSV logger goes on). On a filesystem without appends (an object store)
    the rows go to :class:`StagedLogs`, uploaded every ``sync_period_s`` and at the end
    (:meth:`finish`)."""

    def __init__(self, storage: RunStorage, sync_period_s: float = math.inf, key: str = "") -> None:
        self.storage = storage
        # Where the rows go: the run's directory, or copies uploaded from time to time (``key``:
        # the run's, :func:`upload_staged` finds them by it).
        self.out: RunStorage | StagedLogs = (
            storage if storage.appends() else StagedLogs(storage, key or uuid.uuid4().hex, sync_period_s)
        )
        self._csv_columns: list[str] | None = None
        self._events: Any = None
        self._written_through = 0  # a restarted ledger's: the last row the lost one had written

    def replay(self, round_: DeliveredRound) -> None:
        """In a restarted ledger, a round the lost one had handed over: not written again (its
        row, made again to number on, gives the CSV's columns)."""
        if self._csv_columns is None:
            self._csv_columns = csv_header(self.out) or list(flatten(_row_of(round_)))

    def resume(self) -> None:
        """Take up in a restarted ledger after the rounds the lost one had handed over
        (:meth:`replay`): a round handed over again because the lost ledger died while writing
        it is written only if its row is not in the file yet."""
        last = collections.deque(iter_json_lines(self.out, RESULT_JSON), maxlen=1)  # streamed: memory for one row
        self._written_through = int(last[0].get("training_iteration", 0)) if last else 0

    def __call__(self, round_: DeliveredRound) -> None:
        row = _row_of(round_)
        if row["training_iteration"] <= self._written_through:
            return  # written by the lost ledger just before it died
        self.out.append_text(RESULT_JSON, json_line(row))
        if self._csv_columns is None:
            self._csv_columns = csv_header(self.out)  # a restored trial's: its rows go on under it
        if self._csv_columns is None:
            self._csv_columns = list(flatten(row))
            self.out.write_text(PROGRESS_CSV, "".join(_csv_lines([row], self._csv_columns)))
        else:
            self.out.append_text(PROGRESS_CSV, "".join(_csv_lines([row], self._csv_columns, header=False)))
        self._tensorboard(row)

    def finish(self) -> None:
        """The run ended: rows still on this node go to the run's directory."""
        if isinstance(self.out, StagedLogs):
            self.out.upload(last=True)

    def _tensorboard(self, row: Mapping[str, Any]) -> None:
        """TensorBoard scalars as V1's TBX logger writes them (``ray/tune/<key>`` at each
        ``training_iteration``), when tensorboardX is installed and the run directory is on
        the local filesystem."""
        if self._events is None:
            self._events = _event_writer(self.storage) or False
        if not self._events:
            return
        step = row["training_iteration"]
        for key, value in flatten(row).items():
            if key.startswith("config/") or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            self._events.add_scalar(f"ray/tune/{key}", value, global_step=step)
        self._events.flush()


def _row_of(round_: DeliveredRound) -> dict[str, Any]:
    if round_.row is None:
        raise ValueError("LiveV1Logs needs each round's V1 row: open the run's ledger with rows=V1Rows(...)")
    return round_.row


def _event_writer(storage: RunStorage) -> Any:
    if not isinstance(storage.filesystem, pafs.LocalFileSystem):
        return None
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(logdir=storage.run_dir, flush_secs=1)
