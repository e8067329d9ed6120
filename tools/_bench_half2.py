"""tools/bench_suite.py's packed-half benchmark (``horner_half2``): the Horner polynomial of
examples/gallery/horner_half2.py on ``vec2h`` pairs (one ``__hfma2`` per step for two elements)
beside the same kernel on scalar ``f16``, hand-written CUDA with ``fma.rn.f16x2`` and with
``fma.rn.f16``, and torch.

Kept out of bench_suite.py so that module stays readable; :class:`Half2Benches` is a base of its
``Suite`` and uses the suite's ``add``, ``raw``, ``timed`` and ``unchecked``.

    python tools/bench_suite.py --out DIR --only horner_half2
"""

from __future__ import annotations

import numpy as np

import gpu_native as gn

# The polynomial's coefficients as f16 bits, packed twice into a 32-bit word for f16x2, and an
# unrolled loop of fma.rn PTX: the hand-written kernels need no CUDA header.
HORNER_CUDA = r"""
constexpr int DEGREE = %(degree)d;
#define GN_C2 {%(pairs)s}
#define GN_C1 {%(singles)s}

extern "C" __global__ void horner2(const unsigned* __restrict__ x, unsigned* __restrict__ out,
                                   long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned C2[DEGREE] = GN_C2;  // immediates once the loop is unrolled
    const unsigned v = x[i];
    unsigned acc = 0u;
#pragma unroll
    for (int k = 0; k < DEGREE; ++k)
        asm("fma.rn.f16x2 %%0, %%1, %%2, %%3;" : "=r"(acc) : "r"(acc), "r"(v), "r"(C2[k]));
    out[i] = acc;
}

extern "C" __global__ void horner1(const unsigned short* __restrict__ x,
                                   unsigned short* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned short C1[DEGREE] = GN_C1;
    const unsigned short v = x[i];
    unsigned short acc = 0;
#pragma unroll
    for (int k = 0; k < DEGREE; ++k)
        asm("fma.rn.f16 %%0, %%1, %%2, %%3;" : "=h"(acc) : "h"(acc), "h"(v), "h"(C1[k]));
    out[i] = acc;
}
"""


def horner_source(coeffs) -> str:
    """:data:`HORNER_CUDA` for ``coeffs`` (highest power first), rounded to f16 as the kernels
    round their constants."""
    bits = [int(np.float16(c).view(np.uint16)) for c in coeffs]
    return HORNER_CUDA % {"degree": len(bits),
                          "pairs": ", ".join(f"0x{b << 16 | b:08x}u" for b in bits),
                          "singles": ", ".join(f"0x{b:04x}" for b in bits)}


class Half2Benches:
    """The ``horner_half2`` benchmark, a mixin of bench_suite's ``Suite``."""

    def horner_half2(self):
        import horner_half2 as ex

        torch, cp = self.torch, self.cp
        n = 1 << (24 if self.quick else 28)        # f16 elements (n // 2 pairs)
        work = 2 * ex.DEGREE * n                    # a multiply and an add per step per element
        x = (torch.rand(n, device="cuda", generator=self.gen) * 1.8 - 0.9).half()
        pairs = n // 2
        ref = torch.from_numpy(ex.reference(x.cpu().numpy())).cuda()
        out = torch.full_like(x, float("nan"))

        def check(exact: bool = True):
            ok = bool(torch.equal(out, ref)) if exact else bool(
                torch.allclose(out.float(), ref.float(), atol=2e-2))
            out.fill_(float("nan"))
            return ok

        bench = "horner_half2"
        gx, gout = gn.to_device(x), gn.to_device(out)                  # zero-copy views
        gx2 = gn.to_device(x.view(pairs, 2), dtype=gn.vec2h)           # the same memory as pairs
        gout2 = gn.to_device(out.view(pairs, 2), dtype=gn.vec2h)
        ms = self.timed(lambda: ex.evaluate(gx2, gout2))
        self.add(bench, "gpu_native vec2h (fma: __hfma2)", ms, work, "TFLOP/s", check())
        ms = self.timed(lambda: ex.evaluate(gx, gout2))
        self.add(bench, "gpu_native vec2h, load_vec2 of f16", ms, work, "TFLOP/s", check())
        ms = self.timed(lambda: ex.evaluate_scalar(gx, gout))
        # Contracted to one HFMA a step on the GPU, as the packed kernel's steps are: the same
        # bits are expected, but only a tolerance is promised (see docs/language.md).
        self.add(bench, "gpu_native scalar f16 (same kernel)", ms, work, "TFLOP/s",
                 check(exact=False))
        un = self.unchecked("gallery/horner_half2")
        ms = self.timed(lambda: un.evaluate(gx2, gout2))
        self.add(bench, "gpu_native vec2h, bounds_check=False", ms, work, "TFLOP/s", check())
        source = horner_source(ex.COEFFS)
        k2, k1 = self.raw(source, "horner2"), self.raw(source, "horner1")
        cx, cout = cp.asarray(x).view(cp.uint16), cp.asarray(out).view(cp.uint16)
        threads = ex.THREADS
        ms = self.timed(lambda: k2(((pairs + threads - 1) // threads,), (threads,),
                                   (cx.view(cp.uint32), cout.view(cp.uint32), np.int64(pairs))))
        self.add(bench, "CUDA C++ __half2 (fma.rn.f16x2)", ms, work, "TFLOP/s", check())
        ms = self.timed(lambda: k1(((n + threads - 1) // threads,), (threads,),
                                   (cx, cout, np.int64(n))))
        self.add(bench, "CUDA C++ scalar __half (fma.rn.f16)", ms, work, "TFLOP/s", check())
        coeffs = [float(np.float16(c)) for c in ex.COEFFS]

        def torch_horner():
            acc = torch.zeros_like(x)
            for c in coeffs:
                acc = torch.addcmul(torch.full_like(x, c), acc, x)
            out.copy_(acc)

        ms = self.timed(torch_horner, iters=3)
        self.add(bench, f"torch f16 ({ex.DEGREE} addcmul kernels)", ms, work, "TFLOP/s",
                 check(exact=False))
