"""Typed IR → CUDA C++ (one translation unit per kernel specialisation).

Each statement is preceded by a ``#line`` directive naming the Python line it came from, so NVRTC
errors, ``-lineinfo`` profiles, compute-sanitizer and cuda-gdb all point at the user's file.  Array
parameters are passed as a pointer plus one ``int64`` extent per dimension (``const T*
__restrict__`` when read-only, which keeps loads on the read-only data path); see
:mod:`gpu_native.abi` for the full parameter layout.
"""

from __future__ import annotations

import math

from .. import abi, ir
from .._version import __version__
from ..lang import registry as R
from ..lang.entry import spelling
from ..locate import display_file as display_name
from .cnames import cname, component_name, extent_name, stride_name
from .entry_points import ENTRY_POINTS
from .matrices import fragment_arrays
from .operands import (
    constant_int,
    may_be_product,
    nonnegative,
    nonpositive,
    product_locals,
    scale_by_power_of_two,
    sext_may_widen,
    taken_nonnegative,
    taken_nonpositive,
)
from .prelude import GRID_SYNC_INCLUDES, HALF_INCLUDES, PRELUDE_INCLUDE
from .spelling import array_offset, const_code, const_declarations, convert, ctype
from .structs import (
    StructEmitter,
    gather,
    leaf_names,
    struct_definition,
    struct_infos,
    tuple_struct,
    tuple_types,
)
from .tma import TmaEmitter, tma_destinations
from .vectors import VectorEmitter
from .warpgroup import WarpgroupEmitter, wgmma_accumulators

_XYZ = "xyz"
# The barriers by scope ("block", "warp", "grid"), as the IR's Barrier names them.
_BARRIERS = {e.value: e for e in R.by_form("statement") if e.check == "barrier"}
# The fences by scope ("device", "block", "system"), as the IR's Fence names them.
_FENCES = {e.value: e for e in R.by_form("statement") if e.check == "fence"}
# sync_threads_count / _and / _or by the IR's BarrierVote.op ("count", "and", "or").
_BARRIER_VOTES = {e.op: e for e in R.by_form("call") if e.check == "call_barrier_vote"}
_UNSIGNED = {"int": "unsigned int", "long long": "unsigned long long"}


