"""Every worker's reports, stored with the run: what ``Result.from_path`` reads back as
``worker_metrics_dataframe``.

Each ``fit()`` writes one Arrow IPC file into the run's directory when it ends
(``compat_worker_reports.N.arrow``, N counting the run's fits: a restored run's come after
the earlier ones'), through the run's ``pyarrow.fs`` filesystem, so an object store gets one
object per fit. It is written from the run's records in batches (two passes: the first decides
each column's type, the second writes), so the memory it takes does not grow with the run's
length. Runs stored by an earlier compat have ``compat_worker_reports.jsonl`` (one JSON line per
report): read first, as before.

The frame read back is the frame compat builds in memory from the same records
(:func:`compat_core.semantics.result.worker_dataframe`): rows in report order (attempt, report
index, rank), columns in the order their keys first appear, the same dtypes. A column whose
values Arrow types as pandas would (whole numbers, numbers with holes, booleans, strings) is
stored typed; any other (a mix, a list, a dict, an object) is stored pickled, value by value,
and given back as the objects reported: by ``fit()``'s own result as they were; by
``Result.from_path`` only when plain values, containers and numpy arrays (read without running
code), others as a :class:`compat_core.files.pickled.StoredValue` unless the reader trusts the
storage (``trust_stored_objects=True``).
"""

from __future__ import annotations

import hashlib
import numbers
import posixpath
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from compat_core import messages
from compat_core.files import pickled
from compat_core.files.pickled import CorruptStoredDataWarning
from compat_core.files.storage import RunStorage
from compat_core.semantics.v1_logs import read_json_lines

LEGACY = "compat_worker_reports.jsonl"  # what compat before 0.x stored: read, never written
_FILE = re.compile(r"compat_worker_reports\.(\d{6})\.arrow")
FIXED = {"attempt": pa.int64(), "world_rank": pa.int64(), "report_index": pa.int64(), "timestamp": pa.float64()}
BATCH = 8192  # records a batch holds while written
_PICKLED = {b"compat": b"pickled"}  # a column's metadata: its values are pickled objects


def _kind(value_type: type) -> str:
    """What pandas makes of values of this type: ``"int"`` (int64), ``"float"``, ``"bool"``,
    ``"str"``, ``"none"``, or ``"other"`` (objects)."""
    if value_type is type(None):
        return "none"
    if issubclass(value_type, bool | np.bool_):
        return "bool"
    if issubclass(value_type, numbers.Integral):
        return "int"
    if issubclass(value_type, numbers.Real):
        return "float"
    if issubclass(value_type, str):
        return "str"
    return "other"


class _BigInt:
    """Stands for a whole number beyond int64: pandas keeps those as objects."""


def _column_type(kinds: set[str], holes: bool) -> pa.DataType | None:
    """The Arrow type that gives back what pandas makes of these values (None: pickled)."""
    if kinds == {"int"} and not holes:
        return pa.int64()
    if kinds & {"int", "float"} and kinds <= {"int", "float", "none"}:
        return pa.float64()  # a hole or a None is NaN, as in pandas
    if kinds == {"bool"} and not holes:
        return pa.bool_()
    if kinds == {"str"} and not holes:
        return pa.string()
    return None


