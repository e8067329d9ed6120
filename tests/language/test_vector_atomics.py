"""Atomics on arrays of vectors: `a.atomic_ref(i).fetch_add(v)` (and fetch_sub, fetch_min,
fetch_max) on vec2f ... vec4i, and fetch_add on the 16-bit pairs vec2h and vec2bf, each
component one atomic of the element type.

Kernels run on the simulator and (GPU-marked) on the GPU with fresh random inputs, many threads
per element, and their results are checked in a way that holds whatever order the threads took:
the final vectors against NumPy in float64, and the old vectors the atomics returned as a chain
per component (sorted, each old value is the one before it plus that thread's operand, rounded
once in the element type, and the last plus its operand is the final value).  The generated
CUDA also runs on the host (tools/fuzz/host_cuda.py, threads one after another), where it must
give the simulator's bytes, old vectors included.  Then the simulator's race detector, and the
refusals."""

from __future__ import annotations

import operator
import re
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.lang.types import VECTORS
from gpu_native.rewrite import rewrite_module, transpile_module
from gpu_native.simulator.ops import f64_to_bf16
from tests.helpers import HELPERS, ROOT
from tests.simulator.support import build, launch

NUMBER_VECTORS = [name for name, v in VECTORS.items() if v.elem.name in ("f32", "f64", "i32")]
TARGETS = 7  # the elements the threads share (about 1 / 7 of them each)


@pytest.fixture(scope="module")
def kva():
    from tests.helpers import kernels_vector_atomics

    return kernels_vector_atomics


