"""A second entry point for kernels that depend on nothing but their 1-D uid.

``FlatLayout1D.uid()`` is an abstraction: when a kernel uses no shared memory, barriers, warp
operations, thread or block indices, or device functions (``KernelTraits.uid_only``), running
uid ``u`` on physical thread ``u`` is a choice, not a rule.  The ``<symbol>_uids`` entry point runs
the launch's logical uids ``0 .. total-1`` on however many physical threads the launcher picks,
each walking several uids; every uid still runs exactly once, and an error reports the logical
block and thread the user launched (``uid // block``, ``uid % block``).

When the body is straight-line elementwise code over 4-byte elements (every array indexed with
the bare uid, no branches, loops or atomics), uids are taken four at a time: each array is read and
written with one 16-byte access, provided every pointer is 16-byte aligned and the four uids lie
inside every such array; the other chunks take the checked scalar path.
"""

from __future__ import annotations

from .. import ir
from .cnames import cname, extent_name, vector_name
from .cuda import CudaEmitter
from .entry_points import ENTRY_POINTS

_LANES = "xyzw"
_VECTOR_TYPES = {"f32": "float4", "i32": "int4", "u32": "uint4"}
_STRAIGHT = (ir.Assign, ir.Store, ir.TailExit)


def uid_variables(body) -> set[int]:
    """Locals assigned exactly once, from the bare grid uid (``idx = FlatLayout1D.uid()``)."""
    assigned: dict[int, int] = {}
    from_uid: set[int] = set()
    for node in ir.walk(body):
        if isinstance(node, ir.Assign):
            assigned[id(node.var)] = assigned.get(id(node.var), 0) + 1
            if isinstance(node.value, ir.UidComponent) and node.value.scope == "grid":
                from_uid.add(id(node.var))
        elif isinstance(node, (ir.ForRange, ir.GridStride)):
            assigned[id(node.var)] = assigned.get(id(node.var), 0) + 2
    return {v for v in from_uid if assigned.get(v) == 1}


def _bare_uid(e: ir.Expr, uid_vars: set[int]) -> bool:
    while isinstance(e, ir.Cast) and e.ty.info.is_int:
        e = e.value
    if isinstance(e, ir.UidComponent):
        return e.scope == "grid" and e.axis == 0
    return isinstance(e, ir.Local) and id(e.var) in uid_vars


def vector_plan(kernel: ir.Kernel) -> tuple[list[ir.Var], list[ir.Var]] | None:
    """The arrays read and written 4 uids at a time, or None when the body does not qualify."""
    uid_vars = uid_variables(kernel.body)
    read: dict[int, ir.Var] = {}
    written: dict[int, ir.Var] = {}
    for stmt in kernel.body:
        if not isinstance(stmt, _STRAIGHT):
            return None
        if isinstance(stmt, ir.Store):
            if written.get(id(stmt.array.var)) is not None:
                return None  # one store per array and uid
            if not _vector_access(stmt.array, stmt.indices, uid_vars):
                return None
            written[id(stmt.array.var)] = stmt.array.var
    for node in ir.walk(kernel.body):
        if isinstance(node, (ir.Atomic, ir.Call, ir.WarpOp, ir.Select, ir.BoolOp,
                             ir.RandomDraw)):
            return None
        if isinstance(node, ir.BinOp) and node.zero_check is not None:
            return None
        if isinstance(node, ir.Load):
            uid_indexed = any(_bare_uid(i, uid_vars) for i in node.indices)
            if uid_indexed:
                if not _vector_access(node.array, node.indices, uid_vars):
                    return None
                read[id(node.array.var)] = node.array.var
            elif any(i is not None for i in node.checks):
                return None  # a checked load elsewhere: keep the plain path's error semantics
    if not written:
        return None
    return list(read.values()), list(written.values())


def _vector_type(v: ir.Var) -> str:
    """The CUDA type of four elements of the array variable ``v`` (one of :func:`vector_plan`'s)."""
    ty = v.ty
    assert isinstance(ty, ir.ArrayType)  # vector_plan picks array variables only
    return _VECTOR_TYPES[ty.elem.name]


def _vector_access(ref: ir.ArrayRef, indices, uid_vars: set[int]) -> bool:
    ty = ref.ty
    return (ty.space == "global" and ty.ndim == 1 and not ty.strided
            and ty.elem.name in _VECTOR_TYPES
            and len(indices) == 1 and _bare_uid(indices[0], uid_vars))


