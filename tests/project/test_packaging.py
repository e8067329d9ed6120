"""What the distributions carry: the metadata in ``pyproject.toml`` against the files that exist.

The fast tests read ``pyproject.toml``: each ``[tool.setuptools.package-data]`` pattern matches a
file and every data file of the package is matched by one, the license the metadata names is the
LICENSE file's.  The slow test builds the wheel and the sdist, through setuptools' PEP 517 hooks
(what ``pip wheel --no-build-isolation`` and ``python -m build --no-isolation`` call), from a
copy of the tree in a temporary directory, so that no build output lands in the checkout.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

PYPROJECT = ROOT / "pyproject.toml"
# Build outputs and caches a checkout may hold; none of them is a source of the distributions.
IGNORED = (".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache",
           ".mypy_cache", ".hypothesis", "out", ".whl")


def _project() -> dict:
    with PYPROJECT.open("rb") as f:
        return tomllib.load(f)


def _package_data() -> dict[str, list[str]]:
    return _project()["tool"]["setuptools"]["package-data"]


def test_every_package_data_pattern_matches_a_file():
    for package, patterns in _package_data().items():
        directory = ROOT / package.replace(".", "/")
        for pattern in patterns:
            matches = [p for p in directory.glob(pattern) if p.is_file()]
            assert matches, f"package-data {package}: {pattern!r} matches no file in {directory}"


def test_every_data_file_of_the_package_is_package_data():
    """A non-Python file in gpu_native/ that no pattern names would be missing from the wheel."""
    covered: set[Path] = set()
    for package, patterns in _package_data().items():
        directory = ROOT / package.replace(".", "/")
        for pattern in patterns:
            covered.update(p for p in directory.glob(pattern) if p.is_file())
    data = {p for p in (ROOT / "gpu_native").rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
    missing = sorted(str(p.relative_to(ROOT)) for p in data - covered)
    assert not missing, f"data files no package-data pattern names: {missing}"


def test_license_metadata_names_the_license_file():
    project = _project()["project"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    # The SPDX expression (PEP 639) names the license, the license-files the text.
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in project["classifiers"])


def test_python_classifiers_start_at_requires_python():
    project = _project()["project"]
    assert project["requires-python"] == ">=3.10"
    versions = sorted(int(c.rsplit(".", 1)[1]) for c in project["classifiers"]
                       if c.startswith("Programming Language :: Python :: 3."))
    assert versions[0] == 10, versions
    assert versions == list(range(versions[0], versions[-1] + 1)), versions


_BUILD = """
import json, sys
import setuptools.build_meta as backend
out = sys.argv[1]
print(json.dumps([backend.build_wheel(out), backend.build_sdist(out)]))
"""


@pytest.mark.slow
def test_wheel_and_sdist_contents(tmp_path):
    pytest.importorskip("setuptools")
    pytest.importorskip("wheel")  # setuptools < 70 builds wheels through the wheel package
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*IGNORED))
    out = tmp_path / "dist"
    out.mkdir()
    proc = subprocess.run([sys.executable, "-c", _BUILD, str(out)], cwd=src,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheel_name, sdist_name = json.loads(proc.stdout.strip().splitlines()[-1])

    with zipfile.ZipFile(out / wheel_name) as whl:
        names = set(whl.namelist())
        metadata = next(whl.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    for required in ("gpu_native/include/gpu_native/prelude.cuh", "gpu_native/py.typed",
                     "gpu_native.pth", "_gpu_native_startup.py"):
        assert required in names, required
    assert any(".dist-info/" in n and n.endswith("/LICENSE") for n in names), sorted(names)
    tops = {n.split("/", 1)[0] for n in names}
    assert not tops & {"tests", "tools", "examples", "docs"}, sorted(tops)
    # Every module of the package is in the wheel (a folder without __init__.py would be lost).
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "gpu_native").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert sources <= names, sorted(sources - names)
    assert "License-Expression: Apache-2.0" in metadata
    assert "License-File: LICENSE" in metadata
    assert "Classifier: Environment :: GPU :: NVIDIA CUDA :: 13" in metadata
    assert "Classifier: Typing :: Typed" in metadata

    with tarfile.open(out / sdist_name) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    for required in ("LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "setup.py",
                     "gpu_native.pth", "gpu_native/include/gpu_native/prelude.cuh",
                     "gpu_native/py.typed"):
        assert required in members, required
