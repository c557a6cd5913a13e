"""The catalogue of Ray's V1-era API (migrate/catalogue), held against the codemod: for every name
Ray's releases 2.0-2.60 shipped that 2.60 no longer has, small realistic files in several import
forms are migrated, and each use is either flagged with what replaces it or rewritten to a name
that imports on the installed Ray in both settings. Nothing is silent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

from migrate import _index, catalogue, engine
from migrate.catalogue import advice
from migrate.rules import Context

MEMBER_KINDS = ("method", "property", "attribute")


@dataclass(frozen=True)
class Form:
    """One way of writing a use of an entry: the source, the line of the use, its description."""

    what: str
    source: str
    lines: tuple[int, ...]  # where a finding may be (1-based): the use, or the import that binds it
    old: str  # the qualified name that must not be left unflagged


def forms(entry: catalogue.Entry) -> list[Form]:
    """The import forms of a use of ``entry``: from-import, module alias, attribute access, inside
    a training function and at module level; members through their class (and on any object when
    the name alone is Ray's)."""
    if entry.kind == "keyword":
        owner, _, keyword = entry.name.rpartition(".")
        module, _, cls = owner.rpartition(".")
        kw = keyword[1:-2]
        return [
            Form("keyword, from-import, in a function", f"from {module} import {cls}\n\n\ndef main():\n    x = {cls}({kw}=None)\n", (5,), entry.name),  # noqa: E501 - one form per line
            Form("keyword, module attribute", f"import {module}\n\nx = {module}.{cls}(a, {kw}=None)\n", (3,), entry.name),  # noqa: E501 - one form per line
        ]  # fmt: skip
    if entry.kind in MEMBER_KINDS:
        owner, _, member = entry.name.rpartition(".")
        module, _, cls = owner.rpartition(".")
        found = [
            Form("member through its class", f"from {module} import {cls}\n\nx = {cls}.{member}\n", (1, 3), entry.name),
            Form("member in a training function", f"import {module} as m\n\n\ndef train_func(config):\n    return m.{cls}.{member}\n", (5,), entry.name),  # noqa: E501 - one form per line
        ]  # fmt: skip
        if catalogue.member_by_name(member) is not None:
            found.append(Form("member on an object", f"import ray\n\n\ndef f(checkpoint):\n    return checkpoint.{member}\n", (5,), entry.name))  # fmt: skip  # noqa: E501 - one form per line
        return found
    module, _, name = entry.name.rpartition(".")
    alias_import = "from ray import tune as m" if module == "ray.tune" else f"import {module} as m"
    return [
        Form("from-import at module level", f"from {module} import {name}\n\nx = {name}\n", (1, 3), entry.name),
        Form("from-import in a training function", f"def train_func(config):\n    from {module} import {name}\n\n    return {name}\n", (2, 4), entry.name),  # noqa: E501 - one form per line
        Form("module alias in a function", f"{alias_import}\n\n\ndef main():\n    return m.{name}\n", (5,), entry.name),
        Form("attribute access at module level", f"import {module}\n\nx = {module}.{name}\n", (3,), entry.name),
    ]  # fmt: skip


@dataclass
class Outcome:
    entry: catalogue.Entry
    form: Form
    flagged: bool
    rewritten_to: frozenset[str]  # ray names the rewrite left where the old one was


def judge(entry: catalogue.Entry, form: Form) -> Outcome:
    rules = engine.select_rules(target="ray")
    text, diagnostics = engine.migrate_source(form.source, rules, Context())
    on_line = [d for d in diagnostics if d.line in form.lines and not d.fixed]
    # Flagged: the catalogue's own advice, or a rule about that one API (its text is its own).
    flagged = any(entry.instead in d.message or d.code not in ("RTM128", "RTM100") for d in on_line)
    rewritten: frozenset[str] = frozenset()
    if not flagged and text != form.source:
        left = _index.build(text).names
        if not any(n == form.old or n.startswith(form.old + ".") for n in left):
            rewritten = frozenset(n for n in left if n.startswith("ray."))
    return Outcome(entry, form, flagged, rewritten)


ENTRIES = catalogue.entries()
OUTCOMES = [judge(entry, form) for entry in ENTRIES for form in forms(entry)]


def test_every_entry_of_the_catalogue_is_flagged_or_rewritten_in_every_form() -> None:
    silent = [o for o in OUTCOMES if not o.flagged and not o.rewritten_to]
    entries_silent = {o.entry.name for o in silent}
    print(
        f"catalogue coverage: {len(ENTRIES) - len(entries_silent)} of {len(ENTRIES)} entries, "
        f"{len(OUTCOMES) - len(silent)} of {len(OUTCOMES)} forms flagged or rewritten "
        f"({sum(o.flagged for o in OUTCOMES)} flagged, {sum(bool(o.rewritten_to) for o in OUTCOMES)} rewritten)"
    )
    assert not silent, "\n".join(f"{o.entry.name} ({o.form.what}):\n{o.form.source}" for o in silent[:20])


def test_a_moved_name_is_flagged_with_its_new_home() -> None:
    moved = [e for e in ENTRIES if e.status == "moved"]
    assert moved, "the catalogue has moved names (ray.air.callbacks.* -> ray.air.integrations.*)"
    for entry in moved:
        assert entry.home.rpartition(".")[0] in entry.message()


def test_every_removed_entry_has_reviewed_advice_and_every_advice_row_is_used() -> None:
    """A new Ray release cannot add a name the codemod has nothing to say about, and the table
    keeps no row that no name needs."""
    missing = [e.name for e in ENTRIES if e.status in ("removed", "changed") and advice.advice_for(e.name) is None]
    assert not missing, f"add advice to migrate/catalogue/advice.py for: {missing}"
    used = {pattern for pattern, _ in advice.ADVICE if any(advice.advice_for(e.name) for e in ENTRIES)}
    unused = [
        pattern
        for pattern, text in advice.ADVICE
        if not any(advice.advice_for(e.name) == text or text == "TRIAL" for e in ENTRIES)
    ]
    assert used and not unused, f"advice rows no catalogue name matches: {unused}"


def test_a_name_ray_still_has_is_not_flagged() -> None:
    """Precision: the names 2.60's V2 API still has in the same place pass untouched; so do Ray's
    private ray.air._internal modules, which V2's own code imports (Ray's V2 test_persistence.py
    names URI through one: flagged RTM100 [breaks] before)."""
    source = textwrap.dedent(
        """
        from ray import train, tune
        from ray.train import Checkpoint, RunConfig, ScalingConfig
        from ray.train.torch import TorchTrainer
        from ray.air.integrations.wandb import WandbLoggerCallback
        from ray.air._internal.uri_utils import URI

        bucket = URI("s3://bucket/run").name


        def train_func(config):
            ctx = train.get_context()
            with Checkpoint.from_directory("/tmp/x").as_directory() as d:
                train.report({"rank": ctx.get_world_rank()}, checkpoint=Checkpoint.from_directory(d))


        trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2), run_config=RunConfig(name="x"))
        result = trainer.fit()
        print(result.checkpoint.path, result.path)
        """
    )
    _, diagnostics = engine.migrate_source(source, engine.select_rules(target="ray"), Context())
    assert [d for d in diagnostics if d.code in ("RTM128", "RTM100")] == []


_IMPORT_CHECK = """
import importlib, json, sys
bad = []
for name in json.loads(sys.argv[1]):
    module, _, attr = name.rpartition(".")
    for cut in range(name.count(".") + 1, 0, -1):  # the longest importable module, then attributes
        parts = name.split(".")
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                value = getattr(value, part)
        except AttributeError:
            bad.append(name)
        break
    else:
        bad.append(name)
print(json.dumps(bad))
"""


@pytest.mark.parametrize("v2", ["0", "1"], ids=["V1", "V2"])
def test_every_rewrite_of_a_catalogue_name_imports_on_the_installed_ray(v2: str) -> None:
    pytest.importorskip("ray.train")
    names = sorted({n for o in OUTCOMES for n in o.rewritten_to})
    assert names, "some catalogue names are rewritten (ray.air.Checkpoint -> ray.train.Checkpoint)"
    env = {**os.environ, "RAY_TRAIN_V2_ENABLED": v2}
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_CHECK, json.dumps(names)], env=env, capture_output=True, text=True, check=True
    )
    failing = json.loads(done.stdout.strip().splitlines()[-1])
    assert failing == [], f"rewritten to names that do not import: {failing}"


