"""Kernels defined in code with no file: ``python -c``, a script on standard input, ``exec`` of a
string (with :func:`gpu_native.register_source`, the escape hatch), and the error that names it
when no source can be found.

Each child runs its kernel on the simulator and prints the result, so a test sees the kernel
transpiled, built and launched, not only decorated.
"""

from __future__ import annotations

import linecache
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.decorators import DeviceFunction
from gpu_native.errors import TranspileError
from tests.helpers import child_env

# A whole program: a kernel, a launch on the simulator, the result printed.
PROGRAM = textwrap.dedent('''
    import numpy as np
    import gpu_native as gn
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId, f32

    STEP = 2.0

    @gpu_kernel(Kernel1D)
    def add_step(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + STEP

    a = gn.to_device(np.arange(4, dtype=np.float32))
    c = gn.empty(4, gn.f32)
    add_step.forall(4)(a, c)
    print("RESULT", c.to_host().tolist())
''')
EXPECTED = "RESULT [2.0, 3.0, 4.0, 5.0]"

KERNEL_ONLY = textwrap.dedent('''
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, UniqueId, f32

    @gpu_kernel(Kernel1D)
    def plus_one(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        idx: UniqueId = FlatLayout1D.uid()
        c[idx] = a[idx] + 1.0
''')


def _run(args, tmp_path, **kwargs) -> subprocess.CompletedProcess:
    env = child_env(tmp_path / "cache", GPU_NATIVE_BACKEND="sim")
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, **kwargs)


