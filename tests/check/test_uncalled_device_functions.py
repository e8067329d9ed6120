"""``@gpu_device`` functions that no kernel of their module calls are checked on their own: by
``gpu-native expand``, by the import hook and by every other caller of the rewrite (the rules are
in gpu_native/check/uncalled.py and docs/language.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from gpu_native.errors import TranspileError
from gpu_native.rewrite import rewrite_module

HEAD = textwrap.dedent("""\
    from typing import TypeVar

    from gpu_native import (gpu_device, gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut,
                            FlatLayout1D, FlatLayout2D, UniqueId, f32, f64, i32, i64)

    T = TypeVar("T", i32, f32)
    U = TypeVar("U")
    """)


def _rewrite(tmp_path, body: str, name: str = "devonly"):
    source = HEAD + textwrap.dedent(body)
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return source, path, lambda: rewrite_module(source, str(path), name)


def _line_of(source: str, text: str) -> int:
    return next(n for n, s in enumerate(source.splitlines(), 1) if text in s)


@pytest.mark.untrusted
@pytest.mark.slow
def test_expand_checks_a_module_of_device_functions_only(tmp_path):
    # It printed the module back and exited 0: nothing was checked until a kernel called `bad`.
    (tmp_path / "onlydev.py").write_text(textwrap.dedent("""\
        from gpu_native import gpu_device, f32, i32


        @gpu_device
        def bad(x: f32) -> i32:
            return x + undefined_name
        """))
    proc = subprocess.run([sys.executable, "-m", "gpu_native.cli", "expand", "onlydev.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.splitlines()[:3] == [
        "onlydev.py:6:16: error: name 'undefined_name' is not defined",
        "        return x + undefined_name",
        "                   ^^^^^^^^^^^^^^",
    ]


@pytest.mark.parametrize("body, culprit, message", [
    pytest.param("""
        @gpu_device
        def bad(x: f32) -> i32:
            return x * 2.0
        """, "return x * 2.0", "would truncate", id="return type"),
    pytest.param("""
        @gpu_device
        def put(out: CUDASliceMut[f32], j: i64, v: f32):
            out[j] = v
        """, "out[j] = v", "not provably unique", id="unique writes"),
    pytest.param("""
        @gpu_device
        def forever(x: f32) -> f32:
            return forever(x)
        """, "return forever(x)", "recursion is not supported", id="recursion"),
    pytest.param("""
        @gpu_device
        def wrong(x) -> f32:
            return x
        """, "def wrong(x)", "parameter 'x' needs a type annotation", id="annotation"),
])
def test_an_uncalled_device_function_is_type_and_safety_checked(tmp_path, body, culprit,
                                                                message):
    source, path, rewrite = _rewrite(tmp_path, body)
    with pytest.raises(TranspileError) as info:
        rewrite()
    err = info.value
    assert message in err.message, str(err)
    assert (err.span.file, err.span.line) == (str(path), _line_of(source, culprit)), str(err)
    assert str(err).splitlines()[2].strip().startswith("^")


def test_a_module_with_a_kernel_checks_the_device_functions_it_does_not_call(tmp_path):
    source, _, rewrite = _rewrite(tmp_path, """
        @gpu_device
        def used(x: f32) -> f32:
            return x + 1.0


        @gpu_device
        def unused(x: f32) -> f32:
            return x + nowhere


        @gpu_kernel(Kernel1D)
        def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            out[i] = used(a[i])
        """, "withkernel")
    with pytest.raises(TranspileError) as info:
        rewrite()
    assert info.value.span.line == _line_of(source, "x + nowhere")


def test_good_device_functions_pass_in_the_kernel_kind_they_fit(tmp_path):
    # A 2-D layout fits a Kernel2D caller; a UniqueId parameter makes a write unique; a device
    # function that calls another checks it with its binding.
    source, _, rewrite = _rewrite(tmp_path, """
        @gpu_device
        def flat2(w: i64) -> i64:
            x, y = FlatLayout2D.uid()
            return y * w + x


        @gpu_device
        def put(out: CUDASliceMut[f32], i: UniqueId, v: f32):
            out[i] = v


        @gpu_device
        def twice(x: T) -> T:
            return x + x


        @gpu_device
        def four_times(x: T) -> T:
            return twice(twice(x))
        """)
    result = rewrite()
    assert result.source == source and not result.kernels


def test_a_generic_device_function_is_checked_for_each_type_its_typevar_allows(tmp_path):
    # `<<` is for integers: T allows f32 too, and no kernel binds T, so f32 is checked as well.
    source, _, rewrite = _rewrite(tmp_path, """
        @gpu_device
        def shifted(x: T) -> T:
            return x << 1
        """)
    with pytest.raises(TranspileError) as info:
        rewrite()
    err = info.value
    assert err.span.line == _line_of(source, "x << 1")
    assert err.hint.endswith("shifted was checked with T = f32, one of the types its TypeVars "
                             "allow (no kernel of this module calls it)"), err.hint


def test_the_types_no_kernel_bound_are_checked(tmp_path):
    _, _, rewrite = _rewrite(tmp_path, """
        @gpu_device
        def shifted(x: T) -> T:
            return x << 1


        @gpu_kernel(Kernel1D)
        def k(a: CUDASlice[i32], out: CUDASliceMut[i32]):
            i = FlatLayout1D.uid()
            out[i] = shifted(a[i])
        """, "generic")
    with pytest.raises(TranspileError) as info:
        rewrite()
    assert "T = f32" in info.value.hint


def test_an_unconstrained_typevar_passes_with_one_type_and_names_are_still_checked(tmp_path):
    _, _, rewrite = _rewrite(tmp_path, """
        @gpu_device
        def shifted(x: U) -> U:
            return x << 1
        """, "free_ok")
    assert not rewrite().kernels
    source, _, rewrite = _rewrite(tmp_path, """
        @gpu_device
        def misspelt(x: U) -> U:
            return x + y
        """, "free_bad")
    with pytest.raises(TranspileError) as info:
        rewrite()
    assert info.value.message == "name 'y' is not defined"
    assert info.value.span.line == _line_of(source, "return x + y")
