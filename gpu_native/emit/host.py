"""Typed kernels → the rewritten host module (line-preserving), and the same launcher for people.

Each kernel's lines (decorator through last body line) are replaced by exactly as many lines
holding its *launcher factory*:

.. code-block:: python

    @gpu_kernel(Kernel1D, _spec=(...))   # the spec literal (gpu_native.spec.KernelSpec)
    def add_kernel(_gn_context):
        _gn_fast = _gn_context.fast_path(); _gn_DA = _gn_fast.DeviceArray; ...
        return lambda a, b, c: (... _gn_launch(_gn_fn, _gn_gx, ..., (_gn_pack(_gn_buf, 0,
                                a.launch_args, ...) or _gn_address), 0) ...
                                if a.__class__ is _gn_DA and a.launch_sig is _gn_sig_a and ...
                                else _gn_slow(a, b, c))

The runtime calls the factory once per launch configuration and thread, with a
``LaunchContext``; ``fast_path()`` returns a ``FastPath`` record (gpu_native.runtime.context),
whose named fields the set-up line binds to closure variables, so the launch itself reads no
attribute of the runtime.  The returned lambda is what ``kernel.launch(grid, block,
shared_mem_bytes, stream)`` hands back.  Its parameters are the kernel's own (keyword arguments
work, and messages name them); every other name in the factory starts with a prefix that no
parameter name starts with (``_gn_``, or ``_gn__`` ... where a parameter does), so whatever a
parameter is called, it cannot change what the launcher does.  (Reading the pieces through one
reserved name at every launch instead, ``_gn.launch(...)`` as pytest's rewritten asserts call
their helpers, was measured side by side with tools/bench_launch.py on an H100: 6.74 µs a
launch against 6.51 µs for the same code reading closure variables, 1.19x and 1.15x a raw
``cuLaunchKernel``; through a record with slots, 7.23 against 7.21 µs in another run.)

Its fast path checks each argument with one identity test against a *signature* object that
encodes dtype, ndim, device, contiguity and writability (an array's ``launch_sig`` /
``launch_sig_mut``, see ``DeviceArray``'s launch protocol; a scalar: its exact class and range; a
vector: its exact class, its components packed as it holds them),
packs the values into the thread's argument buffer with one ``struct.pack_into`` (an array as its
``launch_args``, the bytes of its address and extents, packed once when the array was made) and
calls ``cuLaunchKernel``, all through closure variables; anything else falls back to ``slow``,
which checks every argument one by one and raises ``TypeError``/``ValueError`` naming the
parameter.  Every other line of the module is left byte-for-byte as the user wrote it.

:meth:`Launcher.readable` lays the same code out over as many lines as it needs, for
``gpu-native expand``: the same statements and expressions, only wrapped (tests compare the two
forms' syntax trees).
"""

from __future__ import annotations

from .. import abi
from ..frontend import syntax as S
from ..launchexpr import LaunchExpr, launcher_text
from ..nodes import node
from ..spec import KernelSpec, Param, ParamCheck, ShapeAssert

__all__ = ["Launcher", "build_launcher", "decorator_parts", "exact_line_of", "kernel_block",
           "param_trees", "reserved_prefix"]

# The launcher's lines when laid out for people (gpu-native expand): code up to this column.
READABLE_WIDTH = 88

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


def _scalar_test(p: Param, generic: bool, r: str) -> tuple[tuple[str, ...], str | None]:
    """The fast-path test of a scalar argument (anything else takes the checked slow path), as
    conjuncts, and the class it compares with (``int``, ``float``, ``bool``; None for none)."""
    name = p.name
    if p.dtype in _INT_RANGES and not generic:
        lo, hi = _INT_RANGES[p.dtype]
        return (f"{name}.__class__ is {r}int", f"{lo} <= {name} <= {hi}"), "int"
    if p.dtype == "bool_" and not generic:
        return (f"{name}.__class__ is {r}bool",), "bool"
    if p.dtype == "f64" and not generic:
        return (f"{name}.__class__ is {r}float",), "float"
    if p.dtype in abi.FLOAT_OVERFLOW and not generic:
        # Values that would round to infinity (and inf and nan themselves) take the slow path,
        # which refuses the first and passes the others.
        limit = abi.FLOAT_OVERFLOW[p.dtype]
        return (f"{name}.__class__ is {r}float", f"-{limit!r} < {name} < {limit!r}"), "float"
    if (p.dtype in abi.VECTOR_SLOTS or p.dtype in abi.COMPLEX_SLOTS) and not generic and (
            p.dtype != "vec2bf"):  # a bf16 slot holds bits, which the slow path makes
        # A vector (complex number) of the parameter's own class holds its components (parts)
        # converted already.
        return (f"{name}.__class__ is {r}{p.dtype}",), p.dtype
    # bf16 is passed as its bits (converted on the slow path), TypeVars as their specialisation.
    return ("False",), None


