"""Differential fuzzing of code generation: random kernels against the documented semantics.

Random, valid kernels (tools/fuzz/generator.py) go through the real pipeline — written to a module,
imported through the import hook, transpiled, compiled by NVRTC, launched — and their outputs are
compared with an independent reference written from docs/language.md (tools/fuzz/reference.py):
integers and booleans exactly, floats exactly where IEEE fixes the answer and within a derived
bound where the GPU may legitimately differ (``a*b + c`` contracted to an FMA, library math a few
ulps off).  See those modules for what is generated and how tolerances are derived.

CI (no GPU): the simulator against the reference for a bounded, seeded set of kernels (plain
seeds and a Hypothesis strategy, derandomised), every one of them also compiled to cubin for
sm_90 by NVRTC.
On a GPU (``pytest -m gpu``): the GPU against the simulator and the reference.  ``python3 -m
tools.fuzz_gpu --cases 3000`` runs thousands of cases and writes a JSON summary.

Known bugs the fuzzer found are excluded from the random kernels here (``Config.known_bugs``) and
pinned by tests/fuzz/test_fuzz_regressions.py instead.  ``GN_FUZZ_CASES`` scales the seeded runs
(120 by default, plus 30 straight-line and 25 Hypothesis kernels: about 100 s).
"""

from __future__ import annotations

import itertools
import math
import os
import random
import time
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tools import fuzz_gpu
from tools.fuzz import generator, host_cuda
from tools.fuzz.generator import Config, kernel_cases, random_kernel
from tools.fuzz.harness import Workspace, run_case
from tools.fuzz.reference import (
    HALF_TINY,
    evaluate,
    float_to_int,
    int_to_float,
    py_divmod,
    wrap,
)

CI_CONFIG = Config(max_statements=5, max_depth=3)
SEEDED_CASES = int(os.environ.get("GN_FUZZ_CASES", "120"))
HYPOTHESIS_CASES = int(os.environ.get("GN_FUZZ_HYPOTHESIS_CASES", "25"))
GPU_CASES = int(os.environ.get("GN_FUZZ_GPU_CASES", "40"))
FIRST_SEED = 1_000_000  # the tool starts at 0: CI and the GPU run cover different kernels


def _have_nvrtc() -> bool:
    try:
        from gpu_native.compiler import nvrtc_version

        nvrtc_version()
        return True
    except Exception:
        return False


# Every kernel generated in CI is also compiled to cubin for sm_90 (NVRTC runs on the CPU).
NVRTC = _have_nvrtc()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return Workspace(str(tmp_path_factory.mktemp("fuzz_modules")))


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    """Kernels compiled here go to a throwaway cache, not the user's."""
    from gpu_native.cache import clear_memory_cache

    previous = os.environ.get("GPU_NATIVE_CACHE_DIR")
    os.environ["GPU_NATIVE_CACHE_DIR"] = str(tmp_path_factory.mktemp("fuzz_cache"))
    clear_memory_cache()
    yield
    if previous is None:
        os.environ.pop("GPU_NATIVE_CACHE_DIR", None)
    else:
        os.environ["GPU_NATIVE_CACHE_DIR"] = previous
    clear_memory_cache()


def fuzz(workspace, seeds, backends, nvrtc=False, config=CI_CONFIG) -> list:
    results = [run_case(random_kernel(seed, config), workspace, backends=backends, nvrtc=nvrtc)
               for seed in seeds]
    failed = [r for r in results if not r.ok]
    exact = sum(r.exact for r in results)
    tolerant = sum(r.tolerant for r in results)
    skipped = sum(r.skipped for r in results)
    compiled = sum(r.compiled for r in results)
    print(f"\nfuzz {'+'.join(backends)}: {len(results)} kernels ({compiled} compiled by NVRTC), "
          f"{exact} outputs compared exactly, {tolerant} within a derived float bound, "
          f"{skipped} not comparable; {len(failed)} failed")
    assert not failed, "\n\n".join(r.report() for r in failed[:3])
    if nvrtc:
        assert compiled == len(results)
    return results


# ---- the reference itself ------------------------------------------------------------------------


