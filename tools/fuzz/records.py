"""The generator's records: ``@gpu_struct`` values, ``const_array`` tables and Philox generators.

:class:`RecordGen` extends a :class:`~tools.fuzz.generator.Generator` (which calls it where a
kernel, a statement or a scalar expression is drawn) with three kinds of kernel, each behind a
:class:`~tools.fuzz.generator.Config` flag:

* ``structs``: one to three ``@gpu_struct`` classes of random fields (f32, f64, i32, i64, u32,
  ``bool_``, vectors, and an earlier struct nested), struct locals built as ``P()``,
  ``P(x, y)`` or ``P(b=y)``, copied (``q = p``), field reads (``p.inner.b``, ``p.v.y``) in
  scalar expressions, field writes and augmented writes (``p.inner.b = e``, ``p.a += e``),
  ``@gpu_device`` functions that take a struct and return one (a modified copy) or a scalar,
  and, in half of the kernels, a ``CUDASlice[P]`` input and a ``CUDASliceMut[P]`` output, read
  whole or by field at the uid and written whole or by field at the uid;
* ``tables``: module-level ``const_array`` tables (1-D to 3-D, every scalar type but bool,
  written as a list with ``dtype`` and ``shape`` or as ``np.array``) of random constants, read at
  indices that are in range by construction (``e % n``, ``e % len(T)``, ``min(max(e, 0), n-1)``
  and the variable of a ``for j in range(len(T))`` loop);
* ``rng``: ``rng = philox(seed, subsequence, offset)`` generators (made up front and re-seeded
  anywhere), and draws ``random_u32()``, ``uniform()``, ``uniform(f64)``, ``normal()``,
  ``normal(f64)``, ``randint(n)`` (constant ``n``, and values made in range: ``x | 1``), one per
  statement, into locals and outputs.

The reference semantics of these nodes are in :mod:`tools.fuzz.records_reference`; the C layout
of a struct (what NumPy arrays of it look like) is computed here from ``docs/language.md``
("Structs", "Vectors"), independently of ``gpu_native.lang.structs``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .generator import (
    FLOATS,
    INT_RANGE,
    INTS,
    NUMPY,
    TYPES,
    VECTORS,
    Assign,
    AugAssign,
    Bin,
    Cast,
    Component,
    Decl,
    Expr,
    For,
    Lit,
    Load,
    MinMax,
    Stmt,
    Store,
    Var,
    assignable,
    edge_values,
    literal_text,
    promote,
    walk,
)

SIZE = {"f32": 4, "i32": 4, "u32": 4, "f64": 8, "i64": 8, "bool": 1}
# docs/language.md, "Vectors", Layout: (bytes, alignment) of each vector type.
VECTOR_LAYOUT = {"vec2f": (8, 8), "vec3f": (12, 4), "vec4f": (16, 16),
                 "vec2d": (16, 16), "vec3d": (24, 8), "vec4d": (32, 16),
                 "vec2i": (8, 8), "vec3i": (12, 4), "vec4i": (16, 16)}
TABLE_TYPES = ("f32", "f64", "i32", "i64", "u32")
NP_NAME = {"f32": "np.float32", "f64": "np.float64", "i32": "np.int32", "i64": "np.int64",
           "u32": "np.uint32"}
RANDINT_MAX = (1 << 32) - 1


# ---- the module-level declarations -------------------------------------------------------------


@dataclass
class StructDef:
    name: str
    fields: list[tuple[str, str]]  # (name, type): a scalar, "bool", a vector or a struct's name


@dataclass
class Table:
    name: str
    ty: str
    shape: tuple[int, ...]
    values: list  # flat, row-major
    spelling: str  # "list" (values, dtype, shape) or "numpy" (np.array(values, dtype=...))


@dataclass
class DevFn:
    """``@gpu_device def name(p: P, x: T) -> R``: straight-line, ``return ret``."""

    name: str
    params: list[tuple[str, str]]
    result: str
    body: list[Stmt]
    ret: Expr


@dataclass
class Records:
    """A kernel's structs, tables, device functions and struct array parameters."""

    structs: dict[str, StructDef] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    devfns: list[DevFn] = field(default_factory=list)
    sarrays: list[tuple[str, str, bool]] = field(default_factory=list)  # (name, struct, writable)

    def arrays(self) -> list[tuple[str, str, bool]]:
        return list(self.sarrays)

    def is_struct(self, t: str) -> bool:
        return t in self.structs

    def leaves(self, t: str, prefix: tuple = ()) -> list[tuple[tuple, str]]:
        """Every scalar inside a value of struct type ``t``: (path, scalar type); a vector's
        components are paths ending in their index."""
        out = []
        for name, ft in self.structs[t].fields:
            if ft in self.structs:
                out += self.leaves(ft, prefix + (name,))
            elif ft in VECTORS:
                elem, n = VECTORS[ft]
                out += [(prefix + (name, k), elem) for k in range(n)]
            else:
                out.append((prefix + (name,), ft))
        return out

    def layout(self, t: str) -> tuple[int, int]:
        """(size, alignment) of a field type: C's rules (docs/language.md, "Structs")."""
        if t in SIZE:
            return SIZE[t], SIZE[t]
        if t in VECTOR_LAYOUT:
            return VECTOR_LAYOUT[t]
        return self.dtype(t).itemsize, self.alignment(t)

    def alignment(self, t: str) -> int:
        """A struct's alignment: its most aligned field's (NumPy's ``dtype.alignment`` does not
        know a vector's)."""
        return max(self.layout(ft)[1] for _n, ft in self.structs[t].fields)

    def dtype(self, t: str) -> np.dtype:
        """The NumPy dtype of struct ``t``: each field at the next multiple of its alignment, the
        struct padded to a multiple of its most aligned field."""
        names, formats, offsets = [], [], []
        offset, align = 0, 1
        for name, ft in self.structs[t].fields:
            size, a = self.layout(ft)
            offset = -(-offset // a) * a
            names.append(name)
            offsets.append(offset)
            if ft in self.structs:
                formats.append(self.dtype(ft))
            elif ft in VECTORS:
                elem, n = VECTORS[ft]
                formats.append((NUMPY[elem], (n,)))
            else:
                formats.append(np.bool_ if ft == "bool" else NUMPY[ft])
            offset += size
            align = max(align, a)
        size = -(-offset // align) * align
        return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                         "itemsize": size, "aligned": True})


