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
        return _matches(path, self.exclude, self.root)

    def ignored_for(self, path: str) -> tuple[str, ...]:
        """Codes ``per-file-ignores`` turns off for ``path``."""
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
        self._by_dir: dict[Path, Settings] = {}

    def for_path(self, path: str, *, is_file: bool = False) -> Settings:
        """The settings for ``path`` (a file's are its directory's; ``is_file`` spares a stat)."""
        absolute = os.path.abspath(path)
        directory = os.path.dirname(absolute) if is_file or not os.path.isdir(absolute) else absolute
        return self.for_directory(Path(directory))

    def for_directory(self, directory: Path) -> Settings:
        found = self._by_dir.get(directory)
        if found is None:
            candidate = directory / "pyproject.toml"
            settings = self._load(candidate, self._codes) if candidate.is_file() else Settings()
            if settings.path is None:
                parent = directory.parent
                settings = self.for_directory(parent) if parent != directory else Settings()
            found = self._by_dir[directory] = settings
        return found
