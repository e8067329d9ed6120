"""The import hook: ``import mykernels`` imports gpu_native's rewrite of the module.

Almost everything runs in fresh interpreters (the hook is about interpreter startup and imports),
with the startup ``.pth`` simulated by a ``sitecustomize`` that hands the repository's real
``gpu_native.pth`` to ``site.addsitedir``, exactly as site-packages would.  Kernels launch on the
simulator backend (no GPU needed); the hook's own assertions do not depend on launching.
What the hook caches and when it uses a cached rewrite again is in ``test_importhook_cache.py``;
coexistence with pytest, coverage, multiprocessing and installs in
``test_importhook_coexistence.py``.
"""

from __future__ import annotations

import linecache
import os
import re
import subprocess
import sys
import textwrap
import zipfile

import pytest

import _gpu_native_startup as startup
from gpu_native.errors import TranspileError
from tests.importhook.support import (
    FAILS_LINE,
    HELPERS,
    HOSTLINES,
    IMPORT_MYKERNELS,
    LAUNCH,
    MYKERNELS,
    NOT_UNIQUE,
    USES_HELPERS,
    WARNS_LINE,
    hook_env,
    import_mykernels,
    report_of,
    run_python,
    site_dirs,
)


class TestRewriteOnImport:
    @pytest.mark.slow
    def test_pth_makes_plain_import_rewrite_and_warm_import_skips_libcst(self, tmp_path, work):
        env = hook_env(tmp_path)
        cold = report_of(run_python(import_mykernels(launch=True), work, env))
        assert cold["gpu_native_before"] is False  # nothing imported gpu_native: the .pth did it
        assert cold["status"]["installed_by"] == "gpu_native.pth"
        assert cold["is_kernel"] and cold["loader"] == "KernelModuleLoader"
        assert cold["status"]["modules"]["mykernels"]["cache"] == "miss"
        assert cold["status"]["modules"]["mykernels"]["kernels"] == ["add_kernel"]
        assert cold["launched"] is True

        warm = report_of(run_python(import_mykernels(), work, env))
        assert warm["is_kernel"] and warm["loader"] == "KernelModuleLoader"
        assert warm["status"]["modules"]["mykernels"]["cache"] == "hit"
        assert warm["libcst_after_import"] is False and warm["libcst"] is False

        launched = report_of(run_python(import_mykernels(launch=True), work, env))
        assert launched["libcst_after_import"] is False and launched["launched"] is True
        # The simulator runs the IR the rewritten module carries: no transpiler at all, and no
        # NVRTC (the layering that makes this so: docs/architecture.md, test_layering.py).
        assert launched["libcst"] is False and launched["transpiler"] == []
        assert launched["nvrtc"] == [] and warm["nvrtc"] == []

    def test_a_bad_switch_read_at_startup_is_attributed_to_the_pth_line(self, tmp_path, work):
        # The hook reads GPU_NATIVE_DISABLE_HOOK from gpu_native.pth, before any user code: the
        # warning names that file and line (it said "<string>:6", the pth's exec).
        env = hook_env(tmp_path, GPU_NATIVE_DISABLE_HOOK="maybe")
        proc = run_python("pass", work, env)
        lines = [line for line in proc.stderr.splitlines() if "GpuNativeWarning" in line]
        assert len(lines) == 1, proc.stderr
        where, _, message = lines[0].partition(": GpuNativeWarning: ")
        # (The line: 3 as site.py counts it here; Python 3.13's site counts from another base.)
        assert re.search(r"gpu_native\.pth:[34]$", where), lines[0]
        assert message.startswith("gpu_native: ignoring GPU_NATIVE_DISABLE_HOOK='maybe'")

    def test_a_bad_switch_under_w_error_still_installs_the_hook(self, tmp_path, work):
        # -W error made the warning an exception inside the .pth, and the hook was left off
        # without a word.
        env = hook_env(tmp_path, GPU_NATIVE_DISABLE_HOOK="maybe")
        proc = run_python("import _gpu_native_startup as s; print('INSTALLED', "
                          "s.status()['installed'])", work, env, args=("-W", "error"))
        assert "INSTALLED True" in proc.stdout, proc.stdout + proc.stderr
        assert ("GpuNativeWarning: gpu_native: ignoring GPU_NATIVE_DISABLE_HOOK='maybe'"
                in proc.stderr), proc.stderr

    @pytest.mark.slow
    def test_import_gpu_native_installs_the_hook(self, tmp_path, work):
        # -S: no .pth file runs, even where gpu_native is pip-installed (site-packages are put
        # on the path by hand).
        env = hook_env(tmp_path, pth=False)
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], *site_dirs()])
        rep = report_of(run_python('''
            import sys, _gpu_native_startup
            before = _gpu_native_startup.status()["installed"]
            import gpu_native, mykernels
            from gpu_native.runtime.kernel import Kernel
            report(before=before, is_kernel=isinstance(mykernels.add_kernel, Kernel),
                   hook_status=gpu_native.importhook.status())
        ''', work, env, args=("-S",)))
        assert rep["before"] is False
        assert rep["is_kernel"]
        assert rep["hook_status"]["installed_by"] == "import gpu_native"
        assert rep["hook_status"]["modules"]["mykernels"]["cache"] == "miss"

    @pytest.mark.slow
    def test_the_hook_imports_exactly_what_expand_prints(self, tmp_path, work):
        env = hook_env(tmp_path)
        path = work / "mykernels.py"
        expanded = subprocess.run(
            [sys.executable, "-m", "gpu_native.cli", "expand", "--exact", str(path), "--module",
             "mykernels"],
            cwd=work, env=env, capture_output=True, text=True, check=True).stdout
        assert "_spec=" in expanded
        (tmp_path / "expanded.py").write_text(expanded)
        rep = report_of(run_python(f'''
            import mykernels
            code = mykernels.__spec__.loader.get_code("mykernels")
            expanded = open({str(tmp_path / "expanded.py")!r}).read()
            report(same=code == compile(expanded, {str(path)!r}, "exec", dont_inherit=True))
        ''', work, env))
        # Code objects compare their bytecode, constants, names and line tables.
        assert rep["same"] is True

    @pytest.mark.untrusted
    @pytest.mark.slow
    def test_a_star_import_of_gpu_native_works_like_explicit_imports(self, tmp_path, work):
        star = MYKERNELS.replace(MYKERNELS[:MYKERNELS.index("\n\n")], "from gpu_native import *")
        assert star.startswith("from gpu_native import *\n\n@gpu_kernel")
        (work / "mykernels.py").write_text(star)
        env = hook_env(tmp_path)
        expanded = subprocess.run([sys.executable, "-m", "gpu_native.cli", "expand",
                                   "mykernels.py"], cwd=work, env=env, capture_output=True,
                                  text=True, check=True).stdout
        assert "@gpu_kernel(Kernel1D, _spec=" in expanded
        code = IMPORT_MYKERNELS + LAUNCH + '''
    from gpu_native import decorators
    report(launched=launched, from_source=len(decorators._rewrites))
'''
        cold = report_of(run_python(code, work, env))
        assert cold["status"]["modules"]["mykernels"]["cache"] == "miss"
        assert cold["status"]["modules"]["mykernels"]["kernels"] == ["add_kernel"]
        assert cold["launched"] is True
        assert cold["from_source"] == 0  # the decorator got its spec: no transpile from source
        warm = report_of(run_python(code, work, env))
        assert warm["status"]["modules"]["mykernels"]["cache"] == "hit"
        assert warm["launched"] is True and warm["from_source"] == 0

    @pytest.mark.slow
    def test_package_modules_and_init_are_rewritten(self, tmp_path, work):
        pkg = work / "kpkg"
        (pkg / "sub").mkdir(parents=True)
        (pkg / "__init__.py").write_text(MYKERNELS)
        (pkg / "sub" / "__init__.py").write_text("")
        (pkg / "sub" / "more.py").write_text(MYKERNELS.replace("add_kernel", "more_kernel"))
        rep = report_of(run_python('''
            import kpkg, kpkg.sub.more
            from gpu_native.runtime.kernel import Kernel
            report(kernels=[type(kpkg.add_kernel).__name__, type(kpkg.sub.more.more_kernel).__name__],
                   modules=[kpkg.add_kernel.__module__, kpkg.sub.more.more_kernel.__module__])
        ''', work, hook_env(tmp_path)))
        assert rep["kernels"] == ["Kernel", "Kernel"]
        assert rep["modules"] == ["kpkg", "kpkg.sub.more"]
        assert set(rep["status"]["modules"]) == {"kpkg", "kpkg.sub.more"}

    @pytest.mark.slow
    def test_modules_without_kernels_and_gpu_natives_own_are_left_alone(self, tmp_path, work):
        (work / "plain.py").write_text("X = 1\n")
        (work / "mentions.py").write_text("from gpu_native import gpu_kernel  # a re-export\n")
        (work / "other.py").write_text("from mylib import gpu_kernel  # someone else's\n")
        (work / "mylib.py").write_text("def gpu_kernel(kind):\n    return lambda f: f\n")
        rep = report_of(run_python('''
            import json, plain, mentions, other, mykernels, gpu_native.decorators as d
            report(plain=type(plain.__spec__.loader).__name__,
                   other=type(other.__spec__.loader).__name__,
                   json=type(json.__spec__.loader).__name__,
                   own=type(d.__spec__.loader).__name__,
                   mentions=type(mentions.__spec__.loader).__name__)
        ''', work, hook_env(tmp_path)))
        assert rep["plain"] == rep["json"] == rep["own"] == rep["other"] == "SourceFileLoader"
        # A mention of the decorator's name sends a module through the rewrite, which leaves it
        # as it is (and caches that, so the next import parses nothing either).
        assert rep["mentions"] == "KernelModuleLoader"
        assert rep["status"]["modules"]["mentions"]["kernels"] == []
        assert not [m for m in rep["status"]["modules"] if m.startswith("gpu_native")]

    @pytest.mark.slow
    def test_python_m_runs_the_rewritten_module(self, tmp_path, work):
        (work / "runme.py").write_text(MYKERNELS + textwrap.dedent('''
            if __name__ == "__main__":
                import _gpu_native_startup
                print("LOADER", type(__spec__.loader).__name__, type(add_kernel).__name__)
        '''))
        proc = subprocess.run([sys.executable, "-m", "runme"], cwd=work, env=hook_env(tmp_path),
                              capture_output=True, text=True, check=True)
        assert "LOADER KernelModuleLoader Kernel" in proc.stdout

    @pytest.mark.slow
    def test_kernels_launch_after_a_warm_import(self, tmp_path, work):
        env = hook_env(tmp_path)
        code = '''
            import numpy as np, gpu_native as gn, mykernels
            a = gn.to_device(np.arange(1000, dtype=np.float32))
            b = gn.to_device(np.ones(1000, np.float32))
            c = gn.empty(1000, gn.f32)
            mykernels.add(a, b, c)
            report(c=c.to_host()[:4].tolist(), ok=bool((c.to_host() == np.arange(1000) + 1).all()))
        '''
        for expected in ("miss", "hit"):
            rep = report_of(run_python(code, work, env))
            assert rep["status"]["modules"]["mykernels"]["cache"] == expected
            assert rep["c"] == [1.0, 2.0, 3.0, 4.0] and rep["ok"]


