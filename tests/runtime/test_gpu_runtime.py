"""The CUDA runtime on a real GPU: arrays, interop, launches, streams, device errors.

Every test here needs a GPU (``pytest -m gpu``); they skip cleanly without one.  Inputs are fresh
random data, outputs are poisoned before each launch and compared with NumPy in float64.
"""

from __future__ import annotations

import gc
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import gpu_native as gn
from tests.helpers import ROOT

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _cuda(cuda_backend):
    yield


@pytest.fixture(scope="module")
def kr():
    from tests.helpers import kernels_runtime

    return kernels_runtime


def poisoned(n, dtype=gn.f32):
    out = gn.empty(n, dtype)
    out.fill(np.nan if dtype in (gn.f32, gn.f64) else -7)
    return out


def test_seed_example(kr, rng):
    n = 1000
    a_h, b_h = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    a, b, c = gn.to_device(a_h), gn.to_device(b_h), poisoned(n)
    kr.add(a, b, c)
    np.testing.assert_allclose(c.to_host(), a_h.astype(np.float64) + b_h, rtol=0, atol=1e-6)


def test_index_error_names_the_line_then_the_context_keeps_working(kr, rng):
    n = 4096
    src, dst = gn.to_device(rng.standard_normal(n, dtype=np.float32)), poisoned(n)
    kr.shifted_copy.launch(gn.GridDim1D(n // 128), gn.BlockDim1D(128))(src, dst)
    with pytest.raises(gn.KernelIndexError) as info:
        gn.synchronize()
    err = info.value
    assert isinstance(err, IndexError)
    with open(kr.__file__) as f:
        line = f.read().splitlines().index("        dst[i] = src[i + 1]") + 1
    assert err.span.line == line and err.span.file.endswith("kernels_runtime.py")
    assert "index 4096 is out of bounds for array 'src' of length 4096" in str(err)
    assert "dst[i] = src[i + 1]" in str(err)
    assert err.block == (31, 0, 0) and err.thread == (127, 0, 0)
    a_h, b_h = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    a, b = gn.to_device(a_h), gn.to_device(b_h)
    for _ in range(100):
        c = poisoned(n)
        kr.add(a, b, c)
        np.testing.assert_allclose(c.to_host(), a_h.astype(np.float64) + b_h, atol=1e-6)


def test_assert_failure_carries_its_message(kr, rng):
    x_h = np.abs(rng.standard_normal(256, dtype=np.float32))
    x_h[77] = -1.0
    out = poisoned(256)
    kr.checked_sqrt.launch(gn.GridDim1D(2), gn.BlockDim1D(128))(gn.to_device(x_h), out)
    with pytest.raises(gn.KernelAssertionError, match="sqrt of a negative number") as info:
        out.to_host()
    assert info.value.thread == (77, 0, 0)


def test_integer_division_by_zero(kr):
    a = gn.to_device(np.arange(128, dtype=np.int32))
    b = np.ones(128, np.int32)
    b[5] = 0
    q = poisoned(128, gn.i32)
    kr.int_divide.launch(gn.GridDim1D(1), gn.BlockDim1D(128))(a, gn.to_device(b), q)
    with pytest.raises(gn.KernelZeroDivisionError):
        gn.synchronize()


def test_python_floor_division_semantics(kr, rng):
    a_h = rng.integers(-1000, 1000, 512, dtype=np.int32)
    b_h = rng.integers(1, 50, 512, dtype=np.int32) * rng.choice([-1, 1], 512).astype(np.int32)
    q = poisoned(512, gn.i32)
    kr.int_divide.launch(gn.GridDim1D(4), gn.BlockDim1D(128))(gn.to_device(a_h),
                                                              gn.to_device(b_h), q)
    np.testing.assert_array_equal(q.to_host(), a_h // b_h)


def test_many_failing_launches_leave_the_context_usable(kr, rng):
    src, dst = gn.to_device(np.zeros(128, np.float32)), poisoned(128)
    launch = kr.shifted_copy.launch(gn.GridDim1D(1), gn.BlockDim1D(128))
    for _ in range(1000):
        launch(src, dst)
        with pytest.raises(gn.KernelIndexError):
            gn.synchronize()
    a_h = rng.standard_normal(128, dtype=np.float32)
    c = poisoned(128)
    kr.add(gn.to_device(a_h), gn.to_device(a_h), c)
    np.testing.assert_allclose(c.to_host(), 2.0 * a_h.astype(np.float64), atol=1e-6)


def test_cupy_arrays_in_and_out_without_copies(kr, rng):
    cp = pytest.importorskip("cupy")
    n = 10_000
    a = cp.asarray(rng.standard_normal(n, dtype=np.float32))
    b = cp.asarray(rng.standard_normal(n, dtype=np.float32))
    c = cp.full(n, cp.nan, dtype=cp.float32)
    kr.add(a, b, c)
    np.testing.assert_allclose(cp.asnumpy(c), cp.asnumpy(a).astype(np.float64) + cp.asnumpy(b),
                               atol=1e-6)
    ours = gn.to_device(cp.asnumpy(a))
    view = cp.asarray(ours)  # CuPy reads our array through __cuda_array_interface__
    assert view.data.ptr == ours.ptr
    wrapped = gn.to_device(c)  # and we wrap theirs without a copy
    assert wrapped.ptr == c.data.ptr


def test_torch_tensors_in_and_out_without_copies(kr, rng):
    torch = pytest.importorskip("torch")
    n = 10_000
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    c = torch.full((n,), float("nan"), device="cuda")
    kr.add(a, b, c)
    torch.cuda.synchronize()
    np.testing.assert_allclose(c.cpu().numpy(), (a.double() + b.double()).cpu().numpy(),
                               atol=1e-6)
    ours = gn.to_device(a)
    assert ours.ptr == a.data_ptr()
    back = torch.from_dlpack(ours)  # DLPack export
    assert back.data_ptr() == a.data_ptr()
    theirs = torch.utils.dlpack.to_dlpack(b)
    del theirs
    imported = gn.runtime.interop._from_dlpack(b, "b", gn.runtime.backend.select())
    assert imported.ptr == b.data_ptr()


def test_noncontiguous_torch_tensor_is_refused(kr):
    """A contiguous parameter refuses a strided view, naming the parameter and the Strided
    annotation that would take it (tests/runtime/test_strided_views.py has the views)."""
    torch = pytest.importorskip("torch")
    a = torch.randn(64, 2, device="cuda")[:, 0]
    c = gn.empty(64, gn.f32)
    with pytest.raises(TypeError, match=r"argument 'a' of add_kernel is a non-contiguous view"
                                        r".*CUDASlice\[f32, Strided\]"):
        kr.add_kernel.launch(gn.GridDim1D(1), gn.BlockDim1D(64))(a, a, c)


def test_torch_transposes_and_step_slices_bind_to_strided_parameters(kernel_module):
    """A PyTorch transpose and step slice pass to Strided parameters with no copy."""
    torch = pytest.importorskip("torch")
    from tests.runtime.test_strided_views import SOURCE

    k = kernel_module(SOURCE).axpy2d
    a = torch.randn(14, 9, device="cuda")
    b = torch.randn(18, 14, device="cuda", dtype=torch.float64)
    out = torch.full((20, 25), float("nan"), device="cuda", dtype=torch.float64)
    view = out.t()[1::2][:9, 1::3]  # (9, 7)
    k.launch(gn.GridDim2D(1, 2), gn.BlockDim2D(8, 8))(a.t()[:, 1::2], b[::2, ::2], view, 3.0)
    torch.cuda.synchronize()
    want = 3.0 * a.t()[:, 1::2].double() + b[::2, ::2]
    scale = (3.0 * a.t()[:, 1::2].double()).abs() + b[::2, ::2].abs()  # an fma may fuse it
    assert ((view - want).abs() <= 2 * 2.0**-52 * scale).all().item()
    assert torch.isnan(out).sum().item() == out.numel() - 63


@pytest.mark.parametrize("case", ["host array", "dtype", "ndim", "read-only", "scalar range",
                                  "scalar type", "count", "overlap", "not an array"])
def test_argument_errors_name_the_parameter(kr, case):
    n = 256
    a, b, c = gn.zeros(n), gn.zeros(n), gn.zeros(n)
    launch = kr.scale_add.launch(gn.GridDim1D(2), gn.BlockDim1D(128))
    args = {"a": a, "b": b, "c": c, "n": n}
    expected: tuple = (TypeError, "argument 'a'")
    if case == "host array":
        args["a"] = np.zeros(n, np.float32)
        expected = (TypeError, "argument 'a' of scale_add is a NumPy array in host memory")
    elif case == "dtype":
        args["b"] = gn.zeros(n, gn.f64)
        expected = (TypeError, "argument 'b' of scale_add must be an array of f32")
    elif case == "ndim":
        args["b"] = gn.zeros((16, 16))
        expected = (TypeError, "argument 'b' of scale_add must be a 1-D array")
    elif case == "read-only":
        args["c"] = c.readonly()
        expected = (TypeError, "argument 'c' of scale_add is read-only")
    elif case == "scalar range":
        args["n"] = 2**40
        expected = (ValueError, "argument 'n' of scale_add is 1099511627776, out of range for i32")
    elif case == "scalar type":
        args["n"] = 2.5
        expected = (TypeError, "argument 'n' of scale_add must be an integer (i32)")
    elif case == "overlap":
        args["c"] = a
        expected = (ValueError, "argument 'c' of scale_add overlaps argument 'a'")
    elif case == "not an array":
        args["a"] = [0.0] * n
        expected = (TypeError, "argument 'a' of scale_add must be a device array")
    if case == "count":
        with pytest.raises(TypeError, match="scale_add"):
            launch(a, b, c)
        return
    with pytest.raises(expected[0], match=re.escape(expected[1])):
        launch(**args)


@pytest.mark.parametrize("grid, block, shared, message", [
    (gn.GridDim2D(2, 2), gn.BlockDim1D(32), 0, "Kernel1D kernel but was launched with a 2-D grid"),
    (gn.GridDim1D(2), gn.BlockDim2D(8, 8), 0, "Kernel1D kernel but was launched with a 2-D block"),
    (gn.GridDim1D(2), gn.BlockDim1D(2048), 0, "exceeds the device limit of 1024"),
    (gn.GridDim1D(0), gn.BlockDim1D(32), 0, "at least 1"),
    (gn.GridDim1D(1), gn.BlockDim1D(32), 10**7, "dynamic shared memory exceed"),
])
def test_launch_shape_errors(kr, grid, block, shared, message):
    with pytest.raises(gn.LaunchError, match=message):
        kr.add_kernel.launch(grid, block, shared)


def test_grid_limit_of_a_2d_kernel(kr):
    with pytest.raises(gn.LaunchError, match="grid dimension y = 70000 exceeds"):
        kr.matrix_add.launch(gn.GridDim2D(1, 70000), gn.BlockDim2D(8, 8))


def test_eight_threads_launch_the_same_kernel(kr, rng):
    n = 1 << 16
    a_h = rng.standard_normal(n, dtype=np.float32)
    a = gn.to_device(a_h)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            b_h = np.full(n, k, np.float32)
            b, c = gn.to_device(b_h), poisoned(n)
            for _ in range(200):
                kr.add(a, b, c)
            results[k] = c.to_host()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k, out in results.items():
        np.testing.assert_allclose(out, a_h.astype(np.float64) + k, atol=1e-5)
    assert len(results) == 8


def test_deleting_an_argument_right_after_an_async_launch(kr, rng):
    n = 1 << 20
    a_h = rng.standard_normal(n, dtype=np.float32)
    keep = poisoned(n)
    for _ in range(20):
        a = gn.to_device(a_h)
        c = poisoned(n)
        kr.busy_add.launch(gn.GridDim1D(n // 256), gn.BlockDim1D(256))(a, c, 2000)
        del a, c  # freed in stream order, after the kernel
        gc.collect()
        junk = gn.to_device(np.full(n, 5.0, np.float32))  # may reuse the freed memory
        del junk
    a = gn.to_device(a_h)
    kr.busy_add.launch(gn.GridDim1D(n // 256), gn.BlockDim1D(256))(a, keep, 10)
    ref = a_h.astype(np.float64)
    for _ in range(10):
        ref = ref * 0.999 + 0.001
    np.testing.assert_allclose(keep.to_host(), ref, rtol=1e-5, atol=1e-5)


def test_streams_events_and_their_own_errors(kr, rng):
    s1, s2 = gn.Stream(), gn.Stream()
    n = 1 << 16
    a_h = rng.standard_normal(n, dtype=np.float32)
    a, c = gn.to_device(a_h), poisoned(n)
    start, end = gn.Event(), gn.Event()
    start.record(s1)
    kr.add_kernel.launch(gn.GridDim1D(n // 128), gn.BlockDim1D(128), 0, s1)(a, a, c)
    end.record(s1)
    s1.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0.0
    src, dst = gn.to_device(np.zeros(128, np.float32)), poisoned(128)
    kr.shifted_copy.launch(gn.GridDim1D(1), gn.BlockDim1D(128), 0, s2)(src, dst)
    s1.synchronize()  # s1's kernels were fine
    with pytest.raises(gn.KernelIndexError):
        s2.synchronize()
    np.testing.assert_allclose(c.to_host(), 2.0 * a_h.astype(np.float64), atol=1e-6)


def test_foreign_torch_stream(kr, rng):
    torch = pytest.importorskip("torch")
    stream = torch.cuda.Stream()
    n = 4096
    a = torch.randn(n, device="cuda")
    c = torch.empty(n, device="cuda")
    torch.cuda.synchronize()
    kr.add_kernel.launch(gn.GridDim1D(n // 128), gn.BlockDim1D(128), 0, stream)(a, a, c)
    stream.synchronize()
    torch.testing.assert_close(c, 2 * a)


def test_generic_kernel_specialises_by_dtype(kr, rng):
    for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-12)):
        x_h, y_h = rng.standard_normal(1000).astype(dtype), rng.standard_normal(1000).astype(dtype)
        y = gn.to_device(y_h)
        kr.axpy_generic.launch(gn.GridDim1D(8), gn.BlockDim1D(128))(dtype(2.5),
                                                                    gn.to_device(x_h), y)
        np.testing.assert_allclose(y.to_host(), 2.5 * x_h.astype(np.float64) + y_h, atol=tol)
    assert sorted(kr.axpy_generic.specializations) == [("f32",), ("f64",)]


def test_half_precision(kr, rng):
    x_h = rng.standard_normal(512).astype(np.float16)
    y = gn.empty(512, gn.f16)
    kr.half_scale.launch(gn.GridDim1D(4), gn.BlockDim1D(128))(gn.to_device(x_h), y, 0.5)
    # Halving is exact in f16 except where the half is subnormal: there it rounds to the
    # subnormal spacing 2**-24 (a normal sample near zero failed rtol alone on the H200).
    np.testing.assert_allclose(y.to_host().astype(np.float64), x_h.astype(np.float64) * 0.5,
                               rtol=1e-3, atol=2.0**-24)


def test_kernel_without_bounds_checks(kr, rng):
    n = 1000
    a_h = rng.standard_normal(n, dtype=np.float32)
    c = poisoned(n)
    kr.add_unchecked.launch(gn.GridDim1D(8), gn.BlockDim1D(128))(gn.to_device(a_h),
                                                                 gn.to_device(a_h), c)
    np.testing.assert_allclose(c.to_host(), 2.0 * a_h.astype(np.float64), atol=1e-6)
    assert "gn_chk(" not in kr.add_unchecked.cuda_source.split('extern "C"')[1]


def test_two_dimensional_arrays(kr, rng):
    a_h = rng.standard_normal((70, 90), dtype=np.float32)
    b_h = rng.standard_normal((70, 90), dtype=np.float32)
    c = gn.empty((70, 90))
    c.fill(np.nan)
    kr.matrix_add.launch(gn.GridDim2D(6, 5), gn.BlockDim2D(16, 16))(gn.to_device(a_h),
                                                                     gn.to_device(b_h), c)
    np.testing.assert_allclose(c.to_host(), a_h.astype(np.float64) + b_h, atol=1e-6)


def test_driver_errors_are_cuda_errors():
    # A device the driver does not have: its error, by name (asking for all of the device's
    # memory would be one too, but would starve the tests running beside this one).
    from gpu_native.runtime import driver

    with pytest.raises(gn.CudaError) as info:
        driver.device_handle(driver.device_count() + 7)
    assert info.value.name == "CUDA_ERROR_INVALID_DEVICE"
    # More than the device has is refused before the driver is asked.
    with pytest.raises(ValueError, match=r"more than the .* bytes of memory device 0 has"):
        gn.empty(1 << 50)


def test_device_properties():
    d = gn.Device(0)
    assert d.arch.startswith("sm_")
    assert d.multiprocessor_count > 0
    assert d.total_memory > 1 << 30
    assert "NVIDIA" in d.name


def test_eager_compile(kr):
    artifacts = kr.add_kernel.compile()
    assert artifacts and artifacts[0].kind in ("cubin", "ptx")


def test_slicing_views_and_host_round_trip(rng):
    a_h = rng.standard_normal(1000, dtype=np.float32)
    a = gn.to_device(a_h)
    np.testing.assert_array_equal(a[100:200].to_host(), a_h[100:200])
    assert a[-1] == a_h[-1]
    m = gn.to_device(a_h.reshape(10, 100))
    np.testing.assert_array_equal(m[3].to_host(), a_h[300:400])
    np.testing.assert_array_equal(a.reshape(10, 100).to_host(), a_h.reshape(10, 100))


def test_illegal_address_in_unsafe_code_reports_a_lost_context(tmp_path):
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        import gpu_native as gn
        from tests.helpers import kernels_runtime as kr
        a = gn.zeros(16)
        kr.scribble.launch(gn.GridDim1D(1), gn.BlockDim1D(32))(a, 1 << 40)
        try:
            gn.synchronize()
        except gn.ContextLostError as exc:
            print("LOST:", exc)
            try:
                gn.zeros(4).to_host()
            except gn.CudaError as again:
                print("AGAIN:", type(again).__name__)
    """) % str(ROOT)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert "LOST: CUDA_ERROR_ILLEGAL_ADDRESS" in out.stdout, out.stdout + out.stderr
    assert "context is lost" in out.stdout
    assert "AGAIN: ContextLostError" in out.stdout


def test_graph_capture_and_replay_keeps_its_arguments_alive(kr, rng):
    n = 1 << 16
    a_h = rng.standard_normal(n, dtype=np.float32)
    out = poisoned(n)
    with gn.Graph() as graph:
        a = gn.to_device(a_h)
        tmp = gn.empty(n)
        launch = kr.add_kernel.launch(gn.GridDim1D(n // 128), gn.BlockDim1D(128), 0, graph.stream)
        launch(a, a, tmp)      # tmp = 2a
        launch(tmp, a, out)    # out = 3a
    del a, tmp                 # the graph keeps them alive
    gc.collect()
    for _ in range(10):
        graph.replay()
    graph.synchronize()
    assert graph.launches == 2
    np.testing.assert_allclose(out.to_host(), 3.0 * a_h.astype(np.float64), rtol=1e-6, atol=1e-6)


def test_memory_allocated_before_the_pool_is_ready_is_freed_after_its_work(tmp_path):
    # A new process allocates with cuMemAlloc until the stream-ordered pool has made its first
    # reservation (on another thread); such memory is freed through an event, once the work
    # queued before its free has finished.  The pool thread is held back here so that every
    # allocation takes that path, then let go.
    script = textwrap.dedent("""
        import gc, sys, threading, time
        sys.path.insert(0, %r)
        import numpy as np
        import gpu_native as gn
        from gpu_native.runtime import backend as B

        gate = threading.Event()
        reserve = B.CudaBackend._reserve_pool
        B.CudaBackend._reserve_pool = lambda self, ordinal: (gate.wait(), reserve(self, ordinal))
        from tests.helpers import kernels_runtime as kr

        rng = np.random.default_rng()
        n = 1 << 20
        a_h = rng.standard_normal(n, dtype=np.float32)
        keep = gn.empty(n)
        keep.fill(np.nan)
        be = B.select()
        assert keep.ptr in be._unpooled, "the first array should not wait for the pool"
        pending = 0
        for _ in range(20):
            a = gn.to_device(a_h)
            c = gn.empty(n)
            c.fill(np.nan)
            kr.busy_add.launch(gn.GridDim1D(n // 256), gn.BlockDim1D(256))(a, c, 2000)
            del a, c  # the kernel is still running: their memory must outlive it
            gc.collect()
            pending = max(pending, len(be._deferred))
            junk = gn.to_device(np.full(n, 5.0, np.float32))  # may take freed memory
            del junk
        a = gn.to_device(a_h)
        kr.busy_add.launch(gn.GridDim1D(n // 256), gn.BlockDim1D(256))(a, keep, 10)
        ref = a_h.astype(np.float64)
        for _ in range(10):
            ref = ref * 0.999 + 0.001
        np.testing.assert_allclose(keep.to_host(), ref, rtol=1e-5, atol=1e-5)
        del a
        gn.synchronize()
        be._free_deferred()
        print("PENDING", pending, "LEFT", len(be._deferred), "UNPOOLED", len(be._unpooled))
        gate.set()
        deadline = time.monotonic() + 10
        while 0 not in be._pools_ready and time.monotonic() < deadline:
            time.sleep(0.01)
        b = gn.empty(16)
        print("POOLED", 0 in be._pools_ready and b.ptr not in be._unpooled)
    """) % str(ROOT)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    found = re.search(r"PENDING (\d+) LEFT (\d+) UNPOOLED (\d+)", out.stdout)
    assert found, out.stdout + out.stderr
    pending, left, unpooled = map(int, found.groups())
    assert pending >= 1  # frees did wait for the kernels that used the memory
    assert left == 0  # and happened once they had finished
    assert unpooled == 1  # only `keep` is still allocated
    assert "POOLED True" in out.stdout
