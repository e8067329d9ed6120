"""gpu_native kernels in ``multiprocessing`` workers started with ``spawn``.

The parent sends kernels (pickled by module and name) and NumPy data; each worker re-imports the
kernel's module through the import hook, runs the kernel (on the simulator in CI:
``GPU_NATIVE_BACKEND=sim`` in the workers' environment; on the GPU in the ``gpu`` test) and sends
NumPy results back.  Errors raised in a worker, device errors included, reach the parent as the
same gpu_native exceptions.  With ``gpu-native precompile`` output and
``GPU_NATIVE_REQUIRE_PRECOMPILED=1``, workers start without ever loading NVRTC.
"""

from __future__ import annotations

import importlib
import importlib.util
import multiprocessing
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native import cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(gn.__file__)))
MODULE = "gn_spawn_kernels"

KERNELS = textwrap.dedent('''\
    """Kernels and the functions workers run (imported by name in every worker)."""

    import os
    import sys

    import gpu_native as gn
    from gpu_native import (BlockDim1D, CUDASlice, CUDASliceMut, FlatLayout1D, GridDim1D,
                            Kernel1D, f32, gpu_kernel)


    @gpu_kernel(Kernel1D)
    def scale(x: CUDASlice[f32], out: CUDASliceMut[f32], factor: f32):
        i = FlatLayout1D.uid()
        out[i] = x[i] * factor


    @gpu_kernel(Kernel1D)
    def shift_left(x: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        if i < len(out):
            out[i] = x[i + 1]


    def facts():
        try:
            from gpu_native.importhook import status
        except ImportError:  # a gpu_native without the import hook: the decorator transpiles
            status = None
        return {"pid": os.getpid(), "backend": gn.backend(),
                "hooked": status and __name__ in status()["modules"],
                "nvrtc": "cuda.bindings.nvrtc" in sys.modules,
                "compiler": "gpu_native.compiler.nvrtc" in sys.modules}


    def apply(kernel, chunk, *scalars):
        """Run ``kernel`` over a NumPy chunk in this worker; return the result and facts."""
        x, out = gn.to_device(chunk), gn.empty(len(chunk), gn.f32)
        kernel.launch(GridDim1D((len(chunk) + 127) // 128), BlockDim1D(128))(x, out, *scalars)
        return out.to_host(), facts()


    def compile_for(kernel, arch):
        return [artifact.origin for artifact in kernel.compile(arch)], facts()
    ''')


