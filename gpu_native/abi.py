"""The binary contract between generated kernels and the host runtime.

Both the CUDA emitter (transpiler side) and the runtime (host side) import this module, which
imports nothing of either, so the two can never disagree about how arguments are passed or how a
device error is recorded.

Kernel parameters, in order: for each user parameter, an array becomes its device pointer followed
by one ``int64`` extent per dimension (and, for a ``Strided`` parameter, one ``int64`` element
stride per dimension after them); a scalar is passed by value; a vector (``vec3f`` ...) is
passed as its components, one scalar parameter each (the kernel gathers them into its struct), a
complex number likewise as its real and imaginary parts, and a ``@gpu_struct`` value as its
scalars, in field order (a vector field's components, a nested struct's scalars in turn).  One
hidden parameter follows:
the device address of the launching stream's error record.
"""

from __future__ import annotations

import struct

# ---- the device error record (host-mapped memory, one per stream) -------------------------------
#
#   offset  type      field
#   0       u32       state: 0 empty, 1 being written, 2 complete
#   4       u32       site id (index into the kernel's site table)
#   8       u64       kernel id (identifies the site table)
#   16      i64       index (bounds errors) / dividend (division errors)
#   24      i64       length of the indexed axis
#   32      u32 x 3   block index
#   44      u32 x 3   thread index
#   56      u32       number of errors seen (saturating)
#   60      u32       reserved
ERROR_RECORD_SIZE = 64
ERROR_RECORD_FORMAT = "<IIQqq3I3III"
assert struct.calcsize(ERROR_RECORD_FORMAT) == ERROR_RECORD_SIZE

ERROR_STATE_EMPTY = 0
ERROR_STATE_WRITING = 1
ERROR_STATE_COMPLETE = 2

# ---- parameter packing ------------------------------------------------------------------------
# Every parameter value gets its own 8-byte slot in the launcher's argument buffer; the slot's
# struct format character(s) by scalar type:
SLOT_FORMATS = {
    "bool_": "?7x", "i8": "b7x", "i16": "h6x", "i32": "i4x", "i64": "q", "u8": "B7x",
    "u16": "H6x", "u32": "I4x", "u64": "Q", "f16": "e6x", "bf16": "H6x", "f32": "f4x", "f64": "d",
}
# A float parameter is rounded to its type (to nearest, ties to even) when it is packed; a finite
# value of at least FLOAT_OVERFLOW's magnitude would round to infinity, so the launcher refuses it
# (ValueError), while inf and nan themselves are representable and pass as they are.  bf16 is
# rounded to f32 first and then to its 16 bits (its slot holds the bits).  FLOAT_MAX is each
# type's largest finite value, for messages.
FLOAT_OVERFLOW = {"f16": 65520.0, "f32": 2.0**128 - 2.0**103}
FLOAT_MAX = {"f16": 65504.0, "bf16": 2.0**128 - 2.0**120, "f32": 2.0**128 - 2.0**104,
             "f64": 1.7976931348623157e308}
# The vector types' parameters: (element type, components), one slot per component.
# The complex types' parameters: (part type, 2), the real part's slot first.
COMPLEX_SLOTS = {"complex64": ("f32", 2), "complex128": ("f64", 2)}
VECTOR_SLOTS = {f"vec{n}{suffix}": (elem, n) for elem, suffix in (("f32", "f"), ("f64", "d"),
                                                                 ("i32", "i")) for n in (2, 3, 4)}
VECTOR_SLOTS.update({"vec2h": ("f16", 2), "vec2bf": ("bf16", 2)})
POINTER_FORMAT = "Q"
EXTENT_FORMAT = "q"
SLOT_SIZE = 8


def kernel_id(module: str, symbol: str) -> int:
    """A stable 64-bit id for a kernel specialisation (FNV-1a of ``module:symbol``)."""
    h = 0xCBF29CE484222325
    for byte in f"{module}:{symbol}".encode():
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h

# ---- the 32-bit index entry point ---------------------------------------------------------------
# A kernel may also have ``<symbol>_i32`` (see gpu_native.emit.index32), computing its indices in
# 32 bits.  The launcher runs it only when every array argument has at most this many elements
# and grid * block stays within it along every axis; otherwise the main entry point.  The bound
# sits 2**20 below 2**31 so that a loop up to an extent in steps of up to 2**20 (a tile loop,
# ``range(0, n, TILE)``) never counts past 2**31 - 1, and so counts in 32 bits as well.
INDEX32_SUFFIX = "_i32"
INDEX32_MAX_ELEMENTS = (1 << 31) - (1 << 20)