class TestLineNumbers:
    @pytest.mark.slow
    def test_traceback_warning_inspect_and_pdb_see_the_users_file(self, tmp_path, work):
        path = work / "hostlines.py"
        path.write_text(HOSTLINES)
        rep = report_of(run_python(f'''
            import inspect, io, pdb, traceback, warnings
            import hostlines
            try:
                hostlines.fails()
            except ValueError as exc:
                frame = traceback.extract_tb(exc.__traceback__)[-1]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                hostlines.warns()
            out = io.StringIO()
            debugger = pdb.Pdb(stdin=io.StringIO("where\\ncontinue\\n"), stdout=out)
            debugger.set_break(hostlines.__file__, {FAILS_LINE})
            try:
                debugger.runcall(hostlines.fails)
            except ValueError:
                pass
            report(loader=type(hostlines.__spec__.loader).__name__,
                   tb=[frame.filename, frame.lineno, frame.line],
                   warning=[caught[0].filename, caught[0].lineno],
                   source=inspect.getsource(hostlines.fails).splitlines()[0],
                   pdb=out.getvalue())
        ''', work, hook_env(tmp_path)))
        assert rep["loader"] == "KernelModuleLoader"
        assert rep["tb"] == [str(path), FAILS_LINE, 'raise ValueError("raised by the host")']
        assert rep["warning"] == [str(path), WARNS_LINE]
        assert rep["source"] == "def fails():"
        assert f"{path}({FAILS_LINE})fails()" in rep["pdb"]

    @pytest.mark.slow
    def test_line_numbers_hold_on_a_warm_import_too(self, tmp_path, work):
        (work / "hostlines.py").write_text(HOSTLINES)
        code = '''
            import traceback, hostlines
            try:
                hostlines.fails()
            except ValueError as exc:
                report(line=traceback.extract_tb(exc.__traceback__)[-1].lineno)
        '''
        env = hook_env(tmp_path)
        assert report_of(run_python(code, work, env))["line"] == FAILS_LINE
        rep = report_of(run_python(code, work, env))
        assert rep["line"] == FAILS_LINE
        assert rep["status"]["modules"]["hostlines"]["cache"] == "hit"


