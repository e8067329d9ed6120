"""What the import hook costs: on modules without kernels, and on a warm kernel-module import.

    python tools/bench_importhook.py [--repeat 41] [--kernel-repeat 41]

1. **Modules without kernels.**  Fresh interpreters import a few hundred standard-library and
   site-packages modules (every module of the packages listed in ``PACKAGES`` that are installed,
   plus what they import), once with the hook installed exactly as ``gpu_native.pth`` installs it
   at startup and once without it, alternating, ``--repeat`` times each.  Reported: the time of
   the imports measured inside the process and of the whole process (interpreter start
   included), wall clock and CPU, as medians and as the best run of each arm (the least disturbed
   by other work on the machine) and as the median ratio of back-to-back pairs, with the hook's
   overhead in percent; then, immune to other work, the time spent inside the hook's own code
   (its finder, less the ``PathFinder`` it calls) as a share of the imports.  Goal: under 5 %.
2. **A warm kernel-module import.**  In fresh interpreters that already imported ``gpu_native``,
   the time to import a module defining kernels whose rewrite is cached, against the same module
   with its kernels removed.  Goal: within a few milliseconds.  The cold import (rewrite with
   libcst) and the import with the hook disabled (the decorator transpiles) are shown for scale.

``PYTHONDONTWRITEBYTECODE`` is unset for the runs (otherwise modules without a pyc would be compiled
on every run, in both arms); everything runs in a temporary directory with a temporary gpu_native
cache.  Needs no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Site-packages packages to import when installed (each brings its own dependencies along).
PACKAGES = ("numpy", "libcst", "platformdirs", "pytest", "hypothesis", "pygments", "jinja2",
            "yaml", "packaging", "attr", "pluggy", "requests")
# Standard-library modules that start programs, print, or need a display when imported.
_STDLIB_SKIP = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "__hello__",
                "__phello__", "_tkinter", "pydoc_data", "lib2to3", "ensurepip", "venv",
                "msilib", "winreg", "winsound", "_winapi", "nt", "_msi", "_overlapped",
                "msvcrt", "asyncio.__main__", "xxsubtype", "xxlimited", "xxlimited_35",
                "_xxtestfuzz", "_xxsubinterpreters", "_testcapi", "_testinternalcapi",
                "_testbuffer", "_testimportmultiple", "_testmultiphase", "_ctypes_test",
                "_testclinic", "_crypt", "crypt", "nis", "spwd", "ossaudiodev", "audioop",
                "sndhdr", "imghdr", "cgi", "cgitb", "chunk", "mailcap", "nntplib", "pipes",
                "telnetlib", "uu", "xdrlib", "aifc", "sunau", "distutils", "asynchat",
                "asyncore", "smtpd", "imp"}

_IMPORTS = textwrap.dedent("""\
    import sys, time
    mods = {mods!r}
    {install}
    before = set(sys.modules)
    t0, c0 = time.perf_counter(), time.process_time()
    for m in mods:
        try:
            __import__(m)
        except Exception:
            pass
    t1, c1 = time.perf_counter(), time.process_time()
    print((t1 - t0) * 1e3, (c1 - c0) * 1e3, len(set(sys.modules) - before))
""")


def _env(cache_dir: str) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("GPU_NATIVE_DISABLE_HOOK", None)
    env.pop("GPU_NATIVE_DEBUG", None)
    env["PYTHONPATH"] = REPO
    env["GPU_NATIVE_CACHE_DIR"] = cache_dir
    env["GPU_NATIVE_BACKEND"] = "sim"
    return env


def _run(code: str, env: dict, cwd: str) -> tuple[str, float, float]:
    """Run ``code`` in a fresh interpreter: its output, wall time and CPU time (ms)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, check=True,
                         capture_output=True, text=True)
    wall = (time.perf_counter() - t0) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3
    return out.stdout, wall, cpu


