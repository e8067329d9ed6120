"""``warpgroup_store``'s staging region (a 16-bit output passed through a swizzled shared
array on its way to coalesced stores): the well-formed kernel transpiles with both writes
proven and runs right on the simulator, and each misuse is a TranspileError at its line."""

from __future__ import annotations

import importlib
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.rewrite import rewrite_module
from tests.helpers import located_transpile_error

HEADER = """\
from gpu_native import *
"""

# C (M x 64) = A (M x 16) @ B (16 x 64): one k16 step, a block of two warpgroups per 128 rows.
_GOOD = """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice2D[f16], b: CUDASlice2D[f16], c: CUDASliceMut2D[f16]):
    assert block_dim.x == 256 and block_dim.y == 1
    assert a.shape[0] == grid_dim.x * 128 and c.shape[0] == a.shape[0]
    assert a.shape[1] == 16 and b.shape[0] == 16 and b.shape[1] == 64 and c.shape[1] == 64
    ta = shared_array(f16, (128, 64), swizzle=128)
    tb = shared_array(f16, (16, 64), swizzle=128)
    out = shared_array(f16, (2, 64, 64), swizzle=128)
    acc = local_array(f32, (32,))
    tid = thread_idx.x
    wg = tid // 128
    for e in range(8):
        ta[tid // 2, (tid % 2) * 8 + e] = a[block_idx.x * 128 + tid // 2, (tid % 2) * 8 + e]
    for e in range(4):
        tb[tid // 16, (tid % 16) * 4 + e] = b[tid // 16, (tid % 16) * 4 + e]
    for i in range(32):
        acc[i] = 0.0
    sync_threads()
    warpgroup_arrive()
    warpgroup_mma(acc, ta, (wg * 64, 0), tb, (0, 0), 64)
    warpgroup_commit()
    warpgroup_wait(0)
    warpgroup_store(c, (block_idx.x * 128 + wg * 64, 0), acc, out, (wg, 0, 0))
"""

STORE = "    warpgroup_store(c, (block_idx.x * 128 + wg * 64, 0), acc, out, (wg, 0, 0))"


def _case(old: str, new: str, mark: str | None = None) -> str:
    """``_GOOD`` with ``old`` replaced by ``new``; the line ``mark`` (default ``new``) marked."""
    assert old in _GOOD
    body = _GOOD.replace(old, new)
    target = mark or new
    assert target in body
    return body.replace(target, target + "  # <-")