@node
class Launcher:
    """One kernel's launcher factory, in the pieces both layouts are made of.

    ``setup`` holds the set-up statements (run once per launch configuration), ``tests`` the
    fast path's conditions in groups (one per parameter, then one per writable array: its
    overlap tests), ``values`` what is packed into the argument buffer, ``config`` the launch
    configuration's names, in ``cuLaunchKernel``'s order.
    """

    name: str
    prefix: str
    params: tuple[str, ...]
    setup: tuple[str, ...]
    tests: tuple[tuple[str, ...], ...]
    values: tuple[str, ...]
    config: tuple[str, ...]

    @property
    def head(self) -> str:
        return f"def {self.name}({self.prefix}context):"

    @property
    def condition(self) -> str:
        conjuncts = [t for group in self.tests for t in group]
        return "False" if "False" in conjuncts else " and ".join(conjuncts) or "True"

    def packed(self, values: str) -> str:
        r = self.prefix
        # pack_into returns None: `pack(...) or address` is the buffer's address, after packing.
        return f"({r}pack({r}buf, 0, {values}) or {r}address)" if self.values else f"{r}address"

    def exact(self) -> tuple[str, str, str]:
        """The three logical lines of the factory as the rewritten module has them: ``def``,
        the set-up, and the ``return``."""
        r = self.prefix
        names = ", ".join(self.params)
        packed = self.packed(", ".join(self.values))
        # Pack the arguments into this thread's buffer, launch, and raise if the driver refused.
        body = (f"return lambda {names}: ((({r}err := {r}launch({', '.join(self.config)}, "
                f"{packed}, 0)[0]) is {r}ok or {r}failed({r}err)) and None) "
                f"if {self.condition} else {r}slow({names})")
        return self.head, "; ".join(self.setup), body

    def readable(self, indent: str, width: int = READABLE_WIDTH) -> list[tuple[str, str | None]]:
        """The same factory over as many lines as it needs: ``(text, role)`` pairs, where role
        is the exact form's line it belongs to (``"def"``, ``"setup"``, ``"return"``; None for
        a comment)."""
        r = self.prefix
        inner = indent + "    "
        body = inner + "    "
        out: list[tuple[str, str | None]] = [(indent + self.head, "def")]
        out += [(inner + stmt, "setup") for stmt in self.setup]
        names = ", ".join(self.params)
        if len(f"{inner}return lambda {names}: (") <= width:
            out.append((f"{inner}return lambda {names}: (", "return"))
            close = ")"
        else:
            lines = _fill(list(self.params), f"{inner}return (lambda ", " " * len(
                f"{inner}return (lambda "), width - 4)
            out += [(text + ("," if i < len(lines) - 1 else ": ("), "return")
                    for i, text in enumerate(lines)]
            close = "))"
        out.append((f"{body}# launch: pack the arguments into the buffer, call the driver, "
                    "raise if it refused", None))
        out.append((f"{body}(({r}err := {r}launch(", "return"))
        args = body + "    "
        out += [(text + ",", "return") for text in _fill(list(self.config), args, args, width)]
        one_line = f"{args}{self.packed(', '.join(self.values))},"
        if len(one_line) <= width or not self.values:
            out.append((one_line, "return"))
        else:
            out.append((f"{args}({r}pack(", "return"))
            items = [f"{r}buf", "0", *self.values]
            out += [(text + ",", "return") for text in _fill(items, args + "    ",
                                                            args + "    ", width)]
            out.append((f"{args}) or {r}address),", "return"))
        out.append((f"{args}0,", "return"))
        out.append((f"{body})[0]) is {r}ok or {r}failed({r}err)) and None", "return"))
        out.append((f"{body}# ... when every argument is exactly what the kernel was compiled "
                    "for", None))
        groups = [("False",)] if self.condition == "False" else list(self.tests) or [("True",)]
        for i, group in enumerate(groups):
            word = "if " if i == 0 else "and "
            text = f"{body}{word}{' and '.join(group)}"
            if len(text) <= width:
                out.append((text, "return"))
            else:
                for j, test in enumerate(group):
                    out.append((f"{body}{word if j == 0 else 'and '}{test}", "return"))
        out.append((f"{body}# anything else: check each argument, say what is wrong, convert, "
                    "launch", None))
        slow = _fill(list(self.params), f"{body}else {r}slow(", body + "    ", width - 1)
        if len(slow) == 1:
            out.append((slow[0] + ")", "return"))
        else:
            out.append((f"{body}else {r}slow(", "return"))
            out += [(text + ",", "return") for text in _fill(list(self.params), body + "    ",
                                                            body + "    ", width)]
            out.append((f"{body})", "return"))
        out.append((inner + close, "return"))
        return out


