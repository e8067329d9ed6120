"""The import hook next to the tools a project already uses: pytest's assertion rewriting,
coverage, multiprocessing ``spawn`` workers, editable installs, and gpu_native installed by pip
with its real startup ``.pth``.  Each runs in fresh interpreters (see ``test_importhook.py``)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.importhook.support import (
    MYKERNELS,
    REPORT,
    hook_env,
    import_mykernels,
    report_of,
    run_python,
)


def _can_build_wheels() -> bool:
    """pip --no-build-isolation needs setuptools>=64 and, before setuptools 70.1, ``wheel``."""
    try:
        import setuptools
    except ImportError:
        return False
    version = tuple(int(p) for p in setuptools.__version__.split(".")[:2] if p.isdigit())
    if version < (64,):
        return False
    return version >= (70, 1) or importlib.util.find_spec("wheel") is not None


needs_wheel_builds = pytest.mark.skipif(
    not _can_build_wheels(), reason="needs setuptools>=64 and wheel (the test extra) to build")


def make_venv(where: Path) -> Path:
    """A venv that sees this environment's packages (pip, setuptools, numpy, libcst...);
    created without pip of its own, which takes seconds.

    Where the tests run in a venv themselves, ``--system-site-packages`` shows the base
    interpreter's packages, not this environment's: a ``.pth`` that sorts last adds this
    environment's site-packages (with their ``.pth`` files, as the system's are processed).
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                    str(where)], check=True, capture_output=True)
    python = where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    assert python.exists()
    if sys.prefix != sys.base_prefix:
        import sysconfig

        paths = sysconfig.get_paths()
        line = "; ".join(f"site.addsitedir({d!r})"
                         for d in dict.fromkeys([paths["purelib"], paths["platlib"]]))
        (site_packages(python) / "zz_outer_environment.pth").write_text(f"import site; {line}\n")
    return python


def _outer_checkout_on_path(python: Path, source: Path, env: dict) -> bool:
    """Does ``python`` (a venv seeing this environment's site-packages) find a ``gpu_native``
    package on a plain sys.path entry other than ``source``?"""
    proc = subprocess.run([str(python), "-c", "import json, sys; print(json.dumps(sys.path))"],
                          capture_output=True, text=True, env=env, check=True)
    entries = [Path(p) for p in json.loads(proc.stdout) if p]
    return any((p / "gpu_native" / "__init__.py").is_file() and p.resolve() != source.resolve()
               for p in entries)


def pip_install(python: Path, target: Path, *, editable: bool | str, env: dict) -> None:
    """``editable``: False (a wheel), True (setuptools' default editable install) or a
    setuptools ``editable_mode`` (``"compat"``, as the README installs a checkout)."""
    args = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
            "--no-index", "--disable-pip-version-check"]
    args += ["-e", str(target)] if editable else [str(target)]
    if isinstance(editable, str):
        args += ["--config-settings", f"editable_mode={editable}"]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=target)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                          "['purelib'])"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


