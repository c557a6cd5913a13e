"""``python -m compat compare``: run a script under V1 and V2 semantics and say what differs.

    python -m compat compare [--html FILE] [--json FILE] [--timeout S] [--verbose] -- SCRIPT [ARGS...]
    python -m compat compare -- -m package.module [ARGS...]

The script runs twice, unmodified, in child processes with ``RAY_TRAIN_V2_ENABLED=0`` and
``=1``; every compat ``fit()`` it makes is recorded (``COMPAT_CAPTURE_DIR``) and the fits
are paired in call order. Each difference is labelled with the section of
docs/compatibility.md that explains it, or as unexplained.

Exit status: 0 when every difference is explained; 1 when one is not, when the script
fails under one setting only, fails under both, or makes no compat ``fit()`` (nothing was
compared); 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
from pathlib import Path

from compat.compare._diff import FitComparison, compare_runs
from compat.compare._run import ScriptRun, run_script

__all__ = ["main"]

EXIT_OK, EXIT_DIFFERS, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m compat compare",
        description="Run a training script under V1 and V2 semantics and report every difference.",
        epilog="Put the script and its arguments after --, e.g.: python -m compat compare -- train.py --epochs 2",
    )
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with plots")
    parser.add_argument("--json", metavar="FILE", help="also write the comparison as JSON (docs/compare.md)")
    parser.add_argument("--timeout", metavar="S", type=float, help="stop a run after S seconds (default: none)")
    parser.add_argument(
        "--rtol", type=float, default=1e-9, help="relative tolerance for numbers (default 1e-9; raise it for "
        "scripts whose numbers vary between runs)"
    )  # fmt: skip
    parser.add_argument(
        "--verbose", "-v", action="store_true",
        help="show every aspect's values in full in the terminal (default: differences, then a line per equal aspect)",
    )  # fmt: skip
    parser.add_argument("--workdir", metavar="DIR", help="where the logs and records go (default: a new temp dir)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS...] or -- -m MODULE [ARGS...]")
    return parser


def _verdict(runs: dict[str, ScriptRun], fits: list[FitComparison]) -> tuple[str, bool]:
    v1, v2 = runs["v1"], runs["v2"]
    unexplained = sum(len(f.unexplained) for f in fits)
    explained = sum(len(f.differences) for f in fits) - unexplained
    if v1.failed and v2.failed:
        return "The script failed under both settings (see the traceback lines above).", False
    if v1.failed != v2.failed:
        which = "V1" if v1.failed else "V2"
        return f"The script fails under {which} only: flipping the switch breaks it.", False
    if unexplained:
        return f"{unexplained} difference(s) NOT explained by a documented V1/V2 difference.", False
    if not fits:
        return (
            "No fit() was made under either setting: nothing was compared. compare records the fits of "
            "compat's trainers (import compat as train; from compat.torch import TorchTrainer, ...): run "
            "`python -m migrate --target compat` on the script, or check that it reaches fit().",
            False,
        )
    skipped = sum(1 for f in fits if f.not_compared)
    stopped = f"; {skipped} Tune trial(s) not compared (stopped before their fit() returned)" if skipped else ""
    compared = len(fits) - skipped
    return (
        f"{compared} fit(s) compared: {explained} difference(s), each explained by docs/compatibility.md{stopped}.",
        True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.print_usage(sys.stderr)
        print("error: give the script to run after --, e.g. -- train.py --epochs 2", file=sys.stderr)
        return EXIT_USAGE
    if command[0] == "-m":
        if len(command) < 2:
            print("error: -m needs a module name, e.g. -- -m package.train", file=sys.stderr)
            return EXIT_USAGE
    elif not Path(command[0]).is_file():
        print(f"error: no such script: {command[0]} (give a .py file, or -m MODULE)", file=sys.stderr)
        return EXIT_USAGE
    if args.timeout is not None and args.timeout <= 0:
        print("error: --timeout takes a positive number of seconds", file=sys.stderr)
        return EXIT_USAGE
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="compat-compare-"))
    workdir.mkdir(parents=True, exist_ok=True)
    runs: dict[str, ScriptRun] = {}
    for backend in ("v1", "v2"):
        print(f"running under {backend.upper()} ... (output: {workdir / (backend + '.log')})", flush=True)
        runs[backend] = run_script(backend, command, workdir, args.timeout)
    fits = compare_runs(runs["v1"].fits, runs["v2"].fits, args.rtol)
    verdict, ok = _verdict(runs, fits)

    from compat.compare import _render

    _render.terminal(runs, fits, verdict, ok, verbose=args.verbose)
    if args.json:
        Path(args.json).write_text(json.dumps(_render.as_json(runs, fits, verdict, ok), indent=2, default=str))
        print(f"JSON: {args.json}")
    if args.html:
        text = _render.html_report(runs, fits, verdict, ok, shlex.join(["python", *command]))
        Path(args.html).write_text(text)
        print(f"HTML report: {args.html}")
    return EXIT_OK if ok else EXIT_DIFFERS
