"""Device errors that must leave the device usable — or, for a lost context, say so plainly.

* Kernels that fail their checks (index, assert, division by zero) a thousand times in a row, each
  followed by a checked good launch, leave the context usable every time (simulator in CI, GPU
  with ``-m gpu``).
* An illegal address from ``unsafe()`` code with bounds checks off is a ``ContextLostError`` that
  says the context is lost and what to do; every later GPU call says the same, and the process
  still exits normally.

Faults around the kernel cache are in tests/cache/test_cache_faults.py.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import ROOT, child_env

# Every test gets a cache directory of its own (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("isolated_cache")


# ---- device errors, a thousand times -----------------------------------------------------------------


@pytest.fixture(scope="module")
def kr():
    from tests.helpers import kernels_runtime

    return kernels_runtime


def failing_launches(kr, rounds: int) -> None:
    """Each round: one launch that fails a check (three kinds in turn), then a checked good one."""
    n = 128
    rng = np.random.default_rng(0)
    a_h = rng.standard_normal(n, dtype=np.float32)
    a, b = gn.to_device(a_h), gn.to_device(-a_h)
    src, dst = gn.to_device(np.zeros(n, np.float32)), gn.zeros(n)
    negative = gn.to_device(np.full(n, -1.0, np.float32))
    ints, zeros = gn.to_device(np.arange(n, dtype=np.int32)), gn.zeros(n, gn.i32)
    stream = gn.Stream()
    kinds = [
        (lambda s: kr.shifted_copy.launch(gn.GridDim1D(1), gn.BlockDim1D(n), 0, s)(src, dst),
         gn.KernelIndexError),
        (lambda s: kr.checked_sqrt.launch(gn.GridDim1D(1), gn.BlockDim1D(n), 0, s)(negative,
                                                                                   dst),
         gn.KernelAssertionError),
        (lambda s: kr.int_divide.launch(gn.GridDim1D(1), gn.BlockDim1D(n), 0, s)(ints, zeros,
                                                                                 gn.zeros(n, gn.i32)),
         gn.KernelZeroDivisionError),
    ]
    want = 2.0 * a_h.astype(np.float64)
    for k in range(rounds):
        s = stream if k % 2 else gn.DEFAULT_STREAM
        launch, error = kinds[k % len(kinds)]
        launch(s)
        with pytest.raises(error):
            s.synchronize()
        c = gn.empty(n)
        c.fill(np.nan)
        kr.add_kernel.launch(gn.GridDim1D(1), gn.BlockDim1D(n), 0, s)(a, a, c)
        got = c.to_host()
        if not np.allclose(got, want, atol=1e-6):
            raise AssertionError(f"round {k}: the good launch after a {error.__name__} computed "
                                 f"{got[:4]}")
        kr.add_kernel.launch(gn.GridDim1D(1), gn.BlockDim1D(n), 0, s)(a, b, c)
        if not np.all(c.to_host() == 0):
            raise AssertionError(f"round {k}: wrong result")


def test_failing_checks_leave_the_simulator_usable_each_time(kr):
    from gpu_native.runtime.backend import use

    with use("sim"):
        failing_launches(kr, 60)


@pytest.mark.gpu
def test_a_thousand_failing_checks_leave_the_gpu_usable_each_time(kr, cuda_backend):
    start = time.perf_counter()
    failing_launches(kr, 1000)
    print(f"\n1000 failing launches, each followed by two checked good ones: "
          f"{time.perf_counter() - start:.2f} s")


@pytest.mark.gpu
def test_unsafe_code_with_bounds_checks_is_an_index_error_not_a_lost_context(tmp_path,
                                                                           cuda_backend):
    source = textwrap.dedent('''\
        from gpu_native import (gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, f32, i64,
                                unsafe)


        @gpu_kernel(Kernel1D)
        def checked_scribble(a: CUDASliceMut[f32], offset: i64):
            i = FlatLayout1D.uid()
            with unsafe():
                a[i + offset] = 1.0
        ''')
    (tmp_path / "fault_unsafe_checked.py").write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        import fault_unsafe_checked as m

        a = gn.zeros(16)
        m.checked_scribble.launch(gn.GridDim1D(1), gn.BlockDim1D(32))(a, 1 << 40)
        with pytest.raises(gn.KernelIndexError, match="out of bounds for array 'a'"):
            gn.synchronize()
        np.testing.assert_array_equal(gn.to_device(np.ones(4, np.float32)).to_host(), 1.0)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fault_unsafe_checked", None)


LOST_CONTEXT_CHILD = textwrap.dedent('''\
    import sys, time
    sys.path.insert(0, %r)
    import numpy as np
    import gpu_native as gn
    from tests.helpers import kernels_runtime as kr

    def attempt(label, fn):
        try:
            fn()
        except gn.ContextLostError as exc:
            print(f"{label}: ContextLostError {exc.name}")
        except Exception as exc:
            print(f"{label}: {type(exc).__name__} {exc}")
        else:
            print(f"{label}: no error")

    stream = gn.Stream() if sys.argv[1] == "stream" else gn.DEFAULT_STREAM
    a = gn.zeros(16)
    keep = gn.to_device(np.ones(16, np.float32))
    kr.scribble.launch(gn.GridDim1D(1), gn.BlockDim1D(32), 0, stream)(a, 1 << 40)
    try:
        stream.synchronize()
    except gn.ContextLostError as exc:
        print("LOST", isinstance(exc, gn.CudaError), exc.name)
        print("MESSAGE", str(exc).replace("\\n", " "))
    else:
        print("NOT LOST")
    attempt("allocate", lambda: gn.zeros(4))
    attempt("copy back", lambda: keep.to_host())
    attempt("launch", lambda: (kr.add(keep, keep, gn.empty(16)), gn.synchronize()))
    attempt("synchronize", lambda: gn.synchronize())
    attempt("new stream", lambda: gn.Stream().synchronize())
    print("EXITING", flush=True)
    ''')


@pytest.mark.gpu
@pytest.mark.parametrize("where", ["default", "stream"])
def test_illegal_address_is_a_clearly_reported_lost_context(where, tmp_path):
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", LOST_CONTEXT_CHILD % str(ROOT), where],
                         env=child_env(tmp_path / "cache"), capture_output=True, text=True,
                         timeout=180)
    text = out.stdout + out.stderr
    assert "LOST True CUDA_ERROR_ILLEGAL_ADDRESS" in out.stdout, text
    message = next(line for line in out.stdout.splitlines() if line.startswith("MESSAGE"))
    for phrase in ("CUDA_ERROR_ILLEGAL_ADDRESS", "context is lost", "unsafe()",
                   "bounds_check=False", "restart the process"):
        assert phrase in message, (phrase, message)
    for label in ("allocate", "copy back", "launch", "synchronize", "new stream"):
        assert f"{label}: ContextLostError" in out.stdout, text
    # The process still ends normally: no hang and no crash in finalizers after the loss.
    assert "EXITING" in out.stdout and out.returncode == 0, text
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr
    assert time.perf_counter() - start < 120


# ---- an error no call raised before the program ended ------------------------------------------

LOST_ERROR_CHILD = textwrap.dedent('''\
    import sys, time
    sys.path.insert(0, %r)
    import numpy as np
    import gpu_native as gn
    from tests.helpers import kernels_runtime as kr

    src, dst = gn.to_device(np.zeros(128, np.float32)), gn.zeros(128)
    copy = kr.shifted_copy.launch(gn.GridDim1D(1), gn.BlockDim1D(128), 0, gn.DEFAULT_STREAM)
    copy(src, dst)
    if sys.argv[1] == "raised":
        try:
            gn.synchronize()
        except IndexError:
            print("RAISED")
    time.sleep(0.5)  # the GPU's kernel has failed by then: records are read, not waited for
    print("EXITING", flush=True)
    ''')


@pytest.mark.slow
@pytest.mark.parametrize("backend_name", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("case", ["lost", "raised"])
def test_an_error_left_pending_at_exit_is_told(tmp_path, backend_name, case):
    out = subprocess.run([sys.executable, "-c", LOST_ERROR_CHILD % str(ROOT), case],
                         env=child_env(tmp_path / "cache", GPU_NATIVE_BACKEND=backend_name),
                         capture_output=True, text=True, timeout=180)
    text = out.stdout + out.stderr
    assert "EXITING" in out.stdout and out.returncode == 0, text
    told = "gpu_native: a kernel failed after the program's last synchronisation"
    if case == "lost":
        assert told in out.stderr, text
        assert "KernelIndexError: shifted_copy: index" in out.stderr, text
        assert "kernels_runtime.py" in out.stderr, text
    else:  # raised by the synchronisation, and so not told again at exit
        assert "RAISED" in out.stdout and told not in out.stderr, text


def test_a_missing_driver_is_cuda_s_no_driver_code(tmp_path):
    """Asking for the GPU where no CUDA driver loads: CUDA_ERROR_NO_DRIVER with CUDA's code 35
    (it said 0, which is CUDA_SUCCESS).  Only where no driver is installed."""
    from tests.helpers import gpu_available

    if gpu_available():
        pytest.skip("a CUDA driver is installed here")
    script = ("import numpy as np, gpu_native as gn\n"
              "try:\n"
              "    gn.to_device(np.zeros(3))\n"
              "except gn.CudaError as e:\n"
              "    print(e.name, e.code)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=child_env(tmp_path, GPU_NATIVE_BACKEND="cuda"), timeout=120)
    assert done.stdout.split() == ["CUDA_ERROR_NO_DRIVER", "35"], done.stdout + done.stderr