def test_a_name_no_release_has_is_flagged_where_it_is_imported() -> None:
    """Ray before 2.0 (``from ray.tune import track``, a public repository's sweep of 2020) is older
    than the catalogue: a name ray.train, ray.tune or ray.air does not bind in 2.60 is still not
    left silent (it raises ImportError there); what 2.60 has, submodules included, is not flagged."""
    source = textwrap.dedent(
        """
        from ray.tune import track, Tuner, schedulers
        from ray.air import session
        from ray.train import ScalingConfig, get_context


        def trainable(config):
            track.log(loss=1.0)
        """
    )
    _, diagnostics = engine.migrate_source(source, engine.select_rules(target="ray"), Context())
    unknown = [d for d in diagnostics if d.code == "RTM128"]
    assert [(d.line, "`ray.tune.track` is in no Ray release" in d.message) for d in unknown] == [(2, True)], unknown


_PUBLIC_NAMES = """
import importlib, json, pkgutil, sys, types
out = {}
for package in json.loads(sys.argv[1]):
    module = importlib.import_module(package)
    names = {i.name for i in pkgutil.iter_modules(module.__path__) if not i.name.startswith("_")}
    for name in dir(module):
        value = getattr(module, name)
        foreign = isinstance(value, types.ModuleType) and not value.__name__.startswith("ray.")
        if not name.startswith("_") and not foreign:  # `ray.train.pandas`: a module's import, not API
            names.add(name)
    out[package] = sorted(names)
print(json.dumps(out))
"""


@pytest.mark.parametrize("v2", ["0", "1"], ids=["V1", "V2"])
def test_every_name_the_installed_ray_binds_is_known_to_the_catalogue(v2: str) -> None:
    """The other side of the check above: no name Ray binds there (in either setting) is called
    unknown. Read on the installed Ray, against the names the catalogue read from its wheel."""
    pytest.importorskip("ray.train")
    env = {**os.environ, "RAY_TRAIN_V2_ENABLED": v2}
    done = subprocess.run(
        [sys.executable, "-c", _PUBLIC_NAMES, json.dumps(sorted(catalogue.NEWEST_NAMES))],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    installed = json.loads(done.stdout.strip().splitlines()[-1])
    missing = {package: sorted(set(names) - catalogue.NEWEST_NAMES[package]) for package, names in installed.items()}
    assert not any(missing.values()), f"names the installed Ray binds that the catalogue calls unknown: {missing}"
