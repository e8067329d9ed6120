"""The checker's structure: named passes run by a driver, typed facts, typed launch checks.

What the checker decides is tested by its outputs elsewhere (tests/test_bounds_proofs.py,
tests/test_transpile_errors.py, the goldens); these tests pin what the structure promises: a
failure of our own code names the pass it happened in, the facts answer for themselves, and the
launcher's records come straight from the checker.
"""

from __future__ import annotations

import textwrap

import pytest

from gpu_native import ir
from gpu_native.check import passes
from gpu_native.check.bounds import BoundsProofs
from gpu_native.check.facts import (
    CastKey,
    ConstKey,
    Less,
    LoadKey,
    NonNegative,
    NotEqual,
    OpKey,
    Pinned,
    ShapeKey,
    VarKey,
    key,
    kill,
    pinned,
    shows_at_least,
    shows_below,
    stable,
    upper_bound,
)
from gpu_native.check.tail import GridTail
from gpu_native.errors import InternalError, SourceSpan, TranspileError
from gpu_native.ircodec import decode_kernel, encode_kernel
from gpu_native.rewrite import transpile_module
from gpu_native.spec import IndexFits, LaunchAssert

HEADER = """\
from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASlice, CUDASliceMut, FlatLayout1D,
                        f32, i32, i64, block_dim, block_idx, thread_idx)
"""

SAXPY = """
@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = a[i] * 2.0
"""

WITH_DEVICE = """
@gpu_device
def twice(a: CUDASlice[f32], i: i64) -> f32:
    return a[i] * 2.0

@gpu_kernel(Kernel1D)
def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = twice(a, i)
"""


def transpile(body: str):
    return transpile_module(HEADER + textwrap.dedent(body), "passes_case.py", "passes_case")


class TestDriver:
    def test_the_passes_run_in_order_with_their_names(self):
        assert [p.name for p in passes.KERNEL_PASSES] == [
            "resolve", "type", "unique-write proofs", "no-wrap", "grid tail", "traits"]
        assert [p.name for p in passes.DEVICE_FUNCTION_PASSES] == [
            "resolve", "type", "unique-write proofs", "no-wrap"]

    def test_every_pass_documents_what_it_reads_and_writes(self):
        for p in passes.KERNEL_PASSES:
            doc = type(p).__doc__ or ""
            assert "Reads" in doc and "writes" in doc, type(p).__name__

    def test_a_failure_in_a_pass_names_the_pass_and_the_function(self, monkeypatch):
        def broken(self, body, traits, span):
            raise KeyError("boom")

        monkeypatch.setattr(GridTail, "apply", broken)
        with pytest.raises(InternalError) as info:
            transpile(SAXPY)
        text = str(info.value)
        assert "checker's 'grid tail' pass" in text, text
        assert "kernel function 'k' at passes_case.py:" in text, text
        assert "KeyError: 'boom'" in text and "bug in gpu_native" in text, text
        assert info.value.stage == "grid tail"
        assert isinstance(info.value.__cause__, KeyError)

    def test_a_failure_inside_the_type_walk_names_the_proof_that_failed(self, monkeypatch):
        def broken(self, idx, bound_key, static):
            raise ZeroDivisionError("proof")

        monkeypatch.setattr(BoundsProofs, "below", broken)
        with pytest.raises(InternalError) as info:
            transpile(SAXPY)
        text = str(info.value)
        assert "'bounds proofs' (run within its 'type' pass)" in text, text
        assert info.value.stage == "bounds proofs"

    def test_a_failure_in_a_device_function_names_it_once(self, monkeypatch):
        def broken(self, unit):
            raise RuntimeError("reads")

        monkeypatch.setattr(passes.UniqueWritesPass, "run", broken)
        with pytest.raises(InternalError) as info:
            transpile(WITH_DEVICE)
        text = str(info.value)
        assert "'unique-write proofs' pass, checking device function 'twice'" in text, text
        assert "kernel function" not in text

    def test_errors_about_the_users_code_pass_through_unchanged(self):
        with pytest.raises(TranspileError) as info:
            transpile("""
            @gpu_kernel(Kernel1D)
            def k(a: CUDASliceMut[f32]):
                a[0] = 1.0
            """)
        assert "not provably unique" in str(info.value)
        assert not isinstance(info.value, InternalError)


