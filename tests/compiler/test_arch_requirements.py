"""Kernels are built only for GPUs that have what they use: ``cp_async`` and ``mma_sync`` need
sm_80, ``ldmatrix`` sm_75, ``match_any`` sm_70 (the registry's ``arch``).  The variant names the
oldest architecture and its first use; a build for an older one is a CompileError that says
so, ``precompile`` leaves such kernels out of older archs with a note, and everything else
compiles for Turing (sm_75), the oldest GPU CUDA 13 supports, 16-bit code included."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpu_native.build import BuildRequest
from gpu_native.compiler.nvrtc import compile_request
from gpu_native.errors import CompileError, GpuNativeError
from gpu_native.lang import registry as R
from gpu_native.precompile import SourceModule, plan, precompile
from gpu_native.rewrite import transpile_module
from gpu_native.spec import KernelSpec

KERNELS = textwrap.dedent('''\
    from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut,
                            FlatLayout1D, BlockLayout1D, block_dim, shared_array, cp_async,
                            cp_async_commit, cp_async_wait, sync_threads, match_any, u32, f32)


    @gpu_kernel(Kernel1D)
    def plain(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = a[i] * 2.0


    @gpu_kernel(Kernel1D)
    def staged(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        assert block_dim.x == 32
        t = BlockLayout1D.uid()
        s = shared_array(f32, 32)
        i = FlatLayout1D.uid()
        cp_async(s, t, a, i, 4)
        cp_async_commit()
        cp_async_wait(0)
        sync_threads()
        c[i] = s[t]


    @gpu_device
    def peers(v: u32) -> u32:
        return match_any(v)


    @gpu_kernel(Kernel1D)
    def grouped(a: CUDASlice[u32], c: CUDASliceMut[u32]):
        i = FlatLayout1D.uid()
        c[i] = peers(a[i])
    ''')


def _line(text: str) -> int:
    return next(n for n, line in enumerate(KERNELS.splitlines(), 1) if text in line)


CP_ASYNC = _line("cp_async(s, t")
MATCH_ANY = _line("return match_any")


def _specs(tmp_path) -> tuple[dict[str, KernelSpec], Path]:
    path = tmp_path / "archk.py"
    path.write_text(KERNELS)
    return {k.name: k for k in transpile_module(KERNELS, str(path), "archk").kernels}, path


def test_the_registry_names_the_architectures():
    arch = {e.name: e.arch for e in R.ENTRIES if e.arch}
    assert arch == {"cp_async": 80, "cp_async_commit": 80, "cp_async_wait": 80,
                    "mma_sync": 80, "ldmatrix": 75, "match_any": 70, "match_all": 70,
                    "tma_load": 90, "tma_wait": 90}


def test_a_variant_names_its_oldest_architecture_and_first_use(tmp_path):
    specs, path = _specs(tmp_path)
    assert (specs["plain"].variants[0].min_arch, specs["plain"].variants[0].arch_use) == (0, "")
    staged = specs["staged"].variants[0]
    assert staged.min_arch == 80
    assert staged.arch_use == f"cp_async at {path}:{CP_ASYNC}"
    # Through a device function: the callee's use is the kernel's.
    grouped = specs["grouped"].variants[0]
    assert (grouped.min_arch, grouped.arch_use) == (70, f"match_any at {path}:{MATCH_ANY}")


def test_the_spec_literal_carries_them(tmp_path):
    specs, _ = _specs(tmp_path)
    again = KernelSpec.from_literal(specs["staged"].to_literal())
    assert again.variants[0].min_arch == 80
    assert again.variants[0].arch_use == specs["staged"].variants[0].arch_use


@pytest.mark.parametrize("arch", ["sm_75", "sm_70"])
def test_an_older_device_is_a_clear_compile_error(tmp_path, arch):
    specs, path = _specs(tmp_path)
    spec = specs["staged"]
    with pytest.raises(CompileError) as info:
        BuildRequest.for_variant(spec, spec.variants[0], arch)
    assert str(info.value) == (
        f"kernel archk.staged cannot be built for {arch}: it uses cp_async at {path}:{CP_ASYNC}, "
        "which only GPUs of sm_80 (compute capability 8.0) and newer have")
    assert BuildRequest.for_variant(spec, spec.variants[0], "sm_80").arch == "sm_80"
    assert BuildRequest.for_variant(spec, spec.variants[0], "sm_120").arch == "sm_120"


def test_precompile_leaves_a_kernel_out_of_older_archs_with_a_note(tmp_path):
    _, path = _specs(tmp_path)
    skipped: list[str] = []
    jobs = plan([SourceModule(str(path), "archk")], ["sm_75", "sm_80"], skipped)
    built = sorted((j.name, j.request.arch) for j in jobs)
    assert built == [("grouped", "sm_75"), ("grouped", "sm_80"), ("plain", "sm_75"),
                     ("plain", "sm_80"), ("staged", "sm_80")]
    assert skipped == [f"archk.staged was not built for sm_75: it uses cp_async at {path}:{CP_ASYNC}, "
                       "which needs sm_80 or newer"]


def test_precompile_with_nothing_to_build_says_why(tmp_path):
    path = tmp_path / "onlynew.py"
    head = KERNELS[:KERNELS.index("@gpu_kernel(Kernel1D)\ndef plain")]
    staged = KERNELS[KERNELS.index("@gpu_kernel(Kernel1D)\ndef staged"):
                     KERNELS.index("@gpu_device")]
    path.write_text(head + staged)
    with pytest.raises(GpuNativeError, match=r"nothing to build for sm_75: onlynew.staged was "
                                             r"not built for sm_75: it uses cp_async at "):
        precompile([str(path)], ["sm_75"], str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


SIXTEEN_BIT = textwrap.dedent('''\
    from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f16,
                            bf16, vec2h, vec2bf, fma)


    @gpu_kernel(Kernel1D)
    def half_ops(x: CUDASlice[f16], y: CUDASliceMut[f16]):
        i = FlatLayout1D.uid()
        y[i] = x[i] * x[i] + x[i] / f16(3.0)


    @gpu_kernel(Kernel1D)
    def bf16_ops(x: CUDASlice[bf16], y: CUDASliceMut[bf16]):
        i = FlatLayout1D.uid()
        y[i] = x[i] * x[i] + x[i] / bf16(3.0)


    @gpu_kernel(Kernel1D)
    def pairs(a: CUDASlice[vec2h], b: CUDASlice[vec2bf], c: CUDASliceMut[vec2h],
              d: CUDASliceMut[vec2bf]):
        i = FlatLayout1D.uid()
        c[i] = fma(a[i], a[i], a[i]) - a[i] / a[i]
        d[i] = fma(b[i], b[i], b[i]) - b[i] / b[i]
    ''')


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_75", "sm_80"])
def test_16_bit_kernels_compile_for_turing(tmp_path, arch):
    """The bf16 pairs' fma is sm_80's instruction; below it the prelude computes each lane
    through f32 (as CUDA's headers do the other bf16 pair operations there), where it once
    left every 16-bit kernel uncompilable for sm_75."""
    path = tmp_path / "sixteen.py"
    path.write_text(SIXTEEN_BIT)
    for spec in transpile_module(SIXTEEN_BIT, str(path), "sixteen").kernels:
        for variant in spec.variants:
            image = compile_request(BuildRequest.for_variant(spec, variant, arch))
            assert image.kind == "cubin" and image.target == arch
            assert image.log.strip("\x00").strip() == ""