def run(kernel, n, *args, block=128):
    kernel.launch(gn.GridDim1D((n + block - 1) // block), gn.BlockDim1D(block), 0,
                  gn.DEFAULT_STREAM)(*args)


def inputs(name: str, n: int, rng):
    """``n`` operands of vector type ``name`` (float: in [1, 2), so that every add changes
    the sum; integer: 1 to 999), the element each thread updates, and the first values of the
    four accumulators (add, sub, min, max) of every element."""
    info = VECTORS[name]
    dtype = info.elem.dtype
    shape = (n, info.n)
    if info.elem.is_int:
        values = rng.integers(1, 1000, shape).astype(dtype)
        first = rng.integers(-2000, 2000, (4, TARGETS, info.n)).astype(dtype)
    else:
        values = (1 + rng.random(shape)).astype(dtype)
        first = (3 * rng.random((4, TARGETS, info.n)) - 1).astype(dtype)
    index = rng.integers(0, TARGETS, n).astype(np.int32)
    return values, index, first


def assert_chain(old, values, first, final, step):
    """Whatever order the threads took, one component's old values sorted in the direction of
    ``step`` are each the previous one stepped by that thread's operand (``step`` rounds as the
    element type does), from ``first`` to ``final``."""
    increasing = step(first, values[0]) > first if len(values) else True
    order = np.argsort(old if increasing else -old, kind="stable")
    chain = old[order]
    assert len(chain) == 0 or chain[0] == first, (chain[:3], first)
    np.testing.assert_array_equal(chain[1:], step(chain[:-1], values[order][:-1]))
    if len(chain):
        assert final == step(chain[-1], values[order][-1])
    else:
        assert final == first


# ---- every vector type, on each backend ---------------------------------------------------------


@pytest.mark.parametrize("name", NUMBER_VECTORS)
def test_add_sub_min_max_of_every_vector_type(backend, kva, rng, name):
    info = VECTORS[name]
    n = 1500
    values, index, first = inputs(name, n, rng)
    acc = gn.to_device(first, dtype=getattr(gn, name))
    old = gn.empty((n, 4), getattr(gn, name))
    old.fill(np.nan if not info.elem.is_int else -1)  # poison: what no thread wrote shows
    run(getattr(kva, f"atomics_{name}"), n, gn.to_device(values, dtype=getattr(gn, name)),
        gn.to_device(index), acc, old)
    got, olds = acc.to_host(), old.to_host()
    assert got.shape == (4, TARGETS, info.n) and olds.shape == (n, 4, info.n)

    # The final vectors against NumPy in float64 (f32 sums: a rounding per add).
    v64 = values.astype(np.float64)
    sums = np.zeros((TARGETS, info.n))
    np.add.at(sums, index, v64)
    lows = np.full((TARGETS, info.n), np.inf)
    np.minimum.at(lows, index, v64)
    highs = np.full((TARGETS, info.n), -np.inf)
    np.maximum.at(highs, index, v64)
    f64 = first.astype(np.float64)
    if info.elem.is_int:
        np.testing.assert_array_equal(got[0], f64[0] + sums)
        np.testing.assert_array_equal(got[1], f64[1] - sums)
    else:
        tol = 4e-7 * n if info.elem.name == "f32" else 1e-12 * n
        np.testing.assert_allclose(got[0], f64[0] + sums, rtol=tol)
        np.testing.assert_allclose(got[1], f64[1] - sums, rtol=tol)
    np.testing.assert_array_equal(got[2], np.minimum(f64[2], lows))
    np.testing.assert_array_equal(got[3], np.maximum(f64[3], highs))

    # The old vectors: each component of each element, a chain of its threads' atomics.
    for j in range(TARGETS):
        hit = index == j
        for c in range(info.n):
            # In the element type: f32 + f32 is rounded to f32, as the atomics round.
            assert_chain(olds[hit, 0, c], values[hit, c], first[0, j, c], got[0, j, c],
                         operator.add)
            assert_chain(olds[hit, 1, c], values[hit, c], first[1, j, c], got[1, j, c],
                         operator.sub)
            for k, better in ((2, np.minimum), (3, np.maximum)):
                # A min's (max's) old value is the first value or a thread's operand, between
                # the first and the final.
                o = olds[hit, k, c]
                assert np.isin(o, np.append(values[hit, c], first[k, j, c])).all()
                assert (better(o, got[k, j, c]) == got[k, j, c]).all()
                assert (better(o, first[k, j, c]) == o).all()


def _round(kind: str):
    if kind == "f16":
        return lambda a, b: (np.asarray(a, np.float64) + b).astype(np.float16)
    return lambda a, b: f64_to_bf16(np.asarray(a, np.float64) + np.asarray(b, np.float64))


@pytest.mark.parametrize("name", ["vec2h", "vec2bf"])
def test_add_of_the_16_bit_pairs(backend, kva, rng, name):
    # CUDA's atomicAdd of a __half2 (__nv_bfloat162): each lane rounded once, atomically.
    kind = VECTORS[name].elem.name
    n = 700
    values = (1 + rng.random((n, 2))).astype(np.float32)
    first = (3 * rng.random((TARGETS, 2))).astype(np.float32)
    if kind == "f16":
        values, first = values.astype(np.float16), first.astype(np.float16)
    else:
        values, first = (f64_to_bf16(x.astype(np.float64)).astype(np.float32)
                         for x in (values, first))
    index = rng.integers(0, TARGETS, n).astype(np.int32)
    vec = getattr(gn, name)
    acc = gn.to_device(first, dtype=vec)
    old = gn.to_device(np.full((n, 2), np.nan, np.float32), dtype=vec)
    run(getattr(kva, f"atomics_{name}"), n, gn.to_device(values, dtype=vec),
        gn.to_device(index), acc, old)
    got = acc.to_host().astype(np.float64)
    olds = old.to_host().astype(np.float64)
    sums = np.zeros((TARGETS, 2))
    np.add.at(sums, index, values.astype(np.float64))
    # 16-bit sums: about 100 adds of a rounding each (bf16: 8 bits).
    np.testing.assert_allclose(got, first + sums, rtol=0.02 if kind == "f16" else 0.2)
    step = _round(kind)
    v64 = values.astype(np.float64)
    for j in range(TARGETS):
        hit = index == j
        for c in range(2):
            assert_chain(olds[hit, c], v64[hit, c], float(first[j, c]), got[j, c],
                         lambda a, b: np.asarray(step(a, b), np.float64))


def test_a_block_sums_particles_in_shared_memory(backend, kva, rng):
    # Shared-memory atomics per block, then one global atomic per bin and block; a global
    # fetch_min of integer vectors whose result is not used.
    n = 2000
    values = (rng.standard_normal((n, 3)) * 50).astype(np.float32)
    bins = rng.integers(0, kva.BINS, n).astype(np.int32)
    sums = gn.zeros(kva.BINS, gn.vec3f)
    low = gn.to_device(np.full((kva.BINS, 3), 2 ** 31 - 1, np.int32), dtype=gn.vec3i)
    run(kva.binned, n, gn.to_device(values, dtype=gn.vec3f), gn.to_device(bins), sums, low)
    want = np.zeros((kva.BINS, 3))
    np.add.at(want, bins, values.astype(np.float64))
    # f32 sums of about 250 values in any order: far within a millionth of their magnitudes.
    np.testing.assert_allclose(sums.to_host(), want, rtol=0, atol=1e-6 * np.abs(values).sum())
    lows = np.full((kva.BINS, 3), 2 ** 31 - 1, np.int64)
    np.minimum.at(lows, bins, np.trunc(values).astype(np.int64))
    np.testing.assert_array_equal(low.to_host(), lows)


def test_the_docs_snippet_runs(backend, tmp_path, monkeypatch, capsys):
    import importlib

    text = (ROOT / "docs" / "language.md").read_text()
    part = text[text.index("\n### Atomics on arrays of vectors\n"):
                text.index("\n## Complex numbers\n")]
    (snippet,) = re.findall(r"```python\n(.*?)```", part, re.S)
    name = f"vector_atomics_doc_snippet_{backend}"  # a module of its own per backend
    (tmp_path / f"{name}.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    # Its sums are of small integers: exact in any order the GPU's atomics take.
    importlib.import_module(name)
    assert capsys.readouterr().out.splitlines()[-1] == "ok"


# ---- the generated CUDA, run on the host, is the simulator's ------------------------------------

needs_cxx = pytest.mark.skipif(
    __import__("tools.fuzz.host_cuda", fromlist=["compiler"]).compiler() is None,
    reason="needs a host C++ compiler")


def _records(a: np.ndarray) -> np.ndarray:
    """An array of vectors as one record per vector (the host launcher passes a pointer and
    the vector extents, as the GPU launcher does)."""
    a = np.ascontiguousarray(a)
    return a.view(np.dtype((np.void, a.shape[-1] * a.itemsize))).reshape(a.shape[:-1])


@pytest.mark.slow
@needs_cxx
@pytest.mark.parametrize("name", ["vec3f", "vec2d", "vec4i"])
def test_the_generated_cuda_is_the_simulator_on_the_host(sim, kva, rng, name):
    # Threads one after another on both: the same final and old vectors, byte for byte (the
    # prelude's gn_vatomic_* take the components x first, subtract by adding the negation and
    # take float minima through compare-and-swap, as the simulator does).
    from tools.fuzz import host_cuda

    path = HELPERS / "kernels_vector_atomics.py"
    module = transpile_module(path.read_text(), str(path), "kernels_vector_atomics")
    variant = next(k for k in module.kernels if k.name == f"atomics_{name}").variants[0]
    n = 300
    values, index, first = inputs(name, n, rng)
    vec = getattr(gn, name)
    acc, old = gn.to_device(first, dtype=vec), gn.empty((n, 4), vec)
    run(getattr(kva, f"atomics_{name}"), n, gn.to_device(values, dtype=vec),
        gn.to_device(index), acc, old, block=32)
    host_acc, host_old = first.copy(), np.zeros((n, 4, VECTORS[name].n), first.dtype)
    exited, _, reports = host_cuda.launch(
        variant.cuda, variant.symbol,
        [_records(values), index, _records(host_acc), _records(host_old)],
        (n + 31) // 32, 32, sanitize=False)
    assert exited == 0 and not reports
    assert acc.to_host().tobytes() == host_acc.tobytes()
    assert old.to_host().tobytes() == host_old.tobytes()


# ---- the simulator's race detector --------------------------------------------------------------


RACES = """
from gpu_native import vec3f

@gpu_kernel(Kernel1D)
def beside(v: CUDASlice[vec3f], acc: CUDASliceMut[vec3f], plain: i32):
    i = FlatLayout1D.uid()
    if i < len(v):
        acc.atomic_ref(0).fetch_add(v[i])
        with unsafe():
            acc[1 + i] = v[i]      # other elements: no race
            if i == plain:
                acc[0] = v[i]      # a plain store into the atomics' element

@gpu_kernel(Kernel1D)
def scalar_beside(v: CUDASlice[f32], acc: CUDASliceMut[f32], plain: i32):
    i = FlatLayout1D.uid()
    if i < len(v):
        acc.atomic_ref(0).fetch_add(v[i])
        with unsafe():
            acc[1 + i] = v[i]
            if i == plain:
                acc[0] = v[i]
"""


@pytest.fixture(scope="module")
def racy(tmp_path_factory):
    return build(tmp_path_factory.mktemp("vector_races"), RACES, name="vector_races")


def test_component_atomics_are_not_races(racy):
    n = 64
    v = np.ones((n, 3), np.float32)
    acc = np.zeros((n + 1, 3), np.float32)
    errors = launch(racy["beside"], 2, 32, v, acc, np.int32(-1))
    assert errors.races == []
    np.testing.assert_array_equal(acc[0], [n, n, n])
    np.testing.assert_array_equal(acc[1:], v)


@pytest.mark.parametrize("kernel, shape", [("beside", (3,)), ("scalar_beside", ())])
def test_a_plain_store_beside_them_is_a_race(racy, kernel, shape):
    # As for scalars: a thread's plain store into the element other threads update atomically.
    n = 64
    v = np.ones((n, *shape), np.float32)
    acc = np.zeros((n + 1, *shape), np.float32)
    errors = launch(racy[kernel], 2, 32, v, acc, np.int32(40))
    assert errors.races and all(r.startswith("data race on acc[0]") for r in errors.races)


# ---- refusals -----------------------------------------------------------------------------------

HEADER = """\
from gpu_native import *
"""

REFUSED = {
    "exchange": ("a.atomic_ref(i).exchange(v[i])", "vec3f",
                 r"atomic exchange is not available for vec3f arrays \(an array of vec3f has "
                 r"fetch_add, fetch_sub, fetch_min and fetch_max, one atomic per component\)"
                 r"[\s\S]*hint: no atomic updates a whole vec3f; keep the components in an "
                 r"array of f32 \(element 3 \* i \+ c\)"),
    "compare_exchange": ("a.atomic_ref(i).compare_exchange(v[i], v[i])", "vec2d",
                         r"atomic cas is not available for vec2d arrays"),
    "load": ("x = a.atomic_ref(i).load()", "vec4f",
             r"atomic load is not available for vec4f arrays"),
    "store": ("a.atomic_ref(i).store(v[i])", "vec3i",
              r"atomic store is not available for vec3i arrays"),
    "bitwise": ("a.atomic_ref(i).fetch_or(v[i])", "vec2i",
                r"atomic or is not available for vec2i arrays[\s\S]*use the scalar fetch_or"),
    "sub of a half pair": ("a.atomic_ref(i).fetch_sub(v[i])", "vec2h",
                           r"atomic sub is not available for vec2h arrays \(an array of vec2h "
                           r"has fetch_add, one atomic per component\)[\s\S]*hint: add the "
                           r"negated value: \.fetch_add\(-v\)"),
    "max of a bf16 pair": ("a.atomic_ref(i).fetch_max(v[i])", "vec2bf",
                           r"atomic max is not available for vec2bf arrays"),
    "scalar operand": ("a.atomic_ref(i).fetch_add(1.0)", "vec3f",
                       r"atomic add operand must be a vec3f, not f64"),
    "complex": ("a.atomic_ref(i).fetch_add(v[i])", "complex64",
                r"atomic add is not available for complex64 arrays \(supported: i32, u32, i64, "
                r"u64, f32, f64, f16, bf16\)"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refusals(case):
    statement, ty, pattern = REFUSED[case]
    source = HEADER + textwrap.dedent(f"""
        @gpu_kernel(Kernel1D)
        def k(v: CUDASlice[{ty}], a: CUDASliceMut[{ty}]):
            i = FlatLayout1D.uid()
            {statement}  # <-
        """)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "# <-" in text)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, "/tmp/vector_atomics.py", "vector_atomics")
    assert info.value.span.line == line, str(info.value)
    assert re.search(pattern, str(info.value)), str(info.value)
