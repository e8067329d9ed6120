"""The artifact cache: keys, the on-disk store, lookups, corruption, concurrency, commands."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

import gpu_native
from gpu_native import cli, headers
from gpu_native.cache import (
    ArtifactStore,
    BuildRequest,
    CacheWarning,
    artifact_id,
    cache_key,
    clear_memory_cache,
    find_or_build,
    locations,
    nvrtc_probe,
    user_store,
)
from gpu_native.cache import store as store_module
from gpu_native.cache.store import CorruptEntryError
from gpu_native.commands.cache import format_bytes
from gpu_native.rewrite import transpile_module
from tests.helpers import finishes

REPO = os.path.dirname(os.path.dirname(os.path.abspath(gpu_native.__file__)))

HELPERS = textwrap.dedent('''\
    from gpu_native import gpu_device, f32


    @gpu_device
    def scale(x: f32) -> f32:
        return x * 2.0
    ''')

KERNELS = textwrap.dedent('''\
    from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D,
                            UniqueId, f32)
    from pkg.helpers import scale

    # tuning notes: none yet


    @gpu_kernel(Kernel1D)
    def scaled(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = scale(a[idx])


    @gpu_kernel(Kernel1D)
    def scaled_sum(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = scale(a[idx]) + b[idx]


    @gpu_kernel(Kernel1D)
    def copy(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx]
    ''')


def write_package(root, helpers: str = HELPERS, kernels: str = KERNELS) -> str:
    pkg = root / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(helpers)
    (pkg / "kern.py").write_text(kernels)
    return str(pkg / "kern.py")


def requests_for(path: str, arch: str = "sm_90") -> dict[str, BuildRequest]:
    with open(path) as f:
        module = transpile_module(f.read(), path, "pkg.kern")
    out = {}
    for kernel in module.kernels:
        for variant in kernel.variants:
            request = BuildRequest.for_variant(kernel, variant, arch, path)
            out[request.label] = request
    return out


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


# Every test gets a cache directory of its own (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("isolated_cache")


@pytest.fixture(scope="module")
def kernel_requests(tmp_path_factory) -> dict[str, BuildRequest]:
    root = tmp_path_factory.mktemp("src")
    return requests_for(write_package(root))


def write_rewritten_module(source_path: str, size: int) -> Path:
    """An entry of the import hook's ``modules/`` folder, written by the hook's own code."""
    from gpu_native.importhook import pycache

    code = compile(f"DATA = {bytes(size)!r}", source_path, "exec")
    entry = pycache.user_cache_path(source_path)
    assert pycache.write(entry, {"module": "test"}, code)
    return Path(entry)


def import_kernel_module(root, cache) -> None:
    """Import ``pkg.kern`` through the hook in a new process whose ``__pycache__`` is off, so that
    the rewrite goes to ``<cache>/modules`` (with the record of modules without kernels)."""
    root.mkdir(exist_ok=True)
    write_package(root)
    subprocess.run([sys.executable, "-c", "import gpu_native, pkg.kern"], cwd=root, check=True,
                   env=subprocess_env(GPU_NATIVE_CACHE_DIR=str(cache), GPU_NATIVE_PREFETCH="0",
                                      PYTHONDONTWRITEBYTECODE="1",
                                      PYTHONPATH=os.pathsep.join([REPO, str(root)])),
                   capture_output=True, timeout=120)


def our_module_files(directory) -> list[str]:
    """Files of ``directory`` that start like the import hook's entries or its no-kernels record."""
    found = []
    for path in sorted(Path(directory).iterdir()):
        head = path.read_bytes()[:8]
        if head[4:8] == b"GNpy" or (path.suffix == ".marshal" and head[:1] in (b"{", b"\xfb")):
            found.append(path.name)
    return found


# Files that `cache clear` must leave alone: GPU_NATIVE_CACHE_DIR may be a directory with other
# things in it ($HOME, say).  Some are named exactly like ours but are not ours inside.
FOREIGN_FILES = {
    "kernels/notes.txt": b"my notes\n",
    f"kernels/{'c' * 64}.json": b'{"name": "a JSON file of another tool"}\n',
    f"kernels/{'d' * 64}.cubin": b"not a cubin\n",
    f"kernels/{'d' * 64}.ptx": b"not PTX either\n",
    "kernels/download.tmp": b"a partial download\n",
    f"kernels/.{'e' * 64}.cubin.123.0123abcd.tmp": b"named like our temporary file\n",
    "nvrtc/settings.json": b'{"theme": "dark"}\n',
    f"nvrtc/{'f' * 64}.json": b'{"schema": 1, "fingerprint": "not hashed to this name"}\n',
    "nvrtc/upload.tmp": b"a partial upload\n",
    "modules/tool.cpython-311.pyc": b"\xa7\r\r\n" + bytes(12) + b"a pyc of another tool",
    f"modules/tool-{'0' * 20}.cpython-311.gpu_native-0.1.0.pyc": b"\xa7\r\r\nXXXX not ours",
    "modules/no-kernels.cpython-311.0123456789abcdef.marshal": b"[not a dict]",
    "modules/build.tmp": b"scratch\n",
}


