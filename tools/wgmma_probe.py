"""Check and time tools/_bench_hgemm.py's hand-written Hopper GEMM (``HGEMM_WGMMA_CUDA``) on a GPU.

Self-contained: needs only numpy, torch and cuda.bindings (NVRTC + driver), not gpu_native, so it
runs on a machine where the package is not installed.  The CUDA sources are read from
tools/_bench_hgemm.py without importing it (that module imports gpu_native).

For each variant of the kernel's compile-time knobs (``-DWG_STAGES``, ``-DWG_EARLY_LOAD``,
``-DWG_GROUP``) it checks the f16 and bf16 products, with 16-bit and f32 outputs,
against NumPy float64 products of the rounded inputs (relative Frobenius error) on random
512 x 512 x 512 inputs, then 4096^3; and times 4096^3 f16 and bf16 against ``torch.matmul``
(cuBLAS, same precision), the existing mma.sync kernel (``HGEMM_CUDA``) and, when importable,
Triton's tutorial matmul (tools/triton_matmul.py), printing ms and TFLOP/s::

    python3 tools/wgmma_probe.py [--out LOG] [--quick]
"""

from __future__ import annotations

import argparse
import ast
import ctypes
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LOG = []


def say(*parts):
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    LOG.append(line)


def sources() -> dict:
    """HGEMM_CUDA, WGMMA_DEVICE_HELPERS and HGEMM_WGMMA_CUDA (and the helpers they are built
    with), evaluated from
    tools/_bench_hgemm.py's syntax tree without running its imports."""
    with open(os.path.join(HERE, "_bench_hgemm.py")) as f:
        tree = ast.parse(f.read())
    keep = [n for n in tree.body
            if (isinstance(n, ast.FunctionDef) and n.name == "_wgmma_asm")
            or (isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
                and n.targets[0].id in ("TO_FROM_16", "HGEMM_CUDA", "WGMMA_DEVICE_HELPERS",
                                        "HGEMM_WGMMA_CUDA"))]
    ns: dict = {}
    exec(compile(ast.Module(keep, []), "_bench_hgemm.py", "exec"), ns)
    return ns


def nvrtc_compile(source: str, arch: str, defines=()) -> bytes:
    from cuda.bindings import nvrtc

    opts = [f"--gpu-architecture={arch}", "-std=c++17", "-lineinfo"]
    opts += [f"-D{d}" for d in defines]
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"probe.cu", 0, [], [])
    enc = [o.encode() for o in opts]
    err, = nvrtc.nvrtcCompileProgram(prog, len(enc), enc)
    _, n = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * n
    nvrtc.nvrtcGetProgramLog(prog, log)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC {arch} {defines}: {err}\n{log.decode(errors='replace')}")
    text = log.decode(errors="replace").strip("\x00 \n")
    if "serialized" in text or "warning" in text:
        say("  nvrtc log:", text[:600])
    _, n = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = b" " * n
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    nvrtc.nvrtcDestroyProgram(prog)
    return cubin


class Kernels:
    """Functions loaded from cubins into torch's (primary) context."""

    def __init__(self):
        from cuda.bindings import driver as drv

        self.drv = drv
        self.modules = []

    def check(self, result):
        err = result[0]
        if int(err) != 0:
            raise RuntimeError(f"CUDA driver: {err}")
        return result[1] if len(result) == 2 else result[1:]

    def load(self, cubin: bytes, name: str, shared: int = 0):
        drv = self.drv
        mod = self.check(drv.cuModuleLoadData(cubin))
        self.modules.append(mod)
        fn = self.check(drv.cuModuleGetFunction(mod, name.encode()))
        if shared > 48 * 1024:
            attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self.check(drv.cuFuncSetAttribute(fn, attr, shared))
        return fn

    def launch(self, fn, grid, block, shared, args, types):
        import torch

        stream = self.drv.CUstream(torch.cuda.current_stream().cuda_stream)
        err, = self.drv.cuLaunchKernel(fn, *grid, 1, *block, 1, 1, shared, stream,
                                       (tuple(args), tuple(types)), 0)
        if int(err) != 0:
            raise RuntimeError(f"launch: {err}")


