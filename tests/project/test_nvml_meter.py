"""tools/nvml_meter.py: ``sustained``'s arithmetic (milliseconds, clock, power, energy and
cycles a call) on a simulated GPU whose kernel takes a known time at a known clock, and the
meter's refusal of an NVML error.  The NVML calls themselves need a driver (the GEMM probe on
the GPU machine runs them)."""

from __future__ import annotations

import types

import pytest

from tools import nvml_meter

CALL_MS = 0.25      # the simulated kernel's time
WATTS = 600.0


class FakeGpu:
    """A GPU that runs each call in CALL_MS at a clock that falls over the window, drawing
    WATTS; the host clock (``perf_counter``) advances with the GPU's work, as it does when the
    launch queue is full."""

    def __init__(self):
        self.now = 0.0          # seconds
        self.gpu_ms = 0.0
        self.mhz = [1980, 1830]

    def call(self):
        self.gpu_ms += CALL_MS
        self.now += CALL_MS / 1e3

    def event(self, enable_timing=True):
        gpu = self

        class Event:
            def record(self):
                self.at = gpu.gpu_ms

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return other.at - self.at

        return Event()


def fake(monkeypatch):
    gpu = FakeGpu()
    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
        synchronize=lambda: None, Event=gpu.event))
    monkeypatch.setattr(nvml_meter.time, "perf_counter", lambda: gpu.now)
    clocks = iter(gpu.mhz * 100000)
    meter = types.SimpleNamespace(energy_mj=lambda: gpu.now * WATTS * 1e3,
                                  sm_mhz=lambda: next(clocks))
    return gpu, torch, meter


def test_sustained_reports_time_clock_power_energy_and_cycles(monkeypatch):
    gpu, torch, meter = fake(monkeypatch)
    r = nvml_meter.sustained(torch, meter, gpu.call, seconds=0.4995, warm=0.1)
    assert r["ms"] == pytest.approx(CALL_MS)
    assert r["calls"] == 2000       # just under 0.5 s of 0.25 ms calls, in batches of ten
    assert r["mhz"] == pytest.approx(1905)      # the mean of the alternating samples
    assert r["kcycles"] == pytest.approx(CALL_MS * 1905)
    assert r["watts"] == pytest.approx(WATTS)
    assert r["mj"] == pytest.approx(WATTS * CALL_MS / 1e3 * 1e3)   # 0.15 J a call


def test_nvml_error_is_raised_with_the_call_named():
    with pytest.raises(RuntimeError, match="nvmlInit_v2: NVML error 9"):
        nvml_meter.Nvml._check(9, "nvmlInit_v2")
