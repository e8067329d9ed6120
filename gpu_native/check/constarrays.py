"""Module-level ``const_array`` tables in kernel bodies: a name that resolves to one is a
read-only array of static shape in constant memory (``ArrayType(space="const")``).

Each table a kernel reads, directly or through its device functions, is one
:class:`~gpu_native.ir.ConstDecl` of the kernel (one ``__constant__`` variable of its
translation unit), made at its first use; the tables together must fit the 64 KiB constant
bank.  Reads are checked like any array's (the static shape usually proves the index); stores
and atomics are refused where those are checked (an array that is not mutable).
"""

from __future__ import annotations

import re

from .. import ir
from ..errors import SourceSpan, TranspileError
from ..frontend.constarrays import ConstArrayDecl
from ..frontend.parse import PACKAGE, ModuleScan
from ..lang.constarrays import CONSTANT_BANK_BYTES
from ..lang.types import SCALARS
from ..locate import display_file
from .context import KernelContext

# NumPy's names (and the builtins NumPy maps) for the language's scalar types.
_NUMPY_NAMES = {info.numpy: name for name, info in SCALARS.items()}
_NUMPY_NAMES.update({"bool": "bool_", "float": "f64", "int": "i64", "bool_": "bool_",
                     "double": "f64", "single": "f32", "half": "f16"})
_BUILTIN_LISTS = {"builtin:int": "i64", "builtin:float": "f64", "builtin:bool": "bool_"}
_EXAMPLE = "const_array(values, f32, (16,))"


def _where(scan: ModuleScan, decl: ConstArrayDecl) -> str:
    return f"{display_file(scan.module_name, scan.path)}:{decl.span.line}"


def element_type(scan: ModuleScan, decl: ConstArrayDecl) -> ir.ScalarType | None:
    """The scalar type ``decl.dtype`` names in ``scan``'s module, or None."""
    text = decl.dtype
    if text is None:
        return None
    if text in _BUILTIN_LISTS:
        return ir.scalar(_BUILTIN_LISTS[text])
    if text[:1] in "'\"":
        name = text[1:-1]
        name = name if name in SCALARS else _NUMPY_NAMES.get(name, "")
        return ir.scalar(name) if name in SCALARS else None
    head, _, rest = text.partition(".")
    imported = scan.imports.get(head)
    if imported is None:
        return ir.scalar(_NUMPY_NAMES[head]) if not rest and head in (
            "float", "int", "bool") else None
    module = imported.module if imported.attr is None else f"{imported.module}.{imported.attr}"
    full = f"{module}.{rest}" if rest else module
    package, _, name = full.rpartition(".")
    if package == PACKAGE and name in SCALARS:
        return ir.scalar(name)
    if package == "numpy" and name in _NUMPY_NAMES:
        return ir.scalar(_NUMPY_NAMES[name])
    return None


def const_array_ref(kctx: KernelContext, scan: ModuleScan, decl: ConstArrayDecl,
                    span: SourceSpan) -> ir.ArrayRef:
    """The array ``decl`` names, read at ``span`` in a function of the kernel ``kctx``."""
    key = (scan.module_name, decl.name)
    known = kctx.consts.get(key)
    if known is None:
        known = _declare(kctx, scan, decl, span)
    return ir.ArrayRef(span, known.ty, known.var)


def _declare(kctx: KernelContext, scan: ModuleScan, decl: ConstArrayDecl,
             span: SourceSpan) -> ir.ConstDecl:
    where = _where(scan, decl)
    if decl.problem is not None:
        raise TranspileError(
            f"the constant array '{decl.name}' ({where}) cannot be used in a kernel: "
            f"{decl.problem}", span,
            f"pass the dtype and the shape, as constants (module constants too): "
            f"{decl.name} = {_EXAMPLE}")
    elem = element_type(scan, decl)
    if elem is None:
        raise TranspileError(
            f"the constant array '{decl.name}' ({where}) has the element type {decl.dtype}, "
            "which is not one of the kernel language's scalar types", span,
            "use f32, i32, ... (or NumPy's float32, int32, ...)")
    shape = decl.shape
    assert shape is not None  # no problem: the shape was read
    if not 1 <= len(shape) <= 3 or min(shape) < 1:
        raise TranspileError(
            f"the constant array '{decl.name}' ({where}) has shape {shape}; constant arrays "
            "have 1 to 3 dimensions, each at least 1", span)
    # Numbered, so two modules' tables of one name stay two; the rest is for people to read.
    symbol = f"gn_const{len(kctx.consts)}_{re.sub(r'[^0-9A-Za-z_]', '_', decl.name)}"
    ty = ir.ArrayType(elem, len(shape), False, "const", shape)
    new = ir.ConstDecl(ir.ConstVar(decl.name, ty, decl.span, symbol=symbol), scan.module_name,
                       decl.name)
    used = sum(d.nbytes for d in kctx.consts.values())
    if used + new.nbytes > CONSTANT_BANK_BYTES:
        dims = " x ".join(map(str, shape))
        others = len(kctx.consts)
        before = (f" beside the {used} bytes of the {others} constant "
                  f"array{'s' if others > 1 else ''} it reads before" if others else "")
        raise TranspileError(
            f"the constant array '{decl.name}' ({where}; {elem} {dims}, {new.nbytes} bytes) "
            f"does not fit the kernel's constant memory{before}: the limit is "
            f"{CONSTANT_BANK_BYTES - used} bytes of CUDA's {CONSTANT_BANK_BYTES}-byte constant "
            "bank", span,
            "pass large tables as array parameters (CUDASlice) instead")
    kctx.consts[(scan.module_name, decl.name)] = new
    return new
