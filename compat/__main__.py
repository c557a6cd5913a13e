"""``python -m compat <command>``: ``compare`` runs a script under both semantics;
``readiness`` tells whether jobs, repositories and installed packages can flip."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m compat compare [--html FILE] [--json FILE] [--timeout S] -- SCRIPT [ARGS...]")
        print("       python -m compat readiness [--site-packages] [--output-format FORMAT] PATH_OR_URI...")
        return 0 if args else 2
    if args[0] == "readiness":
        from compat.readiness import main as readiness

        return readiness(args[1:])
    if args[0] != "compare":
        print(f"error: unknown command {args[0]!r}; the commands are: compare, readiness", file=sys.stderr)
        return 2
    from compat.compare import main as compare

    return compare(args[1:])


if __name__ == "__main__":
    sys.exit(main())
