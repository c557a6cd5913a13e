"""``python -m migrate PATH...``: rewrite V1-era Ray Train code and report what remains.

Exit codes, as ruff's: 0 clean; 1 a flagged finding remains (after a write too), something
would change (``--diff``/``--check``) or a file could not be processed; 2 a usage or
configuration error, or a bug of the tool. ``--exit-zero``: 0 instead of 1. ``--fail-on
SEVERITY``: 1 only for findings of that severity or worse (breaks, silent, warns, fix).
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from migrate import baseline, config, engine, formats, tree
from migrate.files import MAX_FILE_BYTES, atomic_write, iter_files, matches_globs, parse_size
from migrate.rules import BY_CODE, RULES
from migrate.severity import SEVERITIES, at_least
from migrate.tables import GUIDE


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m migrate",
        description="Rewrite V1-era Ray Train code to the current API and flag what needs a person. "
        f"Migration guide: {GUIDE}",
    )
    parser.add_argument("paths", nargs="*", help="files or directories (.py and .ipynb)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--diff", action="store_true",
        help="write nothing; print a unified diff (not with --report json); exit 1 if anything would change",
    )  # fmt: skip
    mode.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if anything would change or was flagged"
    )
    mode.add_argument(
        "--statistics", action="store_true",
        help="write nothing; print how many findings each rule has, with its severity (text or json)",
    )  # fmt: skip
    mode.add_argument(
        "--add-noqa", action="store_true",
        help="write only `# noqa: RTMnnn` comments marking every flagged finding (a baseline); rewrite nothing",
    )  # fmt: skip
    parser.add_argument(
        "--target",
        choices=config.TARGETS,
        default=None,
        help="rewrite V1-era code onto ray.train (default) or onto compat; native: take compat back out",
    )
    parser.add_argument(
        "--output-format",
        choices=formats.FORMATS,
        default=None,
        help="findings as text (default), json, github (Actions annotations) or sarif (code scanning)",
    )
    parser.add_argument("--report", choices=["text", "json"], default=None, help=argparse.SUPPRESS)  # older name
    parser.add_argument("--select", metavar="CODES", help="comma-separated rule codes or prefixes to run")
    parser.add_argument("--ignore", metavar="CODES", help="comma-separated rule codes or prefixes to skip")
    parser.add_argument(
        "--exclude", metavar="GLOB", action="append", default=None, help="skip paths matching GLOB (repeatable)"
    )
    parser.add_argument(
        "--force-exclude", action="store_true",
        help="apply the exclusions to files named on the command line too (for pre-commit)",
    )  # fmt: skip
    parser.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when findings remain (2 still means an error)"
    )
    parser.add_argument(
        "--fail-on", choices=SEVERITIES, default=None, metavar="SEVERITY",
        help="exit 1 only for findings of this severity or worse: breaks, silent, warns or fix (default: fix: any)",
    )  # fmt: skip
    parser.add_argument(
        "--isolated", action="store_true", help=f"ignore every pyproject.toml's [tool.{config.TABLE}] table"
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help=f"files processed in N processes (default: every usable core for {PARALLEL_FROM} files or more, else 1)",
    )
    parser.add_argument(
        "--max-file-size", metavar="SIZE", default=None,
        help="skip (as an error) files larger than SIZE: bytes or e.g. 2MiB (default: 512KiB)",
    )  # fmt: skip
    parser.add_argument("--list-rules", action="store_true", help="list every rule and exit")
    parser.add_argument("--quiet", "-q", action="store_true", help="print only findings and errors")
    return parser.parse_args(argv)


def _codes(value: str) -> list[str]:
    return [c.strip().upper() for c in value.split(",") if c.strip()]


def list_rules() -> str:
    lines = [f"{'code':<8}{'name':<28}{'fix':<7}{'severity':<9}summary"]
    for rule in RULES:
        lines.append(f"{rule.code:<8}{rule.name:<28}{rule.fix_safety:<7}{rule.severity:<9}{rule.summary}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report and args.output_format and args.report != args.output_format:
        print("error: --report is the older name of --output-format; give one of them", file=sys.stderr)
        return 2
    if args.list_rules:
        print(list_rules())
        return 0
    if not args.paths:
        print("error: give at least one file or directory, e.g. `python -m migrate src/`", file=sys.stderr)
        return 2
    if args.jobs is not None and args.jobs < 1:
        print("error: --jobs must be 1 or more", file=sys.stderr)
        return 2
    known = [*(r.code for r in RULES), engine.UNPARSED]  # ERROR: what does not parse (per-file-ignores takes it)
    for code in _codes(args.select or "") + _codes(args.ignore or ""):
        if not any(k.startswith(code) for k in known):
            print(f"error: unknown rule code {code!r}; see --list-rules", file=sys.stderr)
            return 2
    finder = config.Finder(known) if not args.isolated else None
    try:
        plan = _plan(args, finder)
    except config.ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"error: no such file or directory: {exc}", file=sys.stderr)
        return 2
    if args.statistics and args.output_format not in ("text", "json"):
        print(f"error: --statistics prints text or json, not {args.output_format}", file=sys.stderr)
        return 2
    jobs = args.jobs if args.jobs is not None else default_jobs(len(plan))
    if args.add_noqa:
        return add_noqa(plan, jobs, args)
    write = not (args.diff or args.check or args.statistics)
    results = run(plan, write, jobs, args.max_file_size)
    if args.statistics:
        print(statistics(results, args.output_format))
        return exit_status(results, args)
    return report(results, args, write)


def _plan(args: argparse.Namespace, finder: config.Finder | None) -> list[tuple[str, tuple[str, ...], str]]:
    """Each file with the rule codes and the target it runs with: the command line's, else its
    pyproject.toml's. Sets ``args.output_format`` the same way (the configuration nearest the
    working directory, else the first path's)."""

    def settings(path: str, is_file: bool = False) -> config.Settings:
        return finder.for_path(path, is_file=is_file) if finder else config.Settings()

    top = settings(os.getcwd())
    if top.path is None and args.paths:
        top = settings(args.paths[0])
    args.output_format = args.output_format or args.report or top.output_format or "text"
    args.fail_on = args.fail_on or top.fail_on or "fix"
    if args.max_file_size is not None and not isinstance(args.max_file_size, int):
        try:
            args.max_file_size = parse_size(args.max_file_size)
        except ValueError as exc:
            raise config.ConfigError(f"--max-file-size: {exc}") from None
    args.max_file_size = args.max_file_size or top.max_file_size or MAX_FILE_BYTES

    def excluded(path: str) -> bool:
        """The command line's --exclude globs when given, else the file's configuration."""
        if args.exclude is not None:
            return matches_globs(path, args.exclude)
        return settings(path).excludes(path)

    files = list(iter_files(args.paths, excluded=excluded))
    if args.force_exclude:
        files = [f for f in files if not excluded(f)]
    plan = []
    chosen: dict[tuple[object, ...], tuple[str, ...]] = {}  # rule selections, computed once each
    for path in files:
        found = settings(path, is_file=True)
        target = args.target or found.target or "ray"
        select = _codes(args.select) if args.select is not None else found.select
        ignore = (*(_codes(args.ignore) if args.ignore is not None else found.ignore), *found.ignored_for(path))
        key = (tuple(select) if select is not None else None, ignore, target)
        if key not in chosen:
            codes = tuple(r.code for r in engine.select_rules(select, ignore, target))
            chosen[key] = (*codes, engine.UNPARSED_IGNORED) if engine.UNPARSED in ignore else codes
        plan.append((path, chosen[key], target))
    return plan


