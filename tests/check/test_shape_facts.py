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
from gpu_native.errors import KernelAssertionError, LaunchError
from gpu_native.launchexpr import AddressOf, AllOf, Arith, Compare, Const, LaunchIndex, subtrees
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
    assert isinstance(shape.tree, AllOf)
    # grid_dim.x * 32 in i32 is kept from wrapping by the launcher too.
    assert any(isinstance(c, IndexFits) and c.tree == Arith("*", LaunchIndex("grid_dim", 0),
                                                            Const(32))
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


GROUPED = HEAD.replace("Kernel2D,", "Kernel2D, Kernel3D, GridDim3D, BlockDim1D,") + """
@gpu_kernel(Kernel3D)
def grouped(a: CUDASlice2D[f32], b: CUDASliceMut2D[f32]):
    assert block_dim.x == 32 and block_dim.y == 1 and block_dim.z == 1
    assert a.shape[0] == grid_dim.z * grid_dim.x * 4 and b.shape[0] == a.shape[0], "rows"
    assert a.shape[1] == grid_dim.y * 32 and b.shape[1] == a.shape[1], "columns"
    row = (block_idx.z * grid_dim.x + block_idx.x) * 4
    src = (block_idx.z * grid_dim.x + block_idx.x) * 4
    col = block_idx.y * 32 + thread_idx.x
    for r in range(4):
        b[row + r, col] = a[src + r, col]
"""


def test_a_grouped_block_order_proves_its_tiles():
    # block_idx.z * grid_dim.x + block_idx.x < grid_dim.z * grid_dim.x: a block's index over
    # two grid axes, whose tile of 4 rows the shape assert bounds.
    assert index_checks(GROUPED) == set()
    kernel = kernel_of(GROUPED)
    # The launcher keeps the whole product within i32, so no partial sum of the row wraps.
    assert any(isinstance(c, IndexFits) and isinstance(c.tree, Arith) and c.tree.op == "*"
               and c.tree.right == Const(4) for c in kernel.variants[0].launch_checks)


SRC = "    src = (block_idx.z * grid_dim.x + block_idx.x) * 4"


@pytest.mark.parametrize("old, new, checked", [
    # w must be below the scale: block_idx.y is not below grid_dim.x.
    (SRC, SRC.replace("+ block_idx.x", "+ block_idx.y"), {(9, "a", 0)}),
    # the scale must be the grid axis that bounds w.
    (SRC, SRC.replace("* grid_dim.x", "* grid_dim.y"), {(9, "a", 0)}),
    # a constant scale with w possibly past it (block_idx.x < grid_dim.x, not < 2).
    (SRC, SRC.replace("* grid_dim.x", "* 2"), {(9, "a", 0)}),
    # the grid's count of rows is not asserted.
    ("grid_dim.z * grid_dim.x * 4", "grid_dim.z * 4", {(9, "a", 0), (9, "b", 0)}),
])
def test_a_block_index_over_axes_that_may_pass_the_extent_keeps_its_checks(old, new, checked):
    assert index_checks(GROUPED.replace(old, new)) == checked


def test_a_grouped_block_order_runs_every_tile_once(backend, kernel_module):
    m = kernel_module(GROUPED)
    a = gn.to_device(np.arange(48 * 64, dtype=np.float32).reshape(48, 64))
    b = gn.to_device(np.full((48, 64), np.nan, np.float32))
    # 12 tiles of 4 rows: groups of 3 block rows (grid_dim.x), 4 groups, 2 column tiles.
    m.grouped.launch(gn.GridDim3D(3, 2, 4), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)(a, b)
    np.testing.assert_array_equal(b.to_host(), a.to_host())


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


# ---- global alignment from the launch facts -----------------------------------------------

VEC_HEAD = HEAD + "from gpu_native import load_vec4\n"

ROWS4 = VEC_HEAD + """
@gpu_kernel(Kernel1D)
def row_sums(a: CUDASlice2D[f32], out: CUDASliceMut2D[f32]):
    assert a.shape[1] % 4 == 0 and out.shape[1] == a.shape[1] // 4, "whole vectors"
    assert out.shape[0] == a.shape[0], "rows"
    r = block_idx.x * block_dim.x + thread_idx.x
    if r < a.shape[0]:
        for k4 in range(a.shape[1] // 4):
            v = load_vec4(a, r, k4 * 4)
            out[r, k4] = v.x + v.y + v.z + v.w
"""

FLAT4 = VEC_HEAD + """
@gpu_kernel(Kernel1D)
def sums(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    assert a.shape[0] % 4 == 0, "whole vectors"
    i = block_idx.x * block_dim.x + thread_idx.x
    if i < out.shape[0] and i * 4 < a.shape[0]:
        v = load_vec4(a, i * 4)
        out[i] = v.x + v.y + v.z + v.w
"""


def sites_of(source: str, kind: str) -> list:
    return [s for s in kernel_of(source).variants[0].sites if s.kind == kind]


def address_checks(source: str) -> list[ShapeAssert]:
    return [c for c in kernel_of(source).variants[0].launch_checks
            if isinstance(c, ShapeAssert)
            and any(isinstance(t, AddressOf) for t in subtrees(c.tree))]


def test_a_row_length_fact_proves_a_global_vector_aligned_and_whole():
    # a.shape[1] % 4 == 0: every row starts 16 bytes apart, k4 * 4 is a multiple of 4, and the
    # launcher checks a's address; the vector's last axis is proven too (k4 * 4 < a.shape[1]).
    assert sites_of(ROWS4, "align") == []
    assert [c.tree for c in address_checks(ROWS4)] == [
        Compare("==", Arith("%", AddressOf(0), Const(16)), Const(0))]
    assert sites_of(ROWS4, "vector") == []


def test_without_the_row_length_fact_the_alignment_check_stays():
    near = ROWS4.replace("a.shape[1] % 4 == 0 and ", "")
    assert len(sites_of(near, "align")) == 1
    assert address_checks(near) == []
    # An index not visibly a multiple of 4 keeps it too.
    odd = ROWS4.replace("load_vec4(a, r, k4 * 4)", "load_vec4(a, r, k4 * 4 + r % 2)")
    assert len(sites_of(odd, "align")) == 1


def test_a_one_dimensional_vector_with_a_length_fact():
    assert sites_of(FLAT4, "align") == []
    assert len(address_checks(FLAT4)) == 1
    # Without a contract for a, its per-thread check (a KernelIndexError) stays.
    near = FLAT4.replace('    assert a.shape[0] % 4 == 0, "whole vectors"\n', "")
    assert len(sites_of(near, "align")) == 1 and address_checks(near) == []


CP16 = HEAD + """from gpu_native import cp_async, cp_async_commit, cp_async_wait, shared_array, f16, unsafe
@gpu_kernel(Kernel1D)
def stage(a: CUDASlice2D[f16], out: CUDASliceMut2D[f16]):
    assert block_dim.x == 32
    assert a.shape[0] == grid_dim.x * 4 and a.shape[1] == 64, "tiles"
    assert out.shape[0] == a.shape[0] and out.shape[1] == 64, "out"
    t = shared_array(f16, (4, 64))
    r = thread_idx.x // 8
    k = (thread_idx.x % 8) * 8
    with unsafe():
        cp_async(t, (r, k), a, (block_idx.x * 4 + r, k), 16)
    cp_async_commit()
    cp_async_wait(0)
    out[block_idx.x * 4 + r, k] = t[r, k]
"""


def test_cp_async_sources_aligned_by_a_row_length_fact():
    def messages(source):
        return [s.message for s in sites_of(source, "assert") if "cp_async" in s.message]

    # a.shape[1] == 64: its rows are 128 bytes apart; the address check names the array.
    (msg,) = messages(CP16)
    assert "address of array 'a'" in msg and "16 bytes" in msg
    assert len(address_checks(CP16)) == 1
    # Without it, the per-thread check stays (both the source's and, proven, not the dest's).
    near = CP16.replace(" and a.shape[1] == 64", "")
    assert len(messages(near)) == 1 and address_checks(near) == []
    assert "not aligned to 16 bytes" in messages(near)[0]


# ---- the launcher refuses a misaligned base --------------------------------------------------


def test_a_misaligned_view_is_refused_at_launch(backend, kernel_module):
    m = kernel_module(FLAT4)
    flat = gn.to_device(np.arange(33, dtype=np.float32))
    out = gn.to_device(np.zeros(8, np.float32))

    def run(a):
        m.sums.launch(gn.GridDim1D(1), gn.BlockDim1D(8), 0, gn.DEFAULT_STREAM)(a, out)

    for _ in range(2):  # the second call takes the fast path
        run(flat[:32])
    np.testing.assert_array_equal(out.to_host(), np.arange(32).reshape(8, 4).sum(axis=1))
    out.copy_from_host(np.zeros(8, np.float32))
    with pytest.raises(KernelAssertionError) as info:
        run(flat[1:])  # 4 bytes past a 16-byte boundary
    text = str(info.value)
    assert "address of array 'a'" in text and "not aligned to 16 bytes" in text
    assert "checked at launch" in text
    np.testing.assert_array_equal(out.to_host(), 0)  # nothing ran


def test_a_misaligned_row_view_is_refused_at_launch(backend, kernel_module):
    m = kernel_module(ROWS4)
    wide = gn.to_device(np.arange(2 * 12, dtype=np.float32).reshape(2, 12))
    out = gn.to_device(np.zeros((1, 3), np.float32))

    def run(a):
        m.row_sums.launch(gn.GridDim1D(1), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)(a, out)

    run(wide[:1])
    np.testing.assert_array_equal(out.to_host(), [[6, 22, 38]])
    with pytest.raises(KernelAssertionError, match="address of array 'a'"):
        run(wide.reshape(24)[1:13].reshape(1, 12))  # 4 bytes past a 16-byte boundary


def test_an_address_check_survives_the_spec_literal():
    # What the cache stores and reads back: an AddressOf leaf is a valid tree.
    from gpu_native.spec import KernelSpec

    spec = kernel_of(ROWS4)
    back = KernelSpec.from_literal(spec.to_literal())
    assert [c for c in back.variants[0].launch_checks if isinstance(c, ShapeAssert)] == [
        c for c in spec.variants[0].launch_checks if isinstance(c, ShapeAssert)]


# ---- extents asserted equal, a grid that covers, a loop below a known stop -----------------

COVER = HEAD + """
@gpu_kernel(Kernel2D)
def fill(b: CUDASlice2D[f32], c: CUDASliceMut2D[f32]):
    assert block_dim.x == 16 and block_dim.y == 1
    assert b.shape[0] == c.shape[0] and b.shape[1] == c.shape[1], "same shapes"
    assert grid_dim.x * 64 >= c.shape[1], "the grid covers c"
    col0 = block_idx.x * 64 + thread_idx.x
    row = block_idx.y
    for j in range(4):
        col = col0 + j * 16
        if row < c.shape[0] and col < b.shape[1]:
            c[row, col] = b[row, col] + 1.0
"""


def test_a_guard_on_an_extent_asserted_equal_bounds_the_other():
    # `col < b.shape[1]` guards c's axis 1 too (b.shape[1] == c.shape[1] at every launch).
    assert index_checks(COVER) == set()
    assert index_checks(COVER.replace(" and b.shape[1] == c.shape[1]", "")) == {(10, "c", 1)}


def test_a_covering_grid_keeps_the_column_tile_from_wrapping():
    # Without the assert, block_idx.x * 64 may wrap in i32 (grid_dim.x reaches 2**31 - 1): the
    # sum is not known nonnegative and both stores' column checks stay.
    kernel = kernel_of(COVER)
    assert any(isinstance(c, IndexFits) and c.tree == Arith("*", LaunchIndex("grid_dim", 0),
                                                            Const(64))
               for c in kernel.variants[0].launch_checks)
    uncovered = COVER.replace('    assert grid_dim.x * 64 >= c.shape[1], "the grid covers c"\n',
                              "")
    assert index_checks(uncovered) == {(9, "b", 1), (9, "c", 1)}


def test_a_grid_whose_tile_would_wrap_is_refused(sim, kernel_module):
    m = kernel_module(COVER)
    b = gn.to_device(np.arange(8 * 64, dtype=np.float32).reshape(8, 64))
    c = gn.to_device(np.zeros((8, 64), np.float32))
    launch2 = m.fill.launch
    launch2(gn.GridDim2D(1, 8), gn.BlockDim2D(16, 1), 0, gn.DEFAULT_STREAM)(b, c)
    np.testing.assert_array_equal(c.to_host(), b.to_host() + 1)
    with pytest.raises(LaunchError, match=r"`grid_dim\.x \* 64` reach .* past the i32 maximum"):
        launch2(gn.GridDim2D(2**31 // 64, 8), gn.BlockDim2D(16, 1), 0, gn.DEFAULT_STREAM)(b, c)


STEPS = HEAD + """
@gpu_kernel(Kernel1D)
def sums(a: CUDASlice2D[f32], out: CUDASliceMut[f32], spare: i64):
    assert block_dim.x == 32
    assert out.shape[0] == a.shape[0], "one sum per row"
    row = block_idx.x
    depth = a.shape[1]
    steps = (depth + 8 - 1) // 8
    total = 0.0
    for turn in range(0, steps + 1, 2):
        for half in range(2):
            k = (turn + half) * 8 + thread_idx.x % 8
            if row < a.shape[0] and k < depth:
                total += a[row, k]
    if row < out.shape[0] and thread_idx.x == 0:
        out[row] = total
"""


def test_a_loop_counter_below_a_known_stop_keeps_its_multiples_from_wrapping():
    # turn < steps + 1 <= (2**48 + 7) // 8 + 1: (turn + half) * 8 stays within i64, so the
    # guard proves k; before, turn was bounded only by the type and k might have wrapped.
    assert index_checks(STEPS) == set()
    unknown = STEPS.replace("steps = (depth + 8 - 1) // 8", "steps = spare")
    assert index_checks(unknown) == {(12, "a", 1)}
