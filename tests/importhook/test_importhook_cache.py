"""The import hook's caches: the rewritten module, written beside CPython's ``.pyc`` (or in
gpu_native's cache directory where ``__pycache__`` cannot be written), keyed by the source, the
device functions it imports, the optimisation level and gpu_native's version, with the source's
permission bits; and the record of modules that define no kernels.  Each runs in fresh interpreters
(see ``test_importhook.py``).
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

import _gpu_native_startup as startup
from gpu_native.importhook import pycache
from tests.importhook.support import (
    HELPERS,
    HOSTLINES,
    MYKERNELS,
    REPORT,
    USES_HELPERS,
    hook_env,
    report_of,
    run_python,
)


class TestPyCache:
    @pytest.mark.slow
    def test_written_beside_the_pyc_with_its_own_tag(self, tmp_path, work):
        from gpu_native import __version__

        run_python("import mykernels", work, hook_env(tmp_path))
        tag = sys.implementation.cache_tag
        entry = work / "__pycache__" / f"mykernels.{tag}.gpu_native-{__version__}.pyc"
        assert entry.is_file()
        assert not list(entry.parent.glob("*.tmp"))  # written to a temporary name, then renamed
        key, code = pycache.read(str(entry))
        assert key["source"] == pycache.source_digest((work / "mykernels.py").read_bytes())
        assert key["version"] == __version__ and key["module"] == "mykernels"
        assert code.co_filename == str(work / "mykernels.py")

    @pytest.mark.slow
    def test_dont_write_bytecode_uses_gpu_natives_cache_dir(self, tmp_path, work):
        env = hook_env(tmp_path, PYTHONDONTWRITEBYTECODE="1")
        rep = report_of(run_python("import mykernels; report()", work, env))
        cache_file = rep["status"]["modules"]["mykernels"]["cache_file"]
        assert cache_file.startswith(str(tmp_path / "gn_cache" / "modules"))
        assert not (work / "__pycache__").exists()
        rep = report_of(run_python("import mykernels; report()", work, env))
        assert rep["status"]["modules"]["mykernels"]["cache"] == "hit" and not rep["libcst"]

    @pytest.mark.slow
    def test_unwritable_pycache_falls_back_to_gpu_natives_cache_dir(self, tmp_path, work):
        (work / "__pycache__").write_text("a file where the directory should be")
        env = hook_env(tmp_path)
        rep = report_of(run_python("import mykernels; report()", work, env))
        assert rep["status"]["modules"]["mykernels"]["cache_file"].startswith(
            str(tmp_path / "gn_cache"))
        rep = report_of(run_python("import mykernels; report()", work, env))
        assert rep["status"]["modules"]["mykernels"]["cache"] == "hit" and not rep["libcst"]

    @pytest.mark.parametrize("damage", ["garbage", pytest.param("truncated", marks=pytest.mark.slow),
                                        pytest.param("flipped", marks=pytest.mark.slow)])
    def test_a_corrupt_entry_is_ignored_and_rewritten(self, tmp_path, work, damage):
        env = hook_env(tmp_path)
        rep = report_of(run_python("import mykernels; report()", work, env))
        entry = Path(rep["status"]["modules"]["mykernels"]["cache_file"])
        data = entry.read_bytes()
        if damage == "garbage":
            entry.write_bytes(b"\x00not a pyc at all" * 10)
        elif damage == "truncated":
            entry.write_bytes(data[: len(data) // 2])
        else:
            entry.write_bytes(data[:-20] + bytes(b ^ 0xFF for b in data[-20:]))
        rep = report_of(run_python('''
            import mykernels
            from gpu_native.runtime.kernel import Kernel
            report(is_kernel=isinstance(mykernels.add_kernel, Kernel))
        ''', work, env))
        assert rep["is_kernel"]
        assert rep["status"]["modules"]["mykernels"]["cache"] == "miss"
        assert pycache.read(str(entry)) is not None  # rewritten whole
        rep = report_of(run_python("import mykernels; report()", work, env))
        assert rep["status"]["modules"]["mykernels"]["cache"] == "hit"

    @pytest.mark.slow
    def test_editing_the_module_invalidates_its_entry(self, tmp_path, work):
        env = hook_env(tmp_path)
        run_python("import mykernels", work, env)
        source = work / "mykernels.py"
        source.write_text(source.read_text().replace("block_dim = 128", "block_dim = 256"))
        rep = report_of(run_python('''
            import inspect, mykernels
            report(src="block_dim = 256" in inspect.getsource(mykernels.add),
                   const=256 in mykernels.add.__code__.co_consts)
        ''', work, env))
        assert rep["status"]["modules"]["mykernels"]["cache"] == "miss"
        assert rep["src"] and rep["const"]

    @pytest.mark.slow
    def test_a_changed_device_function_in_another_module_invalidates_the_entry(self, tmp_path,
                                                                                  work):
        (work / "helpers.py").write_text(HELPERS)
        (work / "uses_helpers.py").write_text(USES_HELPERS)
        env = hook_env(tmp_path)
        code = '''
            import uses_helpers
            report(cuda=uses_helpers.scaled.variants[()].cuda)
        '''
        first = report_of(run_python(code, work, env))
        assert first["status"]["modules"]["uses_helpers"]["cache"] == "miss"
        second = report_of(run_python(code, work, env))
        assert second["status"]["modules"]["uses_helpers"]["cache"] == "hit"
        assert second["cuda"] == first["cuda"]

        (work / "helpers.py").write_text(HELPERS.replace("return x * FACTOR",
                                                         "return x * FACTOR + 1.0"))
        third = report_of(run_python(code, work, env))
        assert third["status"]["modules"]["uses_helpers"]["cache"] == "miss"
        assert third["cuda"] != first["cuda"]
        (work / "helpers.py").write_text(HELPERS.replace("FACTOR = 2.0", "FACTOR = 3.0"))
        fourth = report_of(run_python(code, work, env))
        assert fourth["status"]["modules"]["uses_helpers"]["cache"] == "miss"
        assert fourth["cuda"] not in (first["cuda"], third["cuda"])

    def test_entries_are_keyed_by_version_transpiler_module_and_path(self, tmp_path):
        source = b"x = 1\n"
        sha = pycache.source_digest(source)
        path = str(tmp_path / "m.py")
        key = pycache.make_key("m", path, sha, ())
        assert pycache.is_current(key, "m", path, sha)
        assert not pycache.is_current(key, "m", path, pycache.source_digest(b"x = 2\n"))
        assert not pycache.is_current(key, "pkg.m", path, sha)
        assert not pycache.is_current(key, "m", str(tmp_path / "elsewhere" / "m.py"), sha)
        for field, value in (("version", "0.0.0"), ("transpiler", "0" * 32), ("format", 0)):
            assert not pycache.is_current({**key, field: value}, "m", path, sha)
        dep = tmp_path / "dep.py"
        dep.write_text("A = 1\n")
        with_dep = pycache.make_key("m", path, sha, ((str(dep), pycache.file_digest(str(dep))),))
        assert pycache.is_current(with_dep, "m", path, sha)
        dep.write_text("A = 2\n")
        assert not pycache.is_current(with_dep, "m", path, sha)
        dep.unlink()
        assert not pycache.is_current(with_dep, "m", path, sha)

    def test_read_rejects_what_write_did_not_write(self, tmp_path):
        entry = tmp_path / "e.pyc"
        code = compile("x = 1\n", "e.py", "exec")
        assert pycache.write(str(entry), {"k": 1}, code)
        assert pycache.read(str(entry)) == ({"k": 1}, code)
        assert pycache.read(str(tmp_path / "missing.pyc")) is None
        import importlib.util

        entry.write_bytes(importlib.util.MAGIC_NUMBER + b"\0" * 12 + b"x")  # a plain pyc header
        assert pycache.read(str(entry)) is None


class TestNoKernelsCache:
    @pytest.mark.slow
    def test_a_module_known_to_have_no_kernels_is_rescanned_once_edited(self, tmp_path, work):
        plain = work / "later.py"
        plain.write_text("X = 1\n")
        env = hook_env(tmp_path)
        run_python("import later", work, env)
        files = list((tmp_path / "gn_cache" / "modules").glob("no-kernels.*.marshal"))
        assert len(files) == 1
        import marshal

        known = marshal.loads(files[0].read_bytes())
        assert str(plain) in known
        assert not [p for p in known if p.startswith(startup._stdlib) and
                    not p.startswith(startup._site_markers)]  # the stdlib is never read
        plain.write_text(MYKERNELS)
        rep = report_of(run_python('''
            import later
            report(kind=type(later.add_kernel).__name__)
        ''', work, env))
        assert rep["kind"] == "Kernel"
        assert rep["status"]["modules"]["later"]["cache"] == "miss"

    def test_the_finders_byte_test_agrees_with_the_transpilers(self):
        from gpu_native.frontend.parse import has_gpu_decorators
        from gpu_native.rewrite import rewrite_module

        samples = [b"", b"x = 1\n", b"@gpu_kernel(Kernel1D)\n", b"@gpu_device\n", b"gpu_\n",
                   b"from gpu_native import gpu_device as d\n", b"gpu_kerne\n",
                   b"import gpu_native as gn\n\n@gn.gpu_device\ndef f(x: gn.f32) -> gn.f32:\n"
                   b"    return x\n",
                   b"from mylib import gpu_kernel\n", MYKERNELS.encode(), HELPERS.encode(),
                   USES_HELPERS.encode(), HOSTLINES.encode()]
        for data in samples:
            # Stricter than the transpiler's test only where the transpiler finds no kernel.
            if startup.may_define_kernels(data) != has_gpu_decorators(data):
                assert not startup.may_define_kernels(data), data
                try:
                    compile(data, "m.py", "exec")
                except SyntaxError:
                    continue
                assert not rewrite_module(data.decode(), "m.py", "m").has_kernels, data
        assert startup.may_define_kernels(MYKERNELS.encode())
        assert not startup.may_define_kernels(b"from mylib import gpu_kernel\n")

    def test_cache_root_matches_the_artifact_cache(self, monkeypatch, tmp_path):
        from gpu_native.cache.locations import cache_root

        monkeypatch.delenv("GPU_NATIVE_CACHE_DIR", raising=False)
        assert startup.cache_root() == cache_root()
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert startup.cache_root() == cache_root()
        monkeypatch.setenv("GPU_NATIVE_CACHE_DIR", str(tmp_path / "mine"))
        assert startup.cache_root() == cache_root() == str(tmp_path / "mine")


# A host assert, a docstring and __debug__: what -O and -OO take out of the compiled module.
OPTIMIZED = MYKERNELS + textwrap.dedent('''
    DEBUG = __debug__  # a constant of the compiled code


    def checked():
        """Documented."""
        assert False, "host assert"
        return "assert removed"
''')
REPORT_OPTIMIZED = '''
    import mykernels
    try:
        outcome = mykernels.checked()
    except AssertionError:
        outcome = "assert ran"
    report(outcome=outcome, debug=mykernels.DEBUG, doc=mykernels.checked.__doc__)
'''


@pytest.mark.untrusted
class TestOptimizationLevel:
    """``python -O`` compiles without asserts (and -OO without docstrings): its cached rewrite
    is keyed and named by the level, as CPython's ``opt-1``/``opt-2`` pycs are."""

    @pytest.mark.parametrize("flag", ["-O", pytest.param("-OO", marks=pytest.mark.slow)])
    @pytest.mark.parametrize("where", ["pycache", pytest.param("user-cache", marks=pytest.mark.slow)])
    def test_optimized_and_normal_runs_never_share_a_rewrite(self, tmp_path, work, flag, where):
        (work / "mykernels.py").write_text(OPTIMIZED)
        extra = {"PYTHONDONTWRITEBYTECODE": "1"} if where == "user-cache" else {}
        env = hook_env(tmp_path, **extra)
        normal = {"outcome": "assert ran", "debug": True, "doc": "Documented."}
        optimized = {"outcome": "assert removed", "debug": False,
                     "doc": None if flag == "-OO" else "Documented."}
        runs = [((flag,), optimized, "miss"), ((), normal, "miss"), ((flag,), optimized, "hit"),
                ((), normal, "hit")]
        files = {}
        for args, expected, outcome in runs:
            rep = report_of(run_python(REPORT_OPTIMIZED, work, env, args=args))
            assert {k: rep[k] for k in expected} == expected, (args, rep)
            module = rep["status"]["modules"]["mykernels"]
            assert module["cache"] == outcome, (args, module)
            files.setdefault(args, set()).add(os.path.basename(module["cache_file"]))
        # Named as CPython names its pycs: ``.opt-1`` for -O, ``.opt-2`` for -OO.
        assert [len(names) for names in files.values()] == [1, 1]
        assert f".opt-{len(flag) - 1}." in next(iter(files[(flag,)]))
        assert ".opt-" not in next(iter(files[()]))

    @pytest.mark.slow
    def test_a_kernels_asserts_stay_under_o(self, tmp_path, work):
        # The proofs rely on them: -O drops the host's asserts, never a kernel's.
        (work / "asserting.py").write_text(textwrap.dedent("""\
            from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, f32
            from gpu_native import block_dim


            @gpu_kernel(Kernel1D)
            def k(a: CUDASliceMut[f32]):
                assert block_dim.x == 64
                a[FlatLayout1D.uid()] = 1.0
            """))
        code = """
            import gpu_native as gn, asserting
            a = gn.zeros(128, gn.f32)
            try:
                asserting.k[2, 32](a)
                gn.synchronize()
                outcome = "ran"
            except gn.KernelAssertionError as exc:
                outcome = str(exc)
            report(outcome=outcome, debug=__debug__)
            """
        rep = report_of(run_python(code, work, hook_env(tmp_path, GPU_NATIVE_BACKEND="sim"),
                                   args=("-O",)))
        assert rep["debug"] is False
        assert "asserting.py\", line 7, in k" in rep["outcome"], rep["outcome"]

    def test_the_key_names_the_optimization_level(self, tmp_path):
        path = str(tmp_path / "m.py")
        sha = pycache.source_digest(b"x = 1\n")
        key = pycache.make_key("m", path, sha, ())
        assert key["optimize"] == sys.flags.optimize
        assert not pycache.is_current({**key, "optimize": sys.flags.optimize + 1}, "m", path, sha)


