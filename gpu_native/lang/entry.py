"""What one name of the kernel language is: the record the registry's table is made of.

An :class:`Entry` says where a name lives, how a kernel uses it (its *form*, one of
:data:`FORMS`), how the checker types it, how the CUDA emitter spells it and what the simulator
runs for it; a :class:`Param` is one parameter of a callable entry.  A spelling or a simulator
implementation may depend on the operand's type (:data:`PerType`), and :func:`spelling` picks
the one for a type.  The table itself, and the lookups every consumer reads, are
:mod:`.registry`'s.

Like the registry, this module is shared by the transpiler, the simulator and the docs: it
imports none of them, and nothing of the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..nodes import node
from .types import ScalarInfo, VectorInfo

__all__ = ["FORMS", "Entry", "Param", "PerType", "spelling"]

# A spelling or a simulator implementation that depends on the operand type: keys are a scalar
# or vector type's name (``"f32"``, ``"vec2h"``), ``"int"`` (any integer type), ``"vector"`` (any
# other vector type) or ``"*"`` (any other scalar type).  A CUDA
# spelling may be a template: ``{T}`` stands for the operand's C++ type.
PerType = str | Callable | Mapping[str, Any] | None

# How a kernel uses a name (what `Entry.form` may be).
FORMS = {
    "call": "called in an expression",
    "statement": "called as a statement of its own",
    "allocation": "assigned to a local variable",
    "context": "used as `with ...():`",
    "loop": "iterated by a `for` loop",
    "method": "called as a method",
    "type": "a scalar type: annotation, cast and host dtype tag",
    "vector type": "a small vector type: annotation, constructor, array element and host dtype tag",
    "complex type": "a complex type: annotation, constructor, array element and host dtype tag",
    "array type": "an array parameter annotation, `T[elem]`",
    "array layout": "the layout argument of an array type, `CUDASlice2D[f32, Strided]`",
    "index type": "an annotation for unique ids",
    "const type": "an annotation for compile-time constant parameters",
    "tuple type": "a tuple annotation, `tuple[T1, T2]`",
    "layout": "a thread layout (`.uid()`)",
    "dim3": "a launch coordinate with `.x .y .z`",
    "attribute": "an attribute",
    "constant": "a compile-time constant",
    "enum": "an enumeration whose members are constants",
    "kernel kind": "the argument of `@gpu_kernel(...)`",
    "decorator": "a decorator of kernel or device functions",
    "generator": "assigned to a local: a random number generator, `rng = philox(seed)`",
    "declaration": "assigned to a module-level name, which kernels then read",
}


@node
class Param:
    """One parameter of a callable entry.

    ``type`` is what the parameter takes, as the docs and the host stubs write it; for a math
    function it is also the typing rule (``float``: the float operands, promoted together,
    integers computing in ``f64`` and half types in ``f32``; ``int``: an integer that ``i32``
    holds, passed as C's ``int``, such as an exponent).  ``default`` is the default's source
    text, or None when the argument is required.  The CUDA spelling and the simulator function
    of a math function are chosen by its first operand's type.
    """

    name: str
    type: str = "float"
    default: str | None = None


@node
class Entry:
    """One name of the kernel language.

    Attributes
    ----------
    name : str
        The Python name (``"sqrt"``, ``"shfl_down"``, ``"fetch_add"``).
    namespace : str
        Where a kernel finds it: ``gpu_native``, ``math``, ``builtins``, ``atomic_ref`` (methods of
        ``x.atomic_ref(i)``), ``layout`` (methods of the layouts), ``array`` (methods of arrays),
        ``dim3`` (attributes of ``thread_idx`` and friends and of unique ids), ``vector`` (the
        components of vectors), ``MemoryOrder``, ``generator`` (methods of a random number
        generator, ``rng.uniform()``).
    form : str
        How a kernel uses it: one of :data:`FORMS`.
    doc : str
        One line for the reference table and the host stub's docstring.
    params : tuple of Param
        The parameters of a callable, in order.
    result : str
        The result's type, or its rule: ``float`` (the float type the operands compute in),
        ``bool``, a scalar type name, ``T`` (the value's type).
    check : str
        The checker's handler (a method of ``FunctionChecker``) for a construct with a typing rule
        of its own; ``call_math`` types math functions from ``params`` and ``result``.
    cuda : str, mapping or None
        The CUDA spelling (a function name, per operand type where it differs: see ``PerType``).
    sim : callable, str, mapping or None
        The simulator's implementation: a NumPy function, or the name of a function of
        ``gpu_native.simulator.ops`` (``gpu_native.simulator.vectors`` for the vector
        functions) or of a method of the simulator's machine (per operand type where it
        differs); for a generator's methods, a function of ``gpu_native.simulator.philox``.
    op : str
        The IR's name for it where that differs from ``name`` (``round`` is ``MathCall("rint")``,
        ``fetch_add`` is ``Atomic("add")``).
    value : object
        Data of the construct: a constant's value, a layout's ``(scope, ndim)``, an array type's
        ``(ndim, mutable)``, a vector type's ``VectorInfo``, a component's index, a barrier's scope, the element types an atomic accepts ...
    since : str
        The gpu_native version it appeared in.
    more : str
        Further documentation for the host stub (after ``doc``).
    arch : int
        The oldest GPU architecture that has it, as its compute capability times ten (``80``
        for sm_80), or 0 for every one: a kernel that uses it is built for that architecture
        or a newer one only (:attr:`gpu_native.spec.VariantSpec.min_arch`).
    nonnegative : bool
        A float function whose result is at least 0 unless it is NaN (``sqrt``, ``exp``,
        ``fabs``): the device compiler may take it to be at least 0, so the emitter guards
        compares with it (``gpu_native.emit.operands.taken_nonnegative``).
    """

    name: str
    namespace: str
    form: str
    doc: str
    params: tuple[Param, ...] = ()
    result: str = ""
    check: str = ""
    cuda: PerType = None
    sim: PerType = None
    op: str = ""
    value: Any = None
    since: str = "0.1.0"
    more: str = ""
    arch: int = 0
    nonnegative: bool = False

    @property
    def ir_name(self) -> str:
        """The name the IR gives it (``op``, or the Python name)."""
        return self.op or self.name

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def required(self) -> int:
        """How many leading parameters have no default."""
        return sum(1 for p in self.params if p.default is None)

    def signature(self) -> str:
        """``name(a, b=1) -> result``, as the reference table shows it."""
        args = ", ".join(p.name if p.default is None else f"{p.name}={p.default}"
                         for p in self.params)
        return f"{self.name}({args})"


def spelling(table: PerType, info: ScalarInfo | VectorInfo) -> Any:
    """The entry of a per-type ``table`` (a CUDA spelling or a simulator implementation) for
    operands of type ``info``; KeyError when it has none.  A vector type's is under its name or
    ``"vector"`` (never ``"*"``, which is for scalars)."""
    if not isinstance(table, Mapping):
        if table is None:
            raise KeyError(info.name)
        return table
    keys = (info.name, "vector") if isinstance(info, VectorInfo) else (
        info.name, "int" if info.is_int else "", "*")
    for key in keys:
        if key in table:
            return table[key]
    raise KeyError(info.name)
