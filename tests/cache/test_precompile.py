"""``gpu-native precompile`` and deployments that load precompiled artifacts without NVRTC."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import gpu_native
from gpu_native import cli
from gpu_native import precompile as precompile_module
from gpu_native.cache import SHIPPED_DIRNAME, artifact_id
from gpu_native.errors import CompileError, GpuNativeError
from gpu_native.precompile import find_modules, parse_archs, plan, precompile
from tests.helpers import finishes

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
def isolated(isolated_cache, tmp_path, monkeypatch):
    """A cache of the test's own (tests/conftest.py), run from ``tmp_path``."""
    monkeypatch.chdir(tmp_path)


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
    @pytest.mark.slow
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

    @pytest.mark.slow
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

    @pytest.mark.untrusted
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

    @pytest.mark.slow
    def test_a_kernel_defined_in_a_function_is_named_as_not_built(self, tmp_path, capsys):
        # It was left out with no word: "defines no @gpu_kernel function" where it was alone.
        closure = ("from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, f32, "
                   "FlatLayout1D\n\ndef make(scale: float):\n    @gpu_kernel(Kernel1D)\n"
                   "    def scaled(c: CUDASliceMut[f32]):\n"
                   "        c[FlatLayout1D.uid()] = scale\n    return scaled\n")
        (tmp_path / "clos.py").write_text(closure)
        assert cli.main(["precompile", "clos.py", "--arch", "sm_90", "--out", "out"]) == 1
        err = capsys.readouterr().err
        assert "nothing to build for sm_90: clos.scaled (line 4) was not built: a kernel defined " \
            "inside a function is built when the function runs, from the values it captures; " \
            "define it at module level to precompile it" in err, err
        (tmp_path / "both.py").write_text(SUBKERNELS + "\n" + closure.split("\n", 2)[2])
        assert cli.main(["precompile", "both.py", "--arch", "sm_90", "--out", "out"]) == 0
        assert "note: both.scaled (line" in capsys.readouterr().err
        manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
        assert [k["label"] for k in manifest["kernels"]] == ["both.negate"]
        # One that captures nothing is transpiled with the module and built, with no note.
        (tmp_path / "plain.py").write_text(closure.replace("scale: float", "").replace(
            "= scale", "= 1.0"))
        assert cli.main(["precompile", "plain.py", "--arch", "sm_90", "--out", "out2"]) == 0
        assert "was not built" not in capsys.readouterr().err
        manifest = json.loads((tmp_path / "out2" / "manifest.json").read_text())
        assert [k["label"] for k in manifest["kernels"]] == ["plain.scaled"]

    def test_parse_archs(self):
        assert parse_archs(["sm_80,sm_90", "sm_90", " sm_100a "]) == ("sm_80", "sm_90", "sm_100a")
        with pytest.raises(GpuNativeError, match="no GPU architecture"):
            parse_archs([","])
        # No such target: NVRTC reported a "catastrophic error" on it.
        with pytest.raises(GpuNativeError, match="'a' targets begin at sm_90a; write 'sm_80'"):
            parse_archs(["sm_80a"])
        with pytest.raises(GpuNativeError, match="'f' targets begin at sm_100f"):
            parse_archs(["sm_90f"])

    def test_a_dangling_link_in_a_directory_is_passed_by(self, tmp_path):
        (tmp_path / "pkg").mkdir()
        (tmp_path / "pkg" / "kern.py").write_text(many_kernels(["one"]))
        (tmp_path / "pkg" / "gone.py").symlink_to(tmp_path / "nowhere.py")
        found = find_modules([str(tmp_path / "pkg")])
        assert [os.path.basename(m.path) for m in found] == ["kern.py"]