def _schema(records: Iterable[Any]) -> tuple[pa.Schema, int]:
    """The file's schema for ``records`` (columns in the order of a frame of their rows in
    report order: the first report's keys, the fixed ones, then others as they first appear),
    and how many records there are. Reports with the same keys are counted together (a run's
    reports mostly have the same keys)."""
    groups: dict[tuple[str, ...], list[Any]] = {}  # keys -> [reports, first report, types of each key]
    total = 0
    for record in records:
        total += 1
        order = (record.attempt, record.index, record.rank)
        keys = tuple(record.metrics)
        group = groups.get(keys)
        if group is None:
            group = groups[keys] = [0, order, [set() for _ in keys]]
        group[0] += 1
        if order < group[1]:
            group[1] = order
        for types, value in zip(group[2], record.metrics.values(), strict=True):
            value_type = type(value)
            if value_type is int and not -(2**63) <= value < 2**63:
                value_type = _BigInt
            types.add(value_type)
    kinds: dict[str, set[str]] = {}
    present: dict[str, int] = {}
    first_seen: dict[str, tuple[tuple[int, int, int], int]] = {}  # key -> (report, position in it)
    for keys, (count, order, types) in groups.items():
        for position, (key, seen) in enumerate(zip(keys, types, strict=True)):
            kinds.setdefault(key, set()).update(_kind(t) for t in seen)
            present[key] = present.get(key, 0) + count
            if key not in first_seen or (order, position) < first_seen[key]:
                first_seen[key] = (order, position)
    first = min(groups.items(), key=lambda group: group[1][1])[0] if groups else ()
    later = sorted(first_seen, key=first_seen.__getitem__)
    names = list(dict.fromkeys([*first, *FIXED, *later]))
    fields = []
    for name in names:
        if name in FIXED:
            fields.append(pa.field(name, FIXED[name], nullable=False))
            continue
        kind = _column_type(kinds[name], present[name] < total)
        fields.append(pa.field(name, kind) if kind is not None else pa.field(name, pa.binary(), metadata=_PICKLED))
    return pa.schema(fields), total


def _batch(records: list[Any], schema: pa.Schema) -> pa.RecordBatch:
    from ray import cloudpickle

    columns: dict[str, list[Any]] = {}
    for field in schema:
        name = field.name
        if name == "attempt":
            values: list[Any] = [r.attempt for r in records]
        elif name == "world_rank":
            values = [r.rank for r in records]
        elif name == "report_index":
            values = [r.index for r in records]
        elif name == "timestamp":
            values = [float(r.timestamp) for r in records]
        elif field.metadata == _PICKLED:
            values = [cloudpickle.dumps(r.metrics[name]) if name in r.metrics else None for r in records]  # type: ignore[no-untyped-call]
        elif field.type == pa.float64():
            values = [None if (v := r.metrics.get(name)) is None else float(v) for r in records]
        elif field.type == pa.int64():
            values = [int(r.metrics[name]) for r in records]
        else:
            values = [r.metrics.get(name) for r in records]
        columns[name] = values
    return pa.RecordBatch.from_pydict(columns, schema=schema)


@dataclass(frozen=True)
class Stored:
    """A fit's stored reports: the file's name in the run's directory and the SHA-256 of the
    bytes written, by which the process that wrote it knows it is still what it wrote."""

    name: str
    sha256: str


class _Hashing:
    """A file-like sink that hashes what it passes on."""

    def __init__(self, sink: Any) -> None:
        self._sink = sink
        self.hash = hashlib.sha256()
        self.closed = False

    def write(self, data: Any) -> int:
        self.hash.update(data)
        return int(self._sink.write(data))

    def tell(self) -> int:
        return int(self._sink.tell())

    def flush(self) -> None:
        self._sink.flush()

    def close(self) -> None:
        self.closed = True  # the sink is closed by its own ``with``


def write(run: RunStorage, records: Callable[[], Iterable[Any]]) -> Stored | None:
    """Store the reports ``records()`` yields (called twice: it reads them again) in a new file
    of the run's directory; its name and hash, or None when there is no report."""
    schema, total = _schema(records())
    if total == 0:
        return None
    taken = [number for number, _ in _stored_files(run)]
    name = f"compat_worker_reports.{max(taken, default=-1) + 1:06d}.arrow"
    run.filesystem.create_dir(run.run_dir, recursive=True)
    with run.filesystem.open_output_stream(run.path(name)) as sink:
        hashing = _Hashing(sink)
        with pa.ipc.new_file(pa.PythonFile(hashing, mode="w"), schema) as writer:
            batch: list[Any] = []
            for record in records():
                batch.append(record)
                if len(batch) == BATCH:
                    writer.write_batch(_batch(batch, schema))
                    batch = []
            if batch:
                writer.write_batch(_batch(batch, schema))
    return Stored(name, hashing.hash.hexdigest())


