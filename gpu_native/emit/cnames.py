"""The C++ names in a kernel's translation unit: what the emitted code calls, and the C++ name of
each Python name.

A kernel's variables live in C++ beside the language's keywords, CUDA's builtins, macros, the
prelude's names (all ``gn_*`` and ``GN_*``) and the emitter's own (``gn_*`` functions, ``__gn*``
variables, and the library functions it calls: the CUDA spellings in
:mod:`gpu_native.lang.registry`).  :func:`c_identifier` keeps a *plain* name as it is: ASCII,
starting with a letter, not ending with ``_``, with a lower-case letter (ALL_CAPS names are left
to macros), not starting with ``gn_`` in any case, and none of those names.  Every other name maps to ``py_<name>_`` (``pyu_<code points in hex>_`` when it is not
ASCII, which NVRTC does not take).  A plain name never ends with ``_`` and a mapped one always
does, so the two sets cannot meet and the mapping is injective; nothing of CUDA's or the
emitter's has the form ``py_..._``.

Names the emitter derives from a variable's C++ name ``c``: its extents ``__gn_<c>_n<axis>`` (the
only ``__gn_`` names ending in ``_n`` and a digit), the components of a vector kernel parameter
``__gn_<c>_v<k>`` (the only ones ending in ``_v`` and a digit) and its 16-byte vector
``__gnv_<c>`` (the only names starting with ``__gnv``).  Its other names are fixed (``__gn_err``, ``__gn_uid`` ...) or
numbered: the loop counters ``__gn_i3``, ``__gn_stop3``, ``__gn_step3`` and the checker's
temporaries ``$t3`` as ``__gn_t3``.
"""

from __future__ import annotations

import functools
import re

from .. import ir
from ..lang import registry
from ..lang.types import SCALARS

# C++20's keywords and alternative tokens: never a variable's name.
CPP_KEYWORDS = frozenset([
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
    "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
    "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"])
# CUDA's and the C library's names that are visible in every kernel, or that a header may define
# as a macro: a variable of the same name would hide them, or be replaced by the macro.
CUDA_NAMES = frozenset([
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "half", "half2",
    "nv_bfloat16", "nv_bfloat162", "printf", "malloc", "free", "memcpy", "memset", "assert",
    "min", "max", "abs", "signbit", "isnan", "isinf", "isfinite", "main", "clock", "clock64",
    "uint", "ushort", "ulong", "uchar", "size_t", "ptrdiff_t", "nullptr_t", "offsetof"])

_VECTOR_TYPE = re.compile(r"(make_)?(u?(char|short|int|long|longlong)|float|double)[1-4]"
                          r"(_16a|_32a)?")

# What kernel bodies call or name (the language registry's CUDA spellings: the math library,
# atomics, warp intrinsics, threadIdx ...) and the scalar types: a variable must not hide them.
_EMITTED_NAMES = frozenset([
    *registry.emitted_names(), *(w for s in SCALARS.values() for w in s.c_name.split())])
_RESERVED_NAMES = CPP_KEYWORDS | CUDA_NAMES | _EMITTED_NAMES


@functools.lru_cache(maxsize=4096)
def c_identifier(name: str) -> str:
    """The C++ name of the Python name ``name`` (see the module docstring): ``name`` itself
    when it is plain."""
    if name.startswith(ir.TEMP_PREFIX):  # the checker's temporary $t<N>
        return "__gn_" + name[len(ir.TEMP_PREFIX):]
    if (name.isascii() and name[0].isalpha() and not name.endswith("_")
            and not name.isupper() and name.lower()[:3] != "gn_"
            and name not in _RESERVED_NAMES and not _VECTOR_TYPE.fullmatch(name)):
        return name
    if name.isascii():
        return f"py_{name}_"
    return "pyu_" + "_".join(f"{ord(c):x}" for c in name) + "_"


def cname(var: ir.Var) -> str:
    """The C++ name of a variable (see :func:`c_identifier`); a constant array's is its
    ``__constant__`` symbol (``gn_const<k>_<name>``: a ``gn_`` name no variable maps to)."""
    if isinstance(var, ir.ConstVar):
        return var.symbol
    return c_identifier(var.name)


def extent_name(var: ir.Var, axis: int) -> str:
    """The C++ name of an array's extent along ``axis``."""
    return f"__gn_{cname(var)}_n{axis}"


def stride_name(var: ir.Var, axis: int) -> str:
    """The C++ name of a strided array's element stride along ``axis``."""
    return f"__gn_{cname(var)}_s{axis}"


def component_name(var: ir.Var, k: int) -> str:
    """The C++ name of component ``k`` of a vector kernel parameter, passed as a scalar."""
    return f"__gn_{cname(var)}_v{k}"


def vector_name(var: ir.Var) -> str:
    """The C++ name of the 16-byte vector a vectorised kernel moves an array's elements in."""
    return f"__gnv_{cname(var)}"
