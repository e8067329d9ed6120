"""Tracebacks of user errors show the user's frames and the message, not gpu_native's.

Each test provokes an error the way a user would and asserts on the traceback it gets: which
frames (file, line, function), how many, and that none is gpu_native's — and that
``GPU_NATIVE_TRACEBACK=full`` and errors that are gpu_native's own defects keep every frame.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native import tracebacks
from gpu_native.errors import InternalError, TranspileError

PACKAGE = str(Path(gn.__file__).resolve().parent) + os.sep
HERE = str(Path(__file__).resolve())

BAD_KERNEL = textwrap.dedent("""\
    from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, f32

    @gpu_kernel(Kernel1D)
    def bad(c: CUDASliceMut[f32]):
        c[0] = 1.0
    """)
BAD_LINE = 5

KERNELS = textwrap.dedent("""\
    from typing import TypeVar
    from gpu_native import (gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D,
                            UniqueId, f32, f64)

    T = TypeVar("T", f32, f64)

    @gpu_kernel(Kernel1D)
    def add_kernel(a: CUDASlice[f32], b: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + b[idx]

    @gpu_kernel(Kernel1D)
    def shifted(a: CUDASlice[f32], c: CUDASliceMut[f32], n: int):
        idx: UniqueId = FlatLayout1D.uid()
        if idx < n:
            c[idx] = a[idx + 5]

    @gpu_kernel(Kernel1D)
    def scale(x: CUDASliceMut[T], factor: T):
        i: UniqueId = FlatLayout1D.uid()
        x[i] = x[i] * factor
    """)
ADD_LINE = 7  # add_kernel's decorator
SCALE_LINE = 18


# Python 3.10 re-raises the traceback an entry point caught, whatever strip() made of it: the
# outermost entry point's own frame stays (gpu_native.tracebacks says so).  3.11 drops it too.
ENTRY_FRAME_STAYS = sys.version_info < (3, 11)
# Python 3.10 puts the call of a decorator on the line of the `def`, 3.11 on the decorator's.
DECORATOR_ON_DEF_LINE = sys.version_info < (3, 11)


def frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(exc.__traceback__))


def user_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The frames of a filtered user error, which holds none of gpu_native's but on Python 3.10
    the one of the entry point that filtered it (taken out here)."""
    found = frames(exc)
    ours = [i for i, f in enumerate(found) if f.filename.startswith(PACKAGE)]
    assert len(ours) == ENTRY_FRAME_STAYS, [found[i] for i in ours]
    for i in reversed(ours):
        del found[i]
    return found


def internal(exc: BaseException) -> list[traceback.FrameSummary]:
    return [f for f in frames(exc) if f.filename.startswith(PACKAGE)]


def line_of(marker: str) -> int:
    """The line of this file that holds ``marker`` (a comment at the end of the call)."""
    for number, text in enumerate(Path(HERE).read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# {marker}") and "line_of" not in text:
            return number
    raise AssertionError(marker)


@pytest.fixture
def no_full(monkeypatch):
    monkeypatch.delenv(tracebacks.MODE_VARIABLE, raising=False)


@pytest.fixture
def kernels(kernel_module, no_full):
    return kernel_module(KERNELS)


class TestTranspileErrors:
    def test_transpile_module_error_shows_only_the_call(self, no_full):
        from gpu_native.rewrite import transpile_module

        with pytest.raises(TranspileError) as info:
            transpile_module(BAD_KERNEL, "bad.py", "bad")  # transpile-call
        found = user_frames(info.value)
        assert [(f.filename, f.lineno) for f in found] == [(HERE, line_of("transpile-call"))]
        assert "bad.py:5:5: error: store into 'c'" in str(info.value)

    def test_full_shows_every_frame(self, monkeypatch):
        from gpu_native.rewrite import transpile_module

        monkeypatch.setenv(tracebacks.MODE_VARIABLE, "full")
        with pytest.raises(TranspileError) as info:
            transpile_module(BAD_KERNEL, "bad.py", "bad")
        files = {f.filename for f in internal(info.value)}
        # The checker's frames are all there, down to the rule that refused the store.
        assert len(internal(info.value)) > 8
        assert PACKAGE + os.path.join("check", "unique.py") in files

    @pytest.mark.parametrize("value", [" FULL ", "Filtered"])
    def test_the_mode_is_read_without_case_or_spaces(self, monkeypatch, value):
        from gpu_native.rewrite import transpile_module

        monkeypatch.setenv(tracebacks.MODE_VARIABLE, value)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(TranspileError) as info:
                transpile_module(BAD_KERNEL, "bad.py", "bad")
        # Filtered keeps none of gpu_native's frames (on Python 3.10, the entry point's);
        # full keeps the checker's too.
        assert (len(internal(info.value)) > 8) == (value.strip() == "FULL")

    @pytest.mark.parametrize("value", ["ful", "1", "on"])
    def test_an_unknown_mode_is_filtered_with_a_warning(self, monkeypatch, value):
        from gpu_native.errors import GpuNativeWarning
        from gpu_native.rewrite import transpile_module

        monkeypatch.setenv(tracebacks.MODE_VARIABLE, value)
        with pytest.warns(GpuNativeWarning, match=rf"ignoring GPU_NATIVE_TRACEBACK='{value}': "
                                                  r"expected one of filtered, full; using "
                                                  r"filtered") as seen:
            for _ in range(2):
                with pytest.raises(TranspileError) as info:
                    transpile_module(BAD_KERNEL, "bad.py", "bad")
                assert len(internal(info.value)) == ENTRY_FRAME_STAYS
        assert len([w for w in seen if issubclass(w.category, GpuNativeWarning)]) == 1
        # Warnings as errors: the user's error still comes, filtered.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            monkeypatch.setenv(tracebacks.MODE_VARIABLE, value + "x")
            with pytest.raises(TranspileError) as info:
                transpile_module(BAD_KERNEL, "bad.py", "bad")
            assert len(internal(info.value)) == ENTRY_FRAME_STAYS

    def test_expand_error_shows_only_the_call(self, no_full):
        from gpu_native.expand import Expansion

        with pytest.raises(TranspileError) as info:
            Expansion.of(BAD_KERNEL, "bad.py")  # expand-call
        assert [(f.filename, f.lineno) for f in user_frames(info.value)] == [
            (HERE, line_of("expand-call"))]

    def test_import_of_a_bad_kernel_shows_the_import_and_the_line(self, kernel_module, no_full,
                                                                   tmp_path):
        with pytest.raises(TranspileError) as info:
            kernel_module(BAD_KERNEL, name="gn_tb_bad_import")
        found = frames(info.value)
        assert not internal(info.value)
        assert (found[-1].filename, found[-1].lineno) == (str(tmp_path / "gn_tb_bad_import.py"),
                                                          BAD_LINE)

    @pytest.mark.slow
    @pytest.mark.parametrize("mode", ["", "full"])
    def test_a_script_without_the_hook(self, tmp_path, mode):
        script = tmp_path / "script.py"
        script.write_text(BAD_KERNEL)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_TRACEBACK")}
        env["PYTHONPATH"] = os.pathsep.join([str(Path(PACKAGE).parent),
                                             env.get("PYTHONPATH", "")])
        if mode:
            env["GPU_NATIVE_TRACEBACK"] = mode
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 1
        head = proc.stderr.split("gpu_native.errors.TranspileError")[0]
        files = [line for line in head.splitlines() if line.startswith('  File "')]
        if mode == "full":
            assert len(files) > 10 and any(PACKAGE in line for line in files)
        else:
            # The decorator line of the script, and nothing of gpu_native's (on Python 3.10, the
            # line of the def and the decorator's own frame).
            line = 4 if DECORATOR_ON_DEF_LINE else 3
            assert files[0] == f'  File "{script}", line {line}, in <module>'
            assert len(files) == 1 + ENTRY_FRAME_STAYS
            assert all(PACKAGE in entry for entry in files[1:])
        assert "script.py:5:5: error: store into 'c'" in proc.stderr

    @pytest.mark.slow
    def test_a_script_reports_a_bad_kernel_at_its_own_decorator(self, tmp_path):
        # The decorator transpiles the whole script at the first kernel; the error of a later
        # kernel belongs to that kernel's decorator, after the lines before it have run.
        script = tmp_path / "two.py"
        script.write_text(textwrap.dedent("""\
            import numpy as np
            import gpu_native as gn
            from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, f32, FlatLayout1D

            @gpu_kernel(Kernel1D)
            def good(c: CUDASliceMut[f32]):
                c[FlatLayout1D.uid()] = 2.0

            out = gn.to_device(np.zeros(64, np.float32))
            good.forall(64)(out)
            print("good ran:", out.to_host().sum())

            @gpu_kernel(Kernel1D)
            def bad(c: CUDASliceMut[f32]):
                c[0] = 1.0
            """))
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_TRACEBACK")}
        env["PYTHONPATH"] = os.pathsep.join([str(Path(PACKAGE).parent),
                                             env.get("PYTHONPATH", "")])
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 1
        assert "good ran: 128.0" in proc.stdout, proc.stdout + proc.stderr
        head = proc.stderr.split("gpu_native.errors.TranspileError")[0]
        files = [line for line in head.splitlines() if line.startswith('  File "')]
        line = 14 if DECORATOR_ON_DEF_LINE else 13
        assert files[0] == f'  File "{script}", line {line}, in <module>', proc.stderr
        assert "two.py:15:5: error: store into 'c'" in proc.stderr


class TestLaunchErrors:
    def test_wrong_argument_type(self, kernels):
        a = gn.to_device(np.ones(8, np.float32))
        c = gn.empty(8, gn.f32)
        with pytest.raises(TypeError, match="argument 'b' of add_kernel is a NumPy array") as info:
            kernels.add_kernel[1, 8](a, np.ones(8, np.float32), c)  # wrong-argument
        found = user_frames(info.value)
        # The launch line, then the launcher, which names the kernel and its decorator line
        # (the one frame a launch cannot drop: the launcher is a Python function).
        assert [(f.filename, f.lineno, f.name) for f in found] == [
            (HERE, line_of("wrong-argument"), "test_wrong_argument_type"),
            (kernels.__file__, ADD_LINE, "add_kernel")]
        assert found[1].line == "@gpu_kernel(Kernel1D)"
        text = "".join(traceback.format_exception(info.value))
        assert "^" not in text.split("@gpu_kernel(Kernel1D)")[1].split("TypeError")[0]

    def test_wrong_argument_in_full_mode_shows_the_checks(self, kernels, monkeypatch):
        monkeypatch.setenv(tracebacks.MODE_VARIABLE, "full")
        a = gn.to_device(np.ones(8, np.float32))
        with pytest.raises(TypeError) as info:
            kernels.add_kernel[1, 8](a, np.ones(8, np.float32), a)
        assert [f.name for f in internal(info.value)] == ["slow", "array_argument"]

    def test_scalar_out_of_range_through_a_generic_kernel(self, kernels):
        x = gn.to_device(np.ones(8, np.float32))
        with pytest.raises(TypeError, match="argument 'factor' of scale") as info:
            kernels.scale[1, 8](x, "two")  # generic-launch
        found = user_frames(info.value)
        assert (found[0].filename, found[0].lineno) == (HERE, line_of("generic-launch"))
        assert (found[-1].filename, found[-1].lineno) == (kernels.__file__, SCALE_LINE)

    def test_no_specialisation_chosen(self, kernels):
        with pytest.raises(TypeError, match="cannot tell which specialisation") as info:
            kernels.scale.forall(8)([1.0] * 8, 2.0)  # forall-launch
        assert [(f.filename, f.lineno) for f in user_frames(info.value)] == [
            (HERE, line_of("forall-launch"))]

    def test_launch_shape_error_without_the_cache_lookup_as_context(self, kernels):
        with pytest.raises(gn.LaunchError, match="2048 threads") as info:
            kernels.add_kernel[1, 2048]  # bad-block
        assert [(f.filename, f.lineno) for f in user_frames(info.value)] == [
            (HERE, line_of("bad-block"))]
        text = "".join(traceback.format_exception(info.value))
        assert "During handling" not in text and "KeyError" not in text

    @pytest.mark.parametrize("form", ["launch", "call"])
    def test_other_launch_forms(self, kernels, form):
        k = kernels.add_kernel
        with pytest.raises((gn.LaunchError, TypeError)) as info:
            if form == "launch":
                k.launch(gn.GridDim1D(1), gn.BlockDim1D(4096), 0, gn.DEFAULT_STREAM)
            else:
                k(1, 2, 3)
        assert len(user_frames(info.value)) == 1

    def test_kernel_error_at_synchronize(self, kernels, backend):
        a = gn.to_device(np.ones(8, np.float32))
        c = gn.empty(8, gn.f32)
        kernels.shifted[1, 8](a, c, 8)
        with pytest.raises(gn.KernelIndexError, match="index 8 is out of bounds") as info:
            gn.synchronize()  # synchronize
        assert [(f.filename, f.lineno) for f in user_frames(info.value)] == [
            (HERE, line_of("synchronize"))]

    def test_kernel_error_at_to_host(self, kernels, backend):
        a = gn.to_device(np.ones(8, np.float32))
        c = gn.empty(8, gn.f32)
        kernels.shifted[1, 8](a, c, 8)
        with pytest.raises(gn.KernelIndexError) as info:
            c.to_host()  # to-host
        assert [(f.filename, f.lineno) for f in user_frames(info.value)] == [
            (HERE, line_of("to-host"))]

    def test_the_launcher_runs_the_same_bytecode(self, kernels):
        """Renaming and relocating the launcher's frame leaves the fast path's code as it was
        generated."""
        factory = kernels.add_kernel._factory
        generated = next(c for c in factory.__code__.co_consts if hasattr(c, "co_code"))
        launcher = kernels.add_kernel[1, 8]
        assert launcher.__code__.co_code == generated.co_code
        assert launcher.__code__.co_name == "add_kernel"
        assert {line for _, _, line in launcher.__code__.co_lines()} == {ADD_LINE}


class TestDeclarationErrors:
    def test_a_refused_const_array_shows_the_user_line(self, no_full):
        with pytest.raises(TypeError, match="const_array: dtype object") as info:
            gn.const_array(np.zeros(3, dtype=object))  # const-array-call
        found = user_frames(info.value)
        assert (found[-1].filename, found[-1].lineno) == (HERE, line_of("const-array-call"))

    def test_a_refused_struct_shows_the_user_line(self, no_full):
        with pytest.raises(TypeError) as info:
            @gn.gpu_struct  # struct-call
            class Bad:
                x: str
        found = user_frames(info.value)
        assert found[-1].filename == HERE
        assert found[-1].lineno in (line_of("struct-call"), line_of("struct-call") + 1)


class TestInternalErrorsKeepTheirFrames:
    def test_internal_error(self, monkeypatch, no_full):
        from gpu_native.check import program
        from gpu_native.rewrite import transpile_module

        def broken(self):
            raise InternalError("the checker failed", stage="test")

        monkeypatch.setattr(program.Program, "check", broken)
        with pytest.raises(InternalError) as info:
            transpile_module(BAD_KERNEL, "bad.py", "bad")
        assert [f.name for f in frames(info.value)][-2:] == ["transpile_module", "broken"]

    def test_a_type_error_from_a_bug(self, monkeypatch, no_full):
        import gpu_native.rewrite as rewrite

        # emit_kernel is not callable: the TypeError comes from an operation in gpu_native, not
        # from a raise statement, so it is a bug and keeps the frame where it happened.
        monkeypatch.setattr(rewrite, "emit_kernel", None)
        source = BAD_KERNEL.replace("c[0] = 1.0", "pass")
        with pytest.raises(TypeError, match="not callable") as info:
            rewrite.transpile_module(source, "ok.py", "ok")
        assert frames(info.value)[-1].name == "transpile_module"
        assert not tracebacks.is_user_error(info.value)

    def test_a_driver_error_is_not_a_user_error(self):
        assert not tracebacks.is_user_error(gn.CudaError("CUDA_ERROR_UNKNOWN", 999, "x"))
        assert not tracebacks.is_user_error(gn.CompileError("NVRTC refused it"))
        assert tracebacks.is_user_error(gn.CudaVersionError("install gpu-native[cu12]"))
        assert tracebacks.is_user_error(TranspileError("x"))


@pytest.mark.parametrize("make", [
    lambda: gn.GridDim1D("x"),
    lambda: gn.BlockDim1D(2.5),
    lambda: gn.GridDim2D(4, None),
    lambda: gn.BlockDim2D(4.0, 4),
    lambda: gn.GridDim3D(1, 2, "3"),
    lambda: gn.BlockDim3D(8, 8, 1.0),
], ids=["GridDim1D", "BlockDim1D", "GridDim2D", "BlockDim2D", "GridDim3D", "BlockDim3D"])
def test_a_wrong_launch_extent_shows_only_the_call(no_full, make):
    """The launch dimensions are entry points: a wrong extent names itself at the user's call
    (it showed two frames of gpu_native/lang/layouts.py).  Each constructor strips inline, so a
    plain int costs no wrapper call."""
    with pytest.raises(TypeError, match="must be an int") as info:
        make()
    assert len(internal(info.value)) == ENTRY_FRAME_STAYS, internal(info.value)
