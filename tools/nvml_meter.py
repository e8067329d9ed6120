"""Energy, power and SM clock of one GPU through the driver's NVML library (``libnvidia-ml``,
installed with every NVIDIA driver), for the GEMM probes: at the GPU's power limit a kernel's
time depends on the energy it spends as much as on its cycles, and ``sustained`` tells the two
apart (milliseconds a call, mean SM clock, and their product, clock cycles a call).

Read-only queries; nothing here changes the GPU's settings.
"""

from __future__ import annotations

import ctypes
import statistics
import time

NVML_CLOCK_SM = 1


class Nvml:
    """The NVML handle of the GPU whose PCI bus id is ``bus_id`` (``cuDeviceGetPCIBusId``'s
    string), so that NVML's numbering need not match CUDA's."""

    def __init__(self, bus_id: str):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        self._check(self.lib.nvmlInit_v2(), "nvmlInit_v2")
        self.handle = ctypes.c_void_p()
        self._check(self.lib.nvmlDeviceGetHandleByPciBusId_v2(
            bus_id.encode(), ctypes.byref(self.handle)), "nvmlDeviceGetHandleByPciBusId_v2")

    @staticmethod
    def _check(rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what}: NVML error {rc}")

    def energy_mj(self) -> int:
        """Millijoules the GPU has used since the driver loaded."""
        e = ctypes.c_ulonglong()
        self._check(self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(e)),
                    "nvmlDeviceGetTotalEnergyConsumption")
        return e.value

    def sm_mhz(self) -> int:
        """The SM clock now, in MHz."""
        c = ctypes.c_uint()
        self._check(self.lib.nvmlDeviceGetClockInfo(self.handle, NVML_CLOCK_SM, ctypes.byref(c)),
                    "nvmlDeviceGetClockInfo")
        return c.value


def for_torch_device(torch) -> Nvml:
    """The meter of torch's current CUDA device."""
    from cuda.bindings import driver as drv

    _, dev = drv.cuDeviceGet(torch.cuda.current_device())
    err, bus = drv.cuDeviceGetPCIBusId(32, dev)
    if int(err) != 0:
        raise RuntimeError(f"cuDeviceGetPCIBusId: {err}")
    return Nvml(bus.split(b"\0")[0].decode() if isinstance(bus, bytes) else str(bus))


def sustained(torch, meter: Nvml, fn, seconds: float = 2.0, warm: float = 0.5) -> dict:
    """Run ``fn`` back to back for ``seconds`` (after ``warm`` seconds of the same), the GPU
    never idle, and return its milliseconds a call (CUDA events), the mean of the SM clock
    sampled every ten calls, the mean power and the energy a call over the window, and
    ``kcycles``, milliseconds times the mean clock: what the call costs in clock cycles, which
    a lower clock at the power limit does not change."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm:
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()       # the GPU busy while the host launches the first timed call
    e0, w0 = meter.energy_mj(), time.perf_counter()
    start.record()
    calls, clocks = 0, []
    while time.perf_counter() - w0 < seconds:
        for _ in range(10):
            fn()
        calls += 10
        clocks.append(meter.sm_mhz())
    end.record()
    end.synchronize()
    e1, w1 = meter.energy_mj(), time.perf_counter()
    ms = start.elapsed_time(end) / calls
    mhz = statistics.fmean(clocks)
    return {"ms": ms, "mhz": mhz, "watts": (e1 - e0) / 1e3 / (w1 - w0),
            "mj": (e1 - e0) / calls, "kcycles": ms * mhz, "calls": calls}
