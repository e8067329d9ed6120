"""The reference semantics of the records of :mod:`tools.fuzz.records`, from ``docs/language.md``.

A struct value is a dict from field name to its value (a :class:`~tools.fuzz.reference.V`, a
vector's list of them, or a nested dict), never changed in place: a field write makes a new dict,
so a copy (``q = p``, an argument) is a value, as the docs say.  A table read is the table's
element (the values as ``const_array`` stores them: NumPy's conversion of the constants to the
element type).  A Philox generator is ``(key, subsequence, counter)``; its draws are computed
here from the published Philox4x32-10 definition (Salmon et al., SC'11; checked against
Random123's known-answer vectors in ``tests/fuzz/test_fuzz_records.py``) and the formulas of
docs/language.md, "Random numbers", in plain Python integers: nothing is shared with
``gpu_native.simulator.philox``.  ``random_u32``, ``uniform`` and ``randint`` are exact;
``normal`` is Box-Muller with this machine's ``log``, ``sin`` and ``cos``, so it carries an
error bound that covers the docs' "within an ulp" logarithm and "about 1e-15" cosine of the
backends (an ``f32`` normal whose interval rounds to one float is exact).
"""

from __future__ import annotations

import math

import numpy as np

from .generator import FLOATS, INTS, NUMPY, VECTORS, Var
from .records import (
    DevCall,
    Draw,
    FieldAssign,
    Records,
    Seed,
    SField,
    SLoad,
    SNew,
    SStore,
    TLen,
    TLoad,
)

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1
PHILOX_M = (0xD2511F53, 0xCD9E8D57)  # the round multipliers
PHILOX_W = (0x9E3779B9, 0xBB67AE85)  # the key's Weyl increments


