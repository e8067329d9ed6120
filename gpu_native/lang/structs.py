"""Structs of the kernel language: ``@gpu_struct`` classes, their C layout and NumPy dtype.

A struct is declared once, as a class with annotated fields::

    @gn.gpu_struct
    class Particle:
        pos: gn.vec3f
        vel: gn.vec3f
        mass: gn.f32

The fields are scalars (``bool_``, the integer types, ``f16``, ``f32``, ``f64``), the small
vector types (``vec3f`` ...) or other structs.  The layout is C's, the one NVRTC gives the
generated ``struct``: each field at the next offset that is a multiple of its alignment, the
struct aligned to its most aligned field and padded to a multiple of that.  ``Particle.dtype``
is the NumPy structured dtype with exactly those offsets and that itemsize (``align=True``), so a
NumPy array of it is an array of the C structs, byte for byte.

:class:`StructInfo` is what the transpiler and the runtime know of a struct (like
:class:`~gpu_native.lang.types.VectorInfo` for a vector).  Its :attr:`StructInfo.name` is the
*layout key*, a canonical text of the field names, types and offsets and the size
(``{pos:vec3f@0,vel:vec3f@12,mass:f32@24}28``): two structs with one key have one memory layout,
so a device array of a NumPy dtype and a parameter of a ``@gpu_struct`` class match exactly when
their keys do.  The key is what kernel specs carry (``gpu_native.spec.Param.dtype``); the runtime
reads it back with :func:`parse_key` and never needs the class.

This module imports nothing of the transpiler: the runtime uses it to check and pack arguments.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import re
import sys
import types
import typing
from typing import Any

import numpy as np

from ..nodes import node
from .params import _ArrayParam, _Contiguous
from .types import SCALARS, VECTORS, ScalarInfo, VectorInfo

__all__ = ["StructField", "StructInfo", "gpu_struct", "parse_key", "struct_info_of_dtype"]

# Field types a struct can hold (bf16 has no NumPy dtype, so no structured dtype can hold one).
FIELD_SCALARS = tuple(name for name in SCALARS if name != "bf16")


@node
class StructField:
    """One field: its name, type (scalar, vector or struct) and byte offset in the struct."""

    name: str
    info: ScalarInfo | VectorInfo | StructInfo
    offset: int


@node
class StructInfo:
    """What the transpiler and runtime know about one struct type.

    ``title`` is the class's name (``Particle``; ``"struct"`` for one read from a NumPy dtype),
    ``module`` the module that declares it, ``fields`` the fields in declaration order with
    their C offsets, ``itemsize`` and ``align`` the C struct's ``sizeof`` and ``alignof``.
    """

    title: str
    module: str
    fields: tuple[StructField, ...]
    itemsize: int
    align: int

    kind = "struct"

    @property
    def name(self) -> str:
        """The layout key (see the module docstring)."""
        return layout_key(self)

    @property
    def c_name(self) -> str:
        """The generated C++ struct's name: ``gn_struct_Particle`` (a name that is not ASCII,
        which NVRTC does not take, by its code points)."""
        if self.title.isascii():
            return f"gn_struct_{self.title}"
        return "gn_struct_u" + "_".join(f"{ord(c):x}" for c in self.title)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy structured dtype with the C layout."""
        return _dtype(self)

    def field(self, name: str) -> StructField | None:
        """The field called ``name``, or None."""
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def leaves(self) -> list[ScalarInfo]:
        """The scalar type of every scalar in the struct, in field order (a vector's
        components, a nested struct's fields): how a parameter passes it, one slot each."""
        out: list[ScalarInfo] = []
        for f in self.fields:
            if isinstance(f.info, StructInfo):
                out.extend(f.info.leaves())
            elif isinstance(f.info, VectorInfo):
                out.extend([f.info.elem] * f.info.n)
            else:
                out.append(f.info)
        return out

    def leaf_paths(self, prefix: str = "") -> list[str]:
        """The dotted name of each scalar of :meth:`leaves` (``pos.x``, ``mass``)."""
        out: list[str] = []
        for f in self.fields:
            if isinstance(f.info, StructInfo):
                out.extend(f.info.leaf_paths(f"{prefix}{f.name}."))
            elif isinstance(f.info, VectorInfo):
                out.extend(f"{prefix}{f.name}.{c}" for c in f.info.components)
            else:
                out.append(prefix + f.name)
        return out

    def __str__(self) -> str:
        return self.title

    def __repr__(self) -> str:
        return f"StructInfo({self.title}: {self.name})"


