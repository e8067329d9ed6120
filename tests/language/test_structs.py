"""@gpu_struct structs: kernels on the simulator and (GPU-marked) on the GPU against NumPy float64
references, with outputs poisoned before each run; the simulator bit for bit against NumPy in the
kernel's order of operations; the C layout against NumPy's (and NVRTC's, through the generated
static_asserts); device arrays of structs to and from NumPy; argument checks; and the
transpile errors."""

from __future__ import annotations

import os
import re
import sys
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.cache import BuildRequest
from gpu_native.compiler.nvrtc import compile_request
from gpu_native.errors import KernelIndexError, TranspileError
from gpu_native.lang.structs import c_layout, parse_key, struct_info_of_dtype
from gpu_native.lang.types import SCALARS, VECTORS
from gpu_native.rewrite import rewrite_module, transpile_module
from gpu_native.spec import Trait
from tests.helpers import HELPERS


@pytest.fixture(scope="module")
def ks():
    from tests.helpers import kernels_structs

    return kernels_structs


def run(kernel, n, *args, block=64):
    kernel.launch(gn.GridDim1D((n + block - 1) // block), gn.BlockDim1D(block), 0,
                  gn.DEFAULT_STREAM)(*args)


def poisoned(shape, dtype):
    """A device array whose every byte is 0xFF (NaN in each float, -1 in each integer)."""
    dtype = np.dtype(dtype)
    host = np.frombuffer(b"\xff" * (int(np.prod(shape)) * dtype.itemsize), dtype=dtype)
    return gn.to_device(host.reshape(shape).copy())


def particles(ks, rng, n):
    a = np.zeros(n, ks.Particle.dtype)
    a["pos"] = rng.standard_normal((n, 3))
    a["vel"] = rng.standard_normal((n, 3))
    a["mass"] = rng.random(n) + 0.5
    return a


# ---- kernels against NumPy --------------------------------------------------------------------


def test_particle_step_through_device_functions(backend, ks, rng):
    """An array element read whole, passed to device functions (one returns a struct) and
    stored whole."""
    n = 300
    a = particles(ks, rng, n)
    ps = gn.to_device(a)
    energy = poisoned(n, np.float32)
    dt = 0.03125
    run(ks.step, n, ps, dt, energy)
    got = ps.to_host()
    pos, vel, mass = (a[f].astype(np.float64) for f in ("pos", "vel", "mass"))
    np.testing.assert_allclose(got["pos"], pos + vel * dt, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["vel"], a["vel"])
    np.testing.assert_array_equal(got["mass"], a["mass"])
    np.testing.assert_allclose(energy.to_host(), 0.5 * mass * (vel * vel).sum(axis=1),
                               rtol=1e-5, atol=1e-6)


def test_field_writes_into_array_elements(backend, ks, rng):
    """``a[i].x = v``, ``a[i].vel.y = v``, ``a[i].pos = v``, ``a[i].vel.x += 1``, with the
    struct parameter given as an instance and as a NumPy structured scalar."""
    n = 200
    a = particles(ks, rng, n)
    g_host = particles(ks, rng, 1)
    for g in (ks.Particle(gn.vec3f(*g_host["pos"][0]), gn.vec3f(*g_host["vel"][0]),
                          float(g_host["mass"][0])), g_host[0]):
        ps = gn.to_device(a)
        out = poisoned(n, np.float32)
        run(ks.field_writes, n, ps, g, out)
        got = ps.to_host()
        gp, gv, gm = (g_host[f][0].astype(np.float64) for f in ("pos", "vel", "mass"))
        np.testing.assert_allclose(got["mass"], a["mass"] * 2.0 + gm, rtol=1e-6)
        np.testing.assert_array_equal(got["vel"][:, 1], np.float32(gv[2]))
        np.testing.assert_allclose(got["vel"][:, 0], a["vel"][:, 0] + 1.0, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(got["vel"][:, 2], a["vel"][:, 2])
        np.testing.assert_allclose(got["pos"], a["pos"].astype(np.float64) + gp, rtol=1e-6,
                                   atol=1e-6)
        np.testing.assert_array_equal(out.to_host(), got["pos"][:, 0])


def test_constructors_and_local_field_writes(backend, ks, rng):
    n = 150
    xs = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, ks.Particle.dtype)
    run(ks.build_locals, n, gn.to_device(xs), out)
    got = out.to_host()
    pos = np.where(xs[:, None] > 0, xs[:, None], 0.0) * np.ones((1, 3))
    vel = np.where(xs[:, None] > 0, [[1.0, 0.0, 0.0]], 0.0)
    mass = np.where(xs > 0, xs.astype(np.float64) * 3.0 + 0.5, 2.0)
    np.testing.assert_array_equal(got["pos"], pos)
    np.testing.assert_array_equal(got["vel"], vel)
    np.testing.assert_allclose(got["mass"], mass, rtol=1e-6)


def test_padded_and_nested_structs(backend, ks, rng):
    """Fields behind padding (bool before f64, i32 before u64, a trailing u32) and a struct
    nested in a struct beside a vec2f: integers exact, floats within their rounding."""
    n = 130
    m = np.zeros(n, ks.Mixed.dtype)
    m["flag"] = rng.random(n) > 0.5
    m["big"] = rng.standard_normal(n)
    m["small"] = rng.integers(-2**31, 2**31, n)
    m["count"] = rng.integers(0, 2**64 - 1, n, dtype=np.uint64)
    m["half"] = rng.integers(0, 2**32, n)
    o = np.zeros(n, ks.Outer.dtype)
    o["tag"] = rng.integers(0, 2**32, n)
    o["inner"]["a"] = rng.integers(-2**31, 2**31, n)
    o["inner"]["b"] = rng.standard_normal(n)
    o["w"] = rng.standard_normal((n, 2))
    mv = ks.Mixed(True, 1.5, 0x5A5A, 2**63 + 7, 3)
    ov = ks.Outer(2**32 - 1, ks.Inner(-9, 0.25), gn.vec2f(-2.0, 4.0))
    dm, do = gn.to_device(m), gn.to_device(o)
    run(ks.mixed, n, dm, mv, do, ov)
    gm, go = dm.to_host(), do.to_host()
    np.testing.assert_array_equal(gm["flag"], ~m["flag"])
    np.testing.assert_allclose(gm["big"], m["big"] * 1.5 + m["small"], rtol=1e-15)
    np.testing.assert_array_equal(gm["small"], m["small"] ^ 0x5A5A)
    np.testing.assert_array_equal(gm["count"], m["count"] + np.uint64(2**63 + 7))
    np.testing.assert_array_equal(gm["half"], (m["half"].astype(np.uint64) * 3) % 2**32)
    np.testing.assert_array_equal(go["tag"], (o["tag"].astype(np.uint64) + 2**32 - 1) % 2**32)
    np.testing.assert_array_equal(go["inner"]["a"], (o["inner"]["a"] - 9).astype(np.int32))
    np.testing.assert_array_equal(go["inner"]["b"], o["inner"]["b"] - 0.25)
    np.testing.assert_array_equal(go["w"], o["w"] * np.float32(-2.0))


def test_local_arrays_of_structs(backend, ks, rng):
    n = 100
    xs = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    run(ks.local_structs, n, gn.to_device(xs), out)
    want = sum(xs.astype(np.float64) * k + (10 if k == 2 else k) for k in range(4))
    np.testing.assert_allclose(out.to_host(), want, rtol=1e-6, atol=1e-6)


def test_a_field_write_out_of_bounds_is_reported(backend, ks, rng):
    n = 100
    ps = gn.to_device(particles(ks, rng, n))
    with pytest.raises(KernelIndexError, match=r"index 100 is out of bounds for array 'ps'"):
        run(ks.shifted_write, n, ps)
        ps.to_host()


def test_simulator_is_bit_for_bit_numpy(sim, ks, rng):
    """The simulator computes in the kernel's order of operations: NumPy float32 in that order
    gives the same bits."""
    n = 257
    a = particles(ks, rng, n)
    ps = gn.to_device(a)
    energy = poisoned(n, np.float32)
    dt = np.float32(0.1)
    run(ks.step, n, ps, dt, energy)
    vel, mass = a["vel"], a["mass"]
    dot = (vel[:, 0] * vel[:, 0] + vel[:, 1] * vel[:, 1]) + vel[:, 2] * vel[:, 2]
    np.testing.assert_array_equal(energy.to_host(), np.float32(0.5) * mass * dot)
    np.testing.assert_array_equal(ps.to_host()["pos"], a["pos"] + a["vel"] * dt)


# ---- layout --------------------------------------------------------------------------------------

_ORDERS = {
    "bool f64 i32": ["bool_", "f64", "i32"],
    "u8 u16 u32 u64": ["u8", "u16", "u32", "u64"],
    "u64 u32 u16 u8": ["u64", "u32", "u16", "u8"],
    "i8 f32 i8": ["i8", "f32", "i8"],
    "f16 f64 f16": ["f16", "f64", "f16"],
    "i16 i64": ["i16", "i64"],
    "single bool": ["bool_"],
}


@pytest.mark.parametrize("order", sorted(_ORDERS))
def test_scalar_layouts_are_numpys_aligned_ones(order):
    names = _ORDERS[order]
    info = c_layout("S", "m", [(f"f{k}", SCALARS[t]) for k, t in enumerate(names)])
    want = np.dtype([(f"f{k}", SCALARS[t].dtype) for k, t in enumerate(names)], align=True)
    assert [f.offset for f in info.fields] == [want.fields[n][1] for n in want.names]
    assert info.itemsize == want.itemsize and info.align == want.alignment
    assert info.dtype == want and info.dtype.isalignedstruct
    assert struct_info_of_dtype(want).name == info.name
    assert parse_key(info.name).name == info.name


def test_vector_fields_are_aligned_as_cuda_aligns_them():
    """vec2f is 8-aligned and vec4f 16-aligned (as CUDA's float2/float4), vec3f 4-aligned."""
    info = c_layout("S", "m", [("a", SCALARS["f32"]), ("b", VECTORS["vec2f"]),
                               ("c", SCALARS["u8"]), ("d", VECTORS["vec4f"]),
                               ("e", VECTORS["vec3f"])])
    assert [f.offset for f in info.fields] == [0, 8, 16, 32, 48]
    assert (info.itemsize, info.align) == (64, 16)
    assert [info.dtype.fields[n][1] for n in "abcde"] == [0, 8, 16, 32, 48]
    assert info.dtype.itemsize == 64


def test_nested_layout_and_host_class(ks):
    assert ks.Outer.dtype.itemsize == 32
    assert [ks.Outer.dtype.fields[n][1] for n in ("tag", "inner", "w")] == [0, 8, 24]
    assert ks.Particle.dtype.itemsize == 28
    assert ks.Mixed.dtype.itemsize == 40
    p = ks.Particle(mass=2.0)
    assert p == ks.Particle(gn.vec3f(), gn.vec3f(0.0), 2.0)
    assert repr(p) == "Particle(pos=vec3f(0.0, 0.0, 0.0), vel=vec3f(0.0, 0.0, 0.0), mass=2.0)"
    assert ks.Outer().inner == ks.Inner()
    with pytest.raises(TypeError, match="Particle has no field 'speed'"):
        ks.Particle(speed=1.0)
    # A misspelt field set after construction is refused too (it was a new attribute that no
    # launch reads, so the kernel got the old value).
    p.mass = 3.0
    assert p.mass == 3.0
    with pytest.raises(AttributeError, match="Particle has no field 'mas'; it has pos, vel, mass"):
        p.mas = 4.0
    assert p == ks.Particle(mass=3.0)
    # Field values convert as an assignment does (docs/language.md, Structs), on the host too.
    q = ks.Particle(mass=1, pos=(1, 2, 3))
    assert type(q.mass) is float and q.mass == 1.0 and q.pos == gn.vec3f(1, 2, 3)
    for bad, message in [(dict(mass="3"), r"field 'mass' of Particle takes a number \(f32\), "
                                          r"not str"),
                         (dict(mass=None), r"takes a number \(f32\), not NoneType"),
                         (dict(pos=5.0), r"field 'pos' of Particle takes a gn.vec3f or a "
                                         r"sequence of 3 numbers, not float")]:
        with pytest.raises(TypeError, match=message):
            ks.Particle(**bad)
    with pytest.raises(TypeError, match=r"field 'mass' of Particle takes a number"):
        q.mass = "abc"
    with pytest.raises(ValueError, match=r"field 'pos' of Particle: vec3f takes 3 components, "
                                         r"not 2"):
        ks.Particle(pos=[1, 2])
    m = ks.Mixed(flag=1, small=-2**31)
    assert m.flag is True and m.small == -2**31
    # An int outside the field's range is refused, as a scalar parameter's is; an explicit
    # conversion wraps it.
    for bad in (2**32 + 7, 2**31, -2**31 - 1, np.uint32(2**32 - 1)):
        with pytest.raises(ValueError, match=rf"field 'small' of Mixed is {int(bad)}, out of "
                                             r"range for i32 \(-2147483648 to 2147483647\)"):
            ks.Mixed(small=bad)
    assert ks.Mixed(small=gn.i32(2**32 + 7)).small == 7
    with pytest.raises(TypeError, match=r"field 'small' of Mixed takes an int \(i32\), not "
                                        r"float 0.5"):
        ks.Mixed(small=0.5)


def test_the_generated_structs_compile_with_their_layout_checks(tmp_path):
    """NVRTC checks every field offset, the size and the alignment of each generated struct
    against the NumPy dtype's (static_asserts): structs with padding in every place compile."""
    fields = {f"S{k}": names for k, names in enumerate(_ORDERS.values())}
    source = ["from gpu_native import *", ""]
    for name, names in fields.items():
        source += ["@gpu_struct", f"class {name}:"]
        source += [f"    f{k}: {t}" for k, t in enumerate(names)]
        source.append("")
    source += ["@gpu_struct", "class V:", "    a: f32", "    b: vec2f", "    c: u8",
               "    d: vec4d", "    e: S0", ""]
    params = ", ".join(f"a{k}: CUDASliceMut[{name}]" for k, name in enumerate([*fields, "V"]))
    source += ["@gpu_kernel(Kernel1D)", f"def k({params}, v: V):",
               "    i = FlatLayout1D.uid()"]
    source += [f"    a{k}[i] = a{k}[i]" for k in range(len(fields))]
    source += [f"    a{len(fields)}[i] = v", ""]
    module = transpile_module("\n".join(source), str(tmp_path / "layouts.py"), "layouts")
    variant = module.kernels[0].variants[0]
    assert variant.cuda.count("static_assert(__builtin_offsetof") == sum(
        len(n) for n in fields.values()) + 5
    request = BuildRequest(source=variant.cuda, symbol=variant.symbol, arch="sm_90",
                           fastmath=False, max_registers=None, uses_half=True,
                           label=variant.symbol)
    image = compile_request(request)
    assert image.kind == "cubin" and image.log.strip("\x00").strip() == ""


def test_expand_shows_the_struct_and_field_stores(ks):
    path = HELPERS / "kernels_structs.py"
    module = transpile_module(path.read_text(), str(path), "kernels_structs")
    cuda = next(k for k in module.kernels if k.name == "field_writes").variants[0].cuda
    assert "struct gn_struct_Particle {\n    gn_vec3f pos;\n    gn_vec3f vel;\n    float mass;\n};" \
        in cuda
    assert "ps[i].vel.y = ((g).vel).z;" in cuda
    locals_cuda = next(k for k in module.kernels if k.name == "build_locals").variants[0].cuda
    assert "p.vel.x = 1.0f;" in locals_cuda
    assert "p.mass = ((p).mass + 0.5f);" in locals_cuda


# ---- host arrays and arguments --------------------------------------------------------------------


def test_device_arrays_of_structs_round_trip(sim, ks, rng):
    a = particles(ks, rng, 17)
    d = gn.to_device(a)
    assert d.shape == (17,) and d.dtype == ks.Particle.dtype
    back = d.to_host()
    assert back.dtype == ks.Particle.dtype
    assert back.tobytes() == a.tobytes()
    e = gn.zeros(5, ks.Particle)
    assert e.to_host().tobytes() == bytes(5 * 28)
    # A structured array of another layout converts by field name when the dtype is given.
    packed = np.zeros(4, [("pos", "f4", 3), ("vel", "f4", 3), ("mass", "f8")])
    packed["mass"] = [1, 2, 3, 4]
    assert gn.to_device(packed, dtype=ks.Particle).to_host()["mass"].tolist() == [1, 2, 3, 4]


def test_an_array_of_another_layout_is_refused_naming_the_field(sim, ks):
    out = gn.empty(4, gn.f32)
    bad = np.zeros(4, [("pos", "f4", 3), ("vel", "f4", 3), ("mass", "f8")])
    with pytest.raises(TypeError, match=r"argument 'ps' of step .*field 'mass' is f64, not f32"):
        run(ks.step, 4, gn.to_device(bad), 0.1, out)
    unaligned = np.zeros(4, np.dtype([("tag", "u4"), ("inner", ks.Inner.dtype),
                                      ("w", "f4", 2)], align=False))
    with pytest.raises(TypeError, match=r"argument 'os' of mixed .*'inner' is at byte offset 4, "
                                        r"not 8"):
        run(ks.mixed, 4, gn.to_device(np.zeros(4, ks.Mixed.dtype)), ks.Mixed(),
            gn.to_device(unaligned), ks.Outer())
    with pytest.raises(TypeError, match=r"argument 'ps' of step .*elements are f32, not structs"):
        run(ks.step, 4, gn.empty(4, gn.f32), 0.1, out)


@pytest.mark.parametrize("value, error, message", [
    ("mixed", TypeError, r"argument 'g' of field_writes is a Mixed whose layout is not the "
                         r"parameter's: its field 0 is 'flag' where the parameter has 'pos'"),
    ("number", TypeError, r"argument 'g' of field_writes must be a struct with fields pos, vel, "
                          r"mass .*not float"),
    ("range", ValueError, r"argument 'g' of field_writes, field mass, .*out of range|inf"),
    ("void", TypeError, r"argument 'g' of field_writes is a NumPy struct whose dtype is not "
                        r"the parameter's: its field 'mass' is f64"),
])
def test_bad_struct_arguments_are_refused(sim, ks, value, error, message):
    ps = gn.to_device(np.zeros(4, ks.Particle.dtype))
    args = {"mixed": ks.Mixed(), "number": 1.0,
            "range": ks.Particle(mass=1e300),
            "void": np.zeros(1, [("pos", "f4", 3), ("vel", "f4", 3), ("mass", "f8")])[0]}
    with pytest.raises(error, match=message):
        run(ks.field_writes, 4, ps, args[value], gn.empty(4, gn.f32))


def test_host_class_refuses_unsupported_fields():
    with pytest.raises(TypeError, match=r"field 'x' of struct Bad has type .*a struct field is"):
        @gn.gpu_struct
        class Bad:
            x: str
    # Named as written, not as the generic alias's repr with gpu_native's layout marker.
    with pytest.raises(TypeError, match=r"field 'a' of struct Arr has type CUDASlice\[f32\]; .*"
                                        r"\(an array is passed as a kernel parameter of its "
                                        r"own\)$"):
        @gn.gpu_struct
        class Arr:
            a: gn.CUDASlice[gn.f32]


# ---- transpile errors ------------------------------------------------------------------------------

HEADER = """\
from gpu_native import *

@gpu_struct
class P:
    x: f32
    v: vec3f
"""

ERRORS = {
    "unknown field read": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[P], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = a[i].y  # <-
""", r"struct P has no field 'y'; it has x, v"),
    "unknown field write": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    p = P()
    p.speed = 1.0  # <-
    out[i] = p
""", r"struct P has no field 'speed'"),
    "unknown field of an element": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    out[i].w = 1.0  # <-
""", r"struct P has no field 'w'"),
    "unknown constructor keyword": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    out[i] = P(z=1.0)  # <-
""", r"struct P has no field 'z'"),
    "too many constructor values": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    out[i] = P(1.0, vec3f(), 2.0)  # <-