def check(paths: Sequence[str], *, jobs: int = 1, configured: bool = True) -> list[engine.FileResult]:
    """The codemod's findings for ``paths`` as ``--check`` finds them, nothing written (what
    ``python -m compat readiness`` reads a source tree with). ``configured``: each file's
    ``pyproject.toml`` applies, as on the command line; otherwise the default rules (an
    installed package's files)."""
    if configured:
        args = parse_args([*paths, "--check", "--jobs", str(jobs)])
        plan = _plan(args, config.Finder([r.code for r in RULES]))
        return run(plan, False, jobs, args.max_file_size)
    codes = tuple(r.code for r in engine.select_rules())
    plan = [(path, codes, "ray") for path in iter_files(paths)]
    return run(plan, False, jobs)


# From this many files on, the default is a process per usable core, as ruff uses every core
# unasked: below it, starting the processes costs more than they save (docs/performance.md).
PARALLEL_FROM = 200


def default_jobs(files: int) -> int:
    """``--jobs`` when not given: every core this process may run on, for a tree of
    :data:`PARALLEL_FROM` files or more; 1 below (output order is the same either way)."""
    if files < PARALLEL_FROM:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, files // 50))


def run(
    plan: list[tuple[str, tuple[str, ...], str]],
    write: bool,
    jobs: int,
    max_bytes: int = MAX_FILE_BYTES,
    others: Sequence[engine.FileResult] = (),
) -> list[engine.FileResult]:
    """Each file of ``plan`` migrated (written when ``write``). ``others``: results of the tree's
    other files, whose handoffs count in the tree pass (a re-run of some files)."""
    progress = _Progress(len(plan))
    results: list[engine.FileResult] = []
    if jobs == 1:
        for path, codes, target in plan:
            results.append(engine.process_file(path, codes, target, write, max_bytes=max_bytes, commit_write=False))
            progress.step()
    else:
        # Files go out in chunks: most take well under a millisecond, less than sending
        # one task to a worker process costs.
        chunk = max(1, min(64, len(plan) // (jobs * 8)))
        work = functools.partial(_process, write=write, max_bytes=max_bytes)
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for result in pool.map(work, plan, chunksize=chunk):
                results.append(result)
                progress.step()
    progress.done()
    # The tree pass: a file whose functions another module of the tree hands to Tune or a
    # Trainer is run again knowing it (migrate.tree), before anything is written.
    given = tree.given_roles(
        ((r.path, r.handoffs) for r in (*results, *others) if r.handoffs),
        [*(p for p, _, _ in plan), *(r.path for r in others)],
    )
    if given:
        position = {os.path.normpath(p): i for i, (p, _, _) in enumerate(plan)}
        for path, roles in given.items():
            i = position.get(path)
            if i is None:  # one of the others
                continue
            if results[i].parsed and any(f"def {name}" in (results[i].old_text or "") for name, _ in roles):
                _, codes, target = plan[i]
                results[i] = engine.process_file(
                    plan[i][0], codes, target, write, max_bytes=max_bytes, given_roles=roles, commit_write=False
                )
    if write:
        for result, (_, codes, _) in zip(results, plan, strict=True):
            engine.commit(result, codes)
    return results


def _process(job: tuple[str, tuple[str, ...], str], write: bool, max_bytes: int) -> engine.FileResult:
    path, codes, target = job
    return engine.process_file(path, codes, target, write, max_bytes=max_bytes, commit_write=False)


def _diff_name(side: str, path: str) -> str:
    return path if os.path.isabs(path) else f"{side}/{path}"


class _Progress:
    """A one-line counter on a terminal, for trees large enough to wait on."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0
        self.enabled = sys.stderr.isatty() and total >= 200

    def step(self) -> None:
        self.count += 1
        if self.enabled and (self.count % 50 == 0 or self.count == self.total):
            print(f"\r{self.count}/{self.total} files", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.enabled:
            print(file=sys.stderr)


def report(results: list[engine.FileResult], args: argparse.Namespace, write: bool) -> int:
    changed = [r for r in results if r.changed]
    errors = [r for r in results if r.error]
    flags = [(r, d) for r in results for d in r.diagnostics if not d.fixed]
    fixes = [(r, d) for r in results for d in r.diagnostics if d.fixed]
    if args.diff and args.output_format == "text":  # other formats stay machine-readable
        for r in changed:
            assert r.old_text is not None and r.new_text is not None
            sys.stdout.writelines(
                difflib.unified_diff(
                    r.old_text.splitlines(keepends=True), r.new_text.splitlines(keepends=True),
                    fromfile=_diff_name("a", r.path), tofile=_diff_name("b", r.path),
                )
            )  # fmt: skip
    if args.output_format != "text":
        rendered = formats.render(args.output_format, results, pending_fixes=not write)
        if rendered:
            print(rendered)
    else:
        listed = [f for f in formats.findings(results, pending_fixes=args.check) if f.kind != "error"]
        for f in listed:  # flags; with --check the pending rewrites too, in file order (as ruff lists them)
            print(formats.text_line(f))
        for r in errors:
            print(f"{r.path}:{r.error_line}:{r.error_col}: ERROR {r.error}", file=sys.stderr)
        if not args.quiet:
            verb = "rewritten" if write else "would be rewritten"
            by_code = Counter(d.code for _, d in flags)
            summary = ", ".join(f"{c}: {n}" for c, n in sorted(by_code.items())) or "none"
            parsed = sum(r.parsed for r in results)
            suppressed = sum(r.suppressed for r in results)
            silenced = f", {suppressed} suppressed by noqa" if suppressed else ""
            print(
                f"{len(results)} files scanned, {parsed} parsed; {len(changed)} {verb} ({len(fixes)} rewrites); "
                f"{len(flags)} flagged ({summary}){silenced}; {len(errors)} skipped with errors",
                file=sys.stderr,
            )
    return exit_status(results, args)


def exit_status(results: list[engine.FileResult], args: argparse.Namespace) -> int:
    """As ruff: 2 only for a bug of the tool; a file that cannot be read or parsed is a finding.
    A write exits 1 while flagged findings remain (as `ruff check --fix` while violations
    remain): a hook can tell "done" from "manual work left". ``--fail-on`` counts only the
    findings of that severity or worse (a pending rewrite is ``fix``)."""
    if any(r.internal for r in results if r.error):
        return 2
    if args.exit_zero:
        return 0
    if any(r.error for r in results):
        return 1
    for d in (d for r in results for d in r.diagnostics if not d.fixed):
        severity = formats.severity_of(d)
        if severity is None or at_least(severity, args.fail_on):  # None: an error, which always counts
            return 1
    pending = args.diff or args.check or args.statistics
    if pending and args.fail_on == "fix" and any(r.changed for r in results):
        return 1
    return 0


def statistics(results: list[engine.FileResult], fmt: str) -> str:
    """Findings counted by rule, worst severity first (``--statistics``), as ruff counts them:
    flags and pending rewrites; files that could not be processed as ``ERROR``."""
    counts = Counter((d.code, formats.severity_of(d)) for r in results for d in r.diagnostics)
    errors = sum(1 for r in results if r.error)  # files not read or not parsed
    cells = counts.pop(("ERROR", None), 0)  # notebook cells that do not parse (the rest of each notebook is migrated)

    def rank(key: tuple[str, str | None]) -> tuple[int, int, str]:
        return SEVERITIES.index(key[1]) if key[1] else len(SEVERITIES), -counts[key], key[0]

    rows: list[dict[str, object]] = [
        {"code": c, "name": BY_CODE[c].name, "severity": s, "count": counts[c, s],
         "fixable": BY_CODE[c].fix_safety != "none"}
        for c, s in sorted(counts, key=rank)
    ]  # fmt: skip
    if errors:
        rows.append({"code": "ERROR", "name": "not-processed", "severity": None, "count": errors, "fixable": False})
    if cells:
        rows.append({"code": "ERROR", "name": "cell-not-parsed", "severity": None, "count": cells, "fixable": False})
    if fmt == "json":
        return json.dumps(rows, indent=2)

    def mark(row: dict[str, object]) -> str:
        return "[*]" if row["fixable"] else "[ ]"

    lines = [
        "\t".join((str(row["count"]), str(row["code"]), str(row["severity"] or "error"), f"{mark(row)} {row['name']}"))
        for row in rows
    ]
    by_severity: Counter[str | None] = Counter()
    for (_, severity), count in counts.items():
        by_severity[severity] += count
    totals = ", ".join(f"{s} {by_severity[s]}" for s in SEVERITIES)
    unread = "".join(
        f"; {n} {what} not processed" for n, what in ((errors, "file(s)"), (cells, "notebook cell(s)")) if n
    )
    lines.append(f"Found {sum(counts.values())} finding(s): {totals}{unread}")
    return "\n".join(lines)


def add_noqa(plan: list[tuple[str, tuple[str, ...], str]], jobs: int, args: argparse.Namespace) -> int:
    """``--add-noqa``: each file's findings, flags and pending rewrites, marked where they are
    (a directive stops its rule's rewrite on its line); nothing rewritten. Marked files are
    checked again, and marked again, until nothing new is found (a held rewrite can leave old
    API that a flag then finds): at most :data:`ADD_NOQA_ROUNDS` rounds."""
    added = removed = 0
    touched: set[str] = set()
    results = run(plan, False, jobs, args.max_file_size)
    for round_ in range(ADD_NOQA_ROUNDS):
        marked_now = []
        for r in results:
            if r.error or r.old_text is None:
                continue
            text = r.old_text
            for remove in (False, True):  # mark what is found, then take out what no longer serves
                codes = (baseline.unused_by_line if remove else baseline.codes_by_line)(r.diagnostics)
                if not codes:
                    continue
                if r.path.endswith(".ipynb"):  # its findings name their cell: marked cell by cell
                    marked = baseline.add_noqa_to_notebook(text, r.diagnostics, remove=remove)
                else:
                    marked = (baseline.remove_unused if remove else baseline.add_noqa)(text, codes)
                text = marked.text
                if remove:
                    removed += marked.added
                else:
                    added += marked.added
            if text != r.old_text:
                atomic_write(r.path, text.encode(r.encoding), bom=r.bom)
                touched.add(r.path)
                marked_now.append(r.path)
        if not marked_now:
            break
        if round_ == ADD_NOQA_ROUNDS - 1:
            print(
                f"warning: the directives still changed after {ADD_NOQA_ROUNDS} rounds of marking; run "
                "--add-noqa again, and report the files above as a bug of the tool",
                file=sys.stderr,
            )
        again = set(marked_now)
        rerun = [p for p in plan if p[0] in again]
        kept = [r for r in results if r.path not in again]
        results = [*kept, *run(rerun, False, jobs, args.max_file_size, others=kept)]
    for r in results:
        if r.error:
            print(f"{r.path}:{r.error_line}:{r.error_col}: ERROR {r.error}", file=sys.stderr)
    dropped = f"; took out {removed} directive code(s) the others left unused" if removed else ""
    print(f"Added {added} noqa directive(s) in {len(touched)} file(s){dropped}.", file=sys.stderr)
    # What cannot carry a noqa directive (a cell or a file that does not parse, a file over the size
    # limit) is recorded as per-file-ignores = ["ERROR"], so a --check of the tree passes now.
    unmarkable = sorted(
        {r.path for r in results if r.error and r.recordable and not r.internal}
        | {r.path for r in results for d in r.diagnostics if d.code == "ERROR" and not d.suppressed}
    )
    if unmarkable:
        finder = config.Finder([r.code for r in RULES]) if not args.isolated else None
        written, failed = config.record_known_errors(unmarkable, finder)
        for target in written:
            print(f"Recorded {len(unmarkable) - len(failed)} file(s) that cannot carry a directive as "
                  f'per-file-ignores = ["ERROR"] in {target}.', file=sys.stderr)  # fmt: skip
        if failed:
            listed = ", ".join(f'"{p}" = ["ERROR"]' for p in failed)
            print(
                f"{len(failed)} file(s) cannot carry a directive and their per-file-ignores could not be "
                f"written (an inline table?): add to [tool.{config.TABLE}.per-file-ignores]: {listed}",
                file=sys.stderr,
            )
            return 1 if not args.exit_zero else 0
    if any(r.internal for r in results if r.error):
        return 2
    return 1 if any(r.error and not r.recordable for r in results) and not args.exit_zero else 0


# --add-noqa's rounds of marking (each round's directives can hold rewrites that leave old API to
# flag, or leave a directive unused).
ADD_NOQA_ROUNDS = 8


if __name__ == "__main__":
    sys.exit(main())
