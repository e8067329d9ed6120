"""The parameter annotations of the kernel language that are not element types.

An array parameter is annotated with one of six classes, by dimensions and writability:
``CUDASlice`` / ``CUDASliceMut`` (1-D), ``CUDASlice2D`` / ``CUDASliceMut2D``,
``CUDASlice3D`` / ``CUDASliceMut3D``, each subscripted with its element type (a scalar, vector,
complex or struct type of :mod:`.types` or :mod:`.structs`) and optionally ``Strided``, the layout
argument of a parameter that takes non-contiguous views.  ``Const`` annotates a ``@gpu_device``
parameter that takes a compile-time constant.  None of them is ever instantiated: the transpiler
reads the annotation's source, and the ``if TYPE_CHECKING`` members tell editors and type
checkers what a kernel can do with each kind (``a[i]``, ``a.atomic_ref(i).fetch_add(v)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, overload

if TYPE_CHECKING:
    from typing import TypeAlias

    import numpy as np

    from .registry import MemoryOrder

__all__ = [
    "CUDASlice",
    "CUDASlice2D",
    "CUDASlice3D",
    "CUDASliceMut",
    "CUDASliceMut2D",
    "CUDASliceMut3D",
    "Const",
    "Strided",
]

T = TypeVar("T")


class Strided:
    """The layout argument of an array parameter that takes non-contiguous views:
    ``a: CUDASlice2D[f32, Strided]`` accepts a transpose (``x.T``), a step slice (``x[:, ::2]``)
    or any other strided view of device memory without a copy.  The array's element strides are
    passed with the launch and used in its indexing; without ``Strided`` an array parameter takes
    C-contiguous arrays only (and indexes them row-major, the fast path).
    See docs/language.md, Array views."""

    def __init__(self) -> None:
        raise TypeError("Strided is an annotation argument: CUDASlice2D[f32, Strided]")


class _Contiguous:
    """The layout of an array parameter without ``Strided`` (C-contiguous): the default of the
    annotations' second argument, never written."""


if TYPE_CHECKING:
    # A type parameter with a default (PEP 696), so that `CUDASlice[f32]` is
    # `CUDASlice[f32, _Contiguous]` to type checkers; typing_extensions' stubs come with them.
    from typing_extensions import TypeVar as _DefaultedTypeVar

    Layout = _DefaultedTypeVar("Layout", default=_Contiguous)
else:
    Layout = TypeVar("Layout")


class _ArrayParam(Generic[T, Layout]):
    """Common host-side stand-in for array parameter annotations: never instantiated.

    Type checkers see what a kernel can do with each kind (the ``if TYPE_CHECKING`` members):
    an element read ``a[i]`` (``a[i, j]`` in 2-D) is a ``T``, a writable one takes a ``T``.  The
    second argument is the layout, ``Strided`` or (left out) C-contiguous.
    """

    ndim: ClassVar[int] = 1
    is_mutable: ClassVar[bool] = False

    if not TYPE_CHECKING:
        def __class_getitem__(cls, params):
            # `CUDASlice[f32]`: the layout defaults to C-contiguous, as it does for type
            # checkers; the transpiler reads the annotation's source, not this.
            if not isinstance(params, tuple):
                params = (params, _Contiguous)
            try:
                return super().__class_getitem__(params)
            except TypeError:
                # `CUDASliceMut[f32, f32, f32]`: Python evaluates a kernel's annotations before its
                # decorator runs, so typing's complaint would pre-empt the transpiler's, which
                # says what is wrong at the annotation's line.
                return cls

    def __init__(self) -> None:
        raise TypeError(
            f"{type(self).__name__} is a kernel parameter annotation; pass a device array "
            "(gn.to_device(...)) when launching"
        )

    if TYPE_CHECKING:
        shape: tuple[int, ...]
        def __len__(self) -> int: ...
        @property
        def size(self) -> int: ...  # the element count, an i64 in a kernel


class AtomicRef(Generic[T]):
    """``x.atomic_ref(i)``: atomic read-modify-write operations on one element (kernels only)."""

    if TYPE_CHECKING:
        def fetch_add(self, value: T, order: MemoryOrder = ...) -> T: ...
        def fetch_sub(self, value: T, order: MemoryOrder = ...) -> T: ...
        def fetch_min(self, value: T, order: MemoryOrder = ...) -> T: ...
        def fetch_max(self, value: T, order: MemoryOrder = ...) -> T: ...
        def fetch_and(self, value: T, order: MemoryOrder = ...) -> T: ...
        def fetch_or(self, value: T, order: MemoryOrder = ...) -> T: ...
        def fetch_xor(self, value: T, order: MemoryOrder = ...) -> T: ...
        def exchange(self, value: T, order: MemoryOrder = ...) -> T: ...
        def compare_exchange(self, expected: T, desired: T, order: MemoryOrder = ...) -> T: ...
        def load(self, order: MemoryOrder = ...) -> T: ...
        def store(self, value: T, order: MemoryOrder = ...) -> None: ...


class CUDASlice(_ArrayParam[T, Layout]):
    """A read-only 1-D device array parameter: ``a[i]``, ``len(a)``."""

    if TYPE_CHECKING:
        def __getitem__(self, index: int) -> T: ...