CASES = {
    "an f32 output": (
        _case("c: CUDASliceMut2D[f16]", "c: CUDASliceMut2D[f32]", STORE),
        "warpgroup_store()'s staging is for f16 and bf16 outputs"),
    "a plain shared array": (
        _case("    out = shared_array(f16, (2, 64, 64), swizzle=128)",
              "    out = shared_array(f16, (2, 64, 64))", STORE),
        "warpgroup_store()'s staging must be a swizzled shared array"),
    "another element type": (
        _case("    out = shared_array(f16, (2, 64, 64), swizzle=128)",
              "    out = shared_array(bf16, (2, 64, 64), swizzle=128)", STORE),
        "warpgroup_store()'s staging holds bf16, not dst's f16"),
    "a global array": (
        _case(STORE, "    warpgroup_store(c, (block_idx.x * 128 + wg * 64, 0), acc, c, (0, 0))"),
        "warpgroup_store()'s staging must be a shared_array"),
    "no staging_index": (
        _case(STORE, "    warpgroup_store(c, (block_idx.x * 128 + wg * 64, 0), acc, out)"),
        "warpgroup_store()'s staging needs its staging_index"),
    "a column inside a chunk": (
        _case("    out = shared_array(f16, (2, 64, 64), swizzle=128)",
              "    out = shared_array(f16, (2, 64, 128), swizzle=128)").replace(
            "  # <-", "").replace(STORE, STORE.replace("(wg, 0, 0)", "(wg, 0, 4)") + "  # <-"),
        "staging_index must start its column on a 16-byte chunk"),
    "one region for both warpgroups": (
        _case(STORE, STORE.replace("(wg, 0, 0)", "(0, 0, 0)")),
        "the 64 x 64 tiles of two warpgroups (or of two calls) may overlap"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_staging_misuse_is_a_located_transpile_error(name, tmp_path):
    body, message = CASES[name]
    located_transpile_error(HEADER + textwrap.dedent(body), tmp_path / "bad_staging.py", message)


def test_the_staged_store_is_proven_and_emitted_with_the_warpgroup_barrier(tmp_path):
    from gpu_native.expand import Expansion

    source = HEADER + textwrap.dedent(_GOOD)
    path = tmp_path / "good_staging.py"
    path.write_text(source)
    (kernel,) = rewrite_module(source, str(path), "good_staging").kernels
    cuda = kernel.variants[0].cuda
    # Pairs into the swizzled region, the warpgroup's own barrier, 16-byte chunks out (with the
    # element-by-element branch for an unaligned C), the barrier again.
    entries = cuda.count("__global__ void")      # the kernel and its 32-bit-index twin
    assert entries >= 1 and cuda.count("gn_warpgroup_barrier();") == 2 * entries
    assert "*(__half2*)&out[gn_swz128<64, 64>(" in cuda
    assert "*(uint4*)&__gn_p[" in cuda
    proofs = Expansion.of(source, str(path), "good_staging").proofs("k")
    assert "its staging tile in 'out': unique: a 64 x 64 tile per warpgroup" in proofs


def test_the_staged_store_matches_numpy_on_the_simulator(tmp_path, monkeypatch, sim):
    (tmp_path / "staged_k.py").write_text(HEADER + textwrap.dedent(_GOOD))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("staged_k")
    rng = np.random.default_rng(11)
    a = rng.standard_normal((256, 16)).astype(np.float16)
    b = rng.standard_normal((16, 64)).astype(np.float16)
    c = gn.to_device(np.full((256, 64), np.nan, np.float16))
    shared = (128 * 64 + 16 * 64 + 2 * 64 * 64) * 2 + 1024   # the swizzled arrays, aligned
    module.k.launch(gn.GridDim1D(2), gn.BlockDim1D(256), shared)(gn.to_device(a), gn.to_device(b),
                                                                 c)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = c.to_host().astype(np.float64)
    # One rounding to f16 of an exact f32 sum of 16 exact products.
    assert np.linalg.norm(got - want) <= 1e-3 * np.linalg.norm(want)


# The same product staged through a 2-D swizzled array (no leading index: the warpgroup picks
# its 64 rows), and with bf16 elements.
_TWO_D = (_GOOD.replace("    out = shared_array(f16, (2, 64, 64), swizzle=128)",
                        "    out = shared_array(f16, (128, 64), swizzle=128)")
          .replace("acc, out, (wg, 0, 0))", "acc, out, (wg * 64, 0))"))
_BF16 = _GOOD.replace("f16", "bf16")


@pytest.mark.slow
@pytest.mark.parametrize("body", [_GOOD, _TWO_D, _BF16], ids=["3-d", "2-d", "bf16"])
def test_the_staged_store_compiles_for_sm_90a(body, tmp_path):
    """NVRTC (on the CPU) builds every entry point of the staged store."""
    from gpu_native.build import BuildRequest
    from gpu_native.compiler.nvrtc import compile_request

    source = HEADER + textwrap.dedent(body)
    path = tmp_path / "staged_build.py"
    path.write_text(source)
    (spec,) = rewrite_module(source, str(path), "staged_build").kernels
    (variant,) = spec.variants
    image = compile_request(BuildRequest.for_variant(spec, variant, "sm_90"))
    assert (image.kind, image.target) == ("cubin", "sm_90a")
    assert variant.symbol.encode() in image.image


@pytest.mark.slow
@pytest.mark.parametrize("body", [_TWO_D, _BF16], ids=["2-d", "bf16"])
def test_the_other_staging_forms_match_numpy_on_the_simulator(body, tmp_path, monkeypatch, sim):
    name = "staged_2d" if body is _TWO_D else "staged_bf16"
    (tmp_path / f"{name}.py").write_text(HEADER + textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    bf16 = body is _BF16
    rng = np.random.default_rng(12)
    a = rng.standard_normal((256, 16)).astype(np.float32)
    b = rng.standard_normal((16, 64)).astype(np.float32)
    dtype = gn.bf16 if bf16 else gn.f16
    da, db = gn.to_device(a, dtype=dtype), gn.to_device(b, dtype=dtype)
    c = gn.to_device(np.full((256, 64), np.nan, np.float32), dtype=dtype)
    shared = (128 * 64 + 16 * 64 + 2 * 64 * 64) * 2 + 1024
    module.k.launch(gn.GridDim1D(2), gn.BlockDim1D(256), shared)(da, db, c)
    want = da.to_host().astype(np.float64) @ db.to_host().astype(np.float64)
    got = c.to_host().astype(np.float64)
    # One rounding to the 16-bit type: half an ulp (2^-11 f16, 2^-8 bf16).
    assert np.linalg.norm(got - want) <= (4e-3 if bf16 else 1e-3) * np.linalg.norm(want)


def test_staging_over_the_other_warpgroups_operand_is_a_race_on_the_simulator(
        tmp_path, monkeypatch, sim):
    """Each warpgroup stages in the rows of ``ta`` the other one's ``warpgroup_mma`` read: the
    regions are apart, so the checker accepts it, but nothing orders the other warpgroup's read
    before the writes (its wait retires its own group only): the race detector reports it."""
    body = _GOOD.replace(STORE, "    warpgroup_store(c, (block_idx.x * 128 + wg * 64, 0), acc, ta, "
                                "((1 - wg) * 64, 0))")
    (tmp_path / "staged_race.py").write_text(HEADER + textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("staged_race")
    a = gn.zeros((256, 16), gn.f16)
    b = gn.zeros((16, 64), gn.f16)
    c = gn.zeros((256, 64), gn.f16)
    shared = (128 * 64 + 16 * 64 + 2 * 64 * 64) * 2 + 1024
    with pytest.raises(gn.DeviceRaceError, match=r"data race on shared array ta\[") as found:
        module.k.launch(gn.GridDim1D(2), gn.BlockDim1D(256), shared)(a, b, c)
        c.to_host()
    mma = next(i for i, line in enumerate(body.splitlines(), 1) if "warpgroup_mma(" in line)
    assert f"staged_race.py:{mma + HEADER.count(chr(10))}" in str(found.value)


@pytest.mark.slow
def test_staging_written_none_is_the_store_without_staging(tmp_path):
    """``staging=None`` (the default the signature shows) is the direct store, not a staging
    region missing its index."""
    from gpu_native.expand import Expansion

    body = _GOOD.replace(STORE, "    warpgroup_store(c, (block_idx.x * 128 + wg * 64, 0), acc, "
                                "staging=None, staging_index=None)")
    source = HEADER + textwrap.dedent(body)
    path = tmp_path / "unstaged.py"
    path.write_text(source)
    (kernel,) = rewrite_module(source, str(path), "unstaged").kernels
    assert "gn_warpgroup_barrier" not in kernel.variants[0].cuda
    proofs = Expansion.of(source, str(path), "unstaged").proofs("k")
    assert "a 64 x 64 tile per warpgroup" in proofs and "staging tile" not in proofs
