"""Reads of arrays written in pairs.

A read of an array written through several indices reads the thread's own element only under
the conditions that keep the stores apart: it is proven apart from every store as a store of
its own would be (``u = a[i]`` before ``if i < half: a[i + half] = ...`` reads what thread ``i -
half`` writes).

Each near miss is refused and races on the simulator once its read is put under ``with
unsafe():``; the same read inside the conditions is accepted and runs race-free.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.simulator.support import build, launch


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Every written array is shadowed by the race detector, not only those also read."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


def _unsafe(source: str) -> str:
    """``source`` with each line marked ``# <--`` under ``with unsafe():``."""
    lines = []
    for line in source.splitlines():
        if line.endswith("# <--"):
            text = line[:-len("# <--")].rstrip()
            indent = text[:len(text) - len(text.lstrip())]
            lines += [f"{indent}with unsafe():", f"    {text}"]
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def _plain(source: str) -> str:
    return source.replace("  # <--", "")


def _clean(errors) -> None:
    assert errors.races == [] and errors.fails == [], errors


# ---- reads of arrays written in pairs ------------------------------------------------------------

# name: (source, launch); the read marked `# <--` is outside the conditions of the pair.
READS_OUTSIDE = {
    "reverse": ("""
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            n = len(a)
            if i < n:
                x = a[n - 1 - i]  # <--
                if i < n // 2:
                    y = a[i]
                    a[i] = x
                    a[n - 1 - i] = y
        """, (8, 1, 32, ())),
    "butterfly": ("""
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            half = len(a) // 2
            if i < len(a):
                u = a[i]  # <--
                if i < half:
                    v = a[i + half]
                    a[i] = u + v
                    a[i + half] = u - v
        """, (16, 1, 32, ())),
    "index_ranges": ("""
        @gpu_kernel(Kernel1D)
        def k(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            if i < len(out):
                x = out[i]  # <--
                if i < 5:
                    out[i] = x + 1.0
                elif i < 50:
                    out[i - 5 + 100] = 2.0
        """, (200, 1, 256, ())),
}


@pytest.mark.parametrize("name", sorted(READS_OUTSIDE))
def test_a_read_outside_the_conditions_of_a_pair_is_refused_and_races(tmp_path, name):
    source, (n, grid, block, extra) = READS_OUTSIDE[name]
    with pytest.raises(TranspileError, match=r"not under the conditions that keep the array's "
                       r"stores apart"):
        build(tmp_path, _plain(source), name=name)
    kernel = build(tmp_path, _unsafe(source), name=f"{name}_unsafe")["k"]
    values = np.arange(n, dtype=np.float32)
    assert launch(kernel, grid, block, values, *extra).races


@pytest.mark.parametrize("name", sorted(READS_OUTSIDE))
def test_the_same_read_inside_the_conditions_is_accepted(tmp_path, name):
    """Moved inside the innermost condition of the stores, the read is the thread's own."""
    source, (n, grid, block, extra) = READS_OUTSIDE[name]
    lines = _plain(source).splitlines()
    at = next(k for k, line in enumerate(lines) if "# <--" in source.splitlines()[k])
    read = lines.pop(at)
    # The next line is the condition: the read goes first in its body.
    cond = at
    indent = len(lines[cond + 1]) - len(lines[cond + 1].lstrip())
    lines.insert(cond + 1, " " * indent + read.strip())
    kernel = build(tmp_path, "\n".join(lines) + "\n", name=f"{name}_inside")["k"]
    _clean(launch(kernel, grid, block, np.arange(n, dtype=np.float32), *extra))
