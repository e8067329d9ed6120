"""Bad kernels: every misuse is a TranspileError with file:line:col, a caret, and advice.

Each case marks the line the error must point at with ``# <-``.
"""

from __future__ import annotations

import textwrap

import pytest

from gpu_native.errors import TranspileError
from gpu_native.rewrite import rewrite_module
from tests.helpers import located_transpile_error

HEADER = """\
import math
import numpy as np
from typing import TypeVar
from gpu_native import *
from gpu_native import (gpu_kernel, gpu_device, Kernel1D, Kernel2D, CUDASlice, CUDASliceMut,
                        CUDASlice2D, CUDASliceMut2D, FlatLayout1D, FlatLayout2D, UniqueId, f32,
                        f64, i32, i64, u8, u32, u64, shared_array, sync_threads, thread_idx, shfl_down,
                        unsafe, BlockLayout1D, block_idx)

def host_helper(x):
    return x
"""

CASES = {
    "option given to gpu_device": ("""
@gpu_device(inline=True)  # <-
def twice(x: f32) -> f32:
    return x * 2.0

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    a[FlatLayout1D.uid()] = twice(1.0)
""", "gpu_device takes no arguments, but device function 'twice' is given an option 'inline'"),
    "argument given to gpu_device": ("""
@gpu_device(f32)  # <-
def twice(x: f32) -> f32:
    return x * 2.0
""", "gpu_device takes no arguments"),
    "strided layout argument": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32, f64]):  # <-
    a[FlatLayout1D.uid()] = 1.0
""", "only Strided (from gpu_native) is supported"),
    "strided view to a contiguous device parameter": ("""
@gpu_device
def first(a: CUDASlice[f32]) -> f32:
    return a[0]

@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32, Strided], out: CUDASliceMut[f32]):
    out[FlatLayout1D.uid()] = first(a)  # <-
""", "annotate 'a' with Strided"),
    "loop name reused over wider bounds": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = thread_idx.x
    a[FlatLayout1D.uid()] = 1.0
    for i in range(len(a)):  # <-
        pass
""", "the loop variable 'i' is i32 but this range() yields i64"),
    "unsupported statement": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    try:  # <-
        pass
    except Exception:
        pass
""", "try statements are not supported"),
    "lambda": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    f = lambda x: x  # <-
""", "lambda expressions are not supported"),
    "list comprehension": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    xs = [i for i in range(3)]  # <-
""", "list comprehensions are not supported"),
    "undefined name": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = undefined_thing  # <-
""", "name 'undefined_thing' is not defined"),
    "numpy call": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = np.cumsum(a[i])  # <-
""", "numpy.cumsum is a host-side name"),
    "host function call": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = host_helper(a[i])  # <-
""", "'host_helper' is a host function of this module"),
    "missing annotation": ("""
@gpu_kernel(Kernel1D)
def k(a):  # <-
    pass
""", "parameter 'a' needs a type annotation"),
    "device function argument count": ("""
@gpu_device
def twice(x: f32) -> f32:
    return x * 2.0

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = twice(a[i], a[i])  # <-
""", "twice() takes 1 argument but 2 were given"),
    "float to int assignment": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    n = 0
    n = a[i]  # <-
    out[i] = n
""", "would truncate it"),
    "float sum started as an int": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice2D[f32], out: CUDASliceMut[f32]):
    r = FlatLayout1D.uid()
    acc = 0
    for j in range(a.shape[1]):
        acc += a[r, j]  # <-
    out[r] = acc
""", "hint: 'acc' is i32 from its first assignment (line 16): a variable keeps one type; for a "
     "f32 sum start it as one, `acc = f32(0)` or `acc: f32 = 0`"),
    "mask passed as a shuffle's width": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = shfl_down(a[i], 1, 0xffffffff)  # <-
""", "shfl_down()'s width is 4294967295: a width is the number of lanes of a segment, a power "
     "of two from 1 to 32\n"),
    "non-unique store": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    a[0] = 1.0  # <-
""", "not provably unique"),
    "static shared memory over 48 KiB": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    s = shared_array(f32, 8192)
    t = shared_array(f64, (64, 33))  # <-
""", "to 49664 bytes (with the 1 shared array declared before it), more than the 49152 bytes"),
    "store into read-only": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32]):
    i = FlatLayout1D.uid()
    a[i] = 1.0  # <-
""", "'a' is read-only"),
    "2-D layout in Kernel1D": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    u = FlatLayout2D.uid()  # <-