def _align_up(n: int, align: int) -> int:
    return -(-n // align) * align


def c_layout(title: str, module: str, fields: list[tuple[str, Any]]) -> StructInfo:
    """The :class:`StructInfo` of a struct with ``fields`` (name, field type info) in order,
    laid out as C lays out a struct."""
    offset, align, out = 0, 1, []
    for name, info in fields:
        falign = info.itemsize if isinstance(info, ScalarInfo) else info.align
        offset = _align_up(offset, falign)
        out.append(StructField(name, info, offset))
        offset += info.itemsize
        align = max(align, falign)
    return StructInfo(title, module, tuple(out), _align_up(max(offset, 1), align), align)


def layout_key(info: StructInfo) -> str:
    """The canonical text of a layout: ``{x:f32@0,v:vec3f@4}16``."""
    parts = []
    for f in info.fields:
        inner = layout_key(f.info) if isinstance(f.info, StructInfo) else f.info.name
        parts.append(f"{f.name}:{inner}@{f.offset}")
    return f"{{{','.join(parts)}}}{info.itemsize}"


_NESTED = re.compile(r"[A-Za-z_0-9]*\{")


@functools.lru_cache(maxsize=256)
def parse_key(key: str, module: str = "") -> StructInfo:
    """The :class:`StructInfo` a :func:`layout_key` text describes (``ValueError`` if it is
    none).  Alignments are recomputed from the field types, as C computes them."""
    pos = 0

    def expect(pattern: str) -> re.Match:
        nonlocal pos
        m = re.compile(pattern).match(key, pos)
        if m is None:
            raise ValueError(f"not a struct layout key: {key!r:.80}")
        pos = m.end()
        return m

    def struct() -> StructInfo:
        title = expect(r"([A-Za-z_][A-Za-z_0-9]*)?\{").group(1) or "struct"
        fields: list[StructField] = []
        align = 1
        while not key.startswith("}", pos):
            if fields:
                expect(",")
            name = expect(r"([A-Za-z_][A-Za-z_0-9]*):").group(1)
            if _NESTED.match(key, pos):
                info: Any = struct()
            else:
                tname = expect(r"([A-Za-z_][A-Za-z_0-9]*)").group(1)
                info = field_info(tname)
            offset = int(expect(r"@(\d+)").group(1))
            fields.append(StructField(name, info, offset))
            align = max(align, info.itemsize if isinstance(info, ScalarInfo) else info.align)
        size = int(expect(r"\}(\d+)").group(1))
        return StructInfo(title, module, tuple(fields), size, align)

    out = struct()
    if pos != len(key):
        raise ValueError(f"not a struct layout key: {key!r:.80}")
    return out


def field_info(name: str) -> ScalarInfo | VectorInfo:
    """The info of a scalar or vector field type by name (``ValueError`` for any other)."""
    if name in FIELD_SCALARS:
        return SCALARS[name]
    if name in VECTORS and VECTORS[name].elem.name != "bf16":
        return VECTORS[name]
    raise ValueError(f"{name} is not a struct field type")


def _leaf_dtype(info) -> Any:
    if isinstance(info, StructInfo):
        return info.dtype
    if isinstance(info, VectorInfo):
        return (info.elem.dtype, (info.n,))
    return info.dtype


@functools.lru_cache(maxsize=256)
def _dtype(info: StructInfo) -> np.dtype:
    spec: Any = {"names": [f.name for f in info.fields],
            "formats": [_leaf_dtype(f.info) for f in info.fields],
            "offsets": [f.offset for f in info.fields], "itemsize": info.itemsize}
    try:
        return np.dtype(spec, align=True)
    except ValueError:  # a packed layout read from a NumPy dtype (which kernels refuse)
        return np.dtype(spec)


def struct_info_of_dtype(dtype: np.dtype) -> StructInfo:
    """The :class:`StructInfo` of a NumPy structured dtype (its offsets and itemsize as they are;
    a sub-array of 2, 3 or 4 ``float32``/``float64``/``int32`` is the vector).

    Raises ``TypeError`` for a field that no struct can hold.
    """
    fields: list[StructField] = []
    align = 1
    names, by_name = dtype.names, dtype.fields
    assert names is not None and by_name is not None
    for name in names:
        fdt, offset = by_name[name][:2]
        info: Any
        if fdt.names is not None:
            info = struct_info_of_dtype(fdt)
        elif fdt.subdtype is not None:
            base, shape = fdt.subdtype
            info = next((v for v in VECTORS.values() if (v.n,) == shape and
                         v.elem.name != "bf16" and np.dtype(v.elem.numpy) == base), None)
        else:
            info = next((SCALARS[s] for s in FIELD_SCALARS
                         if np.dtype(SCALARS[s].numpy) == fdt), None)
        if info is None:
            raise TypeError(f"field '{name}' of dtype {dtype} has type {fdt}, which no "
                            "gpu_native struct field has")
        fields.append(StructField(name, info, int(offset)))
        align = max(align, info.itemsize if isinstance(info, ScalarInfo) else info.align)
    return StructInfo("struct", "", tuple(fields), int(dtype.itemsize), align)


def mismatch(want: StructInfo, got: StructInfo, path: str = "",
             owner: str = "the parameter") -> str:
    """Why a layout ``got`` is not ``want`` (the layout of ``owner``), naming the first field
    that differs."""
    for k, f in enumerate(want.fields):
        where = f"{path}{f.name}"
        if k >= len(got.fields):
            return f"it has no field '{where}'"
        g = got.fields[k]
        if g.name != f.name:
            return f"its field {k} is '{path}{g.name}' where {owner} has '{where}'"
        if isinstance(f.info, StructInfo) and isinstance(g.info, StructInfo):
            inner = mismatch(f.info, g.info, where + ".", owner)
            if inner:
                return inner
        elif f.info.name != g.info.name:
            return f"its field '{where}' is {g.info.name}, not {f.info.name}"
        if g.offset != f.offset:
            return (f"its field '{where}' is at byte offset {g.offset}, not {f.offset} (make "
                    "the array with the C layout: the @gpu_struct class's .dtype)")
    if len(got.fields) > len(want.fields):
        return f"it has a field '{path}{got.fields[len(want.fields)].name}' that " \
               f"{owner} has not"
    if got.itemsize != want.itemsize:
        return f"its itemsize is {got.itemsize} bytes, not {want.itemsize}"
    return ""


# ---- the host class ------------------------------------------------------------------------------

# The decorated class itself, so that a checker knows its fields (``p.mass`` is a ``float``) and
# takes it as an annotation: a decorator returning ``type`` would make it ``type[Unknown]``.
_StructClass = typing.TypeVar("_StructClass", bound=type)


def _host_field_info(cls_name: str, name: str, ann: Any) -> Any:
    from .types import element_info

    inner = getattr(ann, "__gpu_struct__", None)
    if isinstance(inner, StructInfo):
        return inner
    try:
        info = element_info(ann)
    except (TypeError, KeyError):
        info = None
    if info is None or getattr(info, "elem", info).name == "bf16":
        # bf16 has no NumPy dtype of its own, so no structured dtype holds one.
        origin = getattr(ann, "__origin__", None)
        array = " (an array is passed as a kernel parameter of its own)" if isinstance(
            origin, type) and issubclass(origin, _ArrayParam) else ""
        raise TypeError(f"field '{name}' of struct {cls_name} has type {_shown(ann)}; a struct "
                        "field is a scalar type (bool_, i8 ... u64, f16, f32, f64), a vector "
                        f"type (vec3f ..., vec2h, not vec2bf) or another @gpu_struct "
                        f"class{array}")
    return info


def _shown(ann: Any) -> str:
    """``ann`` as a user writes it: ``CUDASlice[f32]``, not its generic alias's repr with the
    layout marker gpu_native adds."""
    origin = getattr(ann, "__origin__", None)
    if origin is None:
        return getattr(ann, "__name__", repr(ann))
    args = [_shown(a) for a in getattr(ann, "__args__", ()) if a is not _Contiguous]
    return f"{getattr(origin, '__name__', repr(origin))}[{', '.join(args)}]"


def _zero(info) -> Any:
    if isinstance(info, StructInfo):
        return None  # filled in by the constructor with a zero instance
    if isinstance(info, VectorInfo):
        from .types import VECTOR_CLASSES

        return VECTOR_CLASSES[info.name]()
    return info.dtype.type(0).item()


def _host_value(cls_name: str, name: str, info, hint, value: Any) -> Any:
    """A field's value as the host instance keeps it, converted as an assignment in a kernel
    converts it: an int to a float field becomes a float (``P(mass=1)`` is ``1.0``; a launch
    rounds it to the field's type), an int to an integer field is itself, a sequence
    to a vector field is that vector; a float to an integer field, an int outside an integer
    field's range (as a scalar parameter's is), a str or None anywhere, and a value of another
    struct are refused."""
    from .types import VECTOR_CLASSES

    where = f"field '{name}' of {cls_name}"
    if isinstance(info, StructInfo):
        if not isinstance(value, hint):
            raise TypeError(f"{where} must be a {hint.__name__}, not {type(value).__name__}")
        return value
    if isinstance(info, VectorInfo):
        vec = VECTOR_CLASSES[info.name]
        if isinstance(value, vec):
            return value
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            raise TypeError(f"{where} takes a gn.{info.name} or a sequence of {info.n} numbers, "
                            f"not {type(value).__name__} {value!r:.40}")
        try:
            return vec(value)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{where}: {exc}") from None
    number = isinstance(value, (numbers.Number, np.number, np.bool_))
    if info.kind == "float":
        if not number or isinstance(value, (complex, np.complexfloating)):
            raise TypeError(f"{where} takes a number ({info.name}), not "
                            f"{type(value).__name__} {value!r:.40}")
        # (Kept as a Python float: a launch rounds it, and refuses one beyond the range.)
        return float(value)
    if not isinstance(value, (numbers.Integral, np.integer, np.bool_)):
        raise TypeError(f"{where} takes an int ({info.name}), not {type(value).__name__} "
                        f"{value!r:.40} (an integer field refuses a float, as `x: "
                        f"{info.name} = 0.5` is refused in a kernel)")
    if info.kind == "bool":
        return bool(value)
    whole = int(value)
    if not info.min <= whole <= info.max:
        # As a scalar parameter's: a wrapped value would reach the kernel with no error.
        shown = str(whole) if whole.bit_length() <= 128 else \
            f"an integer of {whole.bit_length()} bits"  # str() of a huge one may be refused
        raise ValueError(f"{where} is {shown}, out of range for {info.name} ({info.min} to "
                         f"{info.max}); convert it explicitly ({info.name}(x) wraps) if a "
                         "wrapped value is meant")
    return whole


def _defining_namespace() -> dict[str, Any]:
    """The local names of the code that applies the decorator: the first frame outside this
    package (the decorator is called through :func:`..tracebacks.entry_point`)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == \
            "gpu_native":
        frame = frame.f_back
    return dict(frame.f_locals) if frame is not None else {}


def _field_types(cls: type, own: list[str], where: dict[str, Any]) -> dict[str, Any]:
    """The type of each of ``own`` fields, its annotation evaluated where a string (``from
    __future__ import annotations``) in the class's module and ``where`` (the namespace the
    class is defined in: a struct declared in a function names another of that function's);
    ``TypeError`` naming a field whose annotation names nothing there."""
    module = sys.modules.get(cls.__module__)
    scope = {**(vars(module) if module is not None else {}), **where}
    raw = inspect.get_annotations(cls)
    hints: dict[str, Any] = {}
    for name in own:
        annotation = raw[name]
        # Twice: a quoted annotation (`next: "Node"`) under the future import is a string's
        # source.
        for _ in range(2):
            if not isinstance(annotation, str):
                break
            if annotation == cls.__name__:
                raise TypeError(f"field '{name}' of struct {cls.__name__} is of the struct "
                                "itself; a struct cannot contain itself (index another array "
                                "instead)")
            try:
                annotation = eval(annotation, scope)  # a type's name, as typing evaluates it
            except Exception as exc:
                raise TypeError(f"field '{name}' of struct {cls.__name__} has the annotation "
                                f"'{annotation}', which names nothing defined where the class "
                                f"is ({type(exc).__name__}: {exc})") from None
        hints[name] = annotation
    return hints


def gpu_struct(cls: _StructClass) -> _StructClass:
    """Make ``cls``, a class of annotated fields, a struct of the kernel language.

    In kernels the class is an annotation (parameters passed by value, locals, device function
    arguments and results), an array element type (``CUDASlice[P]``, ``shared_array(P, n)``) and
    a constructor (``P()`` is zero, ``P(x=1.0, v=vec3f(0.0))`` and ``P(1.0, v)`` set fields in
    order, the others zero).  On the host it is a plain record class with the same constructor,
    a kernel argument for a parameter of its type, and ``P.dtype`` is the NumPy structured dtype
    with the C layout, for the arrays (``gn.to_device(np.zeros(n, P.dtype))``).

    Raises ``TypeError`` for a field of a type no struct holds, a field with a default value,
    and anything else in the class body (a method, an assignment): what the kernels' checker
    refuses once a kernel uses the struct, refused here even where none does.
    """
    own = list(inspect.get_annotations(cls))  # this class's own fields, in order
    hints = _field_types(cls, own, _defining_namespace())
    if not own:
        raise TypeError(f"@gpu_struct class {cls.__name__} declares no fields "
                        "(annotate them: `x: f32`)")
    for name in vars(cls):
        if name.startswith("__") and name.endswith("__"):
            continue                # the class's own machinery (__module__, __doc__ ...)
        if name in own:
            raise TypeError(f"field '{name}' of struct {cls.__name__} has a default value; "
                            f"struct fields have none ({cls.__name__}() sets every field to "
                            "zero)")
        raise TypeError(f"struct {cls.__name__} may only declare fields (`x: f32`); methods, "
                        f"assignments and other statements ('{name}') are not supported in a "
                        "@gpu_struct class")
    infos = [(name, _host_field_info(cls.__name__, name, hints[name])) for name in own]
    info = c_layout(cls.__name__, cls.__module__, infos)
    names = tuple(name for name, _ in infos)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes at most {len(names)} fields "
                            f"({len(args)} given)")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{cls.__name__} has no field '{key}'; it has "
                                f"{', '.join(names)}")
            if key in values:
                raise TypeError(f"{cls.__name__}() got field '{key}' twice")
            values[key] = value
        for f in info.fields:
            if f.name in values:
                value = values[f.name]
            elif isinstance(f.info, StructInfo):
                value = hints[f.name]()
            else:
                value = _zero(f.info)
            setattr(self, f.name, value)

    fields = {f.name: f.info for f in info.fields}

    def __setattr__(self, key: str, value: Any) -> None:
        # A misspelt field would be a new attribute that no kernel reads: refuse it, as a
        # class with __slots__ does.
        if key not in names:
            raise AttributeError(f"{cls.__name__} has no field '{key}'; it has "
                                 f"{', '.join(names)}")
        object.__setattr__(self, key,
                           _host_value(cls.__name__, key, fields[key], hints[key], value))

    def __repr__(self) -> str:
        return f"{cls.__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in names)

    members = {"__init__": __init__, "__setattr__": __setattr__, "__repr__": __repr__,
               "__eq__": __eq__, "__hash__": None, "__gpu_struct__": info, "dtype": info.dtype,
               "__match_args__": names}
    for key, member in members.items():
        setattr(cls, key, member)
    return cls


def leaf_values(info: StructInfo, value: Any, where: str) -> list:
    """The scalars of a struct value in :meth:`StructInfo.leaves` order, from an instance of a
    ``@gpu_struct`` class, a NumPy structured scalar (``np.void``) or a mapping of field names.

    Raises ``TypeError`` naming ``where`` and the field when ``value`` is none of these or lacks
    a field.
    """
    out: list = []
    is_void = isinstance(value, np.void) and value.dtype.names is not None
    if is_void:
        assert value.dtype.names is not None
        missing = [f.name for f in info.fields if f.name not in value.dtype.names]
        if missing:
            raise TypeError(f"{where} is a NumPy struct without field '{missing[0]}' "
                            f"({info.title} expected)")
    elif not hasattr(value, "__gpu_struct__") and not isinstance(value, dict):
        raise TypeError(f"{where} must be a struct with fields "
                        f"{', '.join(f.name for f in info.fields)} (an instance of its "
                        "@gpu_struct class, or a NumPy structured scalar of its dtype), not "
                        f"{type(value).__name__}")
    for f in info.fields:
        if is_void:
            item = value[f.name]
        elif isinstance(value, dict):
            if f.name not in value:
                raise TypeError(f"{where} has no field '{f.name}'")
            item = value[f.name]
        else:
            if not hasattr(value, f.name):
                raise TypeError(f"{where} has no field '{f.name}' ({info.title} expected)")
            item = getattr(value, f.name)
        if isinstance(f.info, StructInfo):
            out.extend(leaf_values(f.info, item, f"{where}, field {f.name},"))
        elif isinstance(f.info, VectorInfo):
            items = list(item) if hasattr(item, "__len__") else None
            if items is None or len(items) != f.info.n:
                raise TypeError(f"{where}, field {f.name}, must be a {f.info.name} "
                                f"({f.info.n} numbers)")
            out.extend(items)
        else:
            out.append(item)
    return out