# ---- expressions and statements ----------------------------------------------------------------


@dataclass
class SNew(Expr):
    """``P()``, ``P(a, b)`` (the first fields in order) or ``P(b=y, a=x)``."""

    args: list[tuple[str, Expr]]
    keywords: bool
    ty: str


@dataclass
class SField(Expr):
    """``p.name``: a field of a struct value (a local, an element, a call's result)."""

    operand: Expr
    name: str
    ty: str


@dataclass
class SLoad(Load):
    """``s[i]``: the element of a struct array at the uid (``slot`` is unused)."""


@dataclass
class SStore(Store):
    """``s[i] = value``: a whole struct into the element at the uid."""


@dataclass
class FieldAssign(Stmt):
    """``target.a.b = value`` or ``target.a.b += value``; a path may end in a vector
    component's index.  ``target`` is a struct local (a Var) or an element (an SLoad)."""

    target: Expr
    path: list
    op: str | None  # None: plain assignment
    value: Expr
    ty: str  # the field's type
    opty: str = ""  # the augmented operation's type


@dataclass
class DevCall(Expr):
    fn: str
    args: list[Expr]
    ty: str


@dataclass
class TLoad(Expr):
    """``T[idx]`` or ``T[a, b]`` of a const_array table, every index in range."""

    table: str
    indices: list[Expr]
    ty: str


@dataclass
class TLen(Expr):
    """``len(T)``: the table's first extent."""

    table: str
    ty: str = "i64"


