"""Tuples in kernels: device functions returning tuples, unpacking, constant tuples and loops over
them, ``a.shape``, ``divmod``, ``enumerate``, ``zip``, ``Const`` parameters, defaults and
keyword arguments.  Kernels run on the simulator (and, marked ``gpu``, on the GPU) against NumPy;
misuse is a located transpile error; the proofs see through unpacking."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.rewrite import rewrite_module


@pytest.fixture(scope="module")
def kt():
    from tests.helpers import kernels_tuples

    return kernels_tuples


def launch(kernel, grid, block):
    return kernel.launch(grid, block, 0, gn.DEFAULT_STREAM)


def filled(shape, dtype, value):
    out = gn.empty(shape, dtype)
    out.fill(value)
    return out


def grid1(n, block=64):
    return gn.GridDim1D((n + block - 1) // block), gn.BlockDim1D(block)


# ---- kernels against NumPy ---------------------------------------------------------------------


def test_a_device_function_returns_a_tuple_that_the_caller_unpacks(backend, kt, rng):
    n = 300
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(-9, 9, n).astype(np.int32)
    b[b == 0] = 7
    outs = [filled(n, gn.i32, -1) for _ in range(4)]
    launch(kt.divmods, *grid1(n))(gn.to_device(a), gn.to_device(b), *outs)
    q, r, pq, pr = (o.to_host() for o in outs)
    # Python's floor semantics: the remainder takes the divisor's sign.
    np.testing.assert_array_equal(q, np.floor_divide(a, b))
    np.testing.assert_array_equal(r, np.mod(a, b))
    np.testing.assert_array_equal(pq, np.floor_divide(a, b))
    np.testing.assert_array_equal(pr, np.mod(a, b))


def test_divmod_of_floats_follows_python(backend, kt, rng):
    n = 200
    a = rng.standard_normal(n) * 100
    b = rng.standard_normal(n) * 3
    a[:4] = [7.5, -7.5, 7.5, -0.0]
    b[:4] = [2.0, 2.0, -2.0, 3.0]
    q, r = filled(n, gn.f64, np.nan), filled(n, gn.f64, np.nan)
    launch(kt.float_divmod, *grid1(n))(gn.to_device(a), gn.to_device(b), q, r)
    expected = np.array([divmod(x, y) for x, y in zip(a.tolist(), b.tolist())])
    np.testing.assert_array_equal(q.to_host(), expected[:, 0])
    np.testing.assert_array_equal(r.to_host(), expected[:, 1])
    assert math.copysign(1.0, r.to_host()[3]) == math.copysign(1.0, divmod(-0.0, 3.0)[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_generic_tuple_result_and_an_item_of_a_call(backend, kt, rng, dtype):
    n = 150
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    lo, hi = filled(n, dtype, np.nan), filled(n, dtype, np.nan)
    launch(kt.sort_pairs, *grid1(n))(gn.to_device(x), gn.to_device(y), lo, hi)
    np.testing.assert_array_equal(lo.to_host(), np.minimum(x, y))
    np.testing.assert_array_equal(hi.to_host(), np.maximum(x, y))


def test_a_heterogeneous_tuple_local(backend, kt, rng):
    n = 100
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    r, phi, right = filled(n, gn.f32, np.nan), filled(n, gn.f32, np.nan), filled(n, gn.i32, -1)
    launch(kt.to_polar, *grid1(n))(gn.to_device(x), gn.to_device(y), r, phi, right)
    np.testing.assert_allclose(r.to_host(), np.hypot(x, y), rtol=1e-6)
    np.testing.assert_allclose(phi.to_host(), np.arctan2(y, x), rtol=1e-6)
    np.testing.assert_array_equal(right.to_host(), (x >= 0).astype(np.int32))


def test_a_tuple_parameter(backend, kt, rng):
    n = 90
    a = rng.integers(0, 9, n).astype(np.int32)
    out = filled(n, gn.i32, -1)
    launch(kt.tuple_params, *grid1(n))(gn.to_device(a), out)
    # swap_sum((a, 3)) is (3, a, a + 3)
    np.testing.assert_array_equal(out.to_host(), 300 + a * 10 + a + 3)


def test_default_and_keyword_arguments(backend, kt, rng):
    n = 70
    a = rng.standard_normal(n).astype(np.float32)
    out = filled((n, 4), gn.f32, np.nan)
    launch(kt.defaults_and_keywords, *grid1(n))(gn.to_device(a), out)
    expected = np.stack([a * 2, a * 3, a * 2 + 1, a * np.float32(0.5) - 1], axis=1)
    np.testing.assert_allclose(out.to_host(), expected, rtol=1e-6)


def test_a_loop_over_a_constant_tuple_in_a_warp_reduction(backend, kt, rng):
    n = 128
    a = rng.standard_normal(n).astype(np.float32)
    out = filled(n, gn.f32, np.nan)
    launch(kt.warp_sums, gn.GridDim1D(1), gn.BlockDim1D(n))(gn.to_device(a), out)
    got = out.to_host()
    warps = a.astype(np.float64).reshape(-1, 32)
    # A tree of 31 f32 additions: each rounds by at most eps/2 of a partial sum, which is bounded
    # by the sum of magnitudes (a relative tolerance alone fails where the sum cancels to ~0).
    bound = 5 * np.float32(2.0 ** -24) * np.abs(warps).sum(axis=1)
    np.testing.assert_allclose(got[::32], warps.sum(axis=1), rtol=0, atol=bound.max())
    np.testing.assert_allclose(got[16::32], warps[:, 16:].sum(axis=1), rtol=0, atol=bound.max())


def test_a_const_tuple_parameter_enumerated(backend, kt, rng):
    n = 100
    a = rng.standard_normal(n).astype(np.float32)
    out = filled(n, gn.f32, np.nan)
    launch(kt.smooth, *grid1(n))(gn.to_device(a), out)
    expected = a.copy()
    expected[:-2] = 0.25 * a[:-2] + 0.5 * a[1:-1] + 0.25 * a[2:]
    np.testing.assert_allclose(out.to_host(), expected, rtol=1e-5, atol=1e-6)


def test_shape_unpacking_in_a_2d_kernel(backend, kt, rng):
    a = rng.standard_normal((13, 21)).astype(np.float32)
    out = filled((13, 21), gn.f32, np.nan)
    launch(kt.transpose_add, gn.GridDim2D(2, 2), gn.BlockDim2D(16, 8))(gn.to_device(a), out)
    np.testing.assert_allclose(out.to_host(), a + np.float32(13 * 1000 + 21), rtol=1e-6)


def test_enumerate_zip_swap_and_shape(backend, kt):
    out = filled((10, 5), gn.i64, -1)
    launch(kt.loops, gn.GridDim1D(1), gn.BlockDim1D(32))(out)
    i = np.arange(10)
    acc = [sum(j * 100 + x for j, x in enumerate(range(k, k + 5, 2))) for k in range(10)]
    expected = np.stack([np.full(10, sum(k * p * q for k, (p, q) in enumerate(
        ((1, 10), (2, 20), (3, 30)), start=1))), acc, np.full(10, 4 + 10 + 18), 7000 + i,
        np.full(10, 105)], axis=1)
    np.testing.assert_array_equal(out.to_host(), expected)


def test_one_item_shape_unpacking(backend, kt):
    a = gn.zeros(37, gn.f32)
    out = filled(20, gn.i64, -1)
    launch(kt.lengths, *grid1(64))(a, out)
    np.testing.assert_array_equal(out.to_host(), np.full(20, 370 + 20))


def test_a_loop_variable_reassigned_in_a_branch_or_a_loop(backend, kt):
    # Where the body of a loop over a tuple assigns its variable in a branch or an inner loop,
    # the constant becomes a variable first: the branch and the next iteration see the new value.
    def reference(i):
        total = 0
        for off in (1, 2, 3):
            while off < 10:
                total += off
                off = off + 4
            if i > 5:
                off = 100
            total += off * 1000
        for off in (1, 2):
            off = off * 10
            total += off * 100000
        off = 7
        return total + off + 3

    out = filled(10, gn.i64, -1)
    launch(kt.reassigned_loop_variable, gn.GridDim1D(1), gn.BlockDim1D(10))(out)
    np.testing.assert_array_equal(out.to_host(), [reference(i) for i in range(10)])


def test_the_tuple_of_a_loop_is_evaluated_before_the_loop(backend, kt):
    # As in Python: the body's assignments to x, y and t do not change what the loop visits.
    def reference(i):
        x, y, total = i, 100, 0
        for v in (x, y):
            x, y = x + 1000, y + 1000
            total = total * 10000 + v
        t = (i, i + 1)
        for w in t:
            t = (w * 2, w * 2 + 1)
            total += w
        for p, q in zip((x, 5), t):
            total += p * q
        return total

    out = filled(8, gn.i64, -1)
    launch(kt.evaluated_once, gn.GridDim1D(1), gn.BlockDim1D(8))(out)
    np.testing.assert_array_equal(out.to_host(), [reference(i) for i in range(8)])


def test_the_tuples_example_of_the_language_docs_runs(backend, kernel_module):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "language.md").read_text()
    section = text.split("\n## Tuples\n", 1)[1].split("\n## ", 1)[0]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    kernel_module(snippet)  # its asserts check the results against NumPy


# ---- the generated code ------------------------------------------------------------------------


def _transpile(tmp_path, body: str, name: str = "tuple_kernels"):
    source = HEADER + textwrap.dedent(body)
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return rewrite_module(source, str(path), name), path


def _cuda(tmp_path, body: str) -> str:
    from gpu_native.rewrite import transpile_module

    source = HEADER + textwrap.dedent(body)
    module = transpile_module(source, str(tmp_path / "m.py"), "m")
    return "\n".join(v.cuda for k in module.kernels for v in k.variants)


def test_a_loop_over_a_constant_tuple_is_unrolled_with_its_constants(tmp_path):
    cuda = _cuda(tmp_path, """
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            v = a[i]
            for off in (16, 8, 4, 2, 1):
                v += shfl_down(v, off)
            a[i] = v
        """)
    shuffles = [line.strip() for line in cuda.splitlines() if "__shfl_down_sync" in line]
    main = shuffles[:5]  # the kernel's first entry point
    assert main == [f"v = (v + __shfl_down_sync(4294967295u, v, {off}, 32));"
                    for off in (16, 8, 4, 2, 1)]
    assert "off" not in cuda.split("gn_k(")[1].split("}")[0].split("{")[1]


def test_a_tuple_result_is_one_struct(tmp_path):
    cuda = _cuda(tmp_path, """
        @gpu_device
        def pair(x: f32) -> tuple[f32, i32]:
            return x * 3.0, 1

        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            v, n = pair(a[i])
            a[i] = v + f32(n) + pair(v)[0]
        """)
    assert cuda.count("struct gn_tuple_f32_i32 { float v0; int v1; };") == 1
    assert "static __device__ gn_tuple_f32_i32 gn_dev_m_pair(" in cuda
    assert "return gn_tuple_f32_i32{(x * 3.0f), 1};" in cuda
    assert ").v0" in cuda


def _proofs(tmp_path, body: str, capsys) -> str:
    from gpu_native.cli import main

    path = tmp_path / "proofs.py"
    path.write_text(HEADER + textwrap.dedent(body))
    assert main(["expand", str(path), "--proofs"]) == 0
    return capsys.readouterr().out


def test_shape_unpacking_proves_the_bounds(tmp_path, capsys):
    guarded = _proofs(tmp_path, """
        @gpu_kernel(Kernel2D)
        def k(a: CUDASliceMut2D[f32]):
            h, w = a.shape
            j, i = FlatLayout2D.uid()
            if i < h and j < w:
                a[i, j] = 1.0
        """, capsys)
    assert "bounds checks left: none" in guarded, guarded
    # The same store without the guard keeps its check: the proof came from the unpacking.
    unguarded = _proofs(tmp_path, """
        @gpu_kernel(Kernel2D)
        def k(a: CUDASliceMut2D[f32]):
            h, w = a.shape
            j, i = FlatLayout2D.uid()
            if i < h:
                a[i, j] = 1.0
        """, capsys)
    assert "bounds checks left: 1" in unguarded, unguarded


def test_tuple_assignment_keeps_the_unique_write_proof(tmp_path, capsys):
    # `r, c = y, x` assigns each name its value (no temporaries: no item reads a target), so r
    # and c are still the uid components the unique-write and bounds proofs look through.
    out = _proofs(tmp_path, """
        @gpu_kernel(Kernel2D)
        def k(a: CUDASliceMut2D[f32]):
            h, w = a.shape
            x, y = FlatLayout2D.uid()
            r, c = y, x
            if r < h and c < w:
                a[r, c] = 1.0
        """, capsys)
    assert "bounds checks left: none" in out, out
    assert "unique index: no two threads of the grid" in out, out


def test_a_loop_over_shape_and_a_constant_tuple_know_each_value(tmp_path, capsys):
    kernel = """
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            s = shared_array(f32, 32)
            t = thread_idx.x
            if t < 32:
                s[t] = 1.0
            sync_threads()
            v = f32(0)
            for off in OFFSETS:
                if t < off:
                    v += s[t + off]
            for n in a.shape:
                for j, x in enumerate(range(n)):
                    a.atomic_ref(j).fetch_add(v)
        """
    # s[t + off] stays within 32 for each of 16, 8, 4; a[j] within len(a), as j counts x.
    out = _proofs(tmp_path, kernel, capsys)
    assert "bounds checks left: none" in out, out
    # With an offset of 40 the same load needs its check (in that copy only).
    out = _proofs(tmp_path, kernel.replace("for off in OFFSETS:", "for off in (16, 40):"),
                  capsys)
    assert "bounds checks left: 1 " in out and "s[t + off]  (s)" in out, out


# ---- misuse ------------------------------------------------------------------------------------

HEADER = """\
import math
from gpu_native import *