""", "FlatLayout2D is a 2-D layout but this is a Kernel1D kernel"),
    "integer true division": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    a[i] = n / 2  # <-
""", "`/` between integers is not supported"),
    "kernel returns a value": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    return 1  # <-
""", "kernels cannot return a value"),
    "break outside loop": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    break  # <-
""", "`break` outside a loop"),
    "negative constant index": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = a[-1]  # <-
""", "kernels do not wrap negative indices"),
    "constant index past a shared array": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    s = shared_array(f32, (16,))
    i = FlatLayout1D.uid()
    a[i] = s[16]  # <-
""", "index 16 is out of bounds for axis 0 of 's' with size 16"),
    "slice in kernel": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    b = a[1:3]  # <-
""", "slices (a[i:j]) are not supported"),
    "f-string": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    print(f"{a}")  # <-
""", "f-strings are not supported"),
    "while else": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    while False:
        pass
    else:  # <-
        pass
""", "`while ... else` is not supported"),
    "loop over an array": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    for x in a:  # <-
        pass
""", "kernels loop over range(...), FlatLayout1D.grid_stride(n) or a tuple, not over the array"),
    "nested function": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    def inner():  # <-
        pass
""", "nested function definitions are not supported"),
    "shared array in a loop": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    for t in range(2):
        s = shared_array(f32, (16,))  # <-
""", "declare shared arrays at the top level"),
    "with other than unsafe": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    with open("x"):  # <-
        pass
""", "the only context manager in kernels is `with unsafe():`"),
    "string value": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    s = "hello"  # <-
""", "strings are only allowed as assert messages"),
    "or on numbers": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[i32], out: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    out[i] = a[i] or 5  # <-
""", "returns one of the values in Python"),
    "mixed i64 and u64": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[i64], b: CUDASlice[u64], out: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    out[i] = f64(a[i] + b[i])  # <-
""", "mixing i64 and u64 has no common integer type"),
    # Each place that types operands together says so at the operands, not as an internal error.
    "mixed literals of an if-expression": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f64], s: i64):
    out[FlatLayout1D.uid()] = f64(1 if s > 0 else 2**63)  # <-
""", "mixing i32 and u64 has no common integer type"),
    "negative literal in min of a u64": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f64], n: u64):
    out[FlatLayout1D.uid()] = f64(min(n, -1))  # <-
""", "mixing i32 and u64 has no common integer type"),
    "math function of i64 and u64": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f64], s: i64, n: u64):
    out[FlatLayout1D.uid()] = math.fmod(s, n)  # <-
""", "mixing i64 and u64 has no common integer type"),
    "u64 literal shifted by an i64": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f64], s: i64):
    out[FlatLayout1D.uid()] = f64((2**63) << s)  # <-
""", "mixing i64 and u64 has no common integer type"),
    "shifted literal past 64 bits": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f64], s: i64):
    out[FlatLayout1D.uid()] = f64((2**70) << s)  # <-
""", "does not fit in 64 bits"),
    "range past 64 bits": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f64]):
    for j in range(2**70):  # <-
        out[FlatLayout1D.uid()] = 1.0
""", "does not fit in 64 bits"),
    "u64 range down to -1": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f64], n: u64):
    for j in range(n - 1, -1, -1):  # <-
        out[FlatLayout1D.uid()] = 1.0
""", "this range() over u64 values has the negative bound -1, which no u64 holds"),
    "u32 countdown from a difference that wraps": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f64], n: u32):
    for j in range(n - 1, -1, -1):  # <-
        out[FlatLayout1D.uid()] = 1.0
""", "the start of this range() is a u32 difference, which wraps where it would be negative "
        "(0 - 1 is 4294967295 in u32)"),
    "i64 with u64 range bounds": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f64], s: i64, n: u64):
    for j in range(s, n):  # <-
        out[FlatLayout1D.uid()] = 1.0
""", "mixing i64 and u64 has no common integer type"),
    "float index": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = a[1.5]  # <-
""", "array indices must be integers"),
    "wrong number of indices": ("""
@gpu_kernel(Kernel2D)
def k(a: CUDASliceMut2D[f32]):
    x, y = FlatLayout2D.uid()
    a[y] = 1.0  # <-
""", "a is a 2-D array but is indexed with 1 index"),
    "read-write race": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    v = a[i + 1]  # <-
    a[i] = v
""", "another thread may be writing that element"),
    "two store indices": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = 1.0
    a[i + 1] = 2.0  # <-
""", "written through two different indices"),
    "recursion": ("""
@gpu_device
def fact(n: i32) -> i32:
    if n <= 1:
        return 1
    return n * fact(n - 1)  # <-

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[i32]):
    i = FlatLayout1D.uid()
    a[i] = fact(5)
""", "recursion is not supported"),
    "array assigned to a local": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    b = a  # <-
