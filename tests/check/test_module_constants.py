"""Module constants a kernel folds: assigned once, with ``=``, at the top level of the module.

Every other way Python binds a global name could leave the kernel with a value the module no
longer has, so each is refused where the kernel uses the name, through the hook's rewrite and in
a script the decorator transpiles alike.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gpu_native.frontend.parse import scan_module
from gpu_native.rewrite import rewrite_module
from tests.helpers import child_env, located_transpile_error

HEADER = """\
import contextlib
from gpu_native import *
N = 4
"""

KERNEL = """
@gpu_kernel(Kernel1D)
def k(c: CUDASliceMut[i32]):
    i: UniqueId = FlatLayout1D.uid()
    c[i] = N  # <-
"""

# Each binds N again after `N = 4`; the hint names how.
REBINDINGS = {
    "tuple unpacking": ("N, M = 9, 1", "assigned by unpacking (line 4)"),
    "starred unpacking": ("*N, = [9]", "assigned by unpacking (line 4)"),
    "for target": ("for N in (9,):\n    pass", "bound by a for loop (line 4)"),
    "walrus": ("print((N := 9))", "assigned by an assignment expression (:=) (line 4)"),
    "walrus in a comprehension": ("[(N := x) for x in (9,)]", "assignment expression"),
    "walrus in a default": ("def g(a=(N := 9)):\n    pass", "assignment expression"),
    "with target": ("with contextlib.nullcontext(9) as N:\n    pass",
                    "bound by a with statement (line 4)"),
    "from import as": ("from math import e as N", "imported (line 4)"),
    "import as": ("import os as N", "imported (line 4)"),
    "global in a function": ("def f():\n    global N\n    N = 9\nf()",
                             "assigned in function f, which declares it global (line 6)"),
    "global in a class": ("class C:\n    global N\n    N = 9",
                          "in class C, which declares it global"),
    "global with a walrus": ("def f():\n    global N\n    [(N := x) for x in (9,)]",
                             "in function f, which declares it global"),
    "del": ("del N", "deleted by a del statement (line 4)"),
    "class": ("class N:\n    pass", "defined by a class statement (line 4)"),
    "def": ("def N():\n    pass", "defined by a def statement (line 4)"),
    "except as": ("try:\n    pass\nexcept ValueError as N:\n    pass",
                  "bound by an except clause in a try block (line 6)"),
    "match capture": ("match 9:\n    case N:\n        pass", "bound by a match pattern"),
    "match star": ("match [9]:\n    case [*N]:\n        pass", "bound by a match pattern"),
    "match rest": ("match {}:\n    case {**N}:\n        pass", "bound by a match pattern"),
    "augmented": ("N += 5", "changed by an augmented assignment (line 4)"),
    "annotated": ("N: int = 9", "assigned (line 3) and assigned (line 4)"),
    "in an if block": ("if True:\n    N = 9", "assigned in an if block (line 5)"),
}


@pytest.mark.parametrize("name", sorted(REBINDINGS))
def test_a_constant_bound_again_is_refused_at_its_use(name, tmp_path):
    extra, how = REBINDINGS[name]
    source = HEADER + extra + "\n" + KERNEL
    err = located_transpile_error(source, tmp_path / "consts.py",
                                  "'N' is assigned more than once at module level")
    assert how in (err.hint or ""), err.hint


# None of these binds the module's N: the kernel folds 4.
@pytest.mark.parametrize("extra", [
    "N: int",
    "def f():\n    N = 9",
    "class C:\n    N = 9",
    "f = lambda N=3: N",
    "[N for N in (9,)]",
    "def f():\n    global N\n    print(N)",
    "import math\nif True:\n    import math",
    "from gpu_native import i32\nfrom gpu_native import i32",
])
def test_bindings_of_other_scopes_leave_the_constant_alone(extra, tmp_path):
    source = HEADER + extra + "\n" + KERNEL
    result = rewrite_module(source, str(tmp_path / "consts.py"), "consts")
    assert result.kernels


@pytest.mark.parametrize("body, how", [
    ("try:\n    N = 4  \nexcept Exception:\n    pass\n", "assigned in a try block (line 3)"),
    ("if True:\n    N = 4\n", "assigned in an if block (line 3)"),
    ("N, *M = 9, 1\n", "assigned by unpacking (line 2)"),
    ("(N, M), P = (9, 1), 2\n", "assigned by unpacking (line 2)"),
    ("for N in (9,):\n    pass\n", "bound by a for loop (line 2)"),
])
def test_a_name_bound_once_but_not_by_a_top_level_assignment_is_no_constant(body, how,
                                                                           tmp_path):
    source = "from gpu_native import *\n" + body + KERNEL
    located_transpile_error(source, tmp_path / "consts.py",
                            f"'N' is not a constant a kernel can use: it is {how}")


@pytest.mark.parametrize("body, value", [
    ("N, M = 9, 1\n", 9), ("(M, N) = [1, 7]\n", 7), ("M, N = 2, 3 * 4\n", 12),
    ("P = 5\nN, M = P + 1, P\n", 6),
])
def test_names_unpacked_once_from_a_literal_tuple_are_constants(body, value, tmp_path, sim,
                                                                 kernel_module):
    # `BX, BY = 16, 8`, as Numba takes it: each name is assigned its own value once.
    import numpy as np

    import gpu_native as gn

    module = kernel_module("from gpu_native import *\n" + body + KERNEL.replace("  # <-", ""))
    c = gn.zeros(4, gn.i32)
    module.k.forall(4)(c)
    np.testing.assert_array_equal(c.to_host(), [value] * 4)


def test_a_name_unpacked_from_a_call_is_a_host_variable(tmp_path):
    # As `N = f()` is: a value the module computes when it runs.
    source = "from gpu_native import *\nN, M = f(), 1\n" + KERNEL
    located_transpile_error(source, tmp_path / "consts.py", "'N' is a host variable of this "
                            "module")


def test_unpacking_takes_the_values_before_it_assigns(tmp_path):
    # `M, N = 1, M`: the right side reads M before this statement binds it (a NameError in
    # Python): N is no constant.
    source = "from gpu_native import *\nM, N = 1, M\n" + KERNEL
    located_transpile_error(source, tmp_path / "consts.py", "'N'")


STAR_SHADOWED = """\
from gpu_native import *
{rebinding}