""", r"P\(\) takes at most 2 field values \(3 given\)"),
    "wrong field type": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    p = P()
    p.v = 1.0  # <-
    out[i] = p
""", r"field 'v' of 'p' must be a vec3f, not f64"),
    "wrong field type in an element": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    out[i].x = vec3f(1.0)  # <-
""", r"field 'x' of an element of 'out' must be a scalar f32, not vec3f"),
    "another struct": ("""
@gpu_struct
class Q:
    x: f32

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    out[i] = Q(1.0)  # <-
""", r"must be a P, not Q"),
    "a scalar into a struct array": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    out[i] = 1.0  # <-
""", r"must be a P, not f64"),
    "race on a field": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[P]):
    out[0].x = 1.0  # <-
""", r"store into 'out' through an index that is not provably unique"),
    "read-only array": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASlice[P]):
    i = FlatLayout1D.uid()
    out[i].x = 1.0  # <-
""", r"'out' is read-only"),
    "bf16 field": ("""
@gpu_struct
class H:
    h: bf16  # <-

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[H]):
    i = FlatLayout1D.uid()
    out[i] = H()
""", r"field 'h' of struct H has type bf16, which NumPy has no dtype for"),
    "array field": ("""
@gpu_struct
class A:
    data: CUDASlice  # <-

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[A]):
    i = FlatLayout1D.uid()
    out[i] = A()
""", r"field 'data' of struct A has type 'CUDASlice'; a struct field is a scalar type"),
    "recursive struct": ("""
@gpu_struct
class Node:
    value: f32
    next: Node  # <-

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[Node]):
    i = FlatLayout1D.uid()
    out[i] = Node()
""", r"struct Node contains itself"),
    "mutually recursive structs": ("""
@gpu_struct
class A:
    b: B

@gpu_struct
class B:
    a: A  # <-

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[A]):
    i = FlatLayout1D.uid()
    out[i] = A()
""", r"struct A contains itself"),
    "a method": ("""
@gpu_struct
class M:
    x: f32

    def norm(self):  # <-
        return self.x

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[M]):
    i = FlatLayout1D.uid()
    out[i] = M()
""", r"struct M may only declare fields"),
    "a default": ("""
@gpu_struct
class D:
    x: f32 = 1.0  # <-

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[D]):
    i = FlatLayout1D.uid()
    out[i] = D()
""", r"field 'x' of struct D has a default value"),
    "field of a scalar": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    p = P()
    p.x.y = 1.0  # <-
    out[i] = p.x
