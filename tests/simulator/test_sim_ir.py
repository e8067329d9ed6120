"""The simulator runs the IR embedded in the rewritten module (gpu_native.ircodec), never a copy
transpiled again from the file on disk: the encoding round-trips every kernel exactly, malformed
bytes are a clear error, the bytes stay out of the cache key, and the runtime needs no
transpiler (which test_layering.py checks for every import of the package)."""

from __future__ import annotations

import importlib
import marshal
import math
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native import ir, ircodec
from gpu_native.cache import BuildRequest
from gpu_native.cache.keys import artifact_id
from gpu_native.errors import GpuNativeError
from gpu_native.lang.types import ScalarInfo
from gpu_native.launchexpr import LaunchExpr
from gpu_native.nodes import fields, is_node, replace
from gpu_native.rewrite import rewrite_module, transpile_module
from gpu_native.runtime.backend import use
from gpu_native.runtime.kernel import Kernel
from gpu_native.simulator.program import SimProgram
from gpu_native.spec import IndexFits, LaunchAssert, ShapeAssert
from tests.helpers import ROOT

FILES = sorted([*(ROOT / "examples").glob("*.py"), *(ROOT / "tests" / "helpers").glob("kernels_*.py")])


def _checked_kernels(path):
    return [k for ck in transpile_module(path.read_text(), str(path), path.stem).checked
            for k in ck.specializations]


# Parametrised by file, each transpiled when its test runs, not at collection (5 s a worker).
PATHS = [path for path in FILES if "gpu_kernel" in path.read_text()]


def _same_float(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(
        1, y))


def assert_same_graph(a, b) -> None:
    """``a`` and ``b`` are the same object graph: equal values, and one object of ``b`` for each
    object of ``a`` (so variables and device functions keep their identity)."""
    seen: dict[int, int] = {}
    taken: dict[int, int] = {}
    stack = [(a, b, getattr(a, "symbol", "kernel"))]
    while stack:
        x, y, where = stack.pop()
        assert type(x) is type(y), f"{where}: {type(x).__name__} became {type(y).__name__}"
        if isinstance(x, ScalarInfo):
            assert y is x, where
            continue
        if isinstance(x, float):
            assert _same_float(x, y), f"{where}: {x!r} became {y!r}"
            continue
        if isinstance(x, (type(None), bool, int, str, bytes)):
            assert x == y, f"{where}: {x!r} became {y!r}"
            continue
        if isinstance(x, tuple):
            assert len(x) == len(y), where
            stack.extend((p, q, f"{where}[{i}]") for i, (p, q) in enumerate(zip(x, y)))
            continue
        if isinstance(x, LaunchExpr):
            # A launch check's tree travels inline, as its tagged tuple: a value, equal but
            # not shared (a shape assert and the IndexFits of its product share one object).
            assert x == y, f"{where}: {x!r} became {y!r}"
            continue
        if id(x) in seen:
            assert seen[id(x)] == id(y), f"{where}: a shared object was split"
            continue
        assert id(y) not in taken, f"{where}: two objects were merged"
        seen[id(x)], taken[id(y)] = id(y), id(x)
        if isinstance(x, dict):
            assert list(x) == list(y), where
            stack.extend((x[k], y[k], f"{where}[{k!r}]") for k in x)
            continue
        assert is_node(x), f"{where}: unexpected {type(x).__name__}"
        # Fields for `expand`'s reader only (a store's proof) are not encoded: they decode to
        # their defaults.
        skipped = ircodec.NOT_ENCODED.get(type(x).__name__, {})
        for f, default in skipped.items():
            assert getattr(y, f) == default, where
        stack.extend((getattr(x, f), getattr(y, f), f"{where}.{f}") for f in fields(x)
                     if f not in skipped)


