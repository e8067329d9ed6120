"""The unique-write proofs: a plain store into a global (or shared) array must be race-free.

An index expression is *unique* over a set of thread coordinates when two threads that differ in
one of those coordinates can never produce the same value.  Coordinates are ``tid0..2`` (thread
index in the block) and ``bid0..2`` (block index), and ``param:NAME`` for a device function's
``UniqueId`` parameter (its callers prove it).  A grid uid covers both of its axis; a block uid
covers ``tid``; ``block_idx`` covers ``bid``.  Adding a launch-uniform value, multiplying by a
nonzero constant, and widening casts keep uniqueness; ``u * K + j`` with ``0 <= j < K`` proven
does too, and so does ``u // K`` where a dominating condition pins ``u % K`` (``if tid % 32 ==
0: y[tid // 32]``).  ``q * K + j`` with ``j`` unique below ``K`` is unique whatever ``q`` is (a
row loaded from memory): a thread owns the residue class of its ``j`` (R12, an owner key of
:meth:`.classify.IndexClasses.owner_key`), and so does a permutation of a unique value's bits.  A store is accepted when its indices cover every coordinate of the grid (global
memory) or block (shared memory) that a dominating condition has not pinned (``if
thread_idx.x == 0:``), or inside ``with unsafe():``.  What an index is unique in is read in
:mod:`.classify`.

Where that rule does not apply (several stores per thread, warp-split indices, strides from the
launch), the store is proven from the affine forms of every store into the array
(:mod:`.ownership`, :mod:`.pairproofs`); a refusal then says which threads can meet, with an
example.

The value an *atomic ticket* returns (``count.atomic_ref(0).fetch_add(1)``: an add of a positive
constant at constant indices) is unique over the grid (the block, for a shared counter), provided
nothing else in the function changes the counter: :meth:`UniqueWrites.check_tickets` refuses the
store otherwise, once the whole body is known.

A store that a condition leaves to fewer threads than its index tells apart (``if tid == 1:
s[0] = v``, ``if tid == 0: out[block_idx.x] = v``) is proven against every other store of the
array, and every read of a global array it writes against it: the owner-index rules assume each
store's index tells all the threads apart.  Pairs in a shared array that a ``sync_threads()``
orders are left out (:mod:`.phases`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ir
from ..analysis.ranges import Affine, constant_value
from ..errors import SourceSpan, TranspileError
from .apart import bounds_apart
from .classify import adds_a_positive_constant, required_coords
from .facts import ConstKey, Pinned, PinnedBy, ResidueKey, SpecialKey, pinned, shows_within
from .lastblock import FlagRead, TicketPinned, TicketUse, check_ticket_pins, ticket_facts
from .monotone import prove_padded
from .ownership import Assumption, Forms, StoreForm
from .pairproofs import AtomicUpdate, CallAccess, CheckedStore, DeferredPair, PairProofs
from .parity import read_parities, store_parities
from .phases import Phases, Position, entry_value, ordered_either, round_digits
from .poly import Digit
from .radix import PairProof
from .refusals import (
    UNIQUE_HINT,
    PairedRefusal,
    index_text,
    read_hint,
    warp_rank_hint,
)
from .residues import residues_apart
from .strides import READ_RACE_HINT, ScaledStores, read_footprint, scale_vars
from .warptiles import in_device_function, warp_tile
from .wrapping import exact_value, index_is_exact, operands_keep_it
from .xorpairs import xor_apart, xor_hint

if TYPE_CHECKING:
    from .bounds import BoundsProofs
    from .context import Definitions, FunctionContext
    from .facts import Key


class UniqueWrites(PairProofs):
    """The unique-write proofs of one function, made as the type pass reaches each store.

    Reads: the type pass's :class:`~.context.Definitions` (single assignments, the variables of
    ``grid_stride`` loops, the ``UniqueId`` parameters), the facts that hold at each store
    (:attr:`.bounds.BoundsProofs.facts`: pinned coordinates; ``0 <= j < K`` for ``u * K + j``).
    Produces: how each store is race-free (``Store.unique``), and a TranspileError for a store,
    or a read of an array the function writes, that could race.

    Two bases hold parts of it, on the state below: :class:`.pairproofs.PairProofs` (a store
    proven against the other stores of its array, from their forms), itself on
    :class:`.classify.IndexClasses` (what an index is unique in, whether a value is
    launch-uniform).

    State:

    ``range_unique_vars``
        Variables of ``for j in range(tid, n, K)`` loops with ``0 <= tid < K``: threads visit
        disjoint values (by variable id, with the coordinates they are unique in).
    ``store_keys``
        Per written array (by variable id): the owner positions, the keys of its owner indices
        and the pins they are unique under (:attr:`.classify.Unique.pins`), and where it was
        first written; a second store must agree.
    ``mutable_loads``
        The reads of writable global arrays, checked against ``store_keys`` once the whole body
        is known (:meth:`check_reads`).
    ``unique_param_uses``
        Per ``UniqueId`` parameter name: the memory spaces it is used to write, which every
        caller's argument must then be unique in (:meth:`check_argument`); ``"array:s"`` for
        the array parameter ``s``, whose space each call's argument gives.
    ``checked_stores``, ``read_forms``
        Every checked store's form and barrier position, by array, and the forms of the reads
        of writable global arrays: a store narrowed by a condition is proven against the others
        (:meth:`check_narrowed`) and against those reads (:meth:`check_reads`).
    ``phases``, ``known``
        The barrier phases (:mod:`.phases`), and the constant values of variables where every
        path sees them (whether a loop surely runs once).
    ``deferred_pairs``
        Pairs of shared-array stores in a loop that a barrier later in it may order, proven at
        the end where none does (:meth:`check_deferred_pairs`).
    ``store_parity``
        Per array, the parities each store is confined to (:mod:`.parity`).
    """

    def __init__(self, ctx: FunctionContext, defs: Definitions, is_kernel: bool):
        self.ctx = ctx
        self.defs = defs
        self.is_kernel = is_kernel
        self.bounds: BoundsProofs  # wired by the type pass
        self.range_unique_vars: dict[int, frozenset] = {}
        self.store_keys: dict[int, tuple] = {}
        self.mutable_loads: list[tuple[ir.Var, tuple[Key, ...], SourceSpan, bool, frozenset,
                                       Position, frozenset, StoreForm | str]] = []
        self.unique_param_uses: dict[str, set[str]] = {}
        # Atomic updates (all but loads), by array: their index keys (``None``: any element, in
        # a device function called here), where they are and what makes them ("" or "f()");
        # and the plain reads of shared arrays (those of global ones are ``mutable_loads``).
        self.atomic_updates: dict[int, list[AtomicUpdate]] = {}
        self.shared_loads: list[tuple[ir.Var, tuple, SourceSpan, Position]] = []
        # The plain reads of shared arrays that :meth:`check_shared_reads` compares with the
        # stores (in every thread the conditions leave), and whether the body
        # has a sync_warp(), which the barrier phases do not model.
        self.shared_reads: list[tuple[ir.Var, tuple, SourceSpan, Position, frozenset,
                                      StoreForm | str]] = []
        # ... and those under conditions that pin the thread (`if tid == 0:`), each as the
        # store those conditions narrow would be.
        self.pinned_reads: list[tuple[ir.ArrayRef, CheckedStore]] = []
        self.warp_barriers = False
        # The spans (by id) of the shared reads that only the block's first warp runs (`if tid
        # < 32:`), for the hint of a refusal: sync_warp(), not sync_threads().
        self.warp_reads: set[int] = set()
        # The ownership proofs: every store's form, by array (a string where it has none), and
        # every full index key a thread writes (a read at one of them reads its own element).
        self.forms = Forms(defs, self.is_uniform_var, ctx.ndim, is_kernel)
        self.store_forms: dict[int, list[StoreForm | str]] = {}
        self.store_positions: dict[int, list[Position]] = {}  # where each form's store is
        # Each form's owner (see _note_store), where the classic rule proved the store alone.
        self.store_owners: dict[int, list[tuple | None]] = {}
        self.written_keys: dict[int, list[tuple]] = {}
        # The refusal of a store whose owner index may wrap, raised after note_store.
        self.unexact: TranspileError | None = None
        # The owner keys (:meth:`.classify.IndexClasses.owner_key`) of the store the classic
        # rule last accepted, for note_store; None where it refused it.
        self.owner_keys: tuple | None = None
        # The arrays device function calls store into or read (the callee proved its stores
        # among its own), by array, in call order (see :meth:`note_call_access`).
        self.call_accesses: dict[int, list[CallAccess]] = {}
        self.multi_owner: set[int] = set()
        # Every checked store, by array: a store that a condition narrows to fewer threads
        # (`if tid == 0:`) is proven against each of the others, since the owner-index rules
        # above assume every store's index tells all threads apart; shared-array pairs that a
        # barrier orders are left out (see :mod:`.phases`).
        self.phases = Phases()
        self.deferred_pairs: list[DeferredPair] = []
        self.known: dict[int, int] = {}
        self.checked_stores: dict[int, list[CheckedStore]] = {}
        self.read_forms: list[tuple[ir.Var, StoreForm | str, SourceSpan, Position]] = []
        # Per array: the parities each store is confined to (see :mod:`.parity`).
        self.store_parity: dict[int, list[frozenset]] = {}
        # The kernel's parameter names, in order, and what the proofs assumed of them (by name):
        # the launcher checks each assumption (a ParamCheck) at every launch.
        self.param_names: tuple[str, ...] = ()
        self.assumptions: dict[str, Assumption] = {}
        # Atomic tickets (R7): the stores whose index is a value a ticket draw returned (the
        # draw, the store, the array), and per array (by variable id) the first thing that
        # changes it otherwise (where, and what), which voids its tickets (:meth:`check_tickets`).
        self.ticket_stores: list[tuple[ir.Atomic, SourceSpan, ir.ArrayRef]] = []
        self.counter_changes: dict[int, tuple[SourceSpan, str]] = {}
        # R3 for loop variables: shared-array stores scaled by a variable the whole block
        # shares, proven per barrier interval once the body is known (see :mod:`.strides`).
        self.scaled = ScaledStores()
        # The last ticket (R7, :mod:`.lastblock`): the stores that need a pin from a ticket's
        # value, and where each store into a one-element shared array (a flag) is, by its
        # ArrayRef's id.
        self.ticket_pins: list[TicketUse] = []
        self.flag_positions: dict[int, Position] = {}

    # ---- what is known of a variable on entry to a loop -------------------------------------

    def note_assign(self, var: ir.Var, value: ir.Expr) -> None:
        """``var = value``: remember a constant value where every path to what follows sees it."""
        v = entry_value(value, self.known)
        if isinstance(v, int) and not isinstance(v, bool) and not self.phases.in_branch:
            self.known[id(var)] = v
        else:
            self.known.pop(id(var), None)

    def forget(self, variables) -> None:
        """A loop (re)assigns ``variables``: their values on entry say nothing of its body."""
        for var in variables:
            self.known.pop(id(var), None)

    def entry_value(self, e: ir.Expr) -> object:
        """The value of ``e`` here from constants and known variables, or ``None``."""
        return entry_value(e, self.known)

    def is_uniform_var(self, var: ir.Var) -> bool:
        """A kernel parameter that is never assigned (and not a ``UniqueId``): the same in every
        thread.  (A device function's parameter is whatever each caller passes.)"""
        return self.is_kernel and var.is_param and self.defs.assign_counts.get(var.name, 0) == 0 \
            and id(var) not in self.defs.unique_params

    def note_range_loop(self, var: ir.Var, start: ir.Expr, step: ir.Expr, step_sign: int,
                        body_assigned: set[str], stop: ir.Expr | None = None) -> None:
        """``for var in range(start, stop, step)``: with ``0 <= start < step`` and ``start``
        unique, threads visit disjoint values of ``var``.  For the ownership proofs, inside the
        loop ``var`` is ``start + step * k`` (:meth:`leave_range_loop` ends that), unless its
        body assigns ``var`` too (``body_assigned``: the names it assigns)."""
        if stop is not None and var.name not in body_assigned:
            stop_max = self.bounds.upper(stop) if self.bounds.is_nonneg(stop) else None
            start_value = constant_value(start)
            start_min = start_value if isinstance(start_value, int) else (
                0 if self.bounds.is_nonneg(start) else None)
            self.forms.enter_loop(var, self.defs.key(start), stop_max, self.defs.key(step),
                                  start_min, self.defs.key(stop) if self._exact_span(
                                      start, stop) else None)
        else:
            self.forms.leave_loop(var)
        start_unique = self.classify(start)
        self.range_unique_vars.pop(id(var), None)
        if (start_unique is not None and step_sign > 0
                and isinstance(step, ir.Const) and isinstance(step.value, int)
                and self.bounds.in_range(start, step.value)
                and var.name not in body_assigned):
            self.range_unique_vars[id(var)] = start_unique.coords

    def _exact_span(self, start: ir.Expr, stop: ir.Expr) -> bool:
        """Are ``start`` and ``stop`` (each argument of a ``min()``) their mathematical values,
        so that ``stop - start`` computed from their forms is the loop's span?  (``t * C`` in
        i64 wraps for a large C: its span to ``t * C + C`` is then no bound of the trip.)  The
        launch checks that keep them within their types are added."""
        from .wrapping import exact_value, operands_keep_it

        parts = [start]
        if isinstance(stop, ir.MathCall) and stop.name == "min":
            parts += list(stop.args)
        else:
            parts.append(stop)
        checks: list = []
        if not all(exact_value(e, self.bounds.no_wrap.proven, self.defs.single_def, checks,
                               fits=lambda x: operands_keep_it(x, self.bounds)) for e in parts):
            return False
        for check in checks:
            self.ctx.kernel.add_launch_check(check)
        return True

    def round_counter(self, var: ir.Var, bounds: tuple[ir.Expr, ...]) -> Digit | None:
        """The counter digit of ``for var in range(*bounds)`` in a kernel, where every thread
        of the launch runs its rounds alike (launch-uniform bounds): two threads in one round
        share it, where a barrier ends each round (:func:`.phases.round_digits`)."""
        if not self.is_kernel or not all(self.is_uniform(e) for e in bounds):
            return None
        loop = self.forms.loops.get(id(var))
        return loop.digit if loop is not None else None

    def leave_range_loop(self, var: ir.Var) -> None:
        """The body of the loop over ``var`` ends: its counter is no longer a digit."""
        self.forms.leave_loop(var)

    # ---- atomic tickets (R7; see :mod:`.lastblock`) ----------------------------------------

    def ticket_facts(self, cond: ir.Expr, truth: bool) -> set:
        """The pins a ticket comparison or a flag that carries one makes where ``cond`` is
        ``truth`` (see :mod:`.lastblock`)."""
        return ticket_facts(cond, truth, self)

    def ticket_draws(self, e: ir.Expr) -> list[ir.Atomic]:
        """The ticket draws whose value ``e`` is computed from."""
        return self._tickets(e)

    def note_ticket_pins(self, required: frozenset[str], covered, span: SourceSpan,
                         base: ir.ArrayRef | None) -> str:
        """A store (or ``UniqueId`` argument) was accepted: where it needs coordinates that
        only a ticket's value pins, remember it for :meth:`check_ticket_pins`; the rule's
        text for ``expand --proofs``, or ``""``."""
        facts = self.bounds.facts
        plain = {f.coord for f in facts if type(f) is Pinned}
        sources = []
        for f in sorted((f for f in facts if isinstance(f, TicketPinned)), key=repr):
            if f.coord in required and f.coord not in plain and f.coord not in covered and \
                    f.source not in sources:
                sources.append(f.source)
        if not sources:
            return ""
        self.ticket_pins.append(TicketUse(tuple(sources), span, base))
        whose = []
        for source in sources:
            if isinstance(source, FlagRead):
                whose.append(f"the flag '{source.array.var.name}' (line "
                             f"{source.load.span.line}) selects one block of the grid, the one "
                             "whose atomic ticket won")
            else:
                whose.append(f"one thread of the grid draws from '{source.draw.array.var.name}' "
                             f"(line {source.draw.span.line}) the value it is compared with")
        return f"unique: {'; '.join(whose)} (R7, the last ticket)"

    def check_ticket_pins(self, body: tuple[ir.Stmt, ...]) -> None:
        """Once the body is known: the ticket pins the stores needed hold (R7, the last
        ticket; see :mod:`.lastblock`)."""
        check_ticket_pins(self, body)

    # ---- stores and reads ------------------------------------------------------------------

    def store(self, base: ir.ArrayRef, indices, span: SourceSpan, unsafe: bool
              ) -> tuple[str, tuple[int, ...], str]:
        """How a store is race-free (``Store.unique``), which index positions make it so (its
        *owner* positions: a thread owns every element with those index values, whatever the
        rest), and the rule that proved it (``""``: the classic one, see ``expand``).
        ``unsafe``: inside ``with unsafe():``."""
        self.unexact = None
        self.owner_keys = None
        if base.ty.space == "local":
            return "uid", (), ""
        self.counter_changes.setdefault(id(base.var), (span, "a store"))
        if base.ty.space == "shared" and base.ty.shape == (1,):
            self.flag_positions[id(base)] = self.phases.position()
        keys = tuple(self.defs.key(i) for i in indices)
        self.store_parity.setdefault(id(base.var), []).append(
            frozenset() if unsafe else store_parities(self.forms, keys, self.bounds.facts))
        if unsafe:
            return "unsafe", (), ""
        space = "global" if base.ty.space == "global" else "shared"
        form = self.forms.store(keys, self.bounds.facts, space, span.line,
                                index_text(base, span))
        if isinstance(form, StoreForm):
            form.spans = self._index_spans(indices)
            checks: list = []
            form.exact = tuple(self._exact_here(i, checks) for i in indices)
            form.exact_checks = tuple(checks)
        self.store_forms.setdefault(id(base.var), []).append(form)
        self.store_owners.setdefault(id(base.var), []).append(None)
        self.store_positions.setdefault(id(base.var), []).append(self.phases.position())
        narrowed = bool(pinned(self.bounds.facts) & required_coords(self.ctx.ndim, space))
        refused: TranspileError | None = None
        try:
            kind, owners = self._classic(base, indices, span)
        except TranspileError as classic:
            refused = classic
        if (refused is not None or self._by_residue(indices)) and \
                self._defer_scaled(base, indices, keys, span, form):
            # (An index unique by its residue alone, `temp[pout * N + t]` with `pout` flipped
            # each round, is proven by the rounds' values where the trace knows them: its
            # owner, a residue class, is not another store's `temp[t]`.)
            return "uid", (), _SCALED_PROOF
        if refused is not None:
            # Outside the handler: a refusal of the ownership proof is reported as itself, not
            # as raised "during handling" of the classic rule's.
            proof = self.prove_array(base, span, refused)
            assert isinstance(form, StoreForm)  # (prove_array refuses a store with none)
            self.check_exact(base, indices, span, form)
            self._note_shared(base, indices, keys, span, form)
            kind, owners = "uid", tuple(range(len(indices)))
            if not form.pins:
                self.written_keys.setdefault(id(base.var), []).append(keys)
            self.check_narrowed(base, span, CheckedStore(
                form, self.phases.position(), narrowed, span, self._pins(), self._pinned(space),
                keys, self.index_pins(indices), self._ticketed()))
            return kind, owners, proof
        self._note_shared(base, indices, keys, span, form)
        if kind == "uid":
            self.owner_keys = tuple(self.owner_key(i, store=True) for i in indices)
            self.written_keys.setdefault(id(base.var), []).append(self.owner_keys)
            # The classic rule reasons about exact integers too: `i64(p + u * 4) + j` is unique
            # only while `u * 4` does not wrap (the owner indices tell the threads apart).
            # Refused once the store is proven against the array's others (:meth:`note_store`):
            # where two indices race, that is the reason, which an i64 index would not remove.
            try:
                if isinstance(form, StoreForm):
                    self.check_exact(base, indices, span, form, owners)
                else:
                    for idx in (indices[p] for p in owners):
                        if index_is_exact(idx, self.bounds, self.defs.single_def) is not True \
                                and not self.residue_exact(idx):
                            raise self.wrap_refusal(base.var.name, idx)
            except TranspileError as wraps:
                self.unexact = wraps
        self.check_narrowed(base, span, CheckedStore(
            form, self.phases.position(), narrowed or kind == "single", span, self._pins(),
            self._pinned(space), keys, self.index_pins(indices), self._ticketed()))
        covered: set[str] = set()
        for idx in indices:
            u = self.classify(idx)
            covered |= u.coords if u is not None else set()
        return kind, owners, self.note_ticket_pins(required_coords(self.ctx.ndim, space),
                                                   covered, span, base)

    def _by_residue(self, indices) -> bool:
        """Is an index unique by its residue alone (:attr:`.classify.Unique.modulus`), with a
        multiple of the modulus that reads no memory (one the trace of the block's rounds may
        know, which then proves the store against the array's others)?"""
        return any(self.residue_reads_memory(i) is False for i in indices)

    def _exact_here(self, idx: ir.Expr, checks: list) -> bool:
        """Is ``idx`` shown exact (see :attr:`.ownership.StoreForm.exact`) from what is
        proven already, with the launch checks ``checks`` receives (none is added here)?"""
        mine: list = []
        if not exact_value(idx, self.bounds.no_wrap.proven, self.defs.single_def, mine,
                           fits=lambda x: operands_keep_it(x, self.bounds)):
            return False
        checks += mine
        return True

    def _index_spans(self, indices) -> tuple:
        """Each index's values at the store (see :attr:`.ownership.StoreForm.spans`): the
        interval the bounds proofs give it, raised to 1 where a fact shows it positive (``if i
        > 0:``, the ``elif`` after ``if i == 0:``)."""
        spans: list[tuple[int, int] | None] = []
        for idx in indices:
            lo, hi = self.bounds.interval(idx)
            if lo > hi:  # not an integer: nothing known
                spans.append(None)
                continue
            if lo < 1 <= hi and self.bounds.at_least(idx, 1):
                lo = 1
            spans.append((lo, hi))
        return tuple(spans)

    # ---- stores scaled by a loop variable (hooks of :mod:`.strides`) ------------------------

    def _note_shared(self, base: ir.ArrayRef, indices, keys, span: SourceSpan, form) -> None:
        """Remember a store of a kernel's shared array, checked by the ordinary rules: a store
        of the array scaled by a loop variable is proven against it at the end."""
        if self.is_kernel and base.ty.space == "shared":
            facts = tuple(sorted(self.bounds.facts, key=repr))
            rec = self.scaled.note(base.var, indices, keys, facts, span, index_text(base, span),
                                   (), form)
            # Conditions that read a traced variable (`if (t ^ j) > t:` around `s[t]`, beside
            # a traced `s[t ^ j]`): the trace gives their values too (see :mod:`.strides`).
            rec.needs = scale_vars((), facts, self.is_uniform_var)

    def _defer_scaled(self, base: ir.ArrayRef, indices, keys, span: SourceSpan, form) -> bool:
        """A kernel's shared-array store whose index has no form because it reads a local
        assigned more than once (``offset * (2 * tid + 2) - 1``): leave it to
        :meth:`check_scaled`, which knows the values the local takes."""
        if not (self.is_kernel and base.ty.space == "shared" and isinstance(form, str)):
            return False
        needs = scale_vars(keys, (), self.is_uniform_var)
        if not needs:
            return False
        facts = tuple(sorted(self.bounds.facts, key=repr))
        needs = scale_vars(keys, facts, self.is_uniform_var)
        exact = tuple(index_is_exact(i, self.bounds, self.defs.single_def) for i in indices)
        rec = self.scaled.note(base.var, indices, keys, facts, span, index_text(base, span),
                               exact, None)
        self.scaled.defer(rec, needs)
        return True

    def _read_form(self, base: ir.ArrayRef, indices, keys, span: SourceSpan
                   ) -> StoreForm | str:
        """A read's form, as a store's would be (see :meth:`store`): with which of its indices
        are exact, and the launch checks that keep them so (added where a rule relies on
        them)."""
        space = "global" if base.ty.space == "global" else "shared"
        form = self.forms.store(keys, self.bounds.facts, space, span.line,
                                index_text(base, span))
        if isinstance(form, StoreForm):
            checks: list = []
            form.exact = tuple(self._exact_here(i, checks) for i in indices)
            form.exact_checks = tuple(checks)
        return form

    def _note_shared_read(self, base: ir.ArrayRef, indices, keys, span: SourceSpan, form,
                          width: int) -> None:
        """Remember a read of a kernel's shared array for :mod:`.strides`: proven at the end
        against the stores of each barrier interval it runs in where it or a store needs the
        values the block's rounds give a local (``cache[tid + s]`` with ``s`` halved each
        round)."""
        if not self.is_kernel:
            return
        facts = tuple(sorted(self.bounds.facts, key=repr))
        if isinstance(form, StoreForm):
            rec = self.scaled.note(base.var, indices, keys, facts, span,
                                   index_text(base, span), (), form, read_width=width)
            rec.needs = scale_vars((), facts, self.is_uniform_var)
            return
        if not scale_vars(keys, (), self.is_uniform_var):
            return  # not affine for another reason: left to the simulator's race detector
        exact = tuple(index_is_exact(i, self.bounds, self.defs.single_def) for i in indices)
        rec = self.scaled.note(base.var, indices, keys, facts, span, index_text(base, span),
                               exact, None, read_width=width)
        rec.traced, rec.needs = True, scale_vars(keys, facts, self.is_uniform_var)
        rec.position = self.phases.position()

    def check_scaled(self, body: tuple[ir.Stmt, ...]) -> None:
        """Once the body is known: prove the stores :meth:`_defer_scaled` left (see
        :mod:`.strides`)."""
        required = required_coords(self.ctx.ndim, "shared")

        def prove(a: StoreForm, b: StoreForm) -> PairProof:
            outcome = prove_padded(a, b, required)
            if outcome.ok:
                return outcome
            # A bitonic network's compare-and-swap; conditions that order the two indices (a
            # double-buffered scan's read of `temp[pin * N + t - offset]` under `if t >=
            # offset:`, beside the store into the other half).
            apart = xor_apart(a, b) or bounds_apart(a, b) or residues_apart(a, b)
            if apart is not None:
                for check in a.exact_checks + b.exact_checks:
                    self.ctx.kernel.add_launch_check(check)
                return PairProof(True, apart, shown=True)
            if outcome.hint or xor_hint(a, b) is None:
                return outcome
            return PairProof(False, outcome.text, outcome.missing, _XOR_ROUND_HINT)

        if self.warp_barriers:
            # A sync_warp() may order a read and a store of one warp's threads, which the
            # trace's intervals (ended by block barriers) do not say: left to the simulator,
            # as check_shared_reads leaves them.
            self.scaled.reads.clear()
        self.scaled.check(body, self.forms, prove, self.ctx.kernel.add_launch_check)
        if self.scaled.unproven is not None:
            # The trace gave up at line `cut`: a read it followed before is proven against the
            # stores it followed too; every other pair must be ordered by a barrier.
            aborted, reads, cut = self.scaled.unproven
            for r in reads:
                for store in self.checked_stores.get(id(r.array), ()):
                    if store.keys is None or ordered_either(store.position, r.position,
                                                            grid=False):
                        continue  # (a copy's fill: its own waits order it)
                    if cut is not None and r.span.line < cut and store.span.line < cut:
                        continue
                    where = f" (line {aborted.span.line})" if aborted.span else ""
                    raise TranspileError(
                        f"'{r.array.name}' is read here through an index that reads "
                        f"{', '.join(repr(v.name) for v in r.needs)}, whose values in each "
                        f"barrier interval are not known, because of {aborted.reason}{where}: "
                        f"nothing shows that the store at line {store.span.line} does not "
                        "write the same element from another thread of the block in the same "
                        "interval", r.span,
                        aborted.hint or "part the read from the stores with a "
                        "sync_threads() (read into a local, barrier, then store), or use "
                        "`with unsafe():` if you know the read is race-free")

    def store_span(self, base: ir.ArrayRef, indices, width: int, span: SourceSpan,
                   what: str) -> str:
        """A write of ``width`` elements along the last axis from ``indices`` (``cp_async``'s
        shared destination): proven as a store whose last index is ``indices[-1] + e`` with
        ``e`` a counter in ``[0, width)`` (the thread's own footprint), or refused."""
        def run(form: StoreForm) -> StoreForm:
            footprint = Digit(f"loop:{what} footprint@{span.line}:{span.col}")
            form.dims = form.dims[:-1] + (form.dims[-1].plus(Affine.of((footprint,))),)
            form.ranges[footprint] = Affine(width)
            return form

        space = "global" if base.ty.space == "global" else "shared"
        return self._store_footprint(base, indices, span, what, run, TranspileError(
            f"{what} '{base.var.name}' is written several elements per thread, through an "
            "index not provably unique", span, UNIQUE_HINT[space]))

    def store_box(self, base: ir.ArrayRef, indices, box: tuple[int, int], span: SourceSpan
                  ) -> str:
        """``tma_load``'s write of the whole R x C slice at ``indices`` (its last two ``0``):
        proven as a store whose last two indices run over ``[0, R)`` and ``[0, C)`` (the
        issuing thread's footprint), or refused."""
        what = f"tma_load() into '{base.var.name}'"

        def run(form: StoreForm) -> StoreForm:
            widened = list(form.dims)
            for axis, extent in zip((-2, -1), box):
                footprint = Digit(f"loop:{what} axis {axis}@{span.line}:{span.col}")
                widened[axis] = widened[axis].plus(Affine.of((footprint,)))
                form.ranges[footprint] = Affine(extent)
            form.dims = tuple(widened)
            return form

        proof = self._store_footprint(base, indices, span, what, run, TranspileError(
            f"{what}: two threads may copy into the same slice", span,
            "issue the copies from one thread (`if thread_idx.x == 0:`) or give each thread "
            "its own slices, or use `with unsafe():`"), keep_hint=True)
        return proof.replace("unique: ", f"unique: a {box[0]} x {box[1]} slice per issuing "
                             "thread, ", 1)

    def store_tile(self, base: ir.ArrayRef, indices, span: SourceSpan, group_cols: int = 0
                   ) -> str:
        """``store_matrix``'s 16 x 8 tile at ``indices``, written by the lanes of a warp (or,
        with ``group_cols``, ``warpgroup_store``'s 64 x ``group_cols`` tile, written by the
        threads of a warpgroup): proven as a store of each thread's own elements from a
        warp-uniform (warpgroup-uniform) origin (see :mod:`.warptiles`), or refused."""
        op = "warpgroup_store" if group_cols else "store_matrix"
        what = f"{op}() into '{base.var.name}'"
        if not self.is_kernel:
            raise in_device_function(span, what)

        def run(form: StoreForm) -> StoreForm:
            return warp_tile(form, self.ctx.ndim, span, what, group_cols)

        if group_cols:
            shape, step = f"64 x {group_cols}", f"64 rows or {group_cols} columns"
            example = "row = block_row + (thread_idx.x // 128) * 64"
        else:
            shape, step = "16 x 8", "16 rows or 8 columns"
            example = ("row = block_row + (warp // WARPS_N) * WM + i * 16 with WM = 16 * MI")
        unit = "warpgroup" if group_cols else "warp"
        proof = self._store_footprint(base, indices, span, what, run, TranspileError(
            f"{what}: the {shape} tiles of two {unit}s (or of two calls) may overlap", span,
            f"step the origin by at least {step} between {unit}s and between iterations "
            f"({example}), or use `with unsafe():`"), keep_hint=True)
        share = (f"each thread's {group_cols // 2} elements" if group_cols
                 else "each lane's 4 elements")
        return proof.replace("unique: ", f"unique: a {shape} tile per {unit} from a "
                             f"{unit}-uniform origin ({share}), ", 1)

    def _store_footprint(self, base: ir.ArrayRef, indices, span: SourceSpan, what: str,
                         widen, classic: TranspileError, keep_hint: bool = False) -> str:
        """A write of several elements per thread from ``indices``: its form, ``widen``-ed to
        the thread's footprint, proven against every store of the array (``classic``: the
        error, with the reason added; ``keep_hint``: with its own hint, not the pair's)."""
        self.counter_changes.setdefault(id(base.var), (span, what))
        keys = tuple(self.defs.key(i) for i in indices)
        self.store_parity.setdefault(id(base.var), []).append(frozenset())
        space = "global" if base.ty.space == "global" else "shared"
        form = self.forms.store(keys, self.bounds.facts, space, span.line,
                                f"{base.var.name}[...]")
        if isinstance(form, StoreForm):
            form = widen(form)
        self.store_forms.setdefault(id(base.var), []).append(form)
        self.store_owners.setdefault(id(base.var), []).append(None)
        self.store_positions.setdefault(id(base.var), []).append(self.phases.position())
        error: TranspileError | None = None
        try:
            proof = self.prove_array(base, span, classic)
        except TranspileError as refused:
            if not keep_hint:
                raise
            error = TranspileError(refused.message, span, classic.hint)
        if error is not None:
            raise error  # outside the handler: reported as itself
        assert isinstance(form, StoreForm)  # prove_array refuses a store without a form
        self.check_exact(base, indices, span, form)
        narrowed = bool(pinned(self.bounds.facts) & required_coords(self.ctx.ndim, space))
        self.check_narrowed(base, span, CheckedStore(form, self.phases.position(), narrowed, span,
                                                     self._pins(), self._pinned(space)))
        # A thread writes elements no index of it names: every later plain store of the array is
        # proven against this one (:meth:`note_store`), and a read of it is its own element only
        # where the thread also writes that index plainly (:meth:`check_reads`).
        self.multi_owner.add(id(base.var))
        self.store_keys.setdefault(id(base.var), (((), (("footprint", span.line, span.col),),
                                                   frozenset()), span))
        return proof

    def _pinned(self, space: str) -> frozenset[str]:
        """The thread coordinates the conditions here pin (see :class:`CheckedStore`)."""
        return pinned(self.bounds.facts) & required_coords(self.ctx.ndim, space)

    def _ticketed(self) -> bool:
        return any(isinstance(f, TicketPinned) for f in self.bounds.facts)

    def _pins(self) -> frozenset:
        """The equalities that leave the code here to one thread (see :class:`CheckedStore`)."""
        return frozenset(f for f in self.bounds.facts if isinstance(f, PinnedBy))

    def _classic(self, base: ir.ArrayRef, indices, span: SourceSpan
                 ) -> tuple[str, tuple[int, ...]]:
        """The classic rule (see the module docstring)."""
        required = required_coords(self.ctx.ndim, "global" if base.ty.space == "global"
                                   else "shared") - pinned(self.bounds.facts) - \
            self.one_block_axes()
        covered: set[str] = set()
        owners: list[int] = []
        for position, idx in enumerate(indices):
            u = self.classify(idx)
            if u is not None:
                covered |= u.coords
                owners.append(position)
        param_coords = {c for c in covered if c.startswith("param:")}
        if not required:
            return "single", ()
        if required <= covered:
            for position in owners:
                for draw in self._tickets(indices[position]):
                    self.ticket_stores.append((draw, span, base))
            return "uid", tuple(owners)
        if param_coords and not self.is_kernel:
            # Into an array parameter: the memory is the caller's, global or shared, which
            # each call site knows (check_argument resolves "array:s" to its argument's).
            use = f"array:{base.var.name}" if base.var.is_param else (
                "global" if base.ty.space == "global" else "shared")
            for c in param_coords:
                self.unique_param_uses.setdefault(c[6:], set()).add(use)
            return "uid", tuple(owners)
        what = "grid" if base.ty.space == "global" else "block"
        if base.var.is_param and not self.is_kernel:
            what += " (the array is a caller's, checked as a global one: its space is not known here)"
        raise TranspileError(
            f"store into '{base.var.name}' through an index that is not provably unique: two "
            f"threads of the {what} could write the same element", span,
            warp_rank_hint(indices, self.defs.single_def) or self.residue_hint(indices)
            or UNIQUE_HINT["global" if base.ty.space == "global" else "shared"])

    def note_store(self, base: ir.ArrayRef, indices, span: SourceSpan, unique: str,
                   owners: tuple[int, ...] = ()) -> str:
        """A store was checked: every store of an array must go through the same owner indices,
        or be proven disjoint from the others (then the rule that did it is returned); last, a
        refusal :meth:`store` left for an owner index that may wrap."""
        proof = self._note_store(base, indices, span, unique, owners)
        if self.unexact is not None:
            wraps, self.unexact = self.unexact, None
            raise wraps
        return proof

    def _note_store(self, base: ir.ArrayRef, indices, span: SourceSpan, unique: str,
                    owners: tuple[int, ...]) -> str:
        if self.scaled.is_deferred(indices):
            return ""  # proven at the end, against every store of the array (:mod:`.strides`)
        if unique == "uid" and base.ty.space != "local":
            # Only the owner positions must agree: a thread may write any element of its own
            # rows (acc[i, 0], acc[i, 1], ...), never through a different row index.
            # An owner index unique only under a pinned remainder is the same owner only under
            # the same pins (`y[tid // 128]` under `tid % 128 == 0` and under `== 64` meet).
            pins = self.index_pins(indices)
            owned = self.owner_keys or tuple(self.defs.key(i) for i in indices)
            k = (owners, tuple(owned[p] for p in owners), pins)
            if self.owner_keys is not None:
                self.store_owners[id(base.var)][-1] = k
            prev = self.store_keys.get(id(base.var))
            if prev is None:
                self.store_keys[id(base.var)] = (k, span)
            elif prev[0] != k and id(base.var) not in self.multi_owner:
                classic = PairedRefusal(base.var.name, prev[1], span,
                                        conditions=prev[0][:2] == k[:2])
                self.multi_owner.add(id(base.var))
                return self.prove_union(base, indices, span, classic)
            elif id(base.var) in self.multi_owner:
                return self.prove_union(base, indices, span, TranspileError(
                    f"'{base.var.name}' is written through several indices; this one is not "
                    "provably disjoint from the others", span))
        return ""

    def prove_union(self, base: ir.ArrayRef, indices, span: SourceSpan,
                    classic: TranspileError) -> str:
        """A store of an array written through several indices: its proof against the others
        (the newest form is this store's, see :meth:`store`), with exact indices."""
        proof = self.prove_array(base, span, classic, self.store_owners[id(base.var)][-1])
        form = self.store_forms[id(base.var)][-1]
        if isinstance(form, StoreForm):  # (else the classic rule checked its exactness)
            self.check_exact(base, indices, span, form)
        return proof

    def note_load(self, base: ir.ArrayRef, indices, span: SourceSpan, unsafe: bool,
                  width: int = 1) -> None:
        """A read (``width`` elements along the last axis from ``indices``): one of a
        writable global array is checked against its stores at the end, one of a shared array
        against the stores of the same barrier interval (:meth:`check_shared_reads`, and
        :mod:`.strides` where an index or a condition reads a value the block's rounds
        change)."""
        if base.ty.space == "shared" and not unsafe:
            keys = tuple(self.defs.key(i) for i in indices)
            if self.is_kernel and self.ctx.ndim == 1 and shows_within(
                    self.bounds.facts, SpecialKey("thread_idx", 0), 32):
                self.warp_reads.add(id(span))
            self.shared_loads.append((base.var, keys, span, self.phases.position()))
            form = self._read_form(base, indices, keys, span)
            if isinstance(form, StoreForm) and width > 1:
                form = read_footprint(form, width, span)
            pinned_here = self._pinned("shared")
            if pinned_here:
                # Read by the threads a condition pins (`if tid == 0:`): compared with each
                # store as a store those conditions narrow would be (check_shared_reads).
                self.pinned_reads.append((base, CheckedStore(
                    form, self.phases.position(), True, span, self._pins(), pinned_here, keys,
                    self.index_pins(indices))))
            else:
                self.shared_reads.append((base.var, self._owner_keys(indices), span,
                                          self.phases.position(), self.index_pins(indices),
                                          form))
                self._note_shared_read(base, indices, keys, span, form, width)
        if base.ty.space == "global" and base.ty.mutable:
            keys = tuple(self.defs.key(i) for i in indices)
            parity = read_parities(self.forms, keys, self.bounds.facts)
            where = self.phases.position()
            # A read at a store's owner index is of the thread's own element only under the
            # store's pins (`if tid % 32 == 0: y[tid // 32] = v` then `y[tid // 32]` read by
            # every thread reads thread 0's element in thread 1).
            pins = self.index_pins(indices)
            form = self._read_form(base, indices, keys, span)
            self.mutable_loads.append((base.var, self._owner_keys(indices), span, unsafe,
                                       parity, where, pins, form))
            if not unsafe:
                self.read_forms.append((base.var, form, span, where))

    def _owner_keys(self, indices) -> tuple:
        """An access's owner keys, compared with the stores' (:meth:`owner_key`)."""
        return tuple(self.owner_key(i) for i in indices)

    def unordered_store(self, var: ir.Var, where: Position) -> SourceSpan | None:
        """The first checked store of ``var`` that no ``grid_sync()`` separates from the read at
        ``where`` (before it, and in a loop also after it); ``None`` when every store lies in
        another phase of the grid, so that no thread writes what this one reads while it reads."""
        for store in self.checked_stores.get(id(var), ()):
            if not ordered_either(store.position, where, grid=True):
                return store.span
        return None

    def note_atomic(self, e: ir.Atomic) -> None:
        """An atomic operation: all but loads and additions of a positive constant change its
        array in a way that voids the array's tickets."""
        if e.op == "load":
            return
        self.note_atomic_at(e.array.var, e.indices, e.span)
        if adds_a_positive_constant(e):
            return
        self.counter_changes.setdefault(id(e.array.var), (e.span, f"an atomic {e.op}"))

    def note_atomic_at(self, var: ir.Var, at: tuple[ir.Expr, ...] | None, span: SourceSpan,
                       callee: str = "") -> None:
        """Atomics change ``var`` at the element ``at`` indexes (``None``: any), here or in
        the device function ``callee`` called here, for :meth:`check_atomic_reads`."""
        keys, pins, form = self._element(var, at, span, callee or var.name)
        self.atomic_updates.setdefault(id(var), []).append(
            AtomicUpdate(var, keys, span, self.phases.position(), callee, pins, form))

    def _element(self, var: ir.Var, at: tuple[ir.Expr, ...] | None, span: SourceSpan,
                 text: str) -> tuple[tuple | None, frozenset | None, StoreForm | str]:
        """The index keys, pins and form of the element of ``var`` that ``at`` indexes (what
        ``text`` names, at ``span``), all unknown where ``at`` is ``None`` (any element)."""
        if at is None:
            return None, None, "is not known at the call"
        keys = tuple(self.defs.key(e) for e in at)
        space = "global" if _space(var) == "global" else "shared"
        return keys, self.index_pins(at), self.forms.store(keys, self.bounds.facts, space,
                                                           span.line, text)

    def note_passed(self, var: ir.Var, span: SourceSpan) -> None:
        """An array is passed to a device function, which may change it."""
        self.counter_changes.setdefault(id(var), (span, "a device function call it is passed to"))

    def note_call_access(self, var: ir.Var, callee: str, span: SourceSpan, writes: bool,
                         at: tuple[ir.Expr, ...] | None, param: int = 0) -> None:
        """A call of device function ``callee`` stores into (``writes``) or reads ``var``
        (:func:`~.calls.param_accesses`) through its parameter at position ``param``, at the
        element the call's arguments ``at`` index, or anywhere (``None``)."""
        keys, pins, form = self._element(var, at, span, f"{callee}()")
        self.call_accesses.setdefault(id(var), []).append(CallAccess(
            var, callee, span, self.phases.position(), writes, keys, pins, form, param))

    def check_calls(self) -> None:
        """Once the body is known: an array a device function stores into is written by no
        other store or call here, and read nowhere here, and one it reads is written nowhere
        here, unless a barrier orders the two, or both touch the thread's own element.

        The callee proved its stores among themselves and its reads against them; what it
        touches is compared with this function's accesses only where the call's arguments name
        the element: the callee indexes the array by its parameters alone, and the element is
        one this thread owns here (at its stores' owner index, under their pins: what another
        thread writes it never touches), or every access of the array is at that one element.
        """
        for accesses in self.call_accesses.values():
            var = accesses[0].var
            grid = _space(var) == "global"
            owner = self._owner(var, accesses)
            here: list[tuple[SourceSpan, Position, bool, str, bool]] = [
                (s.span, s.position, True, "the store", True)
                for s in self.checked_stores.get(id(var), ())]
            here += [(load[2], load[5], False, "the read",
                      self._owns(var, owner, load[1], load[6], load[7]))
                     for load in self.mutable_loads if load[0] is var and not load[3]]
            calls = [(a.span, a.position, a.writes, f"the call of {a.callee}()",
                      self._owns(var, owner, a.keys, a.pins, a.form)) for a in accesses]
            for k, a in enumerate(accesses):
                mine = calls[k][4]
                for j, (other, position, writes, what, theirs) in enumerate(
                        here + calls[k + 1:]):
                    b = accesses[k + 1 + j - len(here)] if j >= len(here) else None
                    if b is not None and b.span is a.span and b.param == a.param:
                        # One call's stores and reads through one parameter: the callee
                        # proved them.  The array passed for two parameters is two arrays
                        # to the callee, whose proofs then say nothing of the pair.
                        continue
                    if not (a.writes or writes) or ordered_either(a.position, position, grid):
                        continue
                    if mine and theirs:
                        continue  # both at this thread's own element
                    if b is not None and b.span is a.span:
                        raise TranspileError(
                            f"'{var.name}' is passed to {a.callee}() for two of its parameters, "
                            f"which its proofs take for two arrays: a store through one may "
                            f"meet another thread's access through the other", a.span,
                            "pass the array once and index that parameter, or use "
                            "`with unsafe():`")
                    if a.writes:
                        raise self._call_race(var, f"written inside {a.callee}() (called at "
                                              f"line {a.span.line}) and accessed here too, by "
                                              f"{what} at line {other.line}", other, grid)
                    raise self._call_race(var, f"read inside {a.callee}() (called here) and "
                                          f"written by {what} at line {other.line}", a.span,
                                          grid)

    def _owner(self, var: ir.Var, accesses: list[CallAccess]):
        """``(owner positions, their keys, pins)``: the element(s) a thread owns in ``var``:
        where its stores write, else where its first call that writes does; ``None`` where
        the array is written through several indices (or only anywhere)."""
        if id(var) in self.multi_owner:
            return None
        prev = self.store_keys.get(id(var))
        if prev is not None:
            return prev[0]
        first = next((a for a in accesses if a.writes), None)
        if first is None or first.keys is None:
            return None
        return tuple(range(len(first.keys))), first.keys, first.pins

    def _owns(self, var: ir.Var, owner, keys, pins, form: StoreForm | str) -> bool:
        """Whether an access at index ``keys`` (under ``pins``, with ``form``) is of the
        thread's own element of ``var``: at the owner index, under the stores' pins."""
        if owner is None or keys is None:
            return False
        owners, owned, owner_pins = owner
        return tuple(keys[p] for p in owners) == owned and pins == owner_pins and \
            self._under_store_pins(var, form)

    @staticmethod
    def _call_race(var: ir.Var, what: str, span: SourceSpan, grid: bool) -> TranspileError:
        return TranspileError(
            f"'{var.name}' is {what}: the proofs show each function's accesses apart among "
            f"themselves, not from another function's, so another thread may write the element "
            f"one of them touches", span,
            "index the array in the device function by its parameters alone and pass this "
            "thread's own index (the one its stores here use), write and read the array in "
            "one function (return the value from the device function and store it here), "
            "give the call's writes an array of their own, or use `with unsafe():`"
            + (" (or a grid_sync() between them)" if grid else
               " (or a sync_threads() between them)"))

    def _under_store_pins(self, var: ir.Var, form: StoreForm | str) -> bool:
        """Whether an access with ``form`` runs under every pin of the conditions around the
        stores of ``var`` (``if tid % 32 == 0: partial[w] = v``): at the owner index, an access
        that runs in more threads than the stores do reaches elements another thread writes
        (thread 1 reads what thread 0 wrote at ``partial[w]``)."""
        needed = [f.pins for f in self.store_forms.get(id(var), ())
                  if isinstance(f, StoreForm) and f.pins]
        if not needed:
            return True
        if not isinstance(form, StoreForm):
            return False
        return all(form.pins.get(digit) == pin for pins in needed for digit, pin in pins.items())

    def check_atomic_reads(self) -> None:
        """Once the body is known: a plain read of an element that atomics update in the same
        launch, with no barrier between (``sync_threads()`` for a shared array, ``grid_sync()``
        for a global one), reads a value that depends on timing: a race, as the simulator's
        detector reports it.  The reads and the atomics of the device functions called here
        count as the caller's (:func:`~.calls.param_accesses`).  Reads at a constant index that
        no update's constant index names are left alone."""
        reads = [(load[0], load[1], load[2], load[5], "") for load in self.mutable_loads
                 if not load[3]] + [(*load, "") for load in self.shared_loads] + [
            (a.var, a.keys, a.span, a.position, f"{a.callee}()")
            for accesses in self.call_accesses.values() for a in accesses if not a.writes]
        for var, keys, span, where, reader in reads:
            for update in self.atomic_updates.get(id(var), ()):
                grid = var.ty.space == "global"
                if ordered_either(update.position, where, grid):
                    continue
                if keys is not None and update.keys is not None and _constant_keys(keys) and \
                        _constant_keys(update.keys) and keys != update.keys:
                    continue
                at, updater = update.span, update.callee
                raise TranspileError(
                    f"'{var.name}' is read {f'by {reader} ' if reader else ''}here with a "
                    f"plain load while atomics {f'in {updater} ' if updater else ''}update it "
                    f"(line {at.line}) in the same launch, with no "
                    f"{'grid_sync()' if grid else 'sync_threads()'} between: the value read "
                    f"depends on which updates have happened, a race", span,
                    f"read it atomically (`{var.name}.atomic_ref(i).load()`), or after a "
                    + ("grid_sync() in a cooperative kernel, or in a later launch"
                       if grid else "sync_threads() (every update of the block done)")
                    + ", or use `with unsafe():`")

    def check_atomic_stores(self) -> None:
        """Once the body is known: a plain store into an element that atomics update in the
        same launch, with no barrier between, races with the update (which of the two lands
        last depends on timing).  Left alone: both at the thread's own element (the atomic at
        the stores' owner index, under their pins), both at constant indices that differ, and
        a store under the last ticket (R7: the other blocks' updates all came before it)."""
        for updates in self.atomic_updates.values():
            var = updates[0].var
            accesses = self.call_accesses.get(id(var), [])
            writes: list[tuple[tuple | None, frozenset | None, StoreForm | str, SourceSpan,
                               Position, bool, str]] = [
                (s.keys, s.index_pins, s.form, s.span, s.position, s.ticket, "")
                for s in self.checked_stores.get(id(var), ())]
            writes += [(a.keys, a.pins, a.form, a.span, a.position, False, f"{a.callee}()")
                       for a in accesses if a.writes]
            grid = _space(var) == "global"
            owner = self._owner(var, accesses)
            for keys, pins, form, span, position, ticket, writer in writes:
                for update in updates:
                    if ticket or ordered_either(update.position, position, grid):
                        continue
                    if keys is not None and update.keys is not None and \
                            _constant_keys(keys) and _constant_keys(update.keys) and \
                            keys != update.keys:
                        continue
                    if self._owns(var, owner, keys, pins, form) and \
                            self._owns(var, owner, update.keys, update.pins, update.form):
                        continue  # both at this thread's own element
                    barrier = "grid_sync()" if grid else "sync_threads()"
                    raise TranspileError(
                        f"'{var.name}' is written {f'by {writer} ' if writer else ''}here with "
                        f"a plain store while atomics "
                        f"{f'in {update.callee} ' if update.callee else ''}update it (line "
                        f"{update.span.line}) in the same launch, with no {barrier} between: "
                        f"another thread's update of the element may land before or after the "
                        f"store, a race", span,
                        (f"write it atomically (`{var.name}.atomic_ref(i).store(v)`), "
                         if not writer else "give the call's writes an array of their own, ")
                        + f"order the two with a {barrier}"
                        + (" (in a cooperative kernel)" if grid else "")
                        + " or put them in separate launches, or use `with unsafe():`")

    def check_shared_reads(self) -> None:
        """Once the body is known: a plain read of a shared array that a store of another
        thread of the block may write in the same barrier interval reads a value that depends
        on timing (the missing ``sync_threads()``).  Accepted: a read the barriers order with
        every store, one of the thread's own element (at the stores' owner index, under their
        pins), and one proven apart from each unordered store as a pair of stores is.

        Compared: each read with a form (:meth:`note_load`), with the plain stores, in a body
        with no ``sync_warp()``: in a loop a barrier ends, with its counter the same in both
        threads (:func:`.phases.round_digits`); a read the conditions pin to some threads
        (``if tid == 0:``) as a store they narrow is (:meth:`narrowed_reason`: thread 0's
        read of its own ``s[0]`` is no race); a copy's fill (``tma_load``, ``cp_async``) is
        ordered by its own waits.  Reads and stores whose indices read a value the block's
        rounds change are proven by :mod:`.strides`.  The rest is left to the simulator's
        race detector."""
        if self.warp_barriers:
            return  # a sync_warp() may order the two; the phases know block barriers only
        required = required_coords(self.ctx.ndim, "shared")
        for var, keys, span, where, pins, form in self.shared_reads:
            owner = self._owner(var, [])
            for store in self.checked_stores.get(id(var), ()):
                if ordered_either(store.position, where, grid=False):
                    continue
                if self._owns(var, owner, keys, pins, form):
                    continue
                by_residue = self._residue_owner(var, store)
                if by_residue is not None and store.keys is not None:
                    # A store unique by its residue alone may have no form (a bin loaded from
                    # memory): a read beside it is of the thread's own residue, or may race.
                    positions, owned, owner_pins = by_residue
                    if tuple(keys[p] for p in positions) == owned and pins == owner_pins:
                        continue
                    if not (isinstance(form, StoreForm) and isinstance(store.form, StoreForm)):
                        self._racing_read(var, span, store, (
                            "the store is unique by the residue of its index alone (a "
                            "multiple plus a value below it that tells the threads apart), "
                            "and this read is not at an index of the same residue"))
                if store.keys is None or \
                        not (isinstance(form, StoreForm) and isinstance(store.form, StoreForm)):
                    continue  # a copy's fill (its own waits order it), or not compared yet
                same = round_digits(store.position, where) if self.is_kernel else frozenset()
                outcome = self.prove(form, store.form, required, var.name, same,
                                     assume_more=False)
                if outcome.ok:
                    continue
                self._racing_read(var, span, store, outcome.text)
        for base, read in self.pinned_reads:
            for store in self.checked_stores.get(id(base.var), ()):
                if ordered_either(store.position, read.position, grid=False) or \
                        store.keys is None:
                    continue
                if not (isinstance(read.form, StoreForm) and isinstance(store.form, StoreForm)):
                    if self._residue_owner(base.var, store) is not None:
                        # (Its own residue is no proof: the condition leaves other threads.)
                        self._racing_read(base.var, read.span, store, (
                            "the store is unique by the residue of its index alone, which "
                            "leaves nothing to compare this read with"))
                    continue
                same = round_digits(store.position, read.position) if self.is_kernel \
                    else frozenset()
                reason = self.narrowed_reason(base, read, store, same, assume_more=False)
                if reason is not None:  # (its example is told of two stores)
                    reason = reason.replace(" both write ", " both reach ", 1)
                    self._racing_read(base.var, read.span, store, reason)

    def _residue_owner(self, var: ir.Var, store: CheckedStore) -> tuple | None:
        """The owner of ``store`` (positions, keys, pins: :meth:`note_store`) where the classic
        rule proved it by the residue of an index (:meth:`.classify.IndexClasses.owner_key`);
        else ``None``."""
        forms = self.store_forms.get(id(var), [])
        owners = self.store_owners.get(id(var), [])
        for f, owner in zip(forms, owners):
            if f is store.form:
                if owner is not None and any(isinstance(k, ResidueKey) for k in owner[1]):
                    return owner
                return None
        return None

    def _racing_read(self, var: ir.Var, span: SourceSpan, store: CheckedStore,
                     reason: str) -> None:
        hint = READ_RACE_HINT
        if id(span) in self.warp_reads:
            # (Harris' unrolled last warp, `if tid < 32: s[tid] += s[tid + 16]`.)
            hint = ("the threads that read it are one warp (thread_idx.x < 32): order the "
                    "read and the store with sync_warp() (read into a local, sync_warp(), "
                    "store, sync_warp() again before the next read; a sync_threads() under a "
                    "condition the block's other threads do not reach would hang), or use "
                    "`with unsafe():`")
        raise TranspileError(
            f"'{var.name}' is read here, and the store at line {store.span.line} may write "
            f"the same element from another thread of the block with no sync_threads() "
            f"between the two: {reason}", span, hint)

    def check_tickets(self) -> None:
        """Once the body is known: a store indexed by a ticket is race-free only if nothing
        but positive ``fetch_add`` changes the ticket's array in the kernel (R7): then every
        draw returns another value, as long as the counter does not wrap (2**32 draws of a u32
        counter, all but ``len(out)`` of them outside the array: an index error)."""
        for draw, span, base in self.ticket_stores:
            change = self.counter_changes.get(id(draw.array.var))
            if change is None:
                continue
            where, what = change
            counter = draw.array.var.name
            raise TranspileError(
                f"store into '{base.var.name}' through a value drawn from '{counter}' at line "
                f"{draw.span.line}: the values an atomic add returns are unique only while "
                f"nothing else changes '{counter}', but {what} does at line {where.line}", span,
                "keep the counter for the draws alone (reset it in another launch), or use "
                "`with unsafe():` if you know the draws cannot repeat")

    def check_reads(self) -> None:
        """Once the body is known: a thread may read a writable array only at the elements it
        owns (where it writes), or another thread may be writing what it reads."""
        for var, k, span, unsafe, parity, where, pins, form in self.mutable_loads:
            prev = self.store_keys.get(id(var))
            if prev is None or unsafe:
                continue
            racing = self.unordered_store(var, where)
            if racing is None:
                continue
            confined = self.store_parity.get(id(var), [])
            if parity and confined and parity & frozenset.intersection(*confined):
                continue  # the other parity than every store writes (see .parity)
            owners, owned = prev[0][0], prev[0][1]
            if id(var) in self.multi_owner:
                # Several stores: a thread reads its own element only at one of its indices,
                # and only where no other thread's store can write it: the pair proofs may
                # rest on conditions around the stores that the read is not under (`u = a[i]`
                # before `if i < half: a[i + half] = ...`, which thread i - half writes).
                if k in self.written_keys.get(id(var), ()):
                    meets = self._read_meets(var, form, where)
                    if meets is None:
                        continue
                    writer, reason = meets
                    raise TranspileError(
                        f"'{var.name}' is read here at an index this thread writes, but not "
                        f"under the conditions that keep the array's stores apart: the store "
                        f"at line {writer.line} may write the same element from another thread "
                        f"({reason})", span,
                        "read it under the same conditions as the stores (inside their `if`), "
                        "read from a separate array, or use `with unsafe():`")
            elif tuple(k[p] for p in owners) == owned and pins == prev[0][2]:
                if self._under_store_pins(var, form):
                    continue
                if self._read_meets(var, form, where, assume_more=False) is None or any(
                        s.narrowed for s in self.checked_stores.get(id(var), ())):
                    continue  # (a store a condition narrows is proven against the read below)
                raise TranspileError(
                    f"'{var.name}' is read here at the index it is written at ({racing}), but "
                    f"by threads that the condition around the store leaves out: what one "
                    f"thread writes there, others read", span,
                    "read it under the same condition as the store (inside its `if`), or "
                    "after a barrier that orders the two (sync_threads() for a shared array, "
                    "grid_sync() for a global one), or use `with unsafe():`")
            elif self._read_meets(var, form, where, assume_more=False) is None:
                # No store writes the element in another thread (the pivot row a[0, j] read
                # beside stores into a[i + 1, j]), as the pair proofs show of two stores; with
                # no new launch check (`k >= rows` would keep every thread from the stores).
                continue
            raise TranspileError(
                f"'{var.name}' is read here at another index than it is written at "
                f"({racing}): another thread may be writing that element", span,
                read_hint(var.name, span, racing, self.ctx.options.cooperative))
        required = required_coords(self.ctx.ndim, "global")
        for var, form, span, where in self.read_forms:
            for store in self.checked_stores.get(id(var), ()):
                if not store.narrowed or ordered_either(store.position, where, grid=True):
                    continue
                if isinstance(form, StoreForm) and isinstance(store.form, StoreForm):
                    outcome = self.prove(form, store.form, required, var.name)
                    if outcome.ok:
                        continue
                    reason = outcome.text
                else:
                    reason = form if isinstance(form, str) else str(store.form)
                which = (f"the store at line {store.form.line}"
                         if isinstance(store.form, StoreForm) else "a store")
                raise TranspileError(
                    f"'{var.name}' is read here, and {which} "
                    f"(by the threads a condition leaves) may write the same element from "
                    f"another thread: {reason}", span,
                    "read it under the same condition as the store, read from a separate "
                    "array, or use `with unsafe():`")

    def _read_meets(self, var: ir.Var, form: StoreForm | str, where: Position,
                    assume_more: bool = True) -> tuple[SourceSpan, str] | None:
        """The first store of ``var`` that no ``grid_sync()`` orders with a read of it
        (``form``) and that may write the read's element in another thread, with why; None where
        every such store is proven apart from the read, as a store of its own would be."""
        required = required_coords(self.ctx.ndim, "global")
        for store in self.checked_stores.get(id(var), ()):
            if ordered_either(store.position, where, grid=True):
                continue
            if not isinstance(form, StoreForm):
                return store.span, f"the read's index {form}"
            if not isinstance(store.form, StoreForm):
                return store.span, f"its index {store.form}"
            outcome = self.prove(form, store.form, required, var.name,
                                 assume_more=assume_more)
            if not outcome.ok:
                return store.span, outcome.text
        return None

    def check_argument(self, callee_uses: dict[str, set[str]], param: ir.Var, value: ir.Expr,
                       what: str, span: SourceSpan,
                       arrays: dict[str, ir.ArrayRef] | None = None) -> None:
        """A call passes ``value`` for the callee's parameter ``param``: where the callee writes
        memory through it (a ``UniqueId`` parameter), the value must be unique in what that
        memory needs, or be this device function's own ``UniqueId`` parameter.  ``span`` is the
        argument's, for the error; ``arrays``: the call's array arguments, by the callee's
        parameter names (a store into an array parameter needs what the argument's space
        needs: the block's threads told apart for a shared array)."""
        uses = callee_uses.get(param.name)
        if not uses:
            return
        spaces = set()
        for use in uses:
            if not use.startswith("array:"):
                spaces.add(use)
                continue
            arg = (arrays or {}).get(use[6:])
            if arg is None:
                spaces.add("global")
            elif arg.var.is_param and not self.is_kernel:
                spaces.add(f"array:{arg.var.name}")  # this function's caller knows
            else:
                spaces.add("global" if arg.ty.space == "global" else "shared")
        u = self.classify(value)
        coords = set(u.coords) if u is not None else set()
        for space in sorted(spaces):
            if space.startswith("array:"):
                params = {c for c in coords if c.startswith("param:")}
                if not params:
                    raise TranspileError(
                        f"{what} is a UniqueId used to write an array this function is passed, "
                        "but this value is not one of its own UniqueId parameters", span,
                        "pass a UniqueId parameter of this function, or a unique id such as "
                        "FlatLayout1D.uid() where the array is created")
                for c in params:
                    self.unique_param_uses.setdefault(c[6:], set()).add(space)
                continue
            need = required_coords(self.ctx.ndim, space) - pinned(self.bounds.facts)
            params = {c for c in coords if c.startswith("param:")}
            if not need <= coords and not (params and not self.is_kernel):
                raise TranspileError(
                    f"{what} is a UniqueId used to write memory, but this value is not "
                    "provably unique", span, "pass a unique id such as "
                    "FlatLayout1D.uid()")
            self.note_ticket_pins(required_coords(self.ctx.ndim, space), coords, span, None)
            for c in params:
                self.unique_param_uses.setdefault(c[6:], set()).add(space)


_XOR_ROUND_HINT = (
    "the stores pair elements by an XOR (`s[t]` and `s[t ^ j]`): in a block, that is proven "
    "race-free where one strict comparison `(t ^ j) > t` (or `<`) is around both stores and `j` "
    "takes one value between two barriers (a sync_threads() ends each round that changes it), "
    "so that of two partners only one writes; else use `with unsafe():`")
_SCALED_PROOF = ("unique: affine in the thread's index in every barrier interval, with the "
                 "values the block's loop variables take there (a scale by a loop variable)")


def _constant_keys(keys: tuple) -> bool:
    return all(isinstance(k, ConstKey) for k in keys)


def _space(var: ir.Var) -> str:
    """The memory space of the array ``var`` (only arrays are written through an index)."""
    assert isinstance(var.ty, ir.ArrayType), var.ty
    return var.ty.space