""", r"a f32 has no fields to assign \(\.y\)"),
    "field write before assignment": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    if a[i] > 0.0:
        p = P()
    p.x = 1.0  # <-
    out[i] = p
""", r"local variable 'p' might be used before it is assigned"),
    "effects out of order": ("""
@gpu_kernel(Kernel1D)
def k(c: CUDASliceMut[f32], out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    out[i] = P(v=vec3f(1.0), x=c.atomic_ref(0).fetch_add(1.0))  # <-
""", r"P\(\) names its fields in another order than the struct declares them"),
    "component of a vector field": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[P]):
    i = FlatLayout1D.uid()
    out[i].v.w = 1.0  # <-
""", r"a vec3f has no component \.w"),
    "struct comparison": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[P], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if a[i] == a[i]:  # <-
        out[i] = 1.0
""", r"structs cannot be compared \(P == \.\.\.\); compare their fields"),
}


def _expect_error(source: str, pattern: str, path: str = "/tmp/struct_errors.py") -> None:
    source = textwrap.dedent(source)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "# <-" in text)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, path, "struct_errors")
    err = info.value
    assert err.span.line == line, str(err)
    assert f"{path}:{line}:" in str(err)
    assert "^" in str(err)  # the caret under the source line
    assert re.search(pattern, str(err)), str(err)


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_transpile_errors(case):
    body, pattern = ERRORS[case]
    _expect_error(HEADER + body, pattern)


