"""RTM006: unused imports of V1-only modules are removed, carefully."""

from __future__ import annotations

from pathlib import Path

from migrate import engine
from tests.migrate.conftest import migrate
from tests.migrate.test_rewrites import check


def test_an_unused_session_import_goes_and_its_comment_stays() -> None:
    found = check(
        """\
        import os
        from ray.air import session  # legacy reporting


        def cpus():
            return os.cpu_count()
        """,
        """\
        import os
        # legacy reporting


        def cpus():
            return os.cpu_count()
        """,
    )
    assert [(d.code, d.line, d.fixed) for d in found] == [("RTM006", 2, True)]


def test_an_import_marked_noqa_f401_is_deliberate_and_stays_flagged_while_it_names_v1_api() -> None:
    """``# noqa: F401`` is a project's word that an unused import is deliberate (a re-export, as
    ruff and pyflakes read it): removing it would break the callers that import the name from
    here. It stays, moved where the name moved; where it still names V1 API, RTM100 says so (the
    import alone breaks the module the day Ray removes it). A bare ``# noqa`` holds every rule."""
    found = check(
        """\
        import os
        from ray.air import session  # noqa: F401
        import ray.air as air  # NOQA
        from ray.air import RunConfig  # noqa: F401 -- re-exported for old callers
        from ray.air.config import (
            ScalingConfig,  # noqa: F401
            FailureConfig,
        )
        from ray.air.session import get_checkpoint  # a comment


        def cpus():
            return os.cpu_count()
        """,
        """\
        import os
        from ray.air import session  # noqa: F401
        import ray.air as air  # NOQA
        from ray.train import RunConfig  # noqa: F401 -- re-exported for old callers
        from ray.train import (
            ScalingConfig,  # noqa: F401
        )
        # a comment


        def cpus():
            return os.cpu_count()
        """,
    )
    flags = [(d.code, d.line) for d in found if not d.fixed and not d.suppressed]
    assert flags == [("RTM100", 2)], found
    assert "unused here, kept" in next(d.message for d in found if not d.fixed)
    assert all(d.suppressed for d in found if d.line == 3)  # under the bare directive
    removed = sorted(d.message for d in found if d.code == "RTM006" and not d.suppressed)
    assert removed == ["unused V1 import removed: `FailureConfig`", "unused V1 import removed: `get_checkpoint`"]


def test_inside_try_and_type_checking_blocks() -> None:
    check(
        """\
        from typing import TYPE_CHECKING

        try:
            from ray.air import session
        except ImportError:
            pass

        if TYPE_CHECKING:
            from ray.air.config import ScalingConfig
        """,
        """\
        from typing import TYPE_CHECKING

        try:
            pass
        except ImportError:
            pass

        if TYPE_CHECKING:
            pass
        """,
    )


def test_the_other_names_of_the_import_stay() -> None:
    check(
        """\
        import os, ray.air.session as s
        from ray.air import session, ScalingConfig

        ScalingConfig(num_workers=os.cpu_count())
        """,
        """\
        import os
        from ray.train import ScalingConfig

        ScalingConfig(num_workers=os.cpu_count())
        """,
    )


def test_the_finding_of_a_parenthesized_import_is_one_line() -> None:
    _, found = migrate(
        """\
        from ray.air import (
            session,
            RunConfig as Run,
        )
        """
    )
    (finding,) = [d for d in found if d.code == "RTM006"]
    assert finding.message == "unused V1 import removed: `session, RunConfig as Run`"


def test_used_exported_or_rebound_names_stay() -> None:
    for source in (
        "from ray.air import session\nsession.report({})\n",  # used: RTM002 rewrites it instead
        "from ray.air import session\n__all__ = ['session']\n",  # a re-export
        "import ray.air\n",  # binds `ray`, which may be used elsewhere
    ):
        out, found = migrate(source)
        assert "RTM006" not in [d.code for d in found], source


def test_a_package_init_is_left_alone(tmp_path: Path) -> None:
    init = tmp_path / "pkg" / "__init__.py"
    init.parent.mkdir()
    init.write_text("from ray.air import session\n")
    codes = [r.code for r in engine.select_rules()]
    result = engine.process_file(str(init), codes, "ray", write=True)
    assert not result.changed and init.read_text() == "from ray.air import session\n"