class TestCodeWithoutAFile:
    @pytest.mark.slow
    def test_python_c(self, tmp_path):
        proc = _run(["-c", PROGRAM], tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert EXPECTED in proc.stdout

    @pytest.mark.slow
    def test_python_c_after_other_options(self, tmp_path):
        # Clustered flags before -c (`-Bc CODE`) and an option with its own argument.
        proc = _run(["-W", "ignore", "-Bc", PROGRAM], tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert EXPECTED in proc.stdout

    @pytest.mark.slow
    def test_a_script_on_standard_input(self, tmp_path):
        script = tmp_path / "program.py"
        script.write_text(PROGRAM)
        with open(script) as stdin:
            proc = _run(["-"], tmp_path, stdin=stdin)
        assert proc.returncode == 0, proc.stderr
        assert EXPECTED in proc.stdout

    def test_a_script_piped_in_names_the_escape_hatch(self, tmp_path):
        # A pipe keeps nothing once Python has read it: the error says what to do instead.
        proc = _run(["-"], tmp_path, input=PROGRAM)
        assert proc.returncode == 1
        assert "cannot find the source of kernel 'add_step' (defined in <stdin>)" in proc.stderr
        assert "gn.register_source" in proc.stderr
        # None of gpu_native's frames but, on Python 3.10, the decorator's own (which a bare
        # `raise` there cannot drop: see gpu_native.tracebacks).
        frames = [line for line in proc.stderr.splitlines() if line.startswith('  File "')]
        assert frames[0].startswith('  File "<stdin>", line ')
        assert len(frames) == 1 + (sys.version_info < (3, 11))
        assert all("gpu_native/decorators.py" in line for line in frames[1:])

    def test_exec_inside_python_c_does_not_take_the_command_for_its_source(self, tmp_path):
        # Both are "<string>"; the command defines no `plus_one`, so it is not taken for the
        # exec'd string's source.
        code = f"exec({KERNEL_ONLY!r})"
        proc = _run(["-c", code], tmp_path)
        assert proc.returncode == 1
        assert "cannot find the source of kernel 'plus_one' (defined in <string>)" in \
            proc.stderr


class TestExecOfAString:
    def test_register_source_is_the_escape_hatch(self):
        namespace: dict = {"__name__": "generated"}
        exec(compile(KERNEL_ONLY, gn.register_source(KERNEL_ONLY), "exec"), namespace)
        kernel = namespace["plus_one"]
        assert isinstance(kernel, gn.Kernel)
        from gpu_native.runtime.backend import use

        with use("sim"):
            a = gn.to_device(np.arange(4, dtype=np.float32))
            c = gn.empty(4, gn.f32)
            kernel.forall(4)(a, c)
            assert c.to_host().tolist() == [1.0, 2.0, 3.0, 4.0]

    def test_register_source_under_a_given_name_shows_it_in_errors(self):
        bad = KERNEL_ONLY.replace("a[idx] + 1.0", "a[idx] + undefined_name")
        name = gn.register_source(bad, "<generated kernels>")
        assert name == "<generated kernels>"
        with pytest.raises(TranspileError) as info:
            exec(compile(bad, name, "exec"), {"__name__": "generated"})
        message = str(info.value)
        assert "<generated kernels>:7:23:" in message and "undefined_name" in message
        assert "^" in message

    def test_exec_of_a_bare_string_names_the_escape_hatch(self):
        with pytest.raises(TranspileError) as info:
            exec(KERNEL_ONLY, {"__name__": "generated"})
        message = str(info.value)
        assert "cannot find the source of kernel 'plus_one' (defined in <string>)" in message
        assert "gn.register_source(src)" in message

    def test_other_code_kept_under_the_same_name_is_not_taken_for_its_source(self, monkeypatch):
        # Python 3.13 keeps the command of `python -c` in linecache as "<string>", the name an
        # exec'd string has too: a text that does not define the kernel there is not its source.
        command = "exec(kernels)\n"
        monkeypatch.setitem(linecache.cache, "<string>", (len(command), None, [command],
                                                          "<string>"))
        with pytest.raises(TranspileError) as info:
            exec(KERNEL_ONLY, {"__name__": "generated"})
        assert "cannot find the source of kernel 'plus_one' (defined in <string>)" in \
            str(info.value)

    def test_the_source_kept_under_a_shared_name_is_taken_where_it_defines_the_kernel(
            self, monkeypatch):
        lines = KERNEL_ONLY.splitlines(keepends=True)
        monkeypatch.setitem(linecache.cache, "<string>", (len(KERNEL_ONLY), None, lines,
                                                          "<string>"))
        namespace: dict = {"__name__": "generated"}
        exec(KERNEL_ONLY, namespace)
        assert isinstance(namespace["plus_one"], gn.Kernel)

    def test_register_source_refuses_what_is_not_text(self):
        with pytest.raises(TypeError, match="source must be a str"):
            gn.register_source(b"x = 1")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="filename must be a str"):
            gn.register_source("x = 1", 3)  # type: ignore[arg-type]


CLOSURE_IN_A_FILE = textwrap.dedent('''
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32

    def make(step: float):
        @gpu_kernel(Kernel1D)
        def add(a: CUDASlice[f32], c: CUDASliceMut[f32]):
            c[FlatLayout1D.uid()] = a[FlatLayout1D.uid()] + step
        return add
''')


class TestTheFileIsTheCodeThatRan:
    """A kernel no hook rewrote is transpiled from its file: where the code Python ran is not
    that file's text (edited after Python read it, or another text compiled under its name), the
    decorator refuses it rather than build a kernel the program does not define."""

    def _load(self, path, text: str | None = None) -> dict:
        namespace: dict = {"__name__": "kernels_on_disk"}
        source = path.read_text() if text is None else text
        exec(compile(source, str(path), "exec"), namespace)
        return namespace

    def test_the_unchanged_file_runs(self, tmp_path):
        from gpu_native.runtime.backend import use

        path = tmp_path / "kernels_on_disk.py"
        path.write_text(KERNEL_ONLY + CLOSURE_IN_A_FILE.split("\n", 2)[2])
        namespace = self._load(path)
        with use("sim"):
            a = gn.to_device(np.arange(4, dtype=np.float32))
            c = gn.empty(4, gn.f32)
            namespace["plus_one"].forall(4)(a, c)
            assert c.to_host().tolist() == [1.0, 2.0, 3.0, 4.0]
            namespace["make"](0.5).forall(4)(a, c)  # a closure, compiled inside make()
            assert c.to_host().tolist() == [0.5, 1.5, 2.5, 3.5]

    @pytest.mark.parametrize("edit", [
        ("a[idx] + 1.0", "a[idx] + 9.0"),          # a constant
        ("a: CUDASlice[f32], c: CUDASliceMut[f32]", "c: CUDASlice[f32], a: CUDASliceMut[f32]"),
        ("a[idx] + 1.0", "a[idx] - 1.0"),          # an operator: the bytecode alone differs
    ])
    def test_another_text_under_the_files_name_is_refused(self, edit, tmp_path):
        path = tmp_path / "kernels_on_disk.py"
        path.write_text(KERNEL_ONLY)
        with pytest.raises(TranspileError) as info:
            self._load(path, KERNEL_ONLY.replace(*edit))
        message = str(info.value)
        assert f"{path}:4:1: error: the source of kernel 'plus_one' in {path} is not the " \
            "code Python ran" in message, message
        assert "gn.register_source(src)" in message

    @pytest.mark.slow
    def test_a_module_a_loader_rewrites_is_not_compared(self, tmp_path):
        # pytest's assertion rewriting compiles a test module's kernels (their asserts
        # included) from a rewritten tree: other code from the same, unchanged text.
        (tmp_path / "test_kernel_here.py").write_text(textwrap.dedent('''
            import gpu_native as gn
            from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, f32, FlatLayout1D
            from gpu_native import block_dim

            @gpu_kernel(Kernel1D)
            def k(out: CUDASliceMut[f32]):
                assert block_dim.x == 4
                out[FlatLayout1D.uid()] = 1.0

            def test_k():
                out = gn.zeros(4, gn.f32)
                k[1, 4](out)
                assert out.to_host().tolist() == [1.0] * 4
        '''))
        done = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_kernel_here.py"],
                    tmp_path)
        assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr

    def test_a_file_edited_after_python_read_it_is_refused(self, tmp_path):
        path = tmp_path / "kernels_on_disk.py"
        path.write_text(KERNEL_ONLY)
        code = compile(KERNEL_ONLY, str(path), "exec")  # read as the module was loaded
        path.write_text(KERNEL_ONLY.replace("a[idx] + 1.0", "a[idx] + 2.0"))
        os.utime(path, (os.path.getmtime(path) + 5,) * 2)  # the edit is seen as one
        with pytest.raises(TranspileError, match="is not the code Python ran"):
            exec(code, {"__name__": "kernels_on_disk"})


