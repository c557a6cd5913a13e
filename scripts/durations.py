"""Where a pytest pass's time went, by test file: ``python scripts/durations.py PASS.xml``.

Reads the JUnit XML file scripts/test.sh has each pass write (``--junitxml``; each case's time is
its setup, call and teardown) and prints the files that took longest, with how many cases each
ran: the per-file view pytest's ``--durations`` (per case) does not give, for deciding what the CI
suite keeps (README.md, "The CI suite and the full suite")."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter


def main(path: str, top: int = 15) -> None:
    try:
        cases = list(ET.parse(path).iter("testcase"))
    except (OSError, ET.ParseError) as error:
        print(f"durations: cannot read {path}: {error}", file=sys.stderr)
        return
    seconds: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for case in cases:
        name = case.get("classname", "?").replace(".", "/") + ".py"
        seconds[name] += float(case.get("time") or 0)
        count[name] += 1
    total = sum(seconds.values())
    print(f"== time by file ({path}: {len(cases)} cases, {total / 60:.1f} min) ==")
    for name, spent in seconds.most_common(top):
        print(f"{spent:8.1f}s {count[name]:4d} cases  {name}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
