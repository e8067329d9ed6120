"""NVRTC compilation of generated kernels (CPU only: NVRTC needs no GPU)."""

from __future__ import annotations

import textwrap

import pytest

from gpu_native.cache import BuildRequest
from gpu_native.errors import CompileError, TranspileError
from gpu_native.nodes import replace
from gpu_native.rewrite import transpile_module

nvrtc = pytest.importorskip("gpu_native.compiler.nvrtc")

MYKERNELS = textwrap.dedent('''\
    from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId,
                            GridDim1D, BlockDim1D, DEFAULT_STREAM, f32)

    @gpu_kernel(Kernel1D)
    def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + b[idx]
    ''')

HELPERS = textwrap.dedent('''\
    from gpu_native import gpu_device, f32


    @gpu_device
    def scale(x: f32) -> f32:
        return x * 2.0
    ''')

VARIOUS = textwrap.dedent('''\
    from typing import TypeVar

    from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D,
                            UniqueId, f16, f32, f64)
    from pkg.helpers import scale

    T = TypeVar("T", f32, f64)


    @gpu_kernel(Kernel1D)
    def scaled(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = scale(a[idx])


    @gpu_kernel(Kernel1D, fastmath=True)
    def twice(a: CUDASlice[T], c: CUDASliceMut[T]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + a[idx]


    @gpu_kernel(Kernel1D)
    def half_sum(a: CUDASlice[f16], c: CUDASliceMut[f16]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + a[idx]
    ''')


def _requests(tmp_path, arch: str) -> list[BuildRequest]:
    (tmp_path / "mykernels.py").write_text(MYKERNELS)
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "various.py").write_text(VARIOUS)
    requests = []
    for path, name in ((tmp_path / "mykernels.py", "mykernels"),
                       (pkg / "various.py", "pkg.various")):
        module = transpile_module(path.read_text(), str(path), name)
        for kernel in module.kernels:
            requests += [BuildRequest.for_variant(kernel, v, arch, str(path))
                         for v in kernel.variants]
    return requests


@pytest.fixture(scope="module")
def add_request(tmp_path_factory) -> BuildRequest:
    directory = tmp_path_factory.mktemp("add")
    (directory / "mykernels.py").write_text(MYKERNELS)
    module = transpile_module(MYKERNELS, str(directory / "mykernels.py"), "mykernels")
    spec = module.kernels[0]
    return BuildRequest.for_variant(spec, spec.variants[0], "sm_90")