@dataclass
class Seed(Stmt):
    """``rng = philox(seed[, subsequence[, offset]])``."""

    name: str
    args: list[Expr]


@dataclass
class Draw(Expr):
    """``rng.method(...)``: ``args`` holds randint's bound; ``wide`` is ``dtype=f64``."""

    rng: str
    method: str
    args: list[Expr]
    ty: str
    wide: bool = False


# ---- the generator -----------------------------------------------------------------------------


class RecordGen:
    """The part of a :class:`~tools.fuzz.generator.Generator` that draws records."""

    def __init__(self, g):
        self.g = g
        self.d = g.d
        self.c = g.c
        self.r = Records()
        self.slocals: list[Var] = []  # struct locals, apart: scalar code never picks them
        self.rngs: list[str] = []
        self.in_devfn = False

    # ---- setup ----

    def setup(self) -> list[Stmt]:
        """The module-level declarations; the struct locals and generators, as statements."""
        d = self.d
        if self.c.tables:
            for _ in range(d.integer(1, 3)):
                self.table()
        body: list[Stmt] = []
        if self.c.structs:
            for _ in range(d.integer(1, 3)):
                self.struct()
            if d.chance(0.5):
                t = d.choice(sorted(self.r.structs))
                self.r.sarrays += [("s_in", t, False), ("s_out", t, True)]
            for _ in range(d.integer(0, 2)):
                self.devfn()
            for _ in range(d.integer(1, 3)):
                t = d.choice(sorted(self.r.structs))
                var = Var(self.g.fresh("p"), t)
                body.append(Decl(var.name, t, self.struct_expr(t, 2)))
                self.slocals.append(var)
        if self.c.rng:
            for _ in range(d.integer(1, 2)):
                name = self.g.fresh("rng")
                body.append(self.seed(name))
                self.rngs.append(name)
            # Locals drawn up front, which later expressions read.
            for _ in range(d.integer(1, 2)):
                draw = self.draw(d.choice(self.rngs))
                var = Var(self.g.fresh("r"), draw.ty)
                body.append(Decl(var.name, var.ty, draw))
                self.g.locals.append(var)
        return body

    def table(self) -> None:
        d = self.d
        t = d.choice(TABLE_TYPES)
        dims = d.choice([1, 1, 1, 2, 3])
        shape = tuple(d.integer(1, 9 if dims == 1 else 4) for _ in range(dims))
        values = [self.constant(t) for _ in range(math.prod(shape))]
        spelling = d.choice(["list", "list", "numpy"])
        if spelling == "numpy":
            # The transpiler reads this table's shape from the literal, whose elements must
            # then be numbers the module's constants fold to (math.nan is not one).
            values = [v if math.isfinite(v) else 1.0 for v in values]
        name = f"T{len(self.r.tables) + 1}"
        self.r.tables[name] = Table(name, t, shape, values, spelling)

    def constant(self, t: str):
        d = self.d
        if d.chance(0.4):
            return d.choice([v for v in edge_values(t)
                             if t in FLOATS or INT_RANGE[t][0] <= v <= INT_RANGE[t][1]])
        if t in INTS:
            lo, hi = INT_RANGE[t]
            return d.integer(max(lo, -100), min(hi, 100)) if d.chance(0.7) else d.integer(lo, hi)
        return float(round(d.real() * 200 - 100, d.integer(0, 7)))

    def struct(self) -> None:
        d = self.d
        name = f"Rec{len(self.r.structs) + 1}"
        earlier = sorted(self.r.structs)
        fields = []
        for k in range(d.integer(1, 4)):
            r = d.integer(0, 9)
            if r < 6:
                ft = d.choice(TYPES)
            elif r < 7:
                ft = "bool"
            elif r < 8 or not earlier:
                ft = d.choice(sorted(VECTORS))
            else:
                ft = d.choice(earlier)
            fields.append((f"f{k}", ft))
        self.r.structs[name] = StructDef(name, fields)

    def seed(self, name: str) -> Seed:
        d = self.d
        seed = self.g.expr(d.choice(INTS), 1, self.g.locals) if d.chance(0.6) else \
            Lit(d.integer(0, 1 << 40))
        args = [seed]
        if d.chance(0.85):
            args.append(Var("i", "i64") if d.chance(0.7) else
                        self.g.expr(d.choice(INTS), 1, self.g.locals))
            if d.chance(0.5):
                args.append(Lit(d.choice([0, 1, 2, 7, (1 << 32) - 1, (1 << 32) + 3]))
                            if d.chance(0.6) else self.g.expr(d.choice(INTS), 1, self.g.locals))
        return Seed(name, args)

    # ---- struct values ----

    def struct_expr(self, t: str, depth: int) -> Expr:
        d = self.d
        options = ["new", "new"]
        if [v for v in self.slocals if v.ty == t]:
            options += ["var", "var"]
        if not self.in_devfn and any(s == t for _n, s, _w in self.r.sarrays):
            options.append("load")
        fns = [f for f in self.r.devfns if f.result == t]
        if fns and not self.in_devfn:
            options += ["call", "call"]
        kind = d.choice(options)
        if kind == "var":
            return d.choice([v for v in self.slocals if v.ty == t])
        if kind == "load":
            name = d.choice([n for n, s, _w in self.r.sarrays if s == t])
            return SLoad(name, 0, t)
        if kind == "call":
            return self.call(d.choice(fns), depth)
        fields = self.r.structs[t].fields
        if d.chance(0.15):
            return SNew([], False, t)
        if d.chance(0.5):
            chosen = fields[:d.integer(1, len(fields))]
            return SNew([(n, self.field_value(ft, depth - 1)) for n, ft in chosen], False, t)
        chosen = [f for f in fields if d.chance(0.6)] or [fields[-1]]
        args = [(n, self.field_value(ft, depth - 1)) for n, ft in chosen]
        # Keywords out of order only without calls: the checker refuses to reorder effects.
        if d.chance(0.5) and not any(isinstance(x, DevCall) for _n, v in args for x in walk(v)):
            args = args[::-1]
        return SNew(args, True, t)

    def field_value(self, ft: str, depth: int) -> Expr:
        """A value for a field of type ``ft`` (converted as an assignment would)."""
        if ft in self.r.structs:
            return self.struct_expr(ft, depth)
        if ft in VECTORS:
            return self.g.vector(ft, max(depth, 1))
        return self.g.value_for(ft, max(depth, 1))

    def call(self, fn: DevFn, depth: int) -> DevCall:
        args: list[Expr] = []
        for _name, pt in fn.params:
            if pt in self.r.structs:
                args.append(self.struct_expr(pt, depth - 1))
            else:
                e = self.g.expr(pt, max(depth - 1, 1), self.g.locals)
                args.append(e if e.ty == pt else Cast(pt, e, pt))
        return DevCall(fn.name, args, fn.result)

    def paths(self, t: str, base: Expr) -> list[tuple[Expr, str]]:
        """Every field (and vector component) of ``base``, a struct of type ``t``, as an
        expression, with its type."""
        out = []
        for name, ft in self.r.structs[t].fields:
            e = SField(base, name, ft)
            out.append((e, ft))
            if ft in self.r.structs:
                out += self.paths(ft, e)
            elif ft in VECTORS:
                elem, n = VECTORS[ft]
                out += [(Component(e, k, elem), elem) for k in range(n)]
        return out

    def bases(self) -> list[Expr]:
        out: list[Expr] = list(self.slocals)
        if not self.in_devfn:
            out += [SLoad(n, 0, s) for n, s, _w in self.r.sarrays]
        return out

    def field_read(self, t: str, depth: int) -> Expr | None:
        """A scalar ``t`` read from a struct's field (a bool field cast), or None."""
        d = self.d
        options = []
        for base in self.bases():
            for e, ft in self.paths(base.ty, base):
                if ft == t:
                    options.append(e)
                elif ft == "bool" and t in TYPES:
                    options.append(Cast(t, e, t))
        fns = [f for f in self.r.devfns if f.result == t or f.result in self.r.structs]
        if fns and not self.in_devfn and d.chance(0.4):
            fn = d.choice(fns)
            if fn.result == t:
                return self.call(fn, depth - 1)
            reads = [e for e, ft in self.paths(fn.result, self.call(fn, depth - 1)) if ft == t]
            if reads:
                return d.choice(reads)
        return d.choice(options) if options else None

    # ---- device functions ----

    def devfn(self) -> None:
        d, g = self.d, self.g
        t = d.choice(sorted(self.r.structs))
        st = d.choice(TYPES)
        p, x = g.fresh("p"), g.fresh("x")
        params = [(p, t), (x, st)]
        saved = (g.locals, g.types, g.use_specials, g.items, g.vlocals, g.clocals, self.slocals)
        g.locals, g.types, g.use_specials, g.items = [Var(x, st)], (), False, []
        g.vlocals, g.clocals, self.slocals = [], [], [Var(p, t)]
        self.in_devfn = True
        try:
            body: list[Stmt] = []
            if d.chance(0.6):
                result = t
                q = Var(g.fresh("q"), t)
                body.append(Decl(q.name, t, Var(p, t)))
                self.slocals.append(q)
                for _ in range(d.integer(1, 3)):
                    body.append(self.field_assign(q))
                ret: Expr = q
            else:
                result = d.choice(TYPES)
                ret = g.value_for(result, 3)
                if ret.ty != result:
                    ret = Cast(result, ret, result)
        finally:
            (g.locals, g.types, g.use_specials, g.items, g.vlocals, g.clocals,
             self.slocals) = saved
            self.in_devfn = False
        self.r.devfns.append(DevFn(g.fresh("dev"), params, result, body, ret))

    # ---- statements ----

    def statement_kinds(self, depth: int) -> list[str]:
        kinds = []
        if self.slocals:
            kinds += ["rec-field", "rec-field", "rec-sassign"]
        if any(w for _n, _s, w in self.r.sarrays):
            kinds += ["rec-sstore", "rec-sstore"]
        if self.r.tables and not self.g.straight and depth < 2:
            kinds.append("rec-table-loop")
        if self.rngs:
            kinds += ["rec-draw", "rec-draw", "rec-draw"]
            if not self.g.straight:
                kinds.append("rec-reseed")
        return kinds

    def statement(self, kind: str, depth: int) -> list[Stmt]:
        d, g = self.d, self.g
        if kind == "rec-field":
            return [self.field_assign(d.choice(self.slocals))]
        if kind == "rec-sassign":
            var = d.choice(self.slocals)
            return [g_assign(var.name, self.struct_expr(var.ty, g.c.max_depth - 1))]
        if kind == "rec-sstore":
            name, t, _w = d.choice([a for a in self.r.sarrays if a[2]])
            if d.chance(0.4):
                return [SStore(name, 0, t, self.struct_expr(t, g.c.max_depth - 1))]
            return [self.field_assign(SLoad(name, 0, t))]
        if kind == "rec-table-loop":
            return self.table_loop(depth)
        if kind == "rec-reseed":
            return [self.seed(d.choice(self.rngs))]
        return [self.draw_statement()]

    def field_assign(self, target: Expr) -> FieldAssign:
        """``target.path = value`` or ``target.path op= value`` into a scalar, vector or struct
        field, or a vector component."""
        d, g = self.d, self.g
        e, ft = d.choice(self.paths(target.ty, target))
        path: list = []
        node = e
        while node is not target:
            path.insert(0, node.index if isinstance(node, Component) else node.name)
            node = node.operand
        depth = g.c.max_depth - 1
        if ft in TYPES and d.chance(0.35):
            ops = ["+", "-", "*"] + (["&", "|", "^"] if ft in INTS else [])
            op = d.choice(ops)
            candidates = [t for t in TYPES if assignable(promote(ft, t), ft)]
            if op in ("&", "|", "^"):
                candidates = [t for t in candidates if promote(ft, t) in INTS]
            t = d.choice(candidates)
            return FieldAssign(target, path, op, g.expr(t, 2, g.locals), ft, promote(ft, t))
        return FieldAssign(target, path, None, self.field_value(ft, depth), ft)

    def table_loop(self, depth: int) -> list[Stmt]:
        """``for j in range(len(T)):`` reading ``T[j]`` (its check proven away) in its body."""
        d, g = self.d, self.g
        name = d.choice([n for n, tb in self.r.tables.items() if len(tb.shape) == 1])  \
            if any(len(tb.shape) == 1 for tb in self.r.tables.values()) else None
        if name is None:  # no 1-D table: a read stored instead (a block is never empty)
            t = d.choice(g.types)
            return [Store(g.output(t), d.integer(0, g.n_out - 1), t, self.table_read(t, 2))]
        tb = self.r.tables[name]
        guard = g.fresh("g")
        g.guards.append(guard)
        var = Var(g.fresh("j"), "i64")
        g.locals.append(var)
        targets = [v for v in g.locals if v.name != "i" and not v.name.startswith("j")]
        body = g.loop_body(depth, guard, [])
        if targets:
            target = d.choice(targets)
            value: Expr = TLoad(name, [var], tb.ty)
            if not assignable(tb.ty, target.ty):
                value = Cast(target.ty, value, target.ty)
            body.insert(2, g_aug(target, value))
        g.locals.remove(var)
        return [Assign(guard, Cast("i32", Lit(0), "i32")),
                For(var.name, "i64", [TLen(name)], body, guard)]

    def draw(self, rng: str) -> Draw:
        d, g = self.d, self.g
        method = d.choice(["random_u32", "uniform", "uniform", "normal", "randint", "randint"])
        if method == "random_u32":
            return Draw(rng, method, [], "u32")
        if method in ("uniform", "normal"):
            wide = d.chance(0.4)
            return Draw(rng, method, [], "f64" if wide else "f32", wide)
        if d.chance(0.5):
            n = d.choice([1, 2, 3, 6, 7, 10, 100, 1000, 65536, (1 << 31) - 1, 1 << 31,
                          (1 << 31) + 1, 3000000000, RANDINT_MAX])
            return Draw(rng, method, [Lit(n)], "i32" if n < 1 << 31 else "i64")
        t = d.choice(INTS)
        x = g.expr(t, 1, g.locals)
        # In 1 <= n <= 2**32 - 1 by construction (any other is a KernelAssertionError).
        if t == "u32":
            bound: Expr = Bin("|", x, Lit(1), t, t)
        else:
            mask = 0x7FFFFFFF if t == "i32" else RANDINT_MAX
            bound = Bin("|", Bin("&", x, Lit(mask), t, t), Lit(1), t, t)
        return Draw(rng, method, [bound], t)

    def draw_statement(self) -> Stmt:
        """One draw per statement: into a local (alone, or one operand of ``+ - *``) or an
        output."""
        d, g = self.d, self.g
        draw = self.draw(d.choice(self.rngs))
        value: Expr = draw
        if d.chance(0.3):
            other = g.expr(draw.ty, 1, g.locals)
            op = d.choice(["+", "-", "*"])
            value = Bin(op, draw, other, draw.ty, draw.ty) if d.chance(0.5) else \
                Bin(op, other, draw, draw.ty, draw.ty)
        targets = [v for v in g.locals if v.name != "i" and not v.name.startswith("j")
                   and assignable(draw.ty, v.ty)]
        if targets and d.chance(0.5):
            return g_assign(d.choice(targets).name, value)
        t = d.choice(g.types)
        if not assignable(draw.ty, t):
            value = Cast(t, value, t)
        return Store(g.output(t), d.integer(0, g.n_out - 1), t, value)

    # ---- scalar expressions ----

    def expr_kinds(self, t: str) -> list[str]:
        kinds = []
        if (self.slocals or (self.r.sarrays and not self.in_devfn)) and t in TYPES:
            kinds += ["rec-field", "rec-field"]
        if self.r.tables:
            kinds += ["rec-table", "rec-table"]
        return kinds

    def expr(self, kind: str, t: str, depth: int) -> Expr:
        if kind == "rec-field":
            e = self.field_read(t, depth)
            if e is not None:
                return e
        if not self.r.tables:
            return self.g.leaf(t, self.g.locals)
        return self.table_read(t, depth)

    def table_read(self, t: str, depth: int) -> Expr:
        d = self.d
        name = d.choice(sorted(self.r.tables))
        tb = self.r.tables[name]
        e: Expr = TLoad(name, [self.index(tb, axis, depth) for axis in range(len(tb.shape))],
                        tb.ty)
        return e if tb.ty == t else Cast(t, e, t)

    def index(self, tb: Table, axis: int, depth: int) -> Expr:
        """An index of ``tb``'s axis that is in range for every value of its operands."""
        d, g = self.d, self.g
        n = tb.shape[axis]
        t = d.choice(INTS)
        loops = [v for v in g.locals if v.name.startswith("j")]
        x = d.choice(loops) if loops and d.chance(0.3) else g.expr(t, max(depth - 2, 0),
                                                                     g.locals)
        form = d.integer(0, 3)
        if form == 0:
            return Bin("%", x, Lit(n), x.ty, x.ty)
        if form == 1 and axis == 0:
            wide = x if x.ty == "i64" else Cast("i64", x, "i64")
            return Bin("%", wide, TLen(tb.name), "i64", "i64")
        if x.ty == "u32":
            return MinMax("min", [x, Lit(n - 1)], "u32")
        return MinMax("min", [MinMax("max", [x, Lit(0)], x.ty), Lit(n - 1)], x.ty)