OFFSETS = (16, 8, 4)
NESTED = ((1, 2), (3, 4))

def host_helper(x):
    return x
"""

CASES = {
    "unpacking count": ("""
@gpu_device
def pair(x: f32) -> tuple[f32, f32]:
    return x, x

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    x, y, z = pair(a[i])  # <-
    a[i] = x
""", "cannot unpack a tuple of 2 items into 3 names"),
    "unpacking count of a display": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    x, y = 1, 2, 3  # <-
""", "cannot unpack a tuple of 3 items into 2 names"),
    "unpacking a number": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    x, y = a[0]  # <-
""", "cannot unpack a f32: only tuples and multi-dimensional unique ids can be unpacked"),
    "shape of a 2-D array into one name": ("""
@gpu_kernel(Kernel2D)
def k(a: CUDASliceMut2D[f32]):
    n, = a.shape  # <-
""", "cannot unpack a tuple of 2 items into 1 name"),
    "loop over an array": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    for x in a:  # <-
        pass
""", "not over the array 'a'"),
    "loop over a number": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], n: i32):
    for x in n:  # <-
        pass
""", "kernels loop over range(...), FlatLayout1D.grid_stride(n) or a tuple, not over a i32"),
    "tuple of arrays": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], b: CUDASliceMut[f32]):
    for x in (a, b):  # <-
        pass
""", "a tuple cannot hold the array 'a'"),
    "tuple of tuples as a value": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    t = NESTED  # <-
