"""CUDA 12 and CUDA 13 side by side: the cache never hands one NVRTC's kernel to a process using
another, no artifact the driver cannot load is loaded, compiles refuse what the driver cannot load,
``gpu-native doctor`` says which CUDA major built what, and the packaging's extras agree.

The driver is given as ``BuildRequest.driver_version`` (what the CUDA backend passes), so all of
this runs without a GPU, with the NVRTC installed here (12.x or 13.x).
"""

from __future__ import annotations

import os
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from gpu_native import cli, toolkit
from gpu_native.cache import (
    ArtifactStore,
    BuildRequest,
    CacheWarning,
    artifact_id,
    cache_key,
    clear_memory_cache,
    find_or_build,
    nvrtc_probe,
    user_store,
)
from gpu_native.errors import CudaVersionError, MissingArtifactError
from gpu_native.nodes import replace
from gpu_native.rewrite import transpile_module

nvrtc = pytest.importorskip("gpu_native.compiler.nvrtc")

ROOT = Path(__file__).resolve().parents[2]
KERNEL = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId, f32


    @gpu_kernel(Kernel1D)
    def twice(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] * 2.0
    ''')


def _nvrtc() -> tuple[int, int]:
    return nvrtc.nvrtc_version()


def _driver(major: int, minor: int) -> int:
    return major * 1000 + minor * 10


def _older_major_driver() -> int:
    """A driver of the CUDA major before this NVRTC's (R550, CUDA 12.4, for NVRTC 13)."""
    return _driver(_nvrtc()[0] - 1, 4)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("GPU_NATIVE_"):
            monkeypatch.delenv(name)
    cache = tmp_path / "cache"
    monkeypatch.setenv("GPU_NATIVE_CACHE_DIR", str(cache))
    clear_memory_cache()
    yield cache
    clear_memory_cache()


@pytest.fixture(scope="module")
def request_sm90(tmp_path_factory) -> BuildRequest:
    path = tmp_path_factory.mktemp("src") / "twice.py"
    path.write_text(KERNEL)
    kernel = transpile_module(KERNEL, str(path), "twice").kernels[0]
    return BuildRequest.for_variant(kernel, kernel.variants[0], "sm_90", str(path))


class TestCacheKeys:
    def test_the_key_holds_the_nvrtc_version_and_so_its_cuda_major(self, request_sm90):
        identity = artifact_id(request_sm90)
        keys = {cache_key(identity, v) for v in ("12.8", "12.9", "13.0", "13.5")}
        assert len(keys) == 4
        # The driver a request is for is not part of any key: precompiled directories are
        # indexed by the artifact id on every machine.
        assert artifact_id(replace(request_sm90, driver_version=12040)) == identity

    def test_an_entry_records_the_nvrtc_and_bindings_that_built_it(self, request_sm90):
        artifact = find_or_build(request_sm90)
        assert artifact.origin == "compiled"
        meta = user_store()._own_sidecar(artifact.key)
        assert meta["nvrtc"] == "{}.{}".format(*_nvrtc())
        assert meta["bindings"] == toolkit.bindings_version()
        assert artifact.key == cache_key(artifact_id(request_sm90), meta["nvrtc"])

    def test_a_kernel_from_one_nvrtc_is_never_filed_under_another_nvrtcs_key(self,
                                                                             request_sm90):
        """The version record may name another NVRTC than the one that compiles (another library
        loaded an NVRTC into the process first): the kernel goes under the key of the NVRTC that
        really built it, so a process whose NVRTC is of another CUDA major never finds it."""
        real = "{}.{}".format(*_nvrtc())
        other = "12.9" if real.startswith("13.") else "13.5"
        identity = artifact_id(request_sm90)
        nvrtc_probe.forget()
        nvrtc_probe.remember(other)  # what the record said
        artifact = find_or_build(request_sm90)
        assert artifact.origin == "compiled"
        assert artifact.key == cache_key(identity, real)
        store = user_store()
        assert store.get(cache_key(identity, other)) is None
        assert store.get(cache_key(identity, real)).meta["nvrtc"] == real
        # and from then on this process keys by the NVRTC it really uses
        assert nvrtc_probe.version_for_keys(None) == real

    @pytest.mark.slow
    def test_a_process_with_another_nvrtc_does_not_find_the_kernel(self, request_sm90):
        built = find_or_build(request_sm90)
        clear_memory_cache()
        real = "{}.{}".format(*_nvrtc())
        nvrtc_probe.remember("12.9" if real.startswith("13.") else "13.5")
        again = find_or_build(request_sm90)
        assert again.origin == "compiled" and again.key == built.key


def _write_entry(store: ArtifactStore, key: str, image: bytes, kind: str, nvrtc: str) -> None:
    store.write(key, image, kind, {"nvrtc": nvrtc, "gpu_native": "test"})


class TestWhatTheDriverCanLoad:
    def test_a_precompiled_cuda_13_kernel_is_not_loaded_on_a_cuda_12_driver(
            self, request_sm90, tmp_path, monkeypatch):
        deployment = tmp_path / "deploy"
        _write_entry(ArtifactStore(str(deployment), private=False), artifact_id(request_sm90),
                     b"\x7fELF built by NVRTC 13", "cubin", "13.5")
        monkeypatch.setenv("GPU_NATIVE_PRECOMPILED", str(deployment))
        monkeypatch.setenv("GPU_NATIVE_REQUIRE_PRECOMPILED", "1")
        on_r550 = replace(request_sm90, driver_version=12040)
        with pytest.raises(MissingArtifactError) as info:
            find_or_build(on_r550)
        message = str(info.value)
        assert "cannot be loaded by this machine's driver" in message
        assert "NVRTC 13.5" in message and "CUDA 12.4" in message
        assert str(deployment) in message
        # The same directory serves a CUDA 13 driver, and a request for an unknown driver.
        for driver in (13000, None):
            clear_memory_cache()
            artifact = find_or_build(replace(request_sm90, driver_version=driver))
            assert artifact.origin == "precompiled"

    def test_without_require_precompiled_it_is_passed_over_with_a_warning(
            self, request_sm90, tmp_path, monkeypatch):
        deployment = tmp_path / "deploy"
        _write_entry(ArtifactStore(str(deployment), private=False), artifact_id(request_sm90),
                     b"\x7fELF built by NVRTC 13", "cubin", "13.5")
        monkeypatch.setenv("GPU_NATIVE_PRECOMPILED", str(deployment))
        on_r550 = replace(request_sm90, driver_version=12040)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if _nvrtc()[0] > 12:  # this NVRTC cannot build for that driver either
                with pytest.raises(CudaVersionError, match=r"pip install 'gpu-native\[cu12\]'"):
                    find_or_build(on_r550)
            else:
                assert find_or_build(on_r550).origin == "compiled"
        (warning,) = [w for w in caught if issubclass(w.category, CacheWarning)]
        assert "cannot be loaded by this machine's driver" in str(warning.message)
        assert "compiling it instead" in str(warning.message)

    def test_cached_ptx_newer_than_the_driver_is_compiled_again(self, request_sm90):
        major, minor = _nvrtc()
        if minor == 0:
            pytest.skip("needs an NVRTC of minor version 1 or later")
        version = f"{major}.{minor}"
        key = cache_key(artifact_id(request_sm90), version)
        _write_entry(user_store(), key, b".version 9.9\n\0", "ptx", version)
        older = replace(request_sm90, driver_version=_driver(major, minor - 1))
        artifact = find_or_build(older)
        assert artifact.origin == "compiled" and artifact.kind == "cubin"
        clear_memory_cache()
        assert find_or_build(older).origin == "cache"  # the cubin replaced it

    def test_an_nvrtc_of_a_newer_cuda_major_than_the_driver_refuses_to_compile(self,
                                                                               request_sm90):
        older = _older_major_driver()
        with pytest.raises(CudaVersionError) as info:
            find_or_build(replace(request_sm90, driver_version=older))
        message = str(info.value)
        major, minor = _nvrtc()
        assert f"NVRTC {major}.{minor}" in message
        assert f"CUDA {toolkit.version_text(toolkit.version_from_driver(older))}" in message
        if major - 1 in toolkit.SUPPORTED_MAJORS:
            assert f"pip install 'gpu-native[cu{major - 1}]'" in message
        assert user_store().scan() == []  # nothing compiled, nothing cached

    def test_a_driver_older_within_the_major_gets_cubin(self, request_sm90):
        major, _ = _nvrtc()
        compiled = nvrtc.compile_request(replace(request_sm90, driver_version=_driver(major, 0)))
        assert compiled.kind == "cubin" and compiled.target == "sm_90"
        assert compiled.image[:4] == b"\x7fELF"

    def test_a_gpu_newer_than_nvrtc_of_a_known_family_gets_that_familys_cubin(self,
                                                                             request_sm90):
        archs = nvrtc.supported_archs()
        family = next((a for a in reversed(archs) if a % 10 < 9 and a + 1 not in archs), None)
        if family is None:
            pytest.skip("no arch here with an unknown successor in its family")
        newer = replace(request_sm90, arch=f"sm_{family + 1}",
                        driver_version=_driver(*_nvrtc()))
        compiled = nvrtc.compile_request(newer)
        assert (compiled.kind, compiled.target) == ("cubin", f"sm_{family}")


class TestDoctor:
    def _doctor(self, capsys, monkeypatch, driver_version, devices=("sm_90",)):
        from gpu_native.commands import doctor

        def fake_driver():
            facts = {"driver": True, "devices": list(devices), "driver_version": driver_version}
            return [("driver", "CUDA {}.{} (test)".format(
                *toolkit.version_from_driver(driver_version)))], facts

        monkeypatch.setattr(doctor, "_driver", fake_driver)
        assert cli.main(["doctor"]) == 0
        return capsys.readouterr().out

    def test_doctor_names_the_cuda_major_of_bindings_and_nvrtc(self, capsys, monkeypatch):
        major, minor = _nvrtc()
        out = self._doctor(capsys, monkeypatch, _driver(major, minor))
        bindings = toolkit.bindings_version()
        assert f"cuda-bindings {bindings} (CUDA {toolkit.bindings_major()})" in out, out
        assert f"NVRTC           {major}.{minor} (CUDA {major};" in out, out
        assert "sm_90: kernels are cubin for sm_90, which this driver loads" in out, out

    def test_doctor_on_a_driver_of_an_older_major_says_which_extra(self, capsys, monkeypatch):
        major, minor = _nvrtc()
        out = self._doctor(capsys, monkeypatch, _older_major_driver())
        line = next(x for x in out.splitlines() if "sm_90: no kernel can run" in x)
        assert f"NVRTC {major}.{minor}" in line
        if major - 1 in toolkit.SUPPORTED_MAJORS:
            assert f"pip install 'gpu-native[cu{major - 1}]'" in line

    def test_doctor_counts_cached_kernels_by_the_nvrtc_that_built_them(self, capsys,
                                                                      monkeypatch):
        store = user_store()
        _write_entry(store, "a" * 64, b"\x7fELF", "cubin", "12.9")
        _write_entry(store, "b" * 64, b"\x7fELF", "cubin", "13.5")
        _write_entry(store, "c" * 64, b"\x7fELF", "cubin", "13.5")
        out = self._doctor(capsys, monkeypatch, 12040)
        assert "cache built by  NVRTC 12.9 (1), 13.5 (2)" in out, out
        assert "kernels built by NVRTC 13.5 cannot load on this driver (CUDA 12.4)" in out, out
        assert "built by NVRTC 12.9 cannot" not in out


class TestPackaging:
    """``pip install gpu-native`` gets the newest CUDA (13); ``[cu12]`` and ``[cu13]`` pin one
    major for cuda-bindings and for NVRTC with the runtime headers, and each must be installable
    together with the plain dependencies."""

    @pytest.fixture(scope="class")
    def project(self):
        tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
        with open(ROOT / "pyproject.toml", "rb") as f:
            return tomllib.load(f)["project"]

    @staticmethod
    def _by_name(requirements):
        from packaging.requirements import Requirement

        out = {}
        for text in requirements:
            req = Requirement(text)
            out[req.name] = req
        return out

    def test_dependencies_name_the_bindings_not_the_meta_package(self, project):
        base = self._by_name(project["dependencies"])
        assert "cuda-python" not in base and "cuda-core" not in base
        assert {"cuda-bindings", "cuda-pathfinder", "cuda-toolkit"} <= set(base)
        assert base["cuda-toolkit"].extras == {"nvrtc", "cudart", "cccl"}

    def test_one_extra_per_supported_major_pins_bindings_and_toolkit_alike(self, project):
        extras = project["optional-dependencies"]
        majors = sorted(int(name[2:]) for name in extras if name.startswith("cu"))
        assert tuple(majors) == toolkit.SUPPORTED_MAJORS
        base = self._by_name(project["dependencies"])
        for major in majors:
            pins = self._by_name(extras[f"cu{major}"])
            assert set(pins) == {"cuda-bindings", "cuda-toolkit"}, pins
            assert pins["cuda-toolkit"].extras == {"nvrtc", "cudart", "cccl"}
            for name in ("cuda-bindings", "cuda-toolkit"):
                spec = pins[name].specifier
                inside = [f"{major}.{m}.{p}" for m in (0, 4, 9) for p in (0, 2)]
                outside = [f"{other}.{m}.0" for other in (major - 1, major + 1) for m in (0, 9)]
                # Where the extra allows its major, the plain dependencies do too.
                allowed = [v for v in inside if spec.contains(v)]
                assert allowed and all(base[name].specifier.contains(v) for v in allowed), \
                    (name, major, str(spec), str(base[name].specifier))
                assert not any(spec.contains(v) for v in outside), (name, major, str(spec))
            # An extra's bindings and toolkit admit the same newest minor line.
            assert pins["cuda-bindings"].specifier.contains(f"{major}.9.4")
            assert pins["cuda-toolkit"].specifier.contains(f"{major}.9.2")

    def test_the_plain_install_admits_cuda_13_and_the_test_extra_pins_no_cuda(self, project):
        base = self._by_name(project["dependencies"])
        newest = toolkit.SUPPORTED_MAJORS[-1]
        for name in ("cuda-bindings", "cuda-toolkit"):
            assert base[name].specifier.contains(f"{newest}.5.0"), name
        test = self._by_name(project["optional-dependencies"]["test"])
        assert not {"cuda-bindings", "cuda-toolkit", "cuda-python"} & set(test)

    def test_the_readme_names_both_extras(self):
        readme = (ROOT / "README.md").read_text()
        assert "gpu-native[cu12]" in readme and "gpu-native[cu13]" in readme


def test_this_interpreter_runs_one_cuda_major():
    """The bindings and the NVRTC loaded here are of one CUDA major, as the extras install them
    (the GPU run with CUDA 12 wheels checks this too; see tools/device_cuda12.sh)."""
    major = toolkit.bindings_major()
    if major is None or toolkit.nvrtc_library(major) is None:
        pytest.skip("no NVRTC wheel of cuda-bindings' major here")
    assert _nvrtc()[0] == major, (sys.path, nvrtc.library_path())


@pytest.mark.gpu
def test_the_cuda_backend_builds_for_its_own_driver(monkeypatch, tmp_path, cuda_backend):
    """Loading a kernel on the GPU asks for code this driver loads: the request carries
    cuDriverGetVersion, and the kernel then runs (with the CUDA 12 wheels on an R580 driver too,
    tools/device_cuda12.sh)."""
    import importlib

    import numpy as np

    import gpu_native as gn
    import gpu_native.cache as cache_package
    from gpu_native.runtime import driver as D

    (tmp_path / "cuda_versions_kernel.py").write_text(KERNEL)  # loaded by no other test
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("cuda_versions_kernel")
    seen = []
    real = cache_package.find_or_build

    def recording(request):
        seen.append(request.driver_version)
        return real(request)

    monkeypatch.setattr(cache_package, "find_or_build", recording)
    a = gn.to_device(np.arange(256, dtype=np.float32))
    c = gn.empty(256, gn.f32)
    module.twice.launch(gn.GridDim1D(2), gn.BlockDim1D(128), 0, gn.DEFAULT_STREAM)(a, c)
    assert np.array_equal(c.to_host(), np.arange(256, dtype=np.float32) * 2)
    assert seen and set(seen) == {D.driver_version()}
