"""Untrusted input (issue 9): hostile source files, hostile cache contents, hostile arguments.

* ``gpu-native expand`` and ``gpu-native precompile`` never execute the user's modules: not the
  kernel module, not the module it imports device functions from, not the package ``__init__``
  around them (each would write a marker file).  Module-level constants are evaluated statically:
  one defined by a function call is refused, not run, also when the import hook rewrites it.
* Cache and precompiled entries are verified before they reach the driver: a tampered, swapped or
  symlinked cubin is detected and never returned.  A key cannot name a path outside the cache.
  Cache directories are private (0o700) and files 0o600, whatever the umask.
* The import hook's rewritten modules and its record of modules without kernels are taken only
  from a cache directory and file of the user's own that nobody else can write (a planted entry,
  checksum recomputed, never runs and hides nothing), and beside the source only from a
  ``__pycache__`` no more people can write than can write the source.
* Nothing is unpickled: no pickle anywhere in gpu_native, and pickle payloads planted in every
  cache file are never triggered.
* A kernel argument can never make the launcher read or write host memory: NumPy arrays, raw
  addresses, fake ``__cuda_array_interface__`` objects, DLPack capsules and CPU tensors are refused
  with ``TypeError`` before any launch (on the simulator in CI, for real on a GPU; the interop
  checks are also unit-tested against a stub CUDA backend).

Known holes are pinned with ``xfail(strict=True)`` naming the file to fix.
"""

from __future__ import annotations

import ctypes
import json
import os
import pickle
import re
import resource
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.cache import (
    ArtifactStore,
    BuildRequest,
    CacheWarning,
    cache_key,
    clear_memory_cache,
    find_or_build,
)
from gpu_native.rewrite import transpile_module

REPO = Path(gn.__file__).resolve().parent.parent
PACKAGE = REPO / "gpu_native"