class CUDASliceMut(_ArrayParam[T, Layout]):
    """A writable 1-D device array parameter.  Plain stores need a unique index (see Safety)."""

    is_mutable = True

    if TYPE_CHECKING:
        def __getitem__(self, index: int) -> T: ...
        # A store takes an element, `T`, and (the overloads on `self` ahead of that one) the
        # NumPy scalars kernels spell (`np.float32(x)` is `f32(x)`) of the kinds a Python number
        # of `T` would stand for: an int into a float element, a real into a complex one, as
        # Python promotes them; np.float32 into an int element is as wrong as 0.5 is, and
        # np.bool_ goes into a bool_ element only.  Widths are the transpiler's, as for Python
        # numbers.  The 2-D and 3-D kinds' stores are the same.
        @overload
        def __setitem__(self: CUDASliceMut[float, Any], index: int,
                        value: float | np.floating[Any] | np.integer[Any]) -> None: ...
        @overload
        def __setitem__(self: CUDASliceMut[int, Any], index: int,
                        value: int | np.integer[Any]) -> None: ...
        @overload
        def __setitem__(self: CUDASliceMut[bool, Any], index: int,
                        value: bool | np.bool_) -> None: ...
        @overload
        def __setitem__(self: CUDASliceMut[complex, Any], index: int,
                        value: complex | np.number[Any]) -> None: ...
        @overload
        def __setitem__(self, index: int, value: T) -> None: ...
        def __setitem__(self, index: Any, value: Any) -> None: ...
        def atomic_ref(self, index: int, /) -> AtomicRef[T]: ...


class CUDASlice2D(_ArrayParam[T, Layout]):
    """A read-only row-major 2-D device array parameter: ``a[i, j]``, ``a.shape[0]``."""

    ndim = 2

    if TYPE_CHECKING:
        def __getitem__(self, index: tuple[int, int]) -> T: ...


class CUDASliceMut2D(_ArrayParam[T, Layout]):
    """A writable row-major 2-D device array parameter."""

    ndim = 2
    is_mutable = True

    if TYPE_CHECKING:
        def __getitem__(self, index: tuple[int, int]) -> T: ...
        @overload
        def __setitem__(self: CUDASliceMut2D[float, Any], index: tuple[int, int],
                        value: float | np.floating[Any] | np.integer[Any]) -> None: ...
        @overload
        def __setitem__(self: CUDASliceMut2D[int, Any], index: tuple[int, int],
                        value: int | np.integer[Any]) -> None: ...
        @overload
        def __setitem__(self: CUDASliceMut2D[bool, Any], index: tuple[int, int],
                        value: bool | np.bool_) -> None: ...
        @overload
        def __setitem__(self: CUDASliceMut2D[complex, Any], index: tuple[int, int],
                        value: complex | np.number[Any]) -> None: ...
        @overload
        def __setitem__(self, index: tuple[int, int], value: T) -> None: ...
        def __setitem__(self, index: Any, value: Any) -> None: ...
        def atomic_ref(self, i: int, j: int, /) -> AtomicRef[T]: ...


class CUDASlice3D(_ArrayParam[T, Layout]):
    """A read-only row-major 3-D device array parameter: ``a[i, j, k]``."""

    ndim = 3

    if TYPE_CHECKING:
        def __getitem__(self, index: tuple[int, int, int]) -> T: ...


class CUDASliceMut3D(_ArrayParam[T, Layout]):
    """A writable row-major 3-D device array parameter."""

    ndim = 3
    is_mutable = True

    if TYPE_CHECKING:
        def __getitem__(self, index: tuple[int, int, int]) -> T: ...
        @overload
        def __setitem__(self: CUDASliceMut3D[float, Any], index: tuple[int, int, int],
                        value: float | np.floating[Any] | np.integer[Any]) -> None: ...
        @overload
        def __setitem__(self: CUDASliceMut3D[int, Any], index: tuple[int, int, int],
                        value: int | np.integer[Any]) -> None: ...
        @overload
        def __setitem__(self: CUDASliceMut3D[bool, Any], index: tuple[int, int, int],
                        value: bool | np.bool_) -> None: ...
        @overload
        def __setitem__(self: CUDASliceMut3D[complex, Any], index: tuple[int, int, int],
                        value: complex | np.number[Any]) -> None: ...
        @overload
        def __setitem__(self, index: tuple[int, int, int], value: T) -> None: ...
        def __setitem__(self, index: Any, value: Any) -> None: ...
        def atomic_ref(self, i: int, j: int, k: int, /) -> AtomicRef[T]: ...


if TYPE_CHECKING:
    class AnyArray(CUDASliceMut3D[Any, Any], CUDASliceMut2D[Any, Any], CUDASliceMut[Any, Any],
                   CUDASlice3D[Any, Any], CUDASlice2D[Any, Any], CUDASlice[Any, Any]):
        """What type checkers take a host device array to be (``DeviceArray``'s base for
        them): an argument for any array parameter, ``Strided`` or not, whose element type,
        dimensions and layout the launch checks.  (Its layout argument is ``Any``: left out, it
        would be the C-contiguous default, which a ``Strided`` parameter refuses.)"""

        def __getitem__(self, index: Any) -> Any: ...
        def __setitem__(self, index: Any, value: Any) -> None: ...
        def atomic_ref(self, *index: int) -> AtomicRef[Any]: ...


if TYPE_CHECKING:
    # A ``Const`` parameter takes a number, a bool or a tuple of them, and is the constant
    # itself in the body: any type fits.
    Const: TypeAlias = Any
else:
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
