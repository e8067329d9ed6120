"""How the emitter spells types, literals, conversions and element offsets in C++."""

from __future__ import annotations

import math

import numpy as np

from .. import ir
from ..lang.halfprec import f64_to_bf16_bits
from .structs import tuple_name


def ctype(ty: ir.Type) -> str:
    if isinstance(ty, (ir.ScalarType, ir.VectorType, ir.StructType)):
        return ty.info.c_name
    if isinstance(ty, ir.VoidType):
        return "void"
    if isinstance(ty, ir.TupleType):
        return tuple_name(ty)
    raise TypeError(f"no C type for {ty}")  # pragma: no cover


def array_offset(ref: ir.ArrayRef, parts: list[str], extents: list[str]) -> str:
    """The offset of an element in its array's storage: row-major, or for a swizzled shared
    array (``shared_array(T, shape, swizzle=128)``) the prelude's ``gn_swz128`` of its leading
    axes' row-major offset, row and column."""
    if not ref.ty.swizzle:
        return row_major(parts, extents)
    lead = row_major(parts[:-2], extents[:-2]) if len(parts) > 2 else "0"
    return (f"gn_swz128<{extents[-2]}, {extents[-1]}>((int)({lead}), (int)({parts[-2]}), "
            f"(int)({parts[-1]}))")


def row_major(parts: list[str], extents: list[str]) -> str:
    """The offset of an element from its indices: ``(i * n1 + j) * n2 + k``."""
    offset = parts[0]
    for axis in range(1, len(parts)):
        inner = f"({offset})" if axis > 1 else offset
        offset = f"{inner} * {extents[axis]} + {parts[axis]}"
    return offset


def const_code(value, ty: ir.ScalarType) -> str:
    """A C++ literal for ``value`` of type ``ty``."""
    info = ty.info
    if info.kind == "bool":
        return "true" if value else "false"
    if info.is_int:
        v = int(value)
        if info.name == "i32":
            return "(-2147483647 - 1)" if v == -(1 << 31) else str(v)
        if info.name == "i64":
            return "(-9223372036854775807LL - 1)" if v == -(1 << 63) else f"{v}LL"
        if info.name == "u32":
            return f"{v}u"
        if info.name == "u64":
            return f"{v}ull"
        return f"(({info.c_name}){v})"
    f = float(value)
    if info.name in ("f16", "bf16"):
        # The bits of the value rounded once, from the double, as f16(x) does on the host.
        # Not __double2half(literal): that is an inline-asm cvt the device compiler never
        # folds, one conversion per constant per thread (32 extra instructions in a 32-step
        # Horner loop); a bit pattern is an immediate.
        if info.name == "f16":
            with np.errstate(over="ignore"):   # beyond the f16 range is inf, as f16(x) gives
                bits = int(np.array(f, np.float64).astype(np.float16).view(np.uint16))
            return f"__ushort_as_half((unsigned short){bits:#06x}u)"
        bits = int(f64_to_bf16_bits(f))
        return f"__ushort_as_bfloat16((unsigned short){bits:#06x}u)"
    single = info.name == "f32"
    if single:
        # The float32 value itself, so NVRTC does not round a decimal a second time (and a
        # literal beyond the float32 range becomes inf, as f32(x) does on the host).
        with np.errstate(over="ignore"):   # the overflow to inf is the intent, not a warning
            f = float(np.float32(f))
    if math.isnan(f):
        return "__int_as_float(0x7fffffff)" if single else "__longlong_as_double(0x7ff8000000000000LL)"
    if math.isinf(f):
        if single:
            return "__int_as_float(0x7f800000)" if f > 0 else "__int_as_float(0xff800000)"
        return ("__longlong_as_double(0x7ff0000000000000LL)" if f > 0
                else "__longlong_as_double(0xfff0000000000000LL)")
    text = repr(f)
    if "e" not in text and "." not in text:
        text += ".0"
    return text + ("f" if single else "")


def convert(code: str, src: ir.ScalarType, dst: ir.ScalarType) -> str:
    """C++ for converting ``code`` from ``src`` to ``dst`` with the language's semantics."""
    if src == dst:
        return code
    s, d = src.info, dst.info
    if d.kind == "bool":
        return f"({code} != 0)"
    if s.name == "f16":
        code, s = f"__half2float({code})", ir.F32.info
    elif s.name == "bf16":
        code, s = f"__bfloat162float({code})", ir.F32.info
    if d.name in ("f16", "bf16"):
        half = "half" if d.name == "f16" else "bfloat16"
        if s.name == "f64":
            return f"__double2{half}({code})"
        return f"__float2{half}_rn((float)({code}))"
    if d.is_float:
        return f"(({d.c_name})({code}))"
    if s.is_float:
        if d.name == "i64":
            return f"gn_f2i64((double)({code}))"
        if d.name == "u64":
            return f"gn_f2u64((double)({code}))"
        return f"gn_f2i<{d.c_name}>((double)({code}), {d.min}.0, {d.max}.0)"
    return f"(({d.c_name})({code}))"


def const_declarations(consts: tuple[ir.ConstDecl, ...]) -> str:
    """The ``__constant__`` variables of a kernel's constant arrays.  They have no initialiser:
    the runtime copies each one's values in when it loads the module (``cuModuleGetGlobal`` of
    the symbol, then ``cuMemcpyHtoD``), from the array the Python module holds."""
    lines = ["// Constant arrays: set from the imported module when the kernel is loaded "
             "(cuModuleGetGlobal + cuMemcpyHtoD)."]
    for decl in consts:
        lines.append(f"__constant__ {ctype(decl.ty.elem)} {decl.symbol}[{math.prod(decl.shape)}];"
                     f"  // {decl.module}.{decl.name}: {decl.ty.elem}, shape {decl.shape}")
    return "\n".join(lines) + "\n"
