"""``python -m compat readiness`` on what a real fleet's storage may hold: FIFOs, sockets and
devices where a record file or a location goes, huge files and lines, bytes that are not UTF-8,
and records whose fields have the wrong type. Each ends with a clear line under "Not read" naming
the path (and line), the rest of the fleet reported, in every format, with the exit code the
fleet's worst finding gives; never a traceback, never a hang."""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compat.readiness import _collect, main
from compat.readiness._record import RECORD_FILE
from compat.readiness._render import RENDERERS
from tests.readiness.fleet import record

pytestmark = pytest.mark.one_pass  # reads files: no Ray, no mode

FORMATS = ["text", *RENDERERS]
LIVENESS_S = 60


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``main`` on a thread: a hang fails the test instead of the session."""
    done: list[int] = []
    thread = threading.Thread(target=lambda: done.append(main([*argv, "--jobs", "1"])), daemon=True)
    thread.start()
    thread.join(LIVENESS_S)
    assert done, f"readiness {argv} did not return within {LIVENESS_S} s"
    out, err = capsys.readouterr()
    return done[0], out, err


def good_line(job: str = "ranker") -> str:
    return record(job, 0, {"session-api": 2}).line()


def test_a_fifo_named_as_a_record_file_is_skipped_not_opened(capsys, tmp_path) -> None:
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / RECORD_FILE).write_text(good_line())
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / RECORD_FILE)  # opening it to read would wait for a writer
    for fmt in FORMATS:
        code, out, err = run(capsys, str(tmp_path), "--output-format", fmt)
        assert code == 5, (fmt, out, err)  # the job's silent session-api: the fleet's worst
        shown = out if fmt == "text" else err
        assert f"{tmp_path / 'fifo' / RECORD_FILE}: is a FIFO, not a record file: skipped" in shown, (fmt, shown)


def test_a_fifo_socket_or_device_given_as_a_location_is_skipped(capsys, tmp_path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    try:
        code, out, _ = run(capsys, str(fifo), str(tmp_path / "sock"), "/dev/null")
    finally:
        sock.close()
    assert code == 1  # nothing read: the paths not read are the finding
    assert f"{fifo}: is a FIFO, not a file or directory: skipped" in out
    assert f"{tmp_path / 'sock'}: is a socket, not a file or directory: skipped" in out
    assert "/dev/null: is a device, not a file or directory: skipped" in out


def test_a_record_file_over_the_size_a_fleet_writes_is_skipped_by_size(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(_collect, "MAX_RECORD_FILE_BYTES", 10_000)
    (tmp_path / "huge").mkdir()
    (tmp_path / "huge" / RECORD_FILE).write_text(good_line() * 20)
    code, out, _ = run(capsys, str(tmp_path))
    assert code == 1 and "bytes, over the 10,000 a record file may be: skipped" in out


def test_bytes_that_are_not_utf8_cost_only_their_line(capsys, tmp_path) -> None:
    (tmp_path / RECORD_FILE).write_bytes(good_line().encode() + b"\xff\xfe garbage\n" + good_line("other").encode())
    code, out, _ = run(capsys, str(tmp_path), "--output-format", "json")
    report = json.loads(out)
    assert {j["job"] for j in report["jobs"]} == {"ranker", "other"}
    assert [p["path"] for p in report["problems"]] == [f"{tmp_path / RECORD_FILE}:2"]


def test_a_long_line_is_one_problem(capsys, tmp_path) -> None:
    (tmp_path / RECORD_FILE).write_text("[" * 100_000 + "\n" + '"' + "x" * 5_000_000 + "\n" + good_line())
    code, out, _ = run(capsys, str(tmp_path), "--output-format", "json")
    report = json.loads(out)
    assert [p["path"].rsplit(":", 1)[1] for p in report["problems"]] == ["1", "2"]
    assert [j["job"] for j in report["jobs"]] == ["ranker"] and code == 5


# Values of every JSON type, and the ones a careless writer produces: 1e400 reads as infinity.
WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from(["1e400", "-1e400", "NaN", "Infinity"]).map(lambda literal: ("literal", literal)),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
FIELDS = [
    "job", "run", "path", "script", "call_site", "trainer", "versions", "versions.ray", "mode", "engine",
    "started_at", "ended_at", "outcome", "error", "behaviours", "behaviours.0", "behaviours.0.kind",
    "behaviours.0.count", "behaviours.0.severity", "behaviours.0.rule", "behaviours.0.first_site",
]  # fmt: skip


def _set(data: dict, dotted: str, value) -> None:
    """``data``'s field at ``dotted`` set to ``value``; nothing when an earlier change replaced
    a field on its way."""
    *parents, last = dotted.split(".")
    try:
        for part in parents:
            data = data[int(part)] if isinstance(data, list) else data[part]
        if isinstance(data, list):
            data[int(last)] = value
        else:
            data[last] = value
    except (TypeError, KeyError, IndexError, ValueError):
        pass


def _dump(data: dict) -> str:
    """JSON as a careless writer leaves it: a ``("literal", text)`` value written as that text."""
    marks: dict[str, str] = {}

    def mark(value):
        if isinstance(value, tuple) and value[:1] == ("literal",):
            marks[f"@@{len(marks)}@@"] = value[1]
            return f"@@{len(marks) - 1}@@"
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        return value

    text = json.dumps(mark(data))
    for key, literal in marks.items():
        text = text.replace(f'"{key}"', literal)
    return text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    changes=st.lists(st.tuples(st.sampled_from(FIELDS), WRONG), min_size=1, max_size=3), fmt=st.sampled_from(FORMATS)
)
def test_a_record_with_fields_of_any_type_is_read_or_named_never_a_traceback(
    capsys, tmp_path_factory, changes, fmt
) -> None:
    directory = tmp_path_factory.mktemp("fleet")
    data = json.loads(good_line("careless"))
    for dotted, value in changes:
        _set(data, dotted, value)
    (directory / RECORD_FILE).write_text(good_line("kept") + _dump(data) + "\n")
    code, out, err = run(capsys, str(directory), "--output-format", fmt)
    assert "Traceback" not in out + err
    assert code in (1, 3, 4, 5, 6), (code, err)
    shown = out if fmt == "text" else err
    line = f"{directory / RECORD_FILE}:2: "
    if line in shown:  # named, with what is wrong
        assert "readiness record" in shown.split(line, 1)[1].splitlines()[0] or "not JSON" in shown
        assert code == 5  # the good record's session-api (silent) is still the fleet's worst
    if fmt == "json":
        jobs = {j["job"] for j in json.loads(out)["jobs"]}
        assert "kept" in jobs
        assert ("careless" in jobs) != (line in shown) or any(d == "job" for d, _ in changes)
