"""Random numbers in kernels: philox(seed, subsequence, offset) and its draws.

The generator is Philox4x32-10; gpu_native/simulator/philox.py is its NumPy implementation,
which the simulator runs and which the GPU must match bit for bit (the CUDA prelude computes
the same integer and round-to-nearest floating-point steps).  So the tests check:

* the NumPy implementation against Random123's published known-answer vectors (kat_vectors);
* every kind of draw of a kernel, on each backend, byte for byte against that implementation
  (on the GPU too, where the GPU-marked runs of the ``backend`` fixture check exactly this);
* the generated CUDA C++ compiled for the CPU (tools/fuzz/host_cuda.py) against it, so the C++ is
  checked in CI although no GPU runs there;
* the statistics a user would check, with thresholds derived from the sample size: each
  statistic is tested at |z| < 5.5 (two-sided probability 3.8e-8 for a correct generator) or
  a chi-square tail of 4e-8, and each run makes fewer than 25 such tests, so a correct
  generator fails one with probability below 1e-6.  The seeds are fixed, so the tests are
  deterministic; the GPU runs draw 16 times as many numbers.
"""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gpu_native as gn
from gpu_native.errors import TranspileError
from gpu_native.rewrite import rewrite_module, transpile_module
from gpu_native.simulator import philox as P

ROOT = Path(__file__).resolve().parents[2]
Z = 5.5
ALPHA = 4e-8


@pytest.fixture(scope="module")
def kr():
    from tests.helpers import kernels_random

    return kernels_random


