"""CUDA 12 and CUDA 13: what the driver can load, which NVRTC and headers go with which bindings.

The decision is a pure function of version numbers (:mod:`gpu_native.toolkit`), tested here over
version tables with no GPU; the NVRTC selection is tested with wheel layouts made in a temporary
directory, and once with the real NVRTC in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from gpu_native import toolkit
from gpu_native.cache import nvrtc_probe
from gpu_native.errors import CompileError, CudaVersionError

# nvrtcGetSupportedArchs of real NVRTC versions.
NVRTC_12_8 = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120)
NVRTC_12_9 = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121)
NVRTC_13_0 = (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121)


class TestVersions:
    @pytest.mark.parametrize("value, version", [(12040, (12, 4)), (12090, (12, 9)),
                                                (13000, (13, 0)), (13050, (13, 5)),
                                                (11080, (11, 8))])
    def test_driver_version_integers(self, value, version):
        assert toolkit.version_from_driver(value) == version

    def test_parse_and_print(self):
        assert toolkit.parse_version("13.5") == (13, 5)
        assert toolkit.version_text((12, 4)) == "12.4"
        for bad in ("13", "13.x", "", "v13.5"):
            with pytest.raises(ValueError, match="invalid CUDA version"):
                toolkit.parse_version(bad)


class TestLoadableKinds:
    @pytest.mark.parametrize("nvrtc, driver, kinds", [
        ((13, 5), (13, 5), ("cubin", "ptx")),
        ((13, 0), (13, 5), ("cubin", "ptx")),   # an older NVRTC: backward compatibility
        ((12, 9), (13, 0), ("cubin", "ptx")),   # CUDA 12 code on an R580 driver
        ((13, 5), (13, 0), ("cubin",)),         # minor version compatibility covers cubins only
        ((12, 9), (12, 4), ("cubin",)),         # NVRTC 12.9 on R550
        ((12, 9), (12, 2), ("cubin",)),         # ... and on R535
        ((13, 0), (12, 9), ()),                 # CUDA 13 code on R575: nothing loads
        ((13, 5), (12, 4), ()),
        ((12, 0), (11, 8), ()),
        ((13, 5), None, ("cubin", "ptx")),      # driver unknown (precompiling for elsewhere)
    ])
    def test_table(self, nvrtc, driver, kinds):
        assert toolkit.loadable_kinds(nvrtc, driver) == kinds


class TestChooseTarget:
    @pytest.mark.parametrize("arch, nvrtc, supported, driver, expected", [
        ("sm_90", (13, 5), NVRTC_13_0, (13, 0), ("sm_90", "cubin")),
        ("sm_90", (12, 9), NVRTC_12_9, (12, 4), ("sm_90", "cubin")),
        ("sm_80", (12, 9), NVRTC_12_9, (13, 0), ("sm_80", "cubin")),
        ("sm_70", (12, 9), NVRTC_12_9, (12, 2), ("sm_70", "cubin")),
        ("sm_90a", (12, 9), NVRTC_12_9, (12, 4), ("sm_90a", "cubin")),
        # A GPU newer than NVRTC knows, of a family it knows: cubin of that family, even where
        # the driver could not compile this NVRTC's PTX.
        ("sm_121", (12, 8), NVRTC_12_8, (12, 9), ("sm_120", "cubin")),
        ("sm_121", (12, 8), NVRTC_12_8, (12, 4), ("sm_120", "cubin")),
        ("sm_89", (12, 9), (80, 86, 90), (12, 9), ("sm_86", "cubin")),
        # A family NVRTC does not know: PTX of its newest arch, for a driver as new as NVRTC.
        ("sm_150", (13, 0), NVRTC_13_0, (13, 2), ("compute_121", "ptx")),
        ("sm_150", (13, 0), NVRTC_13_0, (13, 0), ("compute_121", "ptx")),
        ("sm_150", (13, 0), NVRTC_13_0, None, ("compute_121", "ptx")),
        ("sm_150a", (13, 0), NVRTC_13_0, None, ("compute_121", "ptx")),
        # Driver unknown (gpu-native precompile): what NVRTC produces for the arch.
        ("sm_90", (13, 5), NVRTC_13_0, None, ("sm_90", "cubin")),
    ])
    def test_loadable_targets(self, arch, nvrtc, supported, driver, expected):
        assert toolkit.choose_target(arch, nvrtc, supported, driver) == expected

    @pytest.mark.parametrize("nvrtc, driver", [((13, 5), (12, 4)), ((13, 0), (12, 9)),
                                               ((13, 0), (12, 2))])
    def test_cuda_13_nvrtc_on_a_cuda_12_driver_names_both_versions_and_the_extra(self, nvrtc,
                                                                                 driver):
        with pytest.raises(CudaVersionError) as info:
            toolkit.choose_target("sm_90", nvrtc, NVRTC_13_0, driver)
        message = str(info.value)
        assert f"NVRTC {toolkit.version_text(nvrtc)}" in message
        assert f"CUDA {toolkit.version_text(driver)}" in message
        assert "R580" in message
        assert "pip install 'gpu-native[cu12]'" in message
        assert isinstance(info.value, CompileError)  # callers that catch compile errors see it

    def test_a_driver_older_than_cuda_12_is_told_to_upgrade(self):
        with pytest.raises(CudaVersionError) as info:
            toolkit.choose_target("sm_80", (12, 9), NVRTC_12_9, (11, 4))
        message = str(info.value)
        assert "NVRTC 12.9" in message and "CUDA 11.4" in message and "R525" in message
        assert "Upgrade the NVIDIA driver" in message and "gpu-native[cu" not in message

    def test_ptx_newer_than_the_driver_is_refused(self):
        with pytest.raises(CudaVersionError, match=r"cannot compile PTX from NVRTC 13\.5") as info:
            toolkit.choose_target("sm_150", (13, 5), NVRTC_13_0, (13, 0))
        assert "CUDA 13.0" in str(info.value)

    def test_gpu_dropped_by_cuda_13_is_pointed_at_cuda_12(self):
        with pytest.raises(CompileError, match="cannot compile for sm_70") as info:
            toolkit.choose_target("sm_70", (13, 0), NVRTC_13_0, (13, 0))
        assert "pip install 'gpu-native[cu12]'" in str(info.value)
        assert not isinstance(info.value, CudaVersionError)

    def test_gpu_older_than_cuda_12_supports(self):
        with pytest.raises(CompileError, match=r"cannot compile for sm_35 \(use an older NVRTC"):
            toolkit.choose_target("sm_35", (12, 9), NVRTC_12_9, (12, 9))

    @pytest.mark.parametrize("arch", ["90", "sm_090", "sm_08", "sm_9", "sm_1000", "SM_80"])
    def test_invalid_arch(self, arch):
        # sm_090 passed and failed inside NVRTC, blamed on the kernel being compiled.
        with pytest.raises(ValueError, match=f"invalid GPU architecture '{arch}'"):
            toolkit.choose_target(arch, (13, 0), NVRTC_13_0, (13, 0))


class TestUnloadableReason:
    @pytest.mark.parametrize("kind, built_by, driver, loads", [
        ("cubin", (13, 5), (13, 0), True),
        ("ptx", (13, 5), (13, 0), False),
        ("ptx", (13, 0), (13, 5), True),
        ("cubin", (13, 0), (12, 9), False),
        ("cubin", (12, 9), (12, 4), True),
        ("cubin", (12, 9), (13, 0), True),
        ("ptx", (13, 5), None, True),
    ])
    def test_table(self, kind, built_by, driver, loads):
        reason = toolkit.unloadable_reason(kind, built_by, driver)
        assert (reason is None) == loads
        if not loads:
            assert toolkit.version_text(built_by) in reason
            assert toolkit.version_text(driver) in reason


def _wheel_tree(root, *parts):
    path = root.joinpath(*parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


class TestWhichNvrtc:
    """NVRTC and headers of one CUDA major, found where the NVIDIA wheels put them."""

    @pytest.fixture
    def both(self, tmp_path, monkeypatch):
        """A site-packages holding the CUDA 12 and the CUDA 13 NVRTC and runtime headers (and
        nothing else on ``sys.path``: modules the test needs are imported at the top)."""
        files = {
            "nvrtc13": _wheel_tree(tmp_path, "nvidia", "cu13", "lib", "libnvrtc.so.13"),
            "nvrtc12": _wheel_tree(tmp_path, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12"),
            "fp16_13": _wheel_tree(tmp_path, "nvidia", "cu13", "include", "cuda_fp16.h"),
            "fp16_12": _wheel_tree(tmp_path, "nvidia", "cuda_runtime", "include", "cuda_fp16.h"),
        }
        monkeypatch.setattr(sys, "path", [str(tmp_path)])
        monkeypatch.setattr(sys, "platform", "linux")
        return files

    def test_each_major_finds_its_own(self, both):
        assert toolkit.nvrtc_library(12) == str(both["nvrtc12"])
        assert toolkit.nvrtc_library(13) == str(both["nvrtc13"])
        assert toolkit.nvrtc_library(11) is None
        assert toolkit.cudart_headers(12) == str(both["fp16_12"].parent)
        assert toolkit.cudart_headers(13) == str(both["fp16_13"].parent)
        assert toolkit.any_nvrtc_library() == str(both["nvrtc13"])  # cuda.pathfinder's order

    def test_the_probe_fingerprints_the_nvrtc_of_the_bindings_major(self, both, monkeypatch):
        monkeypatch.setattr(toolkit, "bindings_major", lambda: 12)
        assert nvrtc_probe.locate_library() == str(both["nvrtc12"])
        monkeypatch.setattr(toolkit, "bindings_major", lambda: 13)
        assert nvrtc_probe.locate_library() == str(both["nvrtc13"])
        os.unlink(both["nvrtc13"])  # no NVRTC of the bindings' major: the one there is
        assert nvrtc_probe.locate_library() == str(both["nvrtc12"])
        monkeypatch.setattr(toolkit, "bindings_major", lambda: None)
        assert nvrtc_probe.locate_library() == str(both["nvrtc12"])

    def test_headers_report_their_cuda_major(self, tmp_path):
        (tmp_path / "cuda_runtime_api.h").write_text("/* ... */\n#define CUDART_VERSION  12090\n")
        assert toolkit.cudart_headers_major(str(tmp_path)) == 12
        (tmp_path / "cuda_runtime_api.h").write_text("#define CUDART_VERSION 13050\n")
        assert toolkit.cudart_headers_major(str(tmp_path)) == 13
        assert toolkit.cudart_headers_major(str(tmp_path / "missing")) is None

    def test_bindings_version(self):
        version = toolkit.bindings_version()
        if version is None:
            pytest.skip("cuda-bindings is not installed")
        assert toolkit.bindings_major() == int(version.split(".")[0])
        assert toolkit.bindings_major() in toolkit.SUPPORTED_MAJORS


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="wheel layout of Linux")
def test_compiler_loads_the_nvrtc_of_the_bindings_major_from_sys_path(tmp_path):
    """The NVRTC wheel of cuda-bindings' major is loaded before cuda.pathfinder searches: a copy of
    it on PYTHONPATH, where cuda.pathfinder does not look (it searches site-packages), is the one
    NVRTC runs from."""
    pytest.importorskip("gpu_native.compiler.nvrtc")
    major = toolkit.bindings_major()
    real = toolkit.nvrtc_library(major) if major else None
    if real is None:
        pytest.skip("no NVRTC wheel of cuda-bindings' CUDA major here")
    layout = os.path.relpath(real, os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(real)))))  # nvidia/<pkg>/lib/libnvrtc.so.N
    shadow = tmp_path / "site"
    copy = shadow / layout
    copy.parent.mkdir(parents=True)
    os.symlink(real, copy)  # another file name, the same library
    for name in os.listdir(os.path.dirname(real)):  # NVRTC opens its builtins beside itself
        if name.startswith("libnvrtc-builtins"):
            os.symlink(os.path.join(os.path.dirname(real), name), copy.parent / name)
    script = textwrap.dedent('''\
        import json
        from gpu_native.compiler import nvrtc
        print(json.dumps({"library": nvrtc.library_path(), "version": nvrtc.nvrtc_version()}))
        ''')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(shadow), str(toolkit.__file__).rsplit(os.sep, 2)[0]]))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    found = json.loads(out.stdout)
    assert found["library"] == str(copy), found
    assert found["version"][0] == major


def test_half_headers_of_another_cuda_major_than_nvrtc_are_refused(tmp_path, monkeypatch):
    """cuda_fp16.h comes from the runtime wheel of NVRTC's major; headers of the other major (all
    that cuda.pathfinder found) are a clear error, not NVRTC failing inside them."""
    nvrtc = pytest.importorskip("gpu_native.compiler.nvrtc")
    pathfinder = pytest.importorskip("cuda.pathfinder")
    major = nvrtc.nvrtc_version()[0]
    other = 12 if major == 13 else 13
    (tmp_path / "cuda_fp16.h").write_text("")
    (tmp_path / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION {other}050\n")
    monkeypatch.setattr(toolkit, "cudart_headers", lambda wanted: None)
    monkeypatch.setattr(pathfinder, "find_nvidia_header_directory", lambda name: str(tmp_path))
    nvrtc.half_include_dir.cache_clear()
    try:
        with pytest.raises(CompileError) as info:
            nvrtc.half_include_dir()
        message = str(info.value)
        assert f"are CUDA {other}'s" in message and str(tmp_path) in message
        assert f"pip install 'gpu-native[cu{major}]'" in message
        (tmp_path / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION {major}050\n")
        nvrtc.half_include_dir.cache_clear()
        assert nvrtc.half_include_dir() == str(tmp_path)
    finally:
        nvrtc.half_include_dir.cache_clear()
