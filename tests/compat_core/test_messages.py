"""Every user-facing text is in compat_core/messages.py: a ``raise`` or a warning in the runtime
builds no text in place, but for a reviewed list of texts no user reads as compat's words."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

from tests.compat_core import ROOT, runtime_sources

pytestmark = pytest.mark.one_pass  # reads files: no Ray, no mode

MESSAGES = "compat_core/messages.py"
WARNS = ("warnings.warn", "where.warn", "_where.warn", "warn")

# (file, function): texts built in place, reviewed. None is compat's words to a user about
# their program.
REVIEWED = {
    ("compat/__init__.py", "__getattr__"): "Python's own words for a missing module attribute",
    ("compat/testing/__init__.py", "assert_equivalent"): "an assertion's report, one line per difference found",
    ("compat/testing/schedule.py", "scheduled_validation"): "the failure a property test injects on purpose",
    (
        "compat_core/releases/standins.py",
        "__post_init__",
    ): "Ray's LoggingConfig stand-in: Ray's words, below messages",
    ("compat_core/files/pickled.py", "find_class"): "the refused global's name; its class words the error",
    ("compat_core/migration/usage.py", "add"): "compat's own bug: a V1-only kind missing from the catalogue",
    ("compat_core/run/channel/wire.py", "header"): "caught: the detail of the log line that closes the connection",
    ("compat_core/run/channel/wire.py", "challenge"): "caught: the worker falls back to actor calls, logged",
    ("compat_core/run/ledger/delivery.py", "since"): "compat's own bug: a consumer the run was not opened with",
    ("compat_core/run/ledger/host.py", "call"): "compat's own bug: a call the ledger does not have",
    ("compat_core/run/ledger/validating.py", "request"): "compat's own bug: a ledger opened without validation",
    ("compat_core/semantics/result.py", "read_later"): "Python's attribute protocol: a field not made when read",
    ("compat_core/semantics/stored.py", "_read_only"): "compat's own bug: a read-only view written to",
    ("compat_core/semantics/v1_logs.py", "_row_of"): "compat's own bug: a ledger opened without V1's rows",
    ("compat_core/semantics/validations.py", "_load"): "caught: the warning naming the file carries it",
}
FRAGMENTS = {
    "compat/readiness/_record.py",  # what a record's field should be, completing readiness_field_malformed
    "compat_core/settings.py",  # what each type of value accepts, completing invalid_setting
}


def _builds_text(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _builds_text(node.left) or _builds_text(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "join"):
        return _builds_text(node.func.value)
    return False


def _is_error_class(func: ast.AST) -> bool:
    """An exception class by its name (``ValueError``, ``CompatError``, ``V1OnlyWarning``)."""
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    builtin = getattr(builtins, name, None)
    return name.endswith(("Error", "Warning", "Exception")) or (
        isinstance(builtin, type) and issubclass(builtin, BaseException)
    )


def inline_texts(path: Path) -> list[tuple[str, int]]:
    """(function, line) of each raise, returned exception or warning whose text is built in place."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        call = None
        if isinstance(node, (ast.Raise, ast.Return)):
            value = node.exc if isinstance(node, ast.Raise) else node.value
            if isinstance(value, ast.Call) and _is_error_class(value.func):
                call = value
            elif isinstance(node, ast.Raise) and isinstance(value, ast.Call):
                call = value  # a helper that makes the error: its text arguments count too
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in WARNS:
            call = ast.Call(node.func, node.args[:1], [])
        if call is not None and any(_builds_text(a) for a in call.args):
            found.append((function, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(path.read_text()), "<module>")
    return found


def test_no_raise_or_warning_builds_its_text_in_place() -> None:
    inline = []
    for relative, path in runtime_sources(but=MESSAGES):
        for function, line in inline_texts(path):
            if (relative, function) not in REVIEWED and relative not in FRAGMENTS:
                inline.append(f"{relative}:{line} (in {function})")
    assert inline == [], "put these texts in compat_core/messages.py:\n" + "\n".join(inline)


def test_every_reviewed_exception_is_still_there() -> None:
    """The list shrinks with the code: an entry whose text moved to messages.py goes."""
    here = set()
    for relative, _ in REVIEWED:
        here |= {(relative, function) for function, _ in inline_texts(ROOT / relative)}
    assert set(REVIEWED) <= here, set(REVIEWED) - here


def test_the_check_sees_each_form(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import warnings\n"
        "def a(x):\n    raise ValueError(f'bad {x}')\n"
        "def b():\n    raise TypeError('bad ' + 'x')\n"
        "def c():\n    return CompatError('it is wrong')\n"
        "def d():\n    warnings.warn('careful')\n"
        "def e():\n    raise ValueError(messages.bad(1))\n"
        "def f():\n    raise KeyError(name)\n"
    )
    assert inline_texts(module) == [("a", 3), ("b", 5), ("c", 7), ("d", 9)]