class TestCompile:
    @pytest.mark.slow
    @pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
    def test_generated_kernels_compile_to_cubin_without_warnings(self, tmp_path, arch):
        requests = _requests(tmp_path, arch)
        labels = {r.label for r in requests}
        assert labels == {"mykernels.add_kernel", "pkg.various.scaled",
                          "pkg.various.twice[T=f32]", "pkg.various.twice[T=f64]",
                          "pkg.various.half_sum"}
        for request in requests:
            result = nvrtc.compile_request(request)
            assert result.kind == "cubin"
            assert result.target == arch
            assert result.image[:4] == b"\x7fELF"
            assert result.log == "", f"{request.label}: {result.log}"

    def test_options(self, add_request):
        base = nvrtc.nvrtc_options(add_request, "sm_90")
        assert base == ["--gpu-architecture=sm_90", "-lineinfo", "-std=c++17"]
        tuned = BuildRequest(add_request.source, add_request.symbol, "sm_90", fastmath=True,
                             max_registers=32, uses_half=True)
        options = nvrtc.nvrtc_options(tuned, "sm_90")
        assert "--use_fast_math" in options
        assert "--maxrregcount=32" in options
        assert any(o.startswith("-I") and o.endswith("include") for o in options)

    def test_fastmath_and_register_cap_compile(self, add_request):
        tuned = BuildRequest(add_request.source, add_request.symbol, "sm_80", fastmath=True,
                             max_registers=32)
        result = nvrtc.compile_request(tuned)
        assert result.kind == "cubin" and result.log == ""
        assert "--maxrregcount=32" in result.options

    def test_nvrtc_error_names_the_python_line(self, add_request):
        marker = '#line 7 "mykernels.py"\n'
        assert marker in add_request.source
        broken = add_request.source.replace(marker, marker + "    this_is_not_cuda = ;\n", 1)
        request = BuildRequest(broken, add_request.symbol, "sm_90",
                               label="mykernels.add_kernel")
        with pytest.raises(CompileError) as info:
            nvrtc.compile_request(request)
        assert "mykernels.py(7)" in str(info.value)
        assert "mykernels.py(7)" in info.value.log
        assert "mykernels.add_kernel" in str(info.value)
        assert "sm_90" in str(info.value)

    @pytest.mark.slow
    @pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
    def test_static_shared_memory_up_to_the_48_kib_the_transpiler_allows(self, arch):
        # The transpiler's limit and layout (gpu_native.ir.static_shared_bytes: each array
        # aligned to 16 bytes) are ptxas's: exactly 48 KiB compiles; 16 bytes more, or 4 bytes
        # more after an array whose end is not aligned, do not, and the transpiler refuses both.
        template = textwrap.dedent("""\
            from gpu_native import (gpu_kernel, Kernel1D, CUDASliceMut, BlockLayout1D,
                                    FlatLayout1D, f32, i32, shared_array, sync_threads)

            @gpu_kernel(Kernel1D)
            def full(out: CUDASliceMut[f32]):
                big = shared_array(f32, BIG)
                small = shared_array(i32, SMALL)
                t = BlockLayout1D.uid()
                i = FlatLayout1D.uid()
                big[t] = 1.0
                if t < SMALL:
                    small[t] = 7
                sync_threads()
                out[i] = big[BIG - 1 - t] + f32(small[t % SMALL])
            """)

        def request(big: int, small: int) -> BuildRequest:
            source = template.replace("BIG", str(big)).replace("SMALL", str(small))
            spec = transpile_module(source, "full.py", "full").kernels[0]
            return BuildRequest.for_variant(spec, spec.variants[0], arch)

        fits = request(12284, 4)
        result = nvrtc.compile_request(fits)
        assert result.kind == "cubin" and result.log == ""
        for (big, small), ptxas in (((12284, 8), "0xc010"), ((12287, 1), "0xc004")):
            with pytest.raises(TranspileError, match=f"to {int(ptxas, 16)} bytes"):
                request(big, small)
            if nvrtc.nvrtc_version() < (12, 8):
                continue  # ptxas checks the limit from CUDA 12.8 on (12.4 and 12.6 do not)
            over = replace(fits, source=fits.source.replace("[12284];", f"[{big}];").replace(
                "[4];", f"[{small}];"))
            with pytest.raises(CompileError, match=rf"too much shared data \({ptxas} bytes, "
                               r"0xc000 max\)"):
                nvrtc.compile_request(over)

class TestArchitectures:
    def test_version_and_supported_archs(self):
        major, minor = nvrtc.nvrtc_version()
        assert major >= 12 and minor >= 0
        archs = nvrtc.supported_archs()
        assert 80 in archs and 90 in archs
        assert list(archs) == sorted(archs)

    def test_newer_gpu_than_nvrtc_gets_ptx_for_newest_known_arch(self, add_request):
        newest = nvrtc.supported_archs()[-1]
        future = BuildRequest(add_request.source, add_request.symbol, f"sm_{newest + 100}")
        result = nvrtc.compile_request(future)
        assert result.kind == "ptx"
        assert result.target == f"compute_{newest}"
        assert result.image.endswith(b"\0")  # cuModuleLoadData wants NUL-terminated PTX
        assert f".target sm_{newest}".encode() in result.image
        assert "-lineinfo" in result.options

    def test_arch_dropped_by_nvrtc_is_a_compile_error(self, add_request):
        oldest = nvrtc.supported_archs()[0]
        old = BuildRequest(add_request.source, add_request.symbol, f"sm_{oldest - 5}")
        with pytest.raises(CompileError, match="cannot compile for"):
            nvrtc.compile_request(old)

    @pytest.mark.parametrize("arch", ["90", "sm90", "compute_90", "sm_9", "sm_../x"])
    def test_invalid_arch_names(self, add_request, arch):
        with pytest.raises(ValueError, match="invalid GPU architecture"):
            nvrtc.compile_request(BuildRequest(add_request.source, add_request.symbol, arch))