""", "a tuple in a kernel holds numbers and bools, not tuple[i32, i32]"),
    "break in a tuple loop": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    for off in OFFSETS:
        if off == 8:
            break  # <-
""", "`break` in a loop over a tuple: the loop is unrolled"),
    "loop variable after a tuple loop": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    for off in OFFSETS:
        pass
    a[i] = f32(off)  # <-
""", "'off' is the variable of a loop over a tuple, which is unrolled"),
    "tuple index out of range": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = f32(OFFSETS[3])  # <-
""", "tuple index 3 is out of range for a tuple of 3 items"),
    "tuple index not constant": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    a[i] = f32(OFFSETS[n])  # <-
""", "a tuple index must be a constant integer"),
    "Const argument not constant": ("""
@gpu_device
def total(v: f32, offsets: Const) -> f32:
    for off in offsets:
        v += f32(off)
    return v

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    a[i] = total(a[i], (1, n))  # <-
""", "argument 'offsets' of total() is a Const parameter: it needs a compile-time constant"),
    "Const kernel parameter": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], offsets: Const):  # <-
    pass
""", "Const is the annotation of a @gpu_device function's parameter"),
    "tuple kernel parameter": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], shape: tuple[i32, i32]):  # <-
    pass
""", "kernel parameters cannot be tuples"),
    "Const parameter reassigned": ("""
