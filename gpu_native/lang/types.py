"""The element types of the kernel language: scalars, small vectors and complex numbers.

Each scalar type is a small class (``f32``, ``i32``, ...), so that annotations such as
``CUDASlice[f32]`` and ``x: f32`` are valid types for editors and type checkers.  The same class is
the cast in a kernel (``f32(x)``) and the dtype tag on the host (``gn.empty(10, gn.f32)``).  The
metadata the transpiler and runtime need lives in :data:`SCALARS`, keyed by name.

The vector types (``vec2f`` ... ``vec4i``: 2, 3 or 4 components of ``f32``, ``f64`` or ``i32``,
named as Warp names them) are classes too: an annotation, a constructor in kernels, an array
element type (``CUDASlice[vec3f]``) and a dtype tag on the host, where an array of them is a NumPy
array with a last axis of 2, 3 or 4 (``gn.to_device(a, dtype=gn.vec3f)`` for an ``(n, 3)``
``float32`` array).  Their metadata is in :data:`VECTORS`; see :class:`VectorInfo` for the
layout, which is NumPy's packed one.

The complex types ``complex64`` and ``complex128`` (two ``f32`` or two ``f64``, real part first,
as NumPy and CUDA's ``cuFloatComplex`` store them) are classes too: an annotation, a constructor
``complex64(re, im)`` in kernels, an array element type (``CUDASlice[complex64]`` takes a NumPy
``complex64`` array as it is) and a dtype tag.  On the host they are Python ``complex`` numbers
whose parts are rounded to the type.  Their metadata is in :data:`COMPLEXES`
(:class:`ComplexInfo`).

:func:`element_info` reads any of them (or a ``@gpu_struct`` class, or a NumPy dtype) as the
element type of an array.  The array parameter annotations that take these as their element
type (``CUDASlice[f32]`` ...) and ``Const`` are in :mod:`.params`.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TypeAlias

    from typing_extensions import Self

import numpy as np

from ..nodes import node

__all__ = [
    "SCALARS",
    "ScalarInfo",
    "bf16",
    "bool_",
    "complex64",
    "complex128",
    "f16",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "scalar_info",
    "u8",
    "u16",
    "u32",
    "u64",
    "vec2bf",
    "vec2d",
    "vec2f",
    "vec2h",
    "vec2i",
    "vec3d",
    "vec3f",
    "vec3i",
    "vec4d",
    "vec4f",
    "vec4i",
]


@node
class ScalarInfo:
    """What the transpiler and runtime know about one scalar type."""

    name: str  # the Python name, e.g. "f32"
    c_name: str  # the CUDA C++ spelling, e.g. "float"
    kind: str  # "int", "uint", "float" or "bool"
    bits: int
    numpy: str  # NumPy dtype name; bf16 has none in NumPy and uses "bfloat16" via ml_dtypes
    struct: str  # struct module format character used to pack a kernel parameter

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def min(self) -> int | float:
        if self.kind == "int":
            return -(1 << (self.bits - 1))
        if self.kind in ("uint", "bool"):
            return 0
        return -float("inf")

    @property
    def max(self) -> int | float:
        if self.kind == "int":
            return (1 << (self.bits - 1)) - 1
        if self.kind == "uint":
            return (1 << self.bits) - 1
        if self.kind == "bool":
            return 1
        return float("inf")

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of arrays of this type (bf16 is stored as raw 16-bit words)."""
        if self.name == "bf16":
            return np.dtype(np.uint16)
        return np.dtype(self.numpy)

    def __repr__(self) -> str:
        return self.name


SCALARS: dict[str, ScalarInfo] = {
    s.name: s
    for s in (
        ScalarInfo("bool_", "bool", "bool", 8, "bool", "?"),
        ScalarInfo("i8", "signed char", "int", 8, "int8", "b"),
        ScalarInfo("i16", "short", "int", 16, "int16", "h"),
        ScalarInfo("i32", "int", "int", 32, "int32", "i"),
        ScalarInfo("i64", "long long", "int", 64, "int64", "q"),
        ScalarInfo("u8", "unsigned char", "uint", 8, "uint8", "B"),
        ScalarInfo("u16", "unsigned short", "uint", 16, "uint16", "H"),
        ScalarInfo("u32", "unsigned int", "uint", 32, "uint32", "I"),
        ScalarInfo("u64", "unsigned long long", "uint", 64, "uint64", "Q"),
        ScalarInfo("f16", "__half", "float", 16, "float16", "e"),
        ScalarInfo("bf16", "__nv_bfloat16", "float", 16, "bfloat16", "H"),
        ScalarInfo("f32", "float", "float", 32, "float32", "f"),
        ScalarInfo("f64", "double", "float", 64, "float64", "d"),
    )
}


