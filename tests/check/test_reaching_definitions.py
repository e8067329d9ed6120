"""Reaching definitions (the gallery's rule R8): a local assigned more than once holds, from an
assignment to the end of its block, the value assigned, unless it or a variable that value reads
is assigned first.  ``x = col + (i - HALO) * BX`` in each of two loops then gives the store
``dst[row, x]`` after it a form the unique-write and bounds proofs can use.  After a branch or a
loop that assigns it, the variable may hold either value, and nothing is assumed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from gpu_native.rewrite import transpile_module

ROOT = Path(__file__).resolve().parents[2]

HEAD = """\
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, f32, i32, i64, block_dim,
                        block_idx, thread_idx)
"""

TWO_LOOPS = HEAD + """
@gpu_kernel(Kernel1D)
def k(src: CUDASlice[f32], dst: CUDASliceMut[f32]):
    assert block_dim.x == 32
    tid = thread_idx.x
    base = i64(block_idx.x) * 128 + tid
    for i in range(4):
        x = base + i * 32
        if x < len(src):
            v = src[x]
    for i in range(4):
        x = base + i * 32
        if x < len(dst):
            dst[x] = f32(i)
"""


def transpile(source: str):
    return transpile_module(textwrap.dedent(source), "reaching.py", "reaching")


def index_checks(source: str) -> set[tuple[int, str]]:
    (kernel,) = transpile(source).kernels
    return {(s.line - kernel.line, s.array) for s in kernel.variants[0].sites
            if s.kind == "index"}


def refused(source: str) -> str:
    with pytest.raises(TranspileError) as info:
        transpile(source)
    return str(info.value)


def test_the_assignment_that_reaches_a_store_proves_it():
    # Unique (a mixed-radix number of block, i and tid) and in bounds (the guard), although x
    # is assigned in two loops.
    assert index_checks(TWO_LOOPS) == set()


@pytest.mark.parametrize("between", [
    "        if tid < 16:\n            x = base\n",      # a branch may have assigned it
    "        base = i64(tid)\n",                          # what its value reads changed
])
def test_nothing_is_assumed_where_another_value_may_reach(between):
    source = TWO_LOOPS.replace("        if x < len(dst):\n",
                               between + "        if x < len(dst):\n")
    if "base = i64(tid)" in between:
        source = source.replace("    base = i64(block_idx.x)", "    base = i64(0)\n    base = i64(block_idx.x)")
    assert "store into 'dst'" in refused(source)


def test_an_assignment_that_reads_itself_reaches_with_the_value_before_it():
    # x = x + 1 after x = base + i * 32 is base + i * 32 + 1: still unique, as the padded
    # sweeps of a scan write it (ai += ai >> 5).
    source = TWO_LOOPS.replace("        if x < len(dst):\n",
                               "        x = x + 1\n        if x < len(dst):\n")
    assert index_checks(source) == set()


def test_an_assignment_that_reads_itself_with_nothing_before_it_is_not_followed():
    # In the loop's body, x before x = x + 32 is the previous iteration's (or the first loop's).
    source = TWO_LOOPS.replace("    for i in range(4):\n        x = base + i * 32\n"
                               "        if x < len(dst):",
                               "    x = base\n    for i in range(4):\n        x = x + 32\n"
                               "        if x < len(dst):")
    assert "x = x + 32" in source
    assert "store into 'dst'" in refused(source)


def test_a_value_assigned_in_a_loop_does_not_reach_past_it():
    source = TWO_LOOPS.replace("""        if x < len(dst):
            dst[x] = f32(i)
""", """        x = base + 1
    if x < len(dst):
        dst[x] = 1.0