""", "arrays cannot be assigned to local variables"),
    "bare gpu_kernel": ("""
@gpu_kernel  # <-
def k(a: CUDASliceMut[f32]):
    pass
""", "gpu_kernel needs the kernel's dimensionality"),
    "unknown option": ("""
@gpu_kernel(Kernel1D, fast=True)  # <-
def k(a: CUDASliceMut[f32]):
    pass
""", "gpu_kernel has no option 'fast'"),
    "string for a bool option": ("""
@gpu_kernel(Kernel1D, bounds_check="no")  # <-
def k(a: CUDASliceMut[f32]):
    pass
""", "bounds_check must be True or False"),
    "None for a bool option": ("""
@gpu_kernel(Kernel1D, fastmath=None)  # <-
def k(a: CUDASliceMut[f32]):
    pass
""", "fastmath must be True or False"),
    "string for an integer option": ("""
@gpu_kernel(Kernel1D, max_registers="64")  # <-
def k(a: CUDASliceMut[f32]):
    pass
""", "max_registers must be a positive integer"),
    "atomic on read-only": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32]):
    a.atomic_ref(0).fetch_add(1.0)  # <-
""", "is read-only (CUDASlice); atomics need a writable array"),
    "atomic and on floats": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    a.atomic_ref(0).fetch_and(1.0)  # <-
""", "atomic and is not available for f32 arrays"),
    "import in kernel": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    import os  # <-
""", "import statements are not supported"),
    "is comparison": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    if n is 3:  # <-
        a[i] = 0.0
""", "`is` is not supported"),
    "use before assignment": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    if n > 0:
        v = 1.0
    a[i] = v  # <-
""", "might be used before it is assigned"),
    "integer to a negative power": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], n: i32):
    i = FlatLayout1D.uid()
    a[i] = f32(n ** -1)  # <-
""", "an integer raised to a negative power is a float"),
    "device function falls off its end": ("""
@gpu_device
def maybe(x: f32) -> f32:  # <-
    if x > 0.0:
        return x

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = maybe(a[i])
""", "can reach its end without returning a f32"),
    "value returned from a device function declared -> None": ("""
@gpu_device
def f(x: f32) -> None:
    return x  # <-

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    f(a[i])
""", "f is declared `-> None`, so it cannot return a value"),
    "UniqueId kernel parameter": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32], i: UniqueId):  # <-
    a[i] = 0.0
""", "UniqueId is not a valid annotation here"),
    "UniqueId that is not unique": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i: UniqueId = 5  # <-
    a[i] = 0.0
""", "annotated UniqueId but its value is not a unique id"),
    "unconstrained TypeVar": ("""
T = TypeVar("T")

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[T]):  # <-
    pass
""", "must be constrained to scalar types"),
    "reassigned array parameter": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32],
      out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    if i < 4:
        out = out  # <-
    out[i] = a[i]
""", "the array parameter 'out' cannot be reassigned"),
    "reassigned module constant": ("""
SIZE = 4
SIZE = 8

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = f32(SIZE)  # <-
""", "'SIZE' is assigned more than once at module level"),
    "grid_stride in a 2-D kernel": ("""
@gpu_kernel(Kernel2D)
def k(a: CUDASliceMut[f32]):
    for i in FlatLayout1D.grid_stride(len(a)):  # <-
        a[i] = 0.0
""", "FlatLayout1D is a 1-D layout but this is a Kernel2D kernel"),
    "literal out of range for a cast": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[u8]):
    i = FlatLayout1D.uid()
    a[i] = u8(300)  # <-
""", "300 does not fit in u8"),
    "integer past every float's range in a float expression": ("""
BIG = """ + str(2 ** 2000) + """

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = a[i] + BIG  # <-
""", "right operand of +: an integer of about 603 digits is too large for f32"),
    "integer past every float's range in a cast": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    a[i] = f64(""" + str(2 ** 1100) + """)  # <-
""", "f64(): an integer of about 332 digits is too large for f64"),
    "integer past every float's range in float()": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    a[i] = float(""" + str(-2 ** 1100) + """)  # <-
""", "float(): an integer of about 332 digits is too large for f64"),
    "empty specializations": ("""
T = TypeVar("T", f32, f64)

@gpu_kernel(Kernel1D, specializations=[])  # <-
def k(a: CUDASlice[T], c: CUDASliceMut[T]):
    i = FlatLayout1D.uid()
    c[i] = a[i] * 2
