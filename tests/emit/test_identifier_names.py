"""Any Python identifier works as a kernel's parameter or local name.

A kernel's names reach three generated languages: the host launcher (Python), the CUDA C++ and
the simulator's Python.  Each keeps its own names apart from the user's by construction (see
``gpu_native.emit.host.reserved_prefix``, ``gpu_native.emit.cnames.c_identifier`` and
``gpu_native.simulator.codegen.FunctionEmitter.name``); these tests use every name those
generators write, and the names C++ and CUDA give a meaning of their own, as a kernel's names.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import gpu_native as gn
from gpu_native import ir
from gpu_native.emit.cnames import c_identifier
from gpu_native.emit.prelude import PRELUDE_INCLUDE
from gpu_native.headers import header_text
from gpu_native.rewrite import rewrite_module, transpile_module
from tests.helpers import EXAMPLES, HELPERS, compiled_cleanly

pytestmark = pytest.mark.untrusted  # hostile parameter names (docs/testing.md)

# Names the generated launcher used for its own values before they were prefixed, its prefix and
# names made with it, and the classes its fast path compares with.
LAUNCHER_NAMES = ["DA", "sig_x", "pack", "buf", "args", "launch", "fn", "gx", "gy", "gz", "bx",
                  "by", "bz", "smem", "stream", "ok", "failed", "slow", "err", "__gn", "_gn_",
                  "_gn_DA", "_gn_gx", "_gn_context", "address", "int", "float", "bool",
                  "__class__"]
# C++ keywords, macros and macro-like names, CUDA's types and builtins, the functions the emitter
# calls, the prelude's names and the emitter's own variables, and names its mapping produces.
CUDA_NAMES = ["NULL", "INT_MAX", "N", "float4", "int4", "uint3", "new", "this", "delete",
              "threadIdx", "blockDim", "warpSize", "half", "printf", "min", "max", "abs",
              "sqrtf", "sqrt", "fminf", "powf", "atomicAdd", "gn_chk", "gn_i64", "GN_KERNEL_ID",
              "gn_u64", "gn_min", "gn_error_record", "floorf", "blockIdx", "gridDim",
              "__gn_err", "__gn_uid", "__gn_total", "__gn_base", "__gn_block", "__gn_n",
              "__gn_next", "__gn_chunk", "__gn_aligned", "__gn_i0", "__gn_stop0", "__gn_old",
              "__gn_t0", "__gn_x_n0", "__gnv_x", "__device_", "__CUDA_ARCH_", "_", "_x", "a__b",
              "int_", "py_int_", "pyu_3b1_", "α", "数据"]
# The simulator's module, chunk, mask and helpers, its temporaries and its escaped names.
SIMULATOR_NAMES = ["np", "_gn", "_gn_m", "_gn_where", "_gn_u64", "_gn_i64", "_gn_K0", "_gn_DEV0",
                   "_gn_t1", "_gn_r", "_gn_fn", "_gnu_np", "_gnu__gn_m", "_gnc_t0"]
NAMES = sorted(set(LAUNCHER_NAMES + CUDA_NAMES + SIMULATOR_NAMES))

# One module per name: the name as a read-only array (a kernel that depends only on its uid, so
# the CUDA has its vectorised and 32-bit entry points too), a writable array, a scalar parameter
# and a device function's parameter, and a local beside f16 arrays (the CUDA includes the half
# headers).  Every kernel is launched and checked against NumPy.
TEMPLATE = """
import math
from gpu_native import (Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f16, f32, i32,
                        gpu_device, gpu_kernel)

