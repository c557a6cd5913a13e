"""``python -m compat readiness PATH_OR_URI...``: can the fleet flip ``RAY_TRAIN_V2_ENABLED``?

Reads any mix of run storage locations (the readiness record each compat ``fit()`` leaves in
its run directory; local paths and ``s3://``, ``gs://``, ``file://`` URIs), source trees (the
codemod's findings, nothing rewritten) and, with ``--site-packages``, the installed
distributions; reports each job, repository and package as ready or blocked, and what to fix
first. docs/readiness.md is the walkthrough, with the JSON schema.

Exit codes, graded by the worst severity found at or above ``--fail-on`` (as pluto grades
its own): 6 ``breaks``, 5 ``silent``, 4 ``warns``, 3 ``fix``; else 1 when a location or
record could not be read, 2 for a usage error, 0 when nothing blocks.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from compat.readiness._record import SEVERITIES

EXIT_CODES = {"breaks": 6, "silent": 5, "warns": 4, "fix": 3}
FORMATS = ("text", "json", "markdown", "csv", "html")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m compat readiness",
        description="Whether jobs (their runs' readiness records), repositories and installed packages "
        "can flip RAY_TRAIN_V2_ENABLED, what blocks each, and what to fix first.",
        epilog="Exit codes: 6 breaks, 5 silent, 4 warns, 3 fix (the worst found at or above --fail-on); "
        "1 a location or record could not be read; 2 usage; 0 nothing blocks. See docs/readiness.md.",
    )
    parser.add_argument(
        "locations", nargs="*", metavar="PATH_OR_URI",
        help="run storage (a directory or s3://, gs://, file:// URI), a source tree, or a compat_readiness.jsonl",
    )  # fmt: skip
    parser.add_argument(
        "--site-packages", action="store_true", help="also check the installed distributions of this Python"
    )
    parser.add_argument(
        "--output-format", "--format", dest="output_format", choices=FORMATS, default="text",
        help="text (rich tables, the default), json, markdown, csv or html (one file with trend charts)",
    )  # fmt: skip
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of standard output")
    parser.add_argument(
        "--fail-on", choices=SEVERITIES, default="fix", metavar="SEVERITY",
        help="exit non-zero only for blockers of this severity or worse: breaks, silent, warns or fix (default: fix)",
    )  # fmt: skip
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 whatever is found")
    parser.add_argument("--all", action="store_true", help="terminal tables: every row (default: the first 20)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for the codemod's checks")
    return parser.parse_args(argv)


def exit_status(worst: str | None, fail_on: str, unreadable: bool) -> int:
    if worst is not None and SEVERITIES.index(worst) <= SEVERITIES.index(fail_on):
        return EXIT_CODES[worst]
    return 1 if unreadable else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if not args.locations and not args.site_packages:
        print(
            "error: give a run storage location, a source tree or --site-packages, e.g. "
            "`python -m compat readiness s3://bucket/ray_results src/ --site-packages`",
            file=sys.stderr,
        )
        return 2
    if args.jobs < 1:
        print("error: --jobs must be 1 or more", file=sys.stderr)
        return 2
    from compat import _shadowing
    from compat.errors import CompatShadowedError

    try:  # it reads source trees with the codemod: a project's own migrate/ must not stand in for it
        _shadowing.check_this_process(_shadowing.COMMANDS)
    except CompatShadowedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from compat.readiness import _collect, _fleet, _render

    collected = _collect.collect(args.locations, site_packages=args.site_packages, jobs=args.jobs)
    fleet = _fleet.fleet(collected)
    if args.output_format == "text":
        text = _render.to_text(fleet, limit=None if args.all else 20)
    else:
        text = _render.RENDERERS[args.output_format](fleet)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            print(f"error: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
            return 2
        print(f"{args.output}: {_render.summary_line(fleet)}")
    else:
        sys.stdout.write(text)
    for problem in fleet.problems if args.output_format != "text" else ():
        print(f"warning: {problem.path}: {problem.message}", file=sys.stderr)
    if args.exit_zero:
        return 0
    return exit_status(fleet.worst, args.fail_on, bool(fleet.problems))