def launch(kernel, threads, block=128):
    return kernel.launch(gn.GridDim1D(-(-threads // block)), gn.BlockDim1D(block), 0,
                         gn.DEFAULT_STREAM)


# ---- the NumPy implementation against Random123's known answers ------------------------------

# Random123's kat_vectors: name, rounds, counter (4 words), key (2 words), expected (4 words).
KAT = """
philox4x32 7 00000000 00000000 00000000 00000000 00000000 00000000 5f6fb709 0d893f64 4f121f81 4f730a48
philox4x32 7 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff 5207ddc2 45165e59 4d8ee751 8c52f662
philox4x32 7 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0 4dfccaba 190a87f0 c47362ba b6b5242a
philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000 6627e8d5 e169c58d bc57ac4c 9b00dbd8
philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff 408f276d 41c83b0e a20bc7c6 6d5451fd
philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0 d16cfe09 94fdcceb 5001e420 24126ea1
"""
VECTORS = [(int(r), [int(w, 16) for w in words[:4]], [int(w, 16) for w in words[4:6]],
            [int(w, 16) for w in words[6:]])
           for _, r, *words in (line.split() for line in KAT.strip().splitlines())]


@pytest.mark.parametrize("rounds, counter, key, expected", VECTORS)
def test_philox4x32_known_answers(rounds, counter, key, expected):
    assert [int(w) for w in P.philox4x32(*counter, *key, rounds=rounds)] == expected


def test_a_block_is_numbered_as_curand_numbers_it():
    # curand_init(seed, subsequence, 4 * n) puts n in counter words 0-1, the subsequence in
    # words 2-3 and the seed in the key (low words first).
    seed, sub, n = 0x299F31D0A4093822, 0x0370734413198A2E, 0x85A308D3243F6A88
    assert [int(w) for w in P.block(seed, sub, n)] == VECTORS[5][3]


def kat_params():
    rows = []
    for rounds, counter, key, _ in VECTORS:
        if rounds == 10:
            rows.append([key[0] | key[1] << 32, counter[2] | counter[3] << 32,
                         counter[0] | counter[1] << 32])
    return np.array(rows, dtype=np.uint64)


def test_first_draws_are_the_known_answers(backend, kr):
    # A kernel sees word x0 through random_u32() and x1 through uniform(f64), whose 53 bits are
    # x1 and the top 21 bits of x0.  (x2 and x3 enter the normals, which the stream tests below
    # compare with the reference bit for bit.)
    params = kat_params()
    words, pairs = gn.zeros(len(params), gn.u32), gn.zeros(len(params), gn.f64)
    launch(kr.first_words, len(params))(gn.to_device(params), words, pairs)
    k = (pairs.to_host() * 2.0 ** 53).astype(np.uint64)
    expected = np.array([v[3] for v in VECTORS if v[0] == 10], dtype=np.uint64)
    assert (words.to_host() == expected[:, 0]).all()
    assert ((k >> np.uint64(21)) == expected[:, 1]).all()
    assert ((k & np.uint64(2 ** 21 - 1)) == expected[:, 0] >> np.uint64(11)).all()


# ---- every draw, bit for bit, on each backend -------------------------------------------------

def reference_streams(seed: int, offset: int, bound: int, threads: int, draws: int):
    """What kernels_random.streams must write: thread i draws from philox(seed, i, offset)."""
    sub = np.arange(threads, dtype=np.uint64)[:, None]
    counter = np.uint64(offset) + np.arange(draws, dtype=np.uint64)[None, :]
    out = [P.random_u32(seed, sub, counter)[0], P.uniform_f32(seed, sub, counter)[0],
           P.uniform_f64(seed, sub, counter)[0], P.normal_f32(seed, sub, counter)[0],
           P.normal_f64(seed, sub, counter)[0]]
    ints = np.zeros((threads, draws), dtype=np.int64)
    counter = np.full(threads, np.uint64(offset))
    for k in range(draws):  # randint may take more than one block: one draw after another
        value, counter = P.randint(seed, sub[:, 0], counter, bound)
        ints[:, k] = value
    return [*out, ints]


def run_streams(kr, seed, offset, bound, threads):
    outs = [gn.empty((threads, kr.DRAWS), t) for t in (gn.u32, gn.f32, gn.f64, gn.f32, gn.f64,
                                                        gn.i64)]
    launch(kr.streams, threads)(seed, offset, *outs, bound)
    return [o.to_host() for o in outs]


# (seed, offset, randint bound): the counter wraps past 2**64 in the last one, and 2**31 + 1
# rejects almost half of the words.
STREAM_CASES = [(0, 0, 10), (7, 3, 2 ** 31 + 1), (2 ** 64 - 1, 2 ** 64 - 5, 4294967295)]


@pytest.mark.parametrize("seed, offset, bound", STREAM_CASES)
def test_every_draw_is_the_reference_bit_for_bit(backend, kr, seed, offset, bound):
    threads = 300
    got = run_streams(kr, seed, offset, bound, threads)
    want = reference_streams(seed, offset, bound, threads, kr.DRAWS)
    for name, g, w in zip(("random_u32", "uniform f32", "uniform f64", "normal f32",
                           "normal f64", "randint"), got, want):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes(), name


needs_cxx = pytest.mark.skipif(
    __import__("tools.fuzz.host_cuda", fromlist=["compiler"]).compiler() is None, reason="needs a host C++ compiler")


@pytest.mark.slow
@needs_cxx
@pytest.mark.parametrize("seed, offset, bound", STREAM_CASES)
def test_the_generated_cuda_is_the_reference_on_the_host(kr, seed, offset, bound):
    # The prelude's gn_philox_* as the GPU runs them, compiled for the CPU: the same bytes.
    from tools.fuzz import host_cuda

    source = (ROOT / "tests" / "helpers" / "kernels_random.py").read_text()
    module = transpile_module(source, str(ROOT / "tests" / "helpers" / "kernels_random.py"),
                              "kernels_random")
    variant = next(k for k in module.kernels if k.name == "host_streams").variants[0]
    threads = 64
    keys = np.array([seed, offset, bound], dtype=np.uint64)
    outs = [np.zeros((threads, kr.DRAWS), t) for t in (np.uint32, np.float32, np.float64,
                                                       np.float32, np.float64, np.uint32)]
    exited, _, reports = host_cuda.launch(variant.cuda, variant.symbol, [keys, *outs], 1,
                                          threads, sanitize=False)
    assert exited == 0 and not reports
    want = reference_streams(seed, offset, bound, threads, kr.DRAWS)
    want[5] = want[5].astype(np.uint32)
    for g, w in zip(outs, want):
        assert g.tobytes() == w.tobytes()


def test_fast_math_draws_the_same_numbers(backend, kr):
    threads = 1000
    outs = [gn.empty(threads, t) for t in (gn.f32, gn.f32, gn.f64)]
    launch(kr.fast_draws, threads)(31, *outs)
    sub = np.arange(threads, dtype=np.uint64)
    want = [P.uniform_f32(31, sub, 0)[0], P.normal_f32(31, sub, 0)[0],
            P.normal_f64(31, sub, 0)[0]]
    for got, w in zip(outs, want):
        assert got.to_host().tobytes() == w.tobytes()


# ---- four numbers per block: uniform4() and normal4() ---------------------------------------

def reference_streams4(seed: int, offset: int, threads: int, draws: int):
    """What kernels_random.streams4 writes in uniform4 and normal4: (threads, draws, 4)."""
    sub = np.arange(threads, dtype=np.uint64)[:, None]
    counter = np.uint64(offset) + np.arange(draws, dtype=np.uint64)[None, :]
    return [np.stack(fn(seed, sub, counter)[0], axis=-1) for fn in (P.uniform4, P.normal4)]


def run_streams4(kr, seed, offset, threads):
    outs = [gn.empty((threads, kr.DRAWS), gn.vec4f), gn.empty((threads, kr.DRAWS), gn.vec4f),
            gn.empty((threads, 2), gn.u32)]
    for out in outs[:2]:
        out.fill(np.nan)  # poison
    launch(kr.streams4, threads)(seed, offset, *outs)
    return [o.to_host() for o in outs]


@pytest.mark.parametrize("seed, offset", [case[:2] for case in STREAM_CASES])
def test_four_number_draws_are_the_reference_bit_for_bit(backend, kr, seed, offset):
    threads = 300
    uniform4, normal4, after = run_streams4(kr, seed, offset, threads)
    want = reference_streams4(seed, offset, threads, kr.DRAWS)
    for name, g, w in zip(("uniform4", "normal4"), (uniform4, normal4), want):
        assert g.dtype == w.dtype == np.float32 and g.shape == w.shape, name
        assert g.tobytes() == w.tobytes(), name
    # Each draw takes one block: DRAWS draws on, the next word is that block's x0.
    sub = np.arange(threads, dtype=np.uint64)
    nxt = P.block(seed, sub, (offset + kr.DRAWS) % 2 ** 64)[0]
    assert (after == nxt[:, None]).all()


def test_four_number_draws_use_every_word_of_the_block(sim, kr):
    # uniform4 is uniform()'s conversion of x0, x1, x2, x3; normal4 pairs (x0, x1), (x2, x3):
    # from the words directly, in float64 with the math module, within a few f32 ulps.
    threads = 64
    uniform4, normal4, _ = run_streams4(kr, 5, 0, threads)
    words = np.stack(P.block(5, np.arange(threads, dtype=np.uint64)[:, None],
                             np.arange(kr.DRAWS, dtype=np.uint64)[None, :]), axis=-1)
    assert (uniform4 == (words >> 8).astype(np.float64) / 2 ** 24).all()
    first = P.uniform_f32(5, np.arange(threads, dtype=np.uint64), 0)[0]
    assert (uniform4[:, 0, 0] == first).all()
    u1 = (words[..., 0::2].astype(np.float64) + 1) / 2 ** 32
    u2 = words[..., 1::2].astype(np.float64) / 2 ** 32
    r = np.sqrt(-2 * np.log(u1))
    want = np.stack([r[..., 0] * np.cos(2 * np.pi * u2[..., 0]),
                     r[..., 0] * np.sin(2 * np.pi * u2[..., 0]),
                     r[..., 1] * np.cos(2 * np.pi * u2[..., 1]),
                     r[..., 1] * np.sin(2 * np.pi * u2[..., 1])], axis=-1)
    np.testing.assert_allclose(normal4, want, rtol=2e-7, atol=1e-6)


@pytest.mark.slow
@needs_cxx
@pytest.mark.parametrize("seed, offset", [case[:2] for case in STREAM_CASES])
def test_the_generated_cuda_draws_four_numbers_as_the_reference_on_the_host(kr, seed, offset):
    from tools.fuzz import host_cuda

    source = (ROOT / "tests" / "helpers" / "kernels_random.py").read_text()
    module = transpile_module(source, str(ROOT / "tests" / "helpers" / "kernels_random.py"),
                              "kernels_random")
    variant = next(k for k in module.kernels if k.name == "host_streams4").variants[0]
    threads = 64
    keys = np.array([seed, offset], dtype=np.uint64)
    outs = [np.full((threads, kr.DRAWS, 4), np.nan, np.float32) for _ in range(2)]
    # An array of vec4f travels as one 16-byte record per vector, as the launcher passes it.
    records = [o.view(np.dtype((np.void, 16))).reshape(threads, kr.DRAWS) for o in outs]
    exited, _, reports = host_cuda.launch(variant.cuda, variant.symbol, [keys, *records], 1,
                                          threads, sanitize=False)
    assert exited == 0 and not reports
    for g, w in zip(outs, reference_streams4(seed, offset, threads, kr.DRAWS)):
        assert g.tobytes() == w.tobytes()


def test_fast_math_draws_the_same_four_numbers(backend, kr):
    threads = 1000
    outs = [gn.empty(threads, gn.vec4f) for _ in range(2)]
    launch(kr.fast_draws4, threads)(31, *outs)
    sub = np.arange(threads, dtype=np.uint64)
    for got, fn in zip(outs, (P.uniform4, P.normal4)):
        assert got.to_host().tobytes() == np.stack(fn(31, sub, 0)[0], axis=-1).tobytes()


def test_the_prelude_and_the_simulator_share_their_constants():
    prelude = (ROOT / "gpu_native" / "include" / "gpu_native" / "prelude.cuh").read_text()
    section = prelude[prelude.index("random numbers: Philox4x32-10"):]
    written = set(re.findall(r"-?0x[0-9a-f]\.[0-9a-f]+p[-+]\d+", section))
    assert written == set(P.CONSTANTS.values())


def test_draws_under_divergence_and_re_seeding(backend, kr):
    threads = 200
    seed = 12345
    out, hits = gn.zeros(threads, gn.f32), gn.zeros(threads, gn.i64)
    launch(kr.mixed, threads)(seed, out, hits)
    expected_out = np.zeros(threads, np.float32)
    expected_hits = np.zeros(threads, np.int64)
    f32 = np.float32
    for i in range(threads):
        ctr = 0

        def draw(fn, *args, key=seed, sub=i):
            nonlocal ctr
            value, ctr = fn(key, sub, ctr, *args)
            return value

        if i % 2 == 0:
            x = draw(P.uniform_f32)
        else:
            x = draw(P.normal_f32) if i % 3 == 0 else -draw(P.uniform_f32)
        y = draw(P.uniform_f32) if x > 0.5 else f32(draw(P.randint, 10))
        word = draw(P.random_u32)
        ctr = 5
        expected_out[i] = f32(f32(x + y) + draw(P.uniform_f32, key=seed + 1, sub=word))
        ctr = 0
        a, b = draw(P.uniform_f32), draw(P.uniform_f32)
        expected_hits[i] = int(f32(a * a) + f32(b * b) < 1)
    np.testing.assert_array_equal(out.to_host(), expected_out)
    got_hits = hits.to_host()
    # x*x + y*y may be one fused multiply-add on the GPU (docs/language.md, Floating point).
    disagree = np.flatnonzero(got_hits != expected_hits)
    assert len(disagree) == 0 or backend == "cuda", disagree


def test_equal_generators_repeat_and_others_differ(backend, kr):
    threads = 256
    a = run_streams(kr, 99, 0, 10, threads)
    again = run_streams(kr, 99, 0, 10, threads)
    for x, y in zip(a, again):
        assert x.tobytes() == y.tobytes()
    # An offset skips that many draws of each thread's stream.
    shifted = run_streams(kr, 99, 3, 10, threads)
    for x, y in zip(a, shifted):
        assert x[:, 3:].tobytes() == y[:, :-3].tobytes()
    # Another seed, also one differing only in its high word: other streams.  Two streams of
    # 2048 words that were independent would share a word at a place with probability 2**-21.
    for seed in (100, 99 + 2 ** 32):
        other = run_streams(kr, seed, 0, 10, threads)[0]
        assert np.count_nonzero(other == a[0]) <= 1
    # Neighbouring subsequences are not shifted copies of each other.
    words = a[0]
    assert np.count_nonzero(words[1:, :-1] == words[:-1, 1:]) <= 1
    assert np.count_nonzero(words[1:] == words[:-1]) <= 1


def test_subsequences_differ_in_their_high_word(backend, kr):
    params = np.array([[1, 5, 0], [1, 5 + 2 ** 32, 0], [1, 5 + 2 ** 63, 0]], dtype=np.uint64)
    words, pairs = gn.zeros(3, gn.u32), gn.zeros(3, gn.f64)
    launch(kr.first_words, 3)(gn.to_device(params), words, pairs)
    assert len(set(pairs.to_host().tolist())) == 3
    assert words.to_host().tolist() == [int(P.block(1, s, 0)[0]) for s in params[:, 1]]


# ---- statistics -----------------------------------------------------------------------------

def chi2_sf(x: float, df: int) -> float:
    """P(X > x) for X ~ chi-square(df): the regularized upper incomplete gamma Q(df/2, x/2)."""
    a, x = df / 2.0, x / 2.0
    front = math.exp(-x + a * math.log(x) - math.lgamma(a))
    if x < a + 1:  # the series of P(a, x)
        term = total = 1.0 / a
        ap = a
        while abs(term) > abs(total) * 1e-16:
            ap += 1
            term *= x / ap
            total += term
        return 1.0 - front * total
    tiny = 1e-300  # Lentz's continued fraction of Q(a, x)
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-16:
            break
    return front * h


def chi2_limit(df: int, alpha: float = ALPHA) -> float:
    lo, hi = float(df), df + 60.0 * math.sqrt(df) + 200.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if chi2_sf(mid, df) > alpha else (lo, mid)
    return hi


def test_the_chi_square_tail_is_right():
    # Known values: the 0.999 quantile of chi-square(2) is -2 ln(0.001); chi-square(1) is Z**2.
    assert chi2_limit(2, 1e-3) == pytest.approx(-2 * math.log(1e-3), rel=1e-9)
    assert chi2_sf(Z * Z, 1) == pytest.approx(math.erfc(Z / math.sqrt(2)), rel=1e-9)
    assert chi2_sf(63.0, 63) == pytest.approx(0.4757, abs=1e-3)


def assert_moments(x: np.ndarray, mu2: float, mu3: float, mu4: float, mu6: float, mean: float):
    """The sample mean, variance and third central moment, each within Z standard errors
    (the asymptotic variances of the sample moments, from the distribution's moments)."""
    x = x.astype(np.float64).ravel()
    n = x.size
    d = x - mean
    m1, m2, m3 = d.mean(), (d * d).mean(), (d * d * d).mean()
    assert abs(m1) < Z * math.sqrt(mu2 / n), m1
    assert abs(m2 - mu2) < Z * math.sqrt((mu4 - mu2 * mu2) / n), m2
    se3 = math.sqrt((mu6 - mu3 * mu3 - 6 * mu2 * mu4 + 9 * mu2 ** 3) / n)
    assert abs(m3 - mu3) < Z * se3, m3


def assert_uniform_bins(counts: np.ndarray):
    n, k = counts.sum(), len(counts)
    expected = n / k
    statistic = float(((counts - expected) ** 2 / expected).sum())
    assert statistic < chi2_limit(k - 1), (statistic, chi2_limit(k - 1))


def assert_uncorrelated(a: np.ndarray, b: np.ndarray):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    r = np.corrcoef(a, b)[0, 1]
    assert abs(r) * math.sqrt(a.size) < Z, r


@pytest.fixture
def sample(backend, kr):
    threads = 2 ** 20 if backend == "cuda" else 2 ** 16
    return run_streams(kr, 2024, 0, 10, threads)


def test_uniform_moments_and_bins(sample):
    words, u32, u64 = sample[0], sample[1], sample[2]
    for u in (u32, u64):
        assert u.min() >= 0 and u.max() < 1
        # Uniform on [0, 1): mu2 = 1/12, mu3 = 0, mu4 = 1/80, mu6 = 1/448 (central moments).
        assert_moments(u, 1 / 12, 0.0, 1 / 80, 1 / 448, 0.5)
        assert_uniform_bins(np.bincount((u.ravel() * 64).astype(np.int64), minlength=64))
    assert_uniform_bins(np.bincount((words.ravel() >> np.uint32(26)).astype(np.int64),
                                    minlength=64))
    assert_uniform_bins(np.bincount((words.ravel() & np.uint32(63)).astype(np.int64),
                                    minlength=64))


def test_normal_moments_and_tails(sample):
    for z in (sample[3], sample[4]):
        # Standard normal: mu2 = 1, mu3 = 0, mu4 = 3, mu6 = 15.
        assert_moments(z, 1.0, 0.0, 3.0, 15.0, 0.0)
        # The fraction beyond 3 standard deviations, against the binomial's standard error.
        n = z.size
        p = math.erfc(3 / math.sqrt(2))
        tail = np.count_nonzero(np.abs(z) > 3)
        assert abs(tail - n * p) < Z * math.sqrt(n * p * (1 - p)), tail
    # f32 is the f64 normal rounded.
    np.testing.assert_array_equal(sample[3], sample[4].astype(np.float32))


@pytest.fixture
def sample4(backend, kr):
    threads = 2 ** 20 if backend == "cuda" else 2 ** 16
    return run_streams4(kr, 4202, 0, threads)[:2]


def normal_bins(z: np.ndarray, k: int = 64) -> np.ndarray:
    """The counts of ``z`` in the ``k`` intervals of equal standard normal probability."""
    edges = []
    for q in range(1, k):  # the quantiles, by bisection on the normal distribution function
        lo, hi = -10.0, 10.0
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if 0.5 * math.erfc(-mid / math.sqrt(2)) < q / k else (lo, mid)
        edges.append(hi)
    return np.bincount(np.searchsorted(np.array(edges), z.ravel()), minlength=k)


def test_uniform4_moments_and_bins(sample4):
    u = sample4[0]
    assert u.min() >= 0 and u.max() < 1
    for c in range(4):  # each word's numbers, and all of them
        assert_moments(u[..., c], 1 / 12, 0.0, 1 / 80, 1 / 448, 0.5)
        assert_uniform_bins(np.bincount((u[..., c].ravel() * 64).astype(np.int64),
                                        minlength=64))
    assert_uniform_bins(np.bincount((u.ravel() * 1024).astype(np.int64), minlength=1024))
    # The four of one draw are independent: as uncorrelated as any two draws.
    for a, b in ((0, 1), (1, 2), (2, 3), (0, 3)):
        assert_uncorrelated(u[..., a], u[..., b])


def test_normal4_moments_tails_and_bins(sample4):
    z = sample4[1]
    for part in (z, *(z[..., c] for c in range(4))):
        assert_moments(part, 1.0, 0.0, 3.0, 15.0, 0.0)
    n = z.size
    p = math.erfc(3 / math.sqrt(2))
    tail = np.count_nonzero(np.abs(z) > 3)
    assert abs(tail - n * p) < Z * math.sqrt(n * p * (1 - p)), tail
    assert_uniform_bins(normal_bins(z, 64))
    # 32-bit uniforms: |z| stays below sqrt(-2 log 2**-32) = 6.66, as cuRAND's do.
    assert np.abs(z).max() < 6.67
    # A Box-Muller pair is uncorrelated (though dependent: x**2 + y**2 = -2 log u1), and so
    # are the two pairs of a block; the pair's squared radius is exponential with mean 2.
    for a, b in ((0, 1), (2, 3), (0, 2), (1, 3)):
        assert_uncorrelated(z[..., a], z[..., b])
    radius2 = z[..., 0].astype(np.float64) ** 2 + z[..., 1].astype(np.float64) ** 2
    # Exponential(mean 2): mu2 = 4, mu3 = 16, mu4 = 9 * 16, mu6 = 265 * 64 (central moments).
    assert_moments(radius2, 4.0, 16.0, 144.0, 16960.0, 2.0)


def test_randint_bins(sample):
    ints = sample[5]
    assert ints.min() == 0 and ints.max() == 9
    assert_uniform_bins(np.bincount(ints.ravel(), minlength=10))


def test_randint_has_no_modulo_bias(backend, kr):
    # n = 3 * 2**30: `x % n` would make [0, 2**30) twice as likely as each other third, and a
    # multiply-shift without rejection, floor(3x / 4), would give the multiples of 3 two words
    # each and the other values one: the thirds and the residues mod 3 must be as likely.
    threads = 2 ** 20 if backend == "cuda" else 2 ** 16
    n = 3 * 2 ** 30
    out = gn.zeros(threads, gn.i64)
    launch(kr.bounded_draws, threads)(77, n, out)
    values = out.to_host()
    assert values.min() >= 0 and values.max() < n
    assert_uniform_bins(np.bincount(values >> 30, minlength=3))
    assert_uniform_bins(np.bincount(values % 3, minlength=3))


def test_neighbouring_threads_and_draws_are_uncorrelated(sample):
    for draws in (sample[1], sample[4]):  # uniform f32, normal f64
        assert_uncorrelated(draws[1:], draws[:-1])  # neighbouring uids, same draw
        assert_uncorrelated(draws[:, 1:], draws[:, :-1])  # one thread's consecutive draws
        assert_uncorrelated(draws[1:, 1:], draws[:-1, :-1])  # the next draw of the next uid
        # ... and the previous one: a generator that added the uid to the counter would give
        # uid i + 1 the stream of uid i, one draw on.
        assert_uncorrelated(draws[1:, :-1], draws[:-1, 1:])


def test_words_collide_as_often_as_chance_says(sample):
    # N independent uniform u32 words repeat about N**2 / 2**33 times (a Poisson count); a
    # generator whose streams overlap would repeat far more often.
    words = sample[0].ravel()
    n = words.size
    # The expected number of repeats: n minus the expected number of distinct words.
    lam = n - 2.0 ** 32 * -math.expm1(n * math.log1p(-(2.0 ** -32)))
    repeats = n - np.unique(words).size
    assert repeats <= poisson_limit(lam), (repeats, lam)


def poisson_limit(lam: float, alpha: float = ALPHA) -> int:
    """The smallest k with P(X > k) <= alpha for X ~ Poisson(lam) (terms in logarithms, so a
    large lam does not underflow)."""
    k, total = 0, 0.0
    while True:
        total += math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1))
        if 1.0 - total <= alpha:
            return k
        k += 1