def env_for(cache, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env["GPU_NATIVE_CACHE_DIR"] = str(cache)
    env.update(extra)
    return env


def cli(args, cwd, cache, timeout=300, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_native.cli", *args], cwd=cwd,
                          env=env_for(cache, **env), capture_output=True, text=True,
                          timeout=timeout)


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


# ---- hostile source: never executed ---------------------------------------------------------------


def marker_code(name: str) -> str:
    """A statement that leaves a file behind if it ever runs."""
    return (f"open(__import__('os').path.join(__import__('os').path.dirname(__file__), "
            f"'EXECUTED-{name}'), 'w').write('ran')")


def write_hostile_project(root: Path) -> None:
    pkg = root / "hostile"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(marker_code("package-init") + "\n")
    (pkg / "helpers.py").write_text(textwrap.dedent(f'''\
        import os
        from gpu_native import gpu_device, f32

        {marker_code("helpers")}
        os.system("touch " + os.path.join(os.path.dirname(__file__), "EXECUTED-helpers-system"))
        SCALE = 3


        @gpu_device
        def scale(x: f32) -> f32:
            return x * SCALE
        '''))
    (pkg / "kern.py").write_text(textwrap.dedent(f'''\
        from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32
        from hostile.helpers import scale

        {marker_code("kern")}
        N = 4 * 8 + 1


        class Sneaky:
            {marker_code("class-body")}


        def default(x=({marker_code("default-argument")})):
            return x


        @gpu_kernel(Kernel1D)
        def scaled(a: CUDASlice[f32], c: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            c[i] = scale(a[i]) + N
        '''))


def executed(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("EXECUTED-*"))


@pytest.fixture
def hostile(tmp_path) -> Path:
    write_hostile_project(tmp_path)
    return tmp_path


@pytest.mark.parametrize("args", [
    ["expand", "hostile/kern.py"],
    ["expand", "hostile/kern.py", "--cuda"],
    ["expand", "hostile/kern.py", "--kernel", "scaled"],
    ["expand", "hostile/kern.py", "--proofs"],
    ["expand", "hostile/kern.py", "--exact"],
], ids=["expand", "expand-cuda", "expand-kernel", "expand-proofs", "expand-exact"])
def test_expand_never_executes_the_module_or_its_imports(hostile, isolated_cache, args):
    out = cli(args, hostile, isolated_cache)
    assert out.returncode == 0, out.stderr
    assert "scaled" in out.stdout
    if "--cuda" in args:
        assert "33" in out.stdout  # N = 4 * 8 + 1, folded statically
    assert executed(hostile) == [], executed(hostile)


@pytest.mark.parametrize("target", ["hostile", "hostile.kern", "hostile/kern.py"])
def test_precompile_never_executes_the_module_or_its_imports(hostile, isolated_cache, target):
    pytest.importorskip("cuda.bindings.nvrtc")
    out = cli(["precompile", target, "--arch", "sm_90", "--out", "out", "-q", "-j", "1"],
              hostile, isolated_cache)
    assert out.returncode == 0, out.stderr
    manifest = json.loads((hostile / "out" / "manifest.json").read_text())
    assert [k["label"] for k in manifest["kernels"]] == ["hostile.kern.scaled"]
    assert executed(hostile) == [], executed(hostile)


CONSTANT_BY_CALL = textwrap.dedent(f'''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, f32


    def compute():
        {marker_code("constant-call")}
        return 3


    N = compute()


    @gpu_kernel(Kernel1D)
    def k(o: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        o[i] = f32(N)
    ''')


def test_a_constant_defined_by_a_call_is_refused_not_run(tmp_path, isolated_cache):
    (tmp_path / "by_call.py").write_text(CONSTANT_BY_CALL)
    out = cli(["expand", "by_call.py"], tmp_path, isolated_cache)
    assert out.returncode == 1
    assert "by_call.py:15" in out.stderr and "'N'" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert executed(tmp_path) == []


def test_the_import_hook_refuses_it_before_the_module_body_runs(tmp_path, isolated_cache):
    (tmp_path / "by_call_import.py").write_text(CONSTANT_BY_CALL)
    script = "import gpu_native, by_call_import"
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                         env=env_for(isolated_cache, PYTHONPATH=f"{REPO}{os.pathsep}{tmp_path}"),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "TranspileError" in out.stderr and "'N'" in out.stderr, out.stderr
    assert executed(tmp_path) == []


CONSTANT_BOMB_LINES = ["from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D",
                       "from gpu_native import f32", "A0 = 2 ** 256"]
CONSTANT_BOMB_LINES += [f"A{k} = A{k - 1} * A{k - 1}" for k in range(1, 41)]
CONSTANT_BOMB_LINES += ["", "", "@gpu_kernel(Kernel1D)", "def k(o: CUDASliceMut[f32]):",
                        "    i = FlatLayout1D.uid()", "    o[i] = 1.0", ""]


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_constant_folding_of_hostile_source_is_bounded(tmp_path, isolated_cache):
    (tmp_path / "bomb.py").write_text("\n".join(CONSTANT_BOMB_LINES))
    try:
        out = subprocess.run([sys.executable, "-m", "gpu_native.cli", "expand", "bomb.py"],
                             cwd=tmp_path, env=env_for(isolated_cache), capture_output=True,
                             text=True, timeout=10, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail("expand of a 50-line file ran for more than 10 s")
    assert out.returncode == 0, out.stderr[-2000:]


# ---- hostile cache contents -------------------------------------------------------------------------

KERNELS = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32


    @gpu_kernel(Kernel1D)
    def twice(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = a[i] * 2.0


    @gpu_kernel(Kernel1D)
    def thrice(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = a[i] * 3.0
    ''')


@pytest.fixture(scope="module")
def requests() -> list[BuildRequest]:
    module = transpile_module(KERNELS, "untrusted_kernels.py", "untrusted_kernels")
    out = []
    for kernel in module.kernels:
        out.extend(BuildRequest.for_variant(kernel, v, "sm_90") for v in kernel.variants)
    return out


def caught_cache_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


def test_an_entry_swapped_in_from_another_key_is_detected(requests, isolated_cache):
    pytest.importorskip("cuda.bindings.nvrtc")
    a, b = (find_or_build(r) for r in requests)
    clear_memory_cache()
    kernels = isolated_cache / "kernels"
    for suffix in (".cubin", ".json"):  # b's files now carry a's entry
        (kernels / f"{b.key}{suffix}").write_bytes((kernels / f"{a.key}{suffix}").read_bytes())
    got, messages = caught_cache_warnings(lambda: find_or_build(requests[1]))
    assert got.origin == "compiled" and got.image == b.image
    assert len(messages) == 1 and "sidecar names another key" in messages[0], messages


def test_a_symlinked_image_is_detected_and_only_the_link_removed(requests, isolated_cache,
                                                                tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc")
    good = find_or_build(requests[0])
    clear_memory_cache()
    precious = tmp_path / "precious"
    precious.write_bytes(b"\x7fELF not yours")
    image = isolated_cache / "kernels" / f"{good.key}.cubin"
    image.unlink()
    image.symlink_to(precious)
    got, messages = caught_cache_warnings(lambda: find_or_build(requests[0]))
    assert got.origin == "compiled" and got.image == good.image
    assert len(messages) == 1 and "corrupt" in messages[0]
    assert precious.read_bytes() == b"\x7fELF not yours"  # the target is untouched


def build_precompiled(root: Path, cache) -> Path:
    (root / "untrusted_kernels.py").write_text(KERNELS)
    out = cli(["precompile", "untrusted_kernels.py", "--arch", "sm_90", "--out", "pre", "-q",
               "-j", "1"], root, cache)
    assert out.returncode == 0, out.stderr
    return root / "pre"


def tamper_cubins(directory: Path) -> list[Path]:
    images = sorted(directory.glob("*.cubin"))
    for image in images:
        data = bytearray(image.read_bytes())
        data[len(data) // 2] ^= 0xFF  # one flipped byte in the middle of the machine code
        image.write_bytes(bytes(data))
    return images


def test_a_tampered_precompiled_cubin_is_never_returned(requests, tmp_path, isolated_cache,
                                                        monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc")
    pre = build_precompiled(tmp_path, isolated_cache)
    images = tamper_cubins(pre)
    tampered = {p.read_bytes() for p in images}
    monkeypatch.setenv("GPU_NATIVE_PRECOMPILED", str(pre))
    clear_memory_cache()
    got, messages = caught_cache_warnings(lambda: find_or_build(requests[0]))
    assert got.image not in tampered and got.origin == "compiled"
    assert len(messages) == 1 and "corrupt" in messages[0] and "ignoring it" in messages[0]
    # A deployment that may not compile refuses instead of loading the tampered image.
    monkeypatch.setenv("GPU_NATIVE_REQUIRE_PRECOMPILED", "1")
    clear_memory_cache()
    with pytest.raises(gn.MissingArtifactError):
        caught_cache_warnings(lambda: find_or_build(requests[1]))


@pytest.mark.parametrize("key", ["../" + "a" * 61, "a" * 63 + "/", "/" + "a" * 63,
                                 "a" * 32 + "\0" + "a" * 31, "A" * 64, ".." + "a" * 62])
def test_a_key_cannot_name_a_path_outside_the_store(tmp_path, key):
    store = ArtifactStore(str(tmp_path / "store"))
    for call in (lambda: store.get(key), lambda: store.write(key, b"x", "cubin", {}),
                 lambda: store.remove(key), lambda: store.sidecar_path(key),
                 lambda: store.image_path(key, "cubin"), lambda: cache_key(key, "13.0")):
        with pytest.raises(ValueError):
            call()
    with pytest.raises(ValueError):
        store.image_path("a" * 64, "../cubin")
    assert not (tmp_path / "store").exists() or list((tmp_path / "store").iterdir()) == []


def test_scan_ignores_names_that_are_not_entries(tmp_path):
    store = ArtifactStore(str(tmp_path / "store"))
    store.write("b" * 64, b"\x7fELF", "cubin", {})
    for junk in ("notes.txt", "x" * 64 + ".cubin", "b" * 64 + ".cubin.bak", "..json"):
        (tmp_path / "store" / junk).write_text("junk")
    assert [e.key for e in store.scan()] == ["b" * 64]
    store.clear()
    assert sorted(os.listdir(tmp_path / "store")) == sorted(
        ["notes.txt", "x" * 64 + ".cubin", "b" * 64 + ".cubin.bak", "..json"])


def modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode)
            for p in [root, *root.rglob("*")]}


def test_kernel_cache_is_private_whatever_the_umask(requests, isolated_cache):
    pytest.importorskip("cuda.bindings.nvrtc")
    old = os.umask(0)
    try:
        find_or_build(requests[0])
    finally:
        os.umask(old)
    found = modes(isolated_cache)
    for name, mode in found.items():
        want = 0o700 if (isolated_cache / name).is_dir() else 0o600
        assert mode == want, (name, oct(mode), found)


def test_import_hook_cache_is_private(tmp_path, isolated_cache):
    (tmp_path / "private_mod.py").write_text(KERNELS)
    (tmp_path / "plain_mod.py").write_text("X = 1\n")
    script = "import os; os.umask(0o022); import gpu_native, plain_mod, private_mod"
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                         env=env_for(isolated_cache, PYTHONDONTWRITEBYTECODE="1",
                                     PYTHONPATH=f"{REPO}{os.pathsep}{tmp_path}"),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    found = modes(isolated_cache)
    assert any(name.endswith(".pyc") for name in found), found
    wrong = {name: oct(mode) for name, mode in found.items()
             if mode != (0o700 if (isolated_cache / name).is_dir() else 0o600)}
    assert not wrong, wrong


def test_a_world_writable_cache_directory_is_not_trusted(requests, isolated_cache):
    from gpu_native.cache import artifact_id, user_store
    from gpu_native.cache.locations import nvrtc_records_dir
    from gpu_native.cache.nvrtc_probe import version_for_keys

    pytest.importorskip("cuda.bindings.nvrtc")
    store = user_store()
    os.makedirs(store.directory, mode=0o700)
    os.chmod(store.directory, 0o777)  # shared storage, writable by anyone
    key = cache_key(artifact_id(requests[0]), version_for_keys(nvrtc_records_dir()))
    planted = b"\x7fELF planted by someone else"
    store.write(key, planted, "cubin", {})  # what an attacker can do: the hash matches
    got, _messages = caught_cache_warnings(lambda: find_or_build(requests[0]))
    assert got.image != planted


# ---- the import hook's caches: nothing is run from where someone else could write ---------------------

FOREIGN_UID = 12345  # any user but the one running the tests

# Imports the module, runs a kernel on the simulator and prints what the tests look at.
HOOK_CHILD = textwrap.dedent('''\
    import json, numpy as np
    import gpu_native as gn, hooked
    import _gpu_native_startup as startup
    a = gn.to_device(np.arange(8, dtype=np.float32))
    c = gn.empty(8, gn.f32)
    hooked.twice.launch(gn.GridDim1D(1), gn.BlockDim1D(8), 0, gn.DEFAULT_STREAM)(a, c)
    print("CHILD " + json.dumps({
        "loader": type(hooked.__spec__.loader).__name__,
        "module": startup.status()["modules"].get("hooked"),
        "doubled": c.to_host().tolist() == [2.0 * i for i in range(8)],
    }))
    ''')


def needs_chown(owner: str) -> None:
    if owner != "foreign":
        return
    if not hasattr(os, "chown") or os.getuid() != 0:
        pytest.skip("giving a file to another user needs root")


def run_hooked(project: Path, cache: Path, **env: str) -> tuple[dict, str]:
    env.setdefault("PYTHONDONTWRITEBYTECODE", "")  # empty: __pycache__ is written
    out = subprocess.run([sys.executable, "-W", "always::UserWarning", "-c", HOOK_CHILD],
                         cwd=project, env=env_for(cache, GPU_NATIVE_BACKEND="sim",
                                                  PYTHONPATH=f"{REPO}{os.pathsep}{project}",
                                                  **env),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("CHILD "))
    return json.loads(line[len("CHILD "):]), out.stderr


def make_untrusted(path: Path, how: str) -> None:
    """Make a file or directory writable by others (``mode``) or someone else's (``foreign``)."""
    if how == "foreign":
        os.chown(path, FOREIGN_UID, -1)
    else:
        path.chmod(int(how, 8))


@pytest.fixture
def hooked_project(tmp_path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "hooked.py").write_text(KERNELS)
    return project


def plant_entry(entry: Path) -> bytes:
    """Replace a rewritten-module entry by code that leaves a marker file behind, with a key
    that still matches and the checksum recomputed: what anyone who can write there can do."""
    import hashlib
    import importlib.util
    import marshal

    from gpu_native.importhook import pycache

    key, code = pycache.read(str(entry))
    # The module still works (its kernels transpiled by their decorators), so only the marker
    # tells that the planted code ran; on the first line, so that every line keeps its number.
    planted = compile(marker_code("planted-entry") + "; " + KERNELS, code.co_filename, "exec")
    payload = marshal.dumps((key, planted))
    mode = stat.S_IMODE(entry.stat().st_mode)
    entry.write_bytes(importlib.util.MAGIC_NUMBER + b"GNpy" +
                      hashlib.blake2b(payload, digest_size=16).digest() + payload)
    entry.chmod(mode)
    assert pycache.read(str(entry))[1] == planted  # well-formed: a hook that trusted it runs it
    return entry.read_bytes()


class TestImportHookCacheTrust:
    """The rewritten-module cache and the no-kernels record decide what code runs: they are
    believed only where the user alone could have written them (the kernel cache's rule)."""

    @pytest.mark.parametrize("target,how", [
        ("directory", "0o777"), ("directory", "0o770"), ("directory", "foreign"),
        ("file", "0o666"), ("file", "0o620"), ("file", "foreign"),
    ])
    def test_a_planted_entry_in_the_user_cache_is_never_run(self, hooked_project, isolated_cache,
                                                            target, how):
        needs_chown(how)
        first, _ = run_hooked(hooked_project, isolated_cache, PYTHONDONTWRITEBYTECODE="1")
        entry = Path(first["module"]["cache_file"])
        assert entry.parent == isolated_cache / "modules"
        planted = plant_entry(entry)
        make_untrusted(entry.parent if target == "directory" else entry, how)

        child, stderr = run_hooked(hooked_project, isolated_cache, PYTHONDONTWRITEBYTECODE="1")
        assert executed(hooked_project) == []
        assert child["loader"] == "KernelModuleLoader" and child["doubled"]
        assert child["module"]["cache"] == "miss"
        assert child["module"]["cache_file"] is None  # nor written there
        assert entry.read_bytes() == planted  # left where it is
        assert stderr.count("cannot be trusted") == 1, stderr
        assert "CacheWarning" in stderr and str(entry if target == "file" else entry.parent) in stderr

    @pytest.mark.parametrize("target", ["file", "directory"])
    def test_a_planted_entry_beside_the_source_writable_by_more_users_is_never_run(
            self, hooked_project, isolated_cache, target):
        first, _ = run_hooked(hooked_project, isolated_cache)
        entry = Path(first["module"]["cache_file"])
        assert entry.parent == hooked_project / "__pycache__"
        planted = plant_entry(entry)
        make_untrusted(entry if target == "file" else entry.parent, "0o666" if target == "file"
                       else "0o777")

        child, stderr = run_hooked(hooked_project, isolated_cache)
        assert executed(hooked_project) == []
        assert child["loader"] == "KernelModuleLoader" and child["doubled"]
        assert child["module"]["cache"] == "miss"
        # Cached in gpu_native's own directory instead, and the planted entry left alone.
        assert Path(child["module"]["cache_file"]).parent == isolated_cache / "modules"
        assert entry.read_bytes() == planted
        assert stderr.count("cannot be trusted") == 1, stderr
        again, stderr = run_hooked(hooked_project, isolated_cache)
        assert again["module"]["cache"] == "hit" and executed(hooked_project) == []

    @pytest.mark.parametrize("target,how", [
        ("private", None), ("directory", "0o777"), ("directory", "foreign"), ("file", "0o620"),
        ("file", "foreign"),
    ])
    def test_a_planted_no_kernels_record_hides_nothing(self, hooked_project, isolated_cache,
                                                       target, how):
        import marshal

        import _gpu_native_startup as startup

        needs_chown(how)
        source = hooked_project / "hooked.py"
        st = source.stat()
        record = Path(startup._negative_cache_file())
        assert record.parent == isolated_cache / "modules"
        record.parent.mkdir(mode=0o700, parents=True)
        record.write_bytes(marshal.dumps({str(source): (st.st_mtime_ns, st.st_size)}))
        record.chmod(0o600)
        planted = record.read_bytes()
        if target != "private":
            make_untrusted(record if target == "file" else record.parent, how)

        child, stderr = run_hooked(hooked_project, isolated_cache)
        assert child["doubled"]
        if target == "private":  # the control: a record of the user's own is believed
            assert child["loader"] == "SourceFileLoader"
            assert "cannot be trusted" not in stderr
            return
        assert child["loader"] == "KernelModuleLoader"
        assert child["module"]["cache"] == "miss"
        assert record.read_bytes() == planted  # neither believed nor written over
        assert stderr.count("cannot be trusted") == 1, stderr


# ---- nothing is unpickled ----------------------------------------------------------------------------

# Loading, not pickling: kernels pickle by reference (module and name) for multiprocessing.
UNPICKLING = re.compile(
    r"\b(pickle|cPickle|_pickle|dill|cloudpickle|jsonpickle)\.(loads?|Unpickler)\b|"
    r"\bUnpickler\b|\bshelve\.open\b|yaml\.(unsafe_)?load\b|allow_pickle\s*=\s*True|"
    r"\bmarshal\.loads?\(")
# marshal is how CPython caches code (.pyc): the import hook's caches of rewritten modules (a
# checked-hash pyc beside CPython's own) and of files without kernels (a dict of stamps).  The
# IR codec reads the bytes literal of a rewritten module (plain data only; whatever else marshal
# could make is refused, see tests/simulator/test_sim_ir.py::TestMalformed).
MARSHAL_ALLOWED = {"gpu_native/importhook/pycache.py", "_gpu_native_startup.py",
                   "gpu_native/ircodec.py"}


def test_no_unpickling_anywhere_in_gpu_native():
    for sample in ("pickle.loads(data)", "x = pickle.Unpickler(f)", "marshal.load(f)",
                   "np.load(p, allow_pickle=True)", "shelve.open(path)"):
        assert UNPICKLING.search(sample), sample
    offenders = []
    files = [*PACKAGE.rglob("*.py"), REPO / "_gpu_native_startup.py"]
    for path in files:
        relative = path.relative_to(REPO).as_posix()
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            for match in UNPICKLING.finditer(code):
                if match.group(0).startswith("marshal") and relative in MARSHAL_ALLOWED:
                    continue
                offenders.append(f"{relative}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


class _Payload:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_pickle_payloads_planted_in_every_cache_file_never_run(requests, tmp_path,
                                                               isolated_cache):
    pytest.importorskip("cuda.bindings.nvrtc")
    marker = tmp_path / "PWNED"
    payload = pickle.dumps(_Payload(str(marker)))
    find_or_build(requests[0])
    (tmp_path / "mod_a.py").write_text(KERNELS)
    script = "import gpu_native, mod_a"
    env = env_for(isolated_cache, PYTHONDONTWRITEBYTECODE="1",
                  PYTHONPATH=f"{REPO}{os.pathsep}{tmp_path}")
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, check=True,
                   capture_output=True, timeout=120)
    planted = [p for p in isolated_cache.rglob("*") if p.is_file()]
    assert any(p.suffix == ".cubin" for p in planted) and any(p.suffix == ".pyc" for p in planted)
    for path in planted:
        path.write_bytes(payload)
    clear_memory_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = find_or_build(requests[0])
    assert again.origin == "compiled"
    out = subprocess.run([sys.executable, "-c", script + "; print(mod_a.twice.__name__)"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "twice" in out.stdout, out.stderr
    assert not marker.exists()


# ---- hostile kernel arguments -------------------------------------------------------------------------

ARG_KERNELS = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32


    @gpu_kernel(Kernel1D)
    def copy(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = a[i]
    ''')


class FakeCAI:
    """Claims to be a CUDA array at any address with any shape."""

    def __init__(self, ptr: int, shape=(64,), typestr="<f4", readonly=False):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (ptr, readonly), "version": 3, "strides": None}


class FakeDLPack:
    """Claims to be on a CUDA device but hands out the capsule of a host NumPy array."""

    def __init__(self, host: np.ndarray, device=(2, 0)):
        self.host, self.device = host, device

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, **kwargs):
        return self.host.__dlpack__()


def hostile_arguments(host: np.ndarray) -> dict:
    capsule = host.__dlpack__()
    return {
        "numpy array": host,
        "raw address": host.ctypes.data,
        "ctypes pointer": host.ctypes.data_as(ctypes.c_void_p),
        "memoryview": memoryview(host),
        "list": host.tolist(),
        "DLPack capsule": capsule,
        "fake CUDA array interface at a host address": FakeCAI(host.ctypes.data),
        "fake DLPack object with a host tensor": FakeDLPack(host),
        "CPU DLPack object": FakeDLPack(host, device=(1, 0)),
    }


@pytest.fixture(scope="module")
def arg_kernels(tmp_path_factory):
    import importlib

    directory = tmp_path_factory.mktemp("untrusted_args")
    (directory / "untrusted_arg_kernels.py").write_text(ARG_KERNELS)
    sys.path.insert(0, str(directory))
    try:
        importlib.invalidate_caches()
        yield importlib.import_module("untrusted_arg_kernels")
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop("untrusted_arg_kernels", None)


@pytest.mark.parametrize("position", ["input", "output"])
def test_host_memory_arguments_are_refused_before_launch_on_the_simulator(arg_kernels,
                                                                          position):
    from gpu_native.runtime.backend import use

    with use("sim"):
        host = np.arange(64, dtype=np.float32)
        good_in = gn.to_device(np.full(64, 5.0, np.float32))
        out = gn.to_device(np.full(64, -1.0, np.float32))
        launch = arg_kernels.copy.launch(gn.GridDim1D(1), gn.BlockDim1D(64))
        for label, arg in hostile_arguments(host.copy()).items():
            args = (arg, out) if position == "input" else (good_in, arg)
            with pytest.raises(TypeError):
                launch(*args)
            gn.synchronize()
            np.testing.assert_array_equal(out.to_host(), -1.0, err_msg=label)  # nothing ran
        launch(good_in, out)
        np.testing.assert_array_equal(out.to_host(), 5.0)


class StubCuda:
    """Enough of the CUDA backend for the interop checks: which addresses are device memory."""

    name = "cuda"

    def __init__(self, device_ranges=()):
        self.device_ranges = list(device_ranges)

    def pointer_device(self, ptr: int):
        return 0 if any(lo <= ptr < hi for lo, hi in self.device_ranges) else None


DEVICE_BASE = 0x7F00_0000_0000


def foreign(obj, backend):
    from gpu_native.runtime import interop

    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return interop._from_cai(obj, cai, "the argument", backend, None)
    return interop._from_dlpack(obj, "the argument", backend)


def test_interop_accepts_device_memory_and_refuses_host_memory():
    backend = StubCuda([(DEVICE_BASE, DEVICE_BASE + (1 << 20))])
    arr = foreign(FakeCAI(DEVICE_BASE, shape=(16,)), backend)
    assert arr.shape == (16,) and arr._gn_ptr == DEVICE_BASE
    host = np.zeros(16, np.float32)
    with pytest.raises(TypeError, match="not in device memory"):
        foreign(FakeCAI(host.ctypes.data), backend)
    with pytest.raises(TypeError, match="not in CUDA device memory"):
        foreign(FakeDLPack(host, device=(1, 0)), backend)


def test_interop_refuses_a_null_pointer_with_elements():
    with pytest.raises((TypeError, ValueError)):
        foreign(FakeCAI(0, shape=(1024,)), StubCuda())


def test_interop_refuses_negative_dimensions():
    backend = StubCuda([(DEVICE_BASE, DEVICE_BASE + (1 << 20))])
    with pytest.raises(ValueError):
        foreign(FakeCAI(DEVICE_BASE, shape=(-1,)), backend)


def test_interop_refuses_a_dlpack_capsule_of_host_memory_behind_a_cuda_claim():
    host = np.zeros(16, np.float32)
    with pytest.raises(TypeError):
        foreign(FakeDLPack(host), StubCuda())


# On a GPU every hostile argument runs in a child process: if one were accepted, the launch could
# lose the context (or, with HMM, really write host memory), which must not take the test
# session down with it.
GPU_ARGUMENT_CHILD = textwrap.dedent('''\
    import sys, ctypes
    sys.path.insert(0, sys.argv[1])
    sys.path.insert(0, sys.argv[2])
    import numpy as np
    import gpu_native as gn
    import test_untrusted_cache as t
    import untrusted_arg_kernels as k

    case = sys.argv[3]
    host = np.arange(64, dtype=np.float32)
    good = gn.to_device(np.full(64, 5.0, np.float32))
    out = gn.to_device(np.full(64, -1.0, np.float32))
    launch = k.copy.launch(gn.GridDim1D(1), gn.BlockDim1D(64))
    keep = []
    if case == "pinned host memory":
        from cuda.bindings import driver as drv
        err, ptr = drv.cuMemHostAlloc(256, 0)
        arg = t.FakeCAI(int(ptr))
    elif case == "null pointer":
        arg = t.FakeCAI(0, shape=(1024,))
    elif case == "negative shape":
        arg = t.FakeCAI(good.ptr, shape=(-1,))
    elif case == "shape beyond the allocation":
        arg = t.FakeCAI(good.ptr, shape=(1 << 28,))
    elif case == "torch CPU tensor":
        import torch
        arg = torch.arange(64, dtype=torch.float32)
    elif case == "torch CPU DLPack capsule":
        import torch
        arg = torch.utils.dlpack.to_dlpack(torch.arange(64, dtype=torch.float32))
    else:
        arg = t.hostile_arguments(host)[case]
    for position in ("input", "output"):
        args = (arg, out) if position == "input" else (good, arg)
        try:
            launch(*args)
            gn.synchronize()
        except TypeError as exc:
            print(f"{position}: REFUSED TypeError: {exc}")
        except ValueError as exc:
            print(f"{position}: REFUSED ValueError: {exc}")
        except Exception as exc:
            print(f"{position}: LAUNCHED then {type(exc).__name__}: {exc}")
            break
        else:
            print(f"{position}: LAUNCHED without error")
    print("output untouched:", bool(np.all(out.to_host() == -1.0)))
    ''')

SAFE_CASES = ["numpy array", "raw address", "ctypes pointer", "memoryview", "list",
              "DLPack capsule", "fake CUDA array interface at a host address",
              "CPU DLPack object", "pinned host memory", "torch CPU tensor",
              "torch CPU DLPack capsule"]
HOLES = {
    "null pointer": test_interop_refuses_a_null_pointer_with_elements,
    "negative shape": test_interop_refuses_negative_dimensions,
    "fake DLPack object with a host tensor":
        test_interop_refuses_a_dlpack_capsule_of_host_memory_behind_a_cuda_claim,
    "shape beyond the allocation": None,  # refused: interop checks cuMemGetAddressRange
}


def run_gpu_argument_case(case: str, tmp_path, arg_kernels_dir: str) -> str:
    out = subprocess.run([sys.executable, "-c", GPU_ARGUMENT_CHILD, os.path.dirname(__file__),
                          arg_kernels_dir, case], env=env_for(tmp_path / "cache"),
                         capture_output=True, text=True, timeout=180)
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def arg_kernels_dir(arg_kernels):
    return os.path.dirname(arg_kernels.__file__)


@pytest.mark.gpu
@pytest.mark.parametrize("case", SAFE_CASES)
def test_host_memory_arguments_are_refused_before_launch_on_the_gpu(case, tmp_path,
                                                                    arg_kernels_dir):
    if case.startswith("torch"):
        pytest.importorskip("torch")
    text = run_gpu_argument_case(case, tmp_path, arg_kernels_dir)
    assert "input: REFUSED TypeError" in text and "output: REFUSED TypeError" in text, text
    assert "output untouched: True" in text, text


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(HOLES))
def test_hostile_interfaces_are_refused_before_launch_on_the_gpu(case, tmp_path,
                                                                 arg_kernels_dir, request):
    # Holes still open are strict xfails (their unit test carries the reason); fixed ones pass.
    marks = getattr(HOLES[case], "pytestmark", [])
    reason = next((m.kwargs["reason"] for m in marks if m.name == "xfail"), None)
    if reason is not None:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
    text = run_gpu_argument_case(case, tmp_path, arg_kernels_dir)
    assert "input: REFUSED" in text and "output: REFUSED" in text, text
    assert "output untouched: True" in text, text


