"""The V1-era API Ray shipped (Ray 2.0 to the newest supported release) and what replaces it.

``entries.py`` is generated from Ray's own releases by ``scripts/ray_api_catalogue.py`` (what
each release exported, held against the newest release's V2 API); ``advice.py`` is the reviewed
table of what to do instead. RTM128 and RTM100 read both; docs/rules.md lists them.
"""

from __future__ import annotations

from dataclasses import dataclass

from migrate.catalogue.advice import CHANGED, COMMON_MEMBER_NAMES, advice_for
from migrate.catalogue.entries import DISTINCT_MEMBERS, ENTRIES, NEWEST_NAMES, RELEASES

NEWEST = RELEASES[-1]
MEMBER_KINDS = ("method", "property", "attribute")  # an entry's kinds that are a class's members


def _members_of_moved_classes() -> dict[str, tuple[str, str, str, str, str, str]]:
    """``ray.train.Checkpoint.from_dict`` for ``ray.air.Checkpoint.from_dict``: a class that moved
    lacks its removed members under its new name too (a rewrite of the class's import makes the
    old member read as the new class's)."""
    aliases: dict[str, tuple[str, str, str, str, str, str]] = {}
    for name, row in ENTRIES.items():
        owner, _, member = name.rpartition(".")
        moved = ENTRIES.get(owner)
        if row[4] in (*MEMBER_KINDS, "keyword") and moved and moved[0] == "moved":
            aliases.setdefault(f"{moved[1]}.{member}", row)
    return aliases


_ALIASES = _members_of_moved_classes()


def _changed(name: str) -> Entry:
    """The entry of a name of ``CHANGED`` (a member when its owner is a class: capitalised)."""
    owner = name.rpartition(".")[0].rpartition(".")[2]
    return Entry(name, "changed", "", "", "", "method" if owner[:1].isupper() else "class", "")


@dataclass(frozen=True)
class Entry:
    """One name of Ray's V1-era API that the newest release does not have as it was."""

    name: str  # qualified: ray.train.world_size, ray.air.Checkpoint.from_dict, ray.tune.SyncConfig.(syncer=)
    status: str  # moved, moved-late (its new home is not in every supported release), removed, changed
    home: str  # a moved name's new qualified name
    first: str  # the first and last release that shipped it
    last: str
    kind: str  # class, function, imported, method, property, attribute, keyword
    evidence: str  # ray==X.Y.Z: the file it was read from

    @property
    def shown(self) -> str:
        """The name as users write it: ``Checkpoint.from_dict``, ``SyncConfig(syncer=...)``."""
        if self.kind == "keyword":
            owner, _, keyword = self.name.rpartition(".")
            return f"{owner.rpartition('.')[2]}({keyword[1:-2]}=...)"
        if self.kind in MEMBER_KINDS:
            owner, _, member = self.name.rpartition(".")
            return f"{owner.rpartition('.')[2]}.{member}"
        return self.name

    @property
    def instead(self) -> str:
        """What replaces it (a moved name's new home, else the reviewed advice)."""
        if self.status in ("moved", "moved-late"):
            module, _, name = self.home.rpartition(".")
            late = (
                " (Ray 2.44 and newer do not all have it there: check your Ray)" if self.status == "moved-late" else ""
            )
            return f"import `{name}` from `{module}`{late}"
        return advice_for(self.name) or ""

    def message(self) -> str:
        shipped = f"Ray {self.first}" if self.first == self.last else f"Ray {self.first}-{self.last}"
        if self.status == "changed":
            what = f"`{self.shown}` is V1's API"
        elif self.status in ("moved", "moved-late"):
            what = f"`{self.shown}` ({shipped}) moved"
        else:
            what = f"`{self.shown}` ({shipped}) is not in Ray {NEWEST}; instead"
        return f"{what}: {self.instead}"


# The classes some of whose members or keywords are entries: a module that names one may use them.
MEMBER_OWNERS = frozenset(
    name.rpartition(".")[0]
    for name, row in [*ENTRIES.items(), *_ALIASES.items()]
    if row[4] in (*MEMBER_KINDS, "keyword")
) | frozenset(name.rpartition(".")[0] for name in CHANGED)


# The names of every member entry (``config``, ``as_trainable``, ``uri``): an attribute of one of
# these names on an object whose class the module shows may be a finding.
MEMBER_NAMES = frozenset(
    name.rpartition(".")[2] for name, row in [*ENTRIES.items(), *_ALIASES.items()] if row[4] in MEMBER_KINDS
) | frozenset(name.rpartition(".")[2] for name in CHANGED if _changed(name).kind in MEMBER_KINDS)


def may_concern(qualified: str) -> bool:
    """Whether a module that refers to ``qualified`` may use something of the catalogue through it."""
    return qualified in MEMBER_OWNERS or lookup(qualified) is not None


def lookup(qualified: str, *, exact: bool = False) -> Entry | None:
    """The entry of ``qualified``, or (unless ``exact``) of the nearest enclosing name that has
    one (``ray.train.lightning.LightningTrainer.fit`` -> ``LightningTrainer``)."""
    name = qualified
    while name.count(".") >= 2:
        row = ENTRIES.get(name) or _ALIASES.get(name)
        if row is not None:
            return Entry(name, *row)
        if name in CHANGED:
            return _changed(name)
        if exact:
            return None
        name = name.rpartition(".")[0]
    return None


def member_by_name(member: str) -> Entry | None:
    """A removed member recognisable on an object of unknown class (its name is no member of
    any class of the newest release, and not common outside Ray)."""
    qualified = DISTINCT_MEMBERS.get(member)
    if qualified is None or member in COMMON_MEMBER_NAMES:
        return None
    return Entry(qualified, *ENTRIES[qualified])


def entries() -> list[Entry]:
    """Every entry, the changed names included."""
    out = [Entry(name, *row) for name, row in ENTRIES.items()]
    out += [_changed(name) for name in sorted(CHANGED)]
    return out


__all__ = [
    "MEMBER_NAMES",
    "MEMBER_OWNERS",
    "may_concern",
    "COMMON_MEMBER_NAMES",
    "DISTINCT_MEMBERS",
    "NEWEST_NAMES",
    "NEWEST",
    "RELEASES",
    "Entry",
    "entries",
    "lookup",
    "member_by_name",
]
