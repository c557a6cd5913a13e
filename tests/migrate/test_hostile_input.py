"""``python -m migrate`` on what a real tree may hold: FIFOs, sockets and devices named ``*.py``,
files far larger than hand-written code, one-line files and one long changed line. Each ends with
a clear error for that file (the rest processed) and ruff's exit codes; never a hang, never time
or memory that grows faster than the file."""

from __future__ import annotations

import os
import socket
import threading

from migrate.__main__ import main
from migrate.files import parse_size

LIVENESS_S = 60
V1_ERA = "from ray.air import session\n\n\ndef f():\n    session.report({'loss': 1})\n"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``main`` on a thread: a hang fails the test instead of the session."""
    done: list[int] = []
    thread = threading.Thread(target=lambda: done.append(main([*argv, "--jobs", "1", "--isolated"])), daemon=True)
    thread.start()
    thread.join(LIVENESS_S)
    assert done, f"migrate {argv} did not return within {LIVENESS_S} s"
    out, err = capsys.readouterr()
    return done[0], out, err


def test_a_fifo_or_socket_named_py_in_a_tree_is_skipped_not_opened(capsys, tmp_path) -> None:
    (tmp_path / "job.py").write_text(V1_ERA)
    os.mkfifo(tmp_path / "pipe.py")  # reading it would wait for a writer forever
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock.py"))
    try:
        code, out, err = run(capsys, str(tmp_path), "--statistics")
        assert code == 1 and "2 file(s) not processed" in out
        for mode in ("--check", "--diff", "--add-noqa"):
            code, out, err = run(capsys, str(tmp_path), mode)
            assert code == 1, (mode, out, err)
            assert f"{tmp_path / 'pipe.py'}:1:1: ERROR is a FIFO, not a regular file; skipped" in err, mode
            assert f"{tmp_path / 'sock.py'}:1:1: ERROR is a socket, not a regular file; skipped" in err, mode
        code, out, err = run(capsys, str(tmp_path / "pipe.py"), "--output-format", "json")  # named on its own
        assert code == 1 and "is a FIFO, not a regular file" in out
        (tmp_path / "job.py").write_text(V1_ERA)  # without --add-noqa's directives
        code, out, err = run(capsys, str(tmp_path))  # a write: the real file is rewritten all the same
        assert "from ray import train" in (tmp_path / "job.py").read_text()
    finally:
        sock.close()


def test_a_file_over_the_size_limit_is_skipped_with_what_to_do(capsys, tmp_path) -> None:
    big = tmp_path / "generated_pb2.py"
    big.write_text(V1_ERA + "# padding\n" * 60_000)  # 600 KB: over the default 512 KiB
    code, out, err = run(capsys, str(tmp_path), "--check")
    assert code == 1
    line = next(line for line in err.splitlines() if "generated_pb2.py" in line)
    assert "is 600,0" in line and "over the largest file read (524,288 bytes" in line
    assert "--max-file-size or max-file-size in [tool.ray-train-migrate]" in line
    code, out, err = run(capsys, str(tmp_path), "--check", "--max-file-size", "1MiB")
    assert "generated_pb2.py" in out and "ERROR" not in err  # read: its findings are listed


def test_the_size_limit_from_pyproject_and_bad_values(capsys, tmp_path, monkeypatch) -> None:
    (tmp_path / "job.py").write_text(V1_ERA)
    (tmp_path / "pyproject.toml").write_text('[tool.ray-train-migrate]\nmax-file-size = "20B"\n')
    monkeypatch.chdir(tmp_path)
    done = main(["job.py", "--check", "--jobs", "1"])
    _, err = capsys.readouterr()
    assert done == 1 and "over the largest file read (20 bytes" in err
    (tmp_path / "pyproject.toml").write_text('[tool.ray-train-migrate]\nmax-file-size = "lots"\n')
    assert main(["job.py", "--check"]) == 2
    assert "'max-file-size': 'lots' is not a size: give bytes" in capsys.readouterr().err
    assert main(["job.py", "--check", "--isolated", "--max-file-size", "0"]) == 2
    assert "--max-file-size: '0' is not a size" in capsys.readouterr().err
    assert [parse_size(v) for v in ("4194304", "4MiB", "500 KB", "1gb")] == [4194304, 4 * 2**20, 500_000, 10**9]


def test_one_long_changed_line_is_diffed_in_time_linear_in_its_length(capsys, tmp_path) -> None:
    """A rewrite of one long line maps its findings back by similarity, which was quadratic in
    the line's length (5 KB 3.3 s, 20 KB 50 s, 100 KB over 300 s); linear, 100 KB takes about a
    second (docs/performance.md). LIVENESS_S bounds a hang, not a speed."""
    path = tmp_path / "long.py"
    entries = ", ".join(f"'k{i}': {i}" for i in range(8_000))  # about 100 KB on the changed line
    path.write_text(f"from ray.air import session\n\n\ndef f():\n    session.report({{{entries}}})\n")
    code, out, err = run(capsys, str(path), "--diff")
    assert code == 1 and "1 would be rewritten" in err and "+    train.report({'k0': 0" in out


def test_lines_repeated_thousands_of_times_are_diffed_without_quadratic_matching(capsys, tmp_path) -> None:
    """difflib without its junk heuristic is quadratic in a line repeated n times (generated
    data): 5,000 ``1,`` lines took 12 s, 33,000 over 300 s."""
    path = tmp_path / "data.py"
    path.write_text("from ray.air import session\nx = [\n" + "1,\n" * 20_000 + "]\nsession.report({})\n")
    code, out, err = run(capsys, str(path), "--check")
    assert code == 1 and f"{path}:20004:1: RTM101" in out, out


def test_a_one_line_file_over_the_limit_is_refused_at_once(capsys, tmp_path) -> None:
    path = tmp_path / "oneline.py"
    path.write_text("import ray.air.session; x = [" + "1, " * 330_000 + "]; ray.air.session.report({})\n")
    code, out, err = run(capsys, str(path), "--check")  # 1 MB: took over 2 minutes and 2.4 GB
    assert code == 1 and "over the largest file read" in err
