"""Devices: selection, the current device of each thread, per-device loading, arguments from
another device, streams per device, and copies between devices.

``TestSimulatedDevices`` runs everywhere on a simulator that reports two devices (one address
space, as if every pair were peers), so all of the multi-device bookkeeping is exercised in CI.
``TestOneGpu`` (``gpu``) drives device 0 of a real GPU through every one of those code paths;
``TestSeveralGpus`` needs two or more GPUs and skips otherwise.
"""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.nodes import replace
from gpu_native.runtime import backend as B
from gpu_native.runtime import devices, peer, records
from gpu_native.runtime.arrays import DeviceArray
from gpu_native.runtime.sim_backend import SimBackend


class TwoDeviceSim(SimBackend):
    """The simulator, reporting two devices that share its address space."""

    def device_count(self) -> int:
        return 2


@pytest.fixture
def sim2(monkeypatch):
    monkeypatch.setitem(B._instances, "sim", TwoDeviceSim())
    # Error-record pools live in a backend's memory: give this backend its own.
    monkeypatch.setattr(records, "_pools", {})
    monkeypatch.setattr(peer, "_enabled", {})
    with B.use("sim") as selected:
        yield selected


@pytest.fixture(scope="module")
def kr():
    from tests.helpers import kernels_runtime

    return kernels_runtime


NEGATE = '''\
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, GridDim1D,
                        BlockDim1D, f32)


@gpu_kernel(Kernel1D)
def negate_kernel(x: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = -x[i]


def negate(x, out):
    negate_kernel.launch(GridDim1D((len(out) + 127) // 128), BlockDim1D(128))(x, out)
'''


def host(n, seed):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def add_on_current_device(kr, n=1000, seed=0):
    a_h, b_h = host(n, seed), host(n, seed + 1)
    a, b, c = gn.to_device(a_h), gn.to_device(b_h), gn.empty(n, gn.f32)
    kr.add(a, b, c)
    np.testing.assert_allclose(c.to_host(), a_h.astype(np.float64) + b_h, rtol=0, atol=1e-6)
    return c


def function_keys(kernel):
    (variant,) = kernel.variants.values()
    return {key[:2] for key in variant.functions}