""").replace("    for i in range(4):\n        x = base + i * 32\n        if x < len(src):",
             "    x = base\n    for i in range(4):\n        x = base + i * 32\n        if x < len(src):")
    assert "store into 'dst'" in refused(source)


def test_a_value_read_from_memory_is_not_carried():
    # Only plain arithmetic reaches: a load may change before the use.
    source = TWO_LOOPS.replace("        x = base + i * 32\n        if x < len(dst):",
                               "        x = i32(src[base])\n        if x < len(dst):")
    assert "store into 'dst'" in refused(source)


@pytest.mark.slow
def test_the_separable_convolution_is_race_free_on_the_race_detector(rng, examples_path,
                                                                    monkeypatch):
    """The gallery's kernels, whose output stores R8 proves, run on the simulator with its race
    detector watching the output (by default it shadows only arrays a launch reads and writes)."""
    from tools.fuzz.indices import run_sim

    monkeypatch.syspath_prepend(str(examples_path / "gallery"))
    import convolution_separable as m

    path = Path(m.__file__)
    module = transpile_module(path.read_text(), str(path), "convolution_separable")
    kernels = {ck.fn.name: ck.specializations[0] for ck in module.checked}
    h, w = 40, 150
    src = rng.standard_normal((h, w)).astype(np.float32)
    for name, block, grid in (
            ("convolve_rows_kernel", (m.ROW_BX, m.ROW_BY),
             (-(-w // (m.STEPS * m.ROW_BX)), -(-h // m.ROW_BY))),
            ("convolve_columns_kernel", (m.COL_BX, m.COL_BY),
             (-(-w // m.COL_BX), -(-h // (m.STEPS * m.COL_BY))))):
        dst = np.full((h, w), np.nan, np.float32)
        errors = run_sim(kernels[name], grid, block, src, dst,
                         consts=[np.asarray(m.WEIGHTS, np.float32)])
        assert errors.watched   # dst is watched
        assert errors.races == [] and not errors.fails
        assert not np.isnan(dst).any()   # every pixel written


@pytest.mark.slow
def test_generated_reaching_forms_are_race_free_where_accepted():
    """The race fuzzer's forms of an index through a local assigned twice (tools/fuzz/indices.py,
    ``REACHING``): those the checker accepts never race on the simulator, and most
    reassignments just before the store are accepted while reads that another value may reach
    are refused, unless a condition leaves one writer (then most are accepted)."""
    import random

    from tools.fuzz import indices

    counts = {"reassigned": [0, 0], "branch": [0, 0], "stale": [0, 0], "one writer": [0, 0]}
    for seed in range(1000):
        source = indices.generated(random.Random(seed))
        if "    x = tid * 3\n" not in source:
            continue
        # Under `if tid == c:` one thread makes every store, whatever value reaches them.
        kind = ("one writer" if "if tid == " in source else
                "branch" if "x = tid\n" in source else
                "stale" if source.index("[x] = tid + 1") < source.rindex("x = ") else
                "reassigned")
        try:
            module = transpile_module(indices.HEADER + source, "k.py", "k")
        except TranspileError:
            counts[kind][1] += 1
            continue
        counts[kind][0] += 1
        kernel = module.checked[0].specializations[0]
        for grid, block in indices.launch_shapes(kernel)[:2]:
            out = np.full(indices.OUT_SIZE, indices.POISON, np.int32)
            errors = indices.run_sim(kernel, grid, block, out)
            assert errors.races == [], f"{source}\n{errors.races[0]}"
    assert counts["reassigned"][0] >= 10 and counts["one writer"][0] >= 10, counts
    for kind in ("branch", "stale"):
        accepted, refused = counts[kind]
        assert refused > 4 * accepted, counts


@pytest.mark.parametrize("body", [
    # an augmented assignment ends the value that reached it
    "    t = 0\n    t = tid\n    t *= 0\n    out[t] = tid\n",
    # a while loop that may assign it
    "    t = 0\n    t = tid\n    while n > 0:\n        t = 3\n        n -= 1\n    out[t] = tid\n",
    # a break that leaves the loop before the second assignment
    "    t = 0\n    for i in range(4):\n        t = tid + i * 32\n        if n > 2:\n"
    "            break\n        t = 5\n    out[t] = tid\n",
])
def test_a_path_that_may_change_the_value_leaves_nothing_assumed(body):
    assert "store into 'out'" in refused(_one_block(body))


def test_without_such_a_path_the_value_reaches_the_store():
    # The control of the test above: the same kernels' straight-line form is accepted.
    transpile(_one_block("    t = 0\n    t = tid\n    out[t] = tid\n"))


def _one_block(body: str) -> str:
    return HEAD + ("from gpu_native import grid_dim\n\n@gpu_kernel(Kernel1D)\n"
                   "def k(out: CUDASliceMut[i32], n: i32):\n"
                   "    assert block_dim.x == 32 and grid_dim.x == 1\n"
                   "    tid = thread_idx.x\n" + body)