def _fill(items: list[str], first: str, rest: str, width: int) -> list[str]:
    """``items`` joined by ``", "`` into lines of at most ``width`` characters (an item longer
    than a line gets one of its own), the first starting with ``first``, the others with
    ``rest``; no line ends with the separator."""
    lines: list[str] = []
    prefix = first
    current: list[str] = []
    for item in items:
        if current and len(prefix + ", ".join([*current, item])) > width:
            lines.append(prefix + ", ".join(current))
            prefix, current = rest, [item]
        else:
            current.append(item)
    lines.append(prefix + ", ".join(current))
    return lines


def param_trees(spec: KernelSpec) -> tuple[LaunchExpr, ...]:
    """The trees of the :class:`~gpu_native.spec.ParamCheck` and
    :class:`~gpu_native.spec.ShapeAssert` records of every variant of ``spec``, once each: what
    its launcher tests inline."""
    trees: dict[LaunchExpr, None] = {}
    for v in spec.variants:
        for c in v.launch_checks:
            if isinstance(c, (ParamCheck, ShapeAssert)):
                trees.setdefault(c.tree)
    return tuple(trees)


def build_launcher(name: str, params: tuple[Param, ...], generic: bool,
                   checks: tuple[LaunchExpr, ...] = ()) -> Launcher:
    """The launcher factory of kernel ``name`` with parameters ``params``.

    The lambda's parameters are the kernel's own names (so keyword arguments and error messages
    use them); every other name in the factory starts with :func:`reserved_prefix`.  ``checks``
    are the trees of the kernel's :class:`~gpu_native.spec.ParamCheck` records
    (:func:`param_trees`): the fast path tests them after every argument's own test, and a call
    that fails one takes the checked path, which says what is wrong.  A kernel without them has
    none of their code.
    """
    r = reserved_prefix(p.name for p in params)
    arrays = [p for p in params if p.is_array]
    values: list[str] = []
    tests: list[tuple[str, ...]] = []
    classes: list[str] = []
    for p in params:
        if p.is_array:
            # A Strided parameter reads the array's strided signature and parameters (any
            # layout); a contiguous one its own, which a non-contiguous view does not match.
            layout = "_strided" if p.strided else ""
            attr = f"launch_sig{layout}{'_mut' if p.mutable else ''}"
            tests.append((f"{p.name}.__class__ is {r}DA", f"{p.name}.{attr} is {r}sig_{p.name}"))
            values.append(f"{p.name}.launch_args{layout}")
        else:
            test, cls = _scalar_test(p, generic, r)
            tests.append(test)
            if cls is not None and cls not in classes:
                classes.append(cls)
            # A vector's components, one slot each (see gpu_native.abi).
            values.append(f"*{p.name}._values" if p.dtype in abi.VECTOR_SLOTS else
                          f"{p.name}.real, {p.name}.imag" if p.dtype in abi.COMPLEX_SLOTS
                          else p.name)
    # A writable array must not share memory with another array argument (the kernel's pointers
    # are __restrict__); arrays from different allocations cannot overlap, so the fast path only
    # compares allocations and leaves exact overlap tests to the slow path.
    for w in (p for p in arrays if p.mutable):
        others = tuple(f"{w.name}.launch_base is not {other.name}.launch_base"
                       for other in arrays if other is not w)
        if others:
            tests.append(others)
    names = tuple(p.name for p in params)
    used: set[str] = set()
    if checks:
        tests.append(tuple(launcher_text(t, names, r, used) for t in checks))
    fast = f"{r}fast"
    setup = [f"{fast} = {r}context.fast_path()"]
    if arrays:
        setup.append(f"{r}DA = {fast}.DeviceArray")
    setup += [f"{r}{cls} = {fast}.{cls}" for cls in ("int", "float", "bool") if cls in classes]
    setup += [f"{r}{cls} = {fast}.vectors[{cls!r}]" for cls in classes
              if cls in abi.VECTOR_SLOTS or cls in abi.COMPLEX_SLOTS]
    setup += [f"{r}sig_{p.name} = {fast}.signatures[{p.name!r}]" for p in arrays]
    if values:
        setup += [f"{r}pack = {fast}.pack", f"{r}buf = {fast}.buffer"]
    setup += [f"{r}address = {fast}.address", f"{r}launch = {fast}.launch",
              f"{r}fn = {fast}.function", f"{r}gx, {r}gy, {r}gz = {fast}.grid",
              f"{r}bx, {r}by, {r}bz = {fast}.block", f"{r}smem = {fast}.shared_mem_bytes",
              f"{r}stream = {fast}.stream", f"{r}ok = {fast}.success",
              f"{r}failed = {fast}.failed", f"{r}slow = {fast}.slow"]
    # The launch shape as the kernel sees it, for the parameter checks.
    setup += [f"{r}{n}_x, {r}{n}_y, {r}{n}_z = {fast}.launch_{n[:-4]}"
              for n in ("grid_dim", "block_dim") if n in used]
    config = tuple(f"{r}{n}" for n in ("fn", "gx", "gy", "gz", "bx", "by", "bz", "smem",
                                        "stream"))
    return Launcher(name, r, tuple(p.name for p in params), tuple(setup), tuple(tests),
                    tuple(values), config)


