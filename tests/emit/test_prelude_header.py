"""The CUDA prelude is a real header, ``gpu_native/include/gpu_native/prelude.cuh``: generated
translation units include it by name, NVRTC is handed the text :mod:`gpu_native.headers` read (the
text the cache keys hash), the package ships it, and ``gpu-native expand --prelude`` prints it."""

from __future__ import annotations

import glob
import os
import sys
import textwrap
from pathlib import Path

import pytest

from gpu_native import cli, headers
from gpu_native.cache import BuildRequest
from gpu_native.errors import CompileError, GpuNativeError
from gpu_native.rewrite import transpile_module
from gpu_native.spec import Trait
from tests.helpers import ROOT

KERNELS = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f16, i32

    @gpu_kernel(Kernel1D)
    def floors(a: CUDASlice[i32], b: CUDASliceMut[i32]):
        i = FlatLayout1D.uid()
        b[i] = a[i] // 3 + min(a[i], 7)

    @gpu_kernel(Kernel1D)
    def halves(a: CUDASlice[f16], b: CUDASliceMut[f16]):
        i = FlatLayout1D.uid()
        b[i] = a[i] * a[i]
    ''')

INCLUDE = f'#include "{headers.PRELUDE}"'


def edited_include_dir(root: Path, edit) -> str:
    """An include directory holding the prelude as ``edit(text)`` makes it."""
    directory = root / "include"
    (directory / "gpu_native").mkdir(parents=True)
    (directory / "gpu_native" / "prelude.cuh").write_text(edit(headers.header_text()))
    return str(directory)


@pytest.fixture(scope="module")
def variants():
    module = transpile_module(KERNELS, "halfkernels.py", "halfkernels")
    return {k.name: (k, next(iter(k.variants))) for k in module.kernels}


class TestGeneratedSource:
    def test_translation_units_include_the_header_after_their_kernel_id(self, variants):
        for kernel, variant in variants.values():
            lines = variant.cuda.splitlines()
            assert lines[1].startswith("#define GN_KERNEL_ID 0x")
            assert lines.count(INCLUDE) == 1
            # The half headers, when used, still come first; the prelude's text is not pasted in.
            expected = 4 if Trait.USES_HALF in variant.traits else 2
            assert lines.index(INCLUDE) == expected, kernel.name
            assert "struct gn_error_record" not in variant.cuda

    def test_the_header_defines_what_generated_code_calls(self):
        text = headers.header_text()
        assert text.startswith("/*") and "#ifndef GPU_NATIVE_PRELUDE_CUH" in text
        assert text.rstrip().endswith("#endif /* GPU_NATIVE_PRELUDE_CUH */")
        for name in ("struct gn_error_record", "gn_chk(", "gn_floordiv(", "gn_fdiv(", "gn_min("):
            assert name in text, name

    def test_a_missing_header_is_a_clear_error(self, tmp_path, monkeypatch):
        monkeypatch.setattr(headers, "INCLUDE_DIR", str(tmp_path))
        with pytest.raises(GpuNativeError, match=r"prelude\.cuh cannot be read .*reinstall"):
            headers.header_text()


class TestPackaging:
    def test_package_data_ships_every_header_and_matches_only_real_files(self):
        tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
        config = tomllib.loads((ROOT / "pyproject.toml").read_text())
        patterns = config["tool"]["setuptools"]["package-data"]["gpu_native"]
        package = ROOT / "gpu_native"
        matched = {os.path.normpath(p) for pattern in patterns
                   for p in glob.glob(str(package / pattern))}
        for pattern in patterns:
            assert glob.glob(str(package / pattern)), f"{pattern} matches no file"
        for name in headers.SHIPPED:
            assert os.path.normpath(headers.header_path(name)) in matched, name
        assert headers.header_path().startswith(str(package))


class TestNvrtc:
    nvrtc = pytest.importorskip("gpu_native.compiler.nvrtc")

    def _request(self, variants, name: str) -> BuildRequest:
        kernel, variant = variants[name]
        return BuildRequest(variant.cuda, variant.symbol, "sm_90", label=kernel.name,
                            uses_half=Trait.USES_HALF in variant.traits)

    def test_kernels_compile_with_the_header_and_no_include_directory_of_ours(self, variants):
        for name in ("floors", "halves"):
            request = self._request(variants, name)
            result = self.nvrtc.compile_request(request)
            assert result.kind == "cubin" and result.log == ""
            # Only the CUDA runtime's half headers come from a directory; ours is in memory.
            assert not any(headers.INCLUDE_DIR in o for o in result.options), result.options

    def test_nvrtc_compiles_the_text_the_headers_module_read(self, variants, tmp_path,
                                                             monkeypatch):
        monkeypatch.setattr(headers, "INCLUDE_DIR", edited_include_dir(
            tmp_path, lambda t: t.replace("#define GPU_NATIVE_PRELUDE_CUH\n",
                                          '#define GPU_NATIVE_PRELUDE_CUH\n#error "edited"\n')))
        with pytest.raises(CompileError) as info:
            self.nvrtc.compile_request(self._request(variants, "floors"))
        # The message names the header by its include name, not by where it is installed.
        assert f"{headers.PRELUDE}(" in info.value.log and '"edited"' in info.value.log
        assert str(tmp_path) not in info.value.log

    def test_the_header_needs_a_kernel_id_and_has_an_include_guard(self):
        body = 'extern "C" __global__ void k(gn_error_record* r) { gn_assert(r, false, 1); }\n'
        twice = BuildRequest(f"#define GN_KERNEL_ID 1ull\n{INCLUDE}\n{INCLUDE}\n{body}", "k",
                             "sm_90")
        assert self.nvrtc.compile_request(twice).log == ""
        without_id = BuildRequest(f"{INCLUDE}\n{body}", "k", "sm_90")
        with pytest.raises(CompileError, match="define GN_KERNEL_ID"):
            self.nvrtc.compile_request(without_id)


class TestExpand:
    def test_expand_prelude_prints_the_header(self, capsys):
        assert cli.main(["expand", "--prelude"]) == 0
        assert capsys.readouterr().out == headers.header_text()

    def test_expand_without_a_file_says_what_to_give(self, capsys):
        with pytest.raises(SystemExit, match="give a FILE, or --prelude"):
            cli.main(["expand"])

    def test_expand_cuda_shows_the_include_not_the_header(self, tmp_path, capsys):
        path = tmp_path / "halfkernels.py"
        path.write_text(KERNELS)
        assert cli.main(["expand", str(path), "--cuda", "--kernel", "floors"]) == 0
        out = capsys.readouterr().out
        assert INCLUDE in out.splitlines() and "struct gn_error_record" not in out
