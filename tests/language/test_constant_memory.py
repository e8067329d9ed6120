"""Constant memory: module-level ``const_array`` tables that kernels read from ``__constant__``.

What a table is (gpu_native/lang/constarrays.py): a read-only copy of its values made when the
module runs; the transpiler reads its element type and shape from the source; the runtime sets
the kernel's ``__constant__`` variable from the copy when it loads the kernel, and the simulator
reads the same copy.  Kernel tests run on the simulator and (``gpu``-marked) on the GPU through
the ``backend`` fixture.
"""

from __future__ import annotations

import importlib
import json
import sys
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.cache import BuildRequest
from gpu_native.errors import GpuNativeError, TranspileError
from gpu_native.lang.constarrays import CONSTANT_BANK_BYTES
from gpu_native.lang.types import SCALARS
from gpu_native.rewrite import transpile_module
from gpu_native.spec import Trait

HEADER = textwrap.dedent("""\
    import numpy as np

    import gpu_native as gn
    from gpu_native import (CUDASlice, CUDASliceMut, CUDASliceMut2D, FlatLayout1D, FlatLayout2D,
                            Kernel1D, Kernel2D, const_array, f32, gpu_device, gpu_kernel, i32,
                            i64, u8)
    """)

TABLES = HEADER + textwrap.dedent("""\
    N = 7
    _raw = np.linspace(-1.0, 1.0, N)
    TAPS = const_array(_raw, f32, N)                      # computed: dtype and shape given
    LUT = const_array(np.array([[3, 1, 4], [1, 5, 9]], dtype=np.int32))   # literal: read
    CUBE = const_array(np.arange(24).reshape(2, 3, 4), u8, (2, 3, 4))
    WEIGHTS = const_array([0.25, 0.5, 0.25])              # a list: f64, as NumPy makes it


    @gpu_device
    def lut(i: i64) -> i32:
        return LUT[i % 2, i % 3]


    @gpu_device
    def first(t: CUDASlice[f32]) -> f32:
        return t[0]


    @gpu_kernel(Kernel1D)
    def apply(x: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        total = f32(0.0)
        for j in range(N):
            total += TAPS[j] * x[i]
        w = WEIGHTS[0] + WEIGHTS[1] * 2.0 + WEIGHTS[2] * 3.0
        out[i] = total + f32(lut(i)) + f32(CUBE[i % 2, i % 3, i % 4]) + f32(w) + first(TAPS)


    @gpu_kernel(Kernel1D)
    def pick(k: i64, out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        out[i] = TAPS[k + i]
    """)


def expected_apply(x: np.ndarray) -> np.ndarray:
    taps = np.linspace(-1.0, 1.0, 7).astype(np.float32)
    lut = np.array([[3, 1, 4], [1, 5, 9]])
    cube = np.arange(24).reshape(2, 3, 4)
    i = np.arange(len(x))
    w = 0.25 + 0.5 * 2.0 + 0.25 * 3.0
    return (taps.sum(dtype=np.float32) * x + lut[i % 2, i % 3] + cube[i % 2, i % 3, i % 4]
            + np.float32(w) + taps[0]).astype(np.float32)