@gpu_kernel(Kernel1D)
def k(c: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    c[i] = {use}  # <-
"""


@pytest.mark.parametrize("rebinding, use, message", [
    # The module's f32 is Python's float: the kernel must not compile the star import's f32.
    ("f32 = float", "f32(1.0) / f32(3.0)", "'f32' is a host variable of this module"),
    ("def f32(x):\n    return x * 2", "f32(1.5)", "'f32' is a host function of this module"),
    ("f32 = f64\nf32 = f64", "f32(1.5)", "'f32' is assigned more than once"),
])
def test_a_name_of_a_star_import_bound_again_is_the_modules(rebinding, use, message,
                                                            tmp_path):
    """After `from gpu_native import *`, a name the module binds again is the module's, as in
    Python: a kernel that uses it is refused where it would be without the star import (the
    kernel compiled the star import's `f32`)."""
    source = STAR_SHADOWED.format(rebinding=rebinding, use=use)
    located_transpile_error(source, tmp_path / "shadow.py", message)


def test_a_star_imported_name_bound_to_another_gpu_native_name_is_that_one(sim,
                                                                         kernel_module):
    # `f32 = f64` after the star import: the module's f32 is gpu_native's f64, as in Python.
    import numpy as np

    import gpu_native as gn

    module = kernel_module(STAR_SHADOWED.format(rebinding="f32 = f64",
                                                use="f32(1.0) / f32(3.0)"))
    c = gn.zeros(4, gn.f64)
    module.k.forall(4)(c)
    np.testing.assert_array_equal(c.to_host(), [1.0 / 3.0] * 4)  # f64's, not f32's


def test_a_device_function_named_as_a_star_imported_name_is_called(sim, kernel_module):
    import numpy as np

    import gpu_native as gn

    module = kernel_module(STAR_SHADOWED.format(
        rebinding="@gpu_device\ndef dot(a: f64, b: f64) -> f64:\n    return a * b + 1.0",
        use="dot(f64(2.0), f64(3.0))"))
    c = gn.zeros(4, gn.f64)
    module.k.forall(4)(c)
    np.testing.assert_array_equal(c.to_host(), [7.0] * 4)


def test_a_constant_imported_from_a_module_that_binds_it_twice(tmp_path):
    (tmp_path / "sizes.py").write_text("N = 4\nfor N in (9,):\n    pass\n")
    source = "from gpu_native import *\nfrom sizes import N\n" + KERNEL
    sys.path.insert(0, str(tmp_path))
    try:
        located_transpile_error(source, tmp_path / "consts.py",
                                "'N' is assigned more than once at module level")
    finally:
        sys.path.remove(str(tmp_path))


PROGRAM = textwrap.dedent("""
    import gpu_native as gn
    from gpu_native import *
    N = 4
    N, M = 9, 1

    @gpu_kernel(Kernel1D)
    def k(c: CUDASliceMut[i32]):
        i: UniqueId = FlatLayout1D.uid()
        c[i] = N

    c = gn.zeros(4, gn.i32)
    k.forall(4)(c)
    print("RESULT", c.to_host().tolist())
""")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["script", "import"])
def test_a_rebound_constant_is_refused_in_a_script_and_through_the_hook(how, tmp_path):
    (tmp_path / "rebound.py").write_text(PROGRAM)
    args = ["rebound.py"] if how == "script" else ["-c", "import rebound"]
    proc = subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True,
                          env=child_env(tmp_path / "cache", GPU_NATIVE_BACKEND="sim"),
                          timeout=300)
    assert "RESULT" not in proc.stdout, proc.stdout
    assert "rebound.py:10:12: error: 'N' is assigned more than once at module level" in \
        proc.stderr, proc.stderr