class _ScalarMeta(type):
    """Metaclass of the scalar type classes: gives them a short repr and their metadata."""

    info: ScalarInfo

    def __repr__(cls) -> str:
        return f"gpu_native.{cls.__name__}"

    @property
    def dtype(cls) -> np.dtype:
        """The NumPy dtype used for host arrays of this type."""
        return cls.info.dtype


class _IntScalar(int, metaclass=_ScalarMeta):
    info: ClassVar[ScalarInfo]

    def __new__(cls, value: Any = 0):
        # Convert as the device does, so host-side use of a tag agrees with the kernel: an int
        # wraps; a float truncates toward zero and saturates at the type's range, NaN gives 0.
        info = cls.info
        if info.kind == "bool":
            return super().__new__(cls, 1 if value else 0)
        if isinstance(value, (float, np.floating)):
            f = float(value)
            if f != f:
                return super().__new__(cls, 0)
            if f >= info.max:
                return super().__new__(cls, info.max)
            if f <= info.min:
                return super().__new__(cls, info.min)
        v = int(value) & ((1 << info.bits) - 1)
        if info.kind == "int" and v > info.max:
            v -= 1 << info.bits
        return super().__new__(cls, v)


def _beyond_float(value: Any) -> Any:
    """``value``, or an infinity of its sign where it is an integer past the largest ``float``
    (which ``float()`` refuses with ``OverflowError``): the nearest value of every float type."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError:
            return float("inf") if value > 0 else float("-inf")
    return value


class _FloatScalar(float, metaclass=_ScalarMeta):
    info: ClassVar[ScalarInfo]

    def __new__(cls, value: Any = 0.0):
        info = cls.info
        if value is None:  # (NumPy would make it NaN)
            raise TypeError(f"{info.name}() takes a number, not None")
        value = _beyond_float(value)
        if info.name == "bf16":
            from .halfprec import round_bf16

            return super().__new__(cls, round_bf16(float(value)))
        with np.errstate(over="ignore"):  # beyond the range is infinity, as on the device
            return super().__new__(cls, float(np.dtype(info.numpy).type(value)))


def _scalar(name: str, base: type) -> type:
    cls = _ScalarMeta(name, (base,), {"info": SCALARS[name], "__module__": "gpu_native"})
    cls.__doc__ = (
        f"The ``{name}`` scalar type ({SCALARS[name].c_name} in CUDA C++): an annotation, a cast "
        f"``{name}(x)`` in kernels, and a dtype tag on the host."
    )
    return cls


if TYPE_CHECKING:
    # What type checkers see: Python's own number types.  A launch passes Python ints and floats
    # to scalar parameters (``kernel[g, b](x, n)`` with ``n: i32``), and a checker can accept an
    # ``int`` for an ``i32`` only when ``i32`` is ``int`` (a subclass would refuse it).  So
    # ``f32 + f32`` is a ``float``, ``a[i] + 1.0`` of an f32 array is one, storing a float into
    # an ``i32`` array is an error; the widths (f32 against f64, i32 against u8) are the
    # transpiler's to check.
    bool_: TypeAlias = bool
    i8: TypeAlias = int
    i16: TypeAlias = int
    i32: TypeAlias = int
    i64: TypeAlias = int
    u8: TypeAlias = int
    u16: TypeAlias = int
    u32: TypeAlias = int
    u64: TypeAlias = int
    f16: TypeAlias = float
    bf16: TypeAlias = float
    f32: TypeAlias = float
    f64: TypeAlias = float
else:
    bool_ = _scalar("bool_", _IntScalar)
    i8 = _scalar("i8", _IntScalar)
    i16 = _scalar("i16", _IntScalar)
    i32 = _scalar("i32", _IntScalar)
    i64 = _scalar("i64", _IntScalar)
    u8 = _scalar("u8", _IntScalar)
    u16 = _scalar("u16", _IntScalar)
    u32 = _scalar("u32", _IntScalar)
    u64 = _scalar("u64", _IntScalar)
    f16 = _scalar("f16", _FloatScalar)
    bf16 = _scalar("bf16", _FloatScalar)
    f32 = _scalar("f32", _FloatScalar)
    f64 = _scalar("f64", _FloatScalar)

SCALAR_CLASSES: dict[str, type] = {
    "bool_": bool_, "i8": i8, "i16": i16, "i32": i32, "i64": i64, "u8": u8, "u16": u16,
    "u32": u32, "u64": u64, "f16": f16, "bf16": bf16, "f32": f32, "f64": f64,
}


def scalar_info(tag: Any) -> ScalarInfo:
    """Return the :class:`ScalarInfo` for a scalar class, its name, or a NumPy dtype.

    Raises ``TypeError`` when ``tag`` names no supported scalar type.
    """
    info = getattr(tag, "info", None) if isinstance(tag, type) else None
    if isinstance(info, ScalarInfo):  # a scalar class (its metaclass gives it ``info``)
        return info
    if isinstance(tag, ScalarInfo):
        return tag
    if isinstance(tag, str) and tag in SCALARS:
        return SCALARS[tag]
    try:
        dt = np.dtype(tag)
    except TypeError:
        raise TypeError(f"{tag!r} is not a gpu_native scalar type or NumPy dtype") from None
    for info in SCALARS.values():
        if info.name != "bf16" and np.dtype(info.numpy) == dt:
            return info
    if dt.name == "bfloat16":
        return SCALARS["bf16"]
    if not dt.isnative:
        # A GPU reads little-endian words: the bytes of a big-endian array would be misread.
        raise TypeError(f"dtype {dt} has no gpu_native scalar type: its bytes are big-endian "
                        f"(byte order {dt.byteorder!r}); convert the array first, "
                        f"a.astype(a.dtype.newbyteorder('='))")
    raise TypeError(f"dtype {dt} has no gpu_native scalar type")


# ---- small vectors ----------------------------------------------------------------------------

_VECTOR_SUFFIX = {"f32": "f", "f64": "d", "i32": "i"}
_COMPONENTS = "xyzw"


@node
class VectorInfo:
    """What the transpiler and runtime know about one small vector type (``vec3f`` ...).

    Layout: ``n`` components of ``elem``, packed (``itemsize`` is ``n`` times the element's, so
    an array of them has NumPy's ``(..., n)`` memory layout), aligned like CUDA's own vectors:
    2- and 4-component vectors to their size up to 16 bytes (``vec2f`` 8, ``vec4f`` and
    ``vec2d`` 16, ``vec4d`` 16), 3-component ones to their element (``vec3f`` 12 bytes, align 4),
    so that loads of ``vec4f`` and ``vec2d`` elements are single 16-byte accesses.  The CUDA
    structs are the prelude's ``gn_vec3f`` ... (gpu_native/include/gpu_native/prelude.cuh), not
    CUDA's ``float4`` family (whose ``double4`` alignment changed in CUDA 13).
    """

    name: str  # "vec3f"
    elem: ScalarInfo
    n: int

    kind = "vector"

    @property
    def c_name(self) -> str:
        return f"gn_{self.name}"

    @property
    def itemsize(self) -> int:
        return self.n * self.elem.itemsize

    @property
    def align(self) -> int:
        if self.n == 3:
            return self.elem.itemsize
        return min(self.itemsize, 16)

    @property
    def components(self) -> str:
        """The component names: ``"xyz"`` for a 3-vector."""
        return _COMPONENTS[:self.n]

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of one element: ``n`` elements of the scalar type (a NumPy array of
        shape ``s`` made with it has shape ``(*s, n)``)."""
        return np.dtype((self.elem.dtype, (self.n,)))

    def __repr__(self) -> str:
        return self.name


VECTORS: dict[str, VectorInfo] = {
    f"vec{n}{suffix}": VectorInfo(f"vec{n}{suffix}", SCALARS[elem], n)
    for elem, suffix in _VECTOR_SUFFIX.items() for n in (2, 3, 4)
}
# The packed pairs of 16-bit floats, CUDA's __half2 and __nv_bfloat162 (two lanes in one 32-bit
# register, computed by one f16x2/bf16x2 instruction): pairs only, as the hardware packs them.
VECTORS["vec2h"] = VectorInfo("vec2h", SCALARS["f16"], 2)
VECTORS["vec2bf"] = VectorInfo("vec2bf", SCALARS["bf16"], 2)
HALF_VECTORS = ("vec2h", "vec2bf")
"""The packed 16-bit pairs among :data:`VECTORS` (``__half2``, ``__nv_bfloat162`` in CUDA)."""


class _VectorMeta(type):
    """Metaclass of the vector classes: a short repr, their metadata and NumPy dtype."""

    info: VectorInfo

    def __repr__(cls) -> str:
        return f"gpu_native.{cls.__name__}"

    @property
    def dtype(cls) -> np.dtype:
        """The NumPy dtype of one element (``n`` values of the scalar type)."""
        return cls.info.dtype


class _Vector(metaclass=_VectorMeta):
    """A small vector value on the host: a kernel argument for a vector parameter.

    ``vec3f(x, y, z)``; ``vec3f(s)`` repeats one scalar; ``vec3f()`` is zero; ``vec3f(seq)``
    takes the components of any sequence of three numbers; ``vec3i(v)`` converts another
    vector.  Components convert as in a kernel: ``f32(x)`` rounds, an int narrows by wrapping,
    a float vector's components to ``vec3i`` truncate and saturate (NaN gives 0), and a float
    given as a component of an int vector is refused, as ``x: i32 = 0.5`` is.  They are read
    as ``.x .y .z .w``, by index, or by iterating.  There is no arithmetic on the host: compute
    with NumPy arrays.
    """

    info: ClassVar[VectorInfo]
    __slots__ = ("_values",)

    def __init__(self, *args: Any) -> None:
        info = type(self).info
        n = info.n
        converting = len(args) == 1 and isinstance(args[0], _Vector)
        if len(args) == 1 and not isinstance(args[0], (int, float, np.number)):
            args = tuple(args[0])
            if len(args) != n:
                raise ValueError(f"{type(self).__name__} takes {n} components, not {len(args)}")
        if len(args) == 0:
            args = (0,) * n
        elif len(args) == 1:
            args = args * n
        elif len(args) != n:
            raise TypeError(f"{type(self).__name__}() takes 0, 1 or {n} arguments "
                            f"({len(args)} given)")
        make = SCALAR_CLASSES[info.elem.name]
        if info.elem.kind != "float" and not converting:
            for k, a in enumerate(args):
                if isinstance(a, (numbers.Number, np.number)) and not isinstance(
                        a, (numbers.Integral, np.integer)):
                    name = type(self).__name__
                    raise TypeError(
                        f"{name}'s {_COMPONENTS[k]} must be an int, not {type(a).__name__} "
                        f"{a!r:.40}: a kernel refuses a non-integer for an {info.elem.name} as "
                        f"`x: {info.elem.name} = 0.5` is; convert with int(), or a float "
                        f"vector with {name}(v), which truncates and saturates")
        self._values = tuple(make(a) for a in args)

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self):
        return iter(self._values)

    def __getitem__(self, k):
        return self._values[k]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Vector):
            return type(other) is type(self) and other._values == self._values
        return NotImplemented

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._values))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(v) for v in self._values)})"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self._values, dtype=dtype or type(self).info.elem.dtype)


