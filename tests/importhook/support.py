"""What the import hook's tests share: the modules they write, the fresh interpreters they run
them in (with the repository's ``gpu_native.pth`` processed at startup, as site-packages would),
and the report each interpreter prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers import ROOT

MYKERNELS = textwrap.dedent('''\
    from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId,
                            GridDim1D, BlockDim1D, DEFAULT_STREAM, f32)

    @gpu_kernel(Kernel1D)
    def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + b[idx]

    def add(a, b, c):
        block_dim = 128
        grid_dim = (len(c) + block_dim - 1) // block_dim
        add_kernel.launch(GridDim1D(grid_dim), BlockDim1D(block_dim), 0, DEFAULT_STREAM)(a, b, c)
''')

# A host function after a kernel, so a wrong line count in the rewrite would show.
HOSTLINES = textwrap.dedent('''\
    import warnings

    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId, f32


    @gpu_kernel(Kernel1D)
    def scale_kernel(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        x = a[idx]
        c[idx] = x * 2.0


    def fails():
        raise ValueError("raised by the host")


    def warns():
        warnings.warn("careful", UserWarning)
''')
FAILS_LINE = 14
WARNS_LINE = 18

HELPERS = textwrap.dedent('''\
    from gpu_native import gpu_device, f32

    FACTOR = 2.0


    @gpu_device
    def scale(x: f32) -> f32:
        return x * FACTOR
''')

USES_HELPERS = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId, f32

    from helpers import scale


    @gpu_kernel(Kernel1D)
    def scaled(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = scale(a[idx])
''')

NOT_UNIQUE = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, UniqueId, f32


    @gpu_kernel(Kernel1D)
    def bad(c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[0] = 1.0
''')

# Prints what the tests look at, as one JSON line.
REPORT = textwrap.dedent('''\
    import json as _json, sys as _sys
    def report(**extra):
        import _gpu_native_startup as _s
        status = _s.status()
        out = {"status": status, "libcst": "libcst" in _sys.modules,
               "transpiler": sorted(m for m in _sys.modules if m.startswith((
                   "gpu_native.frontend", "gpu_native.check", "gpu_native.emit",
                   "gpu_native.rewrite", "gpu_native.expand", "gpu_native.precompile"))),
               "nvrtc": sorted(m for m in _sys.modules if m.startswith((
                   "gpu_native.compiler", "cuda.bindings.nvrtc"))), **extra}
        print("REPORT " + _json.dumps(out, default=repr))
''')


def hook_env(tmp_path: Path, *, pth: bool = True, **extra: str) -> dict:
    """Environment of a fresh interpreter: the repository importable, gpu_native's cache in
    ``tmp_path``, no inherited gpu_native settings, bytecode written, and — with ``pth`` — the
    repository's ``gpu_native.pth`` processed at startup as site-packages would."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPU_NATIVE_", "COVERAGE_", "COV_CORE_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    paths = [str(ROOT)]
    if pth:
        site_dir = tmp_path / "_startup"
        site_dir.mkdir(exist_ok=True)
        (site_dir / "sitecustomize.py").write_text(
            f"import site\nsite.addsitedir({str(ROOT)!r})\n")
        paths.insert(0, str(site_dir))
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["GPU_NATIVE_CACHE_DIR"] = str(tmp_path / "gn_cache")
    env["GPU_NATIVE_BACKEND"] = "sim"
    env.update(extra)
    return env


def site_dirs() -> list[str]:
    import site

    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


def run_python(code: str, cwd: Path, env: dict, *, check: bool = True,
               args: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run ``code`` (with :data:`REPORT`'s ``report()`` defined) in a fresh interpreter."""
    proc = subprocess.run([sys.executable, *args, "-c", REPORT + textwrap.dedent(code)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n"
                             f"{proc.stderr}")
    return proc


def report_of(proc: subprocess.CompletedProcess) -> dict:
    for line in proc.stdout.splitlines():
        if line.startswith("REPORT "):
            return json.loads(line[len("REPORT "):])
    raise AssertionError(f"no report in\n{proc.stdout}\n{proc.stderr}")


# Runs mykernels.add on the simulator; defines ``launched`` (True when the sum is right).
LAUNCH = '''
    import numpy as _np, gpu_native as _gn
    _a = _gn.to_device(_np.arange(1000, dtype=_np.float32))
    _b = _gn.to_device(_np.ones(1000, _np.float32))
    _c = _gn.empty(1000, _gn.f32)
    mykernels.add(_a, _b, _c)
    launched = bool((_c.to_host() == _np.arange(1000) + 1).all())
'''

# Imports mykernels and reports what the tests look at (libcst_after_import: before any launch;
# libcst: at the end, after the launch when there is one).
IMPORT_MYKERNELS = '''
    import sys
    before = "gpu_native" in sys.modules
    import mykernels
    from gpu_native.runtime.kernel import Kernel
    libcst_after_import = "libcst" in sys.modules
    launched = None
'''
REPORT_MYKERNELS = '''
    report(gpu_native_before=before, libcst_after_import=libcst_after_import,
           is_kernel=isinstance(mykernels.add_kernel, Kernel),
           loader=type(mykernels.__spec__.loader).__name__, launched=launched)
'''


def import_mykernels(*, launch: bool = False) -> str:
    return IMPORT_MYKERNELS + (LAUNCH if launch else "") + REPORT_MYKERNELS