def entry_files(directory) -> list[str]:
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


def edited_prelude(root) -> str:
    """An include directory holding the prelude with one comment changed."""
    directory = root / "include"
    (directory / "gpu_native").mkdir(parents=True)
    text = headers.header_text()
    edited = text.replace("Report an error and end this thread.", "Report an error; end the thread.")
    assert edited != text
    (directory / "gpu_native" / "prelude.cuh").write_text(edited)
    return str(directory)


def cache_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


class TestKeys:
    def test_editing_a_device_function_in_another_module_changes_its_callers_keys(
            self, tmp_path):
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        before = requests_for(write_package(tmp_path / "a"))
        after = requests_for(write_package(tmp_path / "b",
                                           helpers=HELPERS.replace("x * 2.0", "x * 3.0")))
        for label in ("pkg.kern.scaled", "pkg.kern.scaled_sum"):
            assert artifact_id(before[label]) != artifact_id(after[label]), label
        assert artifact_id(before["pkg.kern.copy"]) == artifact_id(after["pkg.kern.copy"])

    def test_editing_a_comment_elsewhere_keeps_every_key(self, tmp_path):
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        before = requests_for(write_package(tmp_path / "a"))
        edited = KERNELS.replace("# tuning notes: none yet", "# tuning notes: scale is fine")
        assert edited != KERNELS and edited.count("\n") == KERNELS.count("\n")
        after = requests_for(write_package(tmp_path / "b", kernels=edited))
        assert before.keys() == after.keys()
        for label in before:
            assert artifact_id(before[label]) == artifact_id(after[label]), label

    def test_editing_the_prelude_header_changes_every_key(self, kernel_requests, tmp_path,
                                                          monkeypatch):
        # The sources only name the prelude, so the key must hash the header's text itself.
        for request in kernel_requests.values():
            assert f'#include "{headers.PRELUDE}"' in request.source
            assert "struct gn_error_record" not in request.source
        before = {label: artifact_id(r) for label, r in kernel_requests.items()}
        monkeypatch.setattr(headers, "INCLUDE_DIR", edited_prelude(tmp_path))
        after = {label: artifact_id(r) for label, r in kernel_requests.items()}
        assert before.keys() == after.keys() and len(before) >= 3
        for label in before:
            assert after[label] != before[label], label
        monkeypatch.undo()
        assert {label: artifact_id(r) for label, r in kernel_requests.items()} == before

    def test_key_covers_arch_options_and_nvrtc_version(self, kernel_requests):
        request = kernel_requests["pkg.kern.scaled"]
        base = artifact_id(request)
        variants = [
            BuildRequest(request.source, request.symbol, "sm_80"),
            BuildRequest(request.source, request.symbol, request.arch, fastmath=True),
            BuildRequest(request.source, request.symbol, request.arch, max_registers=32),
            BuildRequest(request.source + "\n", request.symbol, request.arch),
        ]
        assert len({base, *(artifact_id(v) for v in variants)}) == 5
        # Messages and locations do not change what is compiled.
        relabelled = BuildRequest(request.source, request.symbol, request.arch,
                                  label="x", module="y", module_file="/z.py")
        assert artifact_id(relabelled) == base
        assert cache_key(base, "13.0") != cache_key(base, "13.5")
        for key in (base, cache_key(base, "13.0")):
            assert len(key) == 64 and set(key) <= set("0123456789abcdef")

    @pytest.mark.parametrize("key", ["../" + "a" * 61, "A" * 64, "a" * 63, "a" * 64 + "/",
                                     "/etc/passwd", ""])
    def test_store_refuses_keys_that_are_not_hex_digests(self, tmp_path, key):
        store = ArtifactStore(str(tmp_path / "s"))
        with pytest.raises(ValueError, match="invalid cache key"):
            store.get(key)
        with pytest.raises(ValueError, match="invalid cache key"):
            store.write(key, b"x", "cubin", {})