@gpu_device
def f(v: f32, n: Const = 3) -> f32:
    n = 4  # <-
    return v

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = f(a[i])
""", "the Const parameter 'n' cannot be reassigned"),
    "default not constant": ("""
@gpu_device
def f(v: f32, s: f32 = host_helper(2)) -> f32:  # <-
    return v * s

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = f(a[i])
""", "the default of parameter 's' must be a compile-time constant"),
    "default of the wrong type": ("""
@gpu_device
def f(v: f32, n: i32 = 2.5) -> f32:  # <-
    return v * f32(n)
""", "the default of parameter 'n'"),
    "default of a kernel parameter": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], n: i32 = 3):  # <-
    pass
""", "parameters of kernels cannot have default values"),
    "unknown keyword": ("""
@gpu_device
def f(v: f32, scale: f32 = 2.0) -> f32:
    return v * scale

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = f(a[i], sclae=3.0)  # <-
""", "f() has no parameter 'sclae'"),
    "keyword given twice": ("""
@gpu_device
def f(v: f32, scale: f32 = 2.0) -> f32:
    return v * scale

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = f(a[i], 2.0, scale=3.0)  # <-
""", "f() got two values for argument 'scale'"),
    "missing argument": ("""
@gpu_device
def f(v: f32, w: f32, scale: f32 = 2.0) -> f32:
    return v * w * scale

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = f(a[i], scale=1.0)  # <-
""", "f() is missing argument 'w'"),
    "returning a tuple without an annotation": ("""
@gpu_device
def f(v: f32):
    return v, v  # <-

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    f(a[i])
""", "f has no return annotation, so it cannot return a value"),
    "returning a tuple of the wrong length": ("""
@gpu_device
def f(v: f32) -> tuple[f32, f32]:
    return v, v, v  # <-

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    x, y = f(a[i])
""", "the returned value must be a tuple[f32, f32], not a tuple of 3 items"),
    "a tuple where a number goes": ("""
@gpu_device
def f(v: f32) -> tuple[f32, f32]:
    return v, v

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = f(a[i])  # <-
""", "the value stored into 'a' must be a scalar f32, not tuple[f32, f32]"),
    "divmod of a call": ("""
@gpu_device
def f(v: i32) -> i32:
    w = v + 1  # not one returned expression: a call the proofs do not look into
    return w

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    q, r = divmod(f(a[i]), 3)  # <-
""", "divmod()'s arguments are each used twice"),
    "divmod by a zero constant": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    q, r = divmod(a[i], 0)  # <-