def test_the_poisson_limit_is_right():
    assert poisson_limit(1.0, 1 - math.exp(-1.0)) == 0  # P(X > 0) = 1 - e**-1
    assert poisson_limit(32.0) == pytest.approx(32 + Z * math.sqrt(32), abs=8)
    assert poisson_limit(8192.0) == pytest.approx(8192 + Z * math.sqrt(8192), abs=10)


# ---- bad input ------------------------------------------------------------------------------

def test_a_bound_outside_randint_s_range_stops_the_thread(backend, kr):
    for n in (0, -3, 2 ** 32):
        out = gn.zeros(4, gn.i64)
        with pytest.raises(gn.KernelAssertionError, match=r"randint\(n\) needs 1 <= n"):
            launch(kr.bounded_draws, 4)(1, n, out)
            gn.synchronize()


HEADER = """\
from gpu_native import (gpu_kernel, gpu_device, Kernel1D, CUDASliceMut, FlatLayout1D, f32, f64,
                        i32, u64, philox, vec4f)
"""

MISUSES = {
    "two draws in one operator": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = rng.uniform() - rng.uniform()  # <-
""", "two draws from one generator in one expression"),
    "two draws in one call": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = max(rng.uniform(), rng.normal())  # <-
""", "two draws from one generator in one expression"),
    "two four-number draws in one operator": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[vec4f]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = rng.uniform4() * rng.normal4()  # <-