class TestSimulatedDevices:
    def test_count_properties_and_validation(self, sim2):
        assert gn.Device.count() == 2
        d1 = gn.Device(1)
        assert (d1.ordinal, d1.arch, d1.compute_capability) == (1, "sm_90", (9, 0))
        assert d1.multiprocessor_count >= 1 and d1.total_memory > 0
        assert gn.Device(d1) == d1 and hash(gn.Device(1)) == hash(d1) and d1 != gn.Device(0)
        assert pickle.loads(pickle.dumps(d1)) == d1
        with pytest.raises(gn.GpuNativeError, match=r"device 2 does not exist \(2 devices "
                                                    r"present: 0\.\.1\); CUDA_VISIBLE_DEVICES"):
            gn.Device(2)
        with pytest.raises(gn.GpuNativeError, match="device -1 does not exist"):
            gn.Device(-1)
        with pytest.raises(TypeError, match="not a bool"):
            gn.Device(True)
        with pytest.raises(TypeError, match="not str"):
            gn.Device("cuda:1")

    def test_arrays_and_streams_follow_the_current_device(self, sim2):
        assert gn.Device.current() == gn.Device(0)
        with gn.Device(1) as d:
            assert d == gn.Device.current() == gn.Device(1)
            a, s = gn.zeros(8), gn.Stream()
            assert (a.device, s.device, gn.DEFAULT_STREAM.device) == (1, 1, 1)
            with gn.Device(0):
                assert gn.empty(3).device == 0
            assert gn.Device.current().ordinal == 1
        assert gn.Device.current().ordinal == 0 and gn.empty(3).device == 0
        assert "device=sim:1" in repr(a)
        gn.Device(1).set_current()
        try:
            assert gn.empty(2).device == 1
        finally:
            gn.Device(0).set_current()

    def test_current_device_is_per_thread(self, sim2):
        one = gn.Device(1)  # the same object entered by several threads at once
        inside, release = threading.Barrier(3), threading.Barrier(3)
        seen: dict[str, object] = {}

        def enter_one(name):
            with one:
                inside.wait(timeout=10)
                seen[name] = (gn.Device.current().ordinal, gn.empty(1).device)
                release.wait(timeout=10)
            seen[name + " after"] = gn.Device.current().ordinal

        def stay_on_zero():
            inside.wait(timeout=10)
            seen["other"] = (gn.Device.current().ordinal, gn.empty(1).device)
            release.wait(timeout=10)

        threads = [threading.Thread(target=enter_one, args=("a",)),
                   threading.Thread(target=enter_one, args=("b",)),
                   threading.Thread(target=stay_on_zero)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=20)
        assert seen == {"a": (1, 1), "b": (1, 1), "other": (0, 0), "a after": 0,
                        "b after": 0}
        assert gn.Device.current().ordinal == 0

    def test_kernels_load_per_device_on_first_launch(self, sim2, kernel_module):
        mod = kernel_module(NEGATE)
        x = np.arange(300, dtype=np.float32)
        mod.negate(gn.to_device(x), out := gn.empty(300))
        np.testing.assert_array_equal(out.to_host(), -x)
        assert function_keys(mod.negate_kernel) == {("sim", 0)}
        with gn.Device(1):
            mod.negate(gn.to_device(x), out := gn.empty(300))
        np.testing.assert_array_equal(out.to_host(), -x)
        assert function_keys(mod.negate_kernel) == {("sim", 0), ("sim", 1)}

    def test_launch_configurations_survive_a_device_switch(self, sim2, kr):
        config = (gn.GridDim1D(8), gn.BlockDim1D(128), 0, gn.DEFAULT_STREAM)
        on_zero = kr.add_kernel.launch(*config)
        with gn.Device(1):
            on_one = kr.add_kernel.launch(*config)
            assert on_one is not on_zero and kr.add_kernel.launch(*config) is on_one
        assert kr.add_kernel.launch(*config) is on_zero  # parked, not rebuilt
        with gn.Device(1):
            assert kr.add_kernel.launch(*config) is on_one

    def test_an_argument_on_another_device_is_a_clear_error(self, sim2, kr):
        with gn.Device(1):
            a = gn.to_device(host(256, 1))
        b, c = gn.to_device(host(256, 2)), gn.empty(256)
        with pytest.raises(ValueError, match=r"argument 'a' of add_kernel lives on device 1, "
                                             r"but the launch is on device 0; copy it or launch "
                                             r"under gn.Device\(1\)"):
            kr.add(a, b, c)
        kr.add(a.to(0), b, c)
        np.testing.assert_allclose(c.to_host(), host(256, 1).astype(np.float64) + host(256, 2),
                                   atol=1e-6)

    def test_a_stream_of_another_device_is_refused(self, sim2, kr):
        stream = gn.Stream()
        with gn.Device(1):
            a, b, c = gn.zeros(128), gn.zeros(128), gn.zeros(128)
            with pytest.raises(gn.GpuNativeError, match="this stream belongs to device 0, but "
                                                        "the current device is 1"):
                kr.add_kernel.launch(gn.GridDim1D(1), gn.BlockDim1D(128), 0, stream)(a, b, c)

    def test_host_copies_of_an_array_on_another_device(self, sim2):
        with gn.Device(1):
            a = gn.to_device(np.arange(10, dtype=np.int32))
        assert gn.Device.current().ordinal == 0
        np.testing.assert_array_equal(a.to_host(), np.arange(10))
        a.copy_from_host(np.arange(10, 20, dtype=np.int32))
        dup = a.copy()
        assert dup.device == 1 and gn.Device.current().ordinal == 0
        np.testing.assert_array_equal(dup.to_host(), np.arange(10, 20))
        gn.Device(1).synchronize()
        assert gn.Device.current().ordinal == 0

    @pytest.mark.parametrize("path", ["peer", "staged"])
    def test_copies_between_devices(self, sim2, monkeypatch, path):
        if path == "staged":
            monkeypatch.setattr(peer, "can_access_peer", lambda device, other: False)
            monkeypatch.setattr(peer, "STAGING_CHUNK", 1000)  # several chunks, a short last one
        else:
            assert gn.Device(0).can_access_peer(1) and not gn.Device(0).can_access_peer(0)
        data = np.random.default_rng(3).standard_normal(3001)
        src = gn.to_device(data)
        moved = src.to(gn.Device(1))
        assert moved.device == 1 and moved is not src and src.to(0) is src
        np.testing.assert_array_equal(moved.to_host(), data)
        back = gn.zeros(3001, gn.f64)
        assert gn.copy(back, moved) is back
        np.testing.assert_array_equal(back.to_host(), data)
        assert peer._enabled.get((0, 1)) == (path == "peer")

    def test_copy_refuses_what_it_cannot_do(self, sim2):
        a = gn.zeros(16)
        with gn.Device(1):
            b = gn.zeros(16)
        for dst, src, error, message in [
            (b, gn.zeros(15), ValueError, r"dst has shape \(16,\) but src has shape \(15,\)"),
            (b, gn.zeros(16, gn.f64), TypeError, "dst holds f32 and src holds f64"),
            (b.readonly(), a, TypeError, "dst is a read-only view"),
            (b, np.zeros(16, np.float32), TypeError, "src is a NumPy array in host memory"),
            (a[0:10], a[5:15], ValueError, "dst and src overlap in device memory"),
            (b, [0.0] * 16, TypeError, "src must be a device array, not list"),
        ]:
            with pytest.raises(error, match=message):
                gn.copy(dst, src)
        with pytest.raises(gn.GpuNativeError, match="device 2 does not exist"):
            a.to(2)