class CudaEmitter(VectorEmitter, WarpgroupEmitter, TmaEmitter, StructEmitter):
    """Emits one kernel specialisation (and the device functions it reaches) as CUDA C++."""

    def __init__(self, kernel: ir.Kernel, display_file: str):
        self.kernel = kernel
        self.file = _directive_name(display_file)
        self.lines: list[str] = []
        self.indent = 1
        self.counter = 0
        self.last_line = -1
        self.tma_dsts = tma_destinations(kernel.body)
        self.tma_names = {id(v): k for k, v in enumerate(self.tma_dsts)}
        # Device-function parameters may be passed anything: count them as products.
        self.product_locals = product_locals(
            [kernel.body, *(fn.body for fn in kernel.device_functions)]) | {
            id(p) for fn in kernel.device_functions for p in fn.params}

    # ---- whole translation unit ----------------------------------------------------------

    def emit(self) -> str:
        k = self.kernel
        out = [
            f"// gpu_native {__version__}: kernel {k.name} of {_comment_safe(k.module)} "
            "(generated; do not edit)",
            f"#define GN_KERNEL_ID 0x{abi.kernel_id(k.module, k.symbol):016x}ull",
        ]
        if k.traits.uses_half:
            out.append(HALF_INCLUDES.rstrip("\n"))
        if k.traits.uses_grid_sync:
            out.append(GRID_SYNC_INCLUDES.rstrip("\n"))
        out.append(PRELUDE_INCLUDE)
        structs = [tuple_struct(t) for t in tuple_types(k)]
        if structs:
            out.append("// tuples\n" + "\n".join(structs))
        records = [struct_definition(info) for info in struct_infos(k)]
        if records:
            out.append("// @gpu_struct types\n" + "\n".join(records))
        if k.consts:
            out.append(const_declarations(k.consts))
        for fn in k.device_functions:
            out.append(self.device_function(fn))
        out.append(self.kernel_function())
        from .index32 import emit_index32, wants_index32

        if wants_index32(k):
            out.append(emit_index32(k, self.file))
        if k.traits.uid_only:
            from .uid_stride import emit_uid_stride

            out.append(emit_uid_stride(k, self.file))
        return "\n".join(out) + "\n"

    def params(self, params: tuple[ir.Var, ...], kernel: bool) -> list[str]:
        out: list[str] = []
        for p in params:
            if kernel and isinstance(p.ty, ir.VectorType):
                # One scalar parameter per component (see gpu_native.abi), gathered into the
                # vector by vector_params().
                elem = ctype(p.ty.elem)
                out.extend(f"{elem} {component_name(p, k)}" for k in range(p.ty.n))
            elif kernel and isinstance(p.ty, ir.StructType):
                # One scalar parameter per scalar of the struct (see gpu_native.abi).
                out.extend(f"{c} {name}" for c, name in leaf_names(p.ty.info, f"__gn_{cname(p)}"))
            elif isinstance(p.ty, ir.ArrayType):
                elem = ctype(p.ty.elem)
                restrict = " __restrict__" if kernel else ""
                const = "" if p.ty.mutable else "const "
                out.append(f"{const}{elem}*{restrict} {cname(p)}")
                out.extend(f"gn_i64 {extent_name(p, a)}" for a in range(p.ty.ndim))
                if p.ty.strided:
                    out.extend(f"gn_i64 {stride_name(p, a)}" for a in range(p.ty.ndim))
            else:
                out.append(f"{ctype(p.ty)} {cname(p)}")
        return out

    def declarations(self, locals_: tuple[ir.Var, ...],
                     local_arrays: tuple[ir.LocalArrayDecl, ...],
                     shared: tuple[ir.SharedDecl, ...] = (),
                     body: tuple[ir.Stmt, ...] = ()) -> None:
        swizzled = dict((id(d), offset) for d, offset in ir.swizzled_layout(shared))
        if swizzled:
            self.line("extern __shared__ __align__(1024) unsigned char __gn_swz_smem[];")
            self.line("unsigned char* __gn_swz = gn_swizzle_base(__gn_swz_smem);")
        for decl in shared:
            var = decl.var
            elem = ctype(decl.ty.elem)
            if id(decl) in swizzled:
                self.line(f"{elem}* {cname(var)} = reinterpret_cast<{elem}*>(__gn_swz + "
                          f"{swizzled[id(decl)]});")
            elif decl.dynamic:
                self.line("extern __shared__ __align__(16) unsigned char __gn_dyn_smem[];")
                self.line(f"{elem}* {cname(var)} = reinterpret_cast<{elem}*>(__gn_dyn_smem);")
                self.line(f"const gn_i64 {extent_name(var, 0)} = "
                          f"(gn_i64)(gn_dynamic_smem_bytes() / sizeof({elem}));")
            else:
                size = math.prod(decl.shape)
                self.line(f"__shared__ __align__(16) {elem} {cname(var)}[{size}];")
        fragments = self.fragments = fragment_arrays(body) if local_arrays else set()
        self.wg_accumulators = wgmma_accumulators(body) if local_arrays else []
        for local in local_arrays:
            align = "__align__(16) " if id(local.var) in fragments else ""
            self.line(f"{align}{ctype(local.ty.elem)} {cname(local.var)}"
                      f"[{math.prod(local.shape)}];")
        read = ir.variables_read(body)
        for var in locals_:
            # A loop variable nobody reads (`for _ in range(n)`) would draw a warning.
            unused = "" if id(var) in read else "[[maybe_unused]] "
            self.line(f"{unused}{self.var_ctype(var)} {cname(var)}{{}};")

    def var_ctype(self, var: ir.Var) -> str:
        """The C++ type a local is declared with."""
        return ctype(var.ty)

    def vector_params(self, params: tuple[ir.Var, ...]) -> None:
        """Declare a kernel's vector parameters from their components (see :meth:`params`)."""
        for p in params:
            if isinstance(p.ty, ir.VectorType):
                items = ", ".join(component_name(p, k) for k in range(p.ty.n))
                # Not const: a kernel may assign its parameters, a vector's components too.
                self.line(f"{ctype(p.ty)} {cname(p)} = {ctype(p.ty)}{{{items}}};")
            elif isinstance(p.ty, ir.StructType):
                names = [name for _, name in leaf_names(p.ty.info, f"__gn_{cname(p)}")]
                self.line(f"{ctype(p.ty)} {cname(p)} = {ctype(p.ty)}{gather(p.ty.info, names)};")

    def kernel_function(self, symbol: str | None = None) -> str:
        k = self.kernel
        params = self.params(k.params, kernel=True)
        params += self.tma_params(k.body)
        params.append("gn_error_record* __restrict__ __gn_err")
        self.lines = []
        self.indent = 1
        self.last_line = -1
        self.vector_params(k.params)
        self.declarations(k.locals, k.local_arrays, k.shared, k.body)
        self.tma_setup()
        self.block(k.body)
        sig = (f'extern "C" __global__ void {symbol or k.symbol}(\n    '
               + ",\n    ".join(params) + ")")
        return sig + "\n{\n" + "\n".join(self.lines) + "\n}\n"

    def device_function(self, fn: ir.DeviceFunction) -> str:
        params = ["gn_error_record* __gn_err", *self.params(fn.params, kernel=False)]
        self.lines = []
        self.indent = 1
        self.last_line = -1
        kernel_file = self.file
        if fn.span.file != self.kernel.span.file:  # its #line names its own module's file
            self.file = _directive_name(display_name(fn.module, fn.span.file))
        self.declarations(fn.locals, fn.local_arrays, (), fn.body)
        self.block(fn.body)
        self.file = kernel_file
        if fn.ret != ir.VOID:
            self.line("__builtin_unreachable();")
        sig = f"static __device__ {ctype(fn.ret)} {fn.symbol}(" + ", ".join(params) + ")"
        return f"// @gpu_device {_comment_safe(fn.module)}.{fn.name}\n" + sig + "\n{\n" + "\n".join(
            self.lines) + "\n}\n"

    # ---- statements ------------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def mark(self, s: ir.Stmt) -> None:
        line = s.span.line
        if line and line != self.last_line:
            self.lines.append(f'#line {line} "{self.file}"')
            self.last_line = line

    def block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        for s in stmts:
            self.mark(s)
            getattr(self, _STMT[type(s)])(s)

    def nested(self, stmts: tuple[ir.Stmt, ...]) -> None:
        self.indent += 1
        self.block(stmts)
        self.indent -= 1

    def emit_Assign(self, s: ir.Assign) -> None:
        if isinstance(s.value, ir.StructWith):  # `p.x = v`
            found = self.field_assignment(ir.Local(s.span, s.var.ty, s.var), s.value)
            if found is not None:
                self.line(f"{cname(s.var)}{found[0]} = {self.expr(found[1])};")
                return
        self.line(f"{cname(s.var)} = {self.expr(s.value)};")

    def emit_Store(self, s: ir.Store) -> None:
        target = self.element(s.array, s.indices, s.checks)
        if s.field:  # `a[i].x = v`
            target += self.field_path(s.array.ty.elem, s.field)
        self.line(f"{target} = {self.expr(s.value)};")

    def emit_ExprStmt(self, s: ir.ExprStmt) -> None:
        code = self.expr(s.value)
        self.line(f"{code};" if s.value.ty == ir.VOID or isinstance(
            s.value, (ir.Call, ir.Atomic)) else f"(void)({code});")

    def emit_If(self, s: ir.If) -> None:
        self.line(f"if ({self.expr(s.cond)}) {{")
        self.nested(s.then)
        if s.orelse:
            self.line("} else {")
            self.nested(s.orelse)
        self.line("}")

    def emit_While(self, s: ir.While) -> None:
        self.line(f"while ({self.expr(s.cond)}) {{")
        self.nested(s.body)
        self.line("}")

    def emit_ForRange(self, s: ir.ForRange) -> None:
        if s.reverse:
            self.emit_reversed_range(s)
            return
        n = self.counter
        self.counter += 1
        vt = s.var.ty
        assert isinstance(vt, ir.ScalarType)
        # The counter must not overflow on its last step past `stop` (Python's range never
        # wraps): the variable's own type when the constant bounds leave room, else 64 bits.
        fits = s.counter_fits or (
            isinstance(s.start, ir.Const) and isinstance(s.stop, ir.Const)
            and isinstance(s.step, ir.Const)
            and vt.info.min <= s.stop.value + s.step.value <= vt.info.max)
        if fits or vt.info.bits == 64:
            ct = vt.info.c_name
        else:
            ct = "gn_i64"
        codes = self.loop32(s)
        if codes is not None:
            ct, fits = "int", True
        else:
            codes = (self.expr(s.start), self.expr(s.stop), self.expr(s.step))
        start_code, stop_code, step_code = codes
        i, stop, step = f"__gn_i{n}", f"__gn_stop{n}", f"__gn_step{n}"
        self.line("{")
        self.indent += 1
        self.line(f"const {ct} {stop} = {stop_code};")
        if s.step_sign == 0:
            self.line(f"const {ct} {step} = {step_code};")
            cond = f"({step} > 0 ? {i} < {stop} : {i} > {stop})"
            incr = f"{i} += {step}"
        else:
            cond = f"{i} {'<' if s.step_sign > 0 else '>'} {stop}"
            assert isinstance(s.step, ir.Const)  # a step with a known sign is a literal
            sv = s.step.value
            incr = f"++{i}" if sv == 1 else f"--{i}" if sv == -1 else f"{i} += {step_code}"
            if not fits and vt.info.bits == 64:
                # A 64-bit counter has no wider type: end the loop instead of stepping past a
                # `stop` near the type's limit (signed overflow).
                past = ">" if s.step_sign > 0 else "<"
                incr = (f"{i} = ({i} {past} {stop} - {step_code}) ? {stop} : "
                        f"({ct})({i} + {step_code})")
        if s.unroll:
            self.line(f"#pragma unroll {s.unroll}")
        elif s.unroll == 0 or self.unroll_for_fragments(s):
            self.line("#pragma unroll")
        self.line(f"for ({ct} {i} = {start_code}; {cond}; {incr}) {{")
        self.indent += 1
        self.line(f"{cname(s.var)} = ({self.var_ctype(s.var)}){i};")
        self.indent -= 1
        self.nested(s.body)
        self.line("}")
        self.indent -= 1
        self.line("}")

    def emit_reversed_range(self, s: ir.ForRange) -> None:
        """``for var in reversed(range(start, stop, step))``: a counter from the range's length
        down to 1 and each value computed from it (the prelude's ``gn_range_count`` and
        ``gn_range_value``, exact in 64 bits), so a runtime step's sign is Python's and no
        counter steps past a bound at its type's limit."""
        n = self.counter
        self.counter += 1
        vt = s.var.ty
        assert isinstance(vt, ir.ScalarType)
        ct = vt.info.c_name
        codes = self.loop32(s)
        if codes is not None:
            ct = "int"
        else:
            codes = (self.expr(s.start), self.expr(s.stop), self.expr(s.step))
        k, start, stop, step = (f"__gn_{part}{n}" for part in ("k", "start", "stop", "step"))
        self.line("{")
        self.indent += 1
        for name, code in zip((start, stop, step), codes):
            self.line(f"const {ct} {name} = {code};")
        if s.unroll:
            self.line(f"#pragma unroll {s.unroll}")
        elif s.unroll == 0 or self.unroll_for_fragments(s):
            self.line("#pragma unroll")
        self.line(f"for (gn_u64 {k} = gn_range_count({start}, {stop}, {step}); {k} != 0; "
                  f"--{k}) {{")
        self.indent += 1
        self.line(f"{cname(s.var)} = ({self.var_ctype(s.var)})gn_range_value({start}, {step}, "
                  f"{k} - 1);")
        self.indent -= 1
        self.nested(s.body)
        self.line("}")
        self.indent -= 1
        self.line("}")

    def loop32(self, s: ir.ForRange) -> tuple[str, str, str] | None:
        """``int`` code for a loop's start, stop and step, where the counter may be 32-bit (see
        gpu_native.emit.index32); the main entry point has none."""
        return None

    def emit_GridStride(self, s: ir.GridStride) -> None:
        n = self.counter
        self.counter += 1
        i, stop = f"__gn_i{n}", f"__gn_stop{n}"
        self.line("{")
        self.indent += 1
        self.line(f"const gn_i64 {stop} = {self.expr(s.stop)};")
        self.line(f"for (gn_i64 {i} = {self.uid(0)}; {i} < {stop}; {i} += {self.thread_count}) {{")
        self.indent += 1
        self.line(f"{cname(s.var)} = {i};")
        self.indent -= 1
        self.nested(s.body)
        self.line("}")
        self.indent -= 1
        self.line("}")

    def emit_Break(self, s: ir.Break) -> None:
        self.line("break;")

    def emit_Continue(self, s: ir.Continue) -> None:
        self.line("continue;")

    def emit_Return(self, s: ir.Return) -> None:
        self.line("return;" if s.value is None else f"return {self.expr(s.value)};")

    def emit_Assert(self, s: ir.Assert) -> None:
        if s.at_launch:
            self.line("// assert checked by the launcher (it depends only on the launch shape)")
            return
        helpers = self.helpers
        self.line(f"{helpers.assert_}(__gn_err, {self.expr(s.cond)}, {s.site}u{helpers.origin});")

    # The hooks below are where a kernel that runs its logical grid on fewer threads differs
    # (see gpu_native.emit.uid_stride): checks report the logical uid, returns skip one uid.
    helpers = ENTRY_POINTS["main"]

    def emit_Barrier(self, s: ir.Barrier) -> None:
        fn = _BARRIERS[s.scope].cuda
        if s.scope == "block" and (self.kernel.traits.uses_wgmma or self.tma_names):
            # This thread's shared-memory accesses, ordered with the next wgmma's reads and
            # tensor copies (the async proxy) after it.
            self.line("gn_fence_proxy_async();")
        if s.scope != "warp":
            self.line(f"{fn}();")
        else:
            self.line(f"{fn}({self.expr(s.mask) if s.mask is not None else '0xffffffffu'});")

    def emit_Fence(self, s: ir.Fence) -> None:
        self.line(f"{_FENCES[s.scope].cuda}();")

    def emit_Print(self, s: ir.Print) -> None:
        fmt: list[str] = []
        args: list[str] = []
        for item in s.items:
            if isinstance(item, str):
                # A NUL would end the format: each one is printed through %c.
                parts = item.split("\0")
                fmt.append("%c".join(_string_literal(p) for p in parts))
                args.extend(["0"] * (len(parts) - 1))
                continue
            ty = item.ty
            assert isinstance(ty, ir.ScalarType)
            code = self.expr(item)
            info = ty.info
            if info.kind == "bool":
                fmt.append("%s")
                args.append(f'(({code}) ? "True" : "False")')
            elif info.kind == "int":
                fmt.append("%lld")
                args.append(f"(long long)({code})")
            elif info.kind == "uint":
                fmt.append("%llu")
                args.append(f"(unsigned long long)({code})")
            else:
                fmt.append("%g")
                args.append(convert(code, ty, ir.F64))
        text = " ".join(fmt)
        self.line(f'printf("{text}\\n"{"".join(", " + a for a in args)});')

    def emit_TailExit(self, s: ir.TailExit) -> None:
        arrays = []
        for ref, axes in s.extents:
            outside = [f"({self.outside_extent(axis, ref, dim)})"
                       for dim, axis in enumerate(axes) if axis is not None]
            arrays.append(outside[0] if len(outside) == 1 else "(" + " | ".join(outside) + ")")
        self.line("// grid tail: this thread's uid lies past every array it indexes")
        # `&` and `|`, not `&&` and `||`: a few compares and one branch, no divergent regions.
        self.line(f"if ({' & '.join(arrays)}) {self.exit_code};")

    exit_code = "return"

    def outside_extent(self, axis: int, ref: ir.ArrayRef, dim: int) -> str:
        """The grid-tail test of one uid axis against one extent."""
        return f"{self.uid(axis)} >= {extent_name(ref.var, dim)}"

    # ---- expressions -------------------------------------------------------------------------

    def expr(self, e: ir.Expr) -> str:
        return getattr(self, _EXPR[type(e)])(e)

    thread_count = "(gn_i64)gridDim.x * blockDim.x"

    def uid(self, axis: int) -> str:
        a = _XYZ[axis]
        return f"((gn_i64)blockIdx.{a} * blockDim.{a} + threadIdx.{a})"

    def extent(self, ref: ir.ArrayRef, axis: int) -> str:
        shape = ref.ty.shape
        if shape is not None and shape[0] >= 0:
            return str(shape[axis])
        return extent_name(ref.var, axis)

    def element(self, ref: ir.ArrayRef, indices, checks, width: int = 1) -> str:
        """``name[offset]`` of the element at ``indices``, with the checks that remain; with
        ``width`` > 1, the last axis's check covers ``width`` elements from its index."""
        static = ref.ty.shape is not None and ref.ty.shape[0] >= 0
        def index(idx: ir.Expr) -> str:
            code = self.expr(idx)
            return code if static or idx.ty == ir.I64 else f"(gn_i64){code}"

        helpers = self.helpers
        if width > 1:
            assert not helpers.origin  # no _uids entry point has them (TraitNotes.uid_only)
        strided = ref.ty.strided
        if (not static and not strided and len(indices) == 2 and None not in checks
                and width == 1):
            # One branch for both axes: half the branches of the 2-D stencils and tiles.
            i, j = (index(idx) for idx in indices)
            return (f"{cname(ref.var)}[{helpers.check2}(__gn_err, {i}, {self.extent(ref, 0)}, "
                    f"{checks[0]}u, {j}, {self.extent(ref, 1)}, {checks[1]}u{helpers.origin})]")
        parts = []
        for axis, (idx, site) in enumerate(zip(indices, checks)):
            code = index(idx)
            if site is not None and width > 1 and axis == len(indices) - 1:
                code = (f"gn_chk_vec(__gn_err, {code}, {self.extent(ref, axis)}, {width}, "
                        f"{site}u)")
            elif site is not None:
                code = (f"{helpers.check}(__gn_err, {code}, {self.extent(ref, axis)}, "
                        f"{site}u{helpers.origin})")
            parts.append(code)
        if strided:
            # Each index checked against its own extent, then scaled by its stride (in
            # elements; negative strides too): the view's elements need not be contiguous.
            offset = " + ".join(f"{part} * {stride_name(ref.var, axis)}"
                                for axis, part in enumerate(parts))
            return f"{cname(ref.var)}[{offset}]"
        extents = [self.extent(ref, axis) for axis in range(len(parts))]
        return f"{cname(ref.var)}[{array_offset(ref, parts, extents)}]"

    def emit_Const(self, e: ir.Const) -> str:
        return const_code(e.value, e.ty)

    def emit_Local(self, e: ir.Local) -> str:
        return cname(e.var)

    def emit_BinOp(self, e: ir.BinOp) -> str:
        ty = e.ty
        info = ty.info
        lhs, rhs = self.expr(e.left), self.expr(e.right)
        op = e.op
        ct = info.c_name
        if op in ("+", "-", "*") and info.kind == "int":
            if e.no_wrap:
                # Proven not to wrap: plain signed arithmetic lets the compiler widen and fold
                # it into 64-bit address arithmetic.
                return f"(({ct})({lhs} {op} {rhs}))"
            ut = _UNSIGNED[ct]
            return f"(({ct})(({ut})({lhs}) {op} ({ut})({rhs})))"
        if op in ("*", "/") and info.name == "f32":
            scaled = scale_by_power_of_two(e)
            if scaled is not None and may_be_product(getattr(e, scaled[0]),
                                                      self.product_locals):
                # ptxas would fold the scale into the multiply that produced x (see gn_fscale).
                x = lhs if scaled[0] == "left" else rhs
                return f"gn_fscale({x}, {const_code(scaled[1], ty)})"
        if op == "/" and info.name in ("f32", "f64") and not (
                isinstance(e.right, ir.Const) and e.right.value):
            # A divisor that may be -0.0: see gn_fdiv in the prelude.
            return f"gn_fdiv({lhs}, {rhs})"
        if op == "/" and info.name in ("f16", "bf16"):
            # The quotient in f32, rounded once to 16 bits: correctly rounded (f32 has more than
            # twice the precision plus two bits, so the double rounding is exact), as the
            # simulator computes it, where CUDA's __hdiv is a reciprocal approximation; and
            # through gn_fdiv, for the same NVVM sign bug as f32 division.
            half = "half" if info.name == "f16" else "bfloat16"
            a, b = f"__{half}2float({lhs})", f"__{half}2float({rhs})"
            q = (f"({a} / {b})" if isinstance(e.right, ir.Const) and e.right.value
                 else f"gn_fdiv({a}, {b})")
            return f"__float2{half}_rn({q})"
        if op in ("+", "-", "*", "/"):
            return f"({lhs} {op} {rhs})"
        if op in ("//", "%"):
            if info.is_int:
                fn = "gn_floordiv" if op == "//" else "gn_mod"
                if e.zero_check is not None:
                    helpers = self.helpers
                    return (f"{fn}{helpers.divide}<{ct}>(__gn_err, {lhs}, {rhs}, "
                            f"{e.zero_check}u{helpers.origin})")
                return f"{fn}<{ct}>({lhs}, {rhs})"
            return f"{'gn_ffloordiv_py' if op == '//' else 'gn_fmod_py'}({lhs}, {rhs})"
        if op == "**":
            exponent = e.right
            assert isinstance(exponent, ir.Const)  # the checker keeps ** for a literal exponent
            n = exponent.value
            if info.is_int:
                return f"gn_ipow<{ct}>({lhs}, {n})"
            if n == 0:
                # The base still runs: its checks (a zero divisor, an index) must fire.
                return f"((void)({lhs}), {const_code(1.0, ty)})"
            if n == 1:
                return lhs
            if n == 2:
                return f"gn_sq<{ct}>({lhs})"
            pow_fn = spelling(R.MATH_OPS["pow"].cuda, info)
            return f"{pow_fn}({lhs}, {float(n)}{'f' if info.name == 'f32' else ''})"
        if op == ">>" and e.no_wrap and info.is_int:
            # Proven: a nonnegative value shifted by a constant within its width, the logical
            # shift (which the device compiler can fold, unlike gn_shr's bit-field extract).
            ut = _UNSIGNED.get(ct, ct)
            return f"(({ct})(({ut})({lhs}) >> {constant_int(e.right)}))"
        if op in ("<<", ">>"):
            return f"gn_{'shl' if op == '<<' else 'shr'}<{ct}>({lhs}, (gn_i64)({rhs}))"
        if op in ("&", "|", "^"):
            if info.kind == "bool":
                return f"((bool)({lhs} {op} {rhs}))"
            return f"(({ct})({lhs} {op} {rhs}))"
        raise AssertionError(op)  # pragma: no cover

    def emit_UnaryOp(self, e: ir.UnaryOp) -> str:
        x = self.expr(e.operand)
        if e.op == "not":
            return f"(!{x})"
        ty = e.ty
        ct = ty.info.c_name
        if e.op == "~":
            return f"(({ct})~{x})"
        if ty.info.is_int:
            ut = _UNSIGNED.get(ct, ct)
            return f"(({ct})(({ut})0 - ({ut})({x})))"
        return f"(-({x}))"

    def emit_Compare(self, e: ir.Compare) -> str:
        left, right = self.expr(e.left), self.expr(e.right)
        ty = e.left.ty
        if isinstance(ty, ir.ScalarType) and ty.info.name in ("f32", "f64"):
            # x > c and x >= c for a constant c <= 0 are false for a NaN x; ptxas folds them to
            # true where it takes x to be non-negative (fabs, x*x, exp2: fuzz seed 2638).  The
            # NaN test on the bits is out of its reach.
            # The constant may also appear only after NVVM folds (`abs(x) >= n * 0`, fuzz seed
            # 24530), so a left side ptxas takes to be non-negative gets the test whatever the
            # right side is.
            if e.op in (">", ">=") and (nonpositive(e.right) or taken_nonnegative(e.left)):
                return f"gn_{'gt' if e.op == '>' else 'ge'}_ord({left}, {right})"
            if e.op in ("<", "<=") and (nonpositive(e.left) or taken_nonnegative(e.right)):
                return f"gn_{'gt' if e.op == '<' else 'ge'}_ord({right}, {left})"
            # The mirror image: x < c and x <= c for a constant c >= 0, which ptxas folds to
            # true where it takes x to be <= 0 (`2e18 > -v` for v = fabs(y): fuzz seed 47326,
            # where v was a variable, so any x gets the test).
            if e.op in ("<", "<=") and (nonnegative(e.right) or taken_nonpositive(e.left)):
                return f"gn_{'lt' if e.op == '<' else 'le'}_ord({left}, {right})"
            if e.op in (">", ">=") and (nonnegative(e.left) or taken_nonpositive(e.right)):
                return f"gn_{'lt' if e.op == '>' else 'le'}_ord({right}, {left})"
        return f"({left} {e.op} {right})"

    def emit_BoolOp(self, e: ir.BoolOp) -> str:
        joiner = " && " if e.op == "and" else " || "
        return "(" + joiner.join(self.expr(v) for v in e.values) + ")"

    def emit_Select(self, e: ir.Select) -> str:
        return f"({self.expr(e.cond)} ? {self.expr(e.then)} : {self.expr(e.orelse)})"

    def emit_Cast(self, e: ir.Cast) -> str:
        src, dst = e.value.ty, e.ty
        assert isinstance(src, ir.ScalarType)  # the checker converts scalars only
        code = self.expr(e.value)
        if dst.info.is_int and dst.info.bits == 64 and sext_may_widen(e.value):
            # NVVM may widen the wrapped 32-bit arithmetic instead (see gn_sext32).
            return convert(f"gn_sext32({code})", ir.I64, dst)
        return convert(code, src, dst)

    def emit_ArrayRef(self, e: ir.ArrayRef) -> str:
        return cname(e.var)

    def emit_Load(self, e: ir.Load) -> str:
        if e.width == 1:
            return self.element(e.array, e.indices, e.checks)
        # load_vec4: one aligned vector access at the first element's address.
        target = self.element(e.array, e.indices, e.checks, e.width)
        vec = e.ty.info.c_name
        if e.align is None:
            return f"gn_vload<{vec}>(&{target})"
        return f"gn_vload_chk<{vec}>(__gn_err, &{target}, {e.align}u)"

    def emit_Shape(self, e: ir.Shape) -> str:
        return self.extent(e.array, e.axis)

    def emit_Special(self, e: ir.Special) -> str:
        return f"((int){R.GPU_NATIVE[e.name].cuda}.{_XYZ[e.axis]})"

    def emit_LaneId(self, e: ir.LaneId) -> str:
        return f"{R.GPU_NATIVE['lane_id'].cuda}()"

    def emit_UidComponent(self, e: ir.UidComponent) -> str:
        if e.scope == "grid":
            return self.uid(e.axis)
        return f"((gn_i64)threadIdx.{_XYZ[e.axis]})"

    def emit_MathCall(self, e: ir.MathCall) -> str:
        args = [self.expr(a) for a in e.args]
        ty = e.args[0].ty
        assert isinstance(ty, ir.ScalarType)
        entry = R.MATH_OPS[e.name]
        result = e.ty
        assert isinstance(result, ir.ScalarType)
        fn = spelling(entry.cuda, ty.info).format(T=ty.info.c_name, R=result.info.c_name)
        code = f"{fn}({', '.join(args)})"
        if entry.namespace == "gpu_native":
            # The bit intrinsics return CUDA's int or unsigned: the result type says which.
            return f"(({result.info.c_name}){code})"
        # CUDA's isnan and friends return int (or a bool of their own in some headers).
        return f"((bool){code})" if e.ty == ir.BOOL else code

    def emit_Call(self, e: ir.Call) -> str:
        args = ["__gn_err"]
        for param, arg in zip(e.function.params, e.args):
            if isinstance(param.ty, ir.ArrayType):
                assert isinstance(arg, ir.ArrayRef)
                args.append(cname(arg.var))
                args.extend(self.extent(arg, a) for a in range(arg.ty.ndim))
                if arg.ty.strided:
                    args.extend(stride_name(arg.var, a) for a in range(arg.ty.ndim))
            else:
                args.append(self.expr(arg))
        return f"{e.function.symbol}({', '.join(args)})"

    def emit_MakeTuple(self, e: ir.MakeTuple) -> str:
        # A braced list evaluates its items left to right, as Python does.
        return f"{ctype(e.ty)}{{{', '.join(self.expr(i) for i in e.items)}}}"

    def emit_TupleItem(self, e: ir.TupleItem) -> str:
        return f"{self.expr(e.value)}.v{e.index}"

    def emit_WarpOp(self, e: ir.WarpOp) -> str:
        args = [self.expr(a) for a in e.args]
        if e.mask is not None:
            args.insert(0, self.expr(e.mask))
        code = f"{R.GPU_NATIVE[e.op].cuda}({', '.join(args)})"
        return f"((bool){code})" if e.ty == ir.BOOL else code

    def emit_BarrierVote(self, e: ir.BarrierVote) -> str:
        code = f"{_BARRIER_VOTES[e.op].cuda}({self.expr(e.predicate)})"
        return f"((bool){code})" if e.ty == ir.BOOL else code

    def emit_RandomDraw(self, e: ir.RandomDraw) -> str:
        # The counter is passed by reference: the prelude's gn_philox_* advance it.
        ty = e.ty
        assert isinstance(ty, (ir.ScalarType, ir.VectorType))
        fn = spelling(R.GENERATOR_METHODS[e.method].cuda, ty.info).format(T=ty.info.c_name)
        state = ", ".join(cname(local.var) for local in e.state)
        if not e.args:
            return f"{fn}({state})"
        n = self.expr(e.args[0])
        if e.check is None:
            return f"{fn}({state}, (gn_u64)({n}))"
        helpers = self.helpers
        return (f"{fn}({state}, gn_philox_bound(__gn_err, {n}, "
                f"{e.check}u{helpers.origin}))")

    def emit_Atomic(self, e: ir.Atomic) -> str:
        target = self.element(e.array, e.indices, e.checks)
        ptr = f"&{target}"
        elem = e.array.ty.elem
        ops = [self.expr(o) for o in e.operands]
        shared = e.array.ty.space == "shared"
        fence = "__threadfence_block()" if shared else "__threadfence()"
        if isinstance(elem, ir.VectorType):
            # One atomic per component: the prelude's gn_vatomic_* (CUDA's own atomicAdd of
            # a __half2 / __nv_bfloat162 pair).
            ct = ctype(elem)
            call = f"{spelling(R.ATOMIC_OPS[e.op].cuda, elem.info)}({ptr}, {ops[0]})"
            return _ordered(call, e, ct, fence)
        assert isinstance(elem, ir.ScalarType)
        ct = elem.info.c_name
        fn = spelling(R.ATOMIC_OPS[e.op].cuda, elem.info)
        if e.op == "sub":
            if elem.info.is_float:
                call = f"{fn}({ptr}, -({ops[0]}))"
            else:
                call = f"{fn}({_atomic_ptr(ptr, elem)}, {_atomic_val('(0 - ' + ops[0] + ')', elem)})"
        elif e.op in ("add", "and", "or", "xor", "exchange"):
            # CUDA has these for unsigned long long, not for long long.
            call = f"{fn}({_atomic_ptr(ptr, elem)}, {_atomic_val(ops[0], elem)})"
        else:  # min, max, cas, load, store: the operands as they are
            call = f"{fn}({', '.join([ptr, *ops])})"
        if e.op in ("add", "sub", "and", "or", "xor", "exchange") and elem.info.name in ("i64",):
            call = f"(({ct}){call})"
        return _ordered(call, e, ct, fence)