def g_assign(name: str, value: Expr) -> Stmt:
    return Assign(name, value)


def g_aug(target: Var, value: Expr) -> Stmt:
    """``target += value``, the value cast where the sum would not convert back."""
    ty = promote(target.ty, value.ty)
    if not assignable(ty, target.ty):
        value = Cast(target.ty, value, target.ty)
        ty = target.ty
    return AugAssign(target.name, "+", value, ty, target.ty)


# ---- printing ----------------------------------------------------------------------------------


def print_expr(printer, e: Expr) -> str:
    p = printer.expr
    if isinstance(e, SNew):
        if e.keywords:
            return f"{e.ty}({', '.join(f'{n}={p(v)}' for n, v in e.args)})"
        return f"{e.ty}({', '.join(p(v) for _n, v in e.args)})"
    if isinstance(e, SField):
        return f"{p(e.operand)}.{e.name}"
    if isinstance(e, SLoad):
        return f"{e.array}[i]"
    if isinstance(e, DevCall):
        return f"{e.fn}({', '.join(p(a) for a in e.args)})"
    if isinstance(e, TLoad):
        return f"{e.table}[{', '.join(p(x) for x in e.indices)}]"
    if isinstance(e, TLen):
        return f"len({e.table})"
    if isinstance(e, Draw):
        args = [p(a) for a in e.args] + (["f64"] if e.wide else [])
        return f"{e.rng}.{e.method}({', '.join(args)})"
    raise TypeError(e)  # pragma: no cover


