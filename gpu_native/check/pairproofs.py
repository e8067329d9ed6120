"""The unique-write proofs that set a store against the other stores of its array: each pair
proven apart from their affine forms (:mod:`.ownership`) or by the order the conditions around
them put on their indices (:mod:`.apart`: an in-place reverse, a transpose), where need be
under an assumption on a scalar parameter that the launcher checks, and every index of the
forms checked not to wrap (the forms are exact integers).

:class:`PairProofs` is a base of :class:`.unique.UniqueWrites`, which turns to it where the
classic rule does not prove a store: an array written through several indices, a store that a
condition leaves to fewer threads than its index tells apart, a write of several elements per
thread.
"""

from __future__ import annotations

from .. import ir
from ..analysis.ranges import is_widening
from ..errors import SourceSpan, TranspileError
from ..launchexpr import Compare, Const, ParamValue
from ..nodes import node
from ..spec import ParamCheck
from .apart import bounds_apart
from .classify import IndexClasses, required_coords
from .facts import ConstKey, Equal, SpecialKey, VarKey, one_thread
from .monotone import prove_padded
from .ownership import (
    Assumption,
    StoreForm,
    assume,
    candidate_bounds,
    guard_assumptions,
    param_atoms,
)
from .phases import (
    Phases,
    Position,
    may_be_ordered_later,
    open_rounds,
    ordered,
    round_digits,
)
from .poly import is_uniform, poly_text, substitute, unassume
from .radix import PairProof
from .refusals import UNIQUE_HINT, PairedRefusal, hint_for, wrap_hint, wrap_message
from .residues import residues_apart
from .storepairs import only_its_thread, spans_apart
from .witness import collision
from .wrapping import (
    extent_difference,
    fits_check,
    fits_limit,
    folded_terms,
    index_is_exact,
    largest_difference,
    param_difference,
    poly_tree,
)
from .xorpairs import xor_apart

__all__ = ["CheckedStore", "DeferredPair", "PairProofs"]


@node(eq=False)
class CallAccess:
    """A device function call's stores into (``writes``) or reads of an array ``var`` the
    caller passes it: ``keys`` is the index the call's arguments give the element
    (:func:`~.calls.param_accesses`; ``None``: any element), ``pins`` the pins that index is
    unique under, ``form`` its form where the call is (the conditions around it)."""

    var: ir.Var
    callee: str
    span: SourceSpan
    position: Position
    writes: bool
    keys: tuple | None
    pins: frozenset | None
    form: StoreForm | str = ""
    param: int = 0  # the callee's parameter the array is passed for


@node(frozen=False, eq=False)
class AtomicUpdate:
    """An atomic operation that changes an element of ``var`` (all but a load), here or in the
    device function ``callee`` (``"f()"``) called here: ``keys`` is the element's index
    (``None``: any element), ``pins`` the pins that index is unique under, ``form`` its form
    where the update is."""

    var: ir.Var
    keys: tuple | None
    span: SourceSpan
    position: Position
    callee: str
    pins: frozenset | None
    form: StoreForm | str


@node(frozen=False, eq=False)
class CheckedStore:
    """A checked store: its form, where it is (for the barrier phases), and whether a condition
    leaves it to fewer threads than its index tells apart (``narrowed``)."""

    form: StoreForm | str
    position: Position
    narrowed: bool
    span: SourceSpan
    #: The :class:`~.facts.PinnedBy` facts where it is: two stores that the same equalities
    #: leave to one thread are that thread's, whatever their indices (:func:`.facts.one_thread`).
    pins: frozenset = frozenset()
    #: The thread coordinates a condition pins where it is (``if u == 1:`` pins the grid's
    #: ``tid0`` and ``bid0``): a store its form's pins do not say all of is not one whose index
    #: tells those threads apart (:func:`.storepairs.only_its_thread` assumes that of it).
    pinned: frozenset = frozenset()
    #: The store's index keys and the pins they are unique under (``None``: a store of a span,
    #: box or tile), for :meth:`~.unique.UniqueWrites.check_atomic_stores`.
    keys: tuple | None = None
    index_pins: frozenset = frozenset()
    #: Under a condition a ticket's value pins (R7, the last ticket: every other block's
    #: updates of the ticket's counter came before).
    ticket: bool = False


