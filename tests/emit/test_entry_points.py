"""The entry points of a kernel (main, ``_i32``, ``_uids``) and the prelude helpers each calls."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import gpu_native
from gpu_native.emit.entry_points import ENTRY_POINTS
from gpu_native.rewrite import transpile_module

PRELUDE = Path(gpu_native.__file__).parent / "include" / "gpu_native" / "prelude.cuh"
HEADER = """\
from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32
"""


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_helper_an_entry_point_names_is_in_the_prelude(entry):
    text = PRELUDE.read_text()
    helpers = ENTRY_POINTS[entry]
    names = [helpers.check, helpers.check2, helpers.assert_, f"gn_floordiv{helpers.divide}",
             f"gn_mod{helpers.divide}", helpers.check32, helpers.check2_32]
    for name in filter(None, names):
        assert re.search(rf"\b{name}\s*\(", text), name


def uids_entry_point(body: str) -> str:
    module = transpile_module(HEADER + textwrap.dedent(body), "entry_case.py", "entry_case")
    cuda = module.kernels[0].variants[0].cuda
    return cuda[cuda.index("_uids("):]


def test_the_uids_body_ends_in_a_label_only_where_it_jumps_there():
    jumps = uids_entry_point("""
    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        if a[i] < 0.0:
            return
        out[i] = a[i]
    """)
    assert "goto __gn_next;" in jumps and "__gn_next:;" in jumps
    # The text of a print() is no jump (the label was once found by searching the lines).
    prints = uids_entry_point("""
    @gpu_kernel(Kernel1D)
    def k(out: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        print("goto __gn_next", i)
    """)
    assert "goto __gn_next" in prints and "__gn_next:;" not in prints
