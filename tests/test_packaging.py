"""The package as pip builds it: every package of the repository in the wheel, metadata that
twine accepts, and a codemod install light enough for a pre-commit cache."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("ray", "torch", "pandas", "matplotlib", "torchmetrics", "pyarrow", "numpy")

pytestmark = pytest.mark.one_pass  # does not depend on RAY_TRAIN_V2_ENABLED


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist, and the wheel built from it (python -m build's default: what PyPI users get,
    and nothing a stale build/ directory of the checkout holds)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return out


def wheel(dist: Path) -> Path:
    (found,) = dist.glob("*.whl")
    return found


def test_the_wheel_holds_every_package_of_the_repository(dist: Path) -> None:
    names = set(zipfile.ZipFile(wheel(dist)).namelist())
    packages = {
        str(init.parent.relative_to(ROOT))
        for top in ("compat", "compat_core", "v1", "v2", "migrate")
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert {"migrate/rules/_cst", "compat/compare", "compat/testing"} <= packages
    for package in sorted(packages):
        for module in (ROOT / package).glob("*.py"):
            assert str(module.relative_to(ROOT)) in names, f"{module.relative_to(ROOT)} is not in the wheel"
    assert {"compat/py.typed", "compat_core/py.typed", "migrate/py.typed", "compat_pytest_plugin.py"} <= names
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "examples/", "scripts/"))]


def test_twine_accepts_the_wheel_and_the_sdist(dist: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    metadata = zipfile.ZipFile(wheel(dist)).read("ray_train_compat-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    for version in ("3.10", "3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {version}" in metadata
    assert "Provides-Extra: runtime" in metadata and "Project-URL: Source" in metadata


def test_the_codemod_install_pulls_no_runtime(dist: Path, tmp_path: Path) -> None:
    """What the pre-commit hooks install: libcst and little else, no Ray, torch or CUDA."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--report", str(report), str(wheel(dist))],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = sorted(item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"])
    assert "libcst" in names and len(names) <= 15, names
    heavy = [n for n in names if n in HEAVY or n.startswith("nvidia")]
    assert heavy == [], names