def _component(k: int) -> property:
    return property(lambda self: self._values[k], doc=f"Component {_COMPONENTS[k]}.")


def _vector(name: str) -> type:
    info = VECTORS[name]
    body: dict[str, Any] = {"info": info, "__module__": "gpu_native", "__slots__": ()}
    for k, attr in enumerate(info.components):
        body[attr] = _component(k)
    cls = _VectorMeta(name, (_Vector,), body)
    cls.__doc__ = (
        f"The ``{name}`` vector type ({info.n} x {info.elem.name}; ``{info.c_name}`` in CUDA "
        f"C++): an annotation, a constructor ``{name}({', '.join(info.components)})`` in kernels "
        f"and on the host, an array element type (``CUDASlice[{name}]``) and a dtype tag "
        f"(``gn.empty(n, gn.{name})``, ``gn.to_device(a, dtype=gn.{name})`` for an "
        f"(n, {info.n}) array).")
    return cls


if TYPE_CHECKING:
    # What type checkers see: arithmetic elementwise with a vector of the same type or with a
    # number (as in kernels), and the components as attributes and by index (`v[k] = x`
    # assigns one in a kernel; a host vector refuses it at run time, as it refuses `v.x = x`).
    class _FloatVector(_Vector):
        def __getitem__(self, k: int) -> float: ...
        def __setitem__(self, k: int, value: float) -> None: ...
        def __iter__(self) -> Iterator[float]: ...
        def __add__(self, other: Self | float) -> Self: ...
        def __radd__(self, other: float) -> Self: ...
        def __sub__(self, other: Self | float) -> Self: ...
        def __rsub__(self, other: float) -> Self: ...
        def __mul__(self, other: Self | float) -> Self: ...
        def __rmul__(self, other: float) -> Self: ...
        def __truediv__(self, other: Self | float) -> Self: ...
        def __rtruediv__(self, other: float) -> Self: ...
        def __neg__(self) -> Self: ...

    class _IntVector(_Vector):
        def __getitem__(self, k: int) -> int: ...
        def __setitem__(self, k: int, value: int) -> None: ...
        def __iter__(self) -> Iterator[int]: ...
        def __add__(self, other: Self | int) -> Self: ...
        def __radd__(self, other: int) -> Self: ...
        def __sub__(self, other: Self | int) -> Self: ...
        def __rsub__(self, other: int) -> Self: ...
        def __mul__(self, other: Self | int) -> Self: ...
        def __rmul__(self, other: int) -> Self: ...
        def __neg__(self) -> Self: ...

    class vec2f(_FloatVector):
        x: float
        y: float

    class vec3f(_FloatVector):
        x: float
        y: float
        z: float

    class vec4f(_FloatVector):
        x: float
        y: float
        z: float
        w: float

    class vec2d(_FloatVector):
        x: float
        y: float

    class vec3d(_FloatVector):
        x: float
        y: float
        z: float

    class vec4d(_FloatVector):
        x: float
        y: float
        z: float
        w: float

    class vec2i(_IntVector):
        x: int
        y: int

    class vec2h(_FloatVector):
        x: float
        y: float

    class vec2bf(_FloatVector):
        x: float
        y: float

    class vec3i(_IntVector):
        x: int
        y: int
        z: int

    class vec4i(_IntVector):
        x: int
        y: int
        z: int
        w: int
