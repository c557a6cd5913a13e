"""What every rule is: a stable code, a one-line summary, its fix safety, its severity, a
ruff-style docstring, and a pass over one parsed module."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from migrate._index import Index, build
from migrate.severity import Severity

if TYPE_CHECKING:  # libcst is imported only when a file needs a libcst form (start-up time)
    import libcst as cst
    from libcst.metadata import MetadataWrapper

FixSafety = Literal["safe", "unsafe", "none"]


@dataclass(frozen=True)
class Diagnostic:
    """One finding: a rewrite (``fixed=True``) or a flag the user must act on."""

    code: str
    line: int
    col: int
    message: str
    fixed: bool
    suppressed: bool = False  # by a `noqa` comment on its line (counted, not reported)
    severity: Severity | None = None  # milder than its rule's (which is the worst its findings have)


@dataclass(frozen=True)
class Context:
    """What rules may know about the run: the target API."""

    target: Literal["ray", "compat", "native"] = "ray"
    path: str = ""  # the file's path ("" for text that is not a file)
    # (function, "tune" | "train"): what other modules of the tree hand this file's functions to.
    given_roles: tuple[tuple[str, str], ...] = ()


class Rule:
    """Base class. Subclasses set the class attributes and implement :meth:`apply`."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    fix_safety: ClassVar[FixSafety]
    severity: ClassVar[Severity] = "fix"  # flag rules set theirs (tests/migrate/test_conventions.py)
    targets: ClassVar[tuple[str, ...]] = ("ray", "compat", "native")
    # Text that must appear for the rule to have anything to do: lets the engine skip
    # resolving metadata for rules that cannot match.
    trigger: ClassVar[re.Pattern[str]]
    # Qualified-name prefixes a file must import or refer to for a rewriting rule to have
    # anything to do: files without any are never handed to libcst.
    wants: ClassVar[tuple[str, ...]] = ()
    # Runs again after the other rewrites when they changed the text: what they left unused
    # is removed in the same run, so one write reaches the fixed point (RTM006).
    cleanup: ClassVar[bool] = False

    @classmethod
    def trigger_words(cls) -> tuple[str, ...]:
        """The words of a trigger that is a list of words (``\\b`` aside), one of which a text
        must contain to match it; ``()`` for any other trigger."""
        words = _TRIGGER_WORDS.get(cls.trigger)
        if words is None:
            words = _TRIGGER_WORDS[cls.trigger] = _literal_words(cls.trigger.pattern)
        return words

    @classmethod
    def triggered(cls, text: str) -> bool:
        """Whether ``text`` matches the trigger. A trigger that is a list of words is first
        looked up with ``in`` (much faster than a regex scan of a large file that does not
        contain them); the regex then only confirms word boundaries."""
        words = cls.trigger_words()
        if words:
            if not any(w in text for w in words):
                return False
            if "\\b" not in cls.trigger.pattern:
                return True
        return cls.trigger.search(text) is not None

    @classmethod
    def could_apply(cls, index: Index) -> bool:
        """Whether the file indexed by ``index`` may give this rule anything to do."""
        return index.refers_to(cls.wants)

    @classmethod
    def cleanup_needed(cls, first: Index, current: Index) -> bool:
        """For a ``cleanup`` rule: whether the rewrites that made the text ``current`` indexes
        from the text ``first`` indexes may have left it something new to do."""
        return True

    @classmethod
    def may_apply_after_rewrites(cls, first: Index) -> bool:
        """Whether this rule may have anything to do in a text that the rewriting rules
        before it made from the text ``first`` indexes. True unless the rule can tell from
        that input alone: a False spares the engine indexing the rewritten text again."""
        return True

    def __init__(self, context: Context, index: Index | None = None) -> None:
        self.context = context
        self.diagnostics: list[Diagnostic] = []
        self._index = index  # the engine's index of the text this rule rewrites

    def index_of(self, wrapper: MetadataWrapper) -> Index:
        """The ``ast`` index of the module ``apply`` receives (the engine's, else built)."""
        if self._index is None:
            self._index = build(wrapper.module.code, given_roles=self.context.given_roles)
        return self._index

    def fast(self, index: Index) -> str | None:
        """The rewrite as text edits at ``index``'s positions (:mod:`migrate._fast`), for the
        shapes whose libcst output is known exactly: the new text (findings appended), or
        None (nothing appended) when the file needs :meth:`apply`."""
        return None

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        """Return the module (rewritten or not); append findings to ``self.diagnostics``."""
        raise NotImplementedError


_TRIGGER_WORDS: dict[re.Pattern[str], tuple[str, ...]] = {}


def _literal_words(pattern: str) -> tuple[str, ...]:
    """``a|b\\.c|\\bd\\b`` -> ``("a", "b.c", "d")``; ``()`` when a part is not a plain word."""
    words = []
    for part in pattern.replace("\\b", "").split("|"):
        word = re.sub(r"\\(.)", r"\1", part)
        if not word or re.escape(word) != part:
            return ()
        words.append(word)
    return tuple(words)
