"""``gpu-native precompile`` and deployments that load precompiled artifacts without NVRTC."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import gpu_native
from gpu_native import cli
from gpu_native.cache import SHIPPED_DIRNAME, clear_memory_cache
from gpu_native.compiler.precompile import find_modules, parse_archs, plan
from gpu_native.errors import GpuNativeError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(gpu_native.__file__)))

HELPERS = textwrap.dedent('''\
    from gpu_native import gpu_device, f32


    @gpu_device
    def scale(x: f32) -> f32:
        return x * 2.0
    ''')

KERNELS = textwrap.dedent('''\
    from typing import TypeVar

    from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D,
                            UniqueId, f32, f64)
    from deploypkg.helpers import scale

    T = TypeVar("T", f32, f64)


    @gpu_kernel(Kernel1D)
    def scaled(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = scale(a[idx])


    @gpu_kernel(Kernel1D)
    def twice(a: CUDASlice[T], c: CUDASliceMut[T]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + a[idx]
    ''')

SUBKERNELS = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId
    from gpu_native import i32


    @gpu_kernel(Kernel1D)
    def negate(a: CUDASlice[i32], c: CUDASliceMut[i32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = -a[idx]
    ''')

LABELS = {"deploypkg.kern.scaled", "deploypkg.kern.twice[T=f32]", "deploypkg.kern.twice[T=f64]",
          "deploypkg.sub.ops.negate"}

# Runs in a fresh interpreter: look every request up, report where each came from and which
# heavy modules got imported.
DEPLOYED = textwrap.dedent('''\
    import json, sys
    from gpu_native.cache import BuildRequest, find_or_build
    from gpu_native.errors import MissingArtifactError
    results = []
    for fields in json.load(open(sys.argv[1])):
        try:
            artifact = find_or_build(BuildRequest(**fields))
            results.append([artifact.origin, artifact.kind, artifact.image.hex()[:16]])
        except MissingArtifactError as exc:
            results.append(["missing", str(exc)])
    loaded = [m for m in ("cuda.bindings.nvrtc", "gpu_native.compiler", "libcst",
                          "gpu_native.rewrite") if m in sys.modules]
    print(json.dumps({"results": results, "loaded": loaded}))
    ''')


def write_project(root) -> None:
    pkg = root / "deploypkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "kern.py").write_text(KERNELS)
    (pkg / "plain.py").write_text("def host_only():\n    return 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "ops.py").write_text(SUBKERNELS)


def env_for(cache, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    env["GPU_NATIVE_CACHE_DIR"] = str(cache)
    env.update(extra)
    return env


def run_deployed(tmp_path, requests, **env: str) -> dict:
    listing = tmp_path / "requests.json"
    listing.write_text(json.dumps([r.__dict__ for r in requests]))
    out = subprocess.run([sys.executable, "-c", DEPLOYED, str(listing)],
                         env=env_for(tmp_path / "empty-cache", **env), cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("GPU_NATIVE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GPU_NATIVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    clear_memory_cache()
    yield
    clear_memory_cache()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A project precompiled for sm_80 and sm_90 into ``out/`` (two worker processes)."""
    root = tmp_path_factory.mktemp("project")
    write_project(root)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        code = cli.main(["precompile", "deploypkg", "--arch", "sm_80,sm_90", "--out", "out",
                         "-j", "2", "-q"])
    finally:
        os.chdir(cwd)
    assert code == 0
    return root


def requests_of(root, archs=("sm_80", "sm_90")):
    cwd = os.getcwd()
    os.chdir(root)
    try:
        return [job.request for job in plan(find_modules(["deploypkg"]), archs)]
    finally:
        os.chdir(cwd)