class TestOneGpu:
    """Device 0 of a real GPU through every multi-device code path one GPU can take."""

    pytestmark = pytest.mark.gpu

    @pytest.fixture(autouse=True)
    def _cuda(self, cuda_backend):
        yield

    def test_device_zero(self):
        d = gn.Device(0)
        assert gn.Device.count() >= 1 and gn.Device.current() == d
        assert d.arch == "sm_{}{}".format(*d.compute_capability)
        assert d.total_memory > 2**30 and d.multiprocessor_count > 0 and d.name
        assert not d.can_access_peer(0)
        with pytest.raises(gn.GpuNativeError, match="does not exist"):
            gn.Device(gn.Device.count())

    def test_new_thread_binds_device_zero_and_makes_its_context_current(self, kr):
        from gpu_native.runtime import driver as D

        seen = {}

        def worker():
            drv = D.driver()
            seen["before"] = drv.cuCtxGetCurrent()[1]
            seen["device"] = gn.Device.current().ordinal
            seen["after"] = drv.cuCtxGetCurrent()[1]
            add_on_current_device(kr, seed=11)

        t = threading.Thread(target=worker)
        t.start()
        t.join(timeout=60)
        assert seen["device"] == 0 and int(seen["before"]) == 0
        assert int(seen["after"]) == int(D.primary_context(0))

    def test_an_argument_claiming_another_device_is_refused_before_launch(self, kr):
        # One GPU cannot hold memory of device 1; an array that says it lives there (wrapping
        # real device-0 memory) exercises the same check without touching the hardware.
        a = gn.to_device(host(256, 1))
        fake = DeviceArray(a._backend, 1, a.ptr, a.shape, a._info, a, a.launch_base)
        b, c = gn.to_device(host(256, 2)), gn.zeros(256)
        with pytest.raises(ValueError, match="argument 'a' of add_kernel lives on device 1, "
                                             "but the launch is on device 0"):
            kr.add(fake, b, c)
        np.testing.assert_array_equal(c.to_host(), 0)  # nothing ran
        add_on_current_device(kr)

    def test_loading_into_another_context_reuses_the_compiled_artifact(self, kr, monkeypatch):
        import gpu_native.cache as cache
        from gpu_native.runtime import driver as D

        add_on_current_device(kr)  # compiled (or found) and loaded into device 0's context
        origins = []
        real = cache.find_or_build

        def spy(request):
            artifact = real(request)
            origins.append((request.arch, artifact.origin))
            return artifact

        monkeypatch.setattr(cache, "find_or_build", spy)
        (variant,) = kr.add_kernel.variants.values()
        backend = B.select()
        fresh = [replace(variant, modules={}, functions={}) for _ in range(2)]
        for v in fresh:  # what the first launch on another device of the same arch does
            assert backend.load(kr.add_kernel, v, 0) is not None
        # Other tests clear the memory layer or point the cache elsewhere, so the first load
        # may come from anywhere; the second must find the artifact in memory: no NVRTC, no file.
        assert len(origins) == 2 and origins[1] == (gn.Device(0).arch, "memory"), origins
        for v in fresh:
            D.check(D.driver().cuModuleUnload(v.modules[0]))

    def test_copy_paths(self, kr, monkeypatch):
        data = host(300_001, 4)
        src = gn.to_device(data)
        assert src.to(0) is src and src.to(gn.Device(0)) is src
        same = gn.copy(gn.empty(len(data)), src)
        np.testing.assert_array_equal(same.to_host(), data)
        # cuMemcpyPeer between two contexts is legal within one as well.
        direct = gn.empty(len(data))
        peer._copy_peer(direct, src)
        np.testing.assert_array_equal(direct.to_host(), data)
        monkeypatch.setattr(peer, "STAGING_CHUNK", 65536)
        staged = gn.empty(len(data))
        peer._copy_staged(staged, src)
        np.testing.assert_array_equal(staged.to_host(), data)
        # A kernel's output, copied right after the launch, is complete (stream order).
        c = add_on_current_device(kr, n=1 << 20)
        out = gn.copy(gn.empty(1 << 20), c)
        np.testing.assert_array_equal(out.to_host(), c.to_host())

    def test_free_in_a_thread_that_never_chose_a_device(self):
        devices.current_device()  # device 0's context is current on this thread
        backend = B.select()
        ptr = backend.alloc(4096, 0)
        errors = []

        def worker():
            try:
                backend.free(ptr, 0)
            except Exception as exc:  # pragma: no cover - the failure being tested for
                errors.append(exc)

        t = threading.Thread(target=worker)
        t.start()
        t.join(timeout=60)
        assert errors == []
        gn.synchronize()


