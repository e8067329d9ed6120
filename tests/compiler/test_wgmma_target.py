"""Kernels that use warpgroup MMA build for sm_90a (arch-specific, not forward compatible):
the build request names it, NVRTC compiles it to an sm_90a cubin, and any other device is a
clear CompileError, not a wrong cubin or a crash."""

from __future__ import annotations

import sys

import pytest

from gpu_native.build import BuildRequest, wgmma_arch
from gpu_native.cache.keys import artifact_id
from gpu_native.compiler.nvrtc import compile_request
from gpu_native.errors import CompileError
from gpu_native.spec import Trait
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "examples" / "tensor_core"))


def _spec():
    import hgemm_tensor_core
    import hgemm_wgmma

    return hgemm_wgmma.hgemm_wgmma_kernel.spec, hgemm_tensor_core.hgemm_tc_kernel.spec


def test_the_trait_is_set_only_where_warpgroup_mma_is_used():
    wg, tc = _spec()
    assert all(Trait.USES_WGMMA in v.traits for v in wg.variants)
    assert not any(Trait.USES_WGMMA in v.traits for v in tc.variants)


def test_an_sm_90_device_builds_sm_90a_and_keys_apart_from_sm_90():
    wg, tc = _spec()
    request = BuildRequest.for_variant(wg, wg.variants[0], "sm_90")
    assert request.arch == "sm_90a"
    assert BuildRequest.for_variant(tc, tc.variants[0], "sm_90").arch == "sm_90"
    same_for_sm_90 = BuildRequest(request.source, request.symbol, "sm_90",
                                  uses_half=request.uses_half)
    assert artifact_id(request) != artifact_id(same_for_sm_90)


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_100", "sm_120"])
def test_another_device_is_a_clear_compile_error(arch):
    wg, _ = _spec()
    with pytest.raises(CompileError, match=f"only on sm_90 GPUs.*this device is {arch}"):
        BuildRequest.for_variant(wg, wg.variants[0], arch)
    assert wgmma_arch("sm_90a") == "sm_90a"


@pytest.mark.slow
def test_nvrtc_compiles_an_sm_90a_cubin_with_an_empty_log():
    wg, _ = _spec()
    image = compile_request(BuildRequest.for_variant(wg, wg.variants[0], "sm_90"))
    assert (image.kind, image.target) == ("cubin", "sm_90a")
    assert image.log.strip("\x00").strip() == ""   # no serialized wgmma, no warning
    assert image.image[:4] == b"\x7fELF"


def test_precompile_builds_a_wgmma_kernel_for_sm_90_only():
    from gpu_native.precompile import SourceModule, plan

    path = ROOT / "examples" / "tensor_core" / "hgemm_wgmma.py"
    jobs = plan([SourceModule(str(path), "hgemm_wgmma")], ["sm_80", "sm_90"])
    assert {j.request.arch for j in jobs} == {"sm_90a"}


@pytest.mark.slow
@pytest.mark.parametrize("staged", [True, False], ids=["staged", "from-fragments"])
def test_a_16_bit_output_keeps_the_wgmma_asynchronous(tmp_path, monkeypatch, staged):
    """A 16-bit ``warpgroup_store`` converts by pairs, into the staging region (the example) or
    straight to C: converted one element at a time, ptxas serialized every wgmma of the kernel
    (C7514 in the log), 8% slower on an H200."""
    import importlib

    source = (ROOT / "examples" / "tensor_core" / "hgemm_wgmma.py").read_text()
    assert "c: CUDASliceMut2D[T]" in source
    staging = ", tile_b, (wg, 0, 0))"
    assert staging in source
    name = f"wgmma_out16_{'staged' if staged else 'direct'}"
    (tmp_path / f"{name}.py").write_text(source if staged else source.replace(staging, ")"))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = importlib.import_module(name).hgemm_wgmma_kernel.spec
    for variant in spec.variants:
        image = compile_request(BuildRequest.for_variant(spec, variant, "sm_90"))
        assert image.log.strip("\x00").strip() == "", image.log