# Constants computed from library values, as Numba's frozen globals are: folded by the
# transpiler, which rewrites the module before it runs.
LIBRARY_HEADER = """\
import math
import numpy as np
from math import tau, sqrt
from gpu_native import *
"""


@pytest.mark.parametrize("body, value", [
    ("X = math.pi / 2", math.pi / 2),
    ("X = int(math.log2(16))", 4),
    ("X = np.float32(1e-3)", float(np.float32(1e-3))),  # rounded as an f32, exactly
    ("X = sqrt(2.0) + tau", math.sqrt(2.0) + math.tau),
    ("X = max(3, 2 * 4, abs(-7))", 8),
    ("X = round(2.675, 2)", round(2.675, 2)),
    ("X = (np.int32(3), math.floor(2.5))", (3, 2)),
    ("X = -np.inf", -math.inf),
    ("X = np.uint8(200) + 100", 300),
    # Every math function of the kernel language folds in constants too (the registry's).
    ("X = math.ldexp(0.75, 4) + math.erf(0.5)", math.ldexp(0.75, 4) + math.erf(0.5)),
    ("X = math.atanh(0.5)", math.atanh(0.5)),
])
def test_a_constant_computed_from_library_values_is_folded(body, value):
    scan = scan_module(LIBRARY_HEADER + body + "\n", "lib.py")
    assert scan.constants["X"] == value and type(scan.constants["X"]) is type(value)


@pytest.mark.parametrize("body", [
    "X = math.factorial(5)",          # not one of the folded functions
    "X = int(1e300)",                 # no kernel constant's size
    "X = max()",
    "X = min((1, 2))",                # a tuple argument
    "X = float('inf')",               # a string argument
    "X = np.zeros(3)",                # an array
    "X = math.sqrt(x=4.0)",           # a keyword
    "def max(*a):\n    return 0\nX = max(1, 2)",  # the module's own max
    "min = 3\nX = min(1, 2)",
    "X = os.sep",
    "X = (-8.0) ** (1 / 3)",          # complex in Python (was an internal error)
    "C = (1.0, (-1) ** 0.5)\nX = C",
])
def test_a_value_the_transpiler_cannot_compute_stays_a_host_variable(body, tmp_path):
    scan = scan_module(LIBRARY_HEADER + "import os\n" + body + "\n", "lib.py")
    assert "X" not in scan.constants
    kernel = "\n@gpu_kernel(Kernel1D)\ndef k(c: CUDASliceMut[f64]):\n" \
             "    i: UniqueId = FlatLayout1D.uid()\n    c[i] = X  # <-\n"
    located_transpile_error(LIBRARY_HEADER + "import os\n" + body + "\n" + kernel,
                            tmp_path / "lib.py", "math's functions and constants")


