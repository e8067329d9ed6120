#!/usr/bin/env python3
"""Load test: many launches with arrays allocated and freed in the loop, and many threads on many
streams, with the memory figures to show that nothing grows.

    python3 tools/load_test.py                              # 1,000,000 launches + 8 x 10,000
    python3 tools/load_test.py --launches 5000 --backend sim --per-thread 200

Part 1 allocates two arrays, launches a kernel into one of them and drops both, ``--launches``
times (every 64th iteration also copies a fresh host array in), checking a result every
``--check-every`` launches.  It samples device memory (``cuMemGetInfo`` and the stream-ordered
pool's in-use and reserved bytes; on the simulator, its live buffers) and host RSS at the start,
every quarter and the end.  Part 2 runs ``--threads`` Python threads, each on its own stream,
launching ``--per-thread`` kernels that count up in ping-pong buffers, and checks every count.

Prints a short summary and writes it as JSON (``--json``).  Exits 1 if memory grew or a result
was wrong.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import gpu_native as gn  # noqa: E402
from gpu_native import (  # noqa: E402
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    Kernel1D,
    f32,
    gpu_kernel,
)

# Allowed growth between the first sample (after warm-up) and the last: the stream-ordered pool
# reserves memory in 2 MiB chunks (cuMemGetInfo sees those), while the bytes in use by live
# allocations must come back exactly.
DEVICE_SLACK = 8 << 20
POOL_IN_USE_SLACK = 64 << 10
HOST_SLACK = 32 << 20


@gpu_kernel(Kernel1D)
def scale_into(a: CUDASlice[f32], c: CUDASliceMut[f32], k: f32):
    i = FlatLayout1D.uid()
    c[i] = a[i] * 2.0 + k


@gpu_kernel(Kernel1D)
def add_into(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    c[i] = a[i] + b[i]


def host_rss() -> int:
    """Resident set size in bytes (Linux: /proc; elsewhere the peak from getrusage)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def device_memory() -> dict:
    """Device memory in use, as the driver (or the simulator) reports it."""
    from gpu_native.runtime import backend as B

    backend = B.select()
    if backend.name != "cuda":
        buffers = list(backend.memory._buffers.values())
        return {"device_used": int(sum(b.nbytes for b in buffers)), "allocations": len(buffers)}
    from gpu_native.runtime import driver as D

    drv = D.driver()
    free, total = D.check(drv.cuMemGetInfo(), "cuMemGetInfo")
    out = {"device_used": int(total) - int(free)}
    try:
        ordinal = gn.Device.current().ordinal
        pool = D.check(drv.cuDeviceGetDefaultMemPool(D.device_handle(ordinal)))
        attr = drv.CUmemPool_attribute
        for key, name in (("pool_used", "CU_MEMPOOL_ATTR_USED_MEM_CURRENT"),
                          ("pool_reserved", "CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT")):
            out[key] = int(D.check(drv.cuMemPoolGetAttribute(pool, getattr(attr, name))))
    except Exception as exc:  # an older driver: cuMemGetInfo alone
        out["pool_error"] = f"{type(exc).__name__}: {exc}"
    return out


def sample(label: str, launches: int, start: float) -> dict:
    gn.synchronize()
    gc.collect()
    return {"at": label, "launches": launches, "seconds": round(time.perf_counter() - start, 2),
            "host_rss": host_rss(), **device_memory()}


