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
code), others as a :class:`compat_core.pickled.StoredValue` unless the reader trusts the
storage (``trust_stored_objects=True``).
"""

from __future__ import annotations

import numbers
import posixpath
import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from compat_core import pickled
from compat_core.semantics.v1_logs import read_json_lines
from compat_core.storage import RunStorage

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


def write(run: RunStorage, records: Callable[[], Iterable[Any]]) -> str | None:
    """Store the reports ``records()`` yields (called twice: it reads them again) in a new file
    of the run's directory; its name, or None when there is no report."""
    schema, total = _schema(records())
    if total == 0:
        return None
    taken = [number for number, _ in _stored_files(run)]
    name = f"compat_worker_reports.{max(taken, default=-1) + 1:06d}.arrow"
    run.filesystem.create_dir(run.run_dir, recursive=True)
    with run.filesystem.open_output_stream(run.path(name)) as sink, pa.ipc.new_file(sink, schema) as writer:
        batch: list[Any] = []
        for record in records():
            batch.append(record)
            if len(batch) == BATCH:
                writer.write_batch(_batch(batch, schema))
                batch = []
        if batch:
            writer.write_batch(_batch(batch, schema))
    return name


def _stored_files(run: RunStorage) -> list[tuple[int, str]]:
    """The fits' files in the run's directory, by their number, in order."""
    names = (posixpath.basename(entry.path) for entry in run.entries())
    return sorted((int(m.group(1)), m.group(0)) for name in names if (m := _FILE.fullmatch(name)))


def read_file(run: RunStorage, name: str, trusted: bool = False) -> pd.DataFrame:
    """The reports one fit stored (``name``, as :func:`write` returned it). A pickled value is
    rebuilt only from plain values, containers and numpy (:func:`compat_core.pickled.safe_loads`;
    another class's value is a :class:`compat_core.pickled.StoredValue`) unless ``trusted``."""
    with run.filesystem.open_input_file(run.path(name)) as f:
        table = pa.ipc.open_file(f).read_all()
    table = table.sort_by([("attempt", "ascending"), ("report_index", "ascending"), ("world_rank", "ascending")])
    frame = table.to_pandas()
    for field in table.schema:
        if field.metadata == _PICKLED:
            objects = [np.nan if b is None else pickled.load_stored(b, trusted) for b in frame[field.name]]
            frame[field.name] = pd.Series(objects, index=frame.index, dtype=object).infer_objects()
    return frame


def read(run: RunStorage, trusted: bool = False) -> pd.DataFrame | None:
    """Every report stored with the run, each fit's after the earlier fits' (None: none);
    ``trusted``: as :func:`read_file`'s."""
    frames = []
    rows = read_json_lines(run, LEGACY)
    if rows:
        frames.append(pd.DataFrame(rows))
    frames.extend(read_file(run, name, trusted) for _, name in _stored_files(run))
    if not frames:
        return None
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