class TestLookup:
    def test_an_edited_prelude_header_is_compiled_again(self, kernel_requests, tmp_path,
                                                        monkeypatch, isolated_cache):
        request = kernel_requests["pkg.kern.scaled"]
        first = find_or_build(request)
        clear_memory_cache()
        assert find_or_build(request).origin == "cache"
        monkeypatch.setattr(headers, "INCLUDE_DIR", edited_prelude(tmp_path))
        clear_memory_cache()
        edited = find_or_build(request)
        assert edited.origin == "compiled" and edited.key != first.key

    def test_compile_then_memory_then_disk(self, kernel_requests, isolated_cache):
        request = kernel_requests["pkg.kern.scaled"]
        first = find_or_build(request)
        assert (first.origin, first.kind, first.arch) == ("compiled", "cubin", "sm_90")
        assert find_or_build(request).origin == "memory"
        clear_memory_cache()
        again = find_or_build(request)
        assert again.origin == "cache"
        assert again.image == first.image and again.key == first.key

    def test_entry_layout_and_permissions(self, kernel_requests, isolated_cache):
        artifact = find_or_build(kernel_requests["pkg.kern.copy"])
        kernels = isolated_cache / "kernels"
        assert entry_files(kernels) == [f"{artifact.key}.cubin", f"{artifact.key}.json"]
        meta = json.loads((kernels / f"{artifact.key}.json").read_text())
        assert meta["symbol"] == "gn_copy" and meta["arch"] == "sm_90"
        assert meta["kind"] == "cubin" and meta["label"] == "pkg.kern.copy"
        assert meta["size"] == len(artifact.image) and len(meta["sha256"]) == 64
        assert meta["nvrtc"].count(".") == 1 and meta["gpu_native"] == gpu_native.__version__
        assert "schema" in meta
        if os.name == "posix":
            for path in (isolated_cache, kernels, isolated_cache / "nvrtc"):
                assert stat.S_IMODE(os.stat(path).st_mode) == 0o700, path
            for name in entry_files(kernels):
                assert stat.S_IMODE(os.stat(kernels / name).st_mode) == 0o600, name

    @pytest.mark.slow
    def test_warm_hit_in_a_new_process_loads_no_compiler(self, kernel_requests, tmp_path,
                                                         isolated_cache):
        request = kernel_requests["pkg.kern.scaled"]
        assert find_or_build(request).origin == "compiled"
        (tmp_path / "request.json").write_text(json.dumps(request.__dict__))
        script = textwrap.dedent('''\
            import json, sys
            from gpu_native.cache import BuildRequest, find_or_build
            request = BuildRequest(**json.load(open(sys.argv[1])))
            artifact = find_or_build(request)
            loaded = [m for m in ("cuda.bindings.nvrtc", "gpu_native.compiler", "libcst",
                                  "cuda.pathfinder") if m in sys.modules]
            print(json.dumps({"origin": artifact.origin, "loaded": loaded}))
            ''')
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "request.json")],
                             env=subprocess_env(GPU_NATIVE_CACHE_DIR=str(isolated_cache)),
                             capture_output=True, text=True, timeout=60, check=True)
        assert json.loads(out.stdout) == {"origin": "cache", "loaded": []}

    def test_nvrtc_version_is_remembered_per_library_file(self, isolated_cache):
        library = nvrtc_probe.locate_library()
        if library is None:
            pytest.skip("NVRTC is not installed from a wheel here")
        records = str(isolated_cache / "nvrtc")
        nvrtc_probe.forget()
        version = nvrtc_probe.version_for_keys(records)
        from gpu_native.compiler import nvrtc_version

        assert version == "{}.{}".format(*nvrtc_version())
        (record,) = os.listdir(records)
        data = json.loads((isolated_cache / "nvrtc" / record).read_text())
        assert data["fingerprint"] == nvrtc_probe.fingerprint(library)
        # A record for another file (an upgraded NVRTC) is never used for this one.
        assert nvrtc_probe._read_record(records, data["fingerprint"] + "x") is None

    def test_invalid_arch_is_refused(self, kernel_requests):
        request = kernel_requests["pkg.kern.copy"]
        with pytest.raises(ValueError, match="invalid GPU architecture '90'"):
            find_or_build(BuildRequest(request.source, request.symbol, "90"))

    def test_threads_share_one_compilation(self, kernel_requests):
        from concurrent.futures import ThreadPoolExecutor

        request = kernel_requests["pkg.kern.scaled_sum"]
        with ThreadPoolExecutor(4) as pool:
            origins = sorted(a.origin for a in pool.map(find_or_build, [request] * 4))
        assert origins == ["compiled", "memory", "memory", "memory"]


