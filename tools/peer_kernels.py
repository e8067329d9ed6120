"""Which kernels the tensor-core peers run on this GPU, for the SASS comparison of
docs/benchmarks.md: Triton's tutorial matmul (its autotuned configuration and its cubin) and the
cuBLAS kernel ``torch.matmul`` launches (its name, from the PyTorch profiler), for fp16 and bf16
at 4096 cubed.  Needs a GPU, torch and triton; the cubins it writes disassemble anywhere.

    python3 tools/peer_kernels.py --out DIR     # DIR/peers.json and DIR/triton_<dtype>.cubin
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def cublas_kernel_names(torch, a, b, c) -> list[str]:
    """The names of the device kernels one ``torch.matmul`` launches."""
    from torch.profiler import ProfilerActivity, profile

    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
    return sorted({e.key for e in prof.key_averages() if e.device_type.name == "CUDA"})


def _compiled(jit) -> list:
    """The compiled kernels in a Triton JIT function's cache."""
    caches = getattr(jit, "device_caches", None)
    if caches is not None:   # Triton 3.x: device -> (kernel cache, target, backend, binder)
        return [k for entry in caches.values() for k in entry[0].values()]
    return [k for cache in getattr(jit, "cache", {}).values() for k in cache.values()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--size", type=int, default=4096)
    args = parser.parse_args(argv)
    import torch
    import triton_matmul

    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, dict] = {}
    seen: set[int] = set()   # the kernels of an earlier dtype stay in Triton's cache
    for name, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        n = args.size
        a = torch.randn(n, n, device="cuda").to(dtype)
        b = torch.randn(n, n, device="cuda").to(dtype)
        c = torch.empty(n, n, device="cuda", dtype=dtype)
        entry: dict = {}
        try:
            entry["cublas_kernels"] = cublas_kernel_names(torch, a, b, c)
        except Exception as exc:  # the profiler needs CUPTI, which a machine may lack
            entry["cublas_kernels_error"] = f"{type(exc).__name__}: {exc}"
        triton_matmul.matmul(a, b, c)   # autotunes
        tuner = triton_matmul.matmul_kernel
        entry["triton_config"] = str(tuner.best_config)
        # Every configuration autotuning compiled (the JIT function's per-device cache; its
        # layout differs between Triton versions), each with what identifies it.
        fresh = [k for k in _compiled(tuner.fn) if id(k) not in seen]
        seen |= {id(k) for k in fresh}
        best = tuner.best_config
        for i, k in enumerate(fresh):
            meta = k.metadata
            if (meta.num_warps, meta.num_stages) != (best.num_warps, best.num_stages):
                continue   # (a configuration autotuning tried and did not keep)
            record = {"num_warps": meta.num_warps, "num_stages": meta.num_stages,
                      "shared": meta.shared, "name": meta.name}
            cubin = k.asm.get("cubin")
            if cubin:
                path = args.out / f"triton_{name}_{i}.cubin"
                path.write_bytes(cubin)
                record["file"] = path.name
            entry.setdefault("triton_kernels", []).append(record)
        report[name] = entry
    (args.out / "peers.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