def _ordered(call: str, e: ir.Atomic, ct: str, fence: str) -> str:
    """The atomic ``call`` with the fences of its memory order around it (``ct``: the C++
    type of its old value)."""
    order = e.order
    if order == "relaxed":
        return call
    pre = order in ("release", "acq_rel", "seq_cst")
    post = order in ("acquire", "acq_rel", "seq_cst")
    if e.ty == ir.VOID:
        return "(" + ", ".join([*([fence] if pre else []), call, *([fence] if post else [])]) + ")"
    return (f"([&]() {{ {fence + '; ' if pre else ''}{ct} __gn_old = {call}; "
            f"{fence + '; ' if post else ''}return __gn_old; }}())")


def _atomic_ptr(ptr: str, elem: ir.ScalarType) -> str:
    if elem.info.name == "i64":
        return f"(unsigned long long*)({ptr})"
    return ptr


def _atomic_val(value: str, elem: ir.ScalarType) -> str:
    if elem.info.name == "i64":
        return f"(unsigned long long)({value})"
    return value


_STMT: dict[type, str] = {
    ir.Assign: "emit_Assign",
    ir.Store: "emit_Store",
    ir.ExprStmt: "emit_ExprStmt",
    ir.If: "emit_If",
    ir.While: "emit_While",
    ir.ForRange: "emit_ForRange",
    ir.GridStride: "emit_GridStride",
    ir.Break: "emit_Break",
    ir.Continue: "emit_Continue",
    ir.Return: "emit_Return",
    ir.Assert: "emit_Assert",
    ir.Barrier: "emit_Barrier",
    ir.Fence: "emit_Fence",
    ir.Print: "emit_Print",
    ir.TailExit: "emit_TailExit",
    ir.MatrixOp: "emit_MatrixOp",
}