def timed(fn, iters=20, reps=3):
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.3:   # clocks up
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        fn()   # the device busy while the host launches the first timed call
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / iters)
    return float(np.median(samples))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--variants", default="4,0,8;3,0,8;4,1,8;4,0,1;4,0,16",
                    help="STAGES,EARLY_LOAD,GROUP;... (the first correct one is timed "
                         "against the references; all correct ones are timed)")
    logged(run, ap.parse_args())


def logged(body, opts) -> None:
    """``body(opts)``, its failure said rather than raised, and the log written to ``opts.out``
    whatever happens (the log must come back from the GPU machine)."""
    t_start = time.perf_counter()
    try:
        body(opts)
    except Exception as exc:
        import traceback

        say("FAILED:", repr(exc))
        say(traceback.format_exc())
    finally:
        say(f"total {time.perf_counter() - t_start:.1f} s")
        if opts.out:
            with open(opts.out, "w") as f:
                f.write("\n".join(LOG) + "\n")


def run(opts):
    import torch

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    say("device:", torch.cuda.get_device_name(), "torch", torch.__version__)
    src = sources()
    ks = Kernels()
    vi = ctypes.c_void_p
    ci = ctypes.c_int
    rng = np.random.default_rng(0)

    def inputs(m, k, n, dtype):
        a = torch.from_numpy(rng.uniform(-1, 1, (m, k)).astype(np.float32)).to(dtype).cuda()
        b = torch.from_numpy(rng.uniform(-1, 1, (k, n)).astype(np.float32)).to(dtype).cuda()
        ref = a.double().cpu().numpy() @ b.double().cpu().numpy()   # NumPy float64
        return a, b, ref

    def rel(c, ref):
        d = c.double().cpu().numpy()
        if not np.isfinite(d).all():
            return float("nan")
        return float(np.linalg.norm(d - ref) / np.linalg.norm(ref))

    def wgmma_call(fn, shared, a, b, c):
        m, k = a.shape
        n = b.shape[1]
        return lambda: ks.launch(fn, (n // 256, m // 128), (256,), shared,
                                 (a.data_ptr(), b.data_ptr(), c.data_ptr(), m, k, n),
                                 (vi, vi, vi, ci, ci, ci))

    variants = []
    for spec in opts.variants.split(";"):
        stages, early, group = (int(x) for x in spec.split(","))
        defines = (f"WG_STAGES={stages}", f"WG_EARLY_LOAD={early}", f"WG_GROUP={group}")
        shared = stages * (128 + 256) * 64 * 2 + 1024
        t0 = time.perf_counter()
        cubin = nvrtc_compile(src["HGEMM_WGMMA_CUDA"], "sm_90a", defines)
        fns = {name: ks.load(cubin, name, shared) for name in
               ("hgemm_wgmma_f16", "hgemm_wgmma_bf16", "hgemm_wgmma_f16_f32",
                "hgemm_wgmma_bf16_f32", "hgemm_wgmma_f16_e", "hgemm_wgmma_bf16_e")}
        say(f"variant {spec}: compiled in {time.perf_counter() - t0:.1f} s, shared {shared}")
        variants.append((spec, fns, shared))

    # ---- correctness at 512^3 (every variant, every output) -----------------------------------
    tol = {"": 2e-3, "_e": 2e-3, "_f32": 1e-5}
    good = []
    for spec, fns, shared in variants:
        passed = {}
        for label, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
            a, b, ref = inputs(512, 512, 512, dtype)
            # f32 output first, then the packed 16-bit store, the element-wise one, the packed
            # one again (a first-launch effect would show as a difference).
            suffixes = ("_f32",) if os.environ.get("WG_SKIP16") else ("_f32", "", "_e", "")
            for suffix in suffixes:
                name = f"hgemm_wgmma_{label}{suffix}"
                c = torch.full((512, 512), float("nan"), device="cuda",
                               dtype=torch.float32 if suffix == "_f32" else dtype)
                wgmma_call(fns[name], shared, a, b, c)()
                torch.cuda.synchronize()
                e = rel(c, ref)
                limit = tol[suffix] * (5 if label == "bf16" and suffix != "_f32" else 1)
                ok = e <= limit
                passed[name] = ok
                say(f"  [{spec}] 512^3 {name}: rel Frobenius error {e:.3e} "
                    f"{'ok' if ok else 'WRONG'}")
                if not ok:
                    d = c.double().cpu().numpy()
                    say("    c[0,:6]", np.round(d[0, :6], 3).tolist(), "ref[0,:6]",
                        np.round(ref[0, :6], 3).tolist(), "zeros",
                        float((d == 0).mean()), "c[9,1],c[100,300]", d[9, 1], d[100, 300],
                        "ref", ref[9, 1], ref[100, 300])
        if passed["hgemm_wgmma_f16_f32"] and passed["hgemm_wgmma_bf16_f32"]:
            out16 = {}
            for label in ("f16", "bf16"):
                for suffix in ("", "_e"):
                    if passed.get(f"hgemm_wgmma_{label}{suffix}") and label not in out16:
                        out16[label] = f"hgemm_wgmma_{label}{suffix}"
            good.append((spec, fns, shared, out16))
    if not good:
        say("no variant is correct; stopping")
        return

    # ---- 4096^3: correctness of the first good variant, then timing ---------------------------
    m = 1024 if opts.quick else 4096
    work = 2.0 * m ** 3
    hg = nvrtc_compile(src["HGEMM_CUDA"], "sm_90")
    tc = {"f16": ks.load(hg, "hgemm_tc_f16"), "bf16": ks.load(hg, "hgemm_tc_bf16")}
    triton_mm = None
    try:
        sys.path.insert(0, HERE)
        import triton_matmul

        triton_mm = triton_matmul.matmul
    except Exception as exc:
        say("triton not importable:", repr(exc))
    results = {}

    def bench(label, dtype, tolerance):
        a, b, ref = inputs(m, m, m, dtype)
        c = torch.full((m, m), float("nan"), device="cuda", dtype=dtype)

        def row(name, fn):
            c.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            e1 = rel(c, ref)
            ms = timed(fn)
            e2 = rel(c, ref)
            ok = e1 <= tolerance and e2 <= tolerance
            results[(label, name)] = ms
            say(f"  {m}^3 {label:4s} {name:34s} {ms:7.4f} ms  {work / ms / 1e9:6.1f} TFLOP/s  "
                f"err {max(e1, e2):.2e} {'ok' if ok else 'WRONG'}")

        c32 = torch.full((m, m), float("nan"), device="cuda", dtype=torch.float32)
        for spec, fns, shared, out16 in good:
            if label in out16:
                row(f"wgmma [{spec}] {out16[label][12:]}",
                    wgmma_call(fns[out16[label]], shared, a, b, c))
            fn = wgmma_call(fns[f"hgemm_wgmma_{label}_f32"], shared, a, b, c32)
            fn()
            torch.cuda.synchronize()
            e1 = rel(c32, ref)
            ms = timed(fn)
            results[(label, f"f32out [{spec}]")] = ms
            say(f"  {m}^3 {label:4s} {'wgmma f32 out [' + spec + ']':34s} {ms:7.4f} ms  "
                f"{work / ms / 1e9:6.1f} TFLOP/s  err {e1:.2e}")
        row("HGEMM_CUDA (mma.sync)", lambda: ks.launch(
            tc[label], (m // 128, m // 128), (128,), 0,
            (a.data_ptr(), b.data_ptr(), c.data_ptr(), a.data_ptr(), m, m, m),
            (vi, vi, vi, vi, ci, ci, ci)))
        row("torch.matmul (cuBLAS)", lambda: torch.matmul(a, b, out=c))
        if triton_mm is not None and time.perf_counter() - T0 < 120:
            try:
                row("Triton tutorial (autotuned)", lambda: triton_mm(a, b, out=c))
            except Exception as exc:
                say("  triton failed:", repr(exc)[:300])
        cub = results[(label, "torch.matmul (cuBLAS)")]
        for key, ms in sorted(results.items()):
            if key[0] == label:
                say(f"  {label}: {key[1]:40s} {ms:.4f} ms = {cub / ms:.3f}x cuBLAS speed")

    bench("f16", torch.float16, 2e-3)
    bench("bf16", torch.bfloat16, 1e-2)

T0 = time.perf_counter()

if __name__ == "__main__":
    main()
