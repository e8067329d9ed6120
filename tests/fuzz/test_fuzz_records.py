"""The fuzzer's records (tools/fuzz/records.py): ``@gpu_struct`` kernels, ``const_array`` tables
and Philox draws, a handful of seeds of each on the simulator against the reference (each also
compiled by NVRTC where it is installed), and the reference's own Philox4x32-10 against
Random123's known answers."""

from __future__ import annotations

import numpy as np
import pytest

from tools import fuzz_gpu
from tools.fuzz import generator, records
from tools.fuzz.generator import Config, random_kernel
from tools.fuzz.harness import Workspace, run_case
from tools.fuzz.records_reference import block, philox4x32_10

from .test_fuzz_codegen import NVRTC, needs_cxx

FIRST_SEED = 2_000_000
CASES = 6


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return Workspace(str(tmp_path_factory.mktemp("fuzz_records")))


def fuzz(workspace, config: Config, first: int) -> list[generator.Kernel]:
    kernels = [random_kernel(seed, config) for seed in range(first, first + CASES)]
    results = [run_case(k, workspace, backends=("sim",), nvrtc=NVRTC) for k in kernels]
    failed = [r for r in results if not r.ok]
    assert not failed, "\n\n".join(r.report() for r in failed[:2])
    assert sum(r.exact for r in results) > 0
    return kernels


def nodes(kernels, kinds) -> list:
    out = []
    for k in kernels:
        out += [x for x in generator.walk(k.body) if isinstance(x, kinds)]
        for fn in k.records.devfns:
            out += [x for x in generator.walk(fn.body + [fn.ret]) if isinstance(x, kinds)]
    return out


# Random123's kat_vectors (github.com/DEShawResearch/random123, tests/kat_vectors), the three
# "philox4x32 10" lines: counter (4 words), key (2 words), expected (4 words).
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


@pytest.mark.parametrize("counter, key, expected", KAT)
def test_the_reference_philox_gives_random123s_known_answers(counter, key, expected):
    assert philox4x32_10(counter, key) == expected


def test_a_block_is_the_counter_and_subsequence_under_the_seed():
    """docs/language.md: draw k is the block of the counter ``(offset + k, s)`` (low words
    first) under the key ``seed``: the third known answer, spelled as a generator."""
    counter, key, expected = KAT[2]
    seed = key[0] | key[1] << 32
    offset = counter[0] | counter[1] << 32
    sub = counter[2] | counter[3] << 32
    assert block(seed, sub, offset) == expected


@pytest.mark.slow
def test_struct_kernels_on_the_simulator(workspace):
    """Struct locals from constructors (positional, keywords, empty), copies, field and
    vector-component reads and writes (also augmented), nested structs, device functions taking
    and returning structs, and arrays of structs read and written at the uid."""
    kernels = fuzz(workspace, Config(max_statements=5, max_depth=3, structs=True), FIRST_SEED)
    assert nodes(kernels, records.SNew) and nodes(kernels, records.SField)
    assert nodes(kernels, records.FieldAssign)
    assert any(k.records.sarrays for k in kernels)


@pytest.mark.slow
def test_struct_kernels_with_device_functions_and_arrays(workspace):
    kernels = [random_kernel(seed, Config(max_statements=5, max_depth=3, structs=True))
               for seed in range(FIRST_SEED + 100, FIRST_SEED + 160)]
    chosen = [k for k in kernels if k.records.devfns and k.records.sarrays][:CASES]
    assert len(chosen) == CASES
    results = [run_case(k, workspace, backends=("sim",), nvrtc=NVRTC) for k in chosen]
    failed = [r for r in results if not r.ok]
    assert not failed, "\n\n".join(r.report() for r in failed[:2])
    assert nodes(chosen, records.DevCall) and nodes(chosen, (records.SLoad, records.SStore))


def test_the_struct_layout_is_the_documented_c_layout():
    """Computed from docs/language.md alone; a launch refuses an array of another layout, so
    every struct array the fuzzer passes checks it against the transpiler's too."""
    r = records.Records()
    r.structs["A"] = records.StructDef("A", [("flag", "bool"), ("v", "vec4f"), ("n", "i32")])
    r.structs["B"] = records.StructDef("B", [("x", "u32"), ("a", "A"), ("w", "vec3d")])
    a, b = r.dtype("A"), r.dtype("B")
    assert [a.fields[n][1] for n in a.names] == [0, 16, 32] and a.itemsize == 48
    assert [b.fields[n][1] for n in b.names] == [0, 16, 64] and b.itemsize == 96


@pytest.mark.slow
def test_table_kernels_on_the_simulator(workspace):
    """const_array tables of every element type, 1-D to 3-D, read at indices in range by
    construction, and in ``for j in range(len(T))`` loops."""
    kernels = fuzz(workspace, Config(max_statements=5, max_depth=3, tables=True),
                   FIRST_SEED + 1000)
    assert len(nodes(kernels, records.TLoad)) >= CASES


@pytest.mark.slow
def test_rng_kernels_on_the_simulator(workspace):
    """Philox generators seeded and re-seeded from the data, every draw (randint with constant
    and computed bounds), into locals and outputs."""
    kernels = fuzz(workspace, Config(max_statements=5, max_depth=3, rng=True), FIRST_SEED + 2000)
    methods = {(d.method, d.ty) for d in nodes(kernels, records.Draw)}
    assert len(methods) >= 4, methods


def test_the_driver_gives_each_new_kind_its_seeds():
    """``--structs-every 3 --const-every 3 --rng-every 3`` (the others 0): one new kind a seed."""
    parser_args = type("Args", (), dict(
        known_bugs=False, straight_every=0, indexing_every=0, bits_every=0, tuples_every=0,
        vectors_every=0, complex_every=0, structs_every=3, const_every=3, rng_every=3,
        max_statements=6, max_depth=4))()
    configs = [fuzz_gpu.config_for(seed, parser_args) for seed in range(6)]
    assert [(c.structs, c.tables, c.rng) for c in configs] == [
        (True, False, False), (False, True, False), (False, False, True)] * 2
    assert np.all([not (c.bits or c.complex) for c in configs])


@pytest.mark.slow
@needs_cxx
def test_struct_and_rng_kernels_compiled_for_the_host(workspace):
    """The generated C++ of struct and Philox kernels built by the host compiler (with the
    vectors' alignment, so the structs' static_asserts hold) against the reference."""
    for config, first in ((Config(max_statements=5, max_depth=3, structs=True), 3000),
                          (Config(max_statements=5, max_depth=3, rng=True), 4000)):
        kernels = [random_kernel(s, config) for s in range(FIRST_SEED + first,
                                                           FIRST_SEED + first + 3)]
        results = [run_case(k, workspace, backends=("host",)) for k in kernels]
        failed = [r for r in results if not r.ok]
        assert not failed, "\n\n".join(r.report() for r in failed[:2])
