"""The pytest plugin every pytest run in the environment loads must not import Ray."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_an_unrelated_projects_pytest_run_loads_the_plugin_without_ray(tmp_path) -> None:
    (tmp_path / "test_other.py").write_text(
        textwrap.dedent(
            """
            import sys

            def test_nothing_heavy_was_imported():
                assert "compat_pytest_plugin" in sys.modules  # the plugin is registered and loaded
                heavy = sorted(m for m in ("ray", "compat", "torch", "pandas") if m in sys.modules)
                assert heavy == []
            """
        )
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
