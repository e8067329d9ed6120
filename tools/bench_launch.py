"""Host time per kernel launch, gpu_native against the peers, measured side by side.

Method (issue 4): a 1-thread kernel taking three float32 arrays and one int32; bursts of 100
launches timed with a host clock (no synchronisation inside a burst, the stream drained between
bursts); the median of the bursts, in microseconds per launch.  Peers: raw
``cuda.bindings.cuLaunchKernel`` with a prepacked argument array (the floor for any Python
launcher), CuPy ``RawKernel``, ``cuda.core.launch`` and ``torch.add``.

    python tools/bench_launch.py [--bursts 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu_native as gn

CUDA_SOURCE = r"""
extern "C" __global__ void tiny(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def per_launch(fn, sync, bursts: int, per_burst: int = 100) -> float:
    for _ in range(3 * per_burst):  # warm up: module loads, caches, allocator
        fn()
    sync()
    samples = []
    for _ in range(bursts):
        sync()
        t0 = time.perf_counter()
        for _ in range(per_burst):
            fn()
        samples.append((time.perf_counter() - t0) / per_burst)
    sync()
    return statistics.median(samples) * 1e6


def measure(bursts: int = 300) -> dict:
    """Host microseconds per launch for gpu_native and each peer, plus graph replay cost."""
    import _bench_kernels as bk

    from gpu_native.cache import BuildRequest, find_or_build
    from gpu_native.runtime import backend as B
    from gpu_native.runtime import driver as D

    drv = D.driver()
    dev = gn.Device(0)
    results: dict[str, float] = {}
    notes: dict[str, str] = {}
    x = gn.to_device(np.ones(1, np.float32))
    y = gn.to_device(np.ones(1, np.float32))
    z = gn.empty(1, gn.f32)
    sync = gn.DEFAULT_STREAM.synchronize
    g, b = gn.GridDim1D(1), gn.BlockDim1D(1)

    def ours():
        bk.tiny.launch(g, b, 0, gn.DEFAULT_STREAM)(x, y, z, 1)

    launcher = bk.tiny.launch(g, b, 0, gn.DEFAULT_STREAM)

    def ours_reused():
        launcher(x, y, z, 1)

    results["gpu_native: k.launch(...)(args)"] = per_launch(ours, sync, bursts)
    results["gpu_native: reused launcher"] = per_launch(ours_reused, sync, bursts)

    # Raw cuda.bindings: the same generated kernel, its arguments packed once, outside the loop.
    variant = next(iter(bk.tiny.variants.values()))
    art = find_or_build(BuildRequest(source=variant.cuda, symbol=variant.symbol, arch=dev.arch,
                                     label="raw"))
    module = D.check(drv.cuModuleLoadData(art.image))
    fn = D.check(drv.cuModuleGetFunction(module, variant.symbol.encode()))
    _, slot = gn.DEFAULT_STREAM._resolve(0)
    values = [ctypes.c_uint64(x.ptr), ctypes.c_int64(1), ctypes.c_uint64(y.ptr),
              ctypes.c_int64(1), ctypes.c_uint64(z.ptr), ctypes.c_int64(1), ctypes.c_int32(1),
              ctypes.c_uint64(slot.device_ptr)]
    pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    addr = ctypes.addressof(pointers)
    stream = B.select().default_stream(0)
    launch = drv.cuLaunchKernel

    def raw():
        launch(fn, 1, 1, 1, 1, 1, 1, 0, stream, addr, 0)

    results["raw cuda.bindings cuLaunchKernel"] = per_launch(raw, sync, bursts)

    try:
        import cupy as cp

        kern = cp.RawKernel(CUDA_SOURCE, "tiny")
        ca, cb, cc = cp.ones(1, cp.float32), cp.ones(1, cp.float32), cp.empty(1, cp.float32)
        n1 = np.int32(1)

        def cupy_raw():
            kern((1,), (1,), (ca, cb, cc, n1))

        results["CuPy RawKernel"] = per_launch(cupy_raw, cp.cuda.Device().synchronize, bursts)
    except Exception as exc:  # pragma: no cover - depends on the machine
        notes["CuPy RawKernel"] = f"not measured: {exc!r}"

    try:
        from cuda.core import Device as CoreDevice
        from cuda.core import LaunchConfig, Program, ProgramOptions
        from cuda.core import launch as core_launch

        cdev = CoreDevice(0)
        cdev.set_current()
        prog = Program(CUDA_SOURCE, code_type="c++", options=ProgramOptions(arch=dev.arch))
        ck = prog.compile("cubin").get_kernel("tiny")
        cstream = cdev.create_stream()
        config = LaunchConfig(grid=1, block=1)
        buffers = [np.uint64(p) for p in (x.ptr, y.ptr, z.ptr)]
        n1 = np.int32(1)

        def core():
            core_launch(cstream, config, ck, *buffers, n1)

        results["cuda.core launch"] = per_launch(core, cstream.sync, bursts)
    except Exception as exc:  # pragma: no cover
        notes["cuda.core launch"] = f"not measured: {exc!r}"

    try:
        import torch

        ta, tb, tc = (torch.ones(1, device="cuda") for _ in range(3))

        def torch_add():
            torch.add(ta, tb, out=tc)

        results["torch.add"] = per_launch(torch_add, torch.cuda.synchronize, bursts)
    except Exception as exc:  # pragma: no cover
        notes["torch.add"] = f"not measured: {exc!r}"

    # CUDA graph: 100 launches captured once; device time per replayed kernel.
    with gn.Graph() as graph:
        captured = bk.tiny.launch(g, b, 0, graph.stream)
        for _ in range(100):
            captured(x, y, z, 1)
    graph.replay()
    graph.synchronize()
    times = []
    for _ in range(50):
        start, end = gn.Event(), gn.Event()
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / 100)
    replay_host = per_launch(graph.replay, sync, max(20, bursts // 10), per_burst=10) / 100
    return {"device": dev.name, "results_us": results, "notes": notes,
            "graph_device_us_per_kernel": statistics.median(times),
            "graph_host_us_per_kernel": replay_host}


def table(data: dict) -> str:
    """The launch results as a Markdown table."""
    results = data["results_us"]
    raw_us = results["raw cuda.bindings cuLaunchKernel"]
    lines = ["| launcher | host µs per launch | vs raw cuda.bindings |", "|---|---:|---:|"]
    for name, us in results.items():
        lines.append(f"| {name} | {us:.2f} | {us / raw_us:.2f}x |")
    lines.append(f"\nCUDA graph of 100 launches, replayed: {data['graph_device_us_per_kernel']:.2f} "
                 f"µs of device time and {data['graph_host_us_per_kernel']:.3f} µs of host time "
                 "per kernel.")
    for name, note in data["notes"].items():
        lines.append(f"\n{name}: {note}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bursts", type=int, default=300)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args(argv)
    if gn.backend() != "cuda":
        print("bench_launch needs a CUDA GPU", file=sys.stderr)
        return 2
    data = measure(args.bursts)
    print(f"\nHost time per launch on {data['device']} (median of {args.bursts} bursts of 100)")
    print(table(data))
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