class TestErrors:
    @pytest.mark.slow
    def test_a_transpile_error_surfaces_as_itself_at_the_users_line(self, tmp_path, work):
        (work / "badkernels.py").write_text(NOT_UNIQUE)
        proc = run_python("import badkernels", work, hook_env(tmp_path), check=False)
        assert proc.returncode == 1
        err = proc.stderr
        path = work / "badkernels.py"
        assert f'File "{path}", line 7, in <module>\n    c[0] = 1.0\n' in err
        last = err.strip().splitlines()
        head = next(i for i, line in enumerate(last) if line.startswith("gpu_native.errors."))
        assert last[head].startswith(f"gpu_native.errors.TranspileError: {path}:7:5: error: ")
        assert last[head + 1:head + 3] == ["        c[0] = 1.0", "        ^^^^"]
        for internal in ("importhook", "_gpu_native_startup", "rewrite.py", "frozen importlib",
                         "During handling"):
            assert internal not in err, internal

    @pytest.mark.slow
    def test_a_module_of_device_functions_only_is_checked_on_import(self, tmp_path, work):
        # As a kernel's error fails its module's import, so does an error in a device function
        # no kernel calls (it used to surface only once some kernel, anywhere, called it).
        (work / "devonly.py").write_text(HELPERS + textwrap.dedent('''\


            @gpu_device
            def bad(x: f32) -> f32:
                return x + undefined_name
            '''))
        proc = run_python("import devonly", work, hook_env(tmp_path), check=False)
        assert proc.returncode == 1
        path = work / "devonly.py"
        assert f'File "{path}", line 13, in <module>\n    return x + undefined_name\n' \
            in proc.stderr
        assert f"gpu_native.errors.TranspileError: {path}:13:16: error: name 'undefined_name' " \
            "is not defined" in proc.stderr
        (work / "devonly.py").write_text(HELPERS)
        rep = report_of(run_python("import devonly; report(scale=devonly.scale.__name__)", work,
                                   hook_env(tmp_path)))
        assert rep["scale"] == "scale"
        assert rep["status"]["modules"]["devonly"]["cache"] == "miss"

    @pytest.mark.slow
    def test_a_syntax_error_is_pythons_own(self, tmp_path, work):
        (work / "broken.py").write_text("from gpu_native import gpu_kernel\n\ndef k(:\n    pass\n")
        proc = run_python("import broken", work, hook_env(tmp_path), check=False)
        assert proc.returncode == 1
        assert proc.stderr.strip().splitlines()[-1].startswith("SyntaxError")
        assert f'File "{work / "broken.py"}", line 3' in proc.stderr
        assert "TranspileError" not in proc.stderr and "importhook" not in proc.stderr

    @pytest.mark.slow
    def test_a_fixed_module_imports_after_a_failed_import(self, tmp_path, work):
        (work / "badkernels.py").write_text(NOT_UNIQUE)
        env = hook_env(tmp_path)
        rep = report_of(run_python('''
            try:
                import badkernels
            except Exception as exc:
                kind = type(exc).__name__
            report(kind=kind)
        ''', work, env))
        assert rep["kind"] == "TranspileError"
        assert rep["status"]["modules"]["badkernels"]["cache"] == "error"
        (work / "badkernels.py").write_text(NOT_UNIQUE.replace("c[0]", "c[idx]"))
        rep = report_of(run_python("import badkernels; report()", work, env))
        assert rep["status"]["modules"]["badkernels"]["cache"] == "miss"


    def test_a_module_libcst_cannot_parse_imports_as_python_would(self, tmp_path, monkeypatch):
        import libcst

        import gpu_native.rewrite

        monkeypatch.setenv("GPU_NATIVE_CACHE_DIR", str(tmp_path / "gn_cache"))
        path = tmp_path / "newsyntax.py"
        path.write_text("from gpu_native import gpu_kernel\nVALUE = 42\n")

        def libcst_fails(*args, **kwargs):
            try:
                raise libcst.ParserSyntaxError("newer syntax", lines=("x",), raw_line=1,
                                               raw_column=0)
            except libcst.ParserSyntaxError:
                raise TranspileError("syntax error: newer syntax") from None

        monkeypatch.setattr(gpu_native.rewrite, "rewrite_module", libcst_fails)
        code = startup.KernelModuleLoader("newsyntax", str(path)).get_code("newsyntax")
        namespace: dict = {}
        exec(code, namespace)
        assert namespace["VALUE"] == 42