""", "integer // by zero"),
    "enumerate without a pair": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[i32]):
    for x in enumerate(range(4)):  # <-
        pass
""", "enumerate() yields pairs"),
    "zip of ranges": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[i32]):
    for x, y in zip(OFFSETS, 4):  # <-
        pass
""", "zip() in kernels combines tuples"),
}


def _expected_line(source: str) -> int:
    for number, line in enumerate(source.splitlines(), 1):
        if line.rstrip().endswith("# <-"):
            return number
    raise AssertionError("no line is marked # <-")


@pytest.mark.parametrize("name", sorted(CASES))
def test_misuse_is_a_located_transpile_error(name, tmp_path):
    body, message = CASES[name]
    source = HEADER + textwrap.dedent(body)
    path = tmp_path / "bad_tuples.py"
    path.write_text(source)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, str(path), "bad_tuples")
    err = info.value
    text = str(err)
    assert message in text, text
    assert err.span is not None
    assert err.span.line == _expected_line(source), text
    assert text.startswith(f"{path}:{err.span.line}:{err.span.col + 1}: error: ")
    lines = text.splitlines()
    assert lines[1].strip() == source.splitlines()[err.span.line - 1].strip()
    assert set(lines[2].strip()) == {"^"}
    assert "Traceback" not in text


def test_an_uncalled_device_function_with_a_const_default_is_checked(tmp_path):
    with pytest.raises(TranspileError, match=r"cannot evaluate the constant expression 1\.5 << 1"):
        _transpile(tmp_path, """
            @gpu_device
            def f(v: f32, shifts: Const = (1.5, 2)) -> f32:
                for s in shifts:
                    v += f32(s << 1)
                return v
            """)
    # Without a default a Const parameter has no value until a call: nothing to check yet.
    _transpile(tmp_path, """
        @gpu_device
        def g(v: f32, shifts: Const) -> f32:
            for s in shifts:
                v += f32(s)
            return v
        """, "other")