class TestCorruptEntries:
    @pytest.mark.slow
    @pytest.mark.parametrize("damage", ["truncate", "flip", "sidecar"])
    def test_damaged_entry_is_rebuilt_with_one_warning(self, kernel_requests, isolated_cache,
                                                       damage):
        request = kernel_requests["pkg.kern.scaled"]
        good = find_or_build(request)
        clear_memory_cache()
        image = isolated_cache / "kernels" / f"{good.key}.cubin"
        sidecar = isolated_cache / "kernels" / f"{good.key}.json"
        data = image.read_bytes()
        if damage == "truncate":
            image.write_bytes(data[: len(data) // 2])
        elif damage == "flip":
            image.write_bytes(data[:100] + bytes([data[100] ^ 0x01]) + data[101:])
        else:
            sidecar.write_text(sidecar.read_text()[:-20])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rebuilt = find_or_build(request)
        messages = cache_warnings(caught)
        assert len(messages) == 1, messages
        assert "corrupt" in messages[0] and "pkg.kern.scaled" in messages[0]
        assert rebuilt.origin == "compiled" and rebuilt.image == good.image
        # The rebuilt entry is whole again.
        clear_memory_cache()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert find_or_build(request).origin == "cache"

    def test_store_reports_why_an_entry_is_corrupt(self, tmp_path):
        store = ArtifactStore(str(tmp_path / "s"))
        key = "a" * 64
        store.write(key, b"\x7fELF" + b"\0" * 60, "cubin", {})
        assert store.get(key).image[:4] == b"\x7fELF"
        meta = json.loads((tmp_path / "s" / f"{key}.json").read_text())
        meta["kind"] = "../../evil"
        (tmp_path / "s" / f"{key}.json").write_text(json.dumps(meta))
        with pytest.raises(CorruptEntryError, match="unknown image kind"):
            store.get(key)


class TestSpecialFilesInTheCache:
    """A FIFO (or a directory, or a device) where an entry's file should be is never opened for a
    blocking read: the entry is corrupt (rebuilt with one warning), or unreadable in reports."""

    @pytest.mark.parametrize("which", ["json", "cubin"])
    def test_the_store_calls_it_corrupt(self, tmp_path, which):
        store = ArtifactStore(str(tmp_path / "s"))
        key = "b" * 64
        store.write(key, b"\x7fELF" + b"\0" * 60, "cubin", {})
        path = tmp_path / "s" / f"{key}.{which}"
        path.unlink()
        os.mkfifo(path)
        what = "sidecar" if which == "json" else "image"
        with pytest.raises(CorruptEntryError, match=f"the {what} is a FIFO, not a regular file"):
            finishes(lambda: store.get(key))
        assert finishes(store.unreadable) == [(str(path), "a FIFO, not a regular file")]

    @pytest.mark.slow
    @pytest.mark.parametrize("which", ["json", "cubin"])
    def test_a_fifo_entry_is_rebuilt_with_one_warning(self, kernel_requests, isolated_cache,
                                                      which):
        request = kernel_requests["pkg.kern.scaled"]
        good = find_or_build(request)
        clear_memory_cache()
        path = isolated_cache / "kernels" / f"{good.key}.{which}"
        path.unlink()
        os.mkfifo(path)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rebuilt = finishes(lambda: find_or_build(request))
        messages = cache_warnings(caught)
        assert len(messages) == 1 and "corrupt" in messages[0], messages
        assert "a FIFO, not a regular file" in messages[0], messages
        assert rebuilt.origin == "compiled" and rebuilt.image == good.image
        assert path.is_file()  # the FIFO was replaced by the rebuilt entry's file
        clear_memory_cache()
        assert find_or_build(request).origin == "cache"

    @pytest.mark.slow
    @pytest.mark.parametrize("command", ["info", "doctor"])
    def test_cache_info_and_doctor_report_a_fifo(self, tmp_path, command):
        cache = tmp_path / "c"
        (cache / "kernels").mkdir(parents=True, mode=0o700)
        cache.chmod(0o700)
        fifo = cache / "kernels" / f"{'f' * 64}.json"
        os.mkfifo(fifo)
        args = ["cache", "info"] if command == "info" else ["doctor"]
        out = subprocess.run([sys.executable, "-m", "gpu_native", *args], capture_output=True,
                             text=True, timeout=60,
                             env=subprocess_env(GPU_NATIVE_CACHE_DIR=str(cache)))
        assert out.returncode == 0, out.stderr
        assert f"{fifo} (a FIFO, not a regular file)" in out.stdout, out.stdout

    def test_a_fifo_nvrtc_record_is_a_miss(self, tmp_path):
        records = tmp_path / "nvrtc"
        records.mkdir()
        os.mkfifo(nvrtc_probe._record_path(str(records), "fingerprint"))
        assert finishes(lambda: nvrtc_probe._read_record(str(records), "fingerprint")) is None

    def test_doctor_reports_a_fifo_manifest_of_a_precompiled_directory(self, tmp_path):
        from gpu_native.commands import doctor

        (tmp_path / "pre").mkdir()
        os.mkfifo(tmp_path / "pre" / "manifest.json")
        lines = finishes(lambda: doctor._precompiled(str(tmp_path / "pre"), {"devices": []}))
        assert lines[0] == ("precompiled", f"{tmp_path / 'pre'} (manifest.json cannot be read: "
                                           "a FIFO, not a regular file)")


class TestUnwritableCache:
    def _check_degrades(self, kernel_requests):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = find_or_build(kernel_requests["pkg.kern.scaled"])
            second = find_or_build(kernel_requests["pkg.kern.copy"])
            again = find_or_build(kernel_requests["pkg.kern.scaled"])
        messages = cache_warnings(caught)
        assert len(messages) == 1, messages
        assert "cannot write the kernel cache" in messages[0]
        assert "GPU_NATIVE_CACHE_DIR" in messages[0]
        assert (first.origin, second.origin, again.origin) == ("compiled", "compiled", "memory")

    @pytest.mark.slow
    def test_cache_path_that_cannot_be_a_directory(self, kernel_requests, tmp_path,
                                                   monkeypatch):
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        monkeypatch.setenv("GPU_NATIVE_CACHE_DIR", str(blocker / "cache"))
        self._check_degrades(kernel_requests)

    @pytest.mark.slow
    def test_read_only_cache_directory_serves_hits_and_degrades(self, kernel_requests,
                                                                isolated_cache, monkeypatch):
        assert find_or_build(kernel_requests["pkg.kern.scaled_sum"]).origin == "compiled"
        clear_memory_cache()
        kernels = isolated_cache / "kernels"
        os.chmod(kernels, 0o500)
        os.chmod(isolated_cache / "nvrtc", 0o500)
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # Root writes through permissions; fail writes the way a read-only directory does.
            def refuse(path, data, mode=0o600):
                raise PermissionError(13, "Permission denied", path)

            monkeypatch.setattr(store_module, "write_file_atomic", refuse)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                hit = find_or_build(kernel_requests["pkg.kern.scaled_sum"])
            assert hit.origin == "cache" and not cache_warnings(caught)
            self._check_degrades(kernel_requests)
        finally:
            os.chmod(kernels, 0o700)
            os.chmod(isolated_cache / "nvrtc", 0o700)
        assert len(user_store().scan()) == 1


class TestEviction:
    def test_least_recently_used_entries_go_first(self, tmp_path):
        store = ArtifactStore(str(tmp_path / "s"), max_bytes=12_000)
        keys = [c * 64 for c in "abcd"]
        now = time.time()
        for age, key in zip((40, 30, 20), keys):
            store.write(key, b"x" * 3000, "cubin", {})
            os.utime(tmp_path / "s" / f"{key}.cubin", (now - age, now - age))
        store.get(keys[0])  # a hit makes the oldest entry the most recently used
        store.write(keys[3], b"x" * 3000, "cubin", {})
        assert store.evict(keep=keys[3]) == 1
        assert sorted(e.key for e in store.scan()) == [keys[0], keys[2], keys[3]]

    def test_stale_temp_files_are_swept(self, tmp_path):
        store = ArtifactStore(str(tmp_path / "s"), max_bytes=1)
        store.write("a" * 64, b"x", "cubin", {})
        stale = tmp_path / "s" / f".{'b' * 64}.cubin.4242.0123abcd.tmp"
        stale.write_bytes(b"\x7fELF\x02\x01")  # a crash halfway through writing an image
        foreign = tmp_path / "s" / ".left-by-someone-else.tmp"
        foreign.write_bytes(b"partial")
        for path in (stale, foreign):
            os.utime(path, (0, 0))
        store.evict()
        assert foreign.read_bytes() == b"partial"
        assert not stale.exists() and store.temp_files() == []

    def test_size_cap_from_environment(self, monkeypatch):
        monkeypatch.setenv("GPU_NATIVE_CACHE_MAX_BYTES", "64M")
        assert locations.max_cache_bytes() == 64 << 20
        assert locations.parse_size("1GiB") == 1 << 30
        assert locations.parse_size("4096") == 4096
        assert locations.parse_size("2P") == 2 << 50
        for text in ("lots", "0", "99999999999999999999999T", "8192P"):
            monkeypatch.setenv("GPU_NATIVE_CACHE_MAX_BYTES", text)
            with pytest.warns(CacheWarning, match=rf"GPU_NATIVE_CACHE_MAX_BYTES='{text}'"):
                assert locations.max_cache_bytes() == locations.DEFAULT_MAX_BYTES
        assert format_bytes((1 << 63) - 1) == "8.0 EiB" and format_bytes(3 << 40) == "3.0 TiB"

    @pytest.mark.slow
    def test_the_cap_covers_rewritten_modules_too(self, kernel_requests, isolated_cache,
                                                  monkeypatch):
        first = find_or_build(kernel_requests["pkg.kern.scaled"])
        second = find_or_build(kernel_requests["pkg.kern.copy"])
        kernels = sum(e.size for e in user_store().scan())
        user_store().remove(second.key)  # to be compiled again, past the cap
        modules = isolated_cache / "modules"
        rewritten = [write_rewritten_module(f"/project/mod{i}.py", 40_000) for i in range(3)]
        foreign = modules / f"tool-{'0' * 20}.cpython-311.gpu_native-9.pyc"
        foreign.write_bytes(b"someone else's file, named like ours" + bytes(40_000))
        now = time.time()
        for age, path in zip((4000, 3000, 2000, 1000), [foreign, *rewritten]):
            os.utime(path, (now - age, now - age))
        # Room for both kernels and one rewritten module (and a half).
        monkeypatch.setenv("GPU_NATIVE_CACHE_MAX_BYTES", str(kernels + 60_000))
        clear_memory_cache()
        assert find_or_build(kernel_requests["pkg.kern.copy"]).origin == "compiled"
        assert sorted(e.key for e in user_store().scan()) == sorted([first.key, second.key])
        assert [p.exists() for p in rewritten] == [False, False, True]  # oldest first
        assert foreign.exists()

    def test_rewritten_module_names_agree_with_the_import_hook(self, isolated_cache):
        """The cache spells out the hook's names and headers (the runtime may not import the
        hook's side): files the hook writes must be recognised as ours, and only those."""
        import _gpu_native_startup as startup
        from gpu_native.cache.housekeeping import ModuleCache

        modules = ModuleCache(str(isolated_cache / "modules"))
        entry = write_rewritten_module("/project/agree.py", 10)
        record = startup._NoKernels()
        record.file = startup._negative_cache_file()
        record.add("/project/plain.py", (1, 2))
        record.save()
        names = sorted(os.listdir(modules.directory))
        assert names == sorted([entry.name, os.path.basename(record.file)])
        assert all(modules.is_own_file(n) for n in names)
        assert [e.name for e in modules.scan()] == [entry.name]
        for name in names:  # the same names with other contents are not ours
            (isolated_cache / "modules" / name).write_bytes(b"\xa7\r\r\nsomething else")
            assert not modules.is_own_file(name)

    def test_lookup_evicts_past_the_cap(self, kernel_requests, monkeypatch):
        find_or_build(kernel_requests["pkg.kern.scaled"])
        (first,) = user_store().scan()
        monkeypatch.setenv("GPU_NATIVE_CACHE_MAX_BYTES", str(first.size + 1))  # one entry fits
        clear_memory_cache()
        second = find_or_build(kernel_requests["pkg.kern.copy"])
        assert second.origin == "compiled"
        assert [e.key for e in user_store().scan()] == [second.key]


WORKER = textwrap.dedent('''\
    import json, os, sys, time
    from gpu_native.cache import BuildRequest, find_or_build
    requests = [BuildRequest(**r) for r in json.load(open(sys.argv[1]))]
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.005)
    print(json.dumps([find_or_build(r).origin for r in requests]))
    ''')


class TestConcurrency:
    @pytest.mark.slow
    def test_eight_processes_fill_one_empty_cache(self, kernel_requests, tmp_path,
                                                  isolated_cache):
        requests = [kernel_requests[label] for label in ("pkg.kern.scaled", "pkg.kern.copy")]
        (tmp_path / "requests.json").write_text(json.dumps([r.__dict__ for r in requests]))
        go = tmp_path / "go"
        env = subprocess_env(GPU_NATIVE_CACHE_DIR=str(isolated_cache))
        workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path / "requests.json"),
                                     str(go)], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for _ in range(8)]
        go.write_text("")
        results = [w.communicate(timeout=120) for w in workers]
        for worker, (out, err) in zip(workers, results):
            assert worker.returncode == 0, err
            assert "CacheWarning" not in err, err  # nobody saw a torn entry
            assert all(o in ("compiled", "cache") for o in json.loads(out))
        store = ArtifactStore(str(isolated_cache / "kernels"))
        assert len(store.scan()) == len(requests)
        assert len(entry_files(isolated_cache / "kernels")) == 2 * len(requests)
        assert store.temp_files() == []
        for request in requests:
            clear_memory_cache()
            assert find_or_build(request).origin == "cache"


