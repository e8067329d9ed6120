"""Typed kernels → the rewritten host module (line-preserving).

Each kernel's lines (decorator through last body line) are replaced by exactly as many lines
holding its *launcher factory*:

.. code-block:: python

    @gpu_kernel(Kernel1D, _spec={...})               # the spec: parameters, CUDA source, sites
    def add_kernel(_gn_context):
        (_gn_DA, ...), (_gn_sig_a, _gn_sig_b, _gn_sig_c), _gn_pack, ..., _gn_slow = ...
        return lambda a, b, c: (... _gn_launch(_gn_fn, _gn_gx, ..., (_gn_pack(_gn_buf, 0,
                                a._gn_args, ...) or _gn_address), 0) ...
                                if a.__class__ is _gn_DA and a._gn_rsig is _gn_sig_a and ...
                                else _gn_slow(a, b, c))

The runtime calls the factory once per launch configuration and thread; the returned lambda is
what ``kernel.launch(grid, block, shared_mem_bytes, stream)`` hands back.  Its parameters are the
kernel's own (keyword arguments work, and messages name them); every other name in the factory
starts with a prefix that no parameter name starts with (``_gn_``, or ``_gn__`` ... where a
parameter does), so whatever a parameter is called, it cannot change what the launcher does.
Its fast path checks each argument with one identity test against a *signature* object that
encodes dtype, ndim, device, contiguity and writability (a scalar: its exact class and range),
packs the values into the thread's argument buffer with one ``struct.pack_into`` (an array as
the bytes of its address and extents, packed once when the array was made) and calls
``cuLaunchKernel``, all through closure variables; anything else falls back to ``slow``, which
checks every argument one by one and raises ``TypeError``/``ValueError`` naming the parameter.
Every other line of the module is left byte-for-byte as the user wrote it.
"""

from __future__ import annotations

from .. import abi
from ..frontend import syntax as S
from ..nodes import node


@node
class LauncherParam:
    """A kernel parameter as the launcher sees it."""

    name: str
    kind: str  # "array" or "scalar"
    dtype: str  # scalar type name, or a TypeVar name in generic kernels
    ndim: int = 0
    mutable: bool = False


_INT_RANGES = {
    "i8": (-(1 << 7), (1 << 7) - 1), "i16": (-(1 << 15), (1 << 15) - 1),
    "i32": (-(1 << 31), (1 << 31) - 1), "i64": (-(1 << 63), (1 << 63) - 1),
    "u8": (0, (1 << 8) - 1), "u16": (0, (1 << 16) - 1), "u32": (0, (1 << 32) - 1),
    "u64": (0, (1 << 64) - 1),
}


def _dotted_text(e: S.Expr) -> str:
    if isinstance(e, S.Name):
        return e.id
    if isinstance(e, S.Attribute):
        return f"{_dotted_text(e.value)}.{e.attr}"
    raise ValueError("not a dotted name")  # pragma: no cover - the scanner only accepts these


def reserved_prefix(names) -> str:
    """The prefix of every name a launcher introduces: ``_gn_``, lengthened by underscores until
    no parameter name starts with it, so that no parameter can shadow (or be shadowed by) the
    launcher's own names, whatever the user called it."""
    names = tuple(names)
    prefix = "_gn_"
    while any(n.startswith(prefix) for n in names):
        prefix += "_"
    return prefix


def _scalar_test(p: LauncherParam, generic: bool, r: str) -> str:
    """The fast-path test of a scalar argument (anything else takes the checked slow path)."""
    name = p.name
    if p.dtype in _INT_RANGES and not generic:
        lo, hi = _INT_RANGES[p.dtype]
        return f"{name}.__class__ is {r}int and {lo} <= {name} <= {hi}"
    if p.dtype == "bool_" and not generic:
        return f"{name}.__class__ is {r}bool"
    if p.dtype == "f64" and not generic:
        return f"{name}.__class__ is {r}float"
    if p.dtype in abi.FLOAT_OVERFLOW and not generic:
        # Values that would round to infinity (and inf and nan themselves) take the slow path,
        # which refuses the first and passes the others.
        limit = abi.FLOAT_OVERFLOW[p.dtype]
        return f"{name}.__class__ is {r}float and -{limit!r} < {name} < {limit!r}"
    # bf16 is passed as its bits (converted on the slow path), TypeVars as their specialisation.
    return "False"


