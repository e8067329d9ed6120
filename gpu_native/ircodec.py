"""A kernel's checked IR as bytes: what the simulator runs, carried in the rewritten module.

The rewrite embeds ``encode(kernel)`` in each variant of a kernel's spec (the ``"ir"`` entry,
beside its CUDA source): the :class:`~gpu_native.ir.Kernel` the simulator compiles, with every
device function it calls.  The simulator backend decodes it at its first launch of that variant.
So the simulator runs exactly the kernel that was imported (never a copy transpiled again from the
file on disk, which may have been edited or deleted since), and running kernels on the CPU needs
neither the transpiler nor libcst.  The bytes do not enter any cache key: a compiled kernel is
identified by its CUDA source alone (see :mod:`gpu_native.cache.keys`).

Format (:data:`FORMAT`): ``zlib(marshal((FORMAT, SCHEMA, records)))``.  ``records`` lists every
IR node once, children before parents, each as ``(class name, field value, ...)`` in the class's
field order; the last one is the kernel.  A field value is plain data (``None``, ``bool``,
``int``, ``float``, ``str``, ``bytes``, or a tuple of field values) or a reference to an earlier
record, written as the one-element list ``[index]``.  Nodes are recorded once per *object*, not
per value, so what identity means in the IR survives: one :class:`~gpu_native.ir.Var` stays one
variable wherever it is used, a device function called from several places stays one function,
and ``Const(0.0)`` and ``Const(-0.0)`` (equal as values) stay two constants.  Floats travel as
their IEEE bits (``-0.0``, ``nan`` and ``inf`` included); a :class:`~gpu_native.lang.types.ScalarInfo`
travels as its name and decodes to the one in :data:`~gpu_native.lang.types.SCALARS` (a
:class:`~gpu_native.lang.types.VectorInfo` likewise, from :data:`~gpu_native.lang.types.VECTORS`;
a :class:`~gpu_native.lang.structs.StructInfo` and its fields are records, as nodes are).

Decoding runs no code: no pickle and no ``eval``.  It accepts only the plain types above, class
names from a fixed table (the node classes of :mod:`gpu_native.ir`, ``SourceSpan``, ``ScalarInfo``,
``VectorInfo``, ``StructInfo``, ``StructField`` and ``dict``), references to earlier records and the right number of fields, and a kernel last;
anything else (a damaged, truncated or foreign literal) raises :class:`GpuNativeError`.
``SCHEMA`` is a digest of the table's class and field names, so bytes written by a gpu_native
whose IR had other fields are refused with the same error instead of being misread.
"""

from __future__ import annotations

import hashlib
import marshal
import zlib

from . import ir
from .errors import GpuNativeError, SourceSpan
from .lang.structs import StructField, StructInfo
from .lang.types import COMPLEXES, SCALARS, VECTORS, ComplexInfo, ScalarInfo, VectorInfo
from .launchexpr import from_literal, to_literal
from .nodes import fields
from .spec import IndexFits, LaunchAssert, ParamCheck, ShapeAssert

__all__ = ["FORMAT", "SCHEMA", "decode_kernel", "encode_kernel"]

FORMAT = 2  # 2: a param check carries its while loop's counter
# Version 2 writes every value in full (no back-references, which later versions add for
# objects referenced more than once): the bytes depend only on the IR's values and shape, never
# on reference counts, so a rewrite is reproducible; zlib removes the repetition as well.
_MARSHAL_VERSION = 2

# The classes a record may name: every node class of the IR, the span every node carries, and
# the two stand-ins below (whose "fields" are written by hand).
_CLASSES: dict[str, type] = {
    name: cls for name, cls in vars(ir).items()
    if isinstance(cls, type) and cls.__module__ == ir.__name__ and hasattr(cls, "__node_fields__")
}
_CLASSES["SourceSpan"] = SourceSpan
_CLASSES["KernelOptions"] = ir.KernelOptions  # the spec's record, which the IR carries too
# A struct type's layout is a record like a node (its fields' types by reference, so a struct
# nested in several places stays one object).
_CLASSES["StructInfo"] = StructInfo
_CLASSES["StructField"] = StructField
_SCALAR_INFO = "ScalarInfo"  # (name,): decodes to SCALARS[name]
_VECTOR_INFO = "VectorInfo"  # (name,): decodes to VECTORS[name]
_COMPLEX_INFO = "ComplexInfo"  # (name,): decodes to COMPLEXES[name]
_DICT = "dict"  # (key, value, key, value, ...)
# Fields for the reader of `gpu-native expand`, not for the simulator: left out of the bytes (and
# of SCHEMA), and given their defaults when decoded.
NOT_ENCODED: dict[str, dict[str, object]] = {"Store": {"proof": ""}}
_FIELDS: dict[str, tuple[str, ...]] = {
    name: tuple(f for f in fields(cls) if f not in NOT_ENCODED.get(name, {}))
    for name, cls in _CLASSES.items()}