""", "specializations= must list at least one specialisation"),
    "literal out of range for a store": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[u8]):
    i = FlatLayout1D.uid()
    a[i] = 300  # <-
""", "the literal 300 does not fit in u8"),
    "syntax error": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    a[0] = = 1  # <-
""", "syntax error"),
    "shared store through a non-unique index": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    s = shared_array(f32, (32,))
    s[3] = 1.0  # <-
""", "two threads of the block could write the same element"),
    "float exponent of ldexp": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = math.ldexp(a[i], a[i])  # <-
""", "math.ldexp()'s i must be an integer, not f32"),
    "exponent of ldexp wider than i32": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = math.ldexp(a[i], i)  # <-
""", "math.ldexp()'s i must be an integer that i32 holds, not i64"),
    "literal exponent of ldexp out of range": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = math.ldexp(a[i], 2**40)  # <-
""", "math.ldexp()'s i: the literal 1099511627776 does not fit in i32"),
    "Python builtin kernels do not have": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = sum(a[i], 1.0)  # <-
""", "sum() is not supported in a kernel"),
    "Python builtin type as an annotation": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    s: str = 1.0  # <-
""", "'str' is not a kernel type"),
    "module attribute that is not a kernel name": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = math.frexp(a[i])  # <-
""", "math.frexp is not available in kernels"),
    "the uid asked of the kernel's class instead of its layout": ("""
@gpu_kernel(Kernel2D)
def k(a: CUDASliceMut2D[f32]):
    i, j = Kernel2D.uid()  # <-
    a[i, j] = 1.0
""", "'Kernel2D.uid' is not available in kernels; Kernel2D only says how the kernel is "
     "launched, and a thread's unique id and grid loops come from its layout: "
     "FlatLayout2D.uid()"),
}


def _expected_line(source: str) -> int:
    for number, line in enumerate(source.splitlines(), 1):
        if "# <-" in line:
            return number
    raise AssertionError("case has no # <- marker")


@pytest.mark.parametrize("name", sorted(CASES))
def test_misuse_is_a_located_transpile_error(name, tmp_path):
    body, message = CASES[name]
    source = HEADER + textwrap.dedent(body)
    path = tmp_path / "bad_kernels.py"
    path.write_text(source)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, str(path), "bad_kernels")
    err = info.value
    text = str(err)
    assert message in text, text
    assert err.span is not None
    assert err.span.line == _expected_line(source), text
    # file:line:col, then the source line, then a caret under the offending code.
    assert text.startswith(f"{path}:{err.span.line}:{err.span.col + 1}: error: ")
    lines = text.splitlines()
    assert lines[1].strip() == source.splitlines()[err.span.line - 1].strip()
    assert set(lines[2].strip()) == {"^"}


@pytest.mark.parametrize("params, message, caret", [
    ("a: CUDASliceMut[f32], *, n: i32", "keyword-only parameters are not supported in kernel "
     "functions", "*"),
    ("a: CUDASliceMut[f32], /, n: i32", "positional-only parameters (`/`) are not supported in "
     "kernel functions", "/"),
    ("a: CUDASliceMut[f32], *rest", "kernel functions cannot take *args or **kwargs", "*rest"),
    ("a: CUDASliceMut[f32], **named", "kernel functions cannot take *args or **kwargs",
     "**named"),
])
def test_parameters_that_are_not_positional_are_refused_at_the_marker(params, message, caret,
                                                                      tmp_path):
    source = HEADER + f"\n@gpu_kernel(Kernel1D)\ndef k({params}):  # <-\n    pass\n"
    err = located_transpile_error(source, tmp_path / "params.py", message)
    assert err.span is not None
    shown = err.span.source_line[err.span.col:err.span.end_col]
    assert shown == caret, (shown, str(err))


def test_there_are_at_least_thirty_cases():
    assert len(CASES) >= 30


def test_expand_prints_the_error_without_a_traceback(tmp_path, capsys):
    from gpu_native.cli import main

    path = tmp_path / "bad.py"
    path.write_text(HEADER + textwrap.dedent(CASES["non-unique store"][0]))
    assert main(["expand", str(path)]) == 1
    err = capsys.readouterr().err
    assert "not provably unique" in err
    assert "Traceback" not in err
    assert "hint:" in err