class TestReference:
    """The reference is only as good as its own semantics: check them against Python."""

    def test_float_floor_division_and_modulo_are_pythons(self):
        rng = random.Random(7)
        specials = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, math.inf, -math.inf, 1e300, 5e-324]
        pairs = [(a, b) for a in specials for b in specials if b != 0]
        pairs += [(rng.uniform(-1e6, 1e6), rng.uniform(-100, 100)) for _ in range(2000)]
        for a, b in pairs:
            q, m = py_divmod(a, b, "f64")
            pq, pm = a // b, a % b
            for got, want in ((q, pq), (m, pm)):
                assert (math.isnan(got) and math.isnan(want)) or (
                    got == want and math.copysign(1, got) == math.copysign(1, want)), (a, b)
        # By zero, NumPy's values (the kernels'); Python raises.
        for a, b, want in ((5.0, 0.0, math.inf), (5.0, -0.0, -math.inf), (-5.0, 0.0, -math.inf)):
            q, m = py_divmod(a, b, "f64")
            assert q == want and math.isnan(m)
        q, m = py_divmod(0.0, 0.0, "f64")
        assert math.isnan(q) and math.isnan(m)

    def test_integers_convert_to_f32_with_one_rounding(self):
        rng = random.Random(8)
        values = [(1 << 24) + 1, (1 << 53) + (1 << 29) + 1, -(1 << 63), (1 << 64) - 1, 0, -5]
        values += [rng.randrange(-(1 << 63), 1 << 63) for _ in range(2000)]
        for v in values:
            got = int_to_float(v, "f32")
            below = Fraction(float(np.nextafter(got, np.float32(-np.inf))))
            above = Fraction(float(np.nextafter(got, np.float32(np.inf))))
            exact = Fraction(v)
            assert abs(Fraction(float(got)) - exact) <= min(abs(below - exact),
                                                            abs(above - exact)), v

    def test_float_to_int_truncates_saturates_and_maps_nan_to_zero(self):
        assert float_to_int(-2.9, "i32") == -2 and float_to_int(2.9, "u32") == 2
        assert float_to_int(-0.5, "u32") == 0 and float_to_int(math.nan, "i64") == 0
        assert float_to_int(1e300, "i32") == 2**31 - 1 and float_to_int(-math.inf, "i64") == -2**63
        assert float_to_int(2.0**63, "i64") == 2**63 - 1 and float_to_int(2.0**32, "u32") == 2**32 - 1

    def test_promotion_and_wrapping_rules_of_the_docs(self):
        assert generator.promote("i32", "u32") == "i64"  # mixed signedness: smallest signed type
        assert generator.promote("i64", "u32") == "i64"
        assert generator.promote("f32", "i64") == "f32" and generator.promote("f32", "f64") == "f64"
        assert generator.with_literal("f32", generator.Lit(2.5)) == "f32"
        assert generator.with_literal("i32", generator.Lit(2.5)) == "f64"
        assert wrap(2**31, "i32") == -2**31 and wrap(-1, "u32") == 2**32 - 1

    def test_an_underflowing_f64_product_may_fuse(self):
        """Seed 45065 on the H200: ``0.0 + 5e-324 * -1.7e-10`` is +0.0 rounded twice but -0.0 as
        one fma, so the sign of the zero it multiplies next is open.  The reference took the
        product for unfusable: its fusion potential, half the smallest subnormal, was 0.0 as a
        double."""
        assert all(bound > 0.0 for bound in HALF_TINY.values())
        kernel = random_kernel(45065, _flagged_config(45065))
        expected = evaluate(kernel, generator.random_inputs(kernel))
        product = expected.outputs["out_f64"][8, 1]
        assert product.v == 0.0 and not product.known

    def test_generation_is_deterministic(self):
        a = generator.kernel_source(random_kernel(12345))
        assert a == generator.kernel_source(random_kernel(12345))
        assert a != generator.kernel_source(random_kernel(12346))

    @pytest.mark.slow
    def test_every_operator_node_is_typed_by_the_promotion_rules(self):
        """The generator's claimed operand type of each operator is what the documented rules give
        its operands (seed 12743: a replaced zero divisor lost its cast, so `i32 // 3` was
        claimed to be i64 and the reference computed it without wrapping)."""
        checked = 0
        for seed, indexing in itertools.product(range(400), (False, True)):
            kernel = random_kernel(seed, Config(indexing=indexing))
            for node in generator.walk(kernel.body):
                if not isinstance(node, generator.Bin) or node.op == "/":
                    continue
                left, right = node.left.ty, node.right.ty
                if node.op in ("<<", ">>", "**"):
                    want = generator.arith(left) if left != "lit" else node.opty
                elif left == "lit" and right == "lit":
                    continue
                elif left == "lit":
                    want = generator.with_literal(right, node.left)
                elif right == "lit":
                    want = generator.with_literal(left, node.right)
                else:
                    want = generator.promote(left, right)
                assert node.opty == want, (seed, generator.Printer(kernel).expr(node))
                checked += 1
        assert checked > 2000

    @pytest.mark.slow
    def test_bug_patterns_are_generated(self):
        """Patterns of fixed bugs are regression coverage; those of open bugs only when asked."""
        tags: set[str] = set()
        for seed in range(300):
            kernel = random_kernel(seed)
            assert not set(kernel.known_bugs) & generator.OPEN_BUGS, kernel.known_bugs
            tags.update(kernel.known_bugs)
            tags.update(random_kernel(seed, Config(known_bugs=True)).known_bugs)
        assert set(generator.PATTERNS) <= tags, tags