def launch(kernel, n, *args):
    kernel.launch(gn.GridDim1D(-(-n // 64)), gn.BlockDim1D(64), 0, gn.DEFAULT_STREAM)(*args)


def transpile(source: str, name: str = "consts_mod", path: str | None = None):
    return transpile_module(source, path or f"/virtual/{name}.py", name)


def error_of(source: str) -> TranspileError:
    with pytest.raises(TranspileError) as info:
        transpile(source)
    return info.value


# ---- reading tables, on each backend ----------------------------------------------------------


def test_kernels_read_1d_2d_3d_tables_and_device_functions_too(kernel_module, backend):
    mod = kernel_module(TABLES)
    x = np.arange(100, dtype=np.float32) / 7
    out = gn.empty(100, gn.f32)
    launch(mod.apply, 100, gn.to_device(x), out)
    np.testing.assert_allclose(out.to_host(), expected_apply(x), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("dtype", ["bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
                                   "u64", "f16", "bf16", "f32", "f64"])
def test_every_scalar_type_is_a_table_element(kernel_module, backend, dtype):
    floats = dtype[0] == "f" or dtype == "bf16"
    values = "np.arange(10) % 3" + (" + 0.5" if floats else "")
    source = HEADER + textwrap.dedent(f"""\
        from gpu_native import {dtype}

        T = const_array({values}, {dtype}, 10)


        @gpu_kernel(Kernel1D)
        def copy(out: CUDASliceMut[{dtype}]):
            i = FlatLayout1D.uid()
            out[i] = T[i]
        """)
    mod = kernel_module(source)
    assert mod.T.dtype == SCALARS[dtype].dtype and not mod.T.flags.writeable
    out = gn.zeros(10, dtype)
    launch(mod.copy, 10, out)
    want = np.arange(10) % 3 + (0.5 if floats else 0)
    if dtype == "bool_":
        want = want != 0
    np.testing.assert_array_equal(out.to_host(), want.astype(out.to_host().dtype))


def test_an_index_outside_a_table_is_a_kernel_index_error(kernel_module, backend):
    mod = kernel_module(TABLES)
    out = gn.empty(4, gn.f32)
    launch(mod.pick, 4, 2, out)
    assert out.to_host().tolist() == pytest.approx(np.linspace(-1, 1, 7)[2:6].tolist(),
                                                   rel=1e-6)
    launch(mod.pick, 4, 5, out)
    with pytest.raises(gn.KernelIndexError, match="TAPS"):
        out.to_host()


def test_a_table_of_another_module_is_read_through_its_name(kernel_module, backend):
    kernel_module(HEADER + "SQUARES = const_array([i * i for i in range(8)], i64, 8)\n"
                  "PRIMES = const_array([2, 3, 5, 7], i64, 4)\n\n\n"
                  "@gpu_device\ndef prime(i: i64) -> i64:\n    return PRIMES[i % 4]\n",
                  name="consts_tables")
    mod = kernel_module(HEADER + textwrap.dedent("""\
        from consts_tables import SQUARES, prime


        @gpu_kernel(Kernel1D)
        def both(out: CUDASliceMut[i64]):
            i = FlatLayout1D.uid()
            out[i] = SQUARES[i % 8] * 100 + prime(i)
        """))
    out = gn.empty(16, gn.i64)
    launch(mod.both, 16, out)
    i = np.arange(16)
    assert out.to_host().tolist() == ((i % 8) ** 2 * 100 + np.array([2, 3, 5, 7])[i % 4]).tolist()


# ---- the values: frozen at import ------------------------------------------------------------


def test_values_are_copied_at_import_and_read_only(kernel_module, backend):
    mod = kernel_module(TABLES)
    mod._raw[:] = 100.0  # the array the table was made from: not the table
    with pytest.raises(ValueError, match="read-only"):
        mod.TAPS[0] = 5.0
    out = gn.empty(7, gn.f32)
    launch(mod.pick, 7, 0, out)
    np.testing.assert_allclose(out.to_host(), np.linspace(-1, 1, 7), rtol=1e-6)


def test_rebinding_after_the_first_launch_changes_nothing(kernel_module, backend):
    mod = kernel_module(TABLES)
    out = gn.empty(7, gn.f32)
    launch(mod.pick, 7, 0, out)
    mod.TAPS = gn.const_array(np.zeros(7), gn.f32, 7)
    launch(mod.pick, 7, 0, out)
    np.testing.assert_allclose(out.to_host(), np.linspace(-1, 1, 7), rtol=1e-6)


def test_a_table_rebound_to_another_shape_is_refused_by_name(kernel_module, backend):
    mod = kernel_module(TABLES)
    mod.TAPS = np.zeros(3, np.float32)
    with pytest.raises(GpuNativeError, match=r"TAPS, compiled as f32 of shape \(7,\), but TAPS "
                                             r"is now an array of float32 and shape \(3,\)"):
        launch(mod.pick, 7, 0, gn.empty(7, gn.f32))


def test_the_host_function_checks_its_arguments():
    assert gn.const_array([[1, 2], [3, 4]], gn.i32).dtype == np.int32
    assert gn.const_array([1.5, 2.5], gn.bf16).dtype == np.uint16  # bit patterns, as arrays
    with pytest.raises(ValueError, match=r"shape \(3,\), not shape=\(4,\)"):
        gn.const_array([1, 2, 3], gn.i32, 4)
    with pytest.raises(ValueError, match="1 to 3 dimensions"):
        gn.const_array(np.zeros((1, 1, 1, 2)), gn.f32)
    with pytest.raises(ValueError, match=f"65540 bytes of f32 .* exceed the {CONSTANT_BANK_BYTES}"):
        gn.const_array(np.zeros(16385), gn.f32)
    with pytest.raises(TypeError, match="const_array: dtype complex128 has no gpu_native scalar "
                                        "type; give dtype="):
        gn.const_array([1j])
    with pytest.raises(ValueError, match="const_array: the values are not f32: could not convert"):
        gn.const_array(["a", "b"], gn.f32)


# ---- changing the values in the source -------------------------------------------------------


def test_new_values_in_the_source_reach_the_kernel_without_a_new_compile(kernel_module, backend):
    source = HEADER + textwrap.dedent("""\
        TABLE = const_array([VALUES], f32, 3)


        @gpu_kernel(Kernel1D)
        def read(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            out[i] = TABLE[i]
        """)
    first = kernel_module(source.replace("VALUES", "1.0, 2.0, 3.0"), name="consts_edit")
    out = gn.empty(3, gn.f32)
    launch(first.read, 3, out)
    assert out.to_host().tolist() == [1.0, 2.0, 3.0]
    second = kernel_module(source.replace("VALUES", "7.0, 8.0, 9.0"), name="consts_edit")
    assert second is not first
    launch(second.read, 3, out)
    assert out.to_host().tolist() == [7.0, 8.0, 9.0]
    # The CUDA (and so the compiled-kernel cache key) does not hold the values: they are set at
    # load, so the edit needs no compile.
    assert first.read.cuda_source == second.read.cuda_source
    assert "7.0" not in second.read.cuda_source


# ---- what the checker refuses ----------------------------------------------------------------


@pytest.mark.parametrize("statement, message", [
    ("TAPS[i % 7] = 1.0", "'TAPS' is a constant array (const_array, in constant memory): "
                          "kernels read it but cannot write it"),
    ("TAPS[0] += 1.0", "'TAPS' is a constant array"),
    ("TAPS.atomic_ref(0).fetch_add(1.0)", "cannot write it, atomically or not"),
])
def test_writes_are_refused_at_their_line(statement, message):
    source = TABLES + textwrap.dedent(f"""\


        @gpu_kernel(Kernel1D)
        def write(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            {statement}
            out[i] = 0.0
        """)
    err = error_of(source)
    line = source.splitlines().index(f"    {statement}") + 1
    assert message in str(err)
    assert f"consts_mod.py:{line}" in str(err) and "^" in str(err)


def test_a_device_function_cannot_take_a_table_as_a_writable_array():
    source = TABLES + textwrap.dedent("""\


        @gpu_device
        def bump(t: CUDASliceMut[f32]):
            t.atomic_ref(0).fetch_add(1.0)


        @gpu_kernel(Kernel1D)
        def call(out: CUDASliceMut[f32]):
            bump(TAPS)
        """)
    assert "is writable (CUDASliceMut) but 'TAPS' is read-only" in str(error_of(source))


def test_a_table_larger_than_the_constant_bank_is_refused_naming_it():
    # 17000 f32 = 68000 bytes: const_array would refuse it when run, the checker before that.
    source = HEADER + textwrap.dedent("""\
        BIG = const_array(np.zeros(17000), f32, 17000)


        @gpu_kernel(Kernel1D)
        def read(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            out[i] = BIG[i]
        """)
    err = str(error_of(source))
    lines = source.splitlines()
    defined = lines.index("BIG = const_array(np.zeros(17000), f32, 17000)") + 1
    used = lines.index("    out[i] = BIG[i]") + 1
    assert (f"the constant array 'BIG' (consts_mod.py:{defined}; f32 17000, 68000 bytes) does "
            "not fit the kernel's constant memory: the limit is 65536 bytes of CUDA's "
            "65536-byte constant bank") in err
    assert f"consts_mod.py:{used}:" in err and "^" in err


def test_tables_that_fit_alone_but_not_together_are_refused_at_the_one_that_overflows():
    source = HEADER + textwrap.dedent("""\
        A = const_array(np.zeros(10000), f32, 10000)
        B = const_array(np.zeros(7000), f32, 7000)


        @gpu_device
        def b(i: i64) -> f32:
            return B[i]


        @gpu_kernel(Kernel1D)
        def read(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            out[i] = A[i] + b(i)
        """)
    err = str(error_of(source))
    lines = source.splitlines()
    defined = lines.index("B = const_array(np.zeros(7000), f32, 7000)") + 1
    used = lines.index("    return B[i]") + 1
    assert (f"the constant array 'B' (consts_mod.py:{defined}; f32 7000, 28000 bytes) does not "
            "fit the kernel's constant memory beside the 40000 bytes of the 1 constant array "
            "it reads before: the limit is 25536 bytes") in err
    assert f"consts_mod.py:{used}:" in err


def test_each_kernel_has_a_bank_of_its_own():
    source = HEADER + textwrap.dedent("""\
        A = const_array(np.zeros(10000), f32, 10000)
        B = const_array(np.zeros(10000), f32, 10000)


        @gpu_kernel(Kernel1D)
        def ka(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            out[i] = A[i]


        @gpu_kernel(Kernel1D)
        def kb(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            out[i] = B[i]
        """)
    kernels = transpile(source).kernels
    assert [len(k.variants[0].consts) for k in kernels] == [1, 1]


@pytest.mark.parametrize("definition, message", [
    ("T = const_array(np.linspace(0, 1, 5))",
     "its element type and its shape cannot be read from the source without running the "
     "module"),
    ("T = const_array(np.linspace(0, 1, 5), f32)",
     "its shape cannot be read from the source"),
    ("T = const_array(np.zeros((2, 2, 2, 2)), f32, (2, 2, 2, 2))", "1 to 3 dimensions"),
    ("T = const_array([1, 2], complex, 2)", "element type complex, which is not one of"),
    ("T = const_array([1, 2], f32, 2)\nT = const_array([1, 2], f32, 2)",
     "assigned more than once at module level"),
])
def test_tables_the_source_does_not_describe_are_refused_at_the_use(definition, message):
    source = HEADER + definition + textwrap.dedent("""\


        @gpu_kernel(Kernel1D)
        def read(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            out[i] = f32(T[0])
        """)
    err = str(error_of(source))
    assert message in err and "^" in err


@pytest.mark.parametrize("definition, dtype, shape", [
    ("T = const_array([[1, 2, 3], [4, 5, 6]])", "i64", (2, 3)),
    ("T = const_array([0.5, 1.5])", "f64", (2,)),
    ("T = const_array([True, False])", "bool_", (2,)),
    ("T = const_array(np.array([[1, 2]], dtype=np.int16))", "i16", (1, 2)),
    ("T = const_array(np.asarray([1, 2], np.uint32))", "u32", (2,)),
    ("T = const_array(values=[1, 2, 3], dtype='float32')", "f32", (3,)),
    ("K = 4\nT = const_array(np.ones(2 * K + 1), gn.f64, shape=2 * K + 1)", "f64", (9,)),
    ("T = const_array(np.ones((2, 3)), np.float16, (2, 3))", "f16", (2, 3)),
])
def test_the_element_type_and_shape_come_from_the_source(definition, dtype, shape):
    index = ", ".join(["0"] * len(shape))
    source = HEADER + definition + textwrap.dedent(f"""\


        @gpu_kernel(Kernel1D)
        def read(out: CUDASliceMut[gn.f64]):
            i = FlatLayout1D.uid()
            out[i] = gn.f64(T[{index}]) + gn.f64(T.shape[0])
        """)
    (const,) = transpile(source).kernels[0].variants[0].consts
    assert (const.name, const.dtype, const.shape) == ("T", dtype, shape)
    # and the host function makes exactly that array
    namespace: dict = {}
    exec(compile(HEADER + definition, "<table>", "exec"), namespace)
    made = namespace["T"]
    assert made.dtype == SCALARS[dtype].dtype and made.shape == shape


def test_a_module_level_numpy_array_points_to_const_array():
    source = HEADER + textwrap.dedent("""\
        TABLE = np.arange(4.0)


        @gpu_kernel(Kernel1D)
        def read(out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            out[i] = TABLE[i]
        """)
    assert "TABLE = const_array(values, dtype, shape)" in str(error_of(source))


def test_an_index_the_shape_proves_is_not_checked():
    cuda = transpile(TABLES).kernels[0].variants[0].cuda
    assert "__constant__ float gn_const0_TAPS[7];" in cuda
    assert "gn_const0_TAPS[j]" in cuda  # j in range(N) with N the table's length
    assert "__constant__ int gn_const" in cuda and "__constant__ unsigned char gn_const" in cuda


# ---- compiled by NVRTC, precompiled, shown by expand -----------------------------------------


def _every_dtype_source() -> str:
    lines = [HEADER, "from gpu_native import bool_, i8, i16, u16, u32, u64, f16, bf16, f64\n"]
    names = ["bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16",
             "f32", "f64"]
    for name in names:
        lines.append(f"T_{name} = const_array(np.ones((2, 3)), {name}, (2, 3))\n")
    lines.append(textwrap.dedent("""\


        ROW = const_array(np.ones(4), f32, 4)


        @gpu_device
        def head(t: CUDASlice[f32]) -> f32:
            return t[0]


        @gpu_kernel(Kernel2D)
        def every(out: CUDASliceMut2D[f64]):
            u = FlatLayout2D.uid()
            total = f64(head(ROW))
        """))
    body = "".join(f"    total += f64(T_{name}[u.y % 2, u.x % 3])\n" for name in names)
    return "".join(lines) + body + "    out[u.y, u.x] = total\n"


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_tables_of_every_type_compile_with_nvrtc_and_keep_their_names(arch):
    from gpu_native.compiler.nvrtc import compile_request

    (every,) = transpile(_every_dtype_source()).kernels
    assert len(every.variants[0].consts) == 14 and Trait.USES_HALF in every.variants[0].traits
    apply, pick = transpile(TABLES).kernels  # with a 32-bit entry point; uid-only
    assert Trait.INDEX32 in apply.variants[0].traits
    assert Trait.UID_ONLY in pick.variants[0].traits
    for kernel in (every, apply, pick):
        variant = kernel.variants[0]
        request = BuildRequest(source=variant.cuda, symbol=variant.symbol, arch=arch,
                               uses_half=Trait.USES_HALF in variant.traits, label=variant.symbol)
        image = compile_request(request)
        assert image.kind == "cubin" and image.log.strip("\x00").strip() == ""
        for const in variant.consts:  # cuModuleGetGlobal finds them by these names
            assert const.symbol.encode() + b"\x00" in image.image


def test_expand_cuda_shows_the_declarations_and_how_they_are_set(tmp_path, capsys):
    from gpu_native.cli import main

    path = tmp_path / "consts_mod.py"
    path.write_text(TABLES)
    assert main(["expand", str(path), "--cuda", "--kernel", "apply"]) == 0
    out = capsys.readouterr().out
    assert "// Constant arrays: set from the imported module when the kernel is loaded " \
           "(cuModuleGetGlobal + cuMemcpyHtoD)." in out
    assert "__constant__ float gn_const0_TAPS[7];  // consts_mod.TAPS: f32, shape (7,)" in out
    assert "__constant__ int gn_const2_LUT[6];  // consts_mod.LUT: i32, shape (2, 3)" in out


@pytest.mark.slow
def test_precompile_builds_kernels_that_read_tables(tmp_path):
    from gpu_native import cli

    package = tmp_path / "constpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kern.py").write_text(TABLES)
    out = tmp_path / "out"
    assert cli.main(["precompile", str(package), "--arch", "sm_90", "--out", str(out),
                     "-q"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    labels = {k["label"] for k in manifest["kernels"]}
    assert labels == {"constpkg.kern.apply", "constpkg.kern.pick"}
    for kernel in manifest["kernels"]:
        image = (out / f"{kernel['artifacts']['sm_90']['id']}.cubin").read_bytes()
        assert b"gn_const0_TAPS\x00" in image
    assert "constpkg" not in sys.modules  # nothing was imported: the values are not needed


@pytest.mark.gpu
def test_a_precompiled_kernel_gets_its_table_at_load(tmp_path, monkeypatch, cuda_backend):
    from gpu_native import cli
    from gpu_native.cache import clear_memory_cache

    package = tmp_path / "constpkg2"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kern.py").write_text(TABLES)
    arch = cuda_backend.properties(0)["arch"]
    assert cli.main(["precompile", str(package), "--arch", arch, "--out",
                     str(tmp_path / "out"), "-q"]) == 0
    monkeypatch.setenv("GPU_NATIVE_PRECOMPILED", str(tmp_path / "out"))
    monkeypatch.setenv("GPU_NATIVE_REQUIRE_PRECOMPILED", "1")
    monkeypatch.syspath_prepend(str(tmp_path))
    clear_memory_cache()
    mod = importlib.import_module("constpkg2.kern")
    x = np.arange(50, dtype=np.float32)
    out = gn.empty(50, gn.f32)
    launch(mod.apply, 50, gn.to_device(x), out)
    np.testing.assert_allclose(out.to_host(), expected_apply(x), rtol=1e-6, atol=1e-5)


def test_the_example_in_docs_language_md_runs(backend, kernel_module, capsys):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "language.md").read_text()
    section = text[text.index("## Constant memory"):]
    code = section[section.index("```python\n") + 10:section.index("```\n", 10)]
    kernel_module(code)  # its assert checks the result against NumPy's convolution
    assert capsys.readouterr().out.strip() == "ok"


def test_loading_on_the_gpu_sets_each_table_by_its_symbol(kernel_module):
    """What the CUDA backend does right after cuModuleLoadData, against a recording driver
    (the GPU-marked tests above run it for real)."""
    from gpu_native.runtime import constants

    mod = kernel_module(TABLES)
    kernel = mod.apply
    variant = next(iter(kernel.variants.values()))
    calls: list = []

    class Driver:
        CU_STREAM_LEGACY = 1

        @staticmethod
        def CUstream(value):
            return ("stream", value)

        def cuModuleGetGlobal(self, module, name):
            calls.append(("get", module, name))
            index = [c.symbol.encode() for c in variant.spec.consts].index(name)
            return (0, 1000 * (index + 1), constants.constant_arrays(kernel, variant)[index].nbytes)

        def cuMemcpyHtoD(self, ptr, host, nbytes):
            import ctypes

            calls.append(("copy", ptr, ctypes.string_at(host, nbytes)))
            return (0,)

        def cuStreamSynchronize(self, stream):
            calls.append(("sync", stream))
            return (0,)

    def check(result, what=""):
        assert result[0] == 0, what
        return result[1:] if len(result) > 2 else (result[1] if len(result) == 2 else None)

    constants.upload(Driver(), check, "module", kernel, variant)
    symbols = [c.symbol.encode() for c in variant.spec.consts]
    assert [c[2] for c in calls if c[0] == "get"] == symbols
    copies = [c[1:] for c in calls if c[0] == "copy"]
    assert copies[0] == (1000, np.linspace(-1, 1, 7).astype(np.float32).tobytes())
    assert copies[2] == (3000, np.array([[3, 1, 4], [1, 5, 9]], np.int32).tobytes())
    assert calls[-1] == ("sync", ("stream", 1))


def test_a_constant_beyond_f32_is_inf_without_a_numpy_warning(sim, kernel_module, recwarn):
    # f32(1e300) is inf on the device and on the host: the emitter and the simulator convert it
    # without letting NumPy's overflow warning reach the user.
    m = kernel_module("""
from gpu_native import CUDASliceMut, FlatLayout1D, Kernel1D, bf16, f16, f32, gpu_kernel

@gpu_kernel(Kernel1D)
def big(out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = f32(1e300) + f32(f16(1e300)) + f32(bf16(1e300))
""")
    out = gn.to_device(np.zeros(4, np.float32))
    m.big.launch(gn.GridDim1D(1), gn.BlockDim1D(32), 0, gn.DEFAULT_STREAM)(out)
    np.testing.assert_array_equal(out.to_host(), np.inf)
    overflow = [w for w in recwarn.list if issubclass(w.category, RuntimeWarning)]
    assert not overflow, [str(w.message) for w in overflow]