@pytest.mark.untrusted
def test_static_shared_memory_past_48_kib_points_to_the_dynamic_form(tmp_path):
    # 64 KiB of static shared memory: ptxas would refuse the generated code, and the simulator
    # would run it; the transpiler refuses it for both.
    source = HEADER + textwrap.dedent("""
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            s = shared_array(f32, 16384)
            i = FlatLayout1D.uid()
            a[i] = s[0]
        """)
    path = tmp_path / "big_shared.py"
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, str(path), "big_shared")
    line = source.splitlines().index("    s = shared_array(f32, 16384)") + 1
    assert str(info.value) == (
        f"{path}:{line}:9: error: shared array 's' (f32 x 16384, 65536 bytes) brings the "
        "kernel's static shared memory to 65536 bytes, more than the 49152 bytes (48 KiB) CUDA "
        "allows per block\n"
        "        s = shared_array(f32, 16384)\n"
        "            ^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "hint: large buffers go in the dynamic shared array, `s = shared_array(f32, 0)`, sized "
        "at launch by shared_mem_bytes (up to the device's opt-in limit, 227 KiB on an H100 or "
        "H200); a kernel has one")


@pytest.mark.parametrize("arrays, culprit, total", [
    (["local_array(i32, 2**40)"], "'t1' (i32 x 1099511627776, 4398046511104 bytes)",
     "4398046511104 bytes"),
    (["local_array(f64, (256, 256))", "local_array(u8, 1)"],
     "'t2' (u8 x 1, 1 bytes) brings this thread's local arrays to 524289 bytes (with the 1 "
     "local array declared before it)", "524289 bytes"),
])
def test_local_arrays_past_512_kib_per_thread_are_refused(arrays, culprit, total, tmp_path):
    # CUDA gives a thread 512 KiB of local memory; the simulator would try to allocate the
    # arrays for every thread and fail inside numpy.
    lines = "".join(f"    t{k} = {array}\n" for k, array in enumerate(arrays, 1))
    marked = lines.rstrip("\n") + "  # <-\n"
    source = HEADER + textwrap.dedent("""
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
        """) + marked + "    a[i] = 0.0\n"
    err = located_transpile_error(source, tmp_path / "big_local.py", f"local array {culprit}")
    assert f"local arrays to {total}" in str(err)
    assert "more than the 524288 bytes (512 KiB) of local memory CUDA allows per thread" in \
        str(err)
    assert "pass a CUDASliceMut to the kernel" in (err.hint or "")


def test_a_form_feed_line_does_not_shift_the_rewrite(tmp_path):
    # Python numbers lines at \n only; str.splitlines also splits at \f, which shifted every
    # rewritten line after a page break by one.
    source = HEADER.replace("def host_helper", "\f\ndef host_helper") + textwrap.dedent("""
        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            a[i] = 1.0


        def after():
            return "after"
        """)
    result = rewrite_module(source, str(tmp_path / "paged.py"), "paged")
    old, new = source.split("\n"), result.source.split("\n")
    assert len(new) == len(old)
    start = next(n for n, text in enumerate(old) if text.startswith("@gpu_kernel"))
    assert new[start].startswith("@gpu_kernel(Kernel1D, _spec=")
    assert new[:start] == old[:start] and new[-4:] == old[-4:]


# ---- names used as modules that the defining module does not import ---------------------------

KERNEL_HEAD = ("from gpu_native import gpu_kernel, gpu_device, Kernel1D, CUDASlice, "
               "CUDASliceMut, FlatLayout1D, f32\n")
DEVS = KERNEL_HEAD + textwrap.dedent("""

    @gpu_device
    def norm(x: f32, y: f32) -> f32:
        return math.sqrt(x * x + y * y)
    """)
USES_DEVS = KERNEL_HEAD + textwrap.dedent("""\
    from devs import norm


    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = norm(a[i], a[i])
    """)
# The same mistake in a kernel and in a device function of the kernel's own module.
MATH_IN_KERNEL = KERNEL_HEAD + textwrap.dedent("""

    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = math.sqrt(a[i])
    """)
MATH_IN_DEVICE = DEVS + textwrap.dedent("""

    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], c: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        c[i] = norm(a[i], a[i])
    """)


def _located(err: TranspileError, path, source: str, text: str) -> None:
    """``err`` is at the first ``text`` of ``source`` (the file ``path``), with a caret under it."""
    line = next(n for n, s in enumerate(source.splitlines(), 1) if text in s)
    col = source.splitlines()[line - 1].index(text)
    assert (err.span.file, err.span.line, err.span.col) == (str(path), line, col), str(err)
    rendered = str(err).splitlines()
    assert rendered[0].startswith(f"{path}:{line}:{col + 1}: error: ")
    assert rendered[2] == "    " + " " * col + "^" * len(text.split(".")[0])