def test_the_docs_snippet_runs(backend, tmp_path, monkeypatch, capsys):
    import importlib

    from tests.helpers import ROOT

    text = (ROOT / "docs" / "language.md").read_text()
    part = text[text.index("\n## Structs\n"):text.index("\n## Constant memory\n")]
    (snippet,) = re.findall(r"```python\n(.*?)```", part, re.S)
    name = f"struct_doc_snippet_{backend}"  # a module of its own per backend, imported afresh
    (tmp_path / f"{name}.py").write_text(snippet)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)  # its asserts compare the fields exactly (all dyadic)
    assert capsys.readouterr().out.splitlines()[-1] == "ok"


# ---- with the rest of the language ------------------------------------------------------------

_LIB = '''
from gpu_native import gpu_struct, f16, vec2f


@gpu_struct
class Seg:
    a: vec2f
    b: vec2f
    w: f16
'''

_USER = '''
from gpu_native import *
from struct_lib import Seg


@gpu_device
def heavier(s: Seg, t: Seg) -> Seg:
    return s if s.w > t.w else t


@gpu_kernel(Kernel1D)
def pick(xs: CUDASliceMut[Seg], o: Seg, out: CUDASliceMut[f32]):
    tile = shared_array(Seg, 64)
    b: UniqueId = BlockLayout1D.uid()
    i: UniqueId = FlatLayout1D.uid()
    if i < len(xs):
        tile[b] = xs[i]
        tile[b].w = tile[b].w + f16(1.0)
    sync_threads()
    if i < len(xs):
        best = heavier(tile[b], o)
        out[i] = best.a.x + f32(best.w)


@gpu_kernel(Kernel1D)
def racy(xs: CUDASliceMut[Seg]):
    i: UniqueId = FlatLayout1D.uid()
    if i < len(xs):
        with unsafe():
            xs[0].a.y = f32(i)
'''