def _pth_install_code() -> str:
    """The lines of gpu_native.pth that site.py would execute."""
    with open(os.path.join(REPO, "gpu_native.pth"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.startswith(("import ", "import\t"))]
    return "\n".join(f"exec({line!r})" for line in lines)


def module_list(env: dict, cwd: str) -> list[str]:
    """Standard-library modules and installed packages that import cleanly here."""
    probe = textwrap.dedent(f"""\
        import sys, io, contextlib, importlib, warnings
        warnings.simplefilter("ignore")
        names = sorted(n for n in sys.stdlib_module_names if n not in {sorted(_STDLIB_SKIP)!r})
        names += {list(PACKAGES)!r}
        ok = []
        for n in names:
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    importlib.import_module(n)
                ok.append(n)
            except BaseException:
                pass
        print(repr(ok))
    """)
    out = _run(probe, env, cwd)[0]
    return eval(out)  # our own repr of a list of names


def bench_plain_modules(repeat: int, env: dict, cwd: str) -> dict:
    mods = module_list(env, cwd)
    with_hook = _IMPORTS.format(mods=mods, install=_pth_install_code())
    without = _IMPORTS.format(mods=mods, install="")
    count_code = with_hook + textwrap.dedent("""\
        import _gpu_native_startup as s, os
        print(sum(1 for m in sys.modules.values()
                  if getattr(getattr(m, '__spec__', None), 'origin', None) and
                  m.__spec__.origin.endswith('.py') and
                  not (m.__spec__.origin.startswith(s._stdlib)
                       and not m.__spec__.origin.startswith(s._site_markers))))
        print(s.status()['installed'])
    """)
    out = _run(count_code, env, cwd)[0]  # also warms every pyc and the no-kernels file
    lines = out.split()
    loaded, scanned, installed = int(lines[2]), int(lines[3]), lines[4] == "True"
    assert installed, "the hook did not install"
    _run(without, env, cwd)
    series: dict[str, dict[str, list[float]]] = {
        name: {"hook": [], "plain": []} for name in ("imports_wall", "imports_cpu",
                                                    "process_wall", "process_cpu")}
    for _ in range(repeat):
        for arm, code in (("plain", without), ("hook", with_hook)):
            out, wall, cpu = _run(code, env, cwd)
            inner_wall, inner_cpu = (float(x) for x in out.split()[:2])
            series["imports_wall"][arm].append(inner_wall)
            series["imports_cpu"][arm].append(inner_cpu)
            series["process_wall"][arm].append(wall)
            series["process_cpu"][arm].append(cpu)
    result: dict = {"modules_requested": len(mods), "modules_loaded": loaded,
                    "source_modules_scanned": scanned, "repeat": repeat, "mods": mods}
    for name, data in series.items():
        hook, plain = statistics.median(data["hook"]), statistics.median(data["plain"])
        best_hook, best_plain = min(data["hook"]), min(data["plain"])
        paired = statistics.median(h / p for h, p in zip(data["hook"], data["plain"]))
        result[name] = {"plain_ms": round(plain, 2), "hook_ms": round(hook, 2),
                        "overhead_percent": round(100 * (hook - plain) / plain, 2),
                        "best_plain_ms": round(best_plain, 2), "best_hook_ms": round(best_hook, 2),
                        "best_overhead_percent": round(100 * (best_hook - best_plain) / best_plain,
                                                       2),
                        "paired_overhead_percent": round(100 * (paired - 1), 2)}
    return result


_ATTRIBUTED = textwrap.dedent("""\
    import sys, time
    import _gpu_native_startup as s
    from importlib.machinery import PathFinder
    spent = [0.0, 0.0]
    real_find = PathFinder.find_spec
    class _Timed:
        @staticmethod
        def find_spec(name, path=None, target=None):
            t = time.perf_counter()
            try:
                return real_find(name, path, target)
            finally:
                spent[1] += time.perf_counter() - t
    hook_find = s.KernelFinder.find_spec
    def find_spec(self, name, path=None, target=None):
        t = time.perf_counter()
        try:
            return hook_find(self, name, path, target)
        finally:
            spent[0] += time.perf_counter() - t
    s.install("gpu_native.pth")  # before PathFinder is replaced: it goes just before it
    s.KernelFinder.find_spec = find_spec
    s.PathFinder = _Timed
    mods = {mods!r}
    t0 = time.perf_counter()
    for m in mods:
        try:
            __import__(m)
        except Exception:
            pass
    total = time.perf_counter() - t0
    print(total * 1e3, (spent[0] - spent[1]) * 1e3)
""")


def bench_attributed(repeat: int, env: dict, cwd: str, mods: list[str]) -> dict:
    """The time spent in the hook's own code (its finder, less the PathFinder it calls), measured
    inside the process: immune to the machine's other work, unlike an A/B comparison."""
    code = _ATTRIBUTED.format(mods=mods)
    totals, own = [], []
    for _ in range(repeat):
        total, mine = (float(x) for x in _run(code, env, cwd)[0].split())
        totals.append(total)
        own.append(mine)
    share = [100 * m / t for m, t in zip(own, totals)]
    # The first process of an environment: the no-kernels file is empty, every module is read.
    cold_env = dict(env, GPU_NATIVE_CACHE_DIR=env["GPU_NATIVE_CACHE_DIR"] + "-first-run")
    cold_total, cold_own = (float(x) for x in _run(code, cold_env, cwd)[0].split())
    return {"repeat": repeat, "imports_ms": round(statistics.median(totals), 2),
            "hook_own_ms": round(statistics.median(own), 3),
            "hook_own_percent": round(statistics.median(share), 2),
            "first_run_hook_own_ms": round(cold_own, 3),
            "first_run_hook_own_percent": round(100 * cold_own / cold_total, 2)}


KERNELS = textwrap.dedent("""\
    from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut,
                            FlatLayout1D, UniqueId, GridDim1D, BlockDim1D, DEFAULT_STREAM, f32)

    SCALE = 2.0


    @gpu_device
    def scale(x: f32) -> f32:
        return x * SCALE


    @gpu_kernel(Kernel1D)
    def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = scale(a[idx]) + b[idx]


    @gpu_kernel(Kernel1D)
    def mul_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] * b[idx]


    def add(a, b, c):
        block = 128
        add_kernel.launch(GridDim1D((len(c) + block - 1) // block), BlockDim1D(block), 0,
                          DEFAULT_STREAM)(a, b, c)
""")

PLAIN = textwrap.dedent("""\
    from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut,
                            FlatLayout1D, UniqueId, GridDim1D, BlockDim1D, DEFAULT_STREAM, f32)

    SCALE = 2.0


    def add(a, b, c):
        block = 128
        add_kernel.launch(GridDim1D((len(c) + block - 1) // block), BlockDim1D(block), 0,
                          DEFAULT_STREAM)(a, b, c)
""")

_TIME_IMPORT = textwrap.dedent("""\
    import sys, time
    import gpu_native
    t0 = time.perf_counter()
    import {module}
    t1 = time.perf_counter()
    print((t1 - t0) * 1e3, 'libcst' in sys.modules)
""")


def bench_kernel_module(repeat: int, env: dict, cwd: str) -> dict:
    with open(os.path.join(cwd, "hooked_kernels.py"), "w") as f:
        f.write(KERNELS)
    with open(os.path.join(cwd, "no_kernels.py"), "w") as f:
        f.write(PLAIN)
    with open(os.path.join(cwd, "fallback_kernels.py"), "w") as f:
        f.write(KERNELS)
    cold = _run(_TIME_IMPORT.format(module="hooked_kernels"), env, cwd)[0]
    _run(_TIME_IMPORT.format(module="no_kernels"), env, cwd)
    times: dict[str, list[float]] = {"kernels": [], "no_kernels": [], "fallback": []}
    libcst_warm = False
    off = dict(env, GPU_NATIVE_DISABLE_HOOK="1")
    for i in range(repeat):
        ms, libcst = _run(_TIME_IMPORT.format(module="hooked_kernels"), env, cwd)[0].split()
        times["kernels"].append(float(ms))
        libcst_warm |= libcst == "True"
        out = _run(_TIME_IMPORT.format(module="no_kernels"), env, cwd)[0]
        times["no_kernels"].append(float(out.split()[0]))
        if i < 5:
            out = _run(_TIME_IMPORT.format(module="fallback_kernels"), off, cwd)[0]
            times["fallback"].append(float(out.split()[0]))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "repeat": repeat,
        "cold_rewrite_ms": round(float(cold.split()[0]), 2),
        "warm_kernels_ms": round(med["kernels"], 3),
        "no_kernels_ms": round(med["no_kernels"], 3),
        "difference_ms": round(med["kernels"] - med["no_kernels"], 3),
        "libcst_imported_on_warm_import": libcst_warm,
        "hook_disabled_decorator_fallback_ms": round(med["fallback"], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=41, help="runs of each arm (part 1)")
    parser.add_argument("--kernel-repeat", type=int, default=41, help="runs of each (part 2)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.path.join(tmp, "work")
        os.mkdir(cwd)
        env = _env(os.path.join(tmp, "cache"))
        plain = bench_plain_modules(args.repeat, env, cwd)
        attributed = bench_attributed(args.repeat, env, cwd, plain.pop("mods"))
        kernel = bench_kernel_module(args.kernel_repeat, env, cwd)
    if args.json:
        print(json.dumps({"modules_without_kernels": plain, "hook_own_time": attributed,
                          "kernel_module": kernel}, indent=2))
        return 0
    print(f"1. modules without kernels: {plain['modules_loaded']} modules loaded "
          f"({plain['source_modules_scanned']} .py modules outside the standard library, each "
          f"stat-ed against the no-kernels file, else read and byte-searched), median of "
          f"{plain['repeat']} fresh processes per arm")
    for name, label in (("imports_wall", "imports, wall"), ("imports_cpu", "imports, CPU"),
                        ("process_wall", "process, wall"), ("process_cpu", "process, CPU")):
        r = plain[name]
        print(f"   {label:14s} median: without hook {r['plain_ms']:8.2f} ms, with "
              f"{r['hook_ms']:8.2f} ms, {r['overhead_percent']:+6.2f} %;  best: "
              f"{r['best_plain_ms']:8.2f} / {r['best_hook_ms']:8.2f} ms, "
              f"{r['best_overhead_percent']:+6.2f} %;  paired runs: "
              f"{r['paired_overhead_percent']:+6.2f} %")
    a = attributed
    print(f"   inside the process: the hook's own code (its finder less PathFinder) "
          f"{a['hook_own_ms']:.2f} ms of {a['imports_ms']:.1f} ms of imports = "
          f"{a['hook_own_percent']:.2f} % (median of {a['repeat']}); in an environment's first "
          f"process (every module read) {a['first_run_hook_own_ms']:.2f} ms = "
          f"{a['first_run_hook_own_percent']:.2f} %")
    print(f"2. warm kernel-module import (2 kernels, 1 device function), median of "
          f"{kernel['repeat']} fresh processes")
    print(f"   kernels, cached rewrite   {kernel['warm_kernels_ms']:8.3f} ms"
          f"   (libcst imported: {kernel['libcst_imported_on_warm_import']})")
    print(f"   same module, no kernels   {kernel['no_kernels_ms']:8.3f} ms")
    print(f"   difference                {kernel['difference_ms']:8.3f} ms")
    print(f"   for scale: cold rewrite {kernel['cold_rewrite_ms']:.1f} ms; hook disabled "
          f"(decorator transpiles) {kernel['hook_disabled_decorator_fallback_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
