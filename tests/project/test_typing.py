"""What type checkers see of gpu_native: kernels type-check as they run, wrong ones are flagged.

The case files in ``typing_cases/`` are checked by mypy and by pyright (where it runs: it needs
node and, the first time, its npm package): ``good_kernels.py`` must type-check clean, with the
types its ``assert_type`` calls name, and ``bad_kernels.py`` must be reported on each line
marked ``# error:`` and on no other, so that the typing cannot silently become ``Any``.  The
install that the README and CI share must leave the package visible to both checkers (a static
path, not setuptools' editable import hook), and the README's code blocks are extracted for them
by ``tools/readme_snippets.py``.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tools import readme_snippets

CASES = ROOT / "tests" / "project" / "typing_cases"
GOOD = CASES / "good_kernels.py"
BAD = CASES / "bad_kernels.py"


def _marked_lines(path: Path) -> set[int]:
    return {n for n, line in enumerate(path.read_text().splitlines(), 1) if "  # error:" in line}


def _mypy(tmp_path: Path, *files: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy_cache"), "--no-error-summary",
         *(str(f.relative_to(ROOT)) for f in files)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)


def _pyright(*files: Path) -> subprocess.CompletedProcess:
    try:
        version = subprocess.run([sys.executable, "-m", "pyright", "--version"],
                                 capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.skip("pyright did not start in 5 minutes")
    if version.returncode != 0:
        pytest.skip(f"pyright does not run here: {(version.stderr or version.stdout)[-300:]}")
    return subprocess.run(
        [sys.executable, "-m", "pyright", "--pythonpath", sys.executable,
         *(str(f.relative_to(ROOT)) for f in files)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)


def _error_lines(output: str, path: Path, pattern: str) -> set[int]:
    return {int(m.group(1)) for m in re.finditer(pattern.format(re.escape(path.name)), output)}


MYPY_ERROR = r"{}:(\d+): error:"
PYRIGHT_ERROR = r"{}:(\d+):\d+ - error:"


@pytest.mark.slow
class TestMypy:
    def test_correct_kernels_and_launches_type_check_with_the_expected_types(self, tmp_path):
        result = _mypy(tmp_path, GOOD)
        assert result.returncode == 0, result.stdout + result.stderr

    def test_each_deliberate_error_is_reported_and_nothing_else(self, tmp_path):
        result = _mypy(tmp_path, BAD)
        reported = _error_lines(result.stdout, BAD, MYPY_ERROR)
        assert reported == _marked_lines(BAD), result.stdout


@pytest.mark.slow
class TestPyright:
    def test_correct_kernels_and_launches_type_check_with_the_expected_types(self):
        result = _pyright(GOOD)
        assert result.returncode == 0, result.stdout + result.stderr

    def test_each_deliberate_error_is_reported_and_nothing_else(self):
        result = _pyright(BAD)
        reported = _error_lines(result.stdout, BAD, PYRIGHT_ERROR)
        assert reported == _marked_lines(BAD), result.stdout


def _install_commands(text: str) -> list[list[str]]:
    """The ``pip install`` commands of ``text``, as argument lists without ``-q``."""
    commands = []
    for line in text.splitlines():
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words[:4] == ["python3", "-m", "pip", "install"]:
                commands.append([w for w in words if w != "-q"])
    return commands


class TestInstall:
    def test_the_readme_and_ci_install_the_same_way_visible_to_type_checkers(self):
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        setup = readme.split("```bash\n", 1)[1].split("```", 1)[0]
        commands = _install_commands(setup) + _install_commands(
            (ROOT / ".ci" / "run").read_text(encoding="utf-8"))
        assert len(commands) == 3, commands
        assert all(c == commands[0] for c in commands), commands
        # The default editable install is an import hook (setuptools' finder) that neither
        # mypy nor pyright can see through; compat mode writes a static path.
        assert "editable_mode=compat" in commands[0], commands[0]

    def test_ci_type_checks_the_examples_and_the_readme_snippets(self):
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        assert "python3 -m tools.readme_snippets build/readme_snippets" in ci
        for checker in ("mypy", "pyright"):
            line = next((line for line in ci.splitlines()
                         if line.startswith(f"python3 -m {checker} ") and "examples" in line),
                        None)
            assert line is not None and "build/readme_snippets" in line, checker


class TestReadmeSnippets:
    TEXT = ("intro\n"                                    # 1
            "```python\n"                                # 2
            "# kernels.py\n"                             # 3
            "X = 1\n"                                    # 4
            "```\n"                                      # 5
            "<!-- not type-checked: a fragment -->\n"    # 6
            "```python\n"                                # 7
            "undefined_name\n"                           # 8
            "```\n"                                      # 9
            "```bash\n"                                  # 10
            "echo\n"                                     # 11
            "```\n"                                      # 12
            "```python\n"                                # 13
            "import kernels\n"                           # 14
            "```\n")

    def test_blocks_are_named_by_their_first_comment_or_their_line_and_skips_are_left_out(self):
        found = readme_snippets.snippets(self.TEXT)
        assert [(s.name, s.line) for s in found] == [("kernels.py", 2), ("readme_13.py", 13)]

    def test_written_modules_keep_the_readme_s_line_numbers(self, tmp_path):
        files = readme_snippets.write(self.TEXT, tmp_path)
        assert [f.name for f in files] == ["kernels.py", "readme_13.py"]
        lines = (tmp_path / "readme_13.py").read_text().splitlines()
        assert lines[13] == "import kernels"  # README line 14
        assert (tmp_path / "kernels.py").read_text().splitlines()[3] == "X = 1"

    def test_two_blocks_of_one_name_are_refused(self, tmp_path):
        text = self.TEXT.replace("import kernels", "# kernels.py")
        with pytest.raises(ValueError, match=r"line 13: a second block named kernels\.py"):
            readme_snippets.write(text, tmp_path)

    def test_the_readme_s_seed_example_is_extracted_as_the_module_it_names(self, tmp_path):
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        names = [f.name for f in readme_snippets.write(readme, tmp_path)]
        assert "mykernels.py" in names and len(names) >= 2, names