def decorator_parts(fn: S.FunctionDef) -> tuple[str, str]:
    """The kernel decorator's callee and kind as the user spelled them (``gpu_kernel``,
    ``Kernel1D``; ``gn.gpu_kernel``, ``gn.Kernel2D``)."""
    dec = fn.decorator
    assert isinstance(dec, S.Call)
    return _dotted_text(dec.func), _dotted_text(dec.args[0])


def kernel_block(fn: S.FunctionDef, indent: str, spec_literal: str,
                 params: tuple[Param, ...], generic: bool,
                 checks: tuple[LaunchExpr, ...] = ()) -> list[str]:
    """The replacement for the lines of one kernel: exactly as many lines as it had
    (``checks``: as :func:`build_launcher`'s)."""
    count = fn.last_line - fn.first_line + 1
    callee, kind = decorator_parts(fn)
    decorator = f"{indent}@{callee}({kind}, _spec={spec_literal})"
    head, setup, ret = build_launcher(fn.name, params, generic, checks).exact()
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


def exact_line_of(role: str | None, first: int, count: int) -> int | None:
    """The line of the rewritten module that holds a readable line of ``role`` (see
    :meth:`Launcher.readable`; ``"decorator"`` too) of a kernel whose lines were ``first`` ..
    ``first + count - 1``: :func:`kernel_block` puts fewer lines on short kernels."""
    if role is None:
        return None
    offset = {"decorator": 0, "def": 1, "setup": 2, "return": 3}[role]
    if count <= 2:
        offset = min(offset, 1)
    elif count == 3:
        offset = min(offset, 2)
    return first + offset