class TestOptOutAndStatus:
    @pytest.mark.slow
    def test_disable_hook_env_var_opts_out_and_the_decorator_still_works(self, tmp_path, work):
        env = hook_env(tmp_path, GPU_NATIVE_DISABLE_HOOK="1")
        rep = report_of(run_python('''
            import _gpu_native_startup
            at_startup = _gpu_native_startup.status()["installed"]
            import gpu_native, mykernels
            from gpu_native.runtime.kernel import Kernel
            report(at_startup=at_startup, is_kernel=isinstance(mykernels.add_kernel, Kernel),
                   loader=type(mykernels.__spec__.loader).__name__)
        ''', work, env))
        assert rep["at_startup"] is False
        assert rep["status"]["installed"] is False and rep["status"]["disabled"] is True
        assert rep["is_kernel"] and rep["loader"] == "SourceFileLoader"
        assert rep["libcst"] is True  # the decorator transpiled the kernel from its source
        assert rep["status"]["modules"] == {}

    @pytest.mark.slow
    def test_debug_log_prints_one_line_per_rewritten_module(self, tmp_path, work):
        env = hook_env(tmp_path, GPU_NATIVE_DEBUG="1")
        (work / "plain.py").write_text("X = 1\n")
        cold = run_python("import plain, mykernels", work, env).stderr
        warm = run_python("import plain, mykernels", work, env).stderr
        for err, outcome in ((cold, "miss"), (warm, "hit")):
            lines = [line for line in err.splitlines() if "import hook" in line]
            assert len(lines) == 1, err
            assert lines[0].startswith(f"gpu_native: import hook rewrote mykernels "
                                       f"({work / 'mykernels.py'}): cache {outcome}, 1 kernel, ")

    def test_status_describes_the_hook_and_install_is_idempotent(self):
        import gpu_native.importhook as hook

        st = hook.status()
        assert set(st) == {"installed", "disabled", "installed_by", "pth", "modules"}
        assert st["installed"] is True  # importing gpu_native installed it in this process
        count = sum(getattr(f, "_gpu_native_hook", False) for f in sys.meta_path)
        assert hook.install() is True
        assert sum(getattr(f, "_gpu_native_hook", False) for f in sys.meta_path) == count == 1
        from importlib.machinery import PathFinder

        index = next(i for i, f in enumerate(sys.meta_path) if getattr(f, "_gpu_native_hook", 0))
        assert sys.meta_path[index + 1] is PathFinder  # just before the finder it wraps

    def test_uninstall_and_reinstall(self):
        import gpu_native.importhook as hook

        hook.uninstall()
        try:
            assert hook.status()["installed"] is False
            assert not any(getattr(f, "_gpu_native_hook", False) for f in sys.meta_path)
        finally:
            assert hook.install() is True
        assert hook.status()["installed"] is True