def _gpu_count() -> int:
    from tests.helpers import gpu_available

    if not gpu_available():
        return 0
    from gpu_native.runtime import driver as D

    return D.device_count()


class TestSeveralGpus:
    pytestmark = [pytest.mark.gpu,
                  pytest.mark.skipif(_gpu_count() < 2, reason="needs two or more GPUs")]

    @pytest.fixture(autouse=True)
    def _cuda(self, cuda_backend):
        yield

    def test_every_device_runs_the_kernel_and_shares_one_compile_per_arch(self, kr,
                                                                           monkeypatch):
        import gpu_native.cache as cache

        count = gn.Device.count()
        for arch in {gn.Device(d).arch for d in range(count)}:
            kr.add_kernel.compile(arch)  # one build (or cache read) per arch, kept in memory
        origins = []
        real = cache.find_or_build

        def spy(request):
            artifact = real(request)
            origins.append((request.arch, artifact.origin))
            return artifact

        monkeypatch.setattr(cache, "find_or_build", spy)
        (variant,) = kr.add_kernel.variants.values()
        for ordinal in range(count):
            with gn.Device(ordinal):
                c = add_on_current_device(kr, seed=ordinal)
                assert c.device == ordinal
        assert set(range(count)) <= set(variant.modules)  # loaded into every device's context
        assert all(origin == "memory" for _, origin in origins), origins  # never recompiled

    def test_argument_on_another_gpu_is_a_clear_error(self, kr):
        with gn.Device(1):
            a = gn.to_device(host(512, 1))
        b, c = gn.to_device(host(512, 2)), gn.zeros(512)
        with pytest.raises(ValueError, match="argument 'a' of add_kernel lives on device 1, "
                                             "but the launch is on device 0"):
            kr.add(a, b, c)
        kr.add(a.to(0), b, c)
        np.testing.assert_allclose(c.to_host(), host(512, 1).astype(np.float64) + host(512, 2),
                                   atol=1e-6)

    @pytest.mark.parametrize("path", ["auto", "staged"])
    def test_copies_between_gpus(self, kr, monkeypatch, path):
        if path == "staged":
            monkeypatch.setattr(peer, "_peer_ready", lambda dst, src: False)
        data = host(1 << 20, 7)
        with gn.Device(1):
            c1, twice = gn.to_device(data), gn.empty(len(data))
            kr.add(c1, c1.copy(), twice)  # work still queued on device 1 when the copy starts
        on0 = twice.to(0)
        assert on0.device == 0
        np.testing.assert_array_equal(on0.to_host(), data * 2)
        back = gn.zeros(len(data))
        with gn.Device(1):
            back1 = gn.zeros(len(data))
        gn.copy(back1, on0)
        np.testing.assert_array_equal(back1.to_host(), data * 2)
        gn.copy(back, back1)
        np.testing.assert_array_equal(back.to_host(), data * 2)
        if path == "auto":
            expected = gn.Device(0).can_access_peer(1) and gn.Device(1).can_access_peer(0)
            assert peer._enabled[(0, 1)] == expected

    def test_one_thread_per_gpu(self, kr):
        results, errors = {}, []

        def worker(ordinal):
            try:
                with gn.Device(ordinal):
                    for i in range(20):
                        results[ordinal] = add_on_current_device(kr, n=4096,
                                                                 seed=i).to_host().sum()
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(d,)) for d in range(gn.Device.count())]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert errors == [] and len(results) == gn.Device.count()

    def test_freeing_memory_of_another_gpu_with_a_nonblocking_stream_there(self):
        from gpu_native.runtime import driver as D
        from gpu_native.runtime.streams import as_stream

        drv = D.driver()
        with gn.Device(1):
            raw = D.check(drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_NON_BLOCKING))

            class Foreign:
                def __cuda_stream__(self):
                    return (0, int(raw))

            foreign = Foreign()
            stream = as_stream(foreign)
            assert stream._nonblocking and stream.device == 1
            on1 = gn.zeros(1 << 20)
        backend = B.select()
        ptr = backend.alloc(1 << 20, 0)
        backend.free(ptr, 0)  # fences device 0's streams only
        with gn.Device(1):
            ptr = backend.alloc(1 << 20, 1)
        backend.free(ptr, 1)  # device 1's memory while device 0 is current
        del on1
        gn.synchronize()
        with gn.Device(1):
            gn.synchronize()
        backend._nonblocking.pop(int(raw), None)
        D.check(drv.cuStreamDestroy(raw))