@pytest.mark.untrusted
class TestEntryMode:
    """A rewrite beside the source is as readable as the source (CPython's ``_calc_mode``)."""

    @pytest.mark.parametrize("mode", [0o600, pytest.param(0o640, marks=pytest.mark.slow),
                                      pytest.param(0o644, marks=pytest.mark.slow), 0o444])
    @pytest.mark.parametrize("route", ["rewritten", "moved-from-user-cache"])
    @pytest.mark.slow
    def test_entry_copies_the_sources_permission_bits(self, tmp_path, work, mode, route):
        source = work / "mykernels.py"
        source.chmod(mode)
        code = "import os; os.umask(0o022); import mykernels; report()"
        env = hook_env(tmp_path)
        if route == "moved-from-user-cache":
            first = report_of(run_python(code, work, hook_env(tmp_path,
                                                              PYTHONDONTWRITEBYTECODE="1")))
            assert first["status"]["modules"]["mykernels"]["cache_file"].startswith(
                str(tmp_path / "gn_cache"))
        rep = report_of(run_python(code, work, env))
        entry = Path(rep["status"]["modules"]["mykernels"]["cache_file"])
        assert entry.parent == work / "__pycache__"
        assert oct(entry.stat().st_mode & 0o777) == oct((mode | 0o200) & 0o666)
        rep = report_of(run_python(code, work, env))
        assert rep["status"]["modules"]["mykernels"]["cache"] == "hit"