class TestWhereNoHookRuns:
    @pytest.mark.slow
    def test_a_main_script_is_transpiled_by_the_decorator(self, tmp_path, work):
        script = work / "script.py"
        script.write_text(MYKERNELS + textwrap.dedent('''
            from gpu_native.runtime.kernel import Kernel
            print("SCRIPT", type(add_kernel).__name__, add_kernel.__module__, add_kernel.spec_line)
        '''))
        proc = subprocess.run([sys.executable, str(script)], cwd=work, env=hook_env(tmp_path),
                              capture_output=True, text=True, check=True)
        assert "SCRIPT Kernel" in proc.stdout and proc.stdout.split()[-1] == "4"

    def test_exec_of_a_string_is_transpiled_by_the_decorator(self):
        from gpu_native.runtime.kernel import Kernel

        # linecache holds the string's lines, as IPython does for notebook cells.
        name = "<gpu_native-test-cell-1>"
        linecache.cache[name] = (len(MYKERNELS), None, MYKERNELS.splitlines(True), name)
        try:
            namespace: dict = {"__name__": "__main__"}
            exec(compile(MYKERNELS, name, "exec"), namespace)
        finally:
            linecache.cache.pop(name, None)
        assert isinstance(namespace["add_kernel"], Kernel)

    def test_without_source_the_error_names_the_kernel_and_what_to_ship(self):
        # A frozen app: the code exists, its source file does not.
        code = compile(MYKERNELS, "/nonexistent/frozen_app/mykernels.py", "exec")
        with pytest.raises(TranspileError) as info:
            exec(code, {"__name__": "mykernels"})
        message = str(info.value)
        assert "add_kernel" in message and "/nonexistent/frozen_app/mykernels.py" in message
        assert "source" in message and "precompile" in message

    @pytest.mark.slow
    def test_the_rewritten_module_needs_no_source(self, tmp_path, work):
        """What a frozen app can ship instead of sources: the module ``expand`` prints, whose
        kernels carry their transpiled form."""
        from gpu_native.runtime.kernel import Kernel

        expanded = subprocess.run(
            [sys.executable, "-m", "gpu_native.cli", "expand", "--exact", str(work / "mykernels.py"),
             "--module", "mykernels"], cwd=work, env=hook_env(tmp_path), capture_output=True,
            text=True, check=True).stdout
        namespace: dict = {"__name__": "mykernels"}
        exec(compile(expanded, "/nonexistent/frozen_app/mykernels.py", "exec"), namespace)
        assert isinstance(namespace["add_kernel"], Kernel)

    @pytest.mark.slow
    def test_a_package_in_a_zip_archive_finds_its_device_functions(self, tmp_path, work):
        """zipimport, not the hook, imports a zipped package: its kernels are transpiled by
        their decorator, and a device function of a sibling module is read from the archive,
        as is one a hooked module outside the archive imports (whose rewrite stays cached)."""
        archive = tmp_path / "kz.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("mypkg/__init__.py", "")
            zf.writestr("mypkg/devs.py", HELPERS)
            zf.writestr("mypkg/kern.py", USES_HELPERS.replace("from helpers import scale",
                                                              "from .devs import scale"))
        (work / "outside.py").write_text(USES_HELPERS.replace("from helpers import scale",
                                                             "from mypkg.devs import scale"))
        env = hook_env(tmp_path, GPU_NATIVE_DEBUG="1")
        env["PYTHONPATH"] += os.pathsep + str(archive)
        code = '''
            import numpy as np, gpu_native as gn
            import mypkg.kern, outside
            for module in (mypkg.kern, outside):
                a = gn.to_device(np.arange(4, dtype=np.float32))
                c = gn.empty(4, gn.f32)
                module.scaled.forall(4)(a, c)
                print("RESULT", module.__name__, c.to_host().tolist())
        '''
        for cache in ("miss", "hit"):
            proc = run_python(code, work, env)
            for name in ("mypkg.kern", "outside"):
                assert f"RESULT {name} [0.0, 2.0, 4.0, 6.0]" in proc.stdout, proc.stderr
            assert f"rewrote outside ({work / 'outside.py'}): cache {cache}" in proc.stderr


