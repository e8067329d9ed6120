"""The import hook's tests run fresh interpreters in ``work``, which holds ``mykernels.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.importhook.support import MYKERNELS


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A directory (the subprocesses' working directory) holding ``mykernels.py``."""
    d = tmp_path / "work"
    d.mkdir()
    (d / "mykernels.py").write_text(MYKERNELS)
    return d
