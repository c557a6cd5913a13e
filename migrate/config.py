"""``[tool.ray-train-migrate]`` in ``pyproject.toml``, found as ruff finds its configuration.

For each file, the settings come from the nearest ``pyproject.toml`` upward from the file's
directory that has a ``[tool.ray-train-migrate]`` table (a ``pyproject.toml`` without one is
passed over, as ruff passes over one without ``[tool.ruff]``). Paths and globs in it are
relative to its directory. Flags given on the command line win over the file.

```toml
[tool.ray-train-migrate]
target = "compat"                       # ray (default), compat or native
select = ["RTM"]                        # rule codes or prefixes
ignore = ["RTM116"]
exclude = ["legacy/*", "*_pb2.py"]
output-format = "github"                # text, json, github or sarif
fail-on = "silent"                      # exit 1 only for breaks and silent findings
max-file-size = "2MiB"                  # larger files are skipped (default 512KiB: generated code)
[tool.ray-train-migrate.per-file-ignores]
"tests/*" = ["RTM101"]
```
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from migrate.severity import SEVERITIES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TABLE = "ray-train-migrate"
TARGETS = ("ray", "compat", "native")
FORMATS = ("text", "json", "github", "sarif")
KEYS = ("select", "ignore", "exclude", "per-file-ignores", "target", "output-format", "fail-on", "max-file-size")


class ConfigError(Exception):
    """A configuration the tool cannot use: the message names the file, the key and what it accepts."""


@dataclass(frozen=True)
class Settings:
    """One ``[tool.ray-train-migrate]`` table (all unset: no file)."""

    path: Path | None = None  # the pyproject.toml it came from
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    target: str | None = None
    output_format: str | None = None
    fail_on: str | None = None
    max_file_size: int | None = None

    @property
    def root(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    def excludes(self, path: str) -> bool:
        return bool(self.exclude) and _matches(path, self.exclude, self.root)

    def ignored_for(self, path: str) -> tuple[str, ...]:
        """Codes ``per-file-ignores`` turns off for ``path``."""
        if not self.per_file_ignores:
            return ()
        matching = (codes for pattern, codes in self.per_file_ignores if _matches(path, (pattern,), self.root))
        return tuple(c for codes in matching for c in codes)


def _matches(path: str, patterns: Iterable[str], root: Path) -> bool:
    """``path`` relative to ``root``, or its file name, matches one of the globs."""
    patterns = tuple(patterns)
    if not patterns:
        return False
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root).replace(os.sep, "/")
    name = os.path.basename(absolute)
    return any(fnmatch(relative, p) or fnmatch(name, p) or fnmatch(relative, p.rstrip("/") + "/*") for p in patterns)


def load(path: Path, known_codes: Iterable[str]) -> Settings:
    """The table of ``path`` (a ``pyproject.toml``), validated; raises :class:`ConfigError`."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    table = data.get("tool", {}).get(TABLE)
    if table is None:
        return Settings()
    where = f"{path}: [tool.{TABLE}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    for key in table:
        if key not in KEYS:
            close = difflib.get_close_matches(key.replace("_", "-"), KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{where}: unknown key {key!r}{hint}; accepted keys: {', '.join(KEYS)}")
    codes = tuple(known_codes)
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where}: 'per-file-ignores' must be a table of glob = [codes]")
    return Settings(
        path=path,
        select=_codes(table["select"], "select", where, codes) if "select" in table else None,
        ignore=_codes(table.get("ignore", []), "ignore", where, codes),
        exclude=_strings(table.get("exclude", []), "exclude", where),
        per_file_ignores=tuple(
            (glob, _codes(value, f"per-file-ignores.{glob!r}", where, codes)) for glob, value in per_file.items()
        ),
        target=_choice(table, "target", TARGETS, where),
        output_format=_choice(table, "output-format", FORMATS, where),
        fail_on=_choice(table, "fail-on", SEVERITIES, where),
        max_file_size=_size(table, "max-file-size", where),
    )


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{where}: {key!r} must be a list of strings, e.g. {key} = ["..."]; got {value!r}')
    return tuple(value)


def _codes(value: Any, key: str, where: str, known: tuple[str, ...]) -> tuple[str, ...]:
    codes = tuple(c.strip().upper() for c in _strings(value, key, where))
    for code in codes:
        if not any(k.startswith(code) for k in known):
            raise ConfigError(f"{where}: {key!r}: unknown rule code {code!r}; see `python -m migrate --list-rules`")
    return codes


def _size(table: Mapping[str, Any], key: str, where: str) -> int | None:
    from migrate.files import parse_size

    if key not in table:
        return None
    try:
        return parse_size(table[key])
    except ValueError as exc:
        raise ConfigError(f"{where}: {key!r}: {exc}") from None


def _choice(table: Mapping[str, Any], key: str, choices: tuple[str, ...], where: str) -> str | None:
    if key not in table:
        return None
    value = table[key]
    if value not in choices:
        raise ConfigError(f"{where}: {key!r} is {value!r}; accepted values: {', '.join(choices)}")
    return str(value)


