"""Host time per kernel launch, gpu_native against the peers, measured side by side.

Method: a 1-thread kernel taking three float32 arrays and one int32; bursts of 100
launches timed with a host clock (no synchronisation inside a burst, the device drained between
bursts).  The launchers take turns, one burst each per round, so that a drift in the host's speed
reaches all of them alike; each row is the median of its bursts, in microseconds per launch, and
its ratio to raw is the median of the per-round ratios.  Peers: raw ``cuda.bindings.cuLaunchKernel``
with a prepacked argument array, on the same entry point gpu_native launches (the floor for any
Python launcher), CuPy ``RawKernel``, ``cuda.core.launch`` and ``torch.add``.

One more row measures a design gpu_native does not use: the same generated launcher reading its
pieces through one reserved name (``_gn.launch``, ``_gn.fn`` ...) at every launch instead of from
closure variables bound once per launch configuration (see :func:`one_alias_form`).

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
from gpu_native.spec import Trait

RAW = "raw cuda.bindings cuLaunchKernel"

CUDA_SOURCE = r"""
extern "C" __global__ void tiny(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def per_launch(fn, sync, bursts: int, per_burst: int = 100) -> float:
    """Median host microseconds per call of ``fn`` over ``bursts`` bursts of ``per_burst``."""
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


def interleaved(launchers: dict, sync, bursts: int, per_burst: int = 100) -> dict[str, list]:
    """Per-launch host microseconds of each launcher, one burst of each per round.

    The launchers take turns (the order rotates every round), so a drift in the host's speed
    over the run (frequency, other tenants) reaches all of them alike, and a ratio taken within
    a round compares launches made moments apart.  ``sync`` drains the whole device before each
    burst.  Returns each launcher's list of per-round samples.
    """
    names = list(launchers)
    for fn in launchers.values():
        for _ in range(3 * per_burst):  # warm up: module loads, caches, allocator
            fn()
    samples: dict[str, list] = {name: [] for name in names}
    for r in range(bursts):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            fn = launchers[name]
            sync()
            t0 = time.perf_counter()
            for _ in range(per_burst):
                fn()
            samples[name].append((time.perf_counter() - t0) / per_burst * 1e6)
    sync()
    return samples


def one_alias_form(launcher, spec):
    """``launcher`` (a generated launcher lambda) rebuilt to read each closure variable through
    one reserved name, a slotted record bound once: the same code and the same objects, with an
    attribute read per piece per launch in place of a closure-cell read."""
    import re

    from gpu_native.emit.host import build_launcher, param_trees

    body = build_launcher("k", spec.params, bool(spec.typevars), param_trees(spec)).exact()[2]
    code = launcher.__code__
    cells = {name: cell.cell_contents for name, cell in zip(code.co_freevars, launcher.__closure__)}
    record = type("Alias", (), {"__slots__": tuple(cells)})()
    for name, value in cells.items():
        setattr(record, name, value)
    source = re.sub(r"\b(_gn_\w+)\b", lambda m: f"_gn.{m[1]}" if m[1] in cells else m[1],
                    body.removeprefix("return "))
    return eval(f"lambda _gn: {source}")(record)  # our own generated text, rewritten


def measure(bursts: int = 300) -> dict:
    """Host microseconds per launch for gpu_native and each peer, plus graph replay cost."""
    import _bench_kernels as bk

    from gpu_native.cache import BuildRequest, find_or_build
    from gpu_native.runtime import backend as B
    from gpu_native.runtime import driver as D

    drv = D.driver()
    dev = gn.Device(0)
    launchers: dict[str, object] = {}
    notes: dict[str, str] = {}
    x = gn.to_device(np.ones(1, np.float32))
    y = gn.to_device(np.ones(1, np.float32))
    z = gn.empty(1, gn.f32)
    g, b = gn.GridDim1D(1), gn.BlockDim1D(1)

    def ours():
        bk.tiny.launch(g, b, 0, gn.DEFAULT_STREAM)(x, y, z, 1)

    launcher = bk.tiny.launch(g, b, 0, gn.DEFAULT_STREAM)

    def ours_reused():
        launcher(x, y, z, 1)

    def ours_item():
        bk.tiny[1, 1](x, y, z, 1)

    launchers["gpu_native: k.launch(...)(args)"] = ours
    launchers["gpu_native: k[1, 1](args)"] = ours_item
    launchers["gpu_native: reused launcher"] = ours_reused
    alias = one_alias_form(launcher, bk.tiny.spec)

    def ours_alias():
        alias(x, y, z, 1)

    launchers["gpu_native: reused, one-alias form (not used; see docstring)"] = ours_alias

    # Raw cuda.bindings: the entry point gpu_native launches for this kernel, its arguments
    # packed once, outside the loop.
    variant = next(iter(bk.tiny.variants.values()))
    symbol = variant.symbol + ("_uids" if Trait.UID_ONLY in variant.traits else "")
    art = find_or_build(BuildRequest(source=variant.cuda, symbol=variant.symbol, arch=dev.arch,
                                     label="raw"))
    module = D.check(drv.cuModuleLoadData(art.image))
    fn = D.check(drv.cuModuleGetFunction(module, symbol.encode()))
    _, slot = gn.DEFAULT_STREAM._resolve(0)
    values = [ctypes.c_uint64(x.ptr), ctypes.c_int64(1), ctypes.c_uint64(y.ptr),
              ctypes.c_int64(1), ctypes.c_uint64(z.ptr), ctypes.c_int64(1), ctypes.c_int32(1),
              ctypes.c_uint64(slot.device_ptr)]
    if symbol != variant.symbol:
        values += [ctypes.c_int64(1), ctypes.c_uint32(1)]  # the logical uid count, block size
    pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    addr = ctypes.addressof(pointers)
    stream = B.select().default_stream(0)
    launch = drv.cuLaunchKernel
    grid_x = 1

    def raw():
        launch(fn, grid_x, 1, 1, 256, 1, 1, 0, stream, addr, 0)

    launchers[RAW] = raw

    try:
        import cupy as cp

        kern = cp.RawKernel(CUDA_SOURCE, "tiny")
        ca, cb, cc = cp.ones(1, cp.float32), cp.ones(1, cp.float32), cp.empty(1, cp.float32)
        n1 = np.int32(1)

        def cupy_raw():
            kern((1,), (1,), (ca, cb, cc, n1))

        launchers["CuPy RawKernel"] = cupy_raw
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

        launchers["cuda.core launch"] = core
    except Exception as exc:  # pragma: no cover
        notes["cuda.core launch"] = f"not measured: {exc!r}"

    try:
        import torch

        ta, tb, tc = (torch.ones(1, device="cuda") for _ in range(3))

        def torch_add():
            torch.add(ta, tb, out=tc)

        launchers["torch.add"] = torch_add
    except Exception as exc:  # pragma: no cover
        notes["torch.add"] = f"not measured: {exc!r}"

    # Every library here shares the device's primary context: one context synchronise drains
    # the work of all of them.
    samples = interleaved(launchers, dev.synchronize, bursts)
    results = {name: statistics.median(s) for name, s in samples.items()}
    ratios = {name: statistics.median(t / r for t, r in zip(s, samples[RAW]))
              for name, s in samples.items()}

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
    replay_host = per_launch(graph.replay, dev.synchronize, max(20, bursts // 10),
                             per_burst=10) / 100
    return {"device": dev.name, "results_us": results, "ratios_vs_raw": ratios, "notes": notes,
            "graph_device_us_per_kernel": statistics.median(times),
            "graph_host_us_per_kernel": replay_host}


def table(data: dict) -> str:
    """The launch results as a Markdown table."""
    results, ratios = data["results_us"], data["ratios_vs_raw"]
    lines = ["| launcher | host µs per launch | vs raw cuda.bindings (median of per-round "
             "ratios) |", "|---|---:|---:|"]
    for name, us in results.items():
        lines.append(f"| {name} | {us:.2f} | {ratios[name]:.2f}x |")
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
    print(f"\nHost time per launch on {data['device']} (median of {args.bursts} rounds of one burst of 100 each)")
    print(table(data))
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
