"""Text the user chose reaches the CUDA C++ intact and compilable: ``print()`` strings with
control characters (a NUL once ended the ``printf`` format mid-literal and NVRTC failed on the
generated code: "missing closing quote"), and module and file names with a newline or a trailing
backslash, which the ``//`` comment and the ``#line`` directive carry (a newline ended them; 100
NVRTC errors about generated code followed).  The simulator prints what Python prints."""

from __future__ import annotations

import importlib
import textwrap

import pytest

import gpu_native as gn
from gpu_native.runtime.backend import use
from tests.helpers import compiled_cleanly

pytestmark = pytest.mark.usefixtures("isolated_cache")

PRINTS = textwrap.dedent("""\
    from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, f32, grid_dim, thread_idx


    @gpu_kernel(Kernel1D)
    def shout(a: CUDASliceMut[f32]):
        assert grid_dim.x == 1
        if thread_idx.x == 0:
            print("nul\\x00mid\\ttab%d\\x1b[0m\\x7f\\\\\\"q", 7, "\\x00")
            a[0] = 1.0
    """)


def test_print_strings_with_control_characters_compile():
    cuda = compiled_cleanly(PRINTS, "prints.py", "prints")[0]
    line = next(text for text in cuda.splitlines() if "printf(" in text)
    assert "\x00" not in cuda and "\x1b" not in cuda and "\t" not in line
    # The NULs are printed through %c, each with its own 0 after the value of 7 they surround.
    assert 'printf("nul%cmid\\011tab%%d\\033[0m\\177\\\\\\"q %lld %c\\n", 0, ' in line
    assert line.endswith(", 0);")


def test_print_strings_with_control_characters_on_the_simulator(tmp_path, monkeypatch, capfd):
    (tmp_path / "prints.py").write_text(PRINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    with use("sim"):
        mod = importlib.import_module("prints")
        a = gn.zeros(4, gn.f32)
        mod.shout[1, 32](a)
        gn.synchronize()
    assert capfd.readouterr().out == 'nul\x00mid\ttab%d\x1b[0m\x7f\\"q 7 \x00\n'


@pytest.mark.parametrize("name", ["new\nline", "tail\\", "cr\rx"])
def test_module_and_file_names_with_control_characters_compile(name):
    source = PRINTS.replace('print("nul\\x00mid\\ttab%d\\x1b[0m\\x7f\\\\\\"q", 7, "\\x00")',
                            "pass")
    cuda = compiled_cleanly(source, f"/tmp/{name}.py", name)[0]
    first, directive = cuda.splitlines()[0], next(
        text for text in cuda.splitlines() if text.startswith("#line"))
    assert first.startswith("// gpu_native ") and first.endswith("(generated; do not edit)")
    assert directive.endswith('.py"') and "\\" not in directive
