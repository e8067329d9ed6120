"""Fault tolerance of the kernel cache: crashes, full disks and refused writes.

* A compile killed with SIGKILL halfway — inside NVRTC, or at any point of writing the cache entry
  (half an image, an image not yet renamed, an image without its sidecar, half a sidecar) — leaves
  nothing that a later process loads: the next process recompiles cleanly, with no warning, and
  the one after that hits the cache.
* A full disk (a real 64 KiB tmpfs where the machine lets us mount one, and injected ``ENOSPC`` at
  each write of an entry) and permission errors degrade to an in-memory cache with exactly one
  warning, and leave no partial file behind.

What tests/cache/test_cache.py already proves (a corrupt entry is rebuilt with one warning, a
read-only cache directory degrades, eight processes share one cache) is not repeated here; device
errors that must leave the GPU usable are in tests/runtime/test_device_faults.py.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

from gpu_native.cache import (
    ArtifactStore,
    BuildRequest,
    CacheWarning,
    clear_memory_cache,
    find_or_build,
    nvrtc_probe,
)
from gpu_native.cache import store as store_module
from gpu_native.rewrite import transpile_module
from tests.helpers import child_env

# Every test gets a cache directory of its own (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("isolated_cache")


def big_kernel_source(statements: int = 40) -> str:
    """A long kernel, so that NVRTC takes long enough to be killed inside."""
    lines = ["from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D",
             "from gpu_native import f32", "import math", "", "",
             "@gpu_kernel(Kernel1D)",
             "def big(a: CUDASlice[f32], c: CUDASliceMut[f32]):",
             "    i = FlatLayout1D.uid()",
             "    x = a[i]"]
    for k in range(statements):
        lines.append(f"    x = math.sin(x * {k + 1}.5) + math.exp(x / {k + 2}.0) - x ** 3")
        lines.append(f"    if x > {k}.25:")
        lines.append(f"        x = math.sqrt(math.fabs(x)) * math.tanh(x + {k}.0)")
    lines.append("    c[i] = x")
    return "\n".join(lines) + "\n"


SMALL_SOURCE = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32


    @gpu_kernel(Kernel1D)
    def small(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = a[i] * 2.0 + 1.0


    @gpu_kernel(Kernel1D)
    def other(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = a[i] - 3.0
    ''')


def requests_of(source: str, name: str) -> list[BuildRequest]:
    module = transpile_module(source, f"{name}.py", name)
    out = []
    for kernel in module.kernels:
        for variant in kernel.variants:
            out.append(BuildRequest.for_variant(kernel, variant, "sm_90"))
    return out


@pytest.fixture(scope="module")
def big_request() -> BuildRequest:
    return requests_of(big_kernel_source(), "faultbig")[0]


@pytest.fixture(scope="module")
def small_requests() -> list[BuildRequest]:
    return requests_of(SMALL_SOURCE, "faultsmall")


def cache_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


# ---- kill -9 in the middle of a compile ---------------------------------------------------------

# The child pauses at one point of find_or_build (announcing it through a marker file) and is
# killed there by the parent with SIGKILL.
CRASHING_CHILD = textwrap.dedent('''\
    import json, os, sys, time
    from gpu_native.cache import BuildRequest, find_or_build, nvrtc_probe, locations
    from gpu_native.cache import store as store_module

    with open(sys.argv[1]) as f:
        request = BuildRequest(**json.load(f))
    stage, marker = sys.argv[2], sys.argv[3]
    nvrtc_probe.version_for_keys(locations.nvrtc_records_dir())  # the NVRTC record first

    def pause():
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)

    if stage == "nvrtc":
        from gpu_native.compiler import nvrtc as nv
        real = nv._nvrtc.nvrtcCompileProgram

        def compile_program(*args):
            with open(marker, "w") as f:
                f.write(str(os.getpid()))
            result = real(*args)
            with open(marker + ".returned", "w") as f:
                f.write("")
            time.sleep(120)
            return result

        nv._nvrtc.nvrtcCompileProgram = compile_program
    else:
        which, when = stage.split(":")  # image|sidecar : half|replace|before
        index = {"image": 1, "sidecar": 2}[which]

        class HalfWriter:
            def __init__(self, f):
                self.f = f
            def __enter__(self):
                return self
            def __exit__(self, *exc):
                self.f.close()
            def write(self, data):
                self.f.write(data[: len(data) // 2])
                self.f.flush()
                pause()

        class Os:
            writes = replaces = 0
            def __getattr__(self, name):
                return getattr(os, name)
            def fdopen(self, fd, *args, **kwargs):
                Os.writes += 1
                if Os.writes == index and when == "before":
                    pause()
                f = os.fdopen(fd, *args, **kwargs)
                return HalfWriter(f) if Os.writes == index and when == "half" else f
            def replace(self, src, dst):
                Os.replaces += 1
                if Os.replaces == index and when == "replace":
                    pause()
                return os.replace(src, dst)

        store_module.os = Os()
    find_or_build(request)
    print("finished")
    ''')

# A fresh process: compile (or load) twice, reporting where each came from.
CLEAN_CHILD = textwrap.dedent('''\
    import json, sys, warnings
    from gpu_native.cache import BuildRequest, clear_memory_cache, find_or_build
    warnings.simplefilter("always")
    with open(sys.argv[1]) as f:
        request = BuildRequest(**json.load(f))
    first = find_or_build(request)
    clear_memory_cache()
    second = find_or_build(request)
    print(json.dumps([first.origin, second.origin, first.image == second.image]))
    ''')

STAGES = ["nvrtc", "image:half", "image:replace", "sidecar:before", "sidecar:half",
          "sidecar:replace"]


def wait_for(path: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the child ended before the fault point:\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the child never reached the fault point")
        time.sleep(0.01)


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES)
def test_sigkill_during_a_compile_leaves_no_entry_that_loads(stage, request, tmp_path,
                                                             isolated_cache):
    if not hasattr(signal, "SIGKILL"):
        pytest.skip("needs SIGKILL")
    # Inside NVRTC: a long compile, to be killed in the middle of it.
    build = (request.getfixturevalue("big_request") if stage == "nvrtc"
             else request.getfixturevalue("small_requests")[0])
    request_file = tmp_path / "request.json"
    request_file.write_text(json.dumps(build.__dict__))
    marker = str(tmp_path / "marker")
    env = child_env(isolated_cache)
    child = subprocess.Popen([sys.executable, "-c", CRASHING_CHILD, str(request_file), stage,
                              marker], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        wait_for(marker, child)
        if stage == "nvrtc":
            time.sleep(0.05)  # well inside nvrtcCompileProgram (it takes about a second here)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
    assert child.returncode == -signal.SIGKILL
    if stage == "nvrtc":
        assert not os.path.exists(marker + ".returned"), "NVRTC finished before the kill"

    # Nothing left behind is an entry: every key either misses or verifies.
    store = ArtifactStore(str(isolated_cache / "kernels"))
    for entry in store.scan():
        assert store.get(entry.key) is None, f"a torn entry loads: {entry.key}"
    if stage.endswith(":half") or stage.endswith(":replace"):
        assert store.temp_files(), "the crash should have left its temporary file"

    # The next process compiles cleanly (no warning), the one after hits the cache.
    out = subprocess.run([sys.executable, "-c", CLEAN_CHILD, str(request_file)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stderr == "", out.stderr
    assert json.loads(out.stdout) == ["compiled", "cache", True]
    out = subprocess.run([sys.executable, "-c", CLEAN_CHILD, str(request_file)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert json.loads(out.stdout) == ["cache", "cache", True], out.stderr


# ---- full disks and refused writes ------------------------------------------------------------------


class FaultyOs:
    """The ``os`` module as the cache store sees it, except that one write fails.

    ``fail`` is (write number, errno, where): ``where`` is "data" (the bytes run out halfway),
    "open" (the temporary file cannot be created) or "replace" (the rename is refused)."""

    def __init__(self, write: int, code: int, where: str):
        self.write, self.code, self.where = write, code, where
        self.opens = self.fdopens = self.replaces = 0

    def __getattr__(self, name):
        return getattr(os, name)

    def error(self, path="") -> OSError:
        return OSError(self.code, os.strerror(self.code), path)

    def open(self, path, flags, mode=0o777, *args, **kwargs):
        if str(path).endswith(store_module.TEMP_SUFFIX) and ".probe." not in str(path):
            self.opens += 1
            if self.opens == self.write and self.where == "open":
                raise self.error(path)
        return os.open(path, flags, mode, *args, **kwargs)

    def fdopen(self, fd, *args, **kwargs):
        f = os.fdopen(fd, *args, **kwargs)
        self.fdopens += 1
        if self.fdopens == self.write and self.where == "data":
            return _RunsOut(f, self.error())
        return f

    def replace(self, src, dst):
        self.replaces += 1
        if self.replaces == self.write and self.where == "replace":
            raise self.error(dst)
        return os.replace(src, dst)


class _RunsOut:
    def __init__(self, f, error: OSError):
        self.f, self.error_ = f, error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def write(self, data):
        self.f.write(data[: len(data) // 2])
        self.f.flush()
        raise self.error_


def check_degrades_once(requests, store_dir, reason: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = find_or_build(requests[0])
        second = find_or_build(requests[1])
        again = find_or_build(requests[0])
    messages = cache_warnings(caught)
    assert len(messages) == 1, messages
    assert "cannot write the kernel cache" in messages[0] and reason in messages[0], messages
    assert "GPU_NATIVE_CACHE_DIR" in messages[0]
    assert (first.origin, second.origin, again.origin) == ("compiled", "compiled", "memory")
    assert first.image[:4] == b"\x7fELF"
    store = ArtifactStore(str(store_dir))
    assert store.temp_files() == [], "a failed write left its temporary file"
    for entry in store.scan():
        assert store.get(entry.key) is None or store.get(entry.key).image in (
            first.image, second.image)


@pytest.mark.slow
@pytest.mark.parametrize("write, where", [(1, "data"), (1, "open"), (1, "replace"),
                                          (2, "data"), (2, "replace")],
                         ids=["image-bytes", "image-create", "image-rename", "sidecar-bytes",
                              "sidecar-rename"])
def test_disk_full_while_writing_an_entry_degrades_with_one_warning(
        small_requests, isolated_cache, monkeypatch, write, where):
    nvrtc_probe.version_for_keys(str(isolated_cache / "nvrtc"))
    monkeypatch.setattr(store_module, "os", FaultyOs(write, errno.ENOSPC, where))
    check_degrades_once(small_requests, isolated_cache / "kernels", "No space left on device")


@pytest.mark.slow
@pytest.mark.parametrize("write, where", [(1, "open"), (2, "open"), (2, "replace")],
                         ids=["image", "sidecar", "sidecar-rename"])
def test_permission_denied_while_writing_an_entry_degrades_with_one_warning(
        small_requests, isolated_cache, monkeypatch, write, where):
    nvrtc_probe.version_for_keys(str(isolated_cache / "nvrtc"))
    monkeypatch.setattr(store_module, "os", FaultyOs(write, errno.EACCES, where))
    check_degrades_once(small_requests, isolated_cache / "kernels", "Permission denied")


@pytest.mark.slow
def test_cache_root_in_a_directory_we_may_not_write(small_requests, tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o500)
    monkeypatch.setenv("GPU_NATIVE_CACHE_DIR", str(locked / "cache"))
    clear_memory_cache()
    try:
        if os.geteuid() == 0:  # root ignores the mode: refuse the mkdir the way EACCES would
            real_mkdir = os.mkdir

            def mkdir(path, mode=0o777, **kwargs):
                if str(path).startswith(str(locked)):
                    raise PermissionError(errno.EACCES, "Permission denied", path)
                return real_mkdir(path, mode, **kwargs)

            monkeypatch.setattr(os, "mkdir", mkdir)
        check_degrades_once(small_requests, locked / "cache" / "kernels", "Permission denied")
    finally:
        os.chmod(locked, 0o700)


@contextlib.contextmanager
def tiny_tmpfs(path, size: str = "64k"):
    """Mount a real, tiny tmpfs (needs privileges: skipped elsewhere)."""
    path.mkdir()
    try:
        out = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                              str(path)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if out.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {out.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


@pytest.mark.slow
def test_a_really_full_disk(small_requests, tmp_path, monkeypatch):
    with tiny_tmpfs(tmp_path / "full") as mount:
        cache = mount / "cache"
        monkeypatch.setenv("GPU_NATIVE_CACHE_DIR", str(cache))
        clear_memory_cache()
        nvrtc_probe.version_for_keys(str(cache / "nvrtc"))
        (cache / "kernels").mkdir(mode=0o700)
        # Fill the file system to the last block.
        with contextlib.suppress(OSError), open(mount / "ballast", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        check_degrades_once(small_requests, cache / "kernels", "No space left on device")
        # Space again: a new process stores and then reuses its kernels.
        os.unlink(mount / "ballast")
        request_file = tmp_path / "request.json"
        request_file.write_text(json.dumps(small_requests[0].__dict__))
        out = subprocess.run([sys.executable, "-c", CLEAN_CHILD, str(request_file)],
                             env=child_env(cache), capture_output=True, text=True, timeout=300)
        assert json.loads(out.stdout) == ["compiled", "cache", True], out.stderr


def test_import_hook_cache_on_a_full_disk_still_imports(tmp_path, monkeypatch):
    """The rewritten-module cache cannot be written: the import works, silently."""
    from gpu_native.importhook import pycache

    def refuse(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pycache.os, "replace", refuse)
    (tmp_path / "fault_hook_mod.py").write_text(SMALL_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    sys.modules.pop("fault_hook_mod", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        module = importlib.import_module("fault_hook_mod")
    assert module.small.__name__ == "small"
    sys.modules.pop("fault_hook_mod", None)