_EXPR: dict[type, str] = {
    ir.Const: "emit_Const",
    ir.Local: "emit_Local",
    ir.BinOp: "emit_BinOp",
    ir.UnaryOp: "emit_UnaryOp",
    ir.Compare: "emit_Compare",
    ir.BoolOp: "emit_BoolOp",
    ir.Select: "emit_Select",
    ir.Cast: "emit_Cast",
    ir.ArrayRef: "emit_ArrayRef",
    ir.Load: "emit_Load",
    ir.Shape: "emit_Shape",
    ir.Special: "emit_Special",
    ir.LaneId: "emit_LaneId",
    ir.UidComponent: "emit_UidComponent",
    ir.MathCall: "emit_MathCall",
    ir.Call: "emit_Call",
    ir.MakeTuple: "emit_MakeTuple",
    ir.TupleItem: "emit_TupleItem",
    ir.WarpOp: "emit_WarpOp",
    ir.BarrierVote: "emit_BarrierVote",
    ir.Atomic: "emit_Atomic",
    ir.VecMake: "emit_VecMake",
    ir.VecComponent: "emit_VecComponent",
    ir.VecBinOp: "emit_VecBinOp",
    ir.VecUnary: "emit_VecUnary",
    ir.VecCall: "emit_VecCall",
    ir.ComplexCall: "emit_ComplexCall",
    ir.RandomDraw: "emit_RandomDraw",
    ir.StructMake: "emit_StructMake",
    ir.FieldGet: "emit_FieldGet",
    ir.StructWith: "emit_StructWith",
}


def _directive_name(name: str) -> str:
    """``name`` as a ``#line`` directive can hold it (forward slashes, no double quote, no
    control character: a file name may hold a newline, which would end the directive)."""
    return _comment_safe(name).replace('"', "'")


def _comment_safe(text: str) -> str:
    """``text`` (a module or file name) as a ``//`` comment can hold it: a newline would end the
    comment and a backslash at its end would splice the next line into it."""
    return "".join("?" if ord(ch) < 0x20 or ch == "\x7f" else ch
                   for ch in text.replace("\\", "/"))


def _string_literal(text: str) -> str:
    """``text`` inside a C string literal that is a ``printf`` format: quotes, backslashes
    and ``%`` escaped, control characters as three-digit octal escapes (a hex escape would
    swallow the hex digits after it).  NUL is not here: it would end the format."""
    out = []
    for ch in text.replace("%", "%%"):
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ch == "\x7f":
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return "".join(out)


def emit_kernel(kernel: ir.Kernel, display_file: str) -> str:
    """Return the CUDA C++ translation unit for one kernel specialisation."""
    return CudaEmitter(kernel, display_file).emit()