SPAN = SourceSpan("f.py", 1, 0, 1)


def local(name: str, ty=ir.I64) -> ir.Local:
    return ir.Local(SPAN, ty, ir.Var(name, ty, SPAN))


class TestFacts:
    def test_keys_look_through_widening_casts_not_narrowing_ones(self):
        i, j = local("i", ir.I32), local("j")
        assert key(ir.Cast(SPAN, ir.I64, i)) == key(i) == VarKey(i.var)
        narrowed = key(ir.Cast(SPAN, ir.I32, j))
        assert narrowed == CastKey("i32", VarKey(j.var)) != key(j)
        assert list(narrowed.variables()) == [j.var]

    def test_a_local_assigned_once_stands_for_its_value(self):
        n = local("n")
        shape = ir.Shape(SPAN, ir.I64, ir.ArrayRef(SPAN, ir.ArrayType(ir.F32, 1, False),
                                                   ir.Var("a", ir.ArrayType(ir.F32, 1, False),
                                                          SPAN, True)), 0)
        assert key(n, lambda var: shape if var is n.var else None) == ShapeKey(shape.array.var, 0)

    def test_less_shows_below_its_bound_and_any_larger_constant(self):
        i = VarKey(local("i").var)
        facts = frozenset({Less(i, ConstKey(8))})
        assert shows_below(facts, i, ConstKey(8), static=True)
        assert shows_below(facts, i, ConstKey(9), static=True)
        assert not shows_below(facts, i, ConstKey(7), static=True)
        assert upper_bound(facts, i) == 7
        assert upper_bound(facts, VarKey(local("j").var)) is None

    def test_a_constant_below_a_value_is_a_lower_bound(self):
        i = VarKey(local("i").var)
        facts = frozenset({Less(ConstKey(0), i)})
        assert shows_at_least(facts, i, 1)
        assert not shows_at_least(facts, i, 2)

    def test_assigning_a_variable_kills_the_facts_about_it_and_only_those(self):
        i, j = local("i").var, local("j").var
        about_i = Less(OpKey("+", VarKey(i), ConstKey(1)), VarKey(j))
        about_j = NonNegative(VarKey(j))
        other = NotEqual(ConstKey(1), ConstKey(2))
        facts = frozenset({about_i, about_j, other, Pinned("tid0")})
        assert kill(facts, {i}) == {about_j, other, Pinned("tid0")}
        assert about_i.variables() == {i, j}

    def test_facts_about_memory_are_not_stable(self):
        a = ir.Var("a", ir.ArrayType(ir.I64, 1, False), SPAN, True)
        loaded = LoadKey(a, (ConstKey(0),))
        assert stable({Less(loaded, ConstKey(4)), NonNegative(ConstKey(3))}) == {
            NonNegative(ConstKey(3))}

    def test_pins_are_collected(self):
        assert pinned({Pinned("tid0"), NonNegative(ConstKey(0)), Pinned("bid0")}) == {
            "tid0", "bid0"}


class TestLaunchChecks:
    BODY = """
    @gpu_kernel(Kernel1D)
    def k(a: CUDASlice[f32], out: CUDASliceMut[f32]):
        assert block_dim.x == 128
        j = block_idx.x * 128 + thread_idx.x
        out[j] = a[j]
    """

    def test_the_checker_makes_the_records_the_launcher_reads(self):
        module = transpile(self.BODY)
        kernel = module.checked[0].specializations[0]
        assert {type(c) for c in kernel.launch_checks} == {LaunchAssert, IndexFits}
        assert module.kernels[0].variants[0].launch_checks == kernel.launch_checks

    def test_they_survive_the_ir_encoding(self):
        kernel = transpile(self.BODY).checked[0].specializations[0]
        assert decode_kernel(encode_kernel(kernel)).launch_checks == kernel.launch_checks