TAMPERED_CHILD = textwrap.dedent('''\
    import sys, warnings
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import gpu_native as gn
    import untrusted_kernels as m
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = gn.to_device(np.arange(256, dtype=np.float32))
        c = gn.empty(256)
        m.twice.launch(gn.GridDim1D(2), gn.BlockDim1D(128))(a, c)
        ok = bool(np.all(c.to_host() == 2 * np.arange(256, dtype=np.float32)))
    print("RESULT", ok)
    print("WARNINGS", [str(w.message) for w in caught if "corrupt" in str(w.message)])
    ''')


@pytest.mark.gpu
def test_a_tampered_precompiled_cubin_never_reaches_the_driver(tmp_path, isolated_cache):
    pre = build_precompiled(tmp_path, isolated_cache)
    tamper_cubins(pre)
    out = subprocess.run([sys.executable, "-c", TAMPERED_CHILD, str(tmp_path)],
                         env=env_for(tmp_path / "fresh-cache", GPU_NATIVE_PRECOMPILED=str(pre)),
                         capture_output=True, text=True, timeout=300)
    assert "RESULT True" in out.stdout, out.stdout + out.stderr
    assert "corrupt" in out.stdout and "ignoring it" in out.stdout, out.stdout


# ---- hostile source: shapes that break parsers, bytes that are not UTF-8, files that are not files --
#
# CPython's parser decides what a module is: what it rejects is its SyntaxError at its location;
# what it accepts imports, however deep its host code (libcst, whose native parser crashes on some
# of it, only ever sees kernel and device functions).  Kernels nest at most MAX_DEPTH levels, or
# the error says "expression too deep" at the expression.  Every case runs in a child process
# with a timeout: a crash or a hang fails the test instead of killing the session.