class TestCommands:
    def test_cache_info_and_clear(self, kernel_requests, isolated_cache, capsys):
        find_or_build(kernel_requests["pkg.kern.copy"])
        assert cli.main(["cache", "info"]) == 0
        out = capsys.readouterr().out
        assert str(isolated_cache / "kernels") in out
        assert "1 (" in out and "writable" in out
        assert cli.main(["cache", "clear"]) == 0
        assert "removed 1 compiled kernel" in capsys.readouterr().out
        assert user_store().scan() == []
        assert entry_files(isolated_cache / "nvrtc") == []

    @pytest.mark.untrusted
    @pytest.mark.slow
    def test_cache_clear_removes_only_what_gpu_native_wrote(self, kernel_requests, tmp_path,
                                                             isolated_cache, capsys):
        find_or_build(kernel_requests["pkg.kern.copy"])
        import_kernel_module(tmp_path / "src", isolated_cache)
        assert our_module_files(isolated_cache / "modules")  # a rewrite and the record
        assert entry_files(isolated_cache / "nvrtc")
        # What the summary calls other files: the no-kernels records, the NVRTC records and a
        # temporary file left in each folder by a writer that died.
        (isolated_cache / "kernels" / f".{'e' * 64}.cubin.4321.89abcdef.tmp").write_bytes(b"\x7fELF")
        others = len([n for n in our_module_files(isolated_cache / "modules")
                      if n.endswith(".marshal")])
        others += len(entry_files(isolated_cache / "nvrtc")) + 1
        for name, data in FOREIGN_FILES.items():
            (isolated_cache / name).write_bytes(data)
        precious = tmp_path / "precious.cubin"
        precious.write_bytes(b"\x7fELF not yours")
        link = isolated_cache / "kernels" / f"{'a' * 64}.cubin"
        link.symlink_to(precious)
        assert cli.main(["cache", "clear"]) == 0
        out = capsys.readouterr().out
        left = {name: (isolated_cache / name).read_bytes() for name in FOREIGN_FILES
                if (isolated_cache / name).exists()}
        assert left == FOREIGN_FILES
        assert link.is_symlink() and precious.read_bytes() == b"\x7fELF not yours"
        assert {e.key for e in user_store().scan()} == {"c" * 64, "d" * 64}  # the foreign ones
        assert our_module_files(isolated_cache / "modules") == []
        assert sorted(entry_files(isolated_cache / "nvrtc")) == sorted(
            n.split("/")[1] for n in FOREIGN_FILES if n.startswith("nvrtc/"))
        assert "removed 1 compiled kernel" in out and "2 rewritten modules" in out, out
        assert f" and {others} other files of gpu_native's (NVRTC version records" in out, out
        assert not (isolated_cache / "kernels" / f".{'e' * 64}.cubin.4321.89abcdef.tmp").exists()
        assert f"kept {len(FOREIGN_FILES) + 1} files that gpu_native did not write" in out, out

    @pytest.mark.slow
    def test_cache_info_counts_rewritten_modules(self, tmp_path, isolated_cache, capsys):
        import_kernel_module(tmp_path / "src", isolated_cache)
        rewrites = [p for p in (isolated_cache / "modules").iterdir() if p.suffix == ".pyc"]
        assert rewrites  # pkg.kern, and pkg.helpers for its device function
        size = sum(p.stat().st_size for p in rewrites)
        assert cli.main(["cache", "info"]) == 0
        out = capsys.readouterr().out
        line = next(x for x in out.splitlines() if x.startswith("modules"))
        assert line.split()[1] == str(len(rewrites)), line
        assert str(isolated_cache / "modules") in line
        total = next(x for x in out.splitlines() if x.startswith("size"))
        assert format_bytes(size) in total and "cap" in total, total

    @pytest.mark.slow
    def test_cache_info_counts_only_files_of_ours(self, kernel_requests, tmp_path,
                                                  isolated_cache, capsys):
        find_or_build(kernel_requests["pkg.kern.copy"])
        import_kernel_module(tmp_path / "src", isolated_cache)
        assert cli.main(["cache", "info"]) == 0
        before = capsys.readouterr().out.splitlines()
        assert not any(x.startswith("not ours") for x in before), before
        for name, data in FOREIGN_FILES.items():
            (isolated_cache / name).write_bytes(data)
        assert cli.main(["cache", "info"]) == 0
        after = capsys.readouterr().out.splitlines()
        # Named like entries of ours (two kernels, a rewritten module) but not what we write:
        # the counts and sizes are those from before they were planted.
        for label in ("kernels", "modules", "size"):
            assert [x for x in after if x.startswith(label)] == \
                [x for x in before if x.startswith(label)], (label, after)
        foreign = [n for n in FOREIGN_FILES if not n.startswith("nvrtc/")]
        line = next(x for x in after if x.startswith("not ours"))
        assert f"{len(foreign)} files that gpu_native did not write" in line, line

    @pytest.mark.parametrize("command", ["cache", "doctor"])
    def test_the_state_line_agrees_with_what_the_cache_holds(self, tmp_path, isolated_cache,
                                                              capsys, command):
        def state() -> str:
            assert cli.main(["cache", "info"] if command == "cache" else ["doctor"]) == 0
            out = capsys.readouterr().out
            label = "state " if command == "cache" else "cache state "
            return next(x for x in out.splitlines() if x.startswith(label)).split(None, 1 + (
                command == "doctor"))[-1]

        assert not isolated_cache.exists() or not any(isolated_cache.iterdir())
        assert state().startswith("not created yet")
        # The import hook made the cache (modules/) before any kernel was compiled.
        source = tmp_path / "m.py"
        source.write_text("X = 1\n")
        write_rewritten_module(str(source), 1000)
        assert state() == "writable (no kernel compiled into it yet)"
        assert not (isolated_cache / "kernels").exists()  # a report creates nothing
        (isolated_cache / "kernels").mkdir(mode=0o700)
        assert state() == "writable"

    @pytest.mark.parametrize("command", ["cache", "doctor"])
    @pytest.mark.parametrize("below", [False, True], ids=["the-root", "a-parent"])
    def test_a_file_as_the_cache_directory_is_not_usable(self, tmp_path, monkeypatch, capsys,
                                                         command, below):
        afile = tmp_path / "afile"
        afile.write_text("not a directory\n")
        monkeypatch.setenv("GPU_NATIVE_CACHE_DIR", str(afile / "sub" if below else afile))
        assert cli.main(["cache", "info"] if command == "cache" else ["doctor"]) == 0
        out = capsys.readouterr().out
        assert f"NOT usable ({afile} is not a directory; set GPU_NATIVE_CACHE_DIR to a " \
               "directory)" in out, out
        assert "not created yet" not in out
        assert afile.read_text() == "not a directory\n"

    def test_doctor_says_a_precompiled_file_is_not_a_directory(self, tmp_path, monkeypatch,
                                                               capsys):
        afile = tmp_path / "afile"
        afile.write_text("x\n")
        monkeypatch.setenv("GPU_NATIVE_PRECOMPILED",
                           os.pathsep.join([str(afile), str(tmp_path / "gone")]))
        assert cli.main(["doctor"]) == 0  # doctor reports; it does not fail
        out = capsys.readouterr().out
        assert f"{afile} (INVALID: not a directory; GPU_NATIVE_PRECOMPILED lists directories" \
               in out, out
        assert f"{tmp_path / 'gone'} (missing)" in out and f"{afile} (missing)" not in out

    @pytest.mark.slow
    @pytest.mark.parametrize("command", [["cache", "info"], ["cache", "clear"], ["doctor"]])
    def test_a_report_on_a_fresh_cache_creates_nothing(self, tmp_path, command):
        # A process the import hook runs in records the modules it found without kernels at
        # exit; these commands report on the cache (or empty it) and must leave no such record.
        from tests.helpers import child_env

        # First, that a process of this interpreter does write the record (the check below
        # could not fail otherwise).
        control = tmp_path / "control"
        proc = subprocess.run(
            [sys.executable, "-c", "import sys, gpu_native, numpy; print(any(getattr(f, "
             "'_gpu_native_hook', False) for f in sys.meta_path))"],
            env=child_env(control), capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        if proc.stdout.strip() != "True":
            pytest.skip("the import hook is not installed in this interpreter")
        assert list((control / "modules").glob("no-kernels.*.marshal")), proc.stderr
        root = tmp_path / "fresh" / "cache"
        proc = subprocess.run([sys.executable, "-m", "gpu_native", *command],
                              env=child_env(root), capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert not (tmp_path / "fresh").exists(), sorted(
            str(p) for p in (tmp_path / "fresh").rglob("*"))

    @pytest.mark.parametrize("command", ["cache", "doctor"])
    def test_a_file_where_modules_should_be_is_reported(self, isolated_cache, capsys, command):
        isolated_cache.mkdir(parents=True, exist_ok=True)
        (isolated_cache / "modules").write_text("not a directory\n")
        assert cli.main(["cache", "info"] if command == "cache" else ["doctor"]) == 0
        out = capsys.readouterr().out
        assert f"NOT usable ({isolated_cache / 'modules'} is not a directory): modules are " \
               "rewritten on every import" in out, out
        assert (isolated_cache / "modules").read_text() == "not a directory\n"

    def test_doctor_tells_a_precompile_manifest_from_another_file(self, tmp_path, monkeypatch,
                                                                  capsys):
        from gpu_native.precompile import MANIFEST_FORMAT

        ours, foreign, damaged, bare = (tmp_path / n for n in ("ours", "web", "cut", "bare"))
        for d in (ours, foreign, damaged, bare):
            d.mkdir()
        (ours / "manifest.json").write_text(json.dumps({"format": MANIFEST_FORMAT}))
        (foreign / "manifest.json").write_text('{"name": "my webapp"}\n')
        (damaged / "manifest.json").write_text('{"format": "gpu_native-prec')
        monkeypatch.setenv("GPU_NATIVE_PRECOMPILED",
                           os.pathsep.join(map(str, (ours, foreign, damaged, bare))))
        assert cli.main(["doctor"]) == 0
        out = capsys.readouterr().out
        assert f"{ours} (found)" in out, out
        for d in (foreign, damaged):
            assert f"{d} (its manifest.json was not written by gpu-native precompile" in out, out
        assert f"{bare} (no manifest.json)" in out, out

    @pytest.mark.parametrize("value", ["bogus", " CUDA2 "])
    def test_doctor_says_an_unknown_backend_is_invalid(self, monkeypatch, capsys, value):
        monkeypatch.setenv("GPU_NATIVE_BACKEND", value)
        assert cli.main(["doctor"]) == 0
        out = capsys.readouterr().out
        line = next(x for x in out.splitlines() if x.startswith("backend"))
        assert f"INVALID: GPU_NATIVE_BACKEND={value!r} is not a backend (choose one of auto, " \
               "cuda, sim)" in line, line
        assert "Traceback" not in out

    def test_doctor_without_a_gpu(self, capsys):
        assert cli.main(["doctor"]) == 0
        out = capsys.readouterr().out
        for label in ("driver", "NVRTC", "cache location", "import hook", "backend"):
            assert label in out, out
        if "no CUDA driver" in out:
            assert "auto → sim" in out