@pytest.fixture
def struct_modules(tmp_path, monkeypatch):
    """A struct declared in one module (with an f16 field) and used by another's kernels."""
    import importlib

    (tmp_path / "struct_lib.py").write_text(_LIB)
    (tmp_path / "struct_user.py").write_text(_USER)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("struct_lib", "struct_user"):
        sys.modules.pop(name, None)
    yield importlib.import_module("struct_lib"), importlib.import_module("struct_user")
    for name in ("struct_lib", "struct_user"):
        sys.modules.pop(name, None)


def test_a_struct_of_another_module_in_shared_memory_and_selects(backend, struct_modules, rng):
    lib, user = struct_modules
    n = 100
    a = np.zeros(n, lib.Seg.dtype)
    a["a"] = rng.standard_normal((n, 2))
    a["w"] = rng.uniform(-3, 3, n)
    out = poisoned(n, np.float32)
    run(user.pick, n, gn.to_device(a), lib.Seg(gn.vec2f(-1.0, 0.0), gn.vec2f(), 0.5), out)
    w = a["w"] + np.float16(1.0)
    want = np.where(w > np.float16(0.5), a["a"][:, 0].astype(np.float64) + w, -0.5)
    np.testing.assert_array_equal(out.to_host(), want.astype(np.float32))


