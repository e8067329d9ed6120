"""The CUDA index ``block_idx.x * block_dim.x + tid`` (``tid = thread_idx.x``) beside an access
of a shared array: the checked access ``s[tid]`` tells the proofs ``tid < 128`` afterwards, and
that constant used to replace ``tid``'s bound ``block_dim.x``, which the index steps by; a block
of 64 threads makes ``tid < 128`` no proof of disjoint blocks, and the store into ``out`` was
refused ("differ only in block_idx.x and thread_idx.x").  Both bounds hold; an extent the index
steps by is kept.  A constant bound still narrows a digit where no index steps by the extent
(``if lane < 4: out[block_idx.x * 4 + lane]``).  Each accepted kernel runs on the simulator,
race detector on, at several block sizes, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.simulator.support import build
from tools.fuzz.indices import run_sim

N = 1000

ACCEPTED = {
    "shared_store": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
            s = shared_array(f32, (128,))
            tid = thread_idx.x
            i = block_idx.x * block_dim.x + tid
            if i < len(x):
                s[tid] = x[i]
                out[i] = 2.0 * s[tid]
        """,
    "shared_read_only": """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
            s = shared_array(f32, (128,))
            tid = thread_idx.x
            i = block_idx.x * block_dim.x + tid
            s[tid] = 2.0
            sync_threads()
            if i < len(x):
                out[i] = s[tid] * x[i]
        """,
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_the_cuda_index_beside_a_shared_access_is_accepted_and_race_free(tmp_path, name):
    kernel = build(tmp_path, ACCEPTED[name], name=name)["k"]
    for seed, block in enumerate((32, 64, 96, 128)):
        x = np.random.default_rng(seed).standard_normal(N).astype(np.float32)
        out = np.full(N, np.nan, np.float32)
        errors = run_sim(kernel, -(-N // block), block, x, out)
        assert errors.races == [] and errors.fails == [], (block, errors)
        np.testing.assert_array_equal(out, 2.0 * x, err_msg=f"block {block}")


def test_a_constant_bound_still_narrows_where_no_index_steps_by_the_extent(tmp_path):
    kernel = build(tmp_path, """
        @gpu_kernel(Kernel1D)
        def k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
            lane = thread_idx.x
            if lane < 4:
                out[block_idx.x * 4 + lane] = x[block_idx.x * 4 + lane]
        """, name="narrowed")["k"]
    x = np.random.default_rng(5).standard_normal(40).astype(np.float32)
    out = np.full(40, np.nan, np.float32)
    errors = run_sim(kernel, 10, 64, x, out)
    assert errors.races == [] and errors.fails == [], errors
    np.testing.assert_array_equal(out, x)


def test_a_stride_smaller_than_the_block_stays_refused(tmp_path):
    # Blocks overlap when the index steps by 64 and a block has more than 64 threads: the
    # shared access's tid < 128 must not make that look disjoint.
    with pytest.raises(TranspileError, match="not provably unique"):
        build(tmp_path, """
            @gpu_kernel(Kernel1D)
            def k(x: CUDASlice[f32], out: CUDASliceMut[f32]):
                s = shared_array(f32, (128,))
                tid = thread_idx.x
                s[tid] = 1.0
                out[block_idx.x * 64 + tid] = s[tid]
            """, name="overlapping")