class Finder:
    """The settings of each directory: the nearest ``pyproject.toml`` with the table, upward.
    Each file is read once per run."""

    def __init__(self, known_codes: Iterable[str], load_file: Callable[[Path, Iterable[str]], Settings] = load) -> None:
        self._codes = tuple(known_codes)
        self._load = load_file
        self._by_dir: dict[str, Settings] = {}  # by the directory's absolute, normal name

    def for_path(self, path: str, *, is_file: bool = False) -> Settings:
        """The settings for ``path`` (a file's are its directory's; ``is_file`` spares a stat)."""
        absolute = os.path.abspath(path)
        directory = os.path.dirname(absolute) if is_file or not os.path.isdir(absolute) else absolute
        found = self._by_dir.get(directory)  # a tree's thousands of files make no Path each
        return found if found is not None else self.for_directory(Path(directory))

    def for_directory(self, directory: Path) -> Settings:
        found = self._by_dir.get(str(directory))
        if found is None:
            candidate = directory / "pyproject.toml"
            settings = self._load(candidate, self._codes) if candidate.is_file() else Settings()
            if settings.path is None:
                parent = directory.parent
                settings = self.for_directory(parent) if parent != directory else Settings()
            found = self._by_dir[str(directory)] = settings
        return found


def record_known_errors(paths: Iterable[str], finder: Finder | None) -> tuple[list[Path], list[str]]:
    """``--add-noqa`` for what cannot carry a ``# noqa`` (a file over the size limit or that does
    not parse, a notebook cell that does not parse): ``"<path>" = ["ERROR"]`` in the
    ``per-file-ignores`` of the configuration each file follows (the nearest ``pyproject.toml``
    with the table; else the nearest ``pyproject.toml`` upward, which gets the table; else, for a
    file under the current directory, a new ``pyproject.toml`` there). Returns the files written
    and the paths it could not record (a ``per-file-ignores`` written as an inline table, a file
    with no project around it: the hint says what to add)."""
    by_file: dict[Path, list[str]] = {}
    failed: list[str] = []
    for path in sorted(set(paths)):
        absolute = os.path.abspath(path)
        settings = finder.for_path(path, is_file=True) if finder else Settings()
        target = settings.path or _nearest_pyproject(Path(absolute).parent)
        if target is None and Path(absolute).is_relative_to(Path.cwd()):
            target = Path.cwd() / "pyproject.toml"
        if target is None:
            failed.append(path)
            continue
        by_file.setdefault(target, []).append(os.path.relpath(absolute, target.parent).replace(os.sep, "/"))
    written: list[Path] = []
    for target, globs in by_file.items():
        text = target.read_text(encoding="utf-8") if target.is_file() else ""
        new = _with_error_ignores(text, globs)
        if new is None:
            failed += globs
            continue
        if new != text:
            target.write_text(new, encoding="utf-8")
            written.append(target)
    return written, failed


def _nearest_pyproject(directory: Path) -> Path | None:
    for candidate in (directory, *directory.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate / "pyproject.toml"
    return None


_HEADER = f"[tool.{TABLE}.per-file-ignores]"


def _with_error_ignores(text: str, globs: list[str]) -> str | None:
    """``text`` (a pyproject.toml) with ``"glob" = ["ERROR"]`` for each glob, or None when the
    edit cannot be made as text (the result must parse and hold each entry)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    existing = data.get("tool", {}).get(TABLE, {}).get("per-file-ignores", {})
    lines = text.split("\n")
    header = next((i for i, line in enumerate(lines) if line.strip() == _HEADER), None)
    if existing and header is None:
        return None  # an inline or dotted per-file-ignores: not edited by hand here
    todo = [g for g in globs if "ERROR" not in existing.get(g, ())]
    if not todo:
        return text
    new_lines = [f"{_quoted(g)} = [{', '.join(_quoted(c) for c in [*existing.get(g, ()), 'ERROR'])}]" for g in todo]
    if header is None:
        body = text if not text or text.endswith("\n") else text + "\n"
        new = body + ("\n" if body else "") + "\n".join([_HEADER, *new_lines]) + "\n"
    else:
        kept = [line for line in lines if not any(_is_entry(line, g) for g in todo)]
        at = next(i for i, line in enumerate(kept) if line.strip() == _HEADER) + 1
        new = "\n".join(kept[:at] + new_lines + kept[at:])
    try:
        check = tomllib.loads(new)["tool"][TABLE]["per-file-ignores"]
    except (tomllib.TOMLDecodeError, KeyError):
        return None
    if any("ERROR" not in check.get(g, ()) for g in globs):
        return None  # an entry spread over several lines: not found as one line
    return new


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _is_entry(line: str, glob: str) -> bool:
    stripped = line.strip()
    return stripped.startswith((_quoted(glob), f"'{glob}'")) and "=" in stripped and stripped.endswith("]")