class TestRoundTrip:
    @pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
    def test_every_kernel_decodes_to_the_same_ir_and_simulator_program(self, path):
        kernels = _checked_kernels(path)
        assert kernels
        for kernel in kernels:
            decoded = ircodec.decode_kernel(ircodec.encode_kernel(kernel))
            assert_same_graph(kernel, decoded)
            assert SimProgram(decoded).source == SimProgram(kernel).source, kernel.symbol

    def test_constants_keep_their_bits_and_shared_variables_their_identity(self, kernel_module):
        mod = kernel_module(textwrap.dedent("""\
            import math
            from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, f64, u64

            NEG = -0.0

            @gpu_kernel(Kernel1D)
            def consts(out: CUDASliceMut[f64], big: CUDASliceMut[u64]):
                i = FlatLayout1D.uid()
                v: f64 = 0.0
                if i == 1:
                    v = NEG
                if i == 2:
                    v = math.inf
                if i == 3:
                    v = -math.inf
                if i == 4:
                    v = math.nan
                out[i] = v
                big[i] = u64(18446744073709551615)
            """))
        (variant,) = mod.consts.variants.values()
        decoded = ircodec.decode_kernel(variant.spec.ir)
        values = [n.value for n in ir.walk(decoded.body) if isinstance(n, ir.Const)]
        assert any(isinstance(v, float) and v == 0 and math.copysign(1, v) < 0 for v in values)
        assert any(isinstance(v, float) and math.isnan(v) for v in values)
        assert math.inf in values and 2**64 - 1 in values
        # One Var object for `v` wherever it is assigned or read.
        vs = {id(n.var) for n in ir.walk(decoded.body)
              if isinstance(n, (ir.Assign, ir.Local)) and n.var.name == "v"}
        assert len(vs) == 1
        with use("sim"):
            out = gn.zeros(5, gn.f64)
            big = gn.zeros(5, gn.u64)
            mod.consts.launch(1, 5)(out, big)
            host = out.to_host()
        assert host[0] == 0 and not np.signbit(host[0])
        assert host[1] == 0 and np.signbit(host[1])
        assert host[2] == np.inf and host[3] == -np.inf and np.isnan(host[4])
        assert (big.to_host() == np.uint64(2**64 - 1)).all()

    def test_the_encoding_is_reproducible(self):
        source = (ROOT / "examples" / "sgemm.py").read_text()
        first = rewrite_module(source, "examples/sgemm.py", "sgemm").source
        again = rewrite_module(source, "examples/sgemm.py", "sgemm").source
        assert first == again


def _encoded_sample() -> bytes:
    source = (ROOT / "examples" / "saxpy.py").read_text()
    kernel = transpile_module(source, "saxpy.py", "saxpy").checked[0].specializations[0]
    return ircodec.encode_kernel(kernel)


def _pack(records, schema=ircodec.SCHEMA, fmt=ircodec.FORMAT) -> bytes:
    return zlib.compress(marshal.dumps((fmt, schema, tuple(records)), 2))