class TestMisuseOutsideTheHook:
    """A decorator call or annotation that Python itself would refuse before the decorator can
    run gets the import hook's located error, not an exception of typing or of the call."""

    SOURCE = textwrap.dedent('''
        from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, f32

        @gpu_kernel(Kernel1D)
        def k(c: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            c[i] = 1.0
    ''')

    @pytest.mark.parametrize("old, new, message", [
        ("CUDASliceMut[f32]", "CUDASliceMut[f32, f32]",
         "the second argument of CUDASliceMut[T, ...] is the layout"),
        ("gpu_kernel(Kernel1D)", "gpu_kernel(Kernel1D, bogus=1)",
         "gpu_kernel has no option 'bogus' (options: bounds_check, fastmath, max_registers, "
         "cooperative, specializations)"),
        ("gpu_kernel(Kernel1D)", "gpu_kernel(Kernel1D, Kernel1D)",
         "gpu_kernel takes one positional argument"),
        ("gpu_kernel(Kernel1D)", "gpu_kernel(f32)",
         "gpu_kernel's first argument must be Kernel1D, Kernel2D or Kernel3D"),
        # Bare: the decorator returned stood for the kernel, failing only at its launch.
        ("gpu_kernel(Kernel1D)", "gpu_kernel", "gpu_kernel needs the kernel's dimensionality"),
    ])
    def test_the_decorator_reports_what_the_hook_reports(self, old, new, message, tmp_path):
        from gpu_native.rewrite import rewrite_module

        source = self.SOURCE.replace(old, new)
        name = gn.register_source(source, f"<misuse {new}>")
        with pytest.raises(TranspileError) as info:  # annotations evaluated, as in a script
            exec(compile(source, name, "exec", dont_inherit=True), {"__name__": "misuse"})
        with pytest.raises(TranspileError) as hooked:
            rewrite_module(source, name, "misuse")
        assert message in str(info.value)
        assert str(info.value) == str(hooked.value)

    def test_a_call_that_is_not_the_decorator_written_keeps_its_type_error(self):
        source = self.SOURCE.replace("@gpu_kernel(Kernel1D)\n", "")
        namespace: dict = {"__name__": "misuse"}
        exec(compile(source, gn.register_source(source), "exec"), namespace)
        with pytest.raises(TypeError, match="got an unexpected keyword argument 'bogus'") as info:
            gn.gpu_kernel(gn.Kernel1D, bogus=1)(namespace["k"])
        package = os.path.dirname(gn.__file__)
        ours = [entry for entry in info.traceback if str(entry.path).startswith(package)]
        # Python 3.10 keeps the raising entry point's own frame, whatever strip() does (see
        # tests/project/test_tracebacks.py); 3.11 drops it too.
        assert len(ours) <= (sys.version_info < (3, 11)), ours


    def test_gpu_device_refuses_arguments_off_the_hook(self):
        def twice(x):
            return x * 2.0

        assert isinstance(gn.gpu_device()(twice), DeviceFunction)
        with pytest.raises(TypeError, match="gpu_device takes no arguments, but is given an "
                                            "option 'bogus': write @gpu_device"):
            gn.gpu_device(bogus=1)
        with pytest.raises(TypeError, match="gpu_device takes no arguments, but is given an "
                                            "argument"):
            gn.gpu_device("twice")