def print_stmt(printer, s: Stmt, pad: str) -> list[str]:
    if isinstance(s, SStore):
        return [f"{pad}{s.array}[i] = {printer.expr(s.value)}"]
    if isinstance(s, FieldAssign):
        target = printer.expr(s.target)
        for part in s.path:
            target += "." + ("xyzw"[part] if isinstance(part, int) else part)
        return [f"{pad}{target} {s.op or ''}= {printer.expr(s.value)}"]
    if isinstance(s, Seed):
        return [f"{pad}{s.name} = philox({', '.join(printer.expr(a) for a in s.args)})"]
    raise TypeError(s)  # pragma: no cover


IMPORTS = "from gpu_native import bool_, const_array, gpu_device, gpu_struct, philox\n"


def table_source(tb: Table) -> str:
    def nested(values: list, shape: tuple[int, ...]) -> str:
        if len(shape) == 1:
            return "[" + ", ".join(value_text(v) for v in values) + "]"
        step = len(values) // shape[0]
        return "[" + ", ".join(nested(values[k * step:(k + 1) * step], shape[1:])
                               for k in range(shape[0])) + "]"

    def value_text(v) -> str:
        return literal_text(v) if isinstance(v, float) else str(v)

    values = nested(tb.values, tb.shape)
    if tb.spelling == "numpy":
        return f"{tb.name} = const_array(np.array({values}, dtype={NP_NAME[tb.ty]}))"
    shape = str(tb.shape[0]) if len(tb.shape) == 1 else str(tb.shape)
    return f"{tb.name} = const_array({values}, {tb.ty}, {shape})"