def test_an_unsafe_field_write_race_is_detected(sim, struct_modules):
    from gpu_native.errors import DeviceRaceError

    _, user = struct_modules
    xs = gn.zeros(100, struct_modules[0].Seg)
    with pytest.raises(DeviceRaceError, match=r"data race on xs\[0\]"):
        run(user.racy, 100, xs)
        xs.to_host()


@pytest.mark.slow
def test_a_struct_of_another_module_compiles(struct_modules, tmp_path):
    module = transpile_module(_USER, str(tmp_path / "struct_user.py"), "struct_user")
    for kernel in module.kernels:
        variant = kernel.variants[0]
        assert "struct gn_struct_Seg {" in variant.cuda and "__half w;" in variant.cuda
        request = BuildRequest(source=variant.cuda, symbol=variant.symbol, arch="sm_90",
                               fastmath=False, max_registers=None,
                               uses_half=Trait.USES_HALF in variant.traits, label=variant.symbol)
        image = compile_request(request)
        assert image.kind == "cubin" and image.log.strip("\x00").strip() == ""


def test_dlpack_refuses_an_array_of_structs(sim, ks):
    with pytest.raises(TypeError, match="DLPack has no struct element type"):
        np.from_dlpack(gn.zeros(3, ks.Particle))


def test_odd_names_become_valid_cpp(tmp_path):
    """Field names that are C++ keywords and a struct name that is not ASCII."""
    source = ("from gpu_native import *\n\n@gpu_struct\nclass Teilchen\u00e4:\n    new: f32\n"
              "    int: i32\n\n@gpu_kernel(Kernel1D)\ndef k(a: CUDASliceMut[Teilchen\u00e4]):\n"
              "    i = FlatLayout1D.uid()\n    a[i].new = f32(a[i].int)\n")
    variant = transpile_module(source, str(tmp_path / "odd.py"), "odd").kernels[0].variants[0]
    assert "gn_struct_u" in variant.cuda and "float py_new_;" in variant.cuda
    image = compile_request(BuildRequest(source=variant.cuda, symbol=variant.symbol,
                                         arch="sm_90", fastmath=False, max_registers=None,
                                         uses_half=False, label=variant.symbol))
    assert image.kind == "cubin" and image.log.strip("\x00").strip() == ""


