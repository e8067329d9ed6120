"""Time to first result in a new process: the seed example, cold and warm, against the peers.

Each measurement is a fresh ``python`` process: its wall time from exec to exit, and its time
to first result (from exec to the moment the result has been checked, so without the process's
teardown), running: nothing (interpreter start), ``import numpy``, and "add two 1000-element
vectors on the GPU and read the result back" with raw ``cuda.bindings`` and a cubin already on disk
(the floor that CUDA itself sets: driver start, context, module load), with
gpu_native (cold: empty artifact cache and no rewritten bytecode; warm: both populated; and cold
with compiling ahead turned off, GPU_NATIVE_PREFETCH=0), Numba-CUDA, Triton and CuPy (each cold,
with an empty cache of its own).

The rows take turns: each round runs every row once, in an order that rotates from round to round,
so that a drift in the machine's speed reaches every row alike.  A row's figure above the
interpreter's or ``import numpy``'s, and gpu_native's warm start against the floor, is the median
over rounds of the difference within each round; a wall time alone is the median over rounds.

Those rows run while this process has the driver started, as when any other CUDA process is
running: every measured process then starts the driver quickly.  Where no process holds the GPU,
each one's ``cuInit`` costs ~0.1 s more on the H200 (even with persistence mode on there):
the floor and gpu_native's cold and warm rows are also measured that way, first, before this
process touches the driver (marked "no process holding the GPU").

Before a row is measured, its program runs once and the bytecode of the library modules it
imported is compiled where it is missing (an environment with PYTHONDONTWRITEBYTECODE set never
writes it): start-up is measured as an installed environment has it, without compiling Python
source in every process.

    python tools/bench_startup.py [--repeat 5] [--numba-pythonpath PATH] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SEED_MODULE = '''\
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId,
                        GridDim1D, BlockDim1D, DEFAULT_STREAM, f32)

@gpu_kernel(Kernel1D)
def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
    idx: UniqueId = FlatLayout1D.uid()
    c[idx] = a[idx] + b[idx]

def add(a, b, c):
    block_dim = 128
    grid_dim = (len(c) + block_dim - 1) // block_dim
    add_kernel.launch(GridDim1D(grid_dim), BlockDim1D(block_dim), 0, DEFAULT_STREAM)(a, b, c)
'''

SEED_MAIN = '''\
import numpy as np, gpu_native as gn, mykernels
a = gn.to_device(np.arange(1000, dtype=np.float32)); b = gn.to_device(np.ones(1000, np.float32))
c = gn.empty(1000, gn.f32)
mykernels.add(a, b, c)
assert c.to_host()[3] == 4.0
'''

NUMBA_MAIN = '''\
import numpy as np
from numba import cuda
@cuda.jit
def add(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]
a = cuda.to_device(np.arange(1000, dtype=np.float32)); b = cuda.to_device(np.ones(1000, np.float32))
c = cuda.device_array(1000, np.float32)
add[8, 128](a, b, c)
assert c.copy_to_host()[3] == 4.0
'''

TRITON_MAIN = '''\
import torch, triton, triton.language as tl
@triton.jit
def add(a, b, c, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(c + offs, tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m), mask=m)
a = torch.arange(1000, dtype=torch.float32, device="cuda"); b = torch.ones(1000, device="cuda")
c = torch.empty(1000, device="cuda")
add[(1,)](a, b, c, 1000, BLOCK=1024)
assert float(c[3].cpu()) == 4.0
'''

CUPY_MAIN = '''\
import numpy as np, cupy as cp
k = cp.RawKernel(r"""extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }""", "add")
a = cp.arange(1000, dtype=cp.float32); b = cp.ones(1000, cp.float32); c = cp.empty(1000, cp.float32)
k((8,), (128,), (a, b, c, np.int32(1000)))
assert float(c[3].get()) == 4.0
'''


# The floor under any Python tool: the same work with nothing but cuda.bindings and a cubin that is
# already on disk (no transpiler, no compiler, no argument checks).  Its own phases are printed.
RAW_MAIN = '''\
import time
t = [time.perf_counter()]
import numpy as np
from cuda.bindings import driver as cu
t.append(time.perf_counter())
def ok(r):
    assert int(r[0]) == 0, r
    return r[1] if len(r) == 2 else None
ok(cu.cuInit(0)); dev = ok(cu.cuDeviceGet(0)); t.append(time.perf_counter())
ctx = ok(cu.cuDevicePrimaryCtxRetain(dev)); ok(cu.cuCtxSetCurrent(ctx)); t.append(time.perf_counter())
mod = ok(cu.cuModuleLoadData(open("raw_add.cubin", "rb").read()))
fn = ok(cu.cuModuleGetFunction(mod, b"add"))
n = 1000
a, b, c = (ok(cu.cuMemAlloc(4 * n)) for _ in range(3))
ha, hb = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
ok(cu.cuMemcpyHtoD(a, ha.ctypes.data, 4 * n)); ok(cu.cuMemcpyHtoD(b, hb.ctypes.data, 4 * n))
t.append(time.perf_counter())
args = (np.array([int(a)], np.uint64), np.array([int(b)], np.uint64), np.array([int(c)], np.uint64),
        np.array([n], np.int32))
ptrs = np.array([x.ctypes.data for x in args], np.uint64)
ok(cu.cuLaunchKernel(fn, 8, 1, 1, 128, 1, 1, 0, 0, ptrs.ctypes.data, 0))
hc = np.empty(n, np.float32)
ok(cu.cuMemcpyDtoH(hc.ctypes.data, c, 4 * n))
assert hc[3] == 4.0
t.append(time.perf_counter())
names = ["import numpy and cuda.bindings", "cuInit", "primary context", "load cubin, allocate, copy in",
         "launch and copy out"]
print(" ".join(f"{n}={1000 * (t[i + 1] - t[i]):.1f}ms" for i, n in enumerate(names)))
'''

# Suffix of the rows measured before the benchmark's own process starts the driver.
NOT_HELD = " [no process holding the GPU]"

RAW_SOURCE = (b'extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {'
              b" int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }")


def write_raw_cubin(path: Path) -> None:
    """Compile the floor's kernel with NVRTC for this GPU (outside any timed process)."""
    from cuda.bindings import driver as cu
    from cuda.bindings import nvrtc

    cu.cuInit(0)
    _, dev = cu.cuDeviceGet(0)
    _, major = cu.cuDeviceGetAttribute(
        cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    _, minor = cu.cuDeviceGetAttribute(
        cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    _, prog = nvrtc.nvrtcCreateProgram(RAW_SOURCE, b"add.cu", 0, [], [])
    opts = [f"--gpu-architecture=sm_{major}{minor}".encode()]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if int(err) != 0:
        raise RuntimeError(f"NVRTC failed on the floor kernel: {err}")
    _, size = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = b" " * size
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    path.write_bytes(cubin)


BREAKDOWN = '''\
import time
t = [time.perf_counter()]
import numpy as np; t.append(time.perf_counter())
import gpu_native as gn; t.append(time.perf_counter())
import mykernels; t.append(time.perf_counter())
from gpu_native.runtime import driver; driver.init(); t.append(time.perf_counter())
driver.make_current(0); t.append(time.perf_counter())
a = gn.to_device(np.arange(1000, dtype=np.float32)); b = gn.to_device(np.ones(1000, np.float32))
c = gn.empty(1000, gn.f32); t.append(time.perf_counter())
mykernels.add(a, b, c); t.append(time.perf_counter())
c.to_host(); t.append(time.perf_counter())
names = ["import numpy", "import gpu_native", "import mykernels", "cuInit", "primary context",
         "allocate and copy in", "first launch (load, launch)", "to_host"]
print(" ".join(f"{n}={1000 * (t[i + 1] - t[i]):.1f}ms" for i, n in enumerate(names)))
'''


COLD_BREAKDOWN = '''\
import time
t = [time.perf_counter()]
import numpy as np; t.append(time.perf_counter())
import gpu_native as gn; t.append(time.perf_counter())
import mykernels; t.append(time.perf_counter())
a = gn.to_device(np.arange(1000, dtype=np.float32)); b = gn.to_device(np.ones(1000, np.float32))
c = gn.empty(1000, gn.f32); t.append(time.perf_counter())
mykernels.add(a, b, c); t.append(time.perf_counter())
c.to_host(); t.append(time.perf_counter())
names = ["import numpy", "import gpu_native", "import mykernels (libcst, transpile)",
         "driver, context, allocate, copy in", "first launch (compile or wait, load, launch)",
         "to_host"]
print(" ".join(f"{n}={1000 * (t[i + 1] - t[i]):.1f}ms" for i, n in enumerate(names)))
'''

# Appended to a program run once before its measurements: compiles the bytecode of every module it
# imported that has none (outside the work directory, whose modules are the measured artifacts).
# Where PYTHONDONTWRITEBYTECODE is set, Python never writes .pyc files, and every process would
# compile each library's source again: no installed environment runs like that.
BYTECODE_STAMP = """
import importlib.util as _u, os as _os, py_compile as _pc, sys as _sys
_n = 0
for _m in list(_sys.modules.values()):
    _f = getattr(_m, "__file__", None) or ""
    if _f.endswith(".py") and not _f.startswith({work!r}):
        _c = _u.cache_from_source(_f)
        if not _os.path.exists(_c):
            try:
                _pc.compile(_f, cfile=_c, doraise=True)
                _n += 1
            except Exception:
                pass
print("BYTECODE_COMPILED", _n)
"""

# Appended to every measured program: when its result has been checked (wall clock, as the parent's).
RESULT_STAMP = "\nimport time as _stamp\nprint('FIRST_RESULT_AT', _stamp.time())\n"


def wall(code: str, env: dict, cwd: str) -> tuple[float, float]:
    """(process wall time, time to first result) of one fresh process running ``code``."""
    path = Path(cwd) / f"_bench_{abs(hash(code))}.py"
    path.write_text(code + RESULT_STAMP)  # a file, not -c: Triton needs its kernels in a file
    started = time.time()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(path)], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    stamps = [line.split()[1] for line in proc.stdout.splitlines()
              if line.startswith("FIRST_RESULT_AT ")]
    return elapsed, float(stamps[-1]) - started


def compile_bytecode(code: str, env: dict, cwd: str) -> int:
    """Run ``code`` once and compile the bytecode its imports lack; how many modules that was."""
    path = Path(cwd) / "_bench_bytecode.py"
    path.write_text(code + BYTECODE_STAMP.format(work=os.path.join(str(cwd), "")))
    proc = subprocess.run([sys.executable, str(path)], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    counts = [int(line.split()[1]) for line in proc.stdout.splitlines()
              if line.startswith("BYTECODE_COMPILED ")]
    return counts[-1] if counts else 0


def hold_gpu() -> None:
    """Start the driver in this (parent) process and keep it: from now on every measured process
    starts the driver as it does while another CUDA process runs (``bench_suite.py``'s own, for
    one).  Without that, each one's ``cuInit`` costs ~0.1 s more on the H200."""
    from cuda.bindings import driver as cu

    cu.cuInit(0)


class Row:
    """One measured program: its code, environment, and what makes each run of it cold."""

    def __init__(self, name: str, code: str, env: dict, fresh=None):
        self.name, self.code, self.env, self.fresh = name, code, env, fresh
        self.walls: list[float] = []
        self.firsts: list[float] = []  # time to first result, one per round


def run_rounds(rows: list[Row], repeat: int, cwd: str) -> int:
    """Run every row once per round, the order rotating each round, ``repeat`` rounds.

    Taking turns, rather than running one row ``repeat`` times and then the next, lets a drift in
    the machine's speed reach every row alike, and gives differences between two rows within one
    round (see :func:`paired`).  Returns how many modules had their bytecode compiled first.
    """
    compiled = 0
    for row in rows:
        if row.fresh is not None:
            row.fresh()
        compiled += compile_bytecode(row.code, row.env, cwd)
    for r in range(repeat):
        k = r % len(rows)
        for row in rows[k:] + rows[:k]:
            if row.fresh is not None:
                row.fresh()
            elapsed, to_result = wall(row.code, row.env, cwd)
            row.walls.append(elapsed)
            row.firsts.append(to_result)
    return compiled


def paired(a: list[float], b: list[float]) -> float:
    """The median over rounds of ``a - b``: one row above another, each round compared in itself."""
    return statistics.median(x - y for x, y in zip(a, b))


def table_rows(rows: list[Row], start: Row, numpy_row: Row) -> list[dict]:
    """Each row's median wall time, and its wall time and time to first result above the
    interpreter's and ``import numpy``'s in the same rounds."""
    return [{"process": row.name, "wall_s": statistics.median(row.walls),
             "above_interpreter_s": paired(row.walls, start.walls),
             "above_numpy_s": paired(row.walls, numpy_row.walls),
             "first_result_above_interpreter_s": paired(row.firsts, start.firsts),
             "first_result_above_numpy_s": paired(row.firsts, numpy_row.firsts)}
            for row in rows]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds (processes per row)")
    parser.add_argument("--numba-pythonpath")
    parser.add_argument("--json")
    parser.add_argument("--write-cubin", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write_cubin:  # in a child, so that this process does not start the driver
        write_raw_cubin(Path(args.write_cubin))
        return 0
    base_env = dict(os.environ)
    work = Path(tempfile.mkdtemp(prefix="gn_startup_"))
    (work / "mykernels.py").write_text(SEED_MODULE)
    cache = work / "cache"
    env = dict(base_env, GPU_NATIVE_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([str(work), base_env.get("PYTHONPATH", "")]))

    def cold_state():
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(work / "__pycache__", ignore_errors=True)

    def phases(code: str, env: dict) -> str:
        proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(work),
                              capture_output=True, text=True, timeout=300)
        return proc.stdout.strip() or proc.stderr[-500:]

    subprocess.run([sys.executable, __file__, "--write-cubin", str(work / "raw_add.cubin")],
                   check=True, timeout=300)
    floor_name = "floor: raw cuda.bindings, cubin on disk"
    cold_name, warm_name = "gpu_native seed, cold", "gpu_native seed, warm"

    # First with no process of ours holding the GPU (the benchmark's parent must not have started
    # the driver): what a user sees where nothing else has the GPU open.  Each set of rounds has
    # its own interpreter and numpy rows, so that every difference is taken within a round.
    unheld = [Row("interpreter start", "pass", base_env),
              Row("import numpy", "import numpy", base_env),
              Row(f"floor{NOT_HELD}", RAW_MAIN, base_env),
              Row(f"{cold_name}{NOT_HELD}", SEED_MAIN, env, cold_state),
              Row(f"{warm_name}{NOT_HELD}", SEED_MAIN, env)]
    compiled = run_rounds(unheld, args.repeat, str(work))
    unheld_phases = phases(RAW_MAIN, base_env)
    hold_gpu()

    peers = {
        "Numba-CUDA, cold": (NUMBA_MAIN, {"NUMBA_CACHE_DIR": str(work / "numba")},
                             args.numba_pythonpath),
        "Triton, cold": (TRITON_MAIN, {"TRITON_CACHE_DIR": str(work / "triton")}, None),
        "CuPy RawKernel, cold": (CUPY_MAIN, {"CUPY_CACHE_DIR": str(work / "cupy")}, None),
    }
    held = [Row("interpreter start", "pass", base_env),
            Row("import numpy", "import numpy", base_env),
            Row(cold_name, SEED_MAIN, env, cold_state),
            Row(f"{cold_name}, GPU_NATIVE_PREFETCH=0", SEED_MAIN,
                dict(env, GPU_NATIVE_PREFETCH="0"), cold_state),
            Row(warm_name, SEED_MAIN, env),
            Row(floor_name, RAW_MAIN, base_env)]
    notes = {}
    for name, (code, extra, pythonpath) in peers.items():
        peer_env = dict(base_env, **extra)
        if pythonpath:
            peer_env["PYTHONPATH"] = pythonpath + os.pathsep + base_env.get("PYTHONPATH", "")
        directory = Path(next(iter(extra.values())))

        def fresh(directory=directory):
            shutil.rmtree(directory, ignore_errors=True)

        try:  # a peer that does not run here is left out of the rounds, with a note
            fresh()
            wall(code, peer_env, str(work))
        except Exception as exc:
            notes[name] = f"not measured: {str(exc).strip().splitlines()[-1][:200]}"
            continue
        held.append(Row(name, code, peer_env, fresh))
    compiled += run_rounds(held, args.repeat, str(work))
    cold_state()
    cold_phases = phases(COLD_BREAKDOWN, env)
    print("floor process, phase by phase:", phases(RAW_MAIN, base_env))
    print("floor process, phase by phase, no process holding the GPU:", unheld_phases)
    print("warm process, phase by phase:", phases(BREAKDOWN, env))
    print("cold process, phase by phase (compile ahead on; its threads overlap these phases):",
          cold_phases)

    rows = (table_rows(held, held[0], held[1]) + table_rows(unheld[2:], unheld[0], unheld[1]))
    print(f"\n{'process':62s} {'wall (s)':>9s} {'above interpreter':>18s} {'above numpy':>12s} "
          f"{'first result above interpreter':>31s}")
    for r in rows:
        print(f"{r['process']:62s} {r['wall_s']:9.3f} {r['above_interpreter_s']:18.3f} "
              f"{r['above_numpy_s']:12.3f} {r['first_result_above_interpreter_s']:31.3f}")
    for name, note in notes.items():
        print(f"  {name}: {note}")
    by_name = {row.name: row for row in held + unheld}
    cold, warm, floor = by_name[cold_name], by_name[warm_name], by_name[floor_name]
    start, numpy_row = held[0], held[1]
    summary = {
        "cold_first_result_above_interpreter_s": paired(cold.firsts, start.firsts),
        "cold_wall_above_interpreter_s": paired(cold.walls, start.walls),
        "warm_first_result_above_numpy_s": paired(warm.firsts, numpy_row.firsts),
        "floor_first_result_above_numpy_s": paired(floor.firsts, numpy_row.firsts),
        "warm_minus_floor_first_result_s": paired(warm.firsts, floor.firsts),
        "warm_minus_floor_wall_s": paired(warm.walls, floor.walls),
    }
    print(f"\ncold above interpreter start: {summary['cold_wall_above_interpreter_s']:.3f} s "
          f"process, {summary['cold_first_result_above_interpreter_s']:.3f} s to first result "
          f"(goal <= 0.5 s); warm, to first result above `import numpy`'s: "
          f"{summary['warm_first_result_above_numpy_s'] * 1000:.0f} ms (goal <= 50 ms), where "
          f"the raw-driver floor takes {summary['floor_first_result_above_numpy_s'] * 1000:.0f} "
          f"ms; warm minus floor, round by round: "
          f"{summary['warm_minus_floor_first_result_s'] * 1000:.0f} ms to first result, "
          f"{summary['warm_minus_floor_wall_s'] * 1000:.0f} ms process wall "
          f"(median of {args.repeat} rounds)")
    un = {row.name: row for row in unheld}
    print(f"with no process holding the GPU: cold "
          f"{paired(un[cold_name + NOT_HELD].firsts, unheld[0].firsts):.3f} s to first result, "
          f"the floor {paired(un['floor' + NOT_HELD].firsts, unheld[0].firsts):.3f} s (the "
          f"GPU's own start-up is in both)")
    print(f"bytecode: {compiled} imported modules had no .pyc and were compiled once before the "
          f"measurements (PYTHONDONTWRITEBYTECODE="
          f"{os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')}), as an installation would have")
    if args.json:
        samples = {row.name: {"wall_s": row.walls, "first_result_s": row.firsts}
                   for row in held + unheld[2:]}
        Path(args.json).write_text(json.dumps(
            {"rows": rows, "summary": summary, "samples": samples, "rounds": args.repeat,
             "notes": notes, "bytecode_compiled": compiled}, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
