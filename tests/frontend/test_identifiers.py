"""Identifiers are read as Python reads them: CPython folds every identifier to NFKC, so ``ｘ``
(fullwidth) and ``x``, ``ﬁ`` (a ligature) and ``fi`` are one name.  The kernel's body once kept
libcst's spelling while the module scan (CPython's tree) folded it: the simulator, which runs
Python's semantics, and the generated CUDA then disagreed (a store of ``x`` after ``ｘ = 100``
kept the old value on the GPU), and a parameter spelled ``ﬁ`` was "not defined" as ``fi``."""

from __future__ import annotations

import importlib
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.rewrite import transpile_module
from gpu_native.runtime.backend import use

pytestmark = pytest.mark.usefixtures("isolated_cache")

SOURCE = textwrap.dedent("""\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32
    from gpu_native import UniqueId

    ＳＣＡＬＥ = 3.0


    @gpu_kernel(Kernel1D)
    def rebinds(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        x = a[idx]
        ｘ = f32(100.0)
        c[idx] = x + SCALE


    @gpu_kernel(Kernel1D)
    def ligature(ﬁ: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = fi[idx] * ＳＣＡＬＥ
    """)


def test_nfkc_spellings_are_one_name_in_the_generated_cuda():
    kernels = transpile_module(SOURCE, "/virtual/nfkc_names.py", "nfkc_names").kernels
    rebinds, ligature = (k.variants[0].cuda for k in kernels)
    assert "x = 100.0f;" in rebinds     # the fullwidth name assigns the variable `x` ...
    assert "pyu_" not in rebinds + ligature    # ... not a mangled variable of its own
    assert "3.0" in ligature


def test_nfkc_spellings_run_as_python_reads_them(tmp_path, monkeypatch):
    (tmp_path / "nfkc_names.py").write_text(SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    a_host = np.random.default_rng().standard_normal(37).astype(np.float32)
    with use("sim"):
        mod = importlib.import_module("nfkc_names")
        a = gn.to_device(a_host)
        c = gn.to_device(np.full(37, np.nan, np.float32))
        mod.rebinds[1, 64](a, c)
        np.testing.assert_array_equal(c.to_host(), np.full(37, 103.0, np.float32))
        c = gn.to_device(np.full(37, np.nan, np.float32))
        mod.ligature[1, 64](a, c)
        np.testing.assert_allclose(c.to_host(), a_host.astype(np.float64) * 3.0, rtol=1e-6)