@node(frozen=False, eq=False)
class DeferredPair:
    """A pair of stores into a shared array that a barrier may yet order (see
    :func:`.phases.may_be_ordered_later`): proven once the body is known, if it is not.
    ``classic`` is the error of an array written through several indices; None for a store a
    condition narrows (:meth:`PairProofs.check_narrowed`)."""

    base: ir.ArrayRef
    new: CheckedStore
    earlier: CheckedStore
    classic: TranspileError | None


class PairProofs(IndexClasses):
    """A store proven against the other stores of its array, from their forms: the part of
    :class:`.unique.UniqueWrites` that the classic rule leaves to the ownership proof.

    It adds nothing at run time: the attributes below (and :class:`.classify.IndexClasses`')
    are set by :meth:`UniqueWrites.__init__ <.unique.UniqueWrites>` (documented there).
    """

    param_names: tuple[str, ...]
    assumptions: dict[str, Assumption]
    store_forms: dict[int, list[StoreForm | str]]
    store_positions: dict[int, list[Position]]
    store_owners: dict[int, list[tuple | None]]
    checked_stores: dict[int, list[CheckedStore]]
    phases: Phases
    deferred_pairs: list[DeferredPair]

    # ---- assumptions on scalar parameters --------------------------------------------------

    def param_index(self, name: str) -> int | None:
        return self.param_names.index(name) if name in self.param_names else None

    def prove(self, a: StoreForm, b: StoreForm, required: frozenset[str], array: str,
              same: frozenset = frozenset(), assume_more: bool = True) -> PairProof:
        """Two stores whose index ranges never meet (:func:`spans_apart`); else
        :func:`.monotone.prove_padded` (the ownership proof), then two stores the conditions
        around them keep apart (:func:`.apart.bounds_apart`), and where both fail in a kernel
        whose indices hold an unchanged integer parameter, again under an assumption the
        launcher can check (``stride >= block_dim.x``; see :mod:`.ownership`), which is then
        recorded (unless ``assume_more`` is False: then only those recorded already)."""
        if a is not b:
            apart = spans_apart(a, b)
            if apart is not None:
                return PairProof(True, apart, shown=True)
        raw = (a, b)
        outcome = prove_padded(a, b, required, same)
        implied: list[Assumption] = []
        if not outcome.ok:
            # What the conditions around the stores show (``if col < n:`` makes n >= 1 there).
            implied = guard_assumptions((a, b))
            if implied:
                for assumption in implied:
                    a, b = assume(a, assumption), assume(b, assumption)
                outcome = prove_padded(a, b, required, same)
        if not outcome.ok and raw[0] is not raw[1]:
            # Conditions that order the two stores' indices (an in-place reverse, a transpose),
            # that pair them by an XOR (a bitonic sort's compare-and-swap), or that put them in
            # different residue classes (a pairwise swap under `if i % 2 == 0:`), read from the
            # forms as made (an assumption's forms drop them).
            apart = bounds_apart(*raw) or xor_apart(*raw, same) or residues_apart(*raw)
            if apart is not None:
                for check in raw[0].exact_checks + raw[1].exact_checks:
                    self.ctx.kernel.add_launch_check(check)
                return PairProof(True, apart, shown=True)
        if outcome.ok or not self.is_kernel:
            return outcome
        known = list(self.assumptions.values())
        for assumption in known:
            a, b = assume(a, assumption), assume(b, assumption)
        if known:
            outcome = prove_padded(a, b, required, same)
            if outcome.ok:
                return self._assumed(outcome, known)
        if not assume_more:
            return outcome
        for var in param_atoms((a, b)):
            if self.param_index(var.var.name) is None:
                continue
            # The bounds of the conditions around the stores first (``if i < n:`` beside
            # ``out[b * stride + i]`` needs ``stride >= n``), then the launch's extents.
            candidates = self._condition_bounds(raw, var, implied)
            candidates += [(bound, poly_tree(bound)) for bound in candidate_bounds(self.ctx.ndim)]
            for bound, tree in candidates:
                if tree is None:
                    continue
                assumption = Assumption(var, bound)
                tried = prove_padded(assume(a, assumption), assume(b, assumption), required,
                                     same)
                if not tried.ok:
                    continue
                self.assumptions[var.var.name] = assumption
                index = self.param_index(var.var.name)
                assert index is not None
                self.ctx.kernel.add_launch_check(ParamCheck(
                    Compare(">=", ParamValue(index), tree), index, array, a.line))
                return self._assumed(tried, [*known, assumption])
        return outcome

    def _condition_bounds(self, raw: tuple[StoreForm, StoreForm], var: VarKey,
                          implied: list[Assumption]) -> list[tuple]:
        """``(bound, tree)`` for each uniform ``U`` of a condition ``P < U`` around the stores
        (:attr:`.ownership.StoreForm.bounded`) that does not hold ``var`` and that the launcher
        can compute (parameters, extents): ``bound`` written as the proof's forms have it (with
        the ``implied`` assumptions), ``tree`` its launch-check tree."""
        from .splits import deep
        out: list[tuple] = []
        seen: set = set()  # the bounds as written (out's are rewritten by `implied`)
        for form in raw:
            for _, u in form.bounded:
                if not is_uniform(u) or any(var in m for m, _ in u.terms) or u in seen:
                    continue
                tree = poly_tree(u, self.param_index)
                if tree is None:
                    continue
                seen.add(u)
                bound = u
                for assumption in implied:
                    bound = substitute(bound, deep(assumption.replace))
                out.append((bound, tree))
        return out

    @staticmethod
    def _assumed(outcome: PairProof, used: list[Assumption]) -> PairProof:
        conditions = " and ".join(f"{u.var.var.name} >= {poly_text(unassume(u.bound))}"
                                  for u in used)
        return PairProof(True, f"{outcome.text}, when {conditions} (the launcher checks it)")

    # ---- a store against the others of its array -------------------------------------------

    def check_narrowed(self, base: ir.ArrayRef, span: SourceSpan, new: CheckedStore) -> None:
        """Prove a store against the array's earlier stores where either is narrowed to fewer
        threads by a condition (``if tid == 1: s[0] = v`` beside ``s[tid] = u``: threads 0
        and 1 both write ``s[0]``); the pair of a shared array that a barrier orders is left
        out, and one that a barrier later in a loop may order, or keep in one round of it, is
        proven at the end (:meth:`check_deferred_pairs`)."""
        shared = base.ty.space != "global"
        stores = self.checked_stores.setdefault(id(base.var), [])
        for earlier in stores:
            if not (new.narrowed or earlier.narrowed):
                continue
            if shared and ordered(earlier.position, new.position):
                continue
            if shared and may_be_ordered_later(earlier.position, new.position, self.phases):
                self.deferred_pairs.append(DeferredPair(base, new, earlier, None))
                continue
            error = self._narrowed_error(base, new, earlier)
            rounds = self._rounds(base, earlier.position, new.position)
            if error is not None and rounds and \
                    self._narrowed_error(base, new, earlier, rounds) is None:
                self.deferred_pairs.append(DeferredPair(base, new, earlier, None))
                continue
            if error is not None:
                raise error
        stores.append(new)

    def one_block_axes(self) -> frozenset[str]:
        """The block coordinates a launch assert leaves one value (``assert grid_dim.x ==
        1``: ``bid0``): no condition need pin them to leave one thread."""
        return frozenset(
            f"bid{axis}" for axis in range(3)
            if {Equal(SpecialKey("grid_dim", axis), ConstKey(1)),
                Equal(ConstKey(1), SpecialKey("grid_dim", axis))} & self.bounds.facts)

    def _rounds(self, base: ir.ArrayRef, a: Position, b: Position) -> frozenset:
        """The counters a pair of a kernel's shared-array stores at ``a`` and ``b`` may share
        once the walk has left the loops that hold both (their barriers that part the rounds
        may yet come: :func:`.phases.round_digits`), at most: the pair is proven with them at
        the end where it is only so proven now (and refused now where not even so)."""
        if not self.is_kernel or base.ty.space == "global":
            return frozenset()
        return frozenset(open_rounds(a, b, self.phases))

    def _narrowed_error(self, base: ir.ArrayRef, new: CheckedStore, earlier: CheckedStore,
                        same: frozenset = frozenset()) -> TranspileError | None:
        """:meth:`check_narrowed` of one pair: None where proven apart (``same``: the loop
        counters the two threads share), else the refusal."""
        space = "global" if base.ty.space == "global" else "shared"
        required = required_coords(self.ctx.ndim, space)
        a, b, span = new.form, earlier.form, new.span
        if one_thread(new.pins, earlier.pins, required - self.one_block_axes()):
            # One thread makes both stores, in its own order (`if uid == 0:` around both).
            return None
        if isinstance(a, str) or isinstance(b, str):
            separate = "separate them with sync_threads()" if space == "shared" else \
                "index them apart"
            return TranspileError(
                f"store into '{base.var.name}' cannot be shown apart from the store at line "
                f"{earlier.span.line}: {a if isinstance(a, str) else b}", span,
                f"leave both stores to one thread (`if tid == 0:` around both), {separate}, "
                "or use `with unsafe():`")
        reason = self.narrowed_reason(base, new, earlier, same)
        if reason is not None:
            return TranspileError(
                f"store into '{base.var.name}' may meet the store at line {b.line} in "
                f"another thread: {reason}", span,
                "a store that a condition leaves to some threads (`if tid == 0:`) must "
                "write elements no other thread writes in the same phase; separate them "
                "with sync_threads() (shared memory), index them apart, or use "
                "`with unsafe():`")
        return None

    def narrowed_reason(self, base: ir.ArrayRef, new: CheckedStore, earlier: CheckedStore,
                        same: frozenset = frozenset(), assume_more: bool = True) -> str | None:
        """Why two accesses with forms, one of them narrowed by a condition, may meet in two
        threads (an example of two that do, where one is found, and the proof's failure);
        None where proven apart or left to one thread.  ``assume_more``: as for
        :meth:`prove`."""
        space = "global" if base.ty.space == "global" else "shared"
        required = required_coords(self.ctx.ndim, space)
        a, b = new.form, earlier.form
        assert isinstance(a, StoreForm) and isinstance(b, StoreForm)
        if one_thread(new.pins, earlier.pins, required - self.one_block_axes()):
            return None
        outcome = self.prove(a, b, required, base.var.name, same, assume_more)
        if outcome.ok or (_pins_said(earlier, b) and only_its_thread(a, b, required)) or (
                _pins_said(new, a) and only_its_thread(b, a, required)):
            return None
        example = collision(a, b, required, self.ctx.ndim)
        return f"{example}; {outcome.text}" if example else outcome.text

    def check_deferred_pairs(self) -> None:
        """Once the body is known: each pair of shared-array stores left for a barrier that
        might come later in its loop is ordered by one, or proven as it would have been, with
        the counters of the loops in one round of which both threads then are
        (:func:`.phases.round_digits`)."""
        for pair in self.deferred_pairs:
            if ordered(pair.earlier.position, pair.new.position):
                continue
            same = round_digits(pair.earlier.position, pair.new.position) \
                if self.is_kernel else frozenset()
            if pair.classic is None:
                error = self._narrowed_error(pair.base, pair.new, pair.earlier, same)
                if error is not None:
                    raise error
            else:
                assert isinstance(pair.new.form, StoreForm)
                assert isinstance(pair.earlier.form, StoreForm)
                self._prove_pair(pair.base, pair.new.form, pair.earlier.form, pair.new.span,
                                 pair.classic, "shared", same)

    def prove_array(self, base: ir.ArrayRef, span: SourceSpan, classic: TranspileError,
                    owner: tuple | None = None) -> str:
        """Prove every pair of the array's stores race-free from their forms (see
        :mod:`.ownership`); the rule for the newest store, or ``classic`` raised with the
        reason (and an example of two threads that meet, where one is found).
        ``owner``: where the classic rule showed the newest store's index unique, the
        elements a thread owns through it (:meth:`.unique.UniqueWrites.note_store`): its
        pairs with the stores of the same owner need no proof, nor, where it has no form,
        its pair with itself."""
        space = "global" if base.ty.space == "global" else "shared"
        forms = self.store_forms[id(base.var)]
        newest = forms[-1]
        at_all = self.store_positions[id(base.var)]
        if owner is not None:
            # Both stores' indices tell the threads apart, and a thread owns the same elements
            # through each: only a thread's own stores meet.
            picked = [i for i, o in enumerate(self.store_owners[id(base.var)])
                      if forms[i] is newest or o != owner]
            forms, at_all = [forms[i] for i in picked], [at_all[i] for i in picked]
        # Where each form's store is (only shared arrays' pairs are ordered by barriers).
        positions: list[Position | None] = [None] * len(forms)
        now: Position | None = None
        if space == "shared":
            # A pair of a shared array that a barrier orders cannot race (see :mod:`.phases`);
            # one that a barrier later in their loop may order is proven at the end if not.
            now = at_all[-1]
            kept: list[StoreForm | str] = []
            where: list[Position | None] = []
            for f, at in zip(forms, at_all):
                if f is not newest and ordered(at, now):
                    continue
                if (f is not newest and isinstance(f, StoreForm)
                        and isinstance(newest, StoreForm)
                        and may_be_ordered_later(at, now, self.phases)):
                    self.deferred_pairs.append(DeferredPair(
                        base, CheckedStore(newest, now, False, span),
                        CheckedStore(f, at, False, span), classic))
                    continue
                kept.append(f)
                where.append(at)
            forms, positions = kept, where
        if owner is not None and isinstance(newest, str) and len(forms) == 1 and \
                forms[0] is newest:
            return ""  # (the classic rule's, as for a store with no other)
        for earlier in forms:
            if isinstance(earlier, str):
                which = "its index" if earlier is newest else "another store's index"
                raise TranspileError(f"{classic.message}: {which} {earlier}", span,
                                     classic.hint or UNIQUE_HINT[space])
        assert isinstance(newest, StoreForm)
        required = required_coords(self.ctx.ndim, space)
        rule = ""
        others: list[int] = []  # the lines of the stores proven apart by their digits
        paired: dict[str, list[int]] = {}  # a rule about the pair: its text, and their lines
        for earlier, place in zip(forms, positions):
            assert isinstance(earlier, StoreForm)
            outcome = self.prove(newest, earlier, required, base.var.name)
            rounds = self._rounds(base, place, now) if place is not None and now is not None \
                and not outcome.ok else frozenset()
            if rounds and self.prove(newest, earlier, required, base.var.name, rounds).ok:
                # Proven at the end, in one round of the loops that hold both, where a
                # barrier that every thread reaches parts the rounds (.phases.round_digits).
                assert place is not None and now is not None
                self.deferred_pairs.append(DeferredPair(
                    base, CheckedStore(newest, now, False, span),
                    CheckedStore(earlier, place, False, span), classic))
                names = " and ".join(f"'{d.text()}'" for d in open_rounds(place, now,
                                                                           self.phases))
                why = (f"in one round of the loop over {names}, which a barrier that every "
                       "thread reaches parts from the next")
                if earlier is newest:
                    rule = f"the thread's index {why}"
                else:
                    paired.setdefault(why, []).append(earlier.line)
                continue
            if not outcome.ok:
                self._prove_pair(base, newest, earlier, span, classic, space)  # raises
            if earlier is newest:
                rule = outcome.text
            elif outcome.shown:
                paired.setdefault(outcome.text, []).append(earlier.line)
            else:
                others.append(earlier.line)
        text = f"unique: affine in {rule}" if rule else "unique: affine index"
        if others:
            text += f"; disjoint from the stores at line{'s' if len(others) > 1 else ''} " + \
                ", ".join(str(n) for n in sorted(set(others)))
        for why, lines in paired.items():
            apart = sorted(set(lines))
            text += f"; apart from the store{'s' if len(apart) > 1 else ''} at line" \
                f"{'s' if len(apart) > 1 else ''} {', '.join(map(str, apart))}: {why}"
        return text

    def _prove_pair(self, base: ir.ArrayRef, newest: StoreForm, earlier: StoreForm,
                    span: SourceSpan, classic: TranspileError, space: str,
                    same: frozenset = frozenset()) -> PairProof:
        """:meth:`prove_array` of one pair: its proof, or ``classic`` raised with the reason
        (and an example of two threads that meet, where one is found); ``same``: the loop
        counters the two threads share."""
        required = required_coords(self.ctx.ndim, space)
        outcome = self.prove(newest, earlier, required, base.var.name, same)
        if not outcome.ok:
            if isinstance(classic, PairedRefusal) and earlier is not newest:
                # Named by the store this pair fails against (and the example is about).
                partner = next((c.span for c in self.checked_stores.get(id(base.var), ())
                                if c.form is earlier), None)
                classic = classic.naming(partner) if partner is not None else classic
            example = collision(newest, earlier, required, self.ctx.ndim)
            other = "" if earlier is newest else (f" through this store and the one at line "
                                                  f"{earlier.line}")
            detail = f"{outcome.text}{other}"
            if example:
                detail = f"{example}; {detail}"
            hint = hint_for(newest, earlier, outcome, space)
            if not self.is_kernel and base.var.is_param and space == "global":
                # A shared_array passed in is checked as what the parameter says (docs: "Shared
                # arrays can be passed to device functions, but ..."): say so first.
                hint = (f"'{base.var.name}' is a parameter of this device function, and an "
                        "array passed to a device function is checked as a global array, "
                        "whatever the caller passes (a shared_array too), where a per-block "
                        "index does not tell the blocks apart: do this part in the kernel that "
                        "declares the shared array (its stores are checked per block there), "
                        "index a global array by the block too, or wrap the store in "
                        "`with unsafe():`")
            raise TranspileError(f"{classic.message}: {detail}", span, hint)
        return outcome

    def check_exact(self, base: ir.ArrayRef, indices, span: SourceSpan, form: StoreForm,
                    positions: tuple[int, ...] | None = None) -> None:
        """The forms are exact integers: an index that may wrap must still tell threads apart
        (see :mod:`.ownership`), or it is refused.  ``positions``: the indices to check (all by
        default)."""
        for position, idx in enumerate(indices):
            if positions is not None and position not in positions:
                continue
            launch_checks: list = []
            exact = index_is_exact(idx, self.bounds, self.defs.single_def,
                                   checks=launch_checks)
            if exact is not False:
                for check in launch_checks:  # what keeps a split's operand exact
                    self.ctx.kernel.add_launch_check(check)
            if exact is True:
                continue
            ty = idx.ty
            tree = None
            if exact == "ring" and isinstance(ty, ir.ScalarType):
                terms = folded_terms(form.dims[position], form.ranges, form.bounded)
                tree = largest_difference(terms)
                if tree is not None:
                    check = fits_check(tree, ty, span)
                    if check is not None:
                        self.ctx.kernel.add_launch_check(check)
                    continue
                if self.add_param_fits(base, terms, ty, form.line,
                                       guard_assumptions((form,))):
                    continue
                bound = extent_difference(terms)
                if bound is not None and bound <= fits_limit(ty):
                    continue  # the arrays' sizes keep it within the type
            raise self.wrap_refusal(base.var.name, idx)

    def add_param_fits(self, base: ir.ArrayRef, terms, ty: ir.ScalarType, line: int,
                       implied: list[Assumption]) -> bool:
        """An index whose stride is a parameter the proofs assumed positive (or that the
        conditions around the store show positive: ``implied``) may wrap: record the
        launcher's check that the largest difference of two threads' indices stays within
        ``ty`` (a :class:`~gpu_native.spec.ParamCheck`); False when there is none to make."""
        held = {v.var.name for v in param_atoms(
            [StoreForm(tuple(c for c, n in terms) + tuple(n for c, n in terms
                                                         if n is not None), {}, {}, line, "")])}
        # The stronger of what the conditions show and what an earlier store assumed (an
        # assumption `w >= 1` recorded first must not hide `w >= 2` from `x + 1 < w` here).
        assumed = dict(self.assumptions)
        for a in implied:
            if not isinstance(a.var, VarKey):
                continue
            known = assumed.get(a.var.var.name)
            if known is None or (not known.bound.terms and not a.bound.terms
                                 and a.bound.const > known.bound.const):
                assumed[a.var.var.name] = a
        params = [n for n in assumed if n in held]
        if not params:
            return False
        tree = param_difference(terms, assumed.values(), self.param_index)
        if tree is None:
            return False
        limit = fits_limit(ty)
        index = self.param_index(params[0])
        assert index is not None
        self.ctx.kernel.add_launch_check(ParamCheck(
            Compare("<=", tree, Const(limit)), index, base.var.name, line))
        return True

    def _narrow_type(self, e: ir.Expr, depth: int = 0):
        """The type the index's arithmetic may wrap in: below its first widening cast."""
        return self._narrow_part(e, depth)[0]

    def _narrow_part(self, e: ir.Expr, depth: int = 0) -> tuple[ir.Type, ir.Expr | None]:
        """:meth:`_narrow_type`, and the arithmetic below the widening cast that is computed
        in it (``2 * j`` of an ``i32`` parameter in an ``i64`` index), or None where the whole
        index is of that type."""
        if depth > 48:
            return e.ty, None
        if isinstance(e, ir.Local):
            d = self.defs.single_def(e.var)
            return (e.ty, None) if d is None else self._narrow_part(d, depth + 1)
        if isinstance(e, ir.Cast) and is_widening(e):
            # Arithmetic below the cast wraps in its narrow type; a widened atom
            # (`i64(block_idx.x)`) wraps nowhere, and what may wrap is in the wide type above.
            inner = e.value
            for _ in range(48):  # (a chain of copies, not a cycle)
                d = self.defs.single_def(inner.var) if isinstance(inner, ir.Local) else None
                if d is None:
                    break
                inner = d
            if isinstance(inner, (ir.BinOp, ir.UnaryOp)):
                return e.value.ty, inner
            return e.ty, None
        if isinstance(e, ir.BinOp):
            for side in (e.left, e.right):
                ty, part = self._narrow_part(side, depth + 1)
                if ty != e.ty:
                    return ty, part
        return e.ty, None

    def wrap_refusal(self, array: str, idx: ir.Expr) -> TranspileError:
        """The refusal of a store into ``array`` whose index ``idx`` may wrap, naming the
        narrow arithmetic in a wider index where that is what may wrap."""
        ty, part = self._narrow_part(idx)
        text = ""
        if part is not None and part.span.end_col:
            text = (part.span.source_line or "")[part.span.col:part.span.end_col].strip()
        if part is None or not text:
            return TranspileError(wrap_message(array, ty), idx.span, wrap_hint(ty))
        where = "" if part.span.line == idx.span.line else f" (line {part.span.line})"
        params = sorted({n.var.name for n in ir.walk(part)
                         if isinstance(n, ir.Local) and n.var.is_param and n.ty == ty})
        first = next((n for n in ir.walk(part) if isinstance(n, ir.Local)), None)
        operand = first.var.name if first is not None else "x"
        declare = (f", or declare {' and '.join(repr(p) for p in params)} {idx.ty}"
                   if params else "")
        return TranspileError(
            f"{wrap_message(array, ty)}: `{text}`{where} is computed in {ty} before the index "
            f"widens to {idx.ty}", idx.span,
            f"compute `{text}` in {idx.ty}: convert an operand first (`{idx.ty}({operand})`)"
            f"{declare}")


def _pins_said(store: CheckedStore, form: StoreForm) -> bool:
    """Does ``form`` hold every pin of the conditions around ``store``?  ``if u == 1:`` pins
    the grid's threads to one, which no digit of the form says: its index (``out[0]``) then
    tells no thread apart, and :func:`.storepairs.only_its_thread` may not take it for one that
    does."""
    return store.pinned <= {d.coord for d in form.pins if d.part == "all"}