SCHEMA = hashlib.blake2b(
    repr(sorted(_FIELDS.items())).encode(), digest_size=8).hexdigest()
_PLAIN = (type(None), bool, int, float, str, bytes)


# A kernel's launch checks (gpu_native.spec records) travel inline, as the plain tuples of the
# layout they had before they were records: ``("assert", site, tree)``, ``("fits", tree, limit,
# type, line, col, end_col)``, ``("param", tree, param, array, line, file, counter)`` and
# ``("shape", site, tree)``, each tree in its literal form (gpu_native.launchexpr.to_literal).
# So the bytes, which ``gpu-native expand`` reports and rewritten modules embed, did not change
# with them (a param check's counter came with FORMAT 2), nor with the typed trees.
def _check_plain(check) -> tuple:
    tree = to_literal(check.tree)
    if type(check) is LaunchAssert:
        return ("assert", check.site, tree)
    if type(check) is ParamCheck:
        return ("param", tree, check.param, check.array, check.line, check.file, check.counter)
    if type(check) is ShapeAssert:
        return ("shape", check.site, tree)
    return ("fits", tree, check.limit, check.type, check.line, check.col, check.end_col)


def _check_record(value) -> LaunchAssert | IndexFits | ParamCheck | ShapeAssert:
    try:
        if type(value) is tuple and len(value) == 3 and value[0] == "assert" and \
                type(value[1]) is int:
            return LaunchAssert(from_literal(value[2]), value[1])
        if type(value) is tuple and len(value) == 7 and value[0] == "fits":
            return IndexFits(from_literal(value[1]), *value[2:])
        if type(value) is tuple and len(value) == 7 and value[0] == "param":
            return ParamCheck(from_literal(value[1], True), *value[2:])
        if type(value) is tuple and len(value) == 3 and value[0] == "shape" and \
                type(value[1]) is int:
            return ShapeAssert(from_literal(value[2], True), value[1])
    except (TypeError, ValueError) as exc:
        raise _Malformed(f"a launch check's tree is malformed ({exc})") from None
    raise _Malformed(f"a launch check is {value!r:.60}")


_INLINE = {LaunchAssert: _check_plain, IndexFits: _check_plain, ParamCheck: _check_plain,
           ShapeAssert: _check_plain}
_INLINE_FIELDS = {"Kernel": "launch_checks"}


# ---- encoding (at rewrite time) -------------------------------------------------------------


def _nodes_in(value, out: list) -> None:
    """Append the nodes and dicts inside a field value (through tuples) to ``out``."""
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is tuple:
            stack.extend(v)
        elif type(v) not in _PLAIN and type(v) not in _INLINE:
            out.append(v)


class _Encoder:
    def __init__(self) -> None:
        self.records: list[tuple] = []
        self.index: dict[int, int] = {}  # id(node) -> its record

    def plain(self, value):
        t = type(value)
        if t in _PLAIN:
            return value
        if t is tuple:
            return tuple(self.plain(v) for v in value)
        inline = _INLINE.get(t)
        if inline is not None:
            return inline(value)
        return [self.index[id(value)]]

    def parts(self, obj) -> tuple[str, tuple]:
        """The class name and the field values of one node (or dict)."""
        t = type(obj)
        if t is ScalarInfo:
            return _SCALAR_INFO, (obj.name,)
        if t is VectorInfo:
            return _VECTOR_INFO, (obj.name,)
        if t is ComplexInfo:
            return _COMPLEX_INFO, (obj.name,)
        if t is dict:
            return _DICT, tuple(x for item in obj.items() for x in item)
        name = t.__name__
        if _CLASSES.get(name) is not t:
            raise GpuNativeError(f"cannot encode the kernel IR: {t.__module__}.{t.__qualname__} "
                                 "is not an IR node")
        d = obj.__dict__
        return name, tuple(d[f] for f in _FIELDS[name])

    def add(self, root) -> None:
        # Iterative post-order: a record's children are recorded before it, however deep the
        # expressions nest.
        stack: list[tuple[object, bool]] = [(root, False)]
        index = self.index
        pending: set[int] = set()
        while stack:
            obj, ready = stack.pop()
            if id(obj) in index:
                continue
            name, values = self.parts(obj)
            if not ready:
                if id(obj) in pending:  # the checker refuses recursion; this is a bug
                    raise GpuNativeError(f"cannot encode the kernel IR: {obj!r} contains itself")
                pending.add(id(obj))
                stack.append((obj, True))
                children: list = []
                _nodes_in(values, children)
                stack.extend((c, False) for c in reversed(children) if id(c) not in index)
                continue
            self.records.append((name, *(self.plain(v) for v in values)))
            index[id(obj)] = len(self.records) - 1