""", "two draws from one generator in one expression"),
    "a dtype for uniform4": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[vec4f]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = rng.uniform4(f64)  # <-
""", "rng.uniform4() takes no arguments: it draws four f32 numbers (a vec4f)"),
    "normal4 into a scalar": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = rng.normal4()  # <-
""", "the value stored into 'a' must be a scalar f32, not vec4f"),
    "generator as a value": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    other = rng  # <-
""", "a random number generator is not a value"),
    "generator passed to a device function": ("""
@gpu_device
def draw(x: f32) -> f32:
    return x

@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = draw(rng)  # <-
""", "a random number generator is not a value"),
    "philox not assigned": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    a[i] = philox(1, i).uniform()  # <-
""", "philox() makes a random number generator: assign it to a local"),
    "unknown method": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = rng.gauss()  # <-
""", "a philox generator has no method gauss()"),
    "method not called": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = rng.uniform  # <-
""", "uniform is a method of the generator: call it, rng.uniform()"),
    "integer dtype": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = rng.uniform(i32)  # <-
""", "rng.uniform()'s dtype must be f32 or f64, not i32"),
    "float seed": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(a[i], i)  # <-
""", "philox()'s seed must be an integer, not f32"),
    "constant bound out of range": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = rng.randint(0)  # <-
""", "rng.randint()'s n must be between 1 and 2**32 - 1, not 0"),
    "float bound": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    a[i] = rng.randint(a[i])  # <-