@pytest.mark.untrusted
@pytest.mark.parametrize("files, rewritten, culprit", [
    pytest.param({"k1.py": MATH_IN_KERNEL}, "k1.py", "k1.py", id="kernel"),
    pytest.param({"devs.py": MATH_IN_DEVICE}, "devs.py", "devs.py", id="device function"),
    pytest.param({"devs.py": DEVS, "usek.py": USES_DEVS}, "usek.py", "devs.py",
                 id="device function of another module"),
])
def test_math_not_imported_is_said_at_the_name(files, rewritten, culprit, tmp_path):
    # It was "only gpu_native intrinsics, math functions and @gpu_device functions can be called
    # in kernels", under `math.sqrt`: true, and no help.
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    path = tmp_path / rewritten
    with pytest.raises(TranspileError) as info:
        rewrite_module(path.read_text(), str(path), rewritten[:-3])
    err = info.value
    assert err.message == f"name 'math' is not defined in {culprit}: it is not imported there"
    assert err.hint.startswith(f'add "import math" to {culprit}')
    _located(err, tmp_path / culprit, files[culprit], "math.sqrt")


@pytest.mark.untrusted
@pytest.mark.slow
def test_expand_says_math_is_not_imported_and_exits_non_zero(tmp_path):
    # The reproduction, through the command a user runs (its exit status is the process's).
    import subprocess
    import sys

    (tmp_path / "devs.py").write_text(DEVS)
    (tmp_path / "usek.py").write_text(USES_DEVS)
    for form in ([], ["--cuda"], ["--exact"], ["--proofs"]):
        proc = subprocess.run([sys.executable, "-m", "gpu_native.cli", "expand", "usek.py", *form],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, (form, proc.stderr)
        assert proc.stdout == ""
        assert proc.stderr == (
            f"{tmp_path / 'devs.py'}:6:12: error: name 'math' is not defined in devs.py: it is "
            "not imported there\n"
            "        return math.sqrt(x * x + y * y)\n"
            "               ^^^^\n"
            'hint: add "import math" to devs.py (names in a function resolve in the module that '
            "defines it)\n"), form


@pytest.mark.parametrize("body, message, hint", [
    pytest.param(
        "c[i] = np.sqrt(a[i])",
        "numpy is not supported in kernels ('np' is not defined in k2.py, and numpy runs on the "
        "host)", 'use math.sqrt (with "import math" in k2.py)', id="numpy"),
    pytest.param(
        "c[i] = cp.linalg.norm(a[i])",
        "cupy is not supported in kernels ('cp' is not defined in k2.py, and cupy runs on the "
        "host)", "kernels use the math module (math.sqrt, math.exp, ...), abs, min, max and "
        "gpu_native's intrinsics", id="cupy"),
    pytest.param(
        "c[i] = helpers.twice(a[i])",
        "name 'helpers' is not defined in k2.py: it is not imported there",
        'add "import helpers" to k2.py', id="a module beside it"),
    pytest.param(
        "gn.sync_threads()", "name 'gn' is not defined in k2.py: it is not imported there",
        'add "import gpu_native as gn" to k2.py', id="gpu_native as gn"),
    pytest.param(
        "c[i] = nowhere.twice(a[i])", "name 'nowhere' is not defined in k2.py",
        "'nowhere' is used as a module here: import it in k2.py, or use math, gpu_native and "
        "@gpu_device functions", id="no such module"),
])
def test_other_unimported_module_names(body, message, hint, tmp_path):
    (tmp_path / "helpers.py").write_text(KERNEL_HEAD + "\n\n@gpu_device\ndef twice(x: f32) -> "
                                         "f32:\n    return x + x\n")
    source = KERNEL_HEAD + textwrap.dedent(f"""

        @gpu_kernel(Kernel1D)
        def k(a: CUDASlice[f32], c: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            {body}
        """)
    path = tmp_path / "k2.py"
    path.write_text(source)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, str(path), "k2")
    err = info.value
    assert err.message == message
    assert err.hint.startswith(hint), err.hint
    _located(err, path, source, body.split("= ")[-1])


def test_c_style_indexing_of_a_2d_array_is_told_the_one_subscript_form(tmp_path):
    source = "from gpu_native import *\n" + textwrap.dedent("""

        @gpu_kernel(Kernel2D)
        def k(xy: CUDASliceMut2D[f32]):
            x, y = FlatLayout2D.uid()
            xy[y][x] = 1.0
        """)
    path = tmp_path / "cstyle.py"
    path.write_text(source)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, str(path), "cstyle")
    assert info.value.message == "xy is a 2-D array but is indexed with 1 index"
    assert info.value.hint == ("index every axis in one subscript, xy[i, j] (C's xy[i][j] is "
                               "xy[i, j] here; a row of an array is not a value)")