class UidStrideEmitter(CudaEmitter):
    """Emits ``<symbol>_uids``: the kernel body inside a loop over logical uids."""

    helpers = ENTRY_POINTS["uids"]
    exit_code = "goto __gn_next"
    thread_count = "__gn_total"

    def __init__(self, kernel: ir.Kernel, display_file: str):
        super().__init__(kernel, display_file)
        self.lane: int | None = None
        self.uid_vars = uid_variables(kernel.body)
        self.vectors: dict[int, str] = {}
        # Whether the uid body being emitted jumps to its end (`__gn_next`, the next uid).
        self.jumps_to_next = False

    def uid(self, axis: int) -> str:
        if self.lane is not None:
            return f"(__gn_base + {self.lane})"
        return "__gn_uid"

    def emit_Return(self, s: ir.Return) -> None:
        self.jumps_to_next = True
        self.line("goto __gn_next;  // this uid is done")

    def emit_Load(self, e: ir.Load) -> str:
        name = self.vectors.get(id(e.array.var))
        if self.lane is not None and name is not None and _bare_uid(e.indices[0], self.uid_vars):
            return f"{name}.{_LANES[self.lane]}"
        return super().emit_Load(e)

    def emit_Store(self, s: ir.Store) -> None:
        name = self.vectors.get(id(s.array.var))
        if self.lane is not None and name is not None:
            self.line(f"{name}.{_LANES[self.lane]} = {self.expr(s.value)};")
            return
        super().emit_Store(s)

    def emit_TailExit(self, s: ir.TailExit) -> None:
        if self.lane is None:  # inside a full vector chunk every uid is in range
            self.jumps_to_next = True
            super().emit_TailExit(s)

    def function(self) -> str:
        k = self.kernel
        params = self.params(k.params, kernel=True)
        params += ["gn_error_record* __restrict__ __gn_err", "gn_i64 __gn_total",
                   "unsigned int __gn_block"]
        self.lines = []
        self.indent = 1
        self.vector_params(k.params)
        self.declarations(k.locals, k.local_arrays, k.shared, k.body)
        plan = vector_plan(k)
        if plan is None:
            self.scalar_loop()
        else:
            self.vector_loop(*plan)
        sig = (f'extern "C" __global__ void {k.symbol}_uids(\n    ' + ",\n    ".join(params) + ")")
        note = ("// The same kernel over its logical uids 0..__gn_total-1, several per thread "
                "(it depends on nothing but its uid).\n")
        return note + sig + "\n{\n" + "\n".join(self.lines) + "\n}\n"

    def scalar_loop(self) -> None:
        self.line("for (gn_i64 __gn_uid = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; "
                  "__gn_uid < __gn_total; __gn_uid += (gn_i64)gridDim.x * blockDim.x) {")
        self.indent += 1
        self.last_line = -1
        self.uid_body()
        self.indent -= 1
        self.line("}")

    def uid_body(self) -> None:
        """One uid's body; early exits jump to the end of it (the next uid)."""
        self.jumps_to_next = False
        self.block(self.kernel.body)
        if self.jumps_to_next:
            self.line("__gn_next:;")

    def vector_loop(self, read: list[ir.Var], written: list[ir.Var]) -> None:
        arrays = {id(v): v for v in [*read, *written]}
        for v in arrays.values():
            self.vectors[id(v)] = vector_name(v)
        limit = " ".join(f"__gn_n = {extent_name(v, 0)} < __gn_n ? {extent_name(v, 0)} : __gn_n;"
                         for v in arrays.values())
        aligned = " | ".join(f"(gn_u64){cname(v)}" for v in arrays.values())
        self.line("// Every uid-indexed array is read and written 16 bytes (4 uids) at a time where "
                  "the pointers are aligned and the 4 uids lie inside every array.")
        self.line(f"gn_i64 __gn_n = __gn_total; {limit}")
        self.line(f"const bool __gn_aligned = (({aligned}) & 15) == 0;")
        self.line("const gn_i64 __gn_chunks = (__gn_total + 3) / 4;")
        self.line("for (gn_i64 __gn_chunk = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; "
                  "__gn_chunk < __gn_chunks; __gn_chunk += (gn_i64)gridDim.x * blockDim.x) {")
        self.indent += 1
        self.line("const gn_i64 __gn_base = __gn_chunk * 4;")
        self.line("if (__gn_aligned && __gn_base + 4 <= __gn_n) {")
        self.indent += 1
        for v in arrays.values():
            vt = _vector_type(v)
            if v in read:
                self.line(f"{vt} {self.vectors[id(v)]} = *reinterpret_cast<const {vt}*>"
                          f"({cname(v)} + __gn_base);")
            else:
                self.line(f"{vt} {self.vectors[id(v)]};")
        for lane in range(4):
            self.lane = lane
            self.last_line = -1
            self.block(self.kernel.body)
        self.lane = None
        for v in written:
            vt = _vector_type(v)
            self.line(f"*reinterpret_cast<{vt}*>({cname(v)} + __gn_base) = {self.vectors[id(v)]};")
        self.indent -= 1
        self.line("} else {")
        self.indent += 1
        self.line("for (gn_i64 __gn_uid = __gn_base; __gn_uid < __gn_base + 4 && "
                  "__gn_uid < __gn_total; ++__gn_uid) {")
        self.indent += 1
        self.last_line = -1
        self.uid_body()
        self.indent -= 1
        self.line("}")
        self.indent -= 1
        self.line("}")
        self.indent -= 1
        self.line("}")


def emit_uid_stride(kernel: ir.Kernel, display_file: str) -> str:
    """The ``<symbol>_uids`` entry point of a ``uid_only`` kernel."""
    return UidStrideEmitter(kernel, display_file).function()


__all__ = ["emit_uid_stride", "uid_variables", "vector_plan"]