SMALL_KERNEL = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32


    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = a[i] * 2.0
    ''')
HOST_LINE = SMALL_KERNEL.count("\n") + 2  # the line each hostile host statement is written on

IMPORT_AND_RUN = textwrap.dedent('''\
    import sys
    import numpy as np
    import gpu_native as gn
    from gpu_native.runtime.backend import use
    sys.setrecursionlimit(sys.getrecursionlimit())
    def imported(depth):  # import from `depth` frames down, as an application might
        return __import__(sys.argv[1]) if depth == 0 else imported(depth - 1)
    m = imported(int(sys.argv[2]))
    with use("sim"):
        a = gn.to_device(np.arange(8, dtype=np.float32))
        c = gn.empty(8, gn.f32)
        m.k.launch(gn.GridDim1D(1), gn.BlockDim1D(8))(a, c)
        print("RESULT", c.to_host().tolist())
    ''')


def run_hostile(args, cwd, cache, timeout=60, **env) -> subprocess.CompletedProcess:
    """``python ARGS`` with the repository and ``cwd`` importable; a crash is a negative exit
    status, a hang fails the test."""
    env = env_for(cache, PYTHONPATH=f"{REPO}{os.pathsep}{cwd}", **env)
    try:
        return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args} ran for more than {timeout} s")


def import_module(name, cwd, cache, *, hook=True, depth=0) -> subprocess.CompletedProcess:
    extra = {} if hook else {"GPU_NATIVE_DISABLE_HOOK": "1"}
    out = run_hostile(["-c", IMPORT_AND_RUN, name, str(depth)], cwd, cache, **extra)
    assert out.returncode >= 0, f"crashed with signal {-out.returncode}: {out.stderr[-2000:]}"
    return out


def expand(name, cwd, cache, *extra) -> subprocess.CompletedProcess:
    out = run_hostile(["-m", "gpu_native.cli", "expand", name, *extra], cwd, cache)
    assert out.returncode >= 0, f"crashed with signal {-out.returncode}: {out.stderr[-2000:]}"
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    return out


def precompile_file(name, cwd, cache) -> subprocess.CompletedProcess:
    pytest.importorskip("cuda.bindings.nvrtc")
    out = run_hostile(["-m", "gpu_native.cli", "precompile", name, "--arch", "sm_90", "--out",
                       "pre", "-q", "-j", "1"], cwd, cache, timeout=300)
    assert out.returncode >= 0, f"crashed with signal {-out.returncode}: {out.stderr[-2000:]}"
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    return out


def nested(n: int) -> str:
    return "(" * n + "1" + ")" * n


@pytest.mark.parametrize("how", ["import", "expand", "precompile"])
def test_three_thousand_nested_brackets_are_pythons_syntax_error_not_a_crash(tmp_path,
                                                                            isolated_cache, how):
    (tmp_path / "deep_brackets.py").write_text(SMALL_KERNEL + f"\nX = {nested(3000)}\n")
    where = f"deep_brackets.py:{HOST_LINE}:205: error: syntax error: too many nested parentheses"
    if how == "import":
        out = import_module("deep_brackets", tmp_path, isolated_cache)
        assert out.returncode == 1
        assert out.stderr.rstrip().splitlines()[-1] == \
            "SyntaxError: too many nested parentheses", out.stderr[-2000:]
        assert f'deep_brackets.py", line {HOST_LINE}' in out.stderr
        assert "TranspileError" not in out.stderr and "importhook" not in out.stderr
    elif how == "expand":
        out = expand("deep_brackets.py", tmp_path, isolated_cache)
        assert out.returncode == 1 and out.stderr.startswith(where), out.stderr[:500]
    else:
        out = precompile_file("deep_brackets.py", tmp_path, isolated_cache)  # absolute path
        assert out.returncode == 1 and out.stderr.startswith(f"{tmp_path}/{where}"), \
            out.stderr[:500]


# Host code CPython compiles, however deep it is: none of it may be walked recursively.
DEEP_HOST = {
    "500-term sum": "X = " + " + ".join(["1"] * 500),
    "150-deep nested list": "X = " + "[" * 150 + "]" * 150,
    # CPython accepts this; libcst's native parser dies on it (so it must never see host code).
    "20000-term and": "X = " + " and ".join(["1"] * 20000),
}


@pytest.mark.parametrize("how", ["hook", "no hook", "expand"])
@pytest.mark.parametrize("shape", sorted(DEEP_HOST))
def test_deep_host_code_that_python_compiles_imports(tmp_path, isolated_cache, shape, how):
    name = "deep_host_" + re.sub(r"\W", "_", shape)
    source = SMALL_KERNEL + "\n" + DEEP_HOST[shape] + "\n"
    (tmp_path / f"{name}.py").write_text(source)
    if how == "expand":
        out = expand(f"{name}.py", tmp_path, isolated_cache)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "_spec=" in out.stdout and out.stdout.endswith(DEEP_HOST[shape] + "\n")
    else:
        out = import_module(name, tmp_path, isolated_cache, hook=how == "hook")
        assert out.returncode == 0, out.stderr[-3000:]
        assert "RESULT [0.0, 2.0, 4.0" in out.stdout


def kernel_with(expression: str) -> str:
    return SMALL_KERNEL.replace("a[i] * 2.0", expression)


@pytest.mark.parametrize("how", ["hook", "no hook", "expand"])
def test_a_400_term_sum_in_a_kernel_is_a_located_error(tmp_path, isolated_cache, how):
    (tmp_path / "deep_kernel.py").write_text(kernel_with("a[i]" + " + 1.0" * 400))
    where = "deep_kernel.py:7:12: error: expression too deep"
    if how == "expand":
        out = expand("deep_kernel.py", tmp_path, isolated_cache)
        assert out.returncode == 1 and out.stderr.startswith(where), out.stderr[:500]
        caret = out.stderr.splitlines()[2]
        assert caret.strip() and set(caret.strip()) == {"^"} and caret.index("^") == 4 + 11
        return
    out = import_module("deep_kernel", tmp_path, isolated_cache, hook=how == "hook")
    assert out.returncode == 1
    assert "TranspileError: " in out.stderr and where in out.stderr, out.stderr[-3000:]
    assert "RecursionError" not in out.stderr


def test_a_deep_kernel_within_the_limit_runs_when_imported_from_deep_in_a_program(
        tmp_path, isolated_cache):
    from gpu_native.frontend.source import MAX_DEPTH

    terms = MAX_DEPTH - 10
    (tmp_path / "deep_ok.py").write_text(kernel_with("a[i]" + " + 1.0" * terms))
    out = import_module("deep_ok", tmp_path, isolated_cache, depth=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"RESULT [{float(terms)}, {1.0 + terms}" in out.stdout


@pytest.mark.parametrize("shape", ["and", "strings", "device chain", "blocks"])
def test_other_deep_kernels_are_located_errors_not_crashes(tmp_path, isolated_cache, shape):
    if shape == "and":  # one BoolOp for CPython, 2,000 nested operations for libcst
        source = kernel_with("a[i] if " + " and ".join(["a[i] > 0.0"] * 2000) + " else 0.0")
    elif shape == "strings":  # one constant for CPython, nested concatenations for libcst
        source = SMALL_KERNEL.replace("c[i] = a[i] * 2.0", "assert a[i] > 0.0, " + '"x" ' * 1500
                                      + "\n    c[i] = a[i]")
    elif shape == "device chain":  # each function shallow; the checker nests per call
        chain = ["@gpu_device\ndef d0(x: f32) -> f32:\n    return x\n"]
        chain += [f"@gpu_device\ndef d{n}(x: f32) -> f32:\n    return d{n - 1}(x) + 1.0\n"
                  for n in range(1, 300)]
        source = SMALL_KERNEL.replace("gpu_kernel, ", "gpu_kernel, gpu_device, ").replace(
            "a[i] * 2.0", "d299(a[i])") + "\n\n" + "\n\n".join(chain)
    else:  # 90 nested blocks: CPython allows 100
        body = "".join("    " * (d + 1) + "if a[i] > 0.0:\n" for d in range(90))
        source = SMALL_KERNEL.replace("    c[i] = a[i] * 2.0\n", body + "    " * 91 + "c[i] = 1.0\n")
    (tmp_path / "deep_other.py").write_text(source)
    out = expand("deep_other.py", tmp_path, isolated_cache)
    assert out.returncode == 1
    assert re.match(r"deep_other\.py:\d+:\d+: error: (expression too deep|statements nested too "
                    r"deeply)", out.stderr), out.stderr[:1000]


# ---- source bytes: decoded as Python decodes them, and only from regular files

LATIN1 = "# -*- coding: latin-1 -*-\n# Größe: café\n" + SMALL_KERNEL + 'NAME = "café"\n'


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
@pytest.mark.parametrize("how", ["import", "expand", "precompile"])
def test_a_source_with_a_coding_cookie_is_decoded_as_python_does(tmp_path, isolated_cache,
                                                                 encoding, how):
    source = LATIN1.replace("latin-1", encoding) + "EURO = '€'\n" * (encoding == "cp1252")
    (tmp_path / "coded.py").write_bytes(source.encode(encoding))
    if how == "import":
        out = import_module("coded", tmp_path, isolated_cache)
        assert out.returncode == 0 and "RESULT [0.0, 2.0" in out.stdout, out.stderr[-2000:]
    elif how == "expand":
        out = expand("coded.py", tmp_path, isolated_cache)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "# Größe: café" in out.stdout and "_spec=" in out.stdout
    else:
        out = precompile_file("coded.py", tmp_path, isolated_cache)
        assert out.returncode == 0, out.stderr[-2000:]
        assert (tmp_path / "pre" / "manifest.json").exists()


@pytest.mark.parametrize("how", ["import", "expand", "precompile"])
def test_a_source_that_is_not_utf8_and_declares_nothing_is_a_located_error(tmp_path,
                                                                           isolated_cache, how):
    (tmp_path / "undeclared.py").write_bytes(
        (SMALL_KERNEL + 'NAME = "café"\n').encode("latin-1"))
    line = HOST_LINE - 1
    if how == "import":  # Python's own SyntaxError, as without gpu_native
        out = import_module("undeclared", tmp_path, isolated_cache)
        assert out.returncode == 1
        assert out.stderr.rstrip().splitlines()[-1].startswith("SyntaxError: "), out.stderr
        assert "UnicodeDecodeError" not in out.stderr and "importhook" not in out.stderr
        return
    out = expand("undeclared.py", tmp_path, isolated_cache) if how == "expand" else \
        precompile_file("undeclared.py", tmp_path, isolated_cache)
    assert out.returncode == 1
    shown = "undeclared.py" if how == "expand" else f"{tmp_path}/undeclared.py"
    assert out.stderr.startswith(f"{shown}:{line}:12: error: cannot decode the file: byte 0xe9 "
                                 "is not valid utf-8"), out.stderr[:500]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("command", ["expand", "precompile"])
def test_a_fifo_or_a_device_is_refused_as_not_a_regular_file(tmp_path, isolated_cache, kind,
                                                             command):
    if kind == "fifo":
        path = tmp_path / "pipe.py"
        os.mkfifo(path)  # no writer: reading it would block forever
    else:
        path = Path("/dev/zero")  # endless
    if command == "expand":
        out = expand(str(path), tmp_path, isolated_cache)
    else:
        out = precompile_file(str(path), tmp_path, isolated_cache)
    assert out.returncode != 0
    assert "not a regular file" in out.stderr, out.stderr


def test_precompile_of_a_directory_refuses_a_fifo_among_its_modules(tmp_path, isolated_cache):
    pkg = tmp_path / "pipes"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kern.py").write_text(SMALL_KERNEL)
    os.mkfifo(pkg / "stuck.py")
    out = precompile_file("pipes", tmp_path, isolated_cache)
    assert out.returncode == 1 and "stuck.py: not a regular file" in out.stderr, out.stderr


# ---- syntax errors at CPython's line and column, through the hook and expand

SYNTAX_ERRORS = {
    # name: (the kernel's statement, CPython's message, line, column (1-based))
    "unclosed parenthesis": ("c[i] = (a[i] * 2.0", "'(' was never closed", 7, 12),
    "tabs and spaces": ("\tc[i] = a[i] * 2.0", "inconsistent use of tabs and spaces in "
                        "indentation", 7, None),
    "NUL byte": ("c[i] = a[i]\0 * 2.0", "source code cannot contain null bytes", 7, 16),
}


@pytest.mark.parametrize("how", ["import", "expand"])
@pytest.mark.parametrize("case", sorted(SYNTAX_ERRORS))
def test_a_syntax_error_is_reported_at_pythons_line(tmp_path, isolated_cache, case, how):
    statement, message, line, col = SYNTAX_ERRORS[case]
    source = SMALL_KERNEL.replace("    c[i] = a[i] * 2.0", "    " + statement) + \
        "\n\ndef host():\n    return 1\n"
    if case == "tabs and spaces":
        source = source.replace("    \tc[i]", "\tc[i]")
    (tmp_path / "broken_kernel.py").write_text(source)
    if how == "import":
        out = import_module("broken_kernel", tmp_path, isolated_cache)
        assert out.returncode == 1
        last = out.stderr.rstrip().splitlines()
        assert last[-1].endswith(f"Error: {message}"), out.stderr
        assert f'broken_kernel.py", line {line}\n' in out.stderr, out.stderr
        assert "TranspileError" not in out.stderr and "importhook" not in out.stderr
        if col is not None:  # the caret under CPython's column
            assert last[-2].index("^") - last[-3].index(source.splitlines()[line - 1].strip()[0]) \
                == col - 1 - (len(source.splitlines()[line - 1]) -
                              len(source.splitlines()[line - 1].lstrip())), out.stderr
    else:
        out = expand("broken_kernel.py", tmp_path, isolated_cache)
        assert out.returncode == 1
        assert out.stderr.startswith(f"broken_kernel.py:{line}:{col or 1}: error: syntax error"), \
            out.stderr
        assert message in out.stderr.splitlines()[0]