def _stored_files(run: RunStorage) -> list[tuple[int, str]]:
    """The fits' files in the run's directory, by their number, in order."""
    names = (posixpath.basename(entry.path) for entry in run.entries())
    return sorted((int(m.group(1)), m.group(0)) for name in names if (m := _FILE.fullmatch(name)))


def read_file(run: RunStorage, name: str, trusted: bool = False, written: Stored | None = None) -> pd.DataFrame:
    """The reports one fit stored (``name``, as :func:`write` returned it). A pickled value is
    rebuilt only from plain values, containers and numpy (:func:`compat_core.files.pickled.safe_loads`;
    another class's value is a :class:`compat_core.files.pickled.StoredValue`) unless ``trusted``, or
    ``written`` (what this process wrote) has the file's hash: it is still the bytes written. A
    file cut short gives the reports before the cut, a value that cannot be read is a
    :class:`compat_core.files.pickled.UnreadableValue`; each with a :class:`CorruptStoredDataWarning`
    naming the file and the reports."""
    path = run.path(name)
    with run.filesystem.open_input_file(path) as f:
        data = f.read_buffer()
    if written is not None and not trusted:
        trusted = hashlib.sha256(data).digest().hex() == written.sha256
        if not trusted:
            warnings.warn(messages.worker_reports_changed(path), CorruptStoredDataWarning, stacklevel=2)
    table = _table(data, path)
    table = table.sort_by([("attempt", "ascending"), ("report_index", "ascending"), ("world_rank", "ascending")])
    frame = table.to_pandas()
    unreadable: list[str] = []
    for field in table.schema:
        if field.metadata == _PICKLED:
            objects = [np.nan if b is None else _load(b, trusted) for b in frame[field.name]]
            for row, value in enumerate(objects):
                if isinstance(value, pickled.UnreadableValue):
                    unreadable.append(_report_at(frame, row, field.name, value.reason))
            frame[field.name] = pd.Series(objects, index=frame.index, dtype=object).infer_objects()
    if unreadable:
        warnings.warn(messages.stored_values_unreadable(path, unreadable), CorruptStoredDataWarning, stacklevel=2)
    return frame


def _load(data: bytes, trusted: bool) -> Any:
    try:
        return pickled.load_stored(data, trusted)
    except Exception as exc:  # corrupt bytes: whatever the unpickler raised
        return pickled.UnreadableValue(f"{type(exc).__name__}: {exc}")


def _report_at(frame: pd.DataFrame, row: int, column: str, reason: str) -> str:
    at = frame.iloc[row]
    return (
        f"{column!r} of rank {at['world_rank']}'s report {at['report_index']} "
        f"(attempt {at['attempt']}, row {row}): {reason}"
    )


def _table(data: Any, path: str) -> pa.Table:
    """The Arrow file's table; a file cut short or with a damaged footer: the record batches
    before the damage (the file format is a stream of batches, then a footer), with a warning."""
    try:
        return pa.ipc.open_file(data).read_all()
    except (pa.ArrowInvalid, OSError) as exc:
        problem = exc
    batches: list[pa.RecordBatch] = []
    schema = None
    try:
        reader = pa.ipc.open_stream(data.slice(8))  # after the file's magic and its padding
        schema = reader.schema
        for batch in reader:
            batches.append(batch)
    except (pa.ArrowInvalid, OSError):
        pass
    rows = sum(len(b) for b in batches)
    warnings.warn(messages.stored_reports_cut(path, problem, rows), CorruptStoredDataWarning, stacklevel=3)
    if schema is None:
        return pa.table({name: pa.array([], type) for name, type in FIXED.items()})
    return pa.Table.from_batches(batches, schema=schema)


def read(run: RunStorage, trusted: bool = False) -> pd.DataFrame | None:
    """Every report stored with the run, each fit's after the earlier fits' (None: none);
    ``trusted``: as :func:`read_file`'s."""
    frames = []
    rows = read_json_lines(run, LEGACY)
    if rows:
        frames.append(pd.DataFrame(rows))
    frames.extend(read_file(run, name, trusted) for _, name in _stored_files(run))
    frames = [frame for frame in frames if len(frame)]
    if not frames:
        return None
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