class TestDecoratorAliases:
    SOURCE = textwrap.dedent('''
        import gpu_native as gn
        from gpu_native import Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32
        kern = gn.gpu_kernel
        dev = gn.gpu_device

        @dev
        def twice(x: f32) -> f32:
            return x * 2.0

        @kern(Kernel1D)
        def k(a: CUDASlice[f32], c: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            c[i] = twice(a[i])
    ''')

    def test_a_name_assigned_the_decorator_once_is_the_decorator(self, backend):
        from gpu_native.rewrite import rewrite_module

        assert [k.name for k in rewrite_module(self.SOURCE, "aliased.py", "aliased").kernels] \
            == ["k"]
        namespace: dict = {"__name__": "aliased"}
        exec(compile(self.SOURCE, gn.register_source(self.SOURCE), "exec"), namespace)
        a = gn.to_device(np.arange(3, dtype=np.float32))
        c = gn.empty(3, gn.f32)
        namespace["k"].forall(3)(a, c)
        assert c.to_host().tolist() == [0.0, 2.0, 4.0]

    @pytest.mark.parametrize("how", ["imported", "assigned twice"])
    def test_another_name_is_a_located_error_at_the_decorator(self, how, tmp_path, monkeypatch):
        (tmp_path / "aliases_elsewhere.py").write_text("import gpu_native as gn\n"
                                                       "kern = gn.gpu_kernel\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        if how == "imported":
            source = self.SOURCE.replace("kern = gn.gpu_kernel",
                                         "from aliases_elsewhere import kern")
        else:
            source = self.SOURCE.replace("kern = gn.gpu_kernel", "kern = gn.gpu_kernel\n" * 2)
        name = gn.register_source(source, f"<alias {how}>")
        with pytest.raises(TranspileError) as info:
            exec(compile(source, name, "exec"), {"__name__": "aliased"})
        line = source.splitlines().index("@kern(Kernel1D)") + 1
        assert str(info.value).startswith(
            f"{name}:{line}:1: error: could not find kernel 'k' in {name}: gpu_native finds a "
            "kernel by a decorator that names gpu_native's gpu_kernel"), str(info.value)
        assert "assigned once at module level (kern = gn.gpu_kernel)" in str(info.value)


class TestCellsOfOneNamespace:
    """What a notebook does, without Jupyter: each cell compiled under a name of its own (as
    IPython's are) and run in one namespace."""

    HEADER = ("from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, "
              "CUDASliceMut, FlatLayout1D, UniqueId, f32)\n")
    DEVICE = "@gpu_device\ndef twice(x: f32) -> f32:\n    return x * 2.0\n"
    KERNEL = ("@gpu_kernel(Kernel1D)\n"
              "def scaled(a: CUDASlice[f32], c: CUDASliceMut[f32]):\n"
              "    idx: UniqueId = FlatLayout1D.uid()\n"
              "    c[idx] = twice(a[idx]) * SCALE + SHIFT[1]\n")

    @staticmethod
    def _cell(text: str, namespace: dict, number: int) -> None:
        name = gn.register_source(text, f"<cell {number} {id(namespace)}>")
        exec(compile(text, name, "exec"), namespace)

    def test_names_of_earlier_cells_and_their_new_values(self, backend):
        namespace: dict = {"__name__": "__main__"}
        self._cell(self.HEADER, namespace, 1)
        self._cell("SCALE = 3.0\nSHIFT = (0, 1.0)\n", namespace, 2)
        self._cell(self.DEVICE, namespace, 3)
        self._cell(self.KERNEL, namespace, 4)
        a = gn.to_device(np.arange(3, dtype=np.float32))
        c = gn.empty(3, gn.f32)
        namespace["scaled"].forall(3)(a, c)
        assert c.to_host().tolist() == [1.0, 7.0, 13.0]
        # A constant changed in its cell reaches the kernel when the kernel's cell runs again.
        self._cell("SCALE = 5.0\nSHIFT = (0, 1.0)\n", namespace, 2)
        self._cell(self.KERNEL, namespace, 4)
        namespace["scaled"].forall(3)(a, c)
        assert c.to_host().tolist() == [1.0, 11.0, 21.0]
