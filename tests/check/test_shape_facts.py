"""Asserts over array parameters' shapes, checked by the launcher at every launch.

``assert a.shape[0] == grid_dim.x * 32`` is the same for every thread of a launch, and the
launcher knows the shapes: it tests the assert once per launch (a
:class:`gpu_native.spec.ShapeAssert`) and refuses a launch that fails it with the assert's
``KernelAssertionError``, on either backend.  The bounds proofs then use what it says: a tile's
element ``block_idx.x * 32 + t`` (``t < 32``) is below ``a.shape[0]``, and ``kt * 32 + t`` below
``a.shape[1]`` where ``kt < a.shape[1] // 32``.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import KernelAssertionError
from gpu_native.rewrite import transpile_module
from gpu_native.spec import IndexFits, ShapeAssert

HEAD = """\
from gpu_native import (gpu_kernel, Kernel1D, Kernel2D, CUDASlice, CUDASliceMut, CUDASlice2D,
                        CUDASliceMut2D, f32, i32, i64, thread_idx, block_idx, block_dim,
                        grid_dim)
"""

COPY = HEAD + """
@gpu_kernel(Kernel1D)
def copy(a: CUDASlice[f32], b: CUDASliceMut[f32]):
    assert block_dim.x == 32
    assert a.shape[0] == grid_dim.x * 32 and b.shape[0] == a.shape[0], "sizes"
    i = block_idx.x * 32 + thread_idx.x
    b[i] = a[i]
"""


def kernel_of(source: str):
    (kernel,) = transpile_module(textwrap.dedent(source), "shapes.py", "shapes").kernels
    return kernel


def index_checks(source: str) -> set[tuple[int, str, int]]:
    kernel = kernel_of(source)
    return {(s.line - kernel.line, s.array, s.axis) for s in kernel.variants[0].sites
            if s.kind == "index"}


# ---- the proofs ------------------------------------------------------------------------------


def test_a_shape_assert_becomes_a_launch_check_and_proves_the_tile():
    kernel = kernel_of(COPY)
    checks = kernel.variants[0].launch_checks
    (shape,) = [c for c in checks if isinstance(c, ShapeAssert)]
    assert shape.tree[0] == "and"
    # grid_dim.x * 32 in i32 is kept from wrapping by the launcher too.
    assert any(isinstance(c, IndexFits) and c.tree == ("*", ("sp", "grid_dim", 0), ("c", 32))
               for c in checks)
    assert index_checks(COPY) == set()


def test_without_the_fact_the_checks_stay():
    near = COPY.replace(' and b.shape[0] == a.shape[0], "sizes"', ', "sizes"')
    assert index_checks(near) == {(5, "b", 0)}
    assert index_checks(COPY.replace("grid_dim.x * 32 and", "grid_dim.x * 16 and")) == {
        (5, "a", 0), (5, "b", 0)}


def test_a_tile_wider_than_its_step_is_not_proven():
    # block_idx.x * 32 + thread_idx.x * 2 reaches 62 within a block's 32: a's load is checked.
    wide = COPY.replace("b[i] = a[i]", "b[i] = a[block_idx.x * 32 + thread_idx.x * 2]")
    assert index_checks(wide) == {(5, "a", 0)}


TILES = HEAD + """
@gpu_kernel(Kernel1D)
def rows(a: CUDASlice2D[f32], out: CUDASliceMut[f32]):
    assert block_dim.x == 8
    assert a.shape[0] == grid_dim.x, "one block per row"
    ktiles = a.shape[1] // 8
    acc = f32(0)
    for kt in range(ktiles):
        acc += a[block_idx.x, kt * 8 + thread_idx.x]
    out[block_idx.x * 8 + thread_idx.x] = acc
"""


def test_a_loop_below_the_extent_divided_by_the_step_proves_its_tiles():
    # a's axis 1 from kt < a.shape[1] // 8; out has no fact and keeps its check, and so does
    # a's axis 0 (block_idx.x < a.shape[0] == grid_dim.x is not a tile of a constant step).
    assert index_checks(TILES) == {(7, "a", 0), (8, "out", 0)}
    # kt < a.shape[1] // 4 does not show kt * 8 + 7 < a.shape[1].
    assert (7, "a", 1) in index_checks(TILES.replace("a.shape[1] // 8", "a.shape[1] // 4"))


def test_an_assert_inside_a_branch_is_not_hoisted():
    source = COPY.replace("    assert a.shape[0]", "    if thread_idx.x == 0:\n        assert a.shape[0]")
    kernel = kernel_of(source)
    assert not any(isinstance(c, ShapeAssert) for c in kernel.variants[0].launch_checks)


# ---- the launcher ----------------------------------------------------------------------------


def launch(kernel, grid):
    return kernel.launch(gn.GridDim1D(grid), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)


def test_a_launch_that_meets_the_shapes_runs(backend, kernel_module):
    m = kernel_module(COPY)
    a = gn.to_device(np.arange(64, dtype=np.float32))
    b = gn.to_device(np.zeros(64, np.float32))
    for _ in range(2):  # the second call takes the fast path
        launch(m.copy, 2)(a, b)
    np.testing.assert_array_equal(b.to_host(), np.arange(64))


def test_a_launch_that_fails_a_shape_assert_is_refused_before_it_runs(backend, kernel_module):
    m = kernel_module(COPY)
    a = gn.to_device(np.arange(64, dtype=np.float32))
    b = gn.to_device(np.zeros(64, np.float32))
    launch(m.copy, 2)(a, b)  # a fast path exists for this launch shape
    b2 = gn.to_device(np.zeros(96, np.float32))
    with pytest.raises(KernelAssertionError) as info:
        launch(m.copy, 2)(a, b2)
    text = str(info.value)
    assert "assertion failed: sizes" in text
    assert "line 8" in text and "b.shape[0] == a.shape[0]" in text
    assert "checked at launch" in text
    np.testing.assert_array_equal(b2.to_host(), 0)  # nothing ran
    with pytest.raises(KernelAssertionError, match="sizes"):
        launch(m.copy, 3)(a, b)  # the grid does not cover a
