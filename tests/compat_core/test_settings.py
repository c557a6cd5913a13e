"""compat_core.settings: every variable compat reads, its parser, its error, and what reads them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from compat_core import settings
from compat_core.errors import InvalidSwitchValueError
from tests.compat_core import ROOT, runtime_sources

pytestmark = pytest.mark.one_pass  # plain code: no Ray, no mode


@pytest.mark.parametrize(
    ("setting", "raw", "value"),
    [
        (settings.STRICT, "TRUE", True),
        (settings.STRICT, " 0 ", False),
        (settings.V2_RAY_ROUNDS, "1", True),
        (settings.VOTE_TIMEOUT_S, "2.5", 2.5),
        (settings.LEDGER_MAX_RESTARTS, "0", 0),
        (settings.RECORD_MAX_BYTES, "1024", 1024),
        (settings.RECORD_CHANNEL, "Actor", "actor"),
        (settings.V1_ENGINE, "V2", "v2"),
        (settings.JOB_NAME, " nightly ", "nightly"),
        (settings.V2_ENABLED, "True", True),
        (settings.V2_ENABLED, "0", False),
    ],
)
def test_each_type_reads_what_it_accepts(setting: settings.Setting[object], raw: str, value: object) -> None:
    assert setting.get({setting.name: raw}) == value


@pytest.mark.parametrize("setting", settings.SETTINGS, ids=lambda s: s.name)
def test_unset_is_the_default(setting: settings.Setting[object]) -> None:
    assert setting.get({}) == setting.default


@pytest.mark.parametrize("setting", [s for s in settings.SETTINGS if s.blank_is_unset], ids=lambda s: s.name)
def test_set_but_empty_is_the_default(setting: settings.Setting[object]) -> None:
    """``export NAME=`` leaves the variable set to nothing: read as unset."""
    assert setting.get({setting.name: ""}) == setting.default
    assert setting.get({setting.name: "  "}) == setting.default


@pytest.mark.parametrize(
    ("setting", "raw", "says"),
    [
        (settings.STRICT, "yes", "COMPAT_STRICT='yes': give 1 or true to turn it on, 0 or false to leave it off"),
        (settings.V2_RAY_ROUNDS, "on", "COMPAT_V2_RAY_ROUNDS='on': give 1 or true"),
        (settings.VOTE_TIMEOUT_S, "nan", "COMPAT_VOTE_TIMEOUT_S='nan': give a number of seconds > 0 (default 60)"),
        (settings.LEDGER_MAX_RESTARTS, "-1", "COMPAT_LEDGER_MAX_RESTARTS='-1': give a whole number >= 0 (default 3)"),
        (settings.RECORD_MAX_BYTES, "0", "positive whole number of bytes"),
        (settings.RECORD_CHANNEL, "pigeon", "not a record channel compat knows"),
        (settings.V1_ENGINE, "v3", "not an engine compat knows"),
        (settings.V2_ENABLED, " 1", "would silently run V1"),  # Ray reads " 1" as V1
        (settings.V2_ENABLED, "", "would silently run V1"),  # and an empty value too
    ],
)
def test_a_bad_value_is_one_error_naming_the_variable_and_what_it_accepts(
    setting: settings.Setting[object], raw: str, says: str
) -> None:
    with pytest.raises(InvalidSwitchValueError) as raised:
        setting.get({setting.name: raw})
    assert isinstance(raised.value, ValueError)
    assert says in str(raised.value)
    assert setting.name in str(raised.value)


def test_the_propagated_variables_are_the_registry_s() -> None:
    assert settings.PROPAGATED == (
        "RAY_TRAIN_V2_ENABLED",
        "COMPAT_RAY_TRAIN_V2_ENABLED",  # the selection, where Ray refuses V1's value
        "COMPAT_STRICT",
        "COMPAT_V2_RAY_ROUNDS",
    )
    environ = {"RAY_TRAIN_V2_ENABLED": "0", "COMPAT_STRICT": "1", "COMPAT_VOTE_TIMEOUT_S": "5"}
    assert settings.propagated_env(environ) == {"RAY_TRAIN_V2_ENABLED": "0", "COMPAT_STRICT": "1"}


def _documented() -> dict[str, str]:
    """docs/environment_variables.md's rows: variable -> its "read by" column."""
    rows = {}
    for line in (ROOT / "docs" / "environment_variables.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4:
            for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0]):
                rows[name] = cells[1]
    return rows


def test_the_environment_variables_guide_lists_the_registry() -> None:
    """Every variable compat reads has a row saying compat reads it; every row that says compat
    reads a variable names one in the registry."""
    rows = _documented()
    registry = {s.name for s in settings.SETTINGS}
    assert registry <= set(rows), registry - set(rows)
    read_by_compat = {name for name, read_by in rows.items() if read_by.startswith("compat")}
    assert read_by_compat == registry


# Reads of the environment outside the registry, reviewed: none is a variable of compat's.
NOT_COMPAT_S = {
    ("compat/readiness/_record.py", '"JPY_SESSION_NAME"'),  # Jupyter's: the notebook a run came from
    ("compat/compare/_render.py", '"COLUMNS"'),  # the terminal's width
    ("compat_core/config.py", '"RAY_STORAGE"'),  # Ray's: V1's RunConfig reads it
    ("v1/backend.py", '"RAY_STORAGE"'),
    ("compat_core/config.py", "name"),  # Tune's TUNE_RESULT_DIR / RAY_AIR_LOCAL_CACHE_DIR, which V1's engine refuses
    ("v2/backend.py", "POLL_ENV_VAR"),  # Ray V2's controller's: compat sets it where the user did not
    ("v2/backend.py", "START_TIMEOUT_ENV_VAR"),
    ("compat_core/run/ledger/host.py", "name"),  # Tune's credentials handed to the ledger's host
    ("compat_core/releases/adapters.py", "variable"),  # Ray's switch, set and restored around one call
    ("compat_core/integration/patch.py", "k"),  # a run's variables, saved to be restored
    ("compat_core/integration/patch.py", "key"),
}


ENVIRONS = ("os.environ", "environ")


def environment_reads(path: Path) -> list[str]:
    """The key of each read of ``os.environ`` (``.get(k)``, ``[k]``, ``k in``) or ``os.getenv(k)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        key = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            target = ast.unparse(node.func)
            if target in ("os.environ.get", "os.getenv", "environ.get", "os.environ.pop"):
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) in ENVIRONS:
            key = node.slice
        elif isinstance(node, ast.Compare) and any(ast.unparse(c) in ENVIRONS for c in node.comparators):
            key = node.left
        if key is not None:
            found.append(ast.unparse(key).replace("'", '"'))
    return found


def test_no_module_reads_a_variable_of_compat_s_but_the_registry() -> None:
    stray = [
        f"{relative}: os.environ[{key}]"
        for relative, path in runtime_sources(but="compat_core/settings.py")
        for key in environment_reads(path)
        if (relative, key) not in NOT_COMPAT_S
    ]
    assert stray == [], "read these through compat_core/settings.py:\n" + "\n".join(stray)


def test_the_read_check_sees_each_form(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import os\nos.environ.get('COMPAT_STRICT')\nos.environ['COMPAT_X']\n'COMPAT_Y' in os.environ\n"
        "os.getenv(NAME)\nos.environ['A'] = '1'\n"
    )
    assert environment_reads(module) == ['"COMPAT_STRICT"', '"COMPAT_X"', '"COMPAT_Y"', "NAME", '"A"']