# ---- the simulator against the reference (CI) ---------------------------------------------------


@pytest.mark.slow
def test_seeded_kernels_on_the_simulator(workspace):
    start = time.perf_counter()
    results = fuzz(workspace, range(FIRST_SEED, FIRST_SEED + SEEDED_CASES), ("sim",),
                   nvrtc=NVRTC)
    assert sum(r.exact for r in results) > 20 * len(results)  # the comparison is not vacuous
    assert time.perf_counter() - start < 600


@pytest.mark.slow
def test_straight_line_kernels_on_the_simulator(workspace):
    """Elementwise bodies take the 16-byte vector path of uid-only kernels on the GPU."""
    config = Config(max_statements=5, max_depth=3, straight=True)
    fuzz(workspace, range(FIRST_SEED, FIRST_SEED + SEEDED_CASES // 4), ("sim",), nvrtc=NVRTC,
         config=config)


INDEXING = Config(max_statements=5, max_depth=3, indexing=True)


BITS = Config(max_statements=5, max_depth=3, bits=True)


@pytest.mark.slow
def test_bit_intrinsic_kernels_on_the_simulator(workspace):
    """popc, clz, ctz, ffs, brev, byte_perm, the funnel shifts and bitcast, against the reference's
    reading of docs/language.md (and compiled by NVRTC)."""
    seeds = range(FIRST_SEED + 16000, FIRST_SEED + 16000 + SEEDED_CASES // 4)
    fuzz(workspace, seeds, ("sim",), nvrtc=NVRTC, config=BITS)
    kinds = set()
    for seed in seeds:
        for node in generator.walk(random_kernel(seed, BITS).body):
            if isinstance(node, generator.Bits):
                kinds.add(node.fn)
            elif isinstance(node, generator.Bitcast):
                kinds.add("bitcast")
    assert len(kinds) >= 8, kinds  # most of the intrinsics are exercised


TUPLES = Config(max_statements=5, max_depth=3, tuples=True)


@pytest.mark.slow
def test_tuple_kernels_on_the_simulator(workspace):
    """``q, r = divmod(a, b)`` (integers with zero divisors now and then, floats), ``x, y = e1,
    e2`` (every value computed before any assignment), loops over constant tuples (unrolled,
    their variable a weak literal in each copy) and ``enumerate(range(...))``, against the
    reference's reading of docs/language.md "Tuples" (and compiled by NVRTC)."""
    seeds = range(FIRST_SEED + 17000, FIRST_SEED + 17000 + SEEDED_CASES // 4)
    fuzz(workspace, seeds, ("sim",), nvrtc=NVRTC, config=TUPLES)
    kinds = set()
    for seed in seeds:
        for node in generator.walk(random_kernel(seed, TUPLES).body):
            if isinstance(node, (generator.TupleFor, generator.MultiAssign, generator.Item)):
                kinds.add(type(node).__name__)
            elif isinstance(node, generator.DivmodAssign):
                kinds.add("divmod " + ("float" if node.ty in generator.FLOATS else "int"))
            elif isinstance(node, generator.For) and node.counter:
                kinds.add("enumerate")
    assert len(kinds) == 6, kinds  # every construct is exercised


VECTORS = Config(max_statements=5, max_depth=3, vectors=True)


@pytest.mark.slow
def test_vector_kernels_on_the_simulator(workspace):
    """Vector locals of every type built from scalars, ``+ - *`` between vectors and with a
    scalar, unary minus, ``dot``, ``length_sq``, ``length``, component reads and component
    assignments, against the reference's reading of docs/language.md "Vectors" (and compiled
    by NVRTC)."""
    seeds = range(FIRST_SEED + 18000, FIRST_SEED + 18000 + SEEDED_CASES // 4)
    fuzz(workspace, seeds, ("sim",), nvrtc=NVRTC, config=VECTORS)
    kinds, types = set(), set()
    for seed in seeds:
        for node in generator.walk(random_kernel(seed, VECTORS).body):
            if isinstance(node, generator.VecFn):
                kinds.add(node.fn)
            elif isinstance(node, (generator.VecBin, generator.VecNeg, generator.Component,
                                   generator.ComponentAssign)):
                kinds.add(type(node).__name__)
            if isinstance(node, generator.VecNew):
                types.add(node.ty)
    assert len(kinds) == 7, kinds
    assert len(types) >= 8, types


COMPLEX = Config(max_statements=5, max_depth=3, complex=True)


@pytest.mark.slow
def test_complex_kernels_on_the_simulator(workspace):
    """complex64 and complex128 locals built from two reals, ``+ - * /`` (Smith's division, each
    step one rounding, as docs/language.md "Complex numbers" fixes them: compared exactly),
    with real operands promoted, unary minus, ``conjugate()``, ``.real``, ``.imag`` and ``abs``
    (and compiled by NVRTC)."""
    seeds = range(FIRST_SEED + 19000, FIRST_SEED + 19000 + SEEDED_CASES // 4)
    fuzz(workspace, seeds, ("sim",), nvrtc=NVRTC, config=COMPLEX)
    kinds = set()
    for seed in seeds:
        for node in generator.walk(random_kernel(seed, COMPLEX).body):
            if isinstance(node, (generator.CBin, generator.CUnary)):
                kinds.add(f"{node.op} {node.ty}")
            elif isinstance(node, generator.CReal):
                kinds.add(node.fn)
    assert len(kinds) >= 12, kinds


@pytest.mark.slow
def test_indexing_kernels_on_the_simulator(workspace):
    """Loads at computed indices (``a[i + 1]``, ``a[u32(i) - 2]``, ``a[x % len(a)]``, guarded or
    not): the simulator checks every access, even those the transpiler proved in range, so a wrong
    proof is an error here.  About half the kernels have lanes that index out of range and must
    raise KernelIndexError with one of those lanes' indices."""
    seeds = range(FIRST_SEED + 8000, FIRST_SEED + 8000 + SEEDED_CASES // 2)
    fuzz(workspace, seeds, ("sim",), nvrtc=NVRTC, config=INDEXING)
    failing = sum(bool(evaluate(k, generator.random_inputs(k)).index_errors)
                  for k in (random_kernel(seed, INDEXING) for seed in seeds))
    assert 0.2 * len(seeds) < failing < 0.8 * len(seeds), failing  # both kinds are exercised


def test_the_generated_source_of_indexing_kernels_indexes_at_computed_positions():
    text = "".join(generator.kernel_source(random_kernel(seed, INDEXING)) for seed in range(40))
    for form in ("[(i + ", "[(i - ", "[(u32(i) - ", "len(", ".shape[0]", "(0 <= "):
        assert form in text, form
    plain = "".join(generator.kernel_source(random_kernel(seed)) for seed in range(40))
    assert "len(" not in plain and ".shape[0]" not in plain  # off unless asked for


@pytest.mark.slow
@settings(max_examples=HYPOTHESIS_CASES, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(kernel=kernel_cases(CI_CONFIG))
def test_hypothesis_kernels_on_the_simulator(workspace, kernel):
    result = run_case(kernel, workspace, backends=("sim",), nvrtc=NVRTC)
    assert result.ok, result.report()


# ---- the generated CUDA C++ itself, compiled for the CPU (no GPU needed) -------------------------

HOST_CASES = int(os.environ.get("GN_FUZZ_HOST_CASES", "30"))
needs_cxx = pytest.mark.skipif(host_cuda.compiler() is None, reason="needs a host C++ compiler")


@pytest.mark.slow
@needs_cxx
def test_generated_cuda_compiled_for_the_host_matches_the_reference(workspace):
    """The emitter's output, built with the host compiler and UBSan, against the reference: a
    wrong emitter shows up here without a GPU (and a GPU-only mismatch is then the device
    compiler's)."""
    fuzz(workspace, range(FIRST_SEED + 5000, FIRST_SEED + 5000 + HOST_CASES), ("host",),
         config=Config(max_statements=6))
    fuzz(workspace, range(FIRST_SEED + 6000, FIRST_SEED + 6000 + HOST_CASES // 3), ("host",),
         config=Config(max_statements=6, straight=True))


@pytest.mark.slow
@needs_cxx
def test_indexing_kernels_compiled_for_the_host_raise_where_the_reference_does(workspace):
    """A bounds check the transpiler dropped wrongly reads past the array here and raises
    nothing, where the reference expects a KernelIndexError: both entry points."""
    fuzz(workspace, range(FIRST_SEED + 9000, FIRST_SEED + 9000 + HOST_CASES), ("host",),
         config=INDEXING)
    fuzz(workspace, range(FIRST_SEED + 9500, FIRST_SEED + 9500 + HOST_CASES), ("host32",),
         config=INDEXING)


@pytest.mark.slow
@needs_cxx
def test_the_32_bit_index_entry_point_compiled_for_the_host_matches_the_reference(workspace):
    """``<symbol>_i32`` (gpu_native.emit.index32) on the same kinds of kernels: UBSan reports a
    32-bit overflow the range analysis let through as undefined behaviour."""
    fuzz(workspace, range(FIRST_SEED + 7000, FIRST_SEED + 7000 + HOST_CASES), ("host32",),
         config=Config(max_statements=6))


def _flagged_config(seed: int) -> Config:
    """The generator settings tools/fuzz_gpu.py ran ``seed`` with."""
    import argparse

    # Seeds of the run that loaded at computed indices in every non-straight kernel.
    indexing_every = 1 if seed in (70643,) else 0
    args = argparse.Namespace(known_bugs=False, straight_every=4, max_statements=6,
                              max_depth=4, indexing_every=indexing_every)
    return fuzz_gpu.config_for(seed, args)


@pytest.mark.slow
@needs_cxx
@pytest.mark.parametrize("seed", [4516, 4039, 2678, 568, 12743, 12265, 11141, 23063, 12127, 12273,
                                  18127, 24530, 2508, 3534, 45065, 47326, 48495, 70643])
def test_fuzz_seeds_flagged_on_the_h200(workspace, seed):
    """Seeds the H200 runs flagged.  The GPU was right where the generator typed ``u32 // 1`` as
    i64 (4516, 2678), dropped the cast of a zero divisor it replaced (12743) or left a divisor of
    literals alone that folds to zero, a compile error (``abs(u32(0))``, 23063), and where the
    reference trusted the sign of a NaN in copysign (4039, 568), NumPy's ``x ** 0.5`` (12265) or
    the sign of a zero from an f64 product that fma may round differently (45065); the emitter
    was wrong in 11141 (a float ``x ** 0`` dropped x and its zero-divisor check).  12127, 12273,
    18127, 24530, 2508, 3534, 47326, 48495 and 70643 were device compiler bugs (the GPU test
    below replays them)."""
    kernel = random_kernel(seed, _flagged_config(seed))
    result = run_case(kernel, workspace, backends=("host", "sim"))
    assert result.ok, result.report()


# ---- the GPU against the simulator and the reference ---------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("seed", [12127, 12273, 18127, 24530, 2508, 3534, 45065, 47326,
                                  48495, 70643])
def test_gpu_replays_the_seeds_the_h200_flagged(workspace, cuda_backend, seed):
    """Seeds the H200 got wrong and the simulator and host build got right: a 32-bit wrap NVVM
    dropped in the `_uids` loop (12127, 12273, 18127), a NaN compare ptxas folded once NVVM
    had folded its constant (24530) and its mirror image (`2e18 > -v` for `v = abs(x)`, 47326),
    a product and its scale by 1/8 rounded once (2508), a VIMNMX predicate read the wrong way
    round (3534), an arithmetic shift of `x | C` taken to be non-negative (48495) and a
    quotient by -0.0 taken to be non-negative (70643); see tests/emit/test_nvrtc_bugs.py.  In 45065
    the GPU was right (an fma's -0.0) and the reference wrong."""
    kernel = random_kernel(seed, _flagged_config(seed))
    result = run_case(kernel, workspace, backends=("cuda", "sim"))
    assert result.ok, result.report()


@pytest.mark.gpu
def test_gpu_matches_the_simulator_and_the_reference(workspace, cuda_backend):
    fuzz(workspace, range(FIRST_SEED, FIRST_SEED + GPU_CASES), ("cuda", "sim"),
         config=Config(max_statements=6))


@pytest.mark.gpu
def test_gpu_indexing_kernels(workspace, cuda_backend):
    fuzz(workspace, range(FIRST_SEED + 8000, FIRST_SEED + 8000 + GPU_CASES), ("cuda", "sim"),
         config=Config(max_statements=6, indexing=True))


@pytest.mark.gpu
def test_gpu_straight_line_kernels(workspace, cuda_backend):
    config = Config(max_statements=6, straight=True)
    fuzz(workspace, range(FIRST_SEED, FIRST_SEED + GPU_CASES // 2), ("cuda", "sim"),
         config=config)