RELOADED = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId, f32


    @gpu_kernel(Kernel1D)
    def combine(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + b[idx]
''')


@pytest.mark.untrusted
class TestReloadWithoutHook:
    @pytest.mark.slow
    def test_reload_picks_up_an_edited_kernel(self, tmp_path, work):
        """With the hook off the decorator transpiles from the file: after an edit, a reload must
        read the file again, not linecache's copy of the first version."""
        (work / "reloaded.py").write_text(RELOADED)
        rep = report_of(run_python('''
            import importlib, os, numpy as np, gpu_native as gn
            import reloaded

            def run():
                a = gn.to_device(np.full(4, 5.0, np.float32))
                b = gn.to_device(np.full(4, 2.0, np.float32))
                c = gn.empty(4, gn.f32)
                reloaded.combine.launch(gn.GridDim1D(1), gn.BlockDim1D(4), 0,
                                        gn.DEFAULT_STREAM)(a, b, c)
                return c.to_host().tolist()

            before = run()
            path = reloaded.__file__
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write(text.replace("a[idx] + b[idx]", "a[idx] - b[idx]"))
            # As an editor saving a while later would (pycs and linecache compare mtimes).
            st = os.stat(path)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
            importlib.reload(reloaded)
            report(before=before, after=run(), loader=type(reloaded.__spec__.loader).__name__)
        ''', work, hook_env(tmp_path, GPU_NATIVE_DISABLE_HOOK="1")))
        assert rep["loader"] == "SourceFileLoader" and rep["status"]["installed"] is False
        assert rep["before"] == [7.0] * 4
        assert rep["after"] == [3.0] * 4