def encode_kernel(kernel: ir.Kernel) -> bytes:
    """The bytes of one checked kernel specialisation (see the module docstring)."""
    enc = _Encoder()
    enc.add(kernel)
    data = marshal.dumps((FORMAT, SCHEMA, tuple(enc.records)), _MARSHAL_VERSION)
    return zlib.compress(data, 9)


# ---- decoding (at the simulator's first launch of a variant) ---------------------------------


class _Malformed(Exception):
    pass


def _value(v, objs: list):
    t = type(v)
    if t in _PLAIN:
        return v
    if t is tuple:
        return tuple(_value(x, objs) for x in v)
    if t is list and len(v) == 1 and type(v[0]) is int and 0 <= v[0] < len(objs):
        return objs[v[0]]
    raise _Malformed(f"a field holds {t.__name__!s} {v!r:.60}")


def _record(rec, objs: list):
    if type(rec) is not tuple or not rec or type(rec[0]) is not str:
        raise _Malformed(f"a record is {type(rec).__name__}")
    name = rec[0]
    values = [_value(v, objs) for v in rec[1:]]
    if name == _SCALAR_INFO:
        if len(values) != 1 or type(values[0]) is not str or values[0] not in SCALARS:
            raise _Malformed(f"unknown scalar type {values[:1]!r:.40}")
        return SCALARS[values[0]]
    if name == _VECTOR_INFO:
        if len(values) != 1 or type(values[0]) is not str or values[0] not in VECTORS:
            raise _Malformed(f"unknown vector type {values[:1]!r:.40}")
        return VECTORS[values[0]]
    if name == _COMPLEX_INFO:
        if len(values) != 1 or type(values[0]) is not str or values[0] not in COMPLEXES:
            raise _Malformed(f"unknown complex type {values[:1]!r:.40}")
        return COMPLEXES[values[0]]
    if name == _DICT:
        if len(values) % 2:
            raise _Malformed("a dict record has an odd number of entries")
        try:
            return dict(zip(values[::2], values[1::2]))
        except TypeError:
            raise _Malformed("a dict record has an unhashable key") from None
    cls = _CLASSES.get(name)
    if cls is None:
        raise _Malformed(f"unknown node class {name!r:.40}")
    names = _FIELDS[name]
    if len(values) != len(names):
        raise _Malformed(f"a {name} record has {len(values)} fields, not {len(names)}")
    inline = _INLINE_FIELDS.get(name)
    if inline is not None:
        i = names.index(inline)
        if type(values[i]) is not tuple:
            raise _Malformed(f"a {name}'s {inline} is {type(values[i]).__name__}")
        values[i] = tuple(_check_record(v) for v in values[i])
    obj: object = object.__new__(cls)
    obj.__dict__.update(zip(names, values))  # as nodes.replace does: frozen nodes too
    obj.__dict__.update(NOT_ENCODED.get(name, {}))
    return obj


def decode_kernel(data: bytes, what: str = "a kernel") -> ir.Kernel:
    """The :class:`~gpu_native.ir.Kernel` that :func:`encode_kernel` wrote.

    ``what`` names the kernel in the error raised for bytes that are not such an encoding.
    """
    try:
        if not isinstance(data, bytes):
            raise _Malformed(f"it is {type(data).__name__}, not bytes")
        try:
            top = marshal.loads(zlib.decompress(data))
        except (zlib.error, ValueError, EOFError, TypeError) as exc:
            raise _Malformed(f"the data is damaged ({exc})") from None
        if type(top) is not tuple or len(top) != 3:
            raise _Malformed(f"it holds {type(top).__name__}, not an encoded kernel")
        if top[0] != FORMAT or top[1] != SCHEMA:
            raise GpuNativeError(
                f"the simulator cannot read the IR of {what}: it was written by a gpu_native "
                "whose IR differs from this one; delete the module's __pycache__ (and "
                "gpu_native's cache of rewritten modules, `gpu-native cache clear`) and import "
                "it again")
        records = top[2]
        if type(records) is not tuple or not records:
            raise _Malformed("it holds no records")
        objs: list = []
        for rec in records:
            objs.append(_record(rec, objs))
        kernel = objs[-1]
        if type(kernel) is not ir.Kernel:
            raise _Malformed(f"its last record is {type(kernel).__name__}, not a Kernel")
        return kernel
    except _Malformed as exc:
        raise GpuNativeError(f"the simulator cannot read the IR of {what}: {exc}; the "
                             "rewritten module is damaged; delete its __pycache__ and import "
                             "it again") from None
    except RecursionError:
        raise GpuNativeError(f"the simulator cannot read the IR of {what}: it nests too "
                             "deeply; the rewritten module is damaged") from None