def philox4x32_10(counter: tuple[int, int, int, int], key: tuple[int, int]):
    """Philox4x32 with ten rounds: each round multiplies words 0 and 2 by the constants,
    ``(hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)``, and the key is bumped between rounds."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(10):
        p0, p1 = PHILOX_M[0] * c0, PHILOX_M[1] * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32
        k0, k1 = (k0 + PHILOX_W[0]) & MASK32, (k1 + PHILOX_W[1]) & MASK32
    return c0, c1, c2, c3


def block(key: int, sub: int, counter: int):
    """The block of draw ``counter``: the 128-bit counter ``(counter, subsequence)``, low words
    first, under the 64-bit key."""
    return philox4x32_10((counter & MASK32, counter >> 32, sub & MASK32, sub >> 32),
                         (key & MASK32, key >> 32))


def cos_two_pi(u: float) -> float:
    """``cos(2 pi u)``, the quarter turn taken exactly from ``u`` (so that the angle given to
    ``cos``/``sin`` is at most pi/2, where this machine's libm is accurate)."""
    t4 = 4.0 * u
    q = math.floor(t4)
    a = (t4 - q) * (math.pi / 2)
    return (math.cos(a), -math.sin(a), -math.cos(a), math.sin(a))[int(q) % 4]


class RecordsLane:
    """Mixin of :class:`~tools.fuzz.reference.Lane`: the records' expressions and statements."""

    # ---- structs ----

    def zero(self, t: str):
        r = self.k.records
        if t in r.structs:
            return {n: self.zero(ft) for n, ft in r.structs[t].fields}
        if t in VECTORS:
            elem, n = VECTORS[t]
            return [self.zero(elem) for _ in range(n)]
        if t == "bool":
            return R.V(False)
        return R.V(0 if t in INTS else NUMPY[t](0))

    def field_operand(self, e, ft: str):
        """A value for a field of type ``ft``: converted as an assignment converts."""
        r = self.k.records
        if ft in r.structs or ft in VECTORS:
            return self.eval(e)
        return self.operand(e, ft)

    def e_SNew(self, e: SNew):
        fields = dict(self.k.records.structs[e.ty].fields)
        value = self.zero(e.ty)
        for name, arg in e.args:
            value[name] = self.field_operand(arg, fields[name])
        return value

    def e_SField(self, e: SField):
        return self.eval(e.operand)[e.name]

    def e_SLoad(self, e: SLoad):
        writable = any(n == e.array and w for n, _t, w in self.k.records.sarrays)
        if writable and (e.array, 0) in self.stores:
            return self.stores[(e.array, 0)]
        arr = self.initial[e.array] if writable else self.inputs[e.array]
        return struct_value(self.k.records, e.ty, arr[self.uid])

    def s_SStore(self, s: SStore) -> None:
        value = self.eval(s.value)
        self.settle()
        self.stores[(s.array, 0)] = value

    def s_FieldAssign(self, s: FieldAssign) -> None:
        if s.op is None:
            value = self.field_operand(s.value, s.ty)
        else:
            current = Var("__field", s.ty)
            self.env["__field"] = self.get_path(self.eval(s.target), s.path)
            bin_ = R.Bin(s.op, current, s.value, s.opty, s.opty)
            value = self.convert(self.eval(bin_), s.opty, s.ty)
            del self.env["__field"]
        base = self.eval(s.target)
        self.settle()
        new = self.set_path(base, s.path, value)
        if isinstance(s.target, SLoad):
            self.stores[(s.target.array, 0)] = new
        else:
            self.env[s.target.name] = new

    @staticmethod
    def get_path(value, path):
        for part in path:
            value = value[part]
        return value

    def set_path(self, value, path, new):
        """A copy of ``value`` with the part at ``path`` replaced."""
        if not path:
            return new
        copy = list(value) if isinstance(value, list) else dict(value)
        copy[path[0]] = self.set_path(value[path[0]], path[1:], new)
        return copy

    def e_DevCall(self, e: DevCall):
        fn = next(f for f in self.k.records.devfns if f.name == e.fn)
        args = [self.field_operand(a, t) for a, (_n, t) in zip(e.args, fn.params)]
        saved = self.env
        self.env = {name: value for (name, _t), value in zip(fn.params, args)}
        try:
            self.run(fn.body)
            result = self.field_operand(fn.ret, fn.result)
        finally:
            self.env = saved
        return result

    # ---- tables ----

    def e_TLoad(self, e: TLoad) -> R.V:
        tb = self.k.records.tables[e.table]
        flat = 0
        for x, n in zip(e.indices, tb.shape):
            idx = self.operand(x, x.ty)
            if not idx.known:
                raise R.Poison("a table index is unknown")
            if not 0 <= idx.v < n:  # the generator promised an index in range
                raise AssertionError(f"generator bug: {e.table} index {idx.v} of {n}")
            flat = flat * n + idx.v
        value = np.array(tb.values[flat]).astype(NUMPY[tb.ty]) if tb.ty in INTS else \
            NUMPY[tb.ty](tb.values[flat])
        return R.V(int(value) if tb.ty in INTS else value)

    def e_TLen(self, e: TLen) -> R.V:
        return R.V(self.k.records.tables[e.table].shape[0])

    # ---- random numbers ----

    def s_Seed(self, s: Seed) -> None:
        values = []
        for a in s.args:
            v = self.operand(a, "i64" if isinstance(a, R.Lit) else a.ty)
            if not v.known:
                raise R.Poison("a generator's argument is unknown")
            values.append(v.v & MASK64)  # any integer converts to u64, wrapping
        self.settle()
        values += [0] * (3 - len(values))
        self.env[s.name] = tuple(values)

    def e_Draw(self, e: Draw) -> R.V:
        key, sub, ctr = self.env[e.rng]
        x0, x1, x2, x3 = block(key, sub, ctr)
        blocks = 1
        if e.method == "random_u32":
            value = R.V(x0)
        elif e.method == "uniform" and not e.wide:
            value = R.V(np.float32((x0 >> 8) * 2.0 ** -24))
        elif e.method == "uniform":
            value = R.V(np.float64(((x0 | x1 << 32) >> 11) * 2.0 ** -53))
        elif e.method == "normal":
            # u1 in (0, 1]: the 53-bit integer plus one; u2 in [0, 1).
            u1 = (((x0 | x1 << 32) >> 11) + 1) * 2.0 ** -53
            u2 = ((x2 | x3 << 32) >> 11) * 2.0 ** -53
            r = math.sqrt(-2.0 * math.log(u1))
            z = r * cos_two_pi(u2)
            bound = 4e-15 * max(r, 1.0) + 8 * R.ulp(z, "f64")
            if e.wide:
                value = R.V(np.float64(z), bound)
            else:
                lo, hi = np.float32(z - bound), np.float32(z + bound)
                value = R.V(np.float32(z), 0.0 if lo == hi else bound + R.ulp(z, "f32"))
        else:
            n = self.operand(e.args[0], e.ty if not isinstance(e.args[0], R.Lit) else "i64")
            if not n.known:
                raise R.Poison("a randint bound is unknown")
            assert 1 <= n.v <= MASK32, f"generator bug: randint({n.v})"
            threshold = (1 << 32) % n.v
            words = [x0, x1, x2, x3]
            while True:
                taken = next(((w * n.v) >> 32 for w in words if (w * n.v) & MASK32 >= threshold),
                             None)
                if taken is not None:
                    break
                words = list(block(key, sub, (ctr + blocks) & MASK64))
                blocks += 1
            value = R.V(taken)
        self.env[e.rng] = (key, sub, (ctr + blocks) & MASK64)
        return value


def struct_value(r: Records, t: str, element) -> dict:
    """A NumPy structured element as a reference value."""
    out = {}
    for name, ft in r.structs[t].fields:
        x = element[name]
        if ft in r.structs:
            out[name] = struct_value(r, ft, x)
        elif ft in VECTORS:
            elem = VECTORS[ft][0]
            out[name] = [R.Lane.element(c, elem) for c in x]
        elif ft == "bool":
            out[name] = R.V(bool(x))
        else:
            out[name] = R.Lane.element(x, ft)
    return out


def compare_structs(kernel, expected, name: str, t: str, have: np.ndarray, verdict,
                    label: str) -> None:
    """Compare an output array of structs field by field, as scalars are compared."""
    r = kernel.records
    want = expected.outputs[name]
    for uid in range(len(want)):
        w = want[uid]
        for path, lt in r.leaves(t):
            if expected.poisoned[uid] or w is None:
                verdict.skipped += 1
                continue
            wv = RecordsLane.get_path(w, path)
            if wv.e == R.INF:
                verdict.skipped += 1
                continue
            g = have[uid]
            for part in path:
                g = g[part]
            if lt == "bool":
                ok = bool(g) == bool(wv.v)
                verdict.exact += 1
            elif lt in INTS:
                ok = int(g) == wv.v
                verdict.exact += 1
            else:
                ok = R._same_float(g, wv)
                if wv.known:
                    verdict.exact += 1
                else:
                    verdict.tolerant += 1
            if not ok:
                shown = f"{float(wv.v)!r} ± {wv.e:g}" if lt in FLOATS and not wv.known \
                    else repr(wv.v)
                where = "".join(f".{'xyzw'[p]}" if isinstance(p, int) else f".{p}" for p in path)
                verdict.mismatches.append(f"{label}: {name}[{uid}]{where} is {g!r}, the "
                                          f"reference says {shown} ({lt}, uid {uid})")


def collect_types(r: Records, types: dict[str, str], collect) -> None:
    """The device functions' parameters and locals (their names are unique in the kernel)."""
    for fn in r.devfns:
        for name, t in fn.params:
            types[name] = t
        collect(fn.body, types)


# Last: reference.py imports this module for RecordsLane, so either may be imported first.
from . import reference as R  # noqa: E402

__all__ = ["RecordsLane", "block", "collect_types", "compare_structs", "philox4x32_10",
           "struct_value"]
