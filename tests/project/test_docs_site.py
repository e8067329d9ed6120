"""The documentation site: it builds with warnings as errors, its API reference names every public
name, every relative link in the docs and the README names a file that exists, and the
tutorial's code runs as written (on the simulator), printing the errors it says it prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gpu_native
from tests.helpers import ROOT

DOCS = ROOT / "docs"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-d", str(tmp_path / "site")], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("gpu_kernel", "DeviceArray", "KernelIndexError", "philox"):
        assert f'id="gpu_native.{name}"' in api, name


def test_the_api_reference_names_every_public_name():
    listed = re.findall(r"^::: gpu_native\.(\w+)$", (DOCS / "api.md").read_text(), re.M)
    assert sorted(listed) == sorted(set(listed)), "a name is listed twice"
    assert set(listed) == set(gpu_native.__all__), (
        f"missing: {sorted(set(gpu_native.__all__) - set(listed))}, "
        f"not public: {sorted(set(listed) - set(gpu_native.__all__))}")


def _relative_links(path: Path):
    text = re.sub(r"`[^`\n]*`", "", _FENCE.sub("", path.read_text(encoding="utf-8")))
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        yield target.split("#", 1)[0]


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")) + ["README.md"])
def test_every_relative_link_names_a_file(page):
    path = ROOT / page if page == "README.md" else DOCS / page
    broken = [t for t in _relative_links(path) if not (path.parent / t).exists()]
    assert not broken, f"{page}: links to files that do not exist: {broken}"


def _tutorial_parts() -> tuple[dict[str, str], str]:
    """The tutorial's module files (a python block whose first line is ``# name.py``) and its
    session (every other python block, in order)."""
    files: dict[str, str] = {}
    session: list[str] = []
    for lang, body in _FENCE.findall((DOCS / "tutorial.md").read_text(encoding="utf-8")):
        if lang != "python":
            continue
        first = body.split("\n", 1)[0]
        m = re.fullmatch(r"# (\w+\.py)", first)
        if m:
            files[m.group(1)] = body
        else:
            session.append(body)
    return files, "\n".join(session)


@pytest.mark.slow
def test_the_tutorial_runs_as_written(tmp_path):
    files, session = _tutorial_parts()
    assert set(files) == {"tutorial_kernels.py", "tutorial_shift.py", "tutorial_race.py",
                          "tutorial_reduce.py"}
    for name, body in files.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    (tmp_path / "session.py").write_text(session, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_")}
    env.update(GPU_NATIVE_BACKEND="sim", GPU_NATIVE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    proc = subprocess.run([sys.executable, "session.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    # What the tutorial's comments say each print shows.
    assert "'out'" in out, out
    assert "shift_left" in out and "tutorial_shift.py" in out and "1000" in out, out
    assert "tutorial_race.py:8" in out and "hint:" in out and "atomic_ref" in out, out
    assert out.rstrip().endswith("sim"), out
