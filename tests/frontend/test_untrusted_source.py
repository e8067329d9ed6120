"""Untrusted source files: ``gpu-native expand``, ``gpu-native precompile`` and the import hook
read hostile modules without running them, and fail on them with a located error, never a crash
or a hang.

* ``gpu-native expand`` and ``gpu-native precompile`` never execute the user's modules: not the
  kernel module, not the module it imports device functions from, not the package ``__init__``
  around them (each would write a marker file).  Module-level constants are evaluated statically:
  one defined by a function call is refused, not run, also when the import hook rewrites it, and
  folding them is bounded.
* Sources that break parsers (deep nesting, deep host code), bytes that are not UTF-8, files that
  are not regular files and syntax errors are refused at their line and column, as CPython would.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import ROOT, child_env
from tests.helpers.hostile import cli, executed, marker_code

# Every test gets a cache directory of its own (tests/conftest.py).
pytestmark = [pytest.mark.usefixtures("isolated_cache"), pytest.mark.untrusted]


# ---- hostile source: never executed ---------------------------------------------------------------


def write_hostile_project(root: Path) -> None:
    pkg = root / "hostile"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(marker_code("package-init") + "\n")
    (pkg / "helpers.py").write_text(textwrap.dedent(f'''\
        import os
        from gpu_native import gpu_device, f32

        {marker_code("helpers")}
        os.system("touch " + os.path.join(os.path.dirname(__file__), "EXECUTED-helpers-system"))
        SCALE = 3


        @gpu_device
        def scale(x: f32) -> f32:
            return x * SCALE
        '''))
    (pkg / "kern.py").write_text(textwrap.dedent(f'''\
        from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32
        from hostile.helpers import scale

        {marker_code("kern")}
        N = 4 * 8 + 1


        class Sneaky:
            {marker_code("class-body")}


        def default(x=({marker_code("default-argument")})):
            return x


        @gpu_kernel(Kernel1D)
        def scaled(a: CUDASlice[f32], c: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            c[i] = scale(a[i]) + N
        '''))


@pytest.fixture
def hostile(tmp_path) -> Path:
    write_hostile_project(tmp_path)
    return tmp_path


@pytest.mark.parametrize("args", [
    ["expand", "hostile/kern.py"],
    ["expand", "hostile/kern.py", "--cuda"],
    ["expand", "hostile/kern.py", "--kernel", "scaled"],
    ["expand", "hostile/kern.py", "--proofs"],
    ["expand", "hostile/kern.py", "--exact"],
], ids=["expand", "expand-cuda", "expand-kernel", "expand-proofs", "expand-exact"])
@pytest.mark.slow
def test_expand_never_executes_the_module_or_its_imports(hostile, isolated_cache, args):
    out = cli(args, hostile, isolated_cache)
    assert out.returncode == 0, out.stderr
    assert "scaled" in out.stdout
    if "--cuda" in args:
        assert "33" in out.stdout  # N = 4 * 8 + 1, folded statically
    assert executed(hostile) == [], executed(hostile)


@pytest.mark.parametrize("target", ["hostile", "hostile.kern", "hostile/kern.py"])
@pytest.mark.slow
def test_precompile_never_executes_the_module_or_its_imports(hostile, isolated_cache, target):
    pytest.importorskip("cuda.bindings.nvrtc")
    out = cli(["precompile", target, "--arch", "sm_90", "--out", "out", "-q", "-j", "1"],
              hostile, isolated_cache)
    assert out.returncode == 0, out.stderr
    manifest = json.loads((hostile / "out" / "manifest.json").read_text())
    assert [k["label"] for k in manifest["kernels"]] == ["hostile.kern.scaled"]
    assert executed(hostile) == [], executed(hostile)


CONSTANT_BY_CALL = textwrap.dedent(f'''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D, f32


    def compute():
        {marker_code("constant-call")}
        return 3


    N = compute()


    @gpu_kernel(Kernel1D)
    def k(o: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        o[i] = f32(N)
    ''')


@pytest.mark.slow
def test_a_constant_defined_by_a_call_is_refused_not_run(tmp_path, isolated_cache):
    (tmp_path / "by_call.py").write_text(CONSTANT_BY_CALL)
    out = cli(["expand", "by_call.py"], tmp_path, isolated_cache)
    assert out.returncode == 1
    assert "by_call.py:15" in out.stderr and "'N'" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert executed(tmp_path) == []


@pytest.mark.slow
def test_the_import_hook_refuses_it_before_the_module_body_runs(tmp_path, isolated_cache):
    (tmp_path / "by_call_import.py").write_text(CONSTANT_BY_CALL)
    script = "import gpu_native, by_call_import"
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                         env=child_env(isolated_cache, PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}"),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "TranspileError" in out.stderr and "'N'" in out.stderr, out.stderr
    assert executed(tmp_path) == []


CONSTANT_BOMB_LINES = ["from gpu_native import gpu_kernel, Kernel1D, CUDASliceMut, FlatLayout1D",
                       "from gpu_native import f32", "A0 = 2 ** 256"]
CONSTANT_BOMB_LINES += [f"A{k} = A{k - 1} * A{k - 1}" for k in range(1, 41)]
CONSTANT_BOMB_LINES += ["", "", "@gpu_kernel(Kernel1D)", "def k(o: CUDASliceMut[f32]):",
                        "    i = FlatLayout1D.uid()", "    o[i] = 1.0", ""]


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.slow
def test_constant_folding_of_hostile_source_is_bounded(tmp_path, isolated_cache):
    (tmp_path / "bomb.py").write_text("\n".join(CONSTANT_BOMB_LINES))
    try:
        out = subprocess.run([sys.executable, "-m", "gpu_native.cli", "expand", "bomb.py"],
                             cwd=tmp_path, env=child_env(isolated_cache), capture_output=True,
                             text=True, timeout=10, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail("expand of a 50-line file ran for more than 10 s")
    assert out.returncode == 0, out.stderr[-2000:]


# ---- hostile source: shapes that break parsers, bytes that are not UTF-8, files that are not files --
#
# CPython's parser decides what a module is: what it rejects is its SyntaxError at its location;
# what it accepts imports, however deep its host code (libcst, whose native parser crashes on some
# of it, only ever sees kernel and device functions).  Kernels nest at most MAX_DEPTH levels, or
# the error says "expression too deep" at the expression.  Every case runs in a child process
# with a timeout: a crash or a hang fails the test instead of killing the session.

SMALL_KERNEL = textwrap.dedent('''\
    from gpu_native import gpu_kernel, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D, f32


    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = a[i] * 2.0
    ''')
HOST_LINE = SMALL_KERNEL.count("\n") + 2  # the line each hostile host statement is written on

IMPORT_AND_RUN = textwrap.dedent('''\
    import sys
    import numpy as np
    import gpu_native as gn
    from gpu_native.runtime.backend import use
    sys.setrecursionlimit(sys.getrecursionlimit())
    def imported(depth):  # import from `depth` frames down, as an application might
        return __import__(sys.argv[1]) if depth == 0 else imported(depth - 1)
    m = imported(int(sys.argv[2]))
    with use("sim"):
        a = gn.to_device(np.arange(8, dtype=np.float32))
        c = gn.empty(8, gn.f32)
        m.k.launch(gn.GridDim1D(1), gn.BlockDim1D(8))(a, c)
        print("RESULT", c.to_host().tolist())
    ''')


def run_hostile(args, cwd, cache, timeout=60, **env) -> subprocess.CompletedProcess:
    """``python ARGS`` with the repository and ``cwd`` importable; a crash is a negative exit
    status, a hang fails the test."""
    env = child_env(cache, PYTHONPATH=f"{ROOT}{os.pathsep}{cwd}", **env)
    try:
        return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args} ran for more than {timeout} s")


def import_module(name, cwd, cache, *, hook=True, depth=0) -> subprocess.CompletedProcess:
    extra = {} if hook else {"GPU_NATIVE_DISABLE_HOOK": "1"}
    out = run_hostile(["-c", IMPORT_AND_RUN, name, str(depth)], cwd, cache, **extra)
    assert out.returncode >= 0, f"crashed with signal {-out.returncode}: {out.stderr[-2000:]}"
    return out


def expand(name, cwd, cache, *extra) -> subprocess.CompletedProcess:
    out = run_hostile(["-m", "gpu_native.cli", "expand", name, *extra], cwd, cache)
    assert out.returncode >= 0, f"crashed with signal {-out.returncode}: {out.stderr[-2000:]}"
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    return out


def precompile_file(name, cwd, cache) -> subprocess.CompletedProcess:
    pytest.importorskip("cuda.bindings.nvrtc")
    out = run_hostile(["-m", "gpu_native.cli", "precompile", name, "--arch", "sm_90", "--out",
                       "pre", "-q", "-j", "1"], cwd, cache, timeout=300)
    assert out.returncode >= 0, f"crashed with signal {-out.returncode}: {out.stderr[-2000:]}"
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    return out


def nested(n: int) -> str:
    return "(" * n + "1" + ")" * n


@pytest.mark.slow
@pytest.mark.parametrize("how", ["import", "expand", "precompile"])
def test_three_thousand_nested_brackets_are_pythons_syntax_error_not_a_crash(tmp_path,
                                                                            isolated_cache, how):
    (tmp_path / "deep_brackets.py").write_text(SMALL_KERNEL + f"\nX = {nested(3000)}\n")
    where = f"deep_brackets.py:{HOST_LINE}:205: error: syntax error: too many nested parentheses"
    if how == "import":
        out = import_module("deep_brackets", tmp_path, isolated_cache)
        assert out.returncode == 1
        assert out.stderr.rstrip().splitlines()[-1] == \
            "SyntaxError: too many nested parentheses", out.stderr[-2000:]
        assert f'deep_brackets.py", line {HOST_LINE}' in out.stderr
        assert "TranspileError" not in out.stderr and "importhook" not in out.stderr
    elif how == "expand":
        out = expand("deep_brackets.py", tmp_path, isolated_cache)
        assert out.returncode == 1 and out.stderr.startswith(where), out.stderr[:500]
    else:
        out = precompile_file("deep_brackets.py", tmp_path, isolated_cache)  # absolute path
        assert out.returncode == 1 and out.stderr.startswith(f"{tmp_path}/{where}"), \
            out.stderr[:500]


# Host code CPython compiles, however deep it is: none of it may be walked recursively.
DEEP_HOST = {
    "500-term sum": "X = " + " + ".join(["1"] * 500),
    "150-deep nested list": "X = " + "[" * 150 + "]" * 150,
    # CPython accepts this; libcst's native parser dies on it (so it must never see host code).
    "20000-term and": "X = " + " and ".join(["1"] * 20000),
}


@pytest.mark.parametrize("how", ["hook", "no hook", "expand"])
@pytest.mark.parametrize("shape", sorted(DEEP_HOST))
@pytest.mark.slow
def test_deep_host_code_that_python_compiles_imports(tmp_path, isolated_cache, shape, how):
    name = "deep_host_" + re.sub(r"\W", "_", shape)
    source = SMALL_KERNEL + "\n" + DEEP_HOST[shape] + "\n"
    (tmp_path / f"{name}.py").write_text(source)
    if how == "expand":
        out = expand(f"{name}.py", tmp_path, isolated_cache)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "_spec=" in out.stdout and out.stdout.endswith(DEEP_HOST[shape] + "\n")
    else:
        out = import_module(name, tmp_path, isolated_cache, hook=how == "hook")
        assert out.returncode == 0, out.stderr[-3000:]
        assert "RESULT [0.0, 2.0, 4.0" in out.stdout


def kernel_with(expression: str) -> str:
    return SMALL_KERNEL.replace("a[i] * 2.0", expression)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["hook", "no hook", "expand"])
def test_a_400_term_sum_in_a_kernel_is_a_located_error(tmp_path, isolated_cache, how):
    (tmp_path / "deep_kernel.py").write_text(kernel_with("a[i]" + " + 1.0" * 400))
    where = "deep_kernel.py:7:12: error: expression too deep"
    if how == "expand":
        out = expand("deep_kernel.py", tmp_path, isolated_cache)
        assert out.returncode == 1 and out.stderr.startswith(where), out.stderr[:500]
        caret = out.stderr.splitlines()[2]
        assert caret.strip() and set(caret.strip()) == {"^"} and caret.index("^") == 4 + 11
        return
    out = import_module("deep_kernel", tmp_path, isolated_cache, hook=how == "hook")
    assert out.returncode == 1
    assert "TranspileError: " in out.stderr and where in out.stderr, out.stderr[-3000:]
    assert "RecursionError" not in out.stderr


@pytest.mark.slow
def test_a_deep_kernel_within_the_limit_runs_when_imported_from_deep_in_a_program(
        tmp_path, isolated_cache):
    from gpu_native.frontend.source import MAX_DEPTH

    terms = MAX_DEPTH - 10
    (tmp_path / "deep_ok.py").write_text(kernel_with("a[i]" + " + 1.0" * terms))
    out = import_module("deep_ok", tmp_path, isolated_cache, depth=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"RESULT [{float(terms)}, {1.0 + terms}" in out.stdout


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["and", "strings", "device chain", "blocks"])
def test_other_deep_kernels_are_located_errors_not_crashes(tmp_path, isolated_cache, shape):
    if shape == "and":  # one BoolOp for CPython, 2,000 nested operations for libcst
        source = kernel_with("a[i] if " + " and ".join(["a[i] > 0.0"] * 2000) + " else 0.0")
    elif shape == "strings":  # one constant for CPython, nested concatenations for libcst
        source = SMALL_KERNEL.replace("c[i] = a[i] * 2.0", "assert a[i] > 0.0, " + '"x" ' * 1500
                                      + "\n    c[i] = a[i]")
    elif shape == "device chain":  # each function shallow; the checker nests per call
        chain = ["@gpu_device\ndef d0(x: f32) -> f32:\n    return x\n"]
        chain += [f"@gpu_device\ndef d{n}(x: f32) -> f32:\n    return d{n - 1}(x) + 1.0\n"
                  for n in range(1, 300)]
        source = SMALL_KERNEL.replace("gpu_kernel, ", "gpu_kernel, gpu_device, ").replace(
            "a[i] * 2.0", "d299(a[i])") + "\n\n" + "\n\n".join(chain)
    else:  # 90 nested blocks: CPython allows 100
        body = "".join("    " * (d + 1) + "if a[i] > 0.0:\n" for d in range(90))
        source = SMALL_KERNEL.replace("    c[i] = a[i] * 2.0\n", body + "    " * 91 + "c[i] = 1.0\n")
    (tmp_path / "deep_other.py").write_text(source)
    out = expand("deep_other.py", tmp_path, isolated_cache)
    assert out.returncode == 1
    assert re.match(r"deep_other\.py:\d+:\d+: error: (expression too deep|statements nested too "
                    r"deeply)", out.stderr), out.stderr[:1000]


# ---- source bytes: decoded as Python decodes them, and only from regular files

LATIN1 = "# -*- coding: latin-1 -*-\n# Größe: café\n" + SMALL_KERNEL + 'NAME = "café"\n'


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
@pytest.mark.parametrize("how", ["import", "expand", "precompile"])
@pytest.mark.slow
def test_a_source_with_a_coding_cookie_is_decoded_as_python_does(tmp_path, isolated_cache,
                                                                 encoding, how):
    source = LATIN1.replace("latin-1", encoding) + "EURO = '€'\n" * (encoding == "cp1252")
    (tmp_path / "coded.py").write_bytes(source.encode(encoding))
    if how == "import":
        out = import_module("coded", tmp_path, isolated_cache)
        assert out.returncode == 0 and "RESULT [0.0, 2.0" in out.stdout, out.stderr[-2000:]
    elif how == "expand":
        out = expand("coded.py", tmp_path, isolated_cache)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "# Größe: café" in out.stdout and "_spec=" in out.stdout
    else:
        out = precompile_file("coded.py", tmp_path, isolated_cache)
        assert out.returncode == 0, out.stderr[-2000:]
        assert (tmp_path / "pre" / "manifest.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["import", "expand", "precompile"])
def test_a_source_that_is_not_utf8_and_declares_nothing_is_a_located_error(tmp_path,
                                                                           isolated_cache, how):
    (tmp_path / "undeclared.py").write_bytes(
        (SMALL_KERNEL + 'NAME = "café"\n').encode("latin-1"))
    line = HOST_LINE - 1
    if how == "import":  # Python's own SyntaxError, as without gpu_native
        out = import_module("undeclared", tmp_path, isolated_cache)
        assert out.returncode == 1
        assert out.stderr.rstrip().splitlines()[-1].startswith("SyntaxError: "), out.stderr
        assert "UnicodeDecodeError" not in out.stderr and "importhook" not in out.stderr
        return
    out = expand("undeclared.py", tmp_path, isolated_cache) if how == "expand" else \
        precompile_file("undeclared.py", tmp_path, isolated_cache)
    assert out.returncode == 1
    shown = "undeclared.py" if how == "expand" else f"{tmp_path}/undeclared.py"
    assert out.stderr.startswith(f"{shown}:{line}:12: error: cannot decode the file: byte 0xe9 "
                                 "is not valid utf-8"), out.stderr[:500]


@pytest.mark.slow
@pytest.mark.parametrize("line", [1, 3])  # where a coding cookie could be, and below
@pytest.mark.parametrize("how", ["import", "expand"])
def test_a_byte_that_is_not_utf8_in_a_comment_is_located_on_import_too(tmp_path,
                                                                       isolated_cache, how,
                                                                       line):
    # Python's compile() of the bytes skips a comment's bytes (a plain import of the file
    # refuses them): the import says what expand says, not that the kernel has no source.
    (tmp_path / "comment.py").write_bytes(
        b"import math\n" * (line - 1) + b"# caf\xe9\n" + SMALL_KERNEL.encode())
    out = import_module("comment", tmp_path, isolated_cache) if how == "import" else \
        expand("comment.py", tmp_path, isolated_cache)
    assert out.returncode == 1
    assert f"comment.py:{line}:6: error: cannot decode the file: byte 0xe9 is not valid utf-8, " \
        "and the file declares no other encoding" in out.stderr, out.stderr[-2000:]
    assert "cannot find the source" not in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("command", ["expand", "precompile"])
def test_a_fifo_or_a_device_is_refused_as_not_a_regular_file(tmp_path, isolated_cache, kind,
                                                             command):
    if kind == "fifo":
        path = tmp_path / "pipe.py"
        os.mkfifo(path)  # no writer: reading it would block forever
    else:
        path = Path("/dev/zero")  # endless
    if command == "expand":
        out = expand(str(path), tmp_path, isolated_cache)
    else:
        out = precompile_file(str(path), tmp_path, isolated_cache)
    assert out.returncode != 0
    assert "not a regular file" in out.stderr, out.stderr


def test_a_directory_named_like_a_module_is_refused_as_a_directory(tmp_path, isolated_cache):
    (tmp_path / "d.py").mkdir()
    out = expand("d.py", tmp_path, isolated_cache)
    assert out.returncode == 1
    assert out.stderr == ("gpu-native: cannot read d.py: a directory (gpu_native reads Python "
                          "source files only)\n"), out.stderr


@pytest.mark.slow
def test_precompile_of_a_directory_refuses_a_fifo_among_its_modules(tmp_path, isolated_cache):
    pkg = tmp_path / "pipes"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kern.py").write_text(SMALL_KERNEL)
    os.mkfifo(pkg / "stuck.py")
    out = precompile_file("pipes", tmp_path, isolated_cache)
    assert out.returncode == 1 and "stuck.py: not a regular file" in out.stderr, out.stderr


# ---- syntax errors at CPython's line and column, through the hook and expand

SYNTAX_ERRORS = {
    # name: (the kernel's statement, CPython's message, line, column (1-based))
    "unclosed parenthesis": ("c[i] = (a[i] * 2.0", "'(' was never closed", 7, 12),
    "tabs and spaces": ("\tc[i] = a[i] * 2.0", "inconsistent use of tabs and spaces in "
                        "indentation", 7, None),
    "NUL byte": ("c[i] = a[i]\0 * 2.0", "source code cannot contain null bytes", 7, 16),
}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["import", "expand"])
@pytest.mark.parametrize("case", sorted(SYNTAX_ERRORS))
def test_a_syntax_error_is_reported_at_pythons_line(tmp_path, isolated_cache, case, how):
    statement, message, line, col = SYNTAX_ERRORS[case]
    source = SMALL_KERNEL.replace("    c[i] = a[i] * 2.0", "    " + statement) + \
        "\n\ndef host():\n    return 1\n"
    if case == "tabs and spaces":
        source = source.replace("    \tc[i]", "\tc[i]")
    (tmp_path / "broken_kernel.py").write_text(source)
    if how == "import":
        out = import_module("broken_kernel", tmp_path, isolated_cache)
        assert out.returncode == 1
        last = out.stderr.rstrip().splitlines()
        assert last[-1].endswith(f"Error: {message}"), out.stderr
        assert f'broken_kernel.py", line {line}\n' in out.stderr, out.stderr
        assert "TranspileError" not in out.stderr and "importhook" not in out.stderr
        if col is not None:  # the caret under CPython's column
            assert last[-2].index("^") - last[-3].index(source.splitlines()[line - 1].strip()[0]) \
                == col - 1 - (len(source.splitlines()[line - 1]) -
                              len(source.splitlines()[line - 1].lstrip())), out.stderr
    else:
        out = expand("broken_kernel.py", tmp_path, isolated_cache)
        assert out.returncode == 1
        assert out.stderr.startswith(f"broken_kernel.py:{line}:{col or 1}: error: syntax error"), \
            out.stderr
        assert message in out.stderr.splitlines()[0]