class TestPytest:
    @pytest.mark.slow
    def test_assertion_rewriting_and_the_hook_work_side_by_side(self, tmp_path, work):
        (work / "test_imports_kernels.py").write_text(textwrap.dedent('''\
            import sys

            import pytest

            import mykernels
            from gpu_native.runtime.kernel import Kernel


            def test_imported_module_is_rewritten_by_the_hook():
                assert isinstance(mykernels.add_kernel, Kernel)
                assert type(mykernels.__spec__.loader).__name__ == "KernelModuleLoader"


            def test_this_module_is_rewritten_by_pytest():
                assert type(sys.modules[__name__].__loader__).__name__ == "AssertionRewritingHook"
                with pytest.raises(AssertionError) as info:
                    assert [1, 2] == [1, 3]
                assert "At index 1 diff: 2 != 3" in str(info.value)
        '''))
        (work / "test_defines_kernels.py").write_text(MYKERNELS + textwrap.dedent('''\


            import sys
            from gpu_native.runtime.kernel import Kernel


            def test_kernels_defined_in_a_test_module_use_the_decorator():
                # pytest rewrote this module, so the hook did not: the decorator transpiled the
                # kernel from this file's source.
                assert type(sys.modules[__name__].__loader__).__name__ == "AssertionRewritingHook"
                assert isinstance(add_kernel, Kernel)
                assert add_kernel.spec_line == 4 and add_kernel.__module__ == __name__
                import numpy as np, gpu_native as gn
                a = gn.to_device(np.arange(10, dtype=np.float32))
                c = gn.empty(10, gn.f32)
                add(a, a, c)
                assert (c.to_host() == 2 * np.arange(10)).all()
                x = 3
                with __import__("pytest").raises(AssertionError) as info:
                    assert x == 4
                assert "assert 3 == 4" in str(info.value)
        '''))
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W",
             "error::pytest.PytestAssertRewriteWarning", str(work)],
            cwd=work, env=hook_env(tmp_path), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "3 passed" in proc.stdout