class _Foreign:
    """A foreign array as the CUDA array interface (v2) describes one: only a pointer."""

    def __init__(self, ptr: int, n: int):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (ptr, False),
                                         "version": 2}


def _mapped_allocation(drv, D, ordinal: int, size: int):
    """``size`` bytes of device ``ordinal`` mapped with cuMemCreate (as PyTorch's expandable
    segments are): memory that belongs to no context.  Returns (pointer, release)."""
    prop = drv.CUmemAllocationProp()
    prop.type = drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = ordinal
    grain = D.check(drv.cuMemGetAllocationGranularity(
        prop, drv.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM))
    size = -(-size // grain) * grain
    handle = D.check(drv.cuMemCreate(size, prop, 0))
    ptr = D.check(drv.cuMemAddressReserve(size, 0, 0, 0))
    D.check(drv.cuMemMap(ptr, size, 0, handle, 0))
    access = drv.CUmemAccessDesc()
    access.location = prop.location
    access.flags = drv.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    D.check(drv.cuMemSetAccess(ptr, size, [access], 1))

    def release():
        D.check(drv.cuMemUnmap(ptr, size))
        D.check(drv.cuMemAddressFree(ptr, size))
        D.check(drv.cuMemRelease(handle))

    return int(ptr), release


class TestForeignArraysOnSeveralGpus:
    """A foreign array's device comes from its memory: the interface names only a pointer."""

    pytestmark = [pytest.mark.gpu,
                  pytest.mark.skipif(_gpu_count() < 2, reason="needs two or more GPUs")]

    @pytest.fixture(autouse=True)
    def _cuda(self, cuda_backend):
        yield

    def test_memory_of_a_context_is_found_on_its_device(self, kr):
        data = host(4096, 3)
        with gn.Device(1):
            own = gn.to_device(data)
            wrapped = gn.from_dlpack(_Foreign(own.ptr, len(data)))
            assert wrapped.device == 1
            out = gn.zeros(len(data))
            kr.add(_Foreign(own.ptr, len(data)), wrapped, out)
        np.testing.assert_array_equal(out.to_host(), data * 2)
        with pytest.raises(ValueError, match="lives on device 1, but the launch is on device 0"):
            kr.add(_Foreign(own.ptr, len(data)), gn.zeros(len(data)), gn.zeros(len(data)))

    def test_memory_mapped_with_cumemcreate_is_found_on_its_device(self, kr):
        from gpu_native.runtime import driver as D

        drv, n = D.driver(), 4096
        with gn.Device(1):
            ptr, release = _mapped_allocation(drv, D, 1, n * 4)
            try:
                data = host(n, 4)
                D.check(drv.cuMemcpyHtoD(ptr, data, n * 4))
                foreign = gn.from_dlpack(_Foreign(ptr, n))
                assert foreign.device == 1
                out = gn.zeros(n)
                kr.add(foreign, foreign, out)
                np.testing.assert_array_equal(out.to_host(), data * 2)
            finally:
                gn.Device(1).synchronize()
                release()