def spawn_pool(processes: int, **env: str):
    """A ``spawn`` pool whose workers start with ``env`` added to this process's environment."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        # Importing gpu_native first installs the import hook, so the kernel module the first
        # task names is rewritten by the hook (an installed package's .pth does this at start).
        return multiprocessing.get_context("spawn").Pool(
            processes, initializer=importlib.import_module, initargs=("gpu_native",))
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("spawn")
    (root / f"{MODULE}.py").write_text(KERNELS)
    with pytest.MonkeyPatch.context() as mp:  # module scope: no monkeypatch fixture
        mp.syspath_prepend(str(root))
        mp.setenv("PYTHONPATH", os.pathsep.join(
            p for p in (REPO, str(root), os.environ.get("PYTHONPATH")) if p))
        mp.setenv("GPU_NATIVE_CACHE_DIR", str(root / "cache"))
        sys.modules.pop(MODULE, None)
        yield root, importlib.import_module(MODULE)
        sys.modules.pop(MODULE, None)


@pytest.fixture(scope="module")
def sim_pool(project):
    with spawn_pool(2, GPU_NATIVE_BACKEND="sim") as pool:
        yield pool


@pytest.mark.slow
def test_kernels_travel_by_name_and_run_in_spawn_workers(project, sim_pool):
    _, mod = project
    data = np.random.default_rng(0).standard_normal(4 * 1000).astype(np.float32)
    chunks = np.split(data, 4)
    results = sim_pool.starmap(mod.apply, [(mod.scale, chunk, 3.0) for chunk in chunks])
    np.testing.assert_array_equal(np.concatenate([out for out, _ in results]), data * 3)
    facts = [f for _, f in results]
    assert {f["backend"] for f in facts} == {"sim"}
    assert os.getpid() not in {f["pid"] for f in facts}
    if importlib.util.find_spec("gpu_native.importhook") is not None:
        assert all(f["hooked"] for f in facts), facts  # re-imported through the import hook


def test_a_device_error_in_a_worker_reaches_the_parent(project, sim_pool):
    _, mod = project
    with pytest.raises(gn.KernelIndexError, match=r"index 256 is out of bounds for array 'x' "
                                                  r"of length 256") as info:
        sim_pool.apply(mod.apply, (mod.shift_left, np.zeros(256, np.float32)))
    assert info.value.kernel == "shift_left" and info.value.span.line == 21
    # The worker is still usable.
    out, _ = sim_pool.apply(mod.apply, (mod.scale, np.ones(8, np.float32), 2.0))
    np.testing.assert_array_equal(out, 2)


def test_a_device_array_is_refused_with_advice(project, sim_pool):
    _, mod = project
    from gpu_native.runtime.backend import use

    with use("sim"):
        arr = gn.to_device(np.ones(8, np.float32))
        with pytest.raises(TypeError, match=r"send arr.to_host\(\)"):
            sim_pool.apply(mod.apply, (mod.scale, arr, 2.0))


@pytest.fixture(scope="module")
def precompiled(project):
    root, _ = project
    out = root / "precompiled"
    assert cli.main(["precompile", str(root / f"{MODULE}.py"), "--arch", "sm_80,sm_90",
                     "--out", str(out), "-q", "-j", "1"]) == 0
    return out


@pytest.mark.slow
def test_precompiled_workers_start_without_nvrtc(project, precompiled, tmp_path):
    _, mod = project
    with spawn_pool(2, GPU_NATIVE_BACKEND="sim", GPU_NATIVE_PRECOMPILED=str(precompiled),
                    GPU_NATIVE_REQUIRE_PRECOMPILED="1",
                    GPU_NATIVE_CACHE_DIR=str(tmp_path / "empty-cache")) as pool:
        found = pool.starmap(mod.compile_for, [(mod.scale, "sm_90"), (mod.shift_left, "sm_80")])
        out, facts = pool.apply(mod.apply, (mod.scale, np.arange(300, dtype=np.float32), 0.5))
        with pytest.raises(gn.MissingArtifactError, match=r"no precompiled sm_86 artifact for "
                                                          r"kernel .*scale"):
            pool.apply(mod.compile_for, (mod.scale, "sm_86"))
    assert [origins for origins, _ in found] == [["precompiled"], ["precompiled"]]
    np.testing.assert_array_equal(out, np.arange(300, dtype=np.float32) * 0.5)
    for f in [facts, *(f for _, f in found)]:
        assert not f["nvrtc"] and not f["compiler"], f


@pytest.mark.gpu
def test_precompiled_gpu_workers(project, precompiled, tmp_path):
    """Each worker launches on the GPU with artifacts from the precompiled directory only."""
    _, mod = project
    from gpu_native.runtime import driver as D

    arch = D.device_properties(0)["arch"]
    if arch not in ("sm_80", "sm_90"):
        pytest.skip(f"the precompiled fixture covers sm_80 and sm_90, not {arch}")
    data = np.random.default_rng(1).standard_normal(2 * 100_000).astype(np.float32)
    with spawn_pool(2, GPU_NATIVE_BACKEND="cuda", GPU_NATIVE_PRECOMPILED=str(precompiled),
                    GPU_NATIVE_REQUIRE_PRECOMPILED="1",
                    GPU_NATIVE_CACHE_DIR=str(tmp_path / "empty-cache")) as pool:
        results = pool.starmap(mod.apply, [(mod.scale, c, -2.0) for c in np.split(data, 2)])
    np.testing.assert_array_equal(np.concatenate([r for r, _ in results]), data * -2)
    for _, f in results:
        assert f["backend"] == "cuda" and not f["nvrtc"] and not f["compiler"], f


SCRIPT = textwrap.dedent('''\
    """A script whose kernel lives in __main__: no import hook runs, the decorator transpiles."""
    import multiprocessing

    import numpy as np

    import gpu_native as gn
    from gpu_native import (BlockDim1D, CUDASlice, CUDASliceMut, FlatLayout1D, GridDim1D,
                            Kernel1D, f32, gpu_kernel)


    @gpu_kernel(Kernel1D)
    def square(x: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        out[i] = x[i] * x[i]


    def work(kernel, chunk):
        x, out = gn.to_device(chunk), gn.empty(len(chunk))
        kernel.launch(GridDim1D((len(chunk) + 63) // 64), BlockDim1D(64))(x, out)
        return out.to_host()


    if __name__ == "__main__":
        data = np.arange(1000, dtype=np.float32)
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            parts = pool.starmap(work, [(square, c) for c in np.split(data, 2)])
        assert np.array_equal(np.concatenate(parts), data * data)
        print("ok", gn.backend())
    ''')


@pytest.mark.slow
def test_a_kernel_defined_in_a_main_script_runs_in_spawn_workers(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_")}
    env.update(PYTHONPATH=REPO, GPU_NATIVE_BACKEND="sim",
               GPU_NATIVE_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok sim"