""", "rng.randint()'s n must be an integer, not f32"),
    "scalar assigned to a generator": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    rng = 3  # <-
""", "'rng' holds a random number generator; only philox(...) can be assigned to it"),
    "scalar unpacked into a generator": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    x, rng = 1, 2  # <-
""", "'rng' holds a random number generator; only philox(...) can be assigned to it"),
    "generator as the variable of a loop over a tuple": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(1, i)
    for rng in (i, i + 1):  # <-
        a[i] = 1.0
""", "'rng' holds a random number generator; only philox(...) can be assigned to it"),
    "generator assigned to a scalar": ("""
@gpu_kernel(Kernel1D)
def k(a: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    x = 1.0
    x = philox(1, i)  # <-
""", "it cannot hold a random number generator"),
}


@pytest.mark.parametrize("name", sorted(MISUSES))
def test_misuse_is_a_located_transpile_error(name, tmp_path):
    body, message = MISUSES[name]
    source = HEADER + textwrap.dedent(body)
    path = tmp_path / "bad_random.py"
    path.write_text(source)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, str(path), "bad_random")
    text = str(info.value)
    assert message in text, text
    marked = next(n for n, line in enumerate(source.splitlines(), 1) if line.endswith("# <-"))
    assert info.value.span.line == marked, text


