"""Compile and lookup times: cold NVRTC compile per kernel, and warm lookups from memory and disk.

    python tools/bench_compile.py [PKG_OR_PATH ...] [--arch sm_90] [--repeat 5]

With no target it benchmarks a built-in sample and the repository's ``examples/`` (modules that
do not transpile are skipped with a note).  Everything runs in a temporary cache directory; the user's cache is never touched.  Needs
no GPU.

Columns:

* ``cold compile``  ``find_or_build`` on an empty cache: key, NVRTC compile, store (median);
* ``warm memory``   ``find_or_build`` of a kernel already looked up in this process (median);
* ``warm disk``     ``find_or_build`` after forgetting the process's memory: key, NVRTC version
  record, sidecar and image read, SHA-256 check (median);
* ``precompiled``   the same from a precompiled directory with GPU_NATIVE_REQUIRE_PRECOMPILED=1.

Then, in fresh interpreters: the one-off cost of loading NVRTC, and the time to import
``gpu_native.cache`` and serve the first lookup from a warm disk cache (the runtime's warm
time-to-first-launch path), with a check that NVRTC was not loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

SAMPLE = textwrap.dedent('''\
    from typing import TypeVar

    from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut,
                            FlatLayout1D, UniqueId, f16, f32, f64)

    T = TypeVar("T", f32, f64)


    @gpu_device
    def scale(x: f32) -> f32:
        return x * 2.0


    @gpu_kernel(Kernel1D)
    def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = scale(a[idx]) + b[idx]


    @gpu_kernel(Kernel1D)
    def twice(a: CUDASlice[T], c: CUDASliceMut[T]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + a[idx]


    @gpu_kernel(Kernel1D)
    def half_sum(a: CUDASlice[f16], c: CUDASliceMut[f16]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + a[idx]
    ''')

FRESH_WARM = textwrap.dedent('''\
    import time
    t0 = time.perf_counter()
    import json, sys
    t1 = time.perf_counter()
    import gpu_native
    t2 = time.perf_counter()
    from gpu_native.cache import BuildRequest, find_or_build
    t3 = time.perf_counter()
    artifact = find_or_build(BuildRequest(**json.load(open(sys.argv[1]))))
    t4 = time.perf_counter()
    print(json.dumps({"package": t2 - t1, "import": t3 - t2, "lookup": t4 - t3,
                      "origin": artifact.origin,
                      "nvrtc_loaded": "cuda.bindings.nvrtc" in sys.modules}))
    ''')

FRESH_NVRTC = textwrap.dedent('''\
    import json, time
    import gpu_native
    t0 = time.perf_counter()
    from gpu_native.compiler import nvrtc_version
    nvrtc_version()
    print(json.dumps({"load": time.perf_counter() - t0}))
    ''')


FRESH_RAW_NVRTC = textwrap.dedent('''\
    import json, time
    t0 = time.perf_counter()
    from cuda.bindings import nvrtc
    nvrtc.nvrtcVersion()
    print(json.dumps({"load": time.perf_counter() - t0}))
    ''')


def _median(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:8.2f} ms"
    return f"{seconds * 1e6:8.1f} µs"


def _fresh(script: str, *args: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", metavar="PKG_OR_PATH")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--repeat", type=int, default=5, help="samples per measurement")
    args = parser.parse_args(argv)

    work = tempfile.mkdtemp(prefix="gpu_native_bench_")
    os.environ["GPU_NATIVE_CACHE_DIR"] = os.path.join(work, "cache")
    for name in ("GPU_NATIVE_PRECOMPILED", "GPU_NATIVE_REQUIRE_PRECOMPILED",
                 "GPU_NATIVE_CACHE_MAX_BYTES"):
        os.environ.pop(name, None)
    targets = args.targets
    if not targets:
        with open(os.path.join(work, "bench_kernels.py"), "w") as f:
            f.write(SAMPLE)
        targets = [os.path.join(work, "bench_kernels.py")]
        examples = os.path.join(REPO, "examples")
        if os.path.isdir(examples):
            targets.append(examples)

    from gpu_native.cache import clear_memory_cache, find_or_build, user_store
    from gpu_native.errors import TranspileError
    from gpu_native.precompile import find_modules, plan, precompile

    modules = []
    for module in find_modules(targets):
        try:
            plan([module], [args.arch])
        except TranspileError as exc:
            print(f"skipping {module.path}: {str(exc).splitlines()[0]}", file=sys.stderr)
            continue
        modules.append(module)
    requests = [job.request for job in plan(modules, [args.arch])]
    targets = [m.path for m in modules]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (REPO, os.environ.get("PYTHONPATH")) if p)}

    nvrtc_load = statistics.median(_fresh(FRESH_NVRTC, env=env)["load"] for _ in range(3))
    raw_load = statistics.median(_fresh(FRESH_RAW_NVRTC, env=env)["load"] for _ in range(3))
    from gpu_native.compiler import nvrtc_version

    nvrtc_version()  # load NVRTC here too, so that cold compiles below measure compiling only

    rows = []
    for request in requests:
        def cold(request=request):
            user_store().clear()
            clear_memory_cache()
            assert find_or_build(request).origin == "compiled"

        def disk(request=request):
            clear_memory_cache()
            assert find_or_build(request).origin == "cache"

        cold_time = _median(cold, args.repeat)
        disk_time = _median(disk, max(args.repeat, 20))
        memory_time = _median(lambda request=request: find_or_build(request), 1000)
        rows.append([request.label, cold_time, memory_time, disk_time])

    out_dir = os.path.join(work, "precompiled")
    precompile(targets, [args.arch], out_dir, jobs=1)
    os.environ["GPU_NATIVE_PRECOMPILED"] = out_dir
    os.environ["GPU_NATIVE_REQUIRE_PRECOMPILED"] = "1"
    for row, request in zip(rows, requests):
        def shipped(request=request):
            clear_memory_cache()
            assert find_or_build(request).origin == "precompiled"

        row.append(_median(shipped, max(args.repeat, 20)))
    del os.environ["GPU_NATIVE_PRECOMPILED"], os.environ["GPU_NATIVE_REQUIRE_PRECOMPILED"]

    # The runtime's warm start: a new interpreter, the cache already filled by an earlier one.
    listing = os.path.join(work, "request.json")
    with open(listing, "w") as f:
        json.dump(requests[0].__dict__, f)
    clear_memory_cache()
    find_or_build(requests[0])
    fresh = [_fresh(FRESH_WARM, listing, env=env) for _ in range(5)]

    major, minor = nvrtc_version()
    width = max(len("kernel"), *(len(r[0]) for r in rows))
    print(f"gpu_native compile benchmark: NVRTC {major}.{minor}, {args.arch}, Python "
          f"{sys.version.split()[0]}, median of {args.repeat}+ runs")
    header = (f"{'kernel':<{width}}  {'cold compile':>12}  {'warm memory':>12}  "
              f"{'warm disk':>12}  {'precompiled':>12}")
    print(header)
    print("-" * len(header))
    for label, *times in rows:
        print(f"{label:<{width}}  " + "  ".join(f"{_fmt(t):>12}" for t in times))
    print()
    print(f"loading NVRTC, bare (import cuda.bindings.nvrtc + nvrtcVersion): {_fmt(raw_load)}")
    print(f"loading NVRTC after import gpu_native (gpu_native.compiler):     "
          f"{_fmt(nvrtc_load)}")
    package = statistics.median(r["package"] for r in fresh)
    imports = statistics.median(r["import"] for r in fresh)
    lookups = statistics.median(r["lookup"] for r in fresh)
    print(f"fresh process, warm disk cache: import gpu_native                 {_fmt(package)}")
    print(f"                                then import gpu_native.cache      {_fmt(imports)}")
    print(f"                                first find_or_build               {_fmt(lookups)}"
          f"  (origin {fresh[0]['origin']}, NVRTC loaded: "
          f"{'yes' if any(r['nvrtc_loaded'] for r in fresh) else 'no'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