@gpu_kernel(Kernel1D)
def as_array(NAME: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = NAME[i] * 2.0 + 1.0

@gpu_kernel(Kernel1D)
def as_writable(x: CUDASlice[f32], NAME: CUDASliceMut[f32], hits: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    if i < len(NAME):
        NAME[i] = math.sqrt(x[i]) + f32(len(NAME))
        hits.atomic_ref(0).fetch_add(1)

@gpu_device
def twice(NAME: f32, k: i32) -> f32:
    acc = NAME
    for j in range(k):
        acc = acc + NAME
    return acc

@gpu_kernel(Kernel1D)
def as_scalar(x: CUDASlice[f32], out: CUDASliceMut[f32], NAME: f32, n: i32):
    i = FlatLayout1D.uid()
    if i < len(out):
        out[i] = twice(x[i] * NAME, 1) + f32(n)

@gpu_kernel(Kernel1D)
def as_local(x: CUDASlice[f16], out: CUDASliceMut[f16], n: i32):
    i = FlatLayout1D.uid()
    if i < len(out):
        NAME = f32(x[i])
        for j in range(n):
            NAME = NAME + math.floor(f32(j) * 0.75)
        if n < 0:
            print("never", NAME)
        out[i] = f16(NAME)
"""


def _source(name: str) -> str:
    return TEMPLATE.replace("NAME", name)


def _module_name(name: str) -> str:
    return "gn_names_" + "".join(c if c.isascii() and c.isalnum() else f"x{ord(c):x}"
                                 for c in name)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_name_works_in_every_role(name, kernel_module, backend, launch_paths):
    k = kernel_module(_source(name), _module_name(name))
    rng = np.random.default_rng(7)
    n = 1000
    grid, block = gn.GridDim1D(8), gn.BlockDim1D(128)
    host = rng.uniform(0.5, 4.0, n).astype(np.float32)
    x = gn.to_device(host)

    out = gn.empty(n, gn.f32)
    out.fill(np.nan)
    k.as_array.launch(grid, block)(**{name: x, "out": out})  # by keyword
    np.testing.assert_array_equal(out.to_host(), host * np.float32(2) + np.float32(1))
    assert launch_paths == {"fast": [True], "failed": 0, "slow": 0}

    written, hits = gn.empty(n, gn.f32), gn.zeros(1, gn.i32)
    written.fill(np.nan)
    k.as_writable.launch(grid, block)(x, written, hits)
    np.testing.assert_allclose(written.to_host(), np.sqrt(host.astype(np.float64)) + n,
                               rtol=1e-6)
    assert hits.to_host()[0] == n

    launcher = k.as_scalar.launch(grid, block)
    for scale in (1.5, np.float32(-0.25)):  # the fast path, then the checked one
        out.fill(np.nan)
        launcher(x, out, scale, 3)
        expected = (host * np.float32(scale)).astype(np.float64) * 2 + 3
        np.testing.assert_allclose(out.to_host(), expected, rtol=1e-6)
    assert launch_paths == {"fast": [True, True, True], "failed": 0, "slow": 1}

    halves = rng.uniform(-4.0, 4.0, n).astype(np.float16)
    out16 = gn.empty(n, gn.f16)
    out16.fill(np.nan)
    k.as_local.launch(grid, block)(gn.to_device(halves), out16, 4)
    expected16 = (halves.astype(np.float32) + np.float32(0 + 0 + 1 + 2)).astype(np.float16)
    np.testing.assert_array_equal(out16.to_host(), expected16)
    assert launch_paths == {"fast": [True] * 4, "failed": 0, "slow": 1}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_name_compiles_with_nvrtc(name):
    compiled_cleanly(_source(name), f"{_module_name(name)}.py", _module_name(name))


# Pairs of names whose generated names could meet: a keyword and its old escape, a name and the
# escape of another, an extent and a vector, a checker temporary and a user's local.
PAIRS = [("int", "int_"), ("int", "py_int_"), ("int_", "py_int__"), ("v_x", "x_n0"),
         ("x_n0", "__gn_x_n0"), ("_gn_m", "_gnu__gn_m"), ("__gn_t0", "_gnc_t0")]

PAIR_TEMPLATE = """
from gpu_native import Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32, gpu_kernel

@gpu_kernel(Kernel1D)
def pair(FIRST: CUDASlice[f32], SECOND: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = FIRST[i] - SECOND[i]

@gpu_kernel(Kernel1D)
def swap(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < len(out):
        FIRST = x[i]
        SECOND = FIRST * 2.0
        FIRST, SECOND = SECOND, FIRST
        out[i] = FIRST - SECOND * 3.0
"""


@pytest.mark.slow
@pytest.mark.parametrize("first, second", PAIRS)
def test_names_whose_generated_names_could_meet(first, second, kernel_module, backend):
    source = PAIR_TEMPLATE.replace("FIRST", first).replace("SECOND", second)
    k = kernel_module(source, _module_name(f"pair_{first}_{second}"))
    host = np.arange(1000, dtype=np.float32)
    a, b = gn.to_device(host), gn.to_device(host * np.float32(3))
    out = gn.empty(1000, gn.f32)
    k.pair.launch(gn.GridDim1D(8), gn.BlockDim1D(128))(a, b, out)
    np.testing.assert_array_equal(out.to_host(), host - host * np.float32(3))
    k.swap.launch(gn.GridDim1D(8), gn.BlockDim1D(128))(a, out)
    np.testing.assert_array_equal(out.to_host(), host * np.float32(2) - host * np.float32(3))
    compiled_cleanly(source, "pair.py", "pair")


class TestCppNames:
    """The mapping from Python names to C++ names (gpu_native.emit.cnames.c_identifier)."""

    def test_plain_names_are_kept(self):
        for name in ("idx", "a", "acc", "tile", "tile_a", "out_x", "x0", "eps2", "Tile", "gn"):
            assert c_identifier(name) == name

    def test_other_names_are_mapped_and_the_mapping_is_injective(self):
        names = NAMES + [n for pair in PAIRS for n in pair] + ["__gn_t0", "a", "a_", "a__"]
        mapped = {c_identifier(n) for n in set(names)}
        assert len(mapped) == len(set(names))
        for name in set(names) - {"a"}:
            c = c_identifier(name)
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c), c
            if c != name:
                assert c.endswith("_") and c.startswith("py"), c

    def test_names_derived_from_variables_are_unique(self):
        """Extents (__gn_<c>_n<axis>) and vectors (__gnv_<c>) of distinct names never meet
        each other or a fixed or numbered name of the emitter."""
        from gpu_native.emit.cnames import extent_name, vector_name

        names = set(NAMES) | {n for pair in PAIRS for n in pair} | {"v_x", "x", "err", "i0"}
        variables = [ir.Var(n, ir.F32, None) for n in sorted(names)]
        variables.append(ir.Var(f"{ir.TEMP_PREFIX}t0", ir.F32, None))
        derived = [extent_name(v, axis) for v in variables for axis in range(3)]
        derived += [vector_name(v) for v in variables]
        derived += [c_identifier(v.name) for v in variables]
        assert len(set(derived)) == len(derived)
        fixed = {"__gn_err", "__gn_total", "__gn_block", "__gn_n", "__gn_aligned",
                 "__gn_chunks", "__gn_chunk", "__gn_base", "__gn_uid", "__gn_next",
                 "__gn_dyn_smem", "__gn_old", "__gn_i0", "__gn_stop0", "__gn_step0"}
        assert not fixed & set(derived)

    def test_temporaries_of_the_checker_have_names_of_their_own(self):
        assert c_identifier(f"{ir.TEMP_PREFIX}t3") == "__gn_t3"
        assert c_identifier("__gn_t3") != "__gn_t3"

    def test_no_prelude_name_is_plain(self):
        prelude = header_text()
        declared = set(re.findall(r"\b(?:gn|GN)_\w+", prelude))
        assert declared, "the prelude declares nothing?"
        declared |= set(re.findall(r"^#define (\w+)", prelude, re.M))
        for name in declared:
            assert c_identifier(name) != name, name

    @pytest.mark.slow
    def test_every_name_the_emitter_writes_is_out_of_the_users_reach(self):
        """Scan the kernel bodies of every example and test kernel: each identifier there is a
        user's variable (as mapped) or a name no user variable maps to."""
        files = [*EXAMPLES.glob("*.py"), HELPERS / "kernels_runtime.py",
                 HELPERS / "kernels_language.py"]
        seen: set[str] = set()
        for path in files:
            source = path.read_text()
            if "gpu_kernel" not in source:
                continue
            mod = transpile_module(source, str(path), path.stem)
            for checked in mod.checked:
                for kernel in checked.specializations:
                    users = {c_identifier(v.name) for v in _variables(kernel)}
                    for variant_cuda in _kernel_bodies(kernel):
                        for ident in _identifiers(variant_cuda):
                            if ident in users:
                                continue
                            seen.add(ident)
                            assert c_identifier(ident) != ident, (path.name, ident)
        # The scan saw the emitter's names (not just nothing).
        assert {"__gn_err", "gn_chk", "threadIdx", "float4", "atomicAdd", "sqrtf"} <= seen


@pytest.mark.slow
def test_the_simulators_own_names_all_start_with_gn():
    """In the simulator's Python for every example and test kernel, a name that does not start
    with _gn is a variable of the kernel's (so the generated code's own names cannot meet one)."""
    import ast

    from gpu_native.simulator.codegen import build

    files = [*EXAMPLES.glob("*.py"), HELPERS / "kernels_language.py"]
    for path in files:
        source = path.read_text()
        if "gpu_kernel" not in source:
            continue
        for checked in transpile_module(source, str(path), path.stem).checked:
            for kernel in checked.specializations:
                users = {v.name for v in _variables(kernel)}
                prog, _ = build(kernel)
                for text in prog.sources:
                    tree = ast.parse(text)
                    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
                    names |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
                              for a in n.args}
                    assert {n for n in names if not n.startswith("_gn")} <= users, path.name
                assert all(name.startswith("_gn") for name in prog.ns
                           if name != "__builtins__"), path.name


def _variables(kernel: ir.Kernel):
    for fn in (kernel, *kernel.device_functions):
        yield from fn.params
        yield from fn.locals
        yield from (d.var for d in fn.local_arrays)
    yield from (d.var for d in kernel.shared)


def _kernel_bodies(kernel: ir.Kernel):
    from gpu_native.emit.cuda import emit_kernel

    cuda = emit_kernel(kernel, "k.py")
    # Everything after the prelude's include: device functions and the entry points.
    yield cuda[cuda.index(PRELUDE_INCLUDE.strip("\n")) + len(PRELUDE_INCLUDE.strip("\n")):]


def _identifiers(code: str) -> set[str]:
    code = re.sub(r"^#line .*$|//.*$", "", code, flags=re.M)
    code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', code)  # strings: printf formats, asm
    code = re.sub(r"\[\[\w+\]\]", "", code)  # attributes
    code = re.sub(r"(?:\.|->)\s*\w+", "", code)  # members (.x, ->state)
    return set(re.findall(r"\b[A-Za-z_]\w*\b", code))


def test_keyword_arguments_launch(kernel_module, backend):
    """Keyword arguments reach the kernel's parameters, on the fast path and the checked one."""
    k = kernel_module(_source("gx"), "gn_names_keywords")
    host = np.arange(100, dtype=np.float32)
    x, out = gn.to_device(host), gn.empty(100, gn.f32)
    launcher = k.as_scalar.launch(gn.GridDim1D(1), gn.BlockDim1D(128))
    launcher(n=2, gx=0.5, out=out, x=x)
    np.testing.assert_array_equal(out.to_host(), host * np.float32(0.5) * 2 + 2)
    launcher(out=out, x=x, n=np.int32(1), gx=np.float32(3))  # numpy scalars: the checked path
    np.testing.assert_array_equal(out.to_host(), host * np.float32(3) * 2 + 1)
    with pytest.raises(TypeError, match="gx"):
        launcher(x=x, out=out, n=1)


def test_launcher_names_cannot_be_parameter_names():
    """Every name the rewritten launcher introduces starts with a prefix no parameter has."""
    source = PAIR_TEMPLATE.replace("FIRST", "_gn__x").replace("SECOND", "_gn_fn")
    host = rewrite_module(source, "m.py", "m").source
    factory = re.search(r"def pair\((\w+)\):\n\s+(.*)\n\s+return lambda ([^:]*):(.*)", host)
    assert factory is not None
    param, setup, params, body = factory.groups()
    assert params == "_gn__x, _gn_fn, out"
    assert param == "_gn___context"
    # Names, not attributes (an array's ._gn_args).
    introduced = set(re.findall(r"(?<![.\w])_gn\w*", setup + body)) - {"_gn__x", "_gn_fn"}
    assert introduced and all(n.startswith("_gn___") for n in introduced), introduced