def memory_loop(launches: int, n: int = 4096, check_every: int = 10_000) -> dict:
    """Part 1: allocate, launch, free, ``launches`` times; memory sampled every quarter."""
    rng = np.random.default_rng(1)
    a_h = rng.standard_normal(n, dtype=np.float32)
    a = gn.to_device(a_h)
    block = 256
    grid = (n + block - 1) // block
    launch = scale_into.launch(gn.GridDim1D(grid), gn.BlockDim1D(block))
    want = a_h * np.float32(2.0)
    errors: list[str] = []
    warmup = min(2000, max(1, launches // 100))
    for _ in range(warmup):
        c = gn.empty(n)
        launch(a, c, 0.0)
        del c
    start = time.perf_counter()
    samples = [sample("start", 0, start)]
    marks = {launches * q // 4: f"{25 * q}%" for q in (1, 2, 3)}
    t0 = time.perf_counter()
    for k in range(1, launches + 1):
        c = gn.empty(n)
        scratch = gn.empty(n // 2) if k % 2 else gn.to_device(a_h[:64]) if k % 64 == 0 else None
        launch(a, c, float(k % 7))
        if k % check_every == 0:
            got = c.to_host()
            if not np.array_equal(got, want + np.float32(k % 7)):
                errors.append(f"launch {k}: wrong result {got[:3]}")
        del c, scratch
        if k in marks:
            samples.append(sample(marks[k], k, start))
    elapsed = time.perf_counter() - t0
    samples.append(sample("end", launches, start))
    first, last = samples[0], samples[-1]
    grew = {key: last[key] - first[key] for key in ("device_used", "pool_used", "allocations",
                                                    "host_rss") if key in first}
    flat = (grew.get("device_used", 0) <= DEVICE_SLACK
            and grew.get("pool_used", 0) <= POOL_IN_USE_SLACK
            and grew.get("allocations", 0) <= 0 and grew["host_rss"] <= HOST_SLACK)
    return {"launches": launches, "elements": n, "seconds": round(elapsed, 2),
            "launches_per_second": round(launches / elapsed), "samples": samples, "growth": grew,
            "flat": flat, "errors": errors}


def threaded(threads: int, per_thread: int, n: int = 1 << 14) -> dict:
    """Part 2: ``threads`` threads, one stream each, ``per_thread`` launches each, all checked."""
    block = 256
    grid = (n + block - 1) // block
    ones = gn.to_device(np.ones(n, np.float32))
    results: dict[int, np.ndarray] = {}
    failures: list[str] = []
    barrier = threading.Barrier(threads)

    def worker(t: int) -> None:
        try:
            stream = gn.Stream()
            launch = add_into.launch(gn.GridDim1D(grid), gn.BlockDim1D(block), 0, stream)
            x = gn.to_device(np.full(n, t * 100_000, np.float32))
            y = gn.empty(n)
            barrier.wait(timeout=120)  # all threads launch at once
            for _ in range(per_thread // 2):
                launch(x, ones, y)  # ping-pong: each pair adds 2
                launch(y, ones, x)
            stream.synchronize()
            results[t] = x.to_host()
        except BaseException as exc:  # reported below
            barrier.abort()  # never leave the other threads waiting for this one
            failures.append(f"thread {t}: {type(exc).__name__}: {exc}")

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    start = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - start
    launched = threads * (per_thread // 2) * 2
    wrong = [t for t, got in results.items()
             if not np.all(got == np.float32(t * 100_000 + launched // threads))]
    return {"threads": threads, "launches_per_thread": per_thread, "launches": launched,
            "seconds": round(elapsed, 2), "launches_per_second": round(launched / elapsed),
            "correct_threads": threads - len(wrong) - len(failures), "wrong": wrong,
            "failures": failures, "ok": not wrong and not failures and len(results) == threads}


def mib(x: int) -> str:
    return f"{x / (1 << 20):.1f} MiB" if x >= 1 << 20 else f"{x / 1024:.1f} KiB"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--per-thread", type=int, default=10_000)
    parser.add_argument("--backend", choices=("auto", "cuda", "sim"), default="auto")
    parser.add_argument("--json", default="load_test_summary.json")
    args = parser.parse_args(argv)
    if args.backend != "auto":
        os.environ["GPU_NATIVE_BACKEND"] = args.backend
    from gpu_native.runtime import backend as B

    backend = B.select().name
    device = gn.Device(0).name
    summary: dict = {"tool": "tools/load_test.py", "backend": backend, "device": device}
    if args.launches:
        part1 = memory_loop(args.launches)
        summary["allocate_launch_free"] = part1
        print(f"load_test on {device} ({backend}): {part1['launches']:,} launches with two "
              f"arrays allocated and freed per launch, {part1['launches_per_second']:,} "
              f"launches/s; memory {'FLAT' if part1['flat'] else 'GREW'}:")
        for s in part1["samples"]:
            extra = (f", pool in use {mib(s['pool_used'])}, pool reserved "
                     f"{mib(s['pool_reserved'])}" if "pool_used" in s else
                     f", live buffers {s['allocations']}" if "allocations" in s else "")
            print(f"  {s['at']:>5} ({s['launches']:>9,} launches, {s['seconds']:7.1f} s): "
                  f"device used {mib(s['device_used'])}{extra}, host RSS {mib(s['host_rss'])}")
        print("  growth start→end: " + ", ".join(
            f"{k} {v:+,} B" if k != "allocations" else f"{k} {v:+d}"
            for k, v in part1["growth"].items()))
        for e in part1["errors"][:5]:
            print("  WRONG:", e)
    if args.threads and args.per_thread:
        part2 = threaded(args.threads, args.per_thread)
        summary["threads_on_streams"] = part2
        print(f"{part2['threads']} threads on {part2['threads']} streams, {part2['launches']:,} "
              f"launches in {part2['seconds']} s ({part2['launches_per_second']:,} launches/s): "
              f"{part2['correct_threads']}/{part2['threads']} threads correct"
              + ("" if part2["ok"] else f"; wrong {part2['wrong']} {part2['failures'][:3]}"))
    with open(args.json, "w") as f:
        json.dump(summary, f, indent=1)
    ok = summary.get("allocate_launch_free", {"flat": True, "errors": []})
    ok = ok["flat"] and not ok["errors"] and summary.get("threads_on_streams",
                                                          {"ok": True})["ok"]
    print(f"summary in {args.json}: {'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