else:
    vec2f, vec3f, vec4f = _vector("vec2f"), _vector("vec3f"), _vector("vec4f")
    vec2d, vec3d, vec4d = _vector("vec2d"), _vector("vec3d"), _vector("vec4d")
    vec2i, vec3i, vec4i = _vector("vec2i"), _vector("vec3i"), _vector("vec4i")
    vec2h, vec2bf = _vector("vec2h"), _vector("vec2bf")

VECTOR_CLASSES: dict[str, type] = {
    "vec2f": vec2f, "vec3f": vec3f, "vec4f": vec4f, "vec2d": vec2d, "vec3d": vec3d,
    "vec4d": vec4d, "vec2i": vec2i, "vec3i": vec3i, "vec4i": vec4i, "vec2h": vec2h,
    "vec2bf": vec2bf,
}


def element_info(tag: Any) -> Any:
    """The :class:`ScalarInfo`, :class:`VectorInfo` (a :class:`ComplexInfo` for a complex type)
    or :class:`~gpu_native.lang.structs.StructInfo` of an array element type: a scalar, vector
    or complex class, a ``@gpu_struct`` class, its name (a struct's: its layout key), its info,
    or a NumPy dtype (a subarray dtype such as ``np.dtype((np.float32, 3))`` names a vector,
    ``complex64`` a complex type, a structured dtype a struct).

    Raises ``TypeError`` when ``tag`` names no supported element type.
    """
    from .structs import StructInfo, parse_key, struct_info_of_dtype

    if isinstance(tag, StructInfo):
        return tag
    struct = getattr(tag, "__gpu_struct__", None) if isinstance(tag, type) else None
    if isinstance(struct, StructInfo):
        return struct
    if isinstance(tag, str) and tag.startswith("{"):
        return parse_key(tag)
    if isinstance(tag, np.dtype) and tag.names is not None:
        return struct_info_of_dtype(tag)
    info = getattr(tag, "info", None) if isinstance(tag, type) else None
    if isinstance(info, VectorInfo):
        return info
    if isinstance(tag, VectorInfo):
        return tag
    if isinstance(tag, str) and tag in VECTORS:
        return VECTORS[tag]
    if isinstance(tag, str) and tag in COMPLEXES:
        return COMPLEXES[tag]
    if tag is complex:
        return COMPLEXES["complex128"]
    if not isinstance(tag, (str, ScalarInfo)) and not (
            isinstance(tag, type) and isinstance(info, ScalarInfo)):
        try:
            dt = np.dtype(tag)
        except TypeError:
            dt = None
        if dt is not None and dt.kind == "c":
            for c in COMPLEXES.values():
                if c.dtype == dt:
                    return c
            raise TypeError(f"dtype {dt} has no gpu_native complex type (complex64 and "
                            "complex128 have)")
    if isinstance(tag, np.dtype) and tag.subdtype is not None:
        base, shape = tag.subdtype
        for v in VECTORS.values():
            if (v.n,) == shape and v.elem.name != "bf16" and np.dtype(v.elem.numpy) == base:
                return v
        raise TypeError(f"dtype {tag} has no gpu_native vector type")
    return scalar_info(tag)