def test_two_structs_of_one_name_are_refused(tmp_path):
    (tmp_path / "struct_a.py").write_text("from gpu_native import *\n\n@gpu_struct\nclass P:\n"
                                          "    x: f32\n")
    (tmp_path / "struct_b.py").write_text("from gpu_native import *\n\n@gpu_struct\nclass P:\n"
                                          "    y: i32\n")
    source = textwrap.dedent("""\
        from gpu_native import *
        from struct_a import P as PA
        from struct_b import P as PB

        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[PA], b: CUDASliceMut[PB]):  # <-
            i = FlatLayout1D.uid()
            a[i].x = f32(b[i].y)
        """)
    _expect_error(source, r"two different structs are called P \(one in struct_a, one in "
                          r"struct_b\)", str(tmp_path / "two_structs.py"))


@pytest.mark.parametrize("body, message", [
    ("a: gn.f32 = 1.0\n    b: gn.f32", "field 'a' of struct Q has a default value; struct fields "
                                       "have none (Q() sets every field to zero)"),
    ("a: gn.f32\n\n    def norm(self):\n        return abs(self.a)",
     "struct Q may only declare fields (`x: f32`); methods, assignments and other statements "
     "('norm') are not supported"),
    ("a: gn.f32\n    SCALE = 2", "('SCALE') are not supported"),
])
def test_the_decorator_refuses_what_the_checker_refuses_even_unused(body, message, tmp_path,
                                                                      monkeypatch):
    # With no kernel using the struct the class was accepted, and Q() silently dropped the
    # default (a = 0.0 where the class says 1.0).
    import importlib

    (tmp_path / "struct_body.py").write_text(
        f"import gpu_native as gn\n\n\n@gn.gpu_struct\nclass Q:\n    {body}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("struct_body", None)
    with pytest.raises(TypeError, match=re.escape(message)) as info:
        importlib.import_module("struct_body")
    # The user's decorator line, and none of gpu_native's frames past its entry point (which
    # Python 3.10 keeps: docs/environment.md, GPU_NATIVE_TRACEBACK).
    names = [os.path.basename(str(entry.path)) for entry in info.traceback]
    assert "struct_body.py" in names and "structs.py" not in names, info.traceback
    if sys.version_info >= (3, 11):
        assert names[-1] == "struct_body.py", info.traceback


def test_a_docstring_and_annotations_only_are_a_struct():
    @gn.gpu_struct
    class P:
        """A documented struct."""

        x: gn.f32
        n: gn.i32

    assert P() == P(0.0, 0) and P.__doc__ == "A documented struct."


def test_a_struct_declared_in_a_function_names_another_of_that_function():
    """Under ``from __future__ import annotations`` (this file's) the fields are strings,
    evaluated where the class is defined: a function's own struct (a raw NameError before)."""
    @gn.gpu_struct
    class Inner:
        a: gn.f32

    @gn.gpu_struct
    class Outer:
        inner: Inner
        b: gn.f32

    assert Outer.dtype.names == ("inner", "b")
    assert Outer.dtype["inner"] == Inner.dtype


@pytest.mark.parametrize("annotation, message", [
    ("Node", r"field 'next' of struct Node is of the struct itself; a struct cannot contain "
             r"itself"),
    ("f33", r"field 'next' of struct Node has the annotation 'f33', which names nothing "
            r"defined where the class is \(NameError"),
])
def test_a_field_annotation_that_names_nothing_is_a_type_error_naming_the_field(annotation,
                                                                               message):
    namespace: dict = {"gn": gn}
    source = f"@gn.gpu_struct\nclass Node:\n    value: gn.f32\n    next: {annotation!r}\n"
    with pytest.raises(TypeError, match=message):
        exec(compile(source, "<struct>", "exec"), namespace)


def test_to_device_converts_fields_of_the_same_names_by_name(sim):
    """A structured array with the struct's field names in another order converts by name
    (position swapped the values); other names convert by position, as NumPy assigns them."""
    @gn.gpu_struct
    class P:
        x: gn.f32
        y: gn.i32

    swapped = np.zeros(2, dtype=[("y", "i4"), ("x", "f4")])
    swapped["x"], swapped["y"] = 1.5, 2
    back = gn.to_device(swapped, dtype=P).to_host()
    np.testing.assert_array_equal(back["x"], [1.5, 1.5])
    np.testing.assert_array_equal(back["y"], [2, 2])
    other = np.zeros(2, dtype=[("a", "f8"), ("b", "i8")])
    other["a"], other["b"] = 0.25, 7
    back = gn.to_device(other, dtype=P).to_host()
    np.testing.assert_array_equal(back["x"], [0.25, 0.25])
    np.testing.assert_array_equal(back["y"], [7, 7])


def test_an_array_of_structs_has_no_scalar_type_and_says_so(sim):
    # It was a KeyError from inside gpu_native.
    a = gn.zeros(2, np.dtype([("x", "f4"), ("n", "i4")]))
    with pytest.raises(TypeError, match=r"an array of structs \(struct\) has no scalar_type: "
                                        "its scalar_info describes the struct"):
        a.scalar_type
    assert a.scalar_info.itemsize == 8