def test_draws_that_cxx_orders_are_accepted(tmp_path):
    # `and`/`or`, conditional expressions and separate statements order their draws.
    source = HEADER + textwrap.dedent("""
    @gpu_kernel(Kernel1D)
    def k(a: CUDASliceMut[f32]):
        i = FlatLayout1D.uid()
        rng = philox(1, i)
        other = philox(2, i)
        x = rng.uniform()
        y = rng.uniform() if x > 0.5 else rng.normal()
        ok = rng.uniform() > 0.5 and rng.uniform() > 0.5
        a[i] = x + y + other.uniform() + (1.0 if ok else 0.0)
    """)
    rewrite_module(source, str(tmp_path / "ok_random.py"), "ok_random")


def test_the_example_in_docs_language_md_runs(backend, kernel_module, capsys):
    text = (ROOT / "docs" / "language.md").read_text()
    section = text[text.index("## Random numbers"):]
    code = section[section.index("```python\n") + 10:section.index("```\n", 10)]
    example = kernel_module(code)
    counts = [int(c) for c in capsys.readouterr().out.split("[")[-1].strip(" ]\n").split()]
    assert len(counts) == 6 and sum(counts) == 1000 and min(counts) > 100
    # Thread i draws a normal (block 0) then a die (block 1 on) of subsequence i: the NumPy
    # implementation's numbers on both backends; 0.5 + 0.1 * z may be one FMA on the GPU.
    threads = np.arange(1000)
    z, _ = P.normal_f32(42, threads, 0)
    np.testing.assert_allclose(example.out.to_host(), 0.5 + 0.1 * z.astype(np.float64),
                               rtol=1e-6, atol=1e-6)
    dice, _ = P.randint(42, threads, 1, 6)
    np.testing.assert_array_equal(example.dice.to_host(), dice.astype(np.int64) + 1)


def test_the_four_number_example_in_docs_language_md_runs(backend, kernel_module, capsys):
    text = (ROOT / "docs" / "language.md").read_text()
    section = text[text.index("## Random numbers"):text.index("\n## Tuples\n")]
    section = section[section.index("A thread that needs several numbers draws them four"):]
    code = section[section.index("```python\n") + 10:section.index("```\n", 10)]
    example = kernel_module(code)
    assert capsys.readouterr().out.splitlines()[-1] == "ok"
    # Block 0 of subsequence i gives the normals, block 1 the uniforms: the NumPy
    # implementation's, bit for bit on both backends (points adds 0.01 * z to zeros).
    threads = np.arange(1000)
    z = np.stack(P.normal4(7, threads, 0)[0], axis=1).astype(np.float64)
    np.testing.assert_allclose(example.points.to_host(), 0.01 * z[:, :3], rtol=1e-6, atol=1e-9)
    u = np.stack(P.uniform4(7, threads, 1)[0], axis=1)
    np.testing.assert_array_equal(example.noise.to_host(), u)