def module_source(printer, r: Records) -> list[str]:
    """The tables, structs and device functions, before the kernel."""
    lines = [table_source(tb) for tb in r.tables.values()]
    if lines:
        lines.append("")
    for st in r.structs.values():
        lines += ["", "@gpu_struct", f"class {st.name}:"]
        lines += [f"    {n}: {'bool_' if ft == 'bool' else ft}" for n, ft in st.fields]
        lines.append("")
    for fn in r.devfns:
        params = ", ".join(f"{n}: {t}" for n, t in fn.params)
        lines += ["", "@gpu_device", f"def {fn.name}({params}) -> {fn.result}:"]
        lines += printer.statements(fn.body, 1)
        lines += [f"    return {printer.expr(fn.ret)}", ""]
    return lines + ["", ""]


# ---- arrays of structs on the host -------------------------------------------------------------


def random_struct_array(r: Records, t: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` elements of struct ``t``: every scalar half edge values, half random."""
    arr = np.zeros(n, r.dtype(t))
    for path, lt in r.leaves(t):
        values = []
        for _ in range(n):
            if lt == "bool":
                values.append(bool(rng.integers(0, 2)))
                continue
            edges = edge_values(lt)
            if rng.random() < 0.5:
                values.append(edges[int(rng.integers(0, len(edges)))])
            elif lt in INTS:
                values.append(int(rng.integers(-50, 51)) if lt != "u32" else
                              int(rng.integers(0, 1001)))
            else:
                values.append(float(rng.normal(0, 10)))
        leaf_set(arr, path, lt, values)
    return arr


def leaf_set(arr: np.ndarray, path: tuple, lt: str, values) -> None:
    view = arr
    for part in path:
        view = view[..., part] if isinstance(part, int) else view[part]
    with np.errstate(over="ignore"):
        if lt == "bool":
            view[...] = np.array(values, dtype=np.bool_)
        elif lt in INTS:
            view[...] = np.array([int(v) for v in values], dtype=NUMPY[lt])
        else:
            view[...] = np.array(values, dtype=np.float64).astype(NUMPY[lt])


def leaf_get(arr: np.ndarray, path: tuple) -> np.ndarray:
    view = arr
    for part in path:
        view = view[..., part] if isinstance(part, int) else view[part]
    return view


SENTINEL = {"f32": -7.25, "f64": -7.25, "i32": -12345, "i64": -12345, "u32": 12345, "bool": True}


def initial_struct_array(r: Records, t: str, n: int) -> np.ndarray:
    arr = np.zeros(n, r.dtype(t))
    for path, lt in r.leaves(t):
        leaf_set(arr, path, lt, [SENTINEL[lt]] * n)
    return arr


__all__ = ["DevCall", "Draw", "FieldAssign", "RecordGen", "Records", "SField", "SLoad", "SNew",
           "SStore", "Seed", "StructDef", "TLen", "TLoad", "Table", "module_source",
           "print_expr", "print_stmt"]