def test_imported_numpy_says_what_kernels_take_of_it(tmp_path):
    source = "import numpy as np\n" + MATH_IN_KERNEL.replace("math.sqrt", "np.median")
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, str(tmp_path / "k3.py"), "k3")
    assert ("numpy.median is a host-side name: of numpy, kernels take the scalar types, the "
            "constants and the element-wise math functions") in str(info.value)
    # np.sqrt is math.sqrt (gpu_native/lang/spellings.py's NUMPY).
    rewrite_module("import numpy as np\n" + MATH_IN_KERNEL.replace("math.sqrt", "np.sqrt"),
                   str(tmp_path / "k4.py"), "k4")


def test_a_local_read_before_its_assignment_is_not_taken_for_a_module(tmp_path):
    # A name the function assigns is a local wherever it is read, never "not imported".
    source = textwrap.dedent("""\
        from gpu_native import gpu_kernel, Kernel2D, CUDASliceMut2D, FlatLayout2D, f32


        @gpu_kernel(Kernel2D)
        def k(a: CUDASliceMut2D[f32]):
            for r in range(2):
                if r == 1:
                    a[u.x, u.y] = 1.0
                u = FlatLayout2D.uid()
        """)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, str(tmp_path / "k4.py"), "k4")
    assert info.value.message == "local variable 'u' is used before it is assigned"
    assert (info.value.span.line, info.value.span.col) == (8, 14)


@pytest.mark.parametrize("expression, message, hint", [
    ("2.0 * 1j", "imaginary literals (`1j`) are not supported in kernels",
     "the imaginary unit is complex64(0, 1)"),
    ("sum(x for x in range(3))", "generator expressions are not supported in kernels",
     "accumulate in a for loop over range()"),
    ("(lambda t: t)(1.0)", "lambda expressions are not supported in kernels",
     "define a @gpu_device function"),
    ("[1.0, 2.0][0]", "list displays are not supported in kernels", "local_array(T, n)"),
    ("{1: 2.0}[1]", "dict displays are not supported in kernels", None),
])
def test_an_unsupported_expression_says_what_to_write_instead(expression, message, hint,
                                                             tmp_path):
    source = HEADER + ("\n@gpu_kernel(Kernel1D)\ndef k(a: CUDASliceMut[f32]):\n"
                       f"    a[FlatLayout1D.uid()] = {expression}  # <-\n")
    err = located_transpile_error(source, tmp_path / "expressions.py", message)
    if hint is None:
        assert err.hint is None, err.hint
    else:
        assert hint in (err.hint or ""), err.hint
        # Not the list of statements kernels support: it says nothing of expressions.
        assert "if/elif/else" not in (err.hint or "")


@pytest.mark.parametrize("statements, message, hint", [
    ("a[i] = f32(a.T)  # <-", "attribute .T of an array is not supported",
     "index the transpose by swapped indices"),
    ("a[i] = f32(a.dtype)  # <-", "attribute .dtype of an array is not supported",
     "its annotation's (CUDASlice[f32])"),
    ("s = shared_array(f32, block_dim.x)  # <-\n    a[i] = 0.0",
     "shared_array()'s shape must be a constant integer",
     "the dynamic shared array, shared_array(f32, 0)"),
    ("def sq(v: f32) -> f32:  # <-\n        return v * v\n    a[i] = sq(a[i])",
     "nested function definitions are not supported in kernels",
     "define it at module level as a @gpu_device function"),
])
def test_what_a_numba_or_cuda_user_writes_first_gets_a_hint(statements, message, hint,
                                                            tmp_path):
    source = HEADER + ("\n@gpu_kernel(Kernel1D)\ndef k(a: CUDASliceMut[f32]):\n"
                       f"    i = FlatLayout1D.uid()\n    {statements}\n")
    err = located_transpile_error(source, tmp_path / "first_tries.py", message)
    assert hint in (err.hint or ""), err.hint