HELPERS_PLUS = HELPERS.replace("return x * FACTOR", "return x * FACTOR + 100.0")


@pytest.mark.untrusted
class TestDependencyResolution:
    """A cached rewrite holds the device functions it read; when the same import finds another
    file (``sys.path`` changed), it is rewritten with the one Python now imports."""

    CODE = '''
        import numpy as np, gpu_native as gn, uses_helpers, helpers
        a = gn.to_device(np.ones(4, np.float32))
        c = gn.empty(4, gn.f32)
        uses_helpers.scaled.launch(gn.GridDim1D(1), gn.BlockDim1D(4), 0, gn.DEFAULT_STREAM)(a, c)
        report(out=c.to_host().tolist(), helpers=helpers.__file__,
               cuda=uses_helpers.scaled.variants[()].cuda)
    '''

    @pytest.mark.slow
    def test_a_dependency_found_in_another_directory_invalidates_the_entry(self, tmp_path,
                                                                            work):
        (work / "uses_helpers.py").write_text(USES_HELPERS)
        first_dir, second_dir = tmp_path / "first", tmp_path / "second"
        for directory, text in ((first_dir, HELPERS), (second_dir, HELPERS_PLUS)):
            directory.mkdir()
            (directory / "helpers.py").write_text(text)

        def run(*dirs):
            env = hook_env(tmp_path)
            env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], *map(str, dirs)])
            return report_of(run_python(self.CODE, work, env))

        for dirs, out, outcome in (((first_dir, second_dir), 2.0, "miss"),
                                   ((first_dir, second_dir), 2.0, "hit"),
                                   ((second_dir, first_dir), 102.0, "miss"),
                                   ((second_dir, first_dir), 102.0, "hit"),
                                   ((first_dir, second_dir), 2.0, "miss")):
            rep = run(*dirs)
            assert rep["helpers"] == str(dirs[0] / "helpers.py")
            assert rep["status"]["modules"]["uses_helpers"]["cache"] == outcome, dirs
            assert rep["out"] == [out] * 4, (dirs, rep["out"])

    @pytest.mark.slow
    def test_a_module_ahead_on_the_path_wins_over_one_beside_the_kernel(self, tmp_path, work):
        # `helpers` beside the kernel's module and in a directory ahead of it on sys.path:
        # Python imports the latter, and so must the kernel (it once read the one beside it).
        (work / "uses_helpers.py").write_text(USES_HELPERS)
        (work / "helpers.py").write_text(HELPERS)
        ahead = tmp_path / "ahead"
        ahead.mkdir()
        (ahead / "helpers.py").write_text(HELPERS_PLUS)
        code = f"import sys; sys.path.insert(0, {str(ahead)!r})\n" + textwrap.dedent(self.CODE)
        rep = report_of(run_python(code, work, hook_env(tmp_path)))
        assert rep["helpers"] == str(ahead / "helpers.py")
        assert rep["out"] == [102.0] * 4

    def test_a_name_that_resolved_to_nothing_is_checked_too(self, tmp_path):
        path = str(tmp_path / "m.py")
        sha = pycache.source_digest(b"x = 1\n")
        key = pycache.make_key("m", path, sha, (), (("no_such_module_xyz", path, None),))
        assert pycache.is_current(key, "m", path, sha)
        (tmp_path / "no_such_module_xyz.py").write_text("A = 1\n")
        assert not pycache.is_current(key, "m", path, sha)