class TestPrecompile:
    def test_manifest_lists_every_kernel_for_every_arch(self, built):
        manifest = json.loads((built / "out" / "manifest.json").read_text())
        from gpu_native.compiler import nvrtc_version

        assert manifest["format"] == "gpu_native-precompiled"
        assert manifest["gpu_native"] == gpu_native.__version__
        assert manifest["nvrtc"] == "{}.{}".format(*nvrtc_version())
        assert isinstance(manifest["schema"], int)
        assert manifest["archs"] == ["sm_80", "sm_90"]
        assert {k["label"] for k in manifest["kernels"]} == LABELS
        for kernel in manifest["kernels"]:
            assert set(kernel["artifacts"]) == {"sm_80", "sm_90"}
            for arch, artifact in kernel["artifacts"].items():
                assert artifact["kind"] == "cubin" and artifact["target"] == arch
                image = built / "out" / f"{artifact['id']}.cubin"
                assert image.read_bytes()[:4] == b"\x7fELF"
                sidecar = json.loads((built / "out" / f"{artifact['id']}.json").read_text())
                assert sidecar["label"] == kernel["label"] and sidecar["arch"] == arch
        twice = next(k for k in manifest["kernels"] if k["label"].endswith("[T=f64]"))
        assert twice["file"] == "deploypkg/kern.py" and twice["types"] == [["T", "f64"]]

    def test_user_modules_are_never_imported(self, built):
        assert "deploypkg" not in sys.modules
        names = {m.name for m in find_modules([str(built / "deploypkg")])}
        assert names == {"deploypkg.kern", "deploypkg.sub.ops"}  # helpers/plain: no kernels

    def test_rebuilding_one_arch_merges_the_manifest(self, built, tmp_path):
        import shutil

        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        shutil.copytree(built / "out", tmp_path / "out")
        assert cli.main(["precompile", "deploypkg/sub/ops.py", "--arch", "sm_86", "--out",
                         "out", "-q"]) == 0
        manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
        assert manifest["archs"] == ["sm_80", "sm_86", "sm_90"]
        negate = next(k for k in manifest["kernels"] if k["name"] == "negate")
        assert set(negate["artifacts"]) == {"sm_80", "sm_86", "sm_90"}
        assert {k["label"] for k in manifest["kernels"]} == LABELS

    def test_progress_for_many_kernels(self, built, tmp_path, capsys):
        import shutil

        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        assert cli.main(["precompile", "deploypkg", "--arch", "sm_80,sm_86,sm_89", "--out",
                         "out", "-j", "1"]) == 0
        captured = capsys.readouterr()
        assert "[12/12]" in captured.err
        assert "precompiled 4 kernels from 2 modules" in captured.out

    @pytest.mark.parametrize(("argv", "message"), [
        (["no.such.module"], "no.such.module: no such file, directory or module"),
        (["missing.py"], "missing.py: no such file or directory"),
        (["deploypkg", "--arch", "sm_8"], "invalid GPU architecture 'sm_8'"),
        (["deploypkg", "--arch", "sm_80", "-j", "0"], "-j/--jobs must be at least 1"),
    ])
    def test_errors_are_one_clear_line(self, built, tmp_path, capsys, argv, message):
        import shutil

        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        if "--arch" not in argv:
            argv = [*argv, "--arch", "sm_90"]
        assert cli.main(["precompile", *argv, "--out", "out"]) == 1
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1

    def test_a_star_import_of_gpu_native_is_precompiled_like_explicit_imports(self, tmp_path,
                                                                              capsys):
        (tmp_path / "star.py").write_text(SUBKERNELS.replace(
            "from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, "
            "UniqueId\nfrom gpu_native import i32", "from gpu_native import *"))
        assert "import *" in (tmp_path / "star.py").read_text()
        assert cli.main(["precompile", "star.py", "--arch", "sm_90", "--out", "out", "-q"]) == 0
        manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
        assert [k["label"] for k in manifest["kernels"]] == ["star.negate"]

    def test_modules_that_define_no_kernel_are_one_clear_line(self, tmp_path, capsys):
        (tmp_path / "notes.py").write_text("# gpu_kernel is mentioned, nothing is defined\n")
        assert cli.main(["precompile", "notes.py", "--arch", "sm_90", "--out", "out"]) == 1
        err = capsys.readouterr().err
        assert "no kernels found in notes.py: notes.py mentions gpu_kernel but defines no " \
            "@gpu_kernel function" in err, err
        assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()

    def test_parse_archs(self):
        assert parse_archs(["sm_80,sm_90", "sm_90", " sm_100a "]) == ("sm_80", "sm_90", "sm_100a")
        with pytest.raises(GpuNativeError, match="no GPU architecture"):
            parse_archs([","])


class TestDeployment:
    def test_required_precompiled_loads_without_nvrtc(self, built, tmp_path):
        requests = requests_of(built)
        result = run_deployed(tmp_path, requests, GPU_NATIVE_REQUIRE_PRECOMPILED="1",
                              GPU_NATIVE_PRECOMPILED=str(built / "out"))
        assert result["loaded"] == []
        assert len(result["results"]) == len(requests) == 8
        for origin, kind, head in result["results"]:
            assert (origin, kind, head[:8]) == ("precompiled", "cubin", "7f454c46")

    def test_missing_artifact_names_kernel_arch_and_command(self, built, tmp_path):
        requests = requests_of(built, archs=("sm_86",))[:1]
        result = run_deployed(tmp_path, requests, GPU_NATIVE_REQUIRE_PRECOMPILED="1",
                              GPU_NATIVE_PRECOMPILED=str(built / "out"))
        assert result["loaded"] == []
        ((status, message),) = result["results"]
        assert status == "missing"
        label = requests[0].label
        assert label in message and "sm_86" in message
        out = str(built / "out")
        assert (f"gpu-native precompile {requests[0].module} --arch sm_86 --out {out}"
                in message)

    def test_directory_shipped_beside_the_package(self, built, tmp_path):
        import shutil

        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        assert cli.main(["precompile", "deploypkg", "--arch", "sm_90", "--out",
                         f"deploypkg/{SHIPPED_DIRNAME}", "-q", "-j", "1"]) == 0
        # Requests as the runtime makes them: module_file is the installed module's file.
        requests = requests_of(tmp_path, archs=("sm_90",))
        assert any(r.module == "deploypkg.sub.ops" for r in requests)
        result = run_deployed(tmp_path, requests, GPU_NATIVE_REQUIRE_PRECOMPILED="1")
        assert result["loaded"] == []
        assert [r[0] for r in result["results"]] == ["precompiled"] * len(requests)

    def test_precompiled_beats_the_user_cache_and_needs_no_compile(self, built, monkeypatch):
        from gpu_native.cache import find_or_build

        monkeypatch.setenv("GPU_NATIVE_PRECOMPILED", str(built / "out"))
        request = requests_of(built, archs=("sm_90",))[0]
        assert find_or_build(request).origin == "precompiled"
        assert find_or_build(request).origin == "memory"
