"""Misuse of the warpgroup statements and swizzled shared arrays: each a TranspileError with
file:line:col and a caret at the line marked ``# <-``."""

from __future__ import annotations

import textwrap

import pytest

from gpu_native.rewrite import rewrite_module
from tests.helpers import located_transpile_error

HEADER = """\
from gpu_native import *
"""

_GOOD = """
@gpu_kernel(Kernel1D)
def k(c: CUDASliceMut2D[f32]):
    ta = shared_array(f16, (2, 64, 64), swizzle=128)
    tb = shared_array(f16, (2, 16, 64), swizzle=128)
    acc = local_array(f32, (32,))
    warpgroup_arrive()
    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 64)
    warpgroup_commit()
    warpgroup_wait(0)
    with unsafe():
        warpgroup_store(c, (0, 0), acc)
"""


def _case(old: str, new: str) -> str:
    assert old in _GOOD
    return _GOOD.replace(old, new + "  # <-")


CASES = {
    "swizzle of f32": (_case("    ta = shared_array(f16, (2, 64, 64), swizzle=128)",
                             "    ta = shared_array(f32, (2, 64, 64), swizzle=128)"),
                       "a swizzled shared array holds f16 or bf16 elements, not f32"),
    "swizzle other than 128": (_case("    ta = shared_array(f16, (2, 64, 64), swizzle=128)",
                                     "    ta = shared_array(f16, (2, 64, 64), swizzle=64)"),
                               "swizzle must be 128"),
    "rows not 128 bytes": (_case("    ta = shared_array(f16, (2, 64, 64), swizzle=128)",
                                 "    ta = shared_array(f16, (2, 64, 32), swizzle=128)"),
                           "its last axis must be a multiple of 64"),
    "rows not in groups of 8": (_case("    ta = shared_array(f16, (2, 64, 64), swizzle=128)",
                                      "    ta = shared_array(f16, (2, 60, 64), swizzle=128)"),
                                "the one before a multiple of 8"),
    "swizzled local array": (_case("    acc = local_array(f32, (32,))",
                                   "    acc = local_array(f32, (32,), swizzle=128)"),
                             "only shared arrays are swizzled"),
    "a not swizzled": (_case("    ta = shared_array(f16, (2, 64, 64), swizzle=128)",
                             "    ta = shared_array(f16, (2, 64, 64))").replace(
        "  # <-", "").replace("    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 64)",
                              "    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 64)  # <-"),
        "warpgroup_mma()'s a must be a swizzled shared array"),
    "n not a multiple of 8": (_case("    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 64)",
                                    "    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 60)"),
                              "n must be a multiple of 8 from 8 to 256"),
    "n past 256": (_case("    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 64)",
                         "    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 264)"),
                   "n must be a multiple of 8 from 8 to 256"),
    "n not whole column blocks": (_case(
        "    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 64)",
        "    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 32)"),
        "n must be 64, 128, 192 or 256"),
    "accumulator extent": (_case("    acc = local_array(f32, (32,))",
                                 "    acc = local_array(f32, (16,))").replace("  # <-", "").replace(
        "    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 64)",
        "    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 64)  # <-"),
        "this fragment takes 32"),
    "mixed input types": (_case("    tb = shared_array(f16, (2, 16, 64), swizzle=128)",
                                "    tb = shared_array(bf16, (2, 16, 64), swizzle=128)").replace(
        "  # <-", "").replace("    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 64)",
                              "    warpgroup_mma(acc, ta, (0, 0, 0), tb, (0, 0, 0), 64)  # <-"),
        "a and b hold one element type"),
    "swizzled beside the dynamic array": (_case(
        "    acc = local_array(f32, (32,))",
        "    acc = local_array(f32, (32,))\n    dyn = shared_array(f32, 0)"),
        "cannot also have the dynamic shared array"),
    "store without unsafe": (_GOOD.replace("    with unsafe():\n        warpgroup_store(c, (0, 0), acc)",
                                           "    warpgroup_store(c, (0, 0), acc)  # <-"),
                             "the 64 x 64 tiles of two warpgroups (or of two calls) may overlap"),
    "store into a shared array": (_GOOD.replace(
        "        warpgroup_store(c, (0, 0), acc)", "        warpgroup_store(ta, (0, 0), acc)  # <-"),
        "must be a global array"),
    "swizzled array passed to a device function": ("""
@gpu_device
def first(t: CUDASliceMut3D[f16]) -> f16:
    return t[0, 0, 0]

@gpu_kernel(Kernel1D)
def k(c: CUDASliceMut[f16]):
    ta = shared_array(f16, (2, 64, 64), swizzle=128)
    c[FlatLayout1D.uid()] = first(ta)  # <-
""", "'ta' is a swizzled shared array"),
    "f64 output": (_GOOD.replace("def k(c: CUDASliceMut2D[f32]):", "def k(c: CUDASliceMut2D[f64]):").replace(
        "        warpgroup_store(c, (0, 0), acc)", "        warpgroup_store(c, (0, 0), acc)  # <-"),
        "warpgroup_store() writes f32, f16 or bf16 arrays, not f64"),
    "wait of a variable": (_case("    warpgroup_wait(0)", "    warpgroup_wait(c.shape[0])"),
                           "warpgroup_wait()'s n must be a constant"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_warpgroup_misuse_is_a_located_transpile_error(name, tmp_path):
    body, message = CASES[name]
    err = located_transpile_error(HEADER + textwrap.dedent(body), tmp_path / "bad_wg.py", message)
    assert set(str(err).splitlines()[2].strip()) == {"^"}


def test_the_well_formed_kernel_transpiles(tmp_path):
    """The base of every case transpiles: each case fails for its one change."""
    source = HEADER + textwrap.dedent(_GOOD)
    rewrite_module(source, str(tmp_path / "good_wg.py"), "good_wg")
