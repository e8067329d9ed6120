"""What gpu_native tells about itself at run time: the ``gpu_native`` logger's records, the
``GpuNativeWarning`` category, ``python -m gpu_native``, and the table of environment variables
(docs/environment.md), which must name every ``GPU_NATIVE_*`` variable the code reads."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import _gpu_native_startup
import gpu_native as gn
from gpu_native.build import BuildRequest
from gpu_native.cache import CacheWarning, clear_memory_cache, find_or_build
from gpu_native.cache.keys import artifact_id
from gpu_native.cache.store import ArtifactStore
from gpu_native.rewrite import transpile_module
from tests.helpers import ROOT

TABLE = ROOT / "docs" / "environment.md"

KERNEL = textwrap.dedent("""\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId, f32

    @gpu_kernel(Kernel1D)
    def double(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i: UniqueId = FlatLayout1D.uid()
        c[i] = a[i] * 2.0
    """)


def messages(caplog, level=logging.DEBUG) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "gpu_native" and
            r.levelno == level]


@pytest.fixture
def debug_log(caplog):
    caplog.set_level(logging.DEBUG, logger="gpu_native")
    return caplog


def request_for(tmp_path) -> BuildRequest:
    path = tmp_path / "obs_kernels.py"
    path.write_text(KERNEL)
    module = transpile_module(KERNEL, str(path), "obs_kernels")
    kernel = module.kernels[0]
    return BuildRequest.for_variant(kernel, kernel.variants[0], "sm_90", str(path))


class TestLogger:
    def test_the_logger_has_a_null_handler(self, debug_log):
        from gpu_native import log

        assert log.logger() is logging.getLogger("gpu_native")
        assert any(isinstance(h, logging.NullHandler)
                   for h in logging.getLogger("gpu_native").handlers)

    def test_import_hook_transpile_then_cached_rewrite(self, kernel_module, debug_log):
        kernel_module(KERNEL, name="gn_obs_hooked")
        found = messages(debug_log)
        assert any(re.fullmatch(r"module gn_obs_hooked \(.*gn_obs_hooked\.py\): transpiled 1 "
                                r"kernel in [0-9.]+ ms, cached in .*", m) for m in found), found
        debug_log.clear()
        kernel_module(KERNEL, name="gn_obs_hooked")  # the same file again: its cached rewrite
        assert any(re.fullmatch(r"module gn_obs_hooked: rewrite read from .* in [0-9.]+ ms", m)
                   for m in messages(debug_log)), messages(debug_log)

    def test_decorator_transpile(self, tmp_path, debug_log):
        script = tmp_path / "obs_script.py"
        script.write_text(KERNEL)
        namespace = {"__name__": "__main__"}
        exec(compile(KERNEL, str(script), "exec"), namespace)
        assert any(re.fullmatch(r"module obs_script \(.*obs_script\.py\): transpiled 1 kernel in "
                                r"[0-9.]+ ms \(no import hook ran\)", m)
                   for m in messages(debug_log)), messages(debug_log)

    def test_compile_cache_hit_and_precompiled_hit(self, tmp_path, isolated_cache, debug_log,
                                                   monkeypatch):
        pytest.importorskip("cuda.bindings.nvrtc")
        request = request_for(tmp_path)
        compiled = find_or_build(request)
        assert compiled.origin == "compiled"
        label = "obs_kernels.double"
        assert f"kernel {label} for sm_90: in no cache, compiling it with NVRTC" in \
            messages(debug_log)
        assert any(re.fullmatch(rf"compiled kernel {label} for sm_90 in [0-9.]+ s", m)
                   for m in messages(debug_log, logging.INFO)), messages(debug_log, logging.INFO)

        debug_log.clear()
        clear_memory_cache()
        assert find_or_build(request).origin == "cache"
        assert messages(debug_log) == [
            f"kernel {label} for sm_90: found in the kernel cache {isolated_cache / 'kernels'}"]
        assert not messages(debug_log, logging.INFO)

        debug_log.clear()
        clear_memory_cache()
        shipped = tmp_path / "deployment"
        ArtifactStore(str(shipped), private=False).write(artifact_id(request), compiled.image,
                                                          compiled.kind, {})
        monkeypatch.setenv("GPU_NATIVE_PRECOMPILED", str(shipped))
        assert find_or_build(request).origin == "precompiled"
        assert messages(debug_log) == [f"kernel {label} for sm_90: precompiled, from {shipped}"]

    def test_load_into_the_simulator(self, kernel_module, debug_log):
        from gpu_native.runtime.backend import use

        module = kernel_module(KERNEL, name="gn_obs_loaded")
        with use("sim"):
            a = gn.to_device(np.ones(4, np.float32))
            c = gn.empty(4, gn.f32)
            module.double[1, 4](a, c)
        assert "loaded kernel gn_obs_loaded.double into the simulator" in messages(debug_log)

    def test_nothing_is_logged_or_formatted_below_the_level(self, caplog, kernel_module):
        caplog.set_level(logging.WARNING, logger="gpu_native")
        kernel_module(KERNEL, name="gn_obs_quiet")
        assert not [r for r in caplog.records if r.name == "gpu_native"]

    @pytest.mark.slow
    def test_gpu_native_does_not_import_logging(self, tmp_path):
        """A warm start pays nothing for the logger: no record could be shown without logging."""
        (tmp_path / "obs_warm.py").write_text(KERNEL)
        code = textwrap.dedent("""\
            import sys
            import numpy as np, gpu_native as gn, obs_warm
            a = gn.to_device(np.ones(4, np.float32)); c = gn.empty(4, gn.f32)
            obs_warm.double[1, 4](a, c)
            assert c.to_host().tolist() == [2.0] * 4
            print("logging" in sys.modules)
            """)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_BACKEND")}
        env["GPU_NATIVE_BACKEND"] = "sim"
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path)])
        for _ in range(2):  # cold, then warm
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 env=env, cwd=tmp_path, timeout=300)
            assert out.returncode == 0, out.stderr
            assert out.stdout.split() == ["False"]


class TestSimulatorNotice:
    @pytest.fixture
    def no_gpu(self, monkeypatch):
        from gpu_native.runtime import backend, driver

        monkeypatch.delenv("GPU_NATIVE_BACKEND", raising=False)
        monkeypatch.setattr(driver, "available", lambda: False)
        monkeypatch.setattr(backend, "_selected", None)
        return backend

    def test_a_warning_and_an_info_record(self, no_gpu, caplog):
        caplog.set_level(logging.INFO, logger="gpu_native")
        with pytest.warns(gn.GpuNativeWarning, match="no CUDA GPU found; kernels run on the CPU "
                          "simulator") as caught:
            assert no_gpu.select().name == "sim"  # select-line
        # Attributed to the line that chose the backend: here, this test's.
        assert caught[0].filename == __file__
        line = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                    if text.endswith("# select-line"))
        assert caught[0].lineno == line
        assert messages(caplog, logging.INFO) == [
            "gpu_native: no CUDA GPU found; kernels run on the CPU simulator "
            "(GPU_NATIVE_BACKEND=sim silences this notice)"]

    def test_once_per_process(self, no_gpu, recwarn):
        warnings.simplefilter("always")
        no_gpu.select()
        no_gpu.select()
        assert len([w for w in recwarn if issubclass(w.category, gn.GpuNativeWarning)]) == 1

    def test_nothing_printed(self, no_gpu, capfd):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gn.GpuNativeWarning)
            no_gpu.select()
        assert capfd.readouterr().err == ""


class TestWarningCategory:
    def test_exported_and_a_user_warning(self):
        assert "GpuNativeWarning" in gn.__all__
        assert issubclass(gn.GpuNativeWarning, UserWarning)
        assert gn.GpuNativeWarning is _gpu_native_startup.GpuNativeWarning

    def test_cache_warning_is_one(self):
        assert issubclass(CacheWarning, gn.GpuNativeWarning)
        assert CacheWarning is _gpu_native_startup.CacheWarning

    def test_one_filter_silences_every_warning(self, monkeypatch):
        from gpu_native.cache import locations

        monkeypatch.setenv("GPU_NATIVE_CACHE_MAX_BYTES", "lots")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", category=gn.GpuNativeWarning)
            assert locations.max_cache_bytes() == locations.DEFAULT_MAX_BYTES

    def test_the_startup_module_still_imports_nothing(self):
        """Every interpreter runs it: the warning classes it defines cost no import (beyond
        what the site module loads, and the two it always imported)."""
        code = ("import sys, os, marshal, importlib.machinery, __future__; "
                "before = set(sys.modules); import _gpu_native_startup; "
                "print(sorted(set(sys.modules) - before))")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                             env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "['_gpu_native_startup']"


class TestMainModule:
    def test_help(self):
        out = subprocess.run([sys.executable, "-m", "gpu_native", "--help"], capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("usage: python -m gpu_native ")
        for command in ("expand", "precompile", "cache", "doctor"):
            assert command in out.stdout

    @pytest.mark.slow
    def test_runs_a_command(self, tmp_path):
        bad = tmp_path / "bad.py"
        bad.write_text(KERNEL.replace("c[i] = a[i] * 2.0", "c[0] = a[i]"))
        out = subprocess.run([sys.executable, "-m", "gpu_native", "expand", str(bad)],
                             capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
        assert out.returncode == 1
        assert out.stderr.startswith(f"{bad}:6:5: error: store into 'c'")


class TestNumericVariables:
    """A ``GPU_NATIVE_*`` variable that holds no number is ignored with a warning, as
    ``GPU_NATIVE_CACHE_MAX_BYTES`` is: it fails no import and no launch."""

    @pytest.mark.parametrize("text, expected", [
        ("", 7), ("12", 12), (" 3 ", 3), ("0", 0), ("x", 7), ("1.5", 7), ("-1", 7), ("1e3", 7)])
    def test_a_bad_value_warns_and_gives_the_default(self, monkeypatch, text, expected):
        from gpu_native import settings

        monkeypatch.setenv("GPU_NATIVE_UID_BLOCKS_PER_SM", text)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert settings.integer("GPU_NATIVE_UID_BLOCKS_PER_SM", 7) == expected
        shown = [str(w.message) for w in caught if issubclass(w.category, gn.GpuNativeWarning)]
        if text.strip() and expected == 7:
            assert shown == [f"gpu_native: ignoring GPU_NATIVE_UID_BLOCKS_PER_SM={text.strip()!r}:"
                             " expected an integer of at least 0; using 7"]
        else:
            assert not shown

    def test_import_survives_a_bad_uid_blocks_per_sm(self, tmp_path):
        from tests.helpers import child_env

        code = ("import warnings; warnings.simplefilter('always'); import gpu_native; "
                "from gpu_native.runtime import kernel; print(kernel.UID_BLOCKS_PER_SM)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=child_env(tmp_path, GPU_NATIVE_UID_BLOCKS_PER_SM="x"),
                             timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "0"
        assert "GpuNativeWarning: gpu_native: ignoring GPU_NATIVE_UID_BLOCKS_PER_SM='x'" in (
            out.stderr)

    def test_a_launch_survives_bad_sim_lanes(self, kernel_module, monkeypatch):
        monkeypatch.setenv("GPU_NATIVE_BACKEND", "sim")
        monkeypatch.setenv("GPU_NATIVE_SIM_LANES", "abc")
        km = kernel_module(KERNEL)
        a = gn.to_device(np.arange(300, dtype=np.float32))
        c = gn.empty(300, gn.f32)
        with pytest.warns(gn.GpuNativeWarning, match=r"ignoring GPU_NATIVE_SIM_LANES='abc': "
                                                     r"expected an integer of at least 1; "
                                                     r"using 262144"):
            km.double[3, 100](a, c)
        np.testing.assert_array_equal(c.to_host(), np.arange(300, dtype=np.float32) * 2)
        monkeypatch.setenv("GPU_NATIVE_SIM_LANES", "0")
        with pytest.warns(gn.GpuNativeWarning, match=r"GPU_NATIVE_SIM_LANES='0'"):
            km.double[3, 100](a, c)


class TestOnOffVariables:
    """Every on/off ``GPU_NATIVE_*`` variable is read by one parser (``settings.flag``): the same
    words switch each on and off, and any other value is ignored with a warning naming it, as a
    numeric variable's is."""

    WORDS = [("1", True), ("TRUE", True), (" yes ", True), ("On", True), ("0", False),
             ("false", False), (" 0", False), ("NO", False), ("off\n", False)]

    @pytest.fixture(autouse=True)
    def fresh_warnings(self, monkeypatch):
        monkeypatch.setattr(_gpu_native_startup, "_warned", set())  # one warning per process

    @pytest.mark.parametrize("default", [True, False, None])
    @pytest.mark.parametrize("text, expected", [*WORDS, ("", None), ("  ", None), ("2", None),
                                                ("enable", None), ("-1", None)])
    def test_the_words_and_a_warning_for_any_other(self, monkeypatch, text, expected, default):
        from gpu_native import settings

        monkeypatch.setenv("GPU_NATIVE_TEST_SWITCH", text)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = settings.flag("GPU_NATIVE_TEST_SWITCH", default)
        assert got is (default if expected is None else expected)
        shown = [str(w.message) for w in caught if issubclass(w.category, gn.GpuNativeWarning)]
        if text.strip() and expected is None:
            using = "leaving it unset" if default is None else f"using {int(default)}"
            assert shown == [f"gpu_native: ignoring GPU_NATIVE_TEST_SWITCH={text.strip()!r}: "
                             f"expected 1, true, yes or on, or 0, false, no or off; {using}"]
        else:
            assert not shown

    @pytest.mark.parametrize("name", ["GPU_NATIVE_DISABLE_HOOK", "GPU_NATIVE_DEBUG",
                                      "GPU_NATIVE_REQUIRE_PRECOMPILED", "GPU_NATIVE_SIM_RACES",
                                      "GPU_NATIVE_SIM_WRITE_RACES"])
    def test_every_variable_takes_the_words(self, monkeypatch, name):
        from gpu_native.cache import locations
        from gpu_native.simulator import program

        read, default = {"GPU_NATIVE_DISABLE_HOOK": (_gpu_native_startup.is_disabled, False),
                         "GPU_NATIVE_DEBUG": (_gpu_native_startup.debug_enabled, False),
                         "GPU_NATIVE_REQUIRE_PRECOMPILED": (locations.require_precompiled, False),
                         "GPU_NATIVE_SIM_RACES": (program.races_enabled, True),
                         "GPU_NATIVE_SIM_WRITE_RACES": (program.write_races_enabled, False)}[name]
        for text, expected in [*self.WORDS, ("", default)]:
            monkeypatch.setenv(name, text)
            assert read() is expected, text
        monkeypatch.setenv(name, "2")
        with pytest.warns(gn.GpuNativeWarning, match=rf"ignoring {name}='2': expected 1, true"):
            assert read() is default

    def test_prefetch_off_and_a_bad_value(self, monkeypatch):
        from gpu_native.cache import prefetch

        monkeypatch.delenv("GPU_NATIVE_REQUIRE_PRECOMPILED", raising=False)
        monkeypatch.setenv("GPU_NATIVE_PREFETCH", " Off ")
        assert prefetch._wanted() is False
        monkeypatch.setenv("GPU_NATIVE_PREFETCH", "sometimes")
        with pytest.warns(gn.GpuNativeWarning, match=r"ignoring GPU_NATIVE_PREFETCH='sometimes'"
                                                     r".*; leaving it unset"):
            prefetch._wanted()

    @pytest.mark.slow
    @pytest.mark.parametrize("text, expected, warned", [("false", "False", False),
                                                         (" 0", "False", False),
                                                         ("off", "False", False),
                                                         ("maybe", "True", True)])
    def test_interop_sync_read_at_import(self, tmp_path, text, expected, warned):
        from tests.helpers import child_env

        code = ("import warnings; warnings.simplefilter('always'); "
                "from gpu_native.runtime import interop; print(interop.SYNC)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=child_env(tmp_path, GPU_NATIVE_INTEROP_SYNC=text), timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected
        assert ("GpuNativeWarning: gpu_native: ignoring GPU_NATIVE_INTEROP_SYNC='maybe'"
                in out.stderr) is warned, out.stderr

    @pytest.mark.slow
    @pytest.mark.parametrize("name", ["GPU_NATIVE_INDEX32", "GPU_NATIVE_UID_REMAP"])
    def test_the_launchers_switches_read_at_import(self, tmp_path, name):
        # Only "0" itself turned them off: "false" or "off" left them on without a word.
        from tests.helpers import child_env

        attribute = name.removeprefix("GPU_NATIVE_")
        code = ("import warnings; warnings.simplefilter('always'); "
                f"from gpu_native.runtime import kernel; print(kernel.{attribute})")
        for text, expected, warned in [("off", "False", False), (" False ", "False", False),
                                       ("0", "False", False), ("yes", "True", False),
                                       ("nope", "True", True)]:
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 env=child_env(tmp_path, **{name: text}), timeout=120)
            assert out.returncode == 0, out.stderr
            assert out.stdout.strip() == expected, text
            assert (f"ignoring {name}='nope'" in out.stderr) is warned, out.stderr

    def test_the_startup_hook_warns_of_a_bad_disable_hook_and_stays_on(self, tmp_path):
        """Read at interpreter startup, before gpu_native (or warnings) is imported."""
        from tests.helpers import child_env

        code = "import _gpu_native_startup as s; s.install(); print(s.status()['installed'])"
        out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                             env=child_env(tmp_path, GPU_NATIVE_DISABLE_HOOK="2"), timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "True"
        assert out.stderr.count("ignoring GPU_NATIVE_DISABLE_HOOK='2'") == 1, out.stderr


def variables_read_by_the_code() -> set[str]:
    found = set()
    for path in [*(ROOT / "gpu_native").rglob("*.py"), ROOT / "_gpu_native_startup.py"]:
        found |= set(re.findall(r"\bGPU_NATIVE_[A-Z0-9_]*[A-Z0-9]\b", path.read_text()))
    return found


def variables_in_the_table() -> set[str]:
    rows = re.findall(r"^\| `(GPU_NATIVE_[A-Z0-9_]+)` \|", TABLE.read_text(), re.MULTILINE)
    assert len(rows) == len(set(rows)), "a variable has two rows"
    return set(rows)


class TestEnvironmentTable:
    def test_every_variable_the_code_reads_is_documented(self):
        missing = variables_read_by_the_code() - variables_in_the_table()
        assert not missing, f"add a row to {TABLE.relative_to(ROOT)} for {sorted(missing)}"

    def test_every_row_is_a_variable_the_code_reads(self):
        stale = variables_in_the_table() - variables_read_by_the_code()
        assert not stale, f"{sorted(stale)} in {TABLE.relative_to(ROOT)} are read nowhere"

    def test_the_table_is_linked_from_the_readme(self):
        assert "(docs/environment.md)" in (ROOT / "README.md").read_text()

    def test_the_scan_finds_what_it_should(self):
        found = variables_read_by_the_code()
        assert {"GPU_NATIVE_BACKEND", "GPU_NATIVE_TRACEBACK", "GPU_NATIVE_SIM_LANES",
                "GPU_NATIVE_UID_BLOCKS_PER_SM"} <= found
        assert "GPU_NATIVE_" not in found and "GPU_NATIVE_PRELUDE_CUH" not in found