@pytest.mark.parametrize("body, why", [
    ("X = math.log(0)", "math.log(0) raises ValueError: math domain error (line 6)"),
    ("X = 2 * (1 + math.sqrt(-1.0))", "math.sqrt(-1.0) raises ValueError: math domain error"),
    ("X = (1, 1 / 0)", "1 / 0 raises ZeroDivisionError: division by zero"),
    ("X = 1e300 ** 2", "1e+300 ** 2 raises OverflowError"),
    ("X = int(math.inf)", "int(inf) raises OverflowError: cannot convert float infinity"),
    ("X = np.int8(300)", "np.int8(300) raises OverflowError: 300 overflows int8"),
    ("X = np.float16(1e6)", "np.float16(1000000.0) raises OverflowError: 1000000.0 overflows "
                            "float16"),
])
def test_a_constant_whose_computation_fails_is_refused_with_the_error(body, why, tmp_path):
    # It said only that the transpiler "cannot compute" it, as for a value it does not fold.
    kernel = "\n@gpu_kernel(Kernel1D)\ndef k(c: CUDASliceMut[f64]):\n" \
             "    i: UniqueId = FlatLayout1D.uid()\n    c[i] = X  # <-\n"
    error = located_transpile_error(LIBRARY_HEADER + "import os\n" + body + "\n" + kernel,
                                    tmp_path / "lib.py", "value cannot be computed: " + why)
    assert "correct the expression" in str(error)


def test_a_kernel_reads_constants_computed_from_library_values(sim, kernel_module):
    import gpu_native as gn

    module = kernel_module(LIBRARY_HEADER + textwrap.dedent("""\
        HALF_PI = math.pi / 2
        LOG = int(math.log2(16))
        EPS = np.float32(1e-3)

        @gpu_kernel(Kernel1D)
        def k(c: CUDASliceMut[f32]):
            i: UniqueId = FlatLayout1D.uid()
            c[i] = f32(HALF_PI) + f32(LOG) * EPS
        """))
    c = gn.zeros(4, gn.f32)
    module.k.forall(4)(c)
    expected = np.float32(math.pi / 2) + np.float32(4) * np.float32(1e-3)
    np.testing.assert_array_equal(c.to_host(), [expected] * 4)


def test_another_name_for_a_gpu_native_type_or_function(sim, kernel_module):
    # Numba code names its dtype once (`dtype = float32`) and passes it to cuda.shared.array.
    import gpu_native as gn

    module = kernel_module(textwrap.dedent("""\
        import gpu_native as gn
        from gpu_native import *

        DT = f32
        IT = gn.i32
        SYNC = sync_threads

        @gpu_kernel(Kernel1D)
        def k(a: CUDASlice[DT], out: CUDASliceMut[DT], idx: CUDASliceMut[IT]):
            s = shared_array(DT, (64,))
            t = thread_idx.x
            i = FlatLayout1D.uid()
            if t < 64:
                s[t] = a[i] * DT(2.0)
            SYNC()
            if t < 64:
                out[i] = s[63 - t]
                idx[i] = IT(t) * 3
        """))
    a = np.random.default_rng().standard_normal(64).astype(np.float32)
    out, idx = gn.empty(64, gn.f32), gn.empty(64, gn.i32)
    module.k.launch(gn.GridDim1D(1), gn.BlockDim1D(64))(gn.to_device(a), out, idx)
    np.testing.assert_array_equal(out.to_host(), (a * np.float32(2))[::-1])
    np.testing.assert_array_equal(idx.to_host(), np.arange(64) * 3)
    scan = scan_module("from gpu_native import f32\nimport numpy as np\nDT = f32\nNP = np.float32\n"
                       "X = max\n", "alias.py")
    assert (scan.imports["DT"].module, scan.imports["DT"].attr) == ("gpu_native", "f32")
    assert "NP" not in scan.imports and "X" not in scan.imports


def test_a_type_alias_bound_twice_is_refused(tmp_path):
    source = ("from gpu_native import *\nDT = f32\nDT = f64\n\n@gpu_kernel(Kernel1D)\n"
              "def k(c: CUDASliceMut[f32]):\n    i: UniqueId = FlatLayout1D.uid()\n"
              "    c[i] = DT(1.0)  # <-\n")
    located_transpile_error(source, tmp_path / "alias.py", "'DT' is assigned more than once")
