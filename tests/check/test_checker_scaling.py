"""The checker's cost grows with a kernel's size, not its square: each assignment once walked
the value of every local known so far (``Definitions.forget``), so a kernel of n locals cost
n**2 walks (2,000 lines took 8.5 s, 20,000 did not finish in 5 minutes).  Counted in walks of
values, not timed."""

from __future__ import annotations

import pytest

from gpu_native import ir
from gpu_native.check import context
from gpu_native.rewrite import transpile_module


def _kernel(n: int) -> str:
    body = "".join(f"    x{j} = i + {j}\n" for j in range(n))
    return ("from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, i32\n\n"
            "@gpu_kernel(Kernel1D)\n"
            "def k(c: CUDASliceMut[i32]):\n"
            "    i = FlatLayout1D.uid()\n"
            f"{body}    c[i] = x{n - 1}\n")


@pytest.mark.slow
@pytest.mark.parametrize("n", [200, 800])
def test_values_are_walked_once_each(monkeypatch, n):
    calls = 0
    walk = ir.variables_read

    def counted(body):
        nonlocal calls
        calls += 1
        return walk(body)

    monkeypatch.setattr(context.ir, "variables_read", counted)
    transpile_module(_kernel(n), "scaling.py", "scaling")
    assert calls <= 2 * n + 20, calls
