"""A module of the user's named ``compat`` (py2/py3 helpers, a vendored shim) where Ray's
processes would import it instead of this package: ``fit()`` fails at once, before Ray starts,
naming the file and what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compat import _shadowing
from compat.errors import CompatShadowedError

pytestmark = pytest.mark.one_pass  # starts no cluster; does not depend on the setting

README_PROGRAM = """\
import compat as train
from compat.torch import TorchTrainer


def train_func(config):
    train.report({"loss": 1.0})


print(TorchTrainer(train_func, scaling_config=train.ScalingConfig(num_workers=2)).fit())
"""


@pytest.mark.parametrize(
    ("script", "argv"),
    [
        # The repository's root holds compat.py; the job's script lives in a subdirectory and is
        # started from the root: the driver imports this package, Ray's workers would import the
        # root's compat.py (Ray puts the driver's working directory on their path).
        ("jobs/train.py", [sys.executable, "jobs/train.py"]),
        # compat.py beside the script, which runs with Python's safe path (-P, PYTHONSAFEPATH:
        # the script's directory is not put first), from that directory: the same for workers.
        ("train.py", [sys.executable, "-P", "train.py"]),
    ],
    ids=["in the working directory", "beside the script"],
)
def test_a_compat_py_where_rays_workers_look_first_stops_fit_at_once(
    script: str, argv: list[str], tmp_path: Path
) -> None:
    if "-P" in argv and sys.version_info < (3, 11):
        pytest.skip("python -P is Python 3.11's")
    (tmp_path / "compat.py").write_text("import sys\nPY2 = sys.version_info[0] == 2\n")
    (tmp_path / script).parent.mkdir(exist_ok=True)
    (tmp_path / script).write_text(README_PROGRAM)
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PYTHONPATH")}
    run = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("compat_core.errors.CompatShadowedError: ")
    assert f"{tmp_path / 'compat.py'} would be imported as `compat`" in last
    assert "working directory" in last and "Rename that module" in last
    assert "Started a local Ray instance" not in run.stderr  # at once: nothing was started


def test_the_script_directory_counts_and_this_package_itself_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts = tmp_path / "scripts"
    (scripts / "compat").mkdir(parents=True)
    (scripts / "compat" / "__init__.py").write_text("")  # a vendored package of that name
    monkeypatch.setattr(sys, "argv", [str(scripts / "train.py")])
    monkeypatch.syspath_prepend(str(scripts))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CompatShadowedError, match=r"compat/__init__.py would be imported .* script directory"):
        _shadowing.check()
    # A bare directory named compat is a namespace package, which Python imports only where its
    # path search does not see this package (an editable install): then it shadows it too.
    (scripts / "compat" / "__init__.py").unlink()
    _shadowing.check()  # this package is on the path here
    installed_at = Path(_shadowing.__file__).resolve().parent.parent
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p and Path(p).resolve() != installed_at])
    with pytest.raises(CompatShadowedError, match=r"compat/ \(a directory without __init__.py\) would be imported"):
        _shadowing.check()
    # This package's own checkout is no shadow.
    monkeypatch.chdir(installed_at)
    monkeypatch.setattr(sys, "argv", [str(installed_at / "job.py")])
    _shadowing.check()


NO_TORCH_PROGRAM = """\
import compat as train


def train_func(config):
    train.report({"loss": 1.0})


train.DataParallelTrainer(train_func, scaling_config=train.ScalingConfig(num_workers=1)).fit()
print("the fit finished")
"""


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PYTHONPATH")}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("name", ["compat_core", "v1", "v2"])
def test_a_project_package_named_as_one_of_compats_stops_import_compat_and_names_it(name: str, tmp_path: Path) -> None:
    """An API's ``v2/`` (or ``v1/``, ``compat_core/``) package beside the script: the driver's own
    ``import compat`` would load it (Python puts the script's directory first)."""
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("ROUTES = []\n")
    (tmp_path / "train.py").write_text(NO_TORCH_PROGRAM)
    run = _run([sys.executable, "train.py"], tmp_path)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("compat_core.errors.CompatShadowedError: "), run.stderr[-2000:]
    assert f"{tmp_path / name / '__init__.py'} would be imported as `{name}`" in last
    assert "Rename that package" in last and f"myproject_{name}" in last


def test_a_v2_package_where_only_rays_workers_look_stops_fit_at_once(tmp_path: Path) -> None:
    """The repository's root holds ``v2/``, the job's script lives in ``jobs/`` and is started from
    the root: the driver imports this package, Ray's workers would import the root's ``v2``."""
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "__init__.py").write_text("")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "train.py").write_text(NO_TORCH_PROGRAM)
    run = _run([sys.executable, "jobs/train.py"], tmp_path)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("compat_core.errors.CompatShadowedError: "), run.stderr[-2000:]
    assert f"{tmp_path / 'v2' / '__init__.py'} would be imported as `v2`" in last
    assert f"Ray puts the driver's working directory, {tmp_path}, first" in last
    assert "Started a local Ray instance" not in run.stderr


def test_the_readiness_command_names_a_project_migrate_package(tmp_path: Path) -> None:
    """It reads source trees with the codemod, which a project's ``migrate/`` would stand in for."""
    (tmp_path / "migrate").mkdir()
    (tmp_path / "migrate" / "__init__.py").write_text("")
    readiness = _run([sys.executable, "-m", "compat", "readiness", "."], tmp_path)
    assert readiness.returncode == 2
    assert readiness.stderr.startswith(f"error: {tmp_path / 'migrate' / '__init__.py'} would be imported as `migrate`")


@pytest.mark.ray
@pytest.mark.extended  # CI: tests/test_layers.py reads that the runtime imports nothing of the codemod
def test_a_project_migrate_package_is_no_concern_of_a_run(tmp_path: Path) -> None:
    """Database migrations in ``migrate/`` beside the script (a package that fails when imported):
    the runtime imports nothing of the codemod, so the run goes on, in the driver and Ray's worker."""
    (tmp_path / "migrate").mkdir()
    imported = "raise RuntimeError('the project migrate package was imported')\n"
    (tmp_path / "migrate" / "__init__.py").write_text(imported)
    (tmp_path / "train.py").write_text(NO_TORCH_PROGRAM)
    run = _run([sys.executable, "train.py"], tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "the fit finished" in run.stdout
    assert "the project migrate package was imported" not in run.stderr
