"""What the untrusted-input tests of several folders share: a statement that leaves a marker file
behind if it ever runs, the markers left, and the command line in a child process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import child_env


def marker_code(name: str) -> str:
    """A statement that leaves a file behind if it ever runs."""
    return (f"open(__import__('os').path.join(__import__('os').path.dirname(__file__), "
            f"'EXECUTED-{name}'), 'w').write('ran')")


def executed(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("EXECUTED-*"))


def cli(args, cwd, cache, timeout=300, **env) -> subprocess.CompletedProcess:
    """``gpu-native ARGS`` in a child process run in ``cwd``, with the cache directory ``cache``."""
    return subprocess.run([sys.executable, "-m", "gpu_native.cli", *args], cwd=cwd,
                          env=child_env(cache, **env), capture_output=True, text=True,
                          timeout=timeout)