def launcher_lines(name: str, params: list[LauncherParam], generic: bool) -> tuple[str, str, str]:
    """The three logical lines of a launcher factory: ``def``, the set-up, and the ``return``.

    The lambda's parameters are the kernel's own names (so keyword arguments and error messages
    use them); every other name in the factory starts with :func:`reserved_prefix`.
    """
    r = reserved_prefix(p.name for p in params)
    arrays = [p for p in params if p.kind == "array"]
    sig_names = [f"{r}sig_{p.name}" for p in arrays]
    names = ", ".join(p.name for p in params)
    values: list[str] = []
    tests: list[str] = []
    for p in params:
        if p.kind == "array":
            attr = "_gn_wsig" if p.mutable else "_gn_rsig"
            tests.append(f"{p.name}.__class__ is {r}DA and {p.name}.{attr} is {r}sig_{p.name}")
            values.append(f"{p.name}._gn_args")
        else:
            tests.append(_scalar_test(p, generic, r))
            values.append(p.name)
    # A writable array must not share memory with another array argument (the kernel's pointers
    # are __restrict__); arrays from different allocations cannot overlap, so the fast path only
    # compares allocations and leaves exact overlap tests to the slow path.
    for w in (p for p in arrays if p.mutable):
        for other in arrays:
            if other is not w:
                tests.append(f"{w.name}._gn_base is not {other.name}._gn_base")
    sigs = ", ".join(sig_names) + ("," if len(sig_names) == 1 else "")
    config = ", ".join(f"{r}{n}" for n in ("fn", "gx", "gy", "gz", "bx", "by", "bz", "smem",
                                              "stream"))
    setup = (f"({r}DA, {r}int, {r}float, {r}bool), ({sigs}), {r}pack, {r}buf, {r}address, "
             f"{r}launch, ({config}), {r}ok, {r}failed, {r}slow = {r}context.fast_path()")
    condition = "False" if "False" in tests else " and ".join(tests) or "True"
    # pack_into returns None: `pack(...) or address` is the buffer's address, after the packing.
    packed = (f"({r}pack({r}buf, 0, {', '.join(values)}) or {r}address)" if values
              else f"{r}address")
    # Pack the arguments into this thread's buffer, launch, and raise if the driver refused.
    body = (f"return lambda {names}: ((({r}err := {r}launch({config}, {packed}, 0)[0]) is {r}ok "
            f"or {r}failed({r}err)) and None) if {condition} else {r}slow({names})")
    return f"def {name}({r}context):", setup, body


def kernel_block(fn: S.FunctionDef, indent: str, spec_literal: str,
                 params: list[LauncherParam], generic: bool) -> list[str]:
    """The replacement for the lines of one kernel: exactly as many lines as it had."""
    count = fn.last_line - fn.first_line + 1
    dec = fn.decorator
    assert isinstance(dec, S.Call)
    callee = _dotted_text(dec.func)
    kind = _dotted_text(dec.args[0])
    decorator = f"{indent}@{callee}({kind}, _spec={spec_literal})"
    head, setup, ret = launcher_lines(fn.name, params, generic)
    inner = indent + "    "
    if count <= 2:
        # `def k(a): body` on one line: the whole launcher goes on the def line.
        return [decorator, f"{indent}{head} {setup}; {ret}"]
    if count == 3:
        return [decorator, f"{indent}{head}", f"{inner}{setup}; {ret}"]
    lines = [decorator, f"{indent}{head}", f"{inner}{setup}", f"{inner}{ret}"]
    while len(lines) < count:
        lines.append("")
    return lines