class TestMalformed:
    @pytest.mark.parametrize("data, message", [
        (b"not compressed", "damaged"),
        ("a str", "it is str, not bytes"),
        (zlib.compress(marshal.dumps(compile("print('hi')", "x", "exec"))), "holds code, not"),
        (_pack([("Const", [0])]), "a field holds list"),
        (_pack([("Exec", "x")]), "unknown node class 'Exec'"),
        (_pack([("SourceSpan", "f.py", 1)]), "has 2 fields, not 5"),
        (_pack([("SourceSpan", "f.py", 1, 0, None, "")]), "not a Kernel"),
        (_pack([("ScalarInfo", "f128")]), "unknown scalar type"),
        (_pack([("dict", "k", ()), ("KernelOptions", [0], False, None, False),
                ("ScalarInfo", [1])]),
         "unknown scalar type"),
        (_pack([("SourceSpan", "f.py", 1, 0, None, compile("1", "x", "eval"))]),
         "a field holds code"),
        (_pack([]), "holds no records"),
    ], ids=["not-zlib", "not-bytes", "code-object", "forward-reference", "unknown-class",
            "arity", "not-a-kernel", "unknown-scalar", "unhashable-scalar", "code-in-a-field",
            "empty"])
    def test_bad_bytes_are_a_clear_error(self, data, message):
        with pytest.raises(GpuNativeError, match="cannot read the IR of k") as info:
            ircodec.decode_kernel(data, "k")
        assert message in str(info.value)

    def test_truncated_bytes(self):
        data = _encoded_sample()
        with pytest.raises(GpuNativeError, match="damaged"):
            ircodec.decode_kernel(data[:len(data) // 2])

    def test_bytes_from_an_ir_with_other_fields_are_refused(self):
        data = zlib.decompress(_encoded_sample())
        top = marshal.loads(data)
        for schema, fmt in (("0" * 16, ircodec.FORMAT), (ircodec.SCHEMA, ircodec.FORMAT + 1)):
            with pytest.raises(GpuNativeError, match="IR differs from this one"):
                ircodec.decode_kernel(_pack(top[2], schema, fmt))

    def test_launch_checks_travel_as_tagged_tuples_and_a_malformed_tree_is_refused(self):
        kernel = transpile_module(CHECKED, "checked.py", "checked").checked[0].specializations[0]
        assert {type(c) for c in kernel.launch_checks} == {LaunchAssert, ShapeAssert, IndexFits}
        data = ircodec.encode_kernel(kernel)
        assert ircodec.decode_kernel(data).launch_checks == kernel.launch_checks
        records = list(marshal.loads(zlib.decompress(data))[2])
        at = 1 + ircodec._FIELDS["Kernel"].index("launch_checks")
        checks = records[-1][at]
        assert ("assert", 0, ("==", ("sp", "block_dim", 0), ("c", 64))) in checks
        assert ("shape", 1, ("==", ("shape", 0, 0), ("shape", 1, 0))) in checks
        for damaged, message in (
                (("assert", 0, ("==", ("sp", "block_dim"), ("c", 64))), "unknown launch-check"),
                (("assert", 0, ("==", ("param", 0), ("c", 64))), "unknown launch-check"),
                (("shape", 1, "=="), "is not a tuple")):
            kernel_record = list(records[-1])
            kernel_record[at] = (damaged,)
            with pytest.raises(GpuNativeError, match="cannot read the IR of k") as info:
                ircodec.decode_kernel(_pack([*records[:-1], tuple(kernel_record)]), "k")
            assert "launch check's tree is malformed" in str(info.value)
            assert message in str(info.value)

    def test_a_spec_without_the_ir_is_a_clear_error_on_the_simulator(self, kernel_module):
        mod = kernel_module(SCALE)
        spec = mod.scale.spec
        spec = replace(spec, variants=tuple(replace(v, ir=b"") for v in spec.variants))
        kernel = Kernel(spec, mod.scale._factory)
        with use("sim"):
            a = gn.to_device(np.ones(4, np.float32))
            b = gn.zeros(4, gn.f32)
            with pytest.raises(GpuNativeError, match="rewritten without the IR"):
                kernel.launch(1, 4)(a, b)


class TestCacheKey:
    @pytest.mark.slow
    def test_the_ir_does_not_enter_the_kernel_key(self):
        for path in FILES:
            source = path.read_text()
            if "gpu_kernel" not in source:
                continue
            for spec in transpile_module(source, str(path), path.stem).kernels:
                for variant in spec.variants:
                    assert variant.ir
                    request = BuildRequest.for_variant(spec, variant, "sm_90")
                    for other in (replace(variant, ir=b"other"), replace(variant, ir=b"")):
                        again = BuildRequest.for_variant(spec, other, "sm_90")
                        assert again == request
                        assert artifact_id(again) == artifact_id(request)


CHECKED = textwrap.dedent("""\
    from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, f32, block_dim,
                            block_idx, thread_idx)

    @gpu_kernel(Kernel1D)
    def narrow(a: CUDASlice[f32], out: CUDASliceMut[f32]):
        assert block_dim.x == 64
        assert a.shape[0] == out.shape[0]
        x = block_idx.x * 64 + thread_idx.x
        if x < len(a):
            out[x] = a[x] * 2.0
    """)

SCALE = textwrap.dedent("""\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32

    @gpu_kernel(Kernel1D)
    def scale(a: CUDASlice[f32], b: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        b[i] = a[i] * 2.0
    """)


def _run_scale(mod):
    a_host = np.arange(1, 9, dtype=np.float32)
    a = gn.to_device(a_host)
    b = gn.zeros(8, gn.f32)
    mod.scale.launch(1, 8)(a, b)
    assert (a.to_host() == a_host).all(), "the kernel wrote into its read-only input"
    return b.to_host() / a_host


class TestSimulatorRunsTheImportedKernel:
    @pytest.fixture(autouse=True)
    def sim(self):
        with use("sim"):
            yield

    def test_after_the_file_is_edited(self, kernel_module):
        mod = kernel_module(SCALE, name="edited_after_import")
        path = Path(mod.__file__)
        path.write_text(SCALE.replace("a: CUDASlice[f32], b: CUDASliceMut[f32]",
                                      "b: CUDASliceMut[f32], a: CUDASlice[f32]")
                             .replace("a[i] * 2.0", "a[i] * 3.0"))
        assert (_run_scale(mod) == 2).all()

    def test_reload_after_an_edit_runs_the_new_body(self, kernel_module):
        mod = kernel_module(SCALE, name="reloaded_after_edit")
        assert (_run_scale(mod) == 2).all()
        Path(mod.__file__).write_text(SCALE.replace("a[i] * 2.0", "a[i] * 5.0"))
        mod = importlib.reload(mod)
        assert (_run_scale(mod) == 5).all()

    def test_after_the_file_is_deleted(self, kernel_module):
        mod = kernel_module(SCALE, name="deleted_after_import")
        Path(mod.__file__).unlink()
        assert (_run_scale(mod) == 2).all()