class TestCoverage:
    @pytest.mark.slow
    def test_coverage_measures_the_users_lines_of_a_rewritten_module(self, tmp_path, work):
        pytest.importorskip("coverage", reason="coverage is in the test extra")
        (work / "hostlines.py").write_text(MYKERNELS + textwrap.dedent('''

            def host(n):
                total = 0
                for i in range(n):
                    total += i
                return total


            def never_called():
                return 1
        '''))
        (work / "main.py").write_text(textwrap.dedent('''\
            import _gpu_native_startup
            import hostlines

            print("LOADER", type(hostlines.__spec__.loader).__name__, hostlines.host(4))
        '''))
        env = hook_env(tmp_path)
        run = subprocess.run([sys.executable, "-m", "coverage", "run", "--include=*/work/*",
                              "main.py"], cwd=work, env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "LOADER KernelModuleLoader 6" in run.stdout
        subprocess.run([sys.executable, "-m", "coverage", "json", "-o", "cov.json"], cwd=work,
                       env=env, check=True, capture_output=True)
        files = json.loads((work / "cov.json").read_text())["files"]
        entry = next(v for k, v in files.items() if k.endswith("hostlines.py"))
        lines = (work / "hostlines.py").read_text().splitlines()
        host = lines.index("def host(n):") + 1
        never = lines.index("def never_called():") + 1
        executed, missing = set(entry["executed_lines"]), set(entry["missing_lines"])
        assert {host, host + 1, host + 2, host + 3, host + 4} <= executed
        assert never + 1 in missing and never + 1 not in executed
        assert lines.index("def add(a, b, c):") + 1 in executed


class TestMultiprocessing:
    @pytest.mark.slow
    def test_spawned_workers_import_the_cached_rewrite(self, tmp_path, work):
        with open(work / "mykernels.py", "a") as f:
            f.write(textwrap.dedent('''

                import sys as _sys

                # Taken at import, before any launch: the simulator's first launch loads libcst.
                LIBCST_AT_IMPORT = "libcst" in _sys.modules


                def worker_info(_):
                    import os, _gpu_native_startup
                    import numpy as np, gpu_native as gn
                    a = gn.to_device(np.arange(100, dtype=np.float32))
                    c = gn.empty(100, gn.f32)
                    add(a, a, c)
                    return {"kernel": type(add_kernel).__name__,
                            "launched": bool((c.to_host() == 2 * np.arange(100)).all()),
                            "loader": type(__spec__.loader).__name__,
                            "libcst": LIBCST_AT_IMPORT,
                            "cache": _gpu_native_startup.status()["modules"][__name__]["cache"],
                            "pid": os.getpid()}


                def kernel_name(kernel):
                    return f"{type(kernel).__name__}:{kernel.__name__}"
            '''))
        (work / "main.py").write_text(textwrap.dedent('''\
            import json
            import multiprocessing
            import os


            def main():
                import mykernels

                with multiprocessing.get_context("spawn").Pool(2) as pool:
                    infos = pool.map(mykernels.worker_info, range(4))
                    names = pool.map(mykernels.kernel_name, [mykernels.add_kernel])
                print("RESULT", json.dumps({"infos": infos, "names": names, "pid": os.getpid()}))


            if __name__ == "__main__":
                main()
        '''))
        proc = subprocess.run([sys.executable, "main.py"], cwd=work, env=hook_env(tmp_path),
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        result = json.loads(proc.stdout.split("RESULT ", 1)[1])
        assert result["names"] == ["Kernel:add_kernel"]
        for info in result["infos"]:
            assert info["pid"] != result["pid"]
            assert info["kernel"] == "Kernel" and info["loader"] == "KernelModuleLoader"
            assert info["launched"]
            assert info["cache"] == "hit" and info["libcst"] is False


FLAT_PYPROJECT = textwrap.dedent('''\
    [build-system]
    requires = ["setuptools>=64"]
    build-backend = "setuptools.build_meta"

    [project]
    name = "throwaway-kernels"
    version = "0.0.1"

    [tool.setuptools]
    py-modules = ["topkernels"]
    packages = ["kpkg"]
''')


@pytest.mark.slow
@needs_wheel_builds
class TestEditableInstall:
    @pytest.mark.parametrize("layout", ["flat", "src"])
    def test_modules_of_an_editable_install_are_rewritten(self, tmp_path, layout):
        project = tmp_path / "project"
        root = project / "src" if layout == "src" else project
        (root / "kpkg").mkdir(parents=True)
        (root / "kpkg" / "__init__.py").write_text(MYKERNELS.replace("add_kernel", "init_kernel"))
        (root / "kpkg" / "sub.py").write_text(MYKERNELS.replace("add_kernel", "sub_kernel"))
        (root / "topkernels.py").write_text(MYKERNELS)
        pyproject = FLAT_PYPROJECT
        if layout == "src":
            pyproject += 'package-dir = {"" = "src"}\n'
        (project / "pyproject.toml").write_text(pyproject)
        python = make_venv(tmp_path / "venv")
        env = hook_env(tmp_path)
        pip_install(python, project, editable=True, env=env)
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        code = '''
            import sys, kpkg, kpkg.sub, topkernels
            report(kinds=[type(k).__name__ for k in
                          (kpkg.init_kernel, kpkg.sub.sub_kernel, topkernels.add_kernel)],
                   files=[kpkg.__file__, topkernels.__file__],
                   finders=[getattr(f, "__name__", type(f).__name__) for f in sys.meta_path])
        '''
        for outcome in ("miss", "hit"):
            proc = subprocess.run([str(python), "-c", REPORT + textwrap.dedent(code)],
                                  cwd=outside, env=env, capture_output=True, text=True)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            rep = report_of(proc)
            assert rep["kinds"] == ["Kernel", "Kernel", "Kernel"]
            assert rep["files"] == [str(root / "kpkg" / "__init__.py"), str(root / "topkernels.py")]
            modules = rep["status"]["modules"]
            assert set(modules) == {"kpkg", "kpkg.sub", "topkernels"}
            assert {m["cache"] for m in modules.values()} == {outcome}
        if layout == "flat":  # setuptools serves a flat layout through a finder after PathFinder
            assert any("Editable" in name for name in rep["finders"]), rep["finders"]


def _copy_distribution(dest: Path) -> Path:
    """The files a build of gpu_native needs, copied so the build leaves the checkout alone."""
    dest.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "gpu_native.pth",
                 "_gpu_native_startup.py", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "gpu_native", dest / "gpu_native",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def _plain_env(tmp_path: Path) -> dict:
    """No PYTHONPATH at all: what gets imported is what is installed."""
    env = hook_env(tmp_path, pth=False)
    env.pop("PYTHONPATH")
    return env


def _installed_pth() -> Path | None:
    import site

    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    for d in dirs:
        candidate = Path(d) / "gpu_native.pth"
        if candidate.is_file():
            return candidate
    return None


class TestInstalledPth:
    @pytest.mark.slow
    def test_the_pth_installed_in_this_environment(self, tmp_path, work):
        pth = _installed_pth()
        if pth is None:
            pytest.skip("gpu_native is not pip-installed in this environment (pip install -e .)")
        rep = report_of(run_python(import_mykernels(launch=True), work, _plain_env(tmp_path)))
        assert rep["gpu_native_before"] is False
        assert rep["status"]["installed_by"] == "gpu_native.pth"
        assert rep["status"]["pth"] == str(pth)
        assert rep["is_kernel"] and rep["loader"] == "KernelModuleLoader"
        assert rep["launched"] is True

    @pytest.mark.slow
    @needs_wheel_builds
    @pytest.mark.parametrize("editable", [False, True, "compat"],
                             ids=["wheel", "editable", "editable-compat"])
    def test_pip_install_puts_the_pth_in_site_packages(self, tmp_path, work, editable):
        source = _copy_distribution(tmp_path / "gpu_native_src")
        python = make_venv(tmp_path / "venv")
        env = _plain_env(tmp_path)
        if editable is True and _outer_checkout_on_path(python, source, env):
            # setuptools' default editable install is a finder that Python consults after
            # sys.path; this venv sees the outer environment's site-packages, where a compat
            # install (as the README's and CI's) puts the outer checkout on sys.path, which then
            # wins.  That is setuptools' ordering, not gpu_native's; the compat case runs below.
            pytest.skip("the outer checkout is on sys.path (a compat editable install): a "
                        "finder-based editable install in a system-site venv cannot win over it")
        pip_install(python, source, editable=editable, env=env)
        pth = site_packages(python) / "gpu_native.pth"
        assert pth.read_text() == (ROOT / "gpu_native.pth").read_text()
        code = import_mykernels(launch=True) + '''
    import gpu_native, _gpu_native_startup
    print("FILES", gpu_native.__file__, _gpu_native_startup.__file__)
'''
        for outcome in ("miss", "hit"):
            proc = subprocess.run([str(python), "-c", REPORT + textwrap.dedent(code)],
                                  cwd=work, env=env, capture_output=True, text=True)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            rep = report_of(proc)
            assert rep["gpu_native_before"] is False
            assert rep["status"]["installed_by"] == "gpu_native.pth"
            assert rep["is_kernel"] and rep["loader"] == "KernelModuleLoader"
            assert rep["status"]["modules"]["mykernels"]["cache"] == outcome
            assert rep["status"]["pth"] == str(pth)
            files = proc.stdout.split("FILES ", 1)[1].split()
            assert rep["launched"] is True and rep["libcst_after_import"] is (outcome == "miss")
            home = source if editable else site_packages(python)
            assert all(f.startswith(str(home)) for f in files), files
        # The CUDA prelude every kernel includes is installed with the package.
        header = subprocess.run([str(python), "-c", "from gpu_native import headers; "
                                 "headers.header_text(); print(headers.header_path())"],
                                cwd=work, env=env, capture_output=True, text=True)
        assert header.returncode == 0, header.stderr
        assert header.stdout.strip() == str(home / "gpu_native" / "include" / "gpu_native" /
                                            "prelude.cuh")
        # Opting out works for the installed .pth too.
        off = subprocess.run([str(python), "-c", "import _gpu_native_startup as s; "
                              "print(s.status()['installed'])"], cwd=work,
                             env={**env, "GPU_NATIVE_DISABLE_HOOK": "1"}, capture_output=True,
                             text=True, check=True)
        assert off.stdout.strip() == "False"