def test_a_store_that_ignores_one_grid_axis_is_told_to_assert_it(tmp_path):
    source = HEADER + textwrap.dedent("""
        @gpu_kernel(Kernel2D)
        def k(x: CUDASlice[f32], y: CUDASliceMut[f32]):
            assert block_dim.x == 32 and block_dim.y == 8
            row = block_idx.x * 8 + thread_idx.y
            if thread_idx.x == 0 and row < len(y):
                y[row] = x[row]  # <-
        """)
    err = located_transpile_error(source, tmp_path / "grid_y.py", "not provably unique")
    assert err.hint.startswith(
        "every block that runs this store writes the same elements (its index does not depend "
        "on block_idx.y): if the grid is one block wide there, say so (`assert grid_dim.y == "
        "1`, checked once per launch)"), err.hint
    # What the hint says is what makes it provable.
    fixed = source.replace("block_dim.y == 8", "block_dim.y == 8 and grid_dim.y == 1")
    rewrite_module(fixed, str(tmp_path / "grid_y_fixed.py"), "grid_y_fixed")


def test_a_while_loop_whose_counter_is_not_stepped_last_is_told_what_is_followed(tmp_path):
    # The grid-stride loop as CUDA C++ writes it is followed (the step is the body's last
    # statement); one that stores after stepping is not, and the message says what is.
    loop = """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], a: f32, y: CUDASliceMut[f32]):
            i = block_idx.x * block_dim.x + thread_idx.x
            stride = block_dim.x * grid_dim.x
            while i < len(x):
                y[i] = a * x[i]
                i += stride
        """
    rewrite_module(HEADER + textwrap.dedent(loop), str(tmp_path / "while_ok.py"), "while_ok")
    stepped_first = loop.replace("                y[i] = a * x[i]\n                i += stride",
                                 "                i += stride\n                y[i - stride] = "
                                 "a * x[i - stride]  # <-")
    assert stepped_first != loop
    err = located_transpile_error(HEADER + textwrap.dedent(stepped_first),
                                  tmp_path / "while_loop.py", "not provably unique")
    assert ("a while loop's counter is followed where the loop requires `i < stop` and its body "
            "ends by stepping it (`i += step`") in err.message
    assert "`for i in range(start, stop, step)`" in err.message


def test_a_store_through_a_device_functions_plain_parameter_names_it_as_one(tmp_path):
    # It was said to be "assigned more than once", which a parameter never is.
    source = HEADER + textwrap.dedent("""
        @gpu_device
        def put(s: CUDASliceMut[f32], t: i32, v: f32):
            s[t] = v  # <-


        @gpu_kernel(Kernel1D)
        def k(a: CUDASliceMut[f32]):
            i = FlatLayout1D.uid()
            put(a, i32(i), 1.0)
        """)
    err = located_transpile_error(source, tmp_path / "param_index.py", "not provably unique")
    assert ("'t' is a parameter of this device function, and the proofs do not follow what its "
            "callers pass for it; declare it `t: UniqueId` where each caller passes a unique id"
            ) in err.message
    assert "assigned more than once" not in err.message


@pytest.mark.parametrize("after", ["sh.atomic_ref(i32(data[0])).fetch_add(1)",
                                   "hist[block_idx.x] = sh[0]"])
def test_a_block_stride_while_loop_is_pointed_to_its_range_loop(after, tmp_path):
    # Stepped before the body's end, the counter is not followed: the hint names both forms
    # that are.
    loop = f"""
        @gpu_kernel(Kernel1D)
        def k(data: CUDASlice[u8], hist: CUDASliceMut[i32]):
            sh = shared_array(i32, (256,))
            b = thread_idx.x
            rounds = 0
            while b < 256:
                sh[b] = 0  # <-
                b += block_dim.x
                rounds += 1
            sync_threads()
            if thread_idx.x == 0:
                {after}
        """
    err = located_transpile_error(HEADER + textwrap.dedent(loop), tmp_path / "while_init.py",
                                  "store into 'sh'")
    assert ("end its body with the step (b = thread_idx.x; while b < N: ...; b += block_dim.x, "
            "assigning b nowhere else), or write the loop as `for b in range(thread_idx.x, N, "
            "block_dim.x):`") in (err.hint or ""), err.hint
    # Both loops it names are accepted.
    stepped_last = loop.replace("                rounds += 1\n", "")
    ranged = stepped_last.replace("""            b = thread_idx.x
            rounds = 0
            while b < 256:
                sh[b] = 0  # <-
                b += block_dim.x""", """            for b in range(thread_idx.x, 256, block_dim.x):
                sh[b] = 0""")
    assert loop != stepped_last != ranged
    for n, fixed in enumerate((stepped_last, ranged)):
        rewrite_module(HEADER + textwrap.dedent(fixed), str(tmp_path / f"fixed{n}.py"),
                       f"fixed{n}")