class TestFifosInTheCaches:
    """A FIFO where a cache file should be is a miss, never a blocking read: without a writer,
    ``open()`` of it would hang every import that reaches it."""

    @staticmethod
    def run_quickly(code: str, cwd: Path, env: dict):
        import subprocess

        proc = subprocess.run([sys.executable, "-c", REPORT + textwrap.dedent(code)], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return report_of(proc)

    @pytest.mark.slow
    @pytest.mark.parametrize("where", ["pycache", "modules"])
    def test_a_fifo_in_place_of_a_rewritten_module_is_a_miss(self, tmp_path, work, where):
        extra = {"PYTHONDONTWRITEBYTECODE": "1"} if where == "modules" else {}
        env = hook_env(tmp_path, **extra)
        rep = self.run_quickly("import mykernels; report()", work, env)
        entry = Path(rep["status"]["modules"]["mykernels"]["cache_file"])
        assert (where == "modules") == str(entry).startswith(str(tmp_path / "gn_cache"))
        entry.unlink()
        os.mkfifo(entry)
        rep = self.run_quickly("""
            import mykernels
            report(kind=type(mykernels.add_kernel).__name__)
        """, work, env)
        assert rep["kind"] == "Kernel"
        assert rep["status"]["modules"]["mykernels"]["cache"] == "miss"
        assert entry.is_file() and pycache.read(str(entry)) is not None  # written whole again

    @pytest.mark.slow
    def test_a_fifo_in_place_of_the_no_kernels_record(self, tmp_path, work, monkeypatch):
        (work / "later.py").write_text("X = 1\n")
        env = hook_env(tmp_path)
        monkeypatch.setenv("GPU_NATIVE_CACHE_DIR", env["GPU_NATIVE_CACHE_DIR"])
        record = Path(startup._negative_cache_file())
        record.parent.mkdir(parents=True, mode=0o700)
        record.parent.parent.chmod(0o700)
        os.mkfifo(record)
        rep = self.run_quickly("import later, mykernels; report(x=later.X)", work, env)
        assert rep["x"] == 1 and rep["status"]["modules"]["mykernels"]["cache"] == "miss"
