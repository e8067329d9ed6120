"""Scalar types and array parameter types of the kernel language.

Each scalar type is a small class (``f32``, ``i32``, ...), so that annotations such as
``CUDASlice[f32]`` and ``x: f32`` are valid types for editors and type checkers.  The same class is
the cast in a kernel (``f32(x)``) and the dtype tag on the host (``gn.empty(10, gn.f32)``).  The
metadata the transpiler and runtime need lives in :data:`SCALARS`, keyed by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import numpy as np

from ..nodes import node

__all__ = [
    "SCALARS",
    "CUDASlice",
    "CUDASlice2D",
    "CUDASlice3D",
    "CUDASliceMut",
    "CUDASliceMut2D",
    "CUDASliceMut3D",
    "Const",
    "ScalarInfo",
    "bf16",
    "bool_",
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
        # Wrap like the device does, so host-side use of a tag agrees with the kernel.
        info = cls.info
        v = int(value)
        if info.kind == "bool":
            v = 1 if v else 0
        else:
            mask = (1 << info.bits) - 1
            v &= mask
            if info.kind == "int" and v > info.max:
                v -= 1 << info.bits
        return super().__new__(cls, v)


class _FloatScalar(float, metaclass=_ScalarMeta):
    info: ClassVar[ScalarInfo]

    def __new__(cls, value: Any = 0.0):
        info = cls.info
        if info.name == "bf16":
            from .halfprec import round_bf16

            return super().__new__(cls, round_bf16(float(value)))
        return super().__new__(cls, float(np.dtype(info.numpy).type(value)))


def _scalar(name: str, base: type) -> type:
    cls = _ScalarMeta(name, (base,), {"info": SCALARS[name], "__module__": "gpu_native"})
    cls.__doc__ = (
        f"The ``{name}`` scalar type ({SCALARS[name].c_name} in CUDA C++): an annotation, a cast "
        f"``{name}(x)`` in kernels, and a dtype tag on the host."
    )
    return cls


if TYPE_CHECKING:
    class bool_(int): ...
    class i8(int): ...
    class i16(int): ...
    class i32(int): ...
    class i64(int): ...
    class u8(int): ...
    class u16(int): ...
    class u32(int): ...
    class u64(int): ...
    class f16(float): ...
    class bf16(float): ...
    class f32(float): ...
    class f64(float): ...
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
    raise TypeError(f"dtype {dt} has no gpu_native scalar type")


T = TypeVar("T")


class _ArrayParam(Generic[T]):
    """Common host-side stand-in for array parameter annotations: never instantiated."""

    ndim: ClassVar[int] = 1
    is_mutable: ClassVar[bool] = False

    def __init__(self) -> None:
        raise TypeError(
            f"{type(self).__name__} is a kernel parameter annotation; pass a device array "
            "(gn.to_device(...)) when launching"
        )

    if TYPE_CHECKING:
        @property
        def shape(self) -> tuple[int, ...]: ...
        def __len__(self) -> int: ...
        def __getitem__(self, index: Any) -> T: ...
        def atomic_ref(self, index: Any) -> AtomicRef[T]: ...


class AtomicRef(Generic[T]):
    """``x.atomic_ref(i)``: atomic read-modify-write operations on one element (kernels only)."""

    if TYPE_CHECKING:
        def fetch_add(self, value: T, order: Any = ...) -> T: ...
        def fetch_sub(self, value: T, order: Any = ...) -> T: ...
        def fetch_min(self, value: T, order: Any = ...) -> T: ...
        def fetch_max(self, value: T, order: Any = ...) -> T: ...
        def fetch_and(self, value: T, order: Any = ...) -> T: ...
        def fetch_or(self, value: T, order: Any = ...) -> T: ...
        def fetch_xor(self, value: T, order: Any = ...) -> T: ...
        def exchange(self, value: T, order: Any = ...) -> T: ...
        def compare_exchange(self, expected: T, desired: T, order: Any = ...) -> T: ...
        def load(self, order: Any = ...) -> T: ...
        def store(self, value: T, order: Any = ...) -> None: ...


class CUDASlice(_ArrayParam[T]):
    """A read-only 1-D device array parameter: ``a[i]``, ``len(a)``."""


class CUDASliceMut(_ArrayParam[T]):
    """A writable 1-D device array parameter.  Plain stores need a unique index (see Safety)."""

    is_mutable = True

    if TYPE_CHECKING:
        def __setitem__(self, index: Any, value: T) -> None: ...


class CUDASlice2D(_ArrayParam[T]):
    """A read-only row-major 2-D device array parameter: ``a[i, j]``, ``a.shape[0]``."""

    ndim = 2


class CUDASliceMut2D(_ArrayParam[T]):
    """A writable row-major 2-D device array parameter."""

    ndim = 2
    is_mutable = True

    if TYPE_CHECKING:
        def __setitem__(self, index: Any, value: T) -> None: ...


class CUDASlice3D(_ArrayParam[T]):
    """A read-only row-major 3-D device array parameter: ``a[i, j, k]``."""

    ndim = 3


class CUDASliceMut3D(_ArrayParam[T]):
    """A writable row-major 3-D device array parameter."""

    ndim = 3
    is_mutable = True

    if TYPE_CHECKING:
        def __setitem__(self, index: Any, value: T) -> None: ...


class Const:
    """A ``@gpu_device`` parameter that takes a compile-time constant (a number, a bool or a
    tuple of them): ``def reduce(v: f32, offsets: Const) -> f32``.

    The argument must be a literal, a module-level constant, another ``Const`` parameter or a
    tuple of these.  The function is specialised per value: inside it, the parameter is the
    constant itself, so ``for off in offsets:`` is unrolled and the bounds proofs know each
    value.  The parameter is not passed at run time.
    """


ARRAY_PARAM_CLASSES: dict[str, type] = {
    c.__name__: c
    for c in (CUDASlice, CUDASliceMut, CUDASlice2D, CUDASliceMut2D, CUDASlice3D, CUDASliceMut3D)
}
