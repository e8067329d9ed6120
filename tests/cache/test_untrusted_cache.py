"""Untrusted cache contents: nothing read from a cache runs or reaches the driver unless the user
alone could have written it.

* Cache and precompiled entries are verified before they reach the driver: a tampered, swapped or
  symlinked cubin is detected and never returned.  A key cannot name a path outside the cache.
  Cache directories are private (0o700) and files 0o600, whatever the umask.
* The import hook's rewritten modules and its record of modules without kernels are taken only
  from a cache directory and file of the user's own that nobody else can write (a planted entry,
  checksum recomputed, never runs and hides nothing), and beside the source only from a
  ``__pycache__`` no more people can write than can write the source.
* Nothing is unpickled: no pickle anywhere in gpu_native, and pickle payloads planted in every
  cache file are never triggered.

Hostile source files are in ``tests/frontend/test_untrusted_source.py``, hostile kernel arguments
in ``tests/runtime/test_untrusted_arguments.py``.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

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
from tests.helpers import ROOT, child_env
from tests.helpers.hostile import cli, executed, marker_code

PACKAGE = ROOT / "gpu_native"
# Every test gets a cache directory of its own (tests/conftest.py).
pytestmark = [pytest.mark.usefixtures("isolated_cache"), pytest.mark.untrusted]


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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_import_hook_cache_is_private(tmp_path, isolated_cache):
    (tmp_path / "private_mod.py").write_text(KERNELS)
    (tmp_path / "plain_mod.py").write_text("X = 1\n")
    script = "import os; os.umask(0o022); import gpu_native, plain_mod, private_mod"
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                         env=child_env(isolated_cache, PYTHONDONTWRITEBYTECODE="1",
                                     PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}"),
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


def test_a_world_writable_cache_root_is_not_trusted_either(requests, isolated_cache, capsys):
    """docs/environment.md: a GPU_NATIVE_CACHE_DIR others can write is not used, although its
    kernels/ is private: anyone may rename kernels/ away there and put their own in its place."""
    from gpu_native import cli
    from gpu_native.cache import artifact_id, user_store
    from gpu_native.cache.locations import nvrtc_records_dir
    from gpu_native.cache.nvrtc_probe import version_for_keys

    pytest.importorskip("cuda.bindings.nvrtc")
    store = user_store()
    key = cache_key(artifact_id(requests[0]), version_for_keys(nvrtc_records_dir()))
    planted = b"\x7fELF planted by someone else"
    store.write(key, planted, "cubin", {})  # kernels/ is made private (0o700)
    os.chmod(isolated_cache, 0o777)  # shared storage, writable by anyone
    try:
        got, messages = caught_cache_warnings(lambda: find_or_build(requests[0]))
        assert got.image != planted and got.origin == "compiled"
        assert messages == [
            f"gpu_native: the cache directory holding the kernel cache at {isolated_cache} can "
            "be written by other users, so its entries cannot be trusted; compiled kernels are "
            "kept in memory for this process only. Make it private (chmod 700) or set "
            "GPU_NATIVE_CACHE_DIR."]
        assert [e.key for e in store.scan()] == [key]  # nothing written there either
        assert cli.main(["cache", "info"]) == 0
        state = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("state"))
        assert state.split(None, 1)[1] == (
            f"NOT used ({isolated_cache} can be written by other users): kernels are cached in "
            "memory and modules rewritten on every import")
    finally:
        os.chmod(isolated_cache, 0o700)


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
                         cwd=project, env=child_env(cache, GPU_NATIVE_BACKEND="sim",
                                                  PYTHONPATH=f"{ROOT}{os.pathsep}{project}",
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
        ("directory", "0o777"), ("root", "0o777"),
        pytest.param("directory", "0o770", marks=pytest.mark.slow),
        pytest.param("directory", "foreign", marks=pytest.mark.slow), ("file", "0o666"),
        pytest.param("file", "0o620", marks=pytest.mark.slow), pytest.param("file", "foreign", marks=pytest.mark.slow),
    ])
    def test_a_planted_entry_in_the_user_cache_is_never_run(self, hooked_project, isolated_cache,
                                                            target, how):
        needs_chown(how)
        first, _ = run_hooked(hooked_project, isolated_cache, PYTHONDONTWRITEBYTECODE="1")
        entry = Path(first["module"]["cache_file"])
        assert entry.parent == isolated_cache / "modules"
        planted = plant_entry(entry)
        # The cache root counts too: whoever may write there can put a modules/ of their own
        # (or a link to another) in place of the private one.
        untrusted = {"file": entry, "directory": entry.parent, "root": isolated_cache}[target]
        make_untrusted(untrusted, how)

        child, stderr = run_hooked(hooked_project, isolated_cache, PYTHONDONTWRITEBYTECODE="1")
        assert executed(hooked_project) == []
        assert child["loader"] == "KernelModuleLoader" and child["doubled"]
        assert child["module"]["cache"] == "miss"
        assert child["module"]["cache_file"] is None  # nor written there
        assert entry.read_bytes() == planted  # left where it is
        assert stderr.count("cannot be trusted") == 1, stderr
        assert "CacheWarning" in stderr and f"{untrusted} " in stderr, stderr

    @pytest.mark.slow
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
        ("private", None), ("directory", "0o777"), ("root", "0o777"),
        pytest.param("directory", "foreign", marks=pytest.mark.slow),
        pytest.param("file", "0o620", marks=pytest.mark.slow), pytest.param("file", "foreign", marks=pytest.mark.slow),
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
            make_untrusted({"file": record, "directory": record.parent,
                            "root": isolated_cache}[target], how)

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
    files = [*PACKAGE.rglob("*.py"), ROOT / "_gpu_native_startup.py"]
    for path in files:
        relative = path.relative_to(ROOT).as_posix()
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


@pytest.mark.slow
def test_pickle_payloads_planted_in_every_cache_file_never_run(requests, tmp_path,
                                                               isolated_cache):
    pytest.importorskip("cuda.bindings.nvrtc")
    marker = tmp_path / "PWNED"
    payload = pickle.dumps(_Payload(str(marker)))
    find_or_build(requests[0])
    (tmp_path / "mod_a.py").write_text(KERNELS)
    script = "import gpu_native, mod_a"
    env = child_env(isolated_cache, PYTHONDONTWRITEBYTECODE="1",
                  PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}")
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
                         env=child_env(tmp_path / "fresh-cache", GPU_NATIVE_PRECOMPILED=str(pre)),
                         capture_output=True, text=True, timeout=300)
    assert "RESULT True" in out.stdout, out.stdout + out.stderr
    assert "corrupt" in out.stdout and "ignoring it" in out.stdout, out.stdout
