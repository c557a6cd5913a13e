"""libcst for the engine: a module's tree parsed (its rare refusals as a ``SyntaxError``), wrapped
for metadata, and whether a text ``ast`` refused is a newer Python's. libcst is imported when a
file needs it: most runs never pay for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import MetadataWrapper


def parse_module(text: str) -> cst.Module:
    """libcst's tree of ``text``. libcst's rare refusals of what ``ast`` accepts are raised
    as :class:`LibcstSyntaxError`, a ``SyntaxError``, so callers handle one error type and
    need not import libcst."""
    import libcst as cst

    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise LibcstSyntaxError(exc.message, exc.raw_line, exc.raw_column) from exc


def wrap(module: cst.Module) -> MetadataWrapper:
    from libcst.metadata import MetadataWrapper

    return MetadataWrapper(module, unsafe_skip_copy=True)


def newer_python(text: str) -> bool:
    """Whether ``text``, which this interpreter's ``ast`` refuses, is valid in a newer Python
    (libcst's parser reads the grammar of newer releases: a 3.12 ``type`` statement, nested
    f-string quotes)."""
    import libcst as cst

    try:
        cst.parse_module(text)
    except Exception:
        return False
    return True


class LibcstSyntaxError(SyntaxError):
    """Source ``ast`` parses and libcst's parser does not (``offset`` 1-based, as ``SyntaxError``'s)."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message, ("<unknown>", line, column + 1, None))