# ---- complex numbers --------------------------------------------------------------------------

@node
class ComplexInfo(VectorInfo):
    """What the transpiler and runtime know about a complex type (``complex64``, ``complex128``).

    In the kernel IR a complex value is a pair like a ``vec2`` (``elem`` the type of each part,
    ``n`` 2, real part first, aligned to its size as CUDA's ``cuFloatComplex`` and
    ``cuDoubleComplex`` are), with arithmetic of its own; on the host an array of them is a
    NumPy ``complex64`` / ``complex128`` array, element for element (no extra axis).
    """

    kind = "complex"

    @property
    def c_name(self) -> str:
        return f"gn_{self.name}"

    @property
    def bits(self) -> int:
        return 8 * self.itemsize

    @property
    def align(self) -> int:
        return self.itemsize

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of one element: ``complex64`` or ``complex128``."""
        return np.dtype(self.name)

    def __repr__(self) -> str:
        return self.name


COMPLEXES: dict[str, ComplexInfo] = {
    "complex64": ComplexInfo("complex64", SCALARS["f32"], 2),
    "complex128": ComplexInfo("complex128", SCALARS["f64"], 2),
}


class _ComplexMeta(type):
    """Metaclass of the complex classes: a short repr, their metadata and NumPy dtype."""

    info: ComplexInfo

    def __repr__(cls) -> str:
        return f"gpu_native.{cls.__name__}"

    @property
    def dtype(cls) -> np.dtype:
        """The NumPy dtype of arrays of this type."""
        return cls.info.dtype


class _Complex(complex, metaclass=_ComplexMeta):
    """A complex number whose parts are rounded to the type (``complex64``: to ``f32``).

    ``complex64(re, im)``, ``complex64(z)`` (any complex or real number), ``complex64()`` (zero).
    """

    info: ClassVar[ComplexInfo]

    def __new__(cls, real: Any = 0.0, imag: Any = 0.0):
        # real + 1j * imag, without 0 * inf
        zr, zi = complex(_beyond_float(real)), complex(_beyond_float(imag))
        part = np.dtype(cls.info.elem.numpy).type
        with np.errstate(over="ignore"):  # beyond the range is infinity, as on the device
            return super().__new__(cls, float(part(zr.real - zi.imag)),
                                   float(part(zr.imag + zi.real)))


def _complex(name: str) -> type:
    info = COMPLEXES[name]
    cls = _ComplexMeta(name, (_Complex,), {"info": info, "__module__": "gpu_native",
                                          "__slots__": ()})
    cls.__doc__ = (
        f"The ``{name}`` complex type (two {info.elem.name}, real part first; ``{info.c_name}`` "
        f"in CUDA C++): an annotation, a constructor ``{name}(re, im)`` in kernels and on the "
        f"host, an array element type (``CUDASlice[{name}]``, a NumPy {name} array) and a "
        f"dtype tag (``gn.empty(n, gn.{name})``).")
    return cls


if TYPE_CHECKING:
    # As the real scalars (see above): Python's own complex, which a launch passes.
    complex64: TypeAlias = complex
    complex128: TypeAlias = complex
else:
    complex64, complex128 = _complex("complex64"), _complex("complex128")

COMPLEX_CLASSES: dict[str, type] = {"complex64": complex64, "complex128": complex128}