def listing(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` with its bytes (what a failed build must not change)."""
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def leftovers(parent: Path) -> list[str]:
    """Staging directories a build left beside its output."""
    return sorted(p.name for p in parent.iterdir() if ".staging-" in p.name)


# A kernel that transpiles but that ptxas refuses: more static shared memory than any GPU has.


def many_kernels(names) -> str:
    """A module with one trivial kernel per name."""
    head = ("from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, "
            "FlatLayout1D, f32\n")
    body = "".join(textwrap.dedent(f'''


        @gpu_kernel(Kernel1D)
        def {name}(a: CUDASlice[f32], c: CUDASliceMut[f32]):
            c[FlatLayout1D.uid()] = a[FlatLayout1D.uid()]
        ''') for name in names)
    return head + body


def fake_compile(request):
    """Stands in for ``precompile._compile`` in the worker processes (pickled by name, so it must
    live at module level).  Kernel ``bad`` fails at once; ``slow`` waits until the parent has
    shown progress (or 20 s) and says which; every other one takes 0.3 s and leaves a marker."""
    from gpu_native.compiler.nvrtc import CompiledImage

    markers = Path(os.environ["GN_TEST_MARKERS"])
    name = request.label.rsplit(".", 1)[-1]
    if name == "bad":
        return CompileError(f"NVRTC could not compile kernel {request.label}", "ptxas error")
    if name == "slow":
        deadline = time.monotonic() + 20
        while not (markers / "progress-shown").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        on_time = (markers / "progress-shown").exists()
        image = b"\x7fELF shown while I ran" if on_time else b"\x7fELF shown after I finished"
        return CompiledImage(image, "cubin", request.arch, "", ())
    time.sleep(0.3)
    (markers / request.label).write_text("compiled")
    return CompiledImage(b"\x7fELF", "cubin", request.arch, "", ())


@pytest.mark.untrusted
class TestOutputDirectory:
    def test_a_manifest_json_of_something_else_is_refused_and_nothing_written(
            self, built, tmp_path, capsys):
        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        out = tmp_path / "site"
        out.mkdir()
        (out / "manifest.json").write_text('{"name": "my-web-app", "version": 3}\n')
        (out / "index.html").write_text("<html></html>\n")
        before = listing(out)
        assert cli.main(["precompile", "deploypkg", "--arch", "sm_90", "--out", "site"]) == 1
        err = capsys.readouterr().err
        assert str(out / "manifest.json") in err and "not written by gpu-native precompile" in err
        assert "Traceback" not in err
        assert listing(out) == before
        assert leftovers(tmp_path) == []
        # An ordinary JSON file that is not a manifest at all is refused the same way.
        (out / "manifest.json").write_text("[1, 2, 3]\n")
        assert cli.main(["precompile", "deploypkg", "--arch", "sm_90", "--out", "site"]) == 1
        assert "not written by gpu-native precompile" in capsys.readouterr().err

    @pytest.mark.slow
    def test_a_directory_of_other_files_is_refused_and_nothing_written(self, built, tmp_path,
                                                                        capsys):
        # A home directory, say: artifacts must not land among its files, nor a note blame
        # "an earlier build" for its private .ssh.
        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        home = tmp_path / "home"
        (home / ".ssh").mkdir(parents=True)
        (home / ".ssh").chmod(0o700)
        (home / "notes.txt").write_text("mine\n")
        before = listing(home)
        assert cli.main(["precompile", "deploypkg", "--arch", "sm_90", "--out", "home"]) == 1
        err = capsys.readouterr().err
        assert f"--out {home} already holds files (.ssh, notes.txt)" in err, err
        assert "new or empty --out directory" in err
        assert "chmod" not in err and "Traceback" not in err
        assert listing(home) == before and sorted(p.name for p in home.iterdir()) == [
            ".ssh", "notes.txt"]
        assert leftovers(tmp_path) == []
        # An empty directory is built into.
        (tmp_path / "empty").mkdir()
        assert cli.main(["precompile", "deploypkg", "--arch", "sm_90", "--out", "empty",
                         "-q"]) == 0
        assert (tmp_path / "empty" / "manifest.json").exists()

    def test_an_empty_out_is_refused(self, built, tmp_path, capsys):
        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        before = sorted(p.name for p in tmp_path.iterdir())
        assert cli.main(["precompile", "deploypkg", "--arch", "sm_90", "--out", ""]) == 1
        err = capsys.readouterr().err
        assert "--out is empty" in err and "Traceback" not in err, err
        assert sorted(p.name for p in tmp_path.iterdir()) == before

    @pytest.mark.parametrize("out", ["/dev/null/x", "afile/sub/x"])
    def test_an_out_under_a_file_says_which_is_not_a_directory(self, tmp_path, monkeypatch,
                                                                capsys, out):
        monkeypatch.chdir(tmp_path)
        (tmp_path / "k.py").write_text(many_kernels(["one"]))
        (tmp_path / "afile").write_text("not a directory\n")
        assert cli.main(["precompile", "k.py", "--arch", "sm_80", "--out", out]) == 1
        err = capsys.readouterr().err
        blocker = "/dev/null" if out.startswith("/dev") else str(tmp_path / "afile")
        assert f"cannot write to {os.path.abspath(out)}: {blocker} exists and is not a " \
               "directory" in err, err
        assert "File exists" not in err and "Traceback" not in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "k.py"]

    def test_a_fifo_in_place_of_manifest_json_is_refused_not_waited_on(self, tmp_path):
        out = tmp_path / "site"
        out.mkdir()
        os.mkfifo(out / "manifest.json")
        with pytest.raises(GpuNativeError, match=r"cannot read .*manifest\.json: a FIFO, not a "
                                                 r"regular file"):
            finishes(lambda: precompile_module._existing_manifest(str(out)))

    @pytest.mark.parametrize("existing", [True, pytest.param(False, marks=pytest.mark.slow)],
                             ids=["existing-out", "new-out"])
    def test_a_kernel_that_fails_leaves_out_as_it_was_and_names_its_line(
            self, built, tmp_path, capsys, monkeypatch, existing):
        # The transpiler refuses what NVRTC would (static shared memory past 48 KiB is its own
        # error now), so the device compiler's failure is played by fake_compile in the workers.
        markers = tmp_path / "markers"
        markers.mkdir()
        monkeypatch.setenv("GN_TEST_MARKERS", str(markers))
        monkeypatch.setattr(precompile_module, "_compile", fake_compile)
        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        bad = many_kernels(["bad"])
        (tmp_path / "deploypkg" / "bad.py").write_text(bad)
        out = tmp_path / "deploy" / "kernels"
        if existing:
            shutil.copytree(built / "out", out)
        before = listing(out) if existing else None
        assert cli.main(["precompile", "deploypkg", "--arch", "sm_80,sm_90", "--out",
                         "deploy/kernels", "-j", "2"]) == 1
        if existing:
            assert listing(out) == before
        else:
            assert not (tmp_path / "deploy").exists()  # not even the parent it made
        assert leftovers(out.parent if existing else tmp_path) == []
        err = capsys.readouterr().err
        line = bad.splitlines().index("@gpu_kernel(Kernel1D)") + 1
        where = os.path.join("deploypkg", "bad.py")
        assert f"{where}:{line}: kernel deploypkg.bad.bad could not be compiled" in err
        assert "ptxas error" in err and "Traceback" not in err

    @pytest.mark.slow
    def test_the_first_error_stops_the_build(self, tmp_path, monkeypatch):
        names = ["bad", *(f"k{i}" for i in range(15))]
        (tmp_path / "manyk.py").write_text(many_kernels(names))
        markers = tmp_path / "markers"
        markers.mkdir()
        monkeypatch.setenv("GN_TEST_MARKERS", str(markers))
        monkeypatch.setattr(precompile_module, "_compile", fake_compile)
        started = time.monotonic()
        with pytest.raises(CompileError) as info:
            precompile(["manyk.py"], ["sm_90"], str(tmp_path / "out"), jobs=2)
        elapsed = time.monotonic() - started
        time.sleep(1.5)  # what was already handed to a worker finishes; nothing else starts
        compiled = sorted(p.name for p in markers.iterdir())
        assert len(compiled) <= 5, (compiled, elapsed)  # of 15 that would compile
        assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []
        assert str(info.value).startswith("manyk.py:")
        assert "kernel manyk.bad could not be compiled for sm_90" in str(info.value)
        assert "precompile stopped at this first error" in str(info.value)

    @pytest.mark.slow
    def test_progress_is_shown_as_each_job_finishes(self, tmp_path, monkeypatch):
        names = ["slow", *(f"k{i}" for i in range(5))]
        (tmp_path / "manyk.py").write_text(many_kernels(names))
        markers = tmp_path / "markers"
        markers.mkdir()
        monkeypatch.setenv("GN_TEST_MARKERS", str(markers))
        monkeypatch.setattr(precompile_module, "_compile", fake_compile)
        shown = []

        def progress(done, total, job):
            shown.append((done, total, job.request.label))
            (markers / "progress-shown").touch()

        precompile(["manyk.py"], ["sm_90"], str(tmp_path / "out"), jobs=2, progress=progress)
        assert [d for d, _, _ in shown] == [1, 2, 3, 4, 5, 6]
        # The slow job finished only once progress had been shown for another: while it ran.
        assert shown[0][2] != "manyk.slow"
        (slow,) = [j.request for j in plan(find_modules(["manyk.py"]), ["sm_90"])
                   if j.name == "slow"]
        image = (tmp_path / "out" / f"{artifact_id(slow)}.cubin").read_bytes()
        assert image == b"\x7fELF shown while I ran"


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

    @pytest.mark.slow
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


# ---- deployments read by another account ------------------------------------------------------


def modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode)
            for p in [root, *sorted(root.rglob("*"))]}


def build_with_umask(root: Path, out: str, umask: int, archs: str = "sm_90") -> Path:
    cwd, old = os.getcwd(), os.umask(umask)
    os.chdir(root)
    try:
        assert cli.main(["precompile", "deploypkg", "--arch", archs, "--out", out, "-q",
                         "-j", "1"]) == 0
    finally:
        os.umask(old)
        os.chdir(cwd)
    return root / out


@pytest.mark.untrusted
class TestOutputModes:
    @pytest.mark.slow
    @pytest.mark.parametrize(("umask", "directory", "file"), [(0o022, 0o755, 0o644),
                                                              (0o027, 0o750, 0o640)],
                             ids=["umask-022", "umask-027"])
    def test_precompiled_output_follows_the_umask(self, built, tmp_path, umask, directory,
                                                  file):
        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        out = build_with_umask(tmp_path, "deploy/kernels", umask)
        found = modes(tmp_path / "deploy")
        want = {name: directory if (tmp_path / "deploy" / name).is_dir() else file
                for name in found}
        assert found == want
        assert len(found) > 3 and (out / "manifest.json").exists()
        # The per-user cache stays private whatever the umask.
        cache = tmp_path / "cache"
        assert not cache.exists() or stat.S_IMODE(cache.stat().st_mode) == 0o700


    @pytest.mark.slow
    def test_files_left_private_by_an_earlier_build_are_pointed_out(self, built, tmp_path,
                                                                    capsys):
        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        out = build_with_umask(tmp_path, "kernels", 0o022)
        old = sorted(out.glob("*.cubin"))[0]
        out.chmod(0o700)  # as gpu_native used to leave it
        old.chmod(0o600)
        capsys.readouterr()
        build_with_umask(tmp_path, "kernels", 0o022, archs="sm_86")
        err = capsys.readouterr().err
        assert f"other accounts cannot read {out} (and 1 more there)" in err, err
        assert f"chmod -R a+rX {out}" in err

    @pytest.mark.slow
    def test_the_note_names_only_files_gpu_native_wrote(self, built, tmp_path, capsys):
        # Files a user put beside a build are neither reported nor touched by a recursive chmod.
        shutil.copytree(built / "deploypkg", tmp_path / "deploypkg")
        out = build_with_umask(tmp_path, "kernels", 0o022)
        old = sorted(out.glob("*.cubin"))[0]
        old.chmod(0o600)
        (out / ".ssh").mkdir(mode=0o700)
        (out / "secret.txt").write_text("mine\n")
        (out / "secret.txt").chmod(0o600)
        capsys.readouterr()
        build_with_umask(tmp_path, "kernels", 0o022, archs="sm_86")
        err = capsys.readouterr().err
        assert f"other accounts cannot read {old}, though" in err, err
        assert f"chmod a+rX {old}" in err
        assert ".ssh" not in err and "secret.txt" not in err and "chmod -R" not in err


# Run as the reader.  Where this process may read every file whatever its mode (root, and no way
# to become another account), GN_TEST_DENY lists files that open() refuses as chmod 000 would.
DENY_PRELUDE = textwrap.dedent('''\
    import builtins, json, os, sys, warnings
    denied = {p for p in os.environ.get("GN_TEST_DENY", "").split(os.pathsep) if p}
    if denied:
        real_open = builtins.open

        def guarded_open(file, *args, **kwargs):
            if isinstance(file, (str, os.PathLike)) and os.path.abspath(file) in denied:
                raise PermissionError(13, "Permission denied", os.fspath(file))
            return real_open(file, *args, **kwargs)

        builtins.open = guarded_open
    ''')

LOOK_UP = DENY_PRELUDE + textwrap.dedent('''\
    from gpu_native.cache import BuildRequest, CacheWarning, find_or_build
    from gpu_native.errors import MissingArtifactError
    results = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for fields in json.load(open(sys.argv[1])):
            try:
                results.append([find_or_build(BuildRequest(**fields)).origin])
            except MissingArtifactError as exc:
                results.append(["missing", str(exc)])
    print(json.dumps({"results": results, "warnings": [
        str(w.message) for w in caught if issubclass(w.category, CacheWarning)]}))
    ''')

DOCTOR = DENY_PRELUDE + "from gpu_native import cli\nsys.exit(cli.main(['doctor']))\n"

NOBODY = 65534


def _drop_file_capabilities() -> None:  # pragma: no cover - runs in the child, before exec
    """Take CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH out of the bounding set: after ``exec``,
    root is bound by file modes like anyone else (and keeps its own uid, so every path the test
    uses stays reachable)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


class Reader:
    """Runs scripts as an account that cannot read the files passed as ``deny``.

    ``how`` is the first of these that works here: ``"another-uid"`` (root runs the script as
    ``nobody``), ``"root-without-dac"`` (root without the capabilities that bypass file modes),
    ``"this-user"`` (not root: chmod 000 is enough), ``"simulated"`` (``open`` refuses the
    files, see :data:`DENY_PRELUDE`).  ``base`` is where to put what the reader reads, and
    ``cache`` is the reader's own per-user cache.
    """

    def __init__(self, how: str, base: Path, cache: Path, **popen):
        self.how, self.base, self.cache, self.popen = how, base, cache, popen

    @classmethod
    def pick(cls, tmp_path: Path) -> Reader:
        if os.name != "posix":
            return cls("simulated", tmp_path, tmp_path / "reader-cache")
        if os.geteuid() != 0:
            return cls("this-user", tmp_path, tmp_path / "reader-cache")
        import tempfile

        base = Path(tempfile.mkdtemp(prefix="gpu_native-reader-"))
        base.chmod(0o755)
        other = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
        probe = "import gpu_native.cache, gpu_native.compiler.nvrtc as n; n.nvrtc_version()"
        try:
            ok = subprocess.run([sys.executable, "-c", probe], cwd=base, env=env_for(base / "c"),
                                capture_output=True, timeout=120, **other).returncode == 0
        except OSError:  # the interpreter itself is out of that account's reach
            ok = False
        if ok:
            cache = base / "reader-cache"
            cache.mkdir(mode=0o700)
            os.chown(cache, NOBODY, NOBODY)
            return cls("another-uid", base, cache, **other)
        shutil.rmtree(base)
        secret = tmp_path / "probe-secret"
        secret.write_text("secret")
        secret.chmod(0)
        try:
            probe = subprocess.run([sys.executable, "-c", f"open({str(secret)!r})"],
                                   preexec_fn=_drop_file_capabilities, capture_output=True,
                                   text=True, timeout=60)
            denied = "PermissionError" in probe.stderr
        except (OSError, subprocess.SubprocessError):
            denied = False
        if denied:
            return cls("root-without-dac", tmp_path, tmp_path / "reader-cache",
                       preexec_fn=_drop_file_capabilities)
        return cls("simulated", tmp_path, tmp_path / "reader-cache")

    def run(self, script: str, *args: str, deny=(), **env: str) -> subprocess.CompletedProcess:
        extra = dict(env)
        if self.how == "simulated":
            extra["GN_TEST_DENY"] = os.pathsep.join(str(Path(p).resolve()) for p in deny)
        else:
            for path in deny:
                os.chmod(path, 0)
        return subprocess.run([sys.executable, "-c", script, *args], cwd=self.base,
                              env=env_for(self.cache, **extra), capture_output=True, text=True,
                              timeout=300, **self.popen)

    def look_up(self, requests, *, deny=(), **env: str) -> dict:
        listing_file = self.base / "requests.json"
        listing_file.write_text(json.dumps([r.__dict__ for r in requests]))
        listing_file.chmod(0o644)
        out = self.run(LOOK_UP, str(listing_file), deny=deny, **env)
        assert out.returncode == 0 and "Traceback" not in out.stderr, (self.how, out.stderr)
        return json.loads(out.stdout)

    def close(self) -> None:
        if self.how == "another-uid":
            shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture
def reader(tmp_path):
    chosen = Reader.pick(tmp_path)
    yield chosen
    chosen.close()


@pytest.fixture
def deployment(built, reader):
    """``deploypkg`` precompiled for sm_90 under umask 022 where the reader can reach it."""
    shutil.copytree(built / "deploypkg", reader.base / "deploypkg")
    pre = build_with_umask(reader.base, "pre", 0o022)
    return pre, requests_of(reader.base, archs=("sm_90",))


def artifact_file(pre: Path, request, which: str) -> Path:
    return pre / f"{artifact_id(request)}.{'json' if which == 'sidecar' else 'cubin'}"


@pytest.mark.untrusted
class TestUnreadableEntries:
    @pytest.mark.slow
    def test_a_deployment_built_by_one_account_runs_as_another(self, reader, deployment):
        if reader.how != "another-uid":
            pytest.skip(f"cannot run as another account here (the reader is {reader.how})")
        pre, requests = deployment
        result = reader.look_up(requests, GPU_NATIVE_PRECOMPILED=str(pre),
                                GPU_NATIVE_REQUIRE_PRECOMPILED="1")
        assert result == {"results": [["precompiled"]] * len(requests), "warnings": []}

    @pytest.mark.slow
    @pytest.mark.parametrize("which", ["image", "sidecar"])
    def test_an_unreadable_precompiled_entry_is_compiled_with_one_warning(
            self, reader, deployment, which):
        pre, requests = deployment
        unreadable = artifact_file(pre, requests[0], which)
        result = reader.look_up(requests, deny=[unreadable], GPU_NATIVE_PRECOMPILED=str(pre))
        assert result["results"] == [["compiled"]] + [["precompiled"]] * (len(requests) - 1)
        (message,) = result["warnings"]
        assert f"cannot read the precompiled sm_90 artifact of kernel {requests[0].label}" \
            in message
        assert str(unreadable) in message and "Permission denied" in message
        assert "compiling it instead" in message and "gpu-native doctor" in message

    @pytest.mark.slow
    @pytest.mark.parametrize("which", ["image", "sidecar"])
    def test_an_unreadable_precompiled_entry_is_a_clear_error_when_compiling_is_forbidden(
            self, reader, deployment, which):
        pre, requests = deployment
        unreadable = artifact_file(pre, requests[0], which)
        result = reader.look_up(requests, deny=[unreadable], GPU_NATIVE_PRECOMPILED=str(pre),
                                GPU_NATIVE_REQUIRE_PRECOMPILED="1")
        (status, message), *rest = result["results"]
        assert status == "missing" and rest == [["precompiled"]] * (len(requests) - 1)
        assert f"precompiled sm_90 artifact of kernel {requests[0].label} cannot be read" \
            in message
        assert str(unreadable) in message and "Permission denied" in message
        assert "GPU_NATIVE_REQUIRE_PRECOMPILED=1" in message and "chmod" in message
        assert result["warnings"] == []

    @pytest.mark.slow
    def test_doctor_names_the_unreadable_precompiled_file(self, reader, deployment):
        pre, requests = deployment
        unreadable = artifact_file(pre, requests[0], "image")
        out = reader.run(DOCTOR, deny=[unreadable], GPU_NATIVE_PRECOMPILED=str(pre))
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        lines = [x for x in out.stdout.splitlines() if str(unreadable) in x]
        assert len(lines) == 1 and "Permission denied" in lines[0], out.stdout
        assert lines[0].split()[0] == "unreadable", out.stdout
        assert f"chmod -R a+rX {pre}" in out.stdout

    @pytest.mark.slow
    def test_an_unreadable_user_cache_entry_is_recompiled_with_one_warning(self, reader, built):
        (request,) = requests_of(built, archs=("sm_90",))[:1]
        assert reader.look_up([request])["results"] == [["compiled"]]
        (image,) = (reader.cache / "kernels").glob("*.cubin")
        doctor = reader.run(DOCTOR, deny=[image])
        assert doctor.returncode == 0, doctor.stderr
        assert any(x.startswith("cache unreadable") and str(image) in x
                   for x in doctor.stdout.splitlines()), doctor.stdout
        result = reader.look_up([request], deny=[image])
        assert result["results"] == [["compiled"]]
        (message,) = result["warnings"]
        assert f"cannot read the cached sm_90 artifact of kernel {request.label}" in message
        assert str(image) in message and "recompiling it" in message
        # The recompiled entry replaced the unreadable one.
        assert reader.look_up([request]) == {"results": [["cache"]], "warnings": []}


# ---- a precompiled deployment run on the GPU -------------------------------------------------

# Imports the deployed package as an application does and launches its three kernels on the GPU
# from fresh inputs (seed in argv[1]), into poisoned outputs; reports what disagreed with NumPy,
# the cache warnings, and whether the compiler was loaded.
RUN_ON_GPU = DENY_PRELUDE + textwrap.dedent('''\
    import numpy as np
    import gpu_native as gn
    from gpu_native.cache import CacheWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from deploypkg.kern import scaled, twice
        from deploypkg.sub.ops import negate
        rng = np.random.default_rng(int(sys.argv[1]))
        n, block = 256 * 391, 256
        a = rng.standard_normal(n).astype(np.float32)
        d = rng.standard_normal(n)
        i = rng.integers(-2**31 + 1, 2**31, n, dtype=np.int64).astype(np.int32)
        wrong = []
        for kernel, x, want in ((scaled, a, a.astype(np.float64) * 2.0),
                                (twice, d, d + d), (negate, i, -i.astype(np.float64))):
            out = gn.to_device(np.full(n, 0x5A5A5A5A, x.dtype) if x.dtype.kind == "i"
                               else np.full(n, np.nan, x.dtype))
            kernel[n // block, block](gn.to_device(x), out)
            got = out.to_host().astype(np.float64)
            if not np.array_equal(got, want):
                wrong.append(kernel.__name__)
    print(json.dumps({"wrong": wrong, "device": gn.Device(0).name,
                      "compiler_loaded": [m for m in ("cuda.bindings.nvrtc",
                                                      "gpu_native.compiler")
                                          if m in sys.modules],
                      "warnings": [str(w.message) for w in caught
                                   if issubclass(w.category, CacheWarning)]}))
    ''')


@pytest.fixture
def gpu_deployment(built, reader):
    """``deploypkg`` precompiled under umask 022 for this machine's GPU, where the reader can
    reach it."""
    from gpu_native.runtime import driver

    arch = driver.device_properties(0)["arch"]
    shutil.copytree(built / "deploypkg", reader.base / "deploypkg")
    pre = build_with_umask(reader.base, "pre", 0o022, archs=arch)
    return pre, requests_of(reader.base, archs=(arch,))


def run_on_gpu(reader: Reader, pre: Path, deny=(), **env: str) -> dict:
    seed = int.from_bytes(os.urandom(4), "little")
    out = reader.run(RUN_ON_GPU, str(seed), deny=deny, GPU_NATIVE_PRECOMPILED=str(pre), **env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, (reader.how, out.stderr)
    result = json.loads(out.stdout)
    assert result["wrong"] == [], (seed, result)
    return result


@pytest.mark.untrusted
@pytest.mark.gpu
class TestDeploymentOnTheGpu:
    def test_a_deployment_built_under_umask_022_runs_as_its_reader_without_nvrtc(
            self, reader, gpu_deployment):
        pre, _ = gpu_deployment
        result = run_on_gpu(reader, pre, GPU_NATIVE_REQUIRE_PRECOMPILED="1")
        assert result["compiler_loaded"] == [] and result["warnings"] == [], result

    def test_an_unreadable_entry_is_compiled_instead_and_the_kernel_runs(
            self, reader, gpu_deployment):
        pre, requests = gpu_deployment
        (request,) = [r for r in requests if r.label.endswith("kern.scaled")]
        unreadable = artifact_file(pre, request, "image")
        result = run_on_gpu(reader, pre, deny=[unreadable])
        (message,) = result["warnings"]
        assert str(unreadable) in message and "compiling it instead" in message

    def test_an_unreadable_entry_under_require_precompiled_is_a_clear_error(
            self, reader, gpu_deployment):
        pre, requests = gpu_deployment
        (request,) = [r for r in requests if r.label.endswith("kern.scaled")]
        unreadable = artifact_file(pre, request, "image")
        out = reader.run(RUN_ON_GPU, "0", deny=[unreadable], GPU_NATIVE_PRECOMPILED=str(pre),
                         GPU_NATIVE_REQUIRE_PRECOMPILED="1")
        assert out.returncode != 0
        assert "cannot be read" in out.stderr and str(unreadable) in out.stderr
        assert "GPU_NATIVE_REQUIRE_PRECOMPILED=1" in out.stderr
        # The user's frames only (gpu_native.tracebacks): none of the package's own.
        assert f'File "{Path(gpu_native.__file__).parent}' not in out.stderr, out.stderr
