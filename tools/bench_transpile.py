"""How long the transpiler takes: rewrite a large kernel module and report the time per kernel.

The module is built from the example kernels, each copied many times under new names (so it has
elementwise, shared-memory, atomic, 2-D and warp-shuffle kernels).  The timing covers everything
the import hook does on a cold import: libcst parse, checking, CUDA and launcher generation.

    python tools/bench_transpile.py [--copies 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpu_native.rewrite import rewrite_module  # noqa: E402

EXAMPLES = ["vector_add", "saxpy", "block_reduce", "sgemm", "transpose", "heat_stencil",
            "histogram", "prefix_scan", "softmax", "mandelbrot", "nbody"]


def large_module(copies: int) -> tuple[str, int]:
    """One module holding ``copies`` renamed copies of every example's kernels and helpers."""
    import gpu_native

    header = ["import math", "import struct", "import sys", "import zlib",
              "import numpy as np",
              f"from gpu_native import ({', '.join(gpu_native.__all__)})",
              "import gpu_native as gn", "THREADS = 256", "TILE = 32", "BINS = 256",
              "BLOCK = 256"]
    bodies: list[str] = []
    kernels = 0
    for name in EXAMPLES:
        source = (ROOT / "examples" / f"{name}.py").read_text()
        names = re.findall(r"@gpu_kernel\([^)]*\)\ndef (\w+)", source)
        lines = source.splitlines()
        first = next(i for i, line in enumerate(lines) if line.startswith(("@gpu_kernel", "def ")))
        body = "\n".join(lines[first:]).split('\nif __name__ == "__main__":')[0]
        for copy in range(copies):
            text = body
            for kernel in names:
                text = re.sub(rf"\b{kernel}\b", f"{kernel}_{copy}", text)
            text = re.sub(r"^def (\w+)\(", rf"def \1_{copy}(", text, flags=re.M)
            bodies.append(text)
            kernels += len(names)
    return "\n".join(header) + "\n\n" + "\n\n".join(bodies) + "\n", kernels


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    source, kernels = large_module(args.copies)
    rewrite_module(source, "large_module.py", "large_module")  # warm up imports
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        result = rewrite_module(source, "large_module.py", "large_module")
        times.append(time.perf_counter() - t0)
    assert len(result.kernels) == kernels
    t = statistics.median(times)
    lines = source.count("\n")
    print(f"rewrote a module of {lines} lines with {kernels} kernels in {t:.2f} s "
          f"(median of {args.repeat}): {t / kernels * 1000:.1f} ms per kernel, "
          f"{lines / t:.0f} lines/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
