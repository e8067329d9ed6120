"""Holes the unique-write proofs had, closed, each with the kernel that raced.

* Stores that a condition leaves to some threads (``if tid == 1: s[0] = v``) are proven against
  the array's other stores, except where a barrier orders the pair (shared memory); a read of a
  global array such a store writes is proven against it too.
* The classic rule's owner indices must not wrap (``i64(p + u * K)`` in i32, ``u * K`` in u32).
* The hint for a shared store names the block's index, not the grid's uid.
* A read of another index than the written one is accepted for parity only where every store
  and the read are confined to opposite parities (the near misses are here).
* A read of a shared array is proven against the stores of its barrier interval inside loops
  too: a reduction's rounds with no barrier in its loop (the values ``s`` takes in the
  interval, from the block's trace), a neighbour read in the loop that stores it, a double
  buffer read from the buffer the round writes, and a vector read's every element; a read
  the conditions pin to thread 0, as a store they narrow is.

Every refused kernel here really races: the same kernel with the refused access under ``with
unsafe():`` makes the simulator's race detector report it.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_native.errors import TranspileError
from tests.helpers import marked_unsafe
from tests.simulator.support import HEADER, build, launch


@pytest.fixture(autouse=True)
def watch_every_write(monkeypatch):
    """Watch every written global array, as tests/test_unique_idioms.py does."""
    monkeypatch.setenv("GPU_NATIVE_SIM_WRITE_RACES", "1")


def _races(tmp_path, body: str, *extra, grid=2, block=64) -> list:
    kernels = build(tmp_path, marked_unsafe(body, wrap=True), name="wrapped")
    out = np.zeros(4096, np.float32)
    return launch(kernels["k"], grid, block, out, *extra).races


# Each case: the kernel (the refused access marked `# <--`), words of the refusal, and the
# arguments after `out` of a launch that races.
REFUSED = {
    "one thread beside every thread": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    tid = thread_idx.x
    s[tid] = 1.0
    if tid == 1:
        s[0] = 2.0  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
""", ["may meet the store at line", "thread_idx.x = 0 and thread_idx.x = 1 both write s[0]"],
        ()),
    "one thread first": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    tid = thread_idx.x
    if tid == 1:
        s[0] = 2.0
    s[tid] = 1.0  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
""", ["may meet the store at line"], ()),
    "the barrier is in a loop that may not run": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], n: i32):
    s = shared_array(f32, 64)
    tid = thread_idx.x
    s[tid] = 1.0
    d = n
    while d > 0:
        sync_threads()
        d -= 1
    if tid == 1:
        s[0] = 2.0  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
""", ["may meet the store at line"], (np.int32(0),)),
    "no barrier on the way round the loop": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    tid = thread_idx.x
    for j in range(3):
        s[tid] = f32(j)
        sync_threads()
        if tid == 0:
            s[5] = 9.0  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
""", ["may meet the store at line"], ()),
    "a global element one thread of each block writes, read by all": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], copy: CUDASliceMut[f32]):
    if thread_idx.x == 0:
        out[block_idx.x] = 1.0
    v = out[block_idx.x]  # <--
    copy[FlatLayout1D.uid()] = v
""", ["'out' is read here, and the store at line"], (np.zeros(128, np.float32),)),
    # In-place red-black updates (tests/test_unique_idioms.py runs the accepted one): the read
    # must be of the other parity than every store writes.
    "parity: an even offset": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], colour: i32):
    i = FlatLayout1D.uid()
    if i > 1 and i < len(out) - 2 and i % 2 == colour:
        v = out[i - 2] + out[i + 2]  # <--
        out[i] = v
""", ["'out' is read here at another index than it is written at"], (np.int32(0),)),
    "parity: a store of either parity": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], colour: i32):
    i = FlatLayout1D.uid()
    if i > 0 and i < len(out) - 1 and i % 2 == colour:
        v = out[i - 1] + out[i + 1]  # <--
        out[i] = v
    if i < len(out):
        out[i] += 1.0
""", ["'out' is read here at another index than it is written at"], (np.int32(0),)),
    "parity: a read outside the condition": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], colour: i32):
    i = FlatLayout1D.uid()
    if i > 0 and i < len(out):
        v = out[i - 1]  # <--
        if i % 2 == colour:
            out[i] = v
""", ["'out' is read here at another index than it is written at"], (np.int32(0),)),
    "two single threads, through an index one of them counts": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    c = 0
    if u == 0:
        for i in range(3):
            out[c] = 1.0
            c += 1
    if u == 1:
        out[c] = 2.0  # <--
""", ["cannot be shown apart from the store at line"], ()),
    # The one-thread rule names a thread by an equality of a value fixed per thread: not by a
    # quotient unique only under its remainder's condition (found by review).
    "a quotient pinned under two remainders": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    tid = thread_idx.x
    if tid % 32 == 0:
        if tid // 32 == 0:
            s[0] = 1.0
    if tid % 32 == 1:
        if tid // 32 == 0:
            s[0] = 2.0  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
""", ["may meet the store at line"], ()),
    # A store narrowed by `u == 1` tells no thread apart through its index (`out[0]`).
    "two uids, one element": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    if u == 0:
        out[0] = 1.0
    if u == 1:
        out[0] = 2.0  # <--
""", ["may meet the store at line"], ()),
    # A device function's parameter is what each caller passes, not a launch value.
    "a device function's parameter as the thread's": ("""
@gpu_device
def f(out: CUDASliceMut[f32], p: i64):
    if FlatLayout1D.uid() == p:
        out[0] = 1.0  # <--

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    f(out, FlatLayout1D.uid())
""", ["not provably unique"], ()),
    # A device function's stores against the caller's accesses of the same array.
    "a device function's store beside the kernel's": ("""
@gpu_device
def f(out: CUDASliceMut[f32], i: UniqueId):
    if i < len(out):
        out[i] = 1.0

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    f(out, u)
    if u + 1 < len(out):
        out[u + 1] = 2.0  # <--
""", ["'out' is written inside f() (called at line", "by the store at line"], ()),
    "a device function's store beside the kernel's read": ("""
@gpu_device
def f(out: CUDASliceMut[f32], i: UniqueId):
    if i < len(out):
        out[i] = 1.0

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], res: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    f(out, u)
    if u + 1 < len(out):
        res[u] = out[u + 1]  # <--
""", ["by the read at line"], (np.zeros(4096, np.float32),)),
    # A device function's reads against the caller's stores (they were not compared at all).
    "a device function's read of a neighbour beside the kernel's store": ("""
@gpu_device
def peek(y: CUDASlice[f32], i: int) -> f32:
    return y[i + 1]

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    if u + 1 < len(out):
        out[u] = peek(out, u)  # <--
""", ["'out' is read inside peek() (called here) and written by the store at line"], ()),
    "a device function's read through a parameter it changes": ("""
@gpu_device
def later(y: CUDASliceMut[f32], i: int) -> f32:
    i += 1
    return y[i]

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    if u + 1 < len(out):
        out[u] = later(out, u)  # <--
""", ["'out' is read inside later()"], ()),
    "a device function's store beside another's read of a neighbour": ("""
@gpu_device
def put(y: CUDASliceMut[f32], i: UniqueId):
    y[i] = 1.0

@gpu_device
def peek(y: CUDASlice[f32], i: int) -> f32:
    return y[i]

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], res: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    if u + 1 < len(out):
        put(out, u)
        res[u] = peek(out, u + 1)  # <--
""", ["'out' is written inside put() (called at line", "by the call of peek() at line"],
        (np.zeros(4096, np.float32),)),
    # The store is proven through a residue pin (one lane of each warp); the read at its
    # owner index runs in every lane, so it was taken for each thread's own element.
    "a global element one lane of each warp writes, read by every lane": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], copy: CUDASliceMut[f32]):
    assert block_dim.x == 64
    tid = thread_idx.x
    w = block_idx.x * 2 + tid // 32
    if tid % 32 == 0:
        out[w] = 1.0
    copy[FlatLayout1D.uid()] = out[w]  # <--
""", ["'out' is read here at the index it is written at", "condition around the store leaves out"],
        (np.zeros(128, np.float32),)),
    "the same, read inside a device function": ("""
@gpu_device
def get(y: CUDASlice[f32], i: int) -> f32:
    return y[i]

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], copy: CUDASliceMut[f32]):
    assert block_dim.x == 64
    tid = thread_idx.x
    w = block_idx.x * 2 + tid // 32
    if tid % 32 == 0:
        out[w] = 1.0
    copy[FlatLayout1D.uid()] = get(out, w)  # <--
""", ["'out' is read inside get() (called here) and written by the store at line"],
        (np.zeros(128, np.float32),)),
    "one array passed for two parameters of a device function": ("""
@gpu_device
def f(y: CUDASliceMut[f32], z: CUDASlice[f32], i: UniqueId):
    if i + 1 < len(z):
        y[i] = z[i + 1]

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    f(out, out, FlatLayout1D.uid())  # <--
""", ["'out' is passed to f() for two of its parameters"], ()),
    # Plain reads of elements atomics update in the same launch (the simulator reported them;
    # the checker did not look).
    "a plain read of a global counter that atomics update": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], copy: CUDASliceMut[f32]):
    out.atomic_ref(0).fetch_add(1.0)
    copy[FlatLayout1D.uid()] = out[0]  # <--
""", ["'out' is read here with a plain load while atomics update it (line",
      "no grid_sync() between"], (np.zeros(128, np.float32),)),
    "a plain read of a shared bin before the barrier": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 4)
    tid = thread_idx.x
    if tid < 4:
        s[tid] = 0.0
    sync_threads()
    s.atomic_ref(tid % 4).fetch_add(1.0)
    out[FlatLayout1D.uid()] = s[tid % 4]  # <--
""", ["'s' is read here with a plain load while atomics update it", "no sync_threads() between"],
        ()),
    # The same through device functions: their atomics and plain reads count as the caller's
    # (a call's atomics were not compared with anything).
    "a plain read of a counter a device function's atomics update": ("""
@gpu_device
def bump(c: CUDASliceMut[f32], i: i32):
    c.atomic_ref(i).fetch_add(1.0)

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], copy: CUDASliceMut[f32]):
    bump(out, 0)
    copy[FlatLayout1D.uid()] = out[0]  # <--
""", ["'out' is read here with a plain load while atomics in bump() update it (line"],
        (np.zeros(128, np.float32),)),
    "a device function's plain read of a counter the kernel's atomics update": ("""
@gpu_device
def peek(c: CUDASlice[f32], i: i32) -> f32:
    return c[i]

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], copy: CUDASliceMut[f32]):
    out.atomic_ref(0).fetch_add(1.0)
    copy[FlatLayout1D.uid()] = peek(out, 0)  # <--
""", ["'out' is read by peek() here with a plain load while atomics update it (line"],
        (np.zeros(128, np.float32),)),
    "one device function's read of a counter another's atomics update": ("""
@gpu_device
def peek(c: CUDASlice[f32], i: i32) -> f32:
    return c[i]

@gpu_device
def bump(c: CUDASliceMut[f32], i: i32):
    c.atomic_ref(i).fetch_add(1.0)

@gpu_device
def count(c: CUDASliceMut[f32]):
    bump(c, 0)

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], copy: CUDASliceMut[f32]):
    count(out)
    copy[FlatLayout1D.uid()] = peek(out, 0)  # <--
""", ["'out' is read by peek() here with a plain load while atomics in count() update it"],
        (np.zeros(128, np.float32),)),
    # Plain stores into elements atomics update (the simulator reported them; the checker
    # compared atomics with nothing but reads).
    "a plain store into a neighbour's atomically updated element": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    if u + 1 < len(out):
        out[u] = 5.0  # <--
        out.atomic_ref(u + 1).fetch_add(1.0)
""", ["'out' is written here with a plain store while atomics update it (line",
      "atomic_ref(i).store(v)"], ()),
    "a plain store into a counter a device function's atomics update": ("""
@gpu_device
def bump(c: CUDASliceMut[f32], i: i32):
    c.atomic_ref(i).fetch_add(1.0)

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    if u < len(out):
        out[u] = 5.0  # <--
        bump(out, 3)
""", ["'out' is written here with a plain store while atomics in bump() update it"], ()),
    "a device function's store into a counter the kernel's atomics update": ("""
@gpu_device
def put(c: CUDASliceMut[f32], i: UniqueId):
    c[i] = 5.0

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    if u < len(out):
        put(out, u)  # <--
        out.atomic_ref(3).fetch_add(1.0)
""", ["'out' is written by put() here with a plain store while atomics update it"], ()),
    # A shared neighbour read with no barrier after the stores (the missing sync_threads()):
    # plain reads of shared arrays were compared with nothing but atomics.
    "a shared neighbour read with no barrier after the stores": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, (65,))
    tid = thread_idx.x
    s[tid] = f32(tid)
    out[FlatLayout1D.uid()] = s[tid + 1]  # <--
""", ["'s' is read here, and the store at line", "no sync_threads() between the two"], ()),
    "a stencil's neighbour reads in a loop, with no barrier after the halo is filled": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    temp = shared_array(f32, (70,))
    t = thread_idx.x
    temp[t + 3] = f32(t)
    if t < 3:
        temp[t] = 0.0
        temp[t + 67] = 0.0
    acc = f32(0.0)
    for off in range(-3, 4):
        acc += temp[t + 3 + off]  # <--
    out[FlatLayout1D.uid()] = acc
""", ["'temp' is read here, and the store at line"], ()),
    "a shared element thread 0 writes, read by every thread before the barrier": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, (1,))
    if thread_idx.x == 0:
        s[0] = 3.0
    out[FlatLayout1D.uid()] = s[0]  # <--
    sync_threads()
""", ["'s' is read here, and the store at line"], ()),
    "a reduction's rounds with no barrier in its loop": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    cache = shared_array(f32, (64,))
    tid = thread_idx.x
    cache[tid] = f32(tid)
    sync_threads()
    s = 32
    while s > 0:
        if tid < s:
            cache[tid] += cache[tid + s]  # <--
        s //= 2
    sync_threads()
    if tid == 0:
        out[block_idx.x] = cache[0]
""", ["'cache' is read here", "in the same barrier interval (with s = ", "at the store"], ()),
    "a single-buffer scan's read of what thread t - offset writes": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, (64,))
    t = thread_idx.x
    s[t] = f32(t)
    sync_threads()
    offset = 1
    while offset < 64:
        if t >= offset:
            s[t] = s[t] + s[t - offset]  # <--
        sync_threads()
        offset *= 2
    out[FlatLayout1D.uid()] = s[t]
""", ["'s' is read here", "in the same barrier interval (with offset = 1 at the read"], ()),
    "a neighbour's element read in the loop that stores it, with no barrier": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, (64,))
    t = thread_idx.x
    v = f32(t)
    for it in range(4):
        s[t] = v
        if t < 63:
            v += s[t + 1]  # <--
    out[FlatLayout1D.uid()] = v
""", ["'s' is read here, and the store at line", "no sync_threads() between the two"], ()),
    "a tiled product's loop with its first barrier and not its second": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    # Numba's fast_matmul without the second cuda.syncthreads(): a thread that finishes its
    # products first overwrites the tile the others still read.
    assert block_dim.x == 64
    tile = shared_array(f32, (64,))
    t = thread_idx.x
    acc = f32(0.0)
    for step in range(4):
        tile[t] = f32(step * 64 + t)
        sync_threads()
        for j in range(64):
            acc += tile[j]  # <--
    out[FlatLayout1D.uid()] = acc
""", ["'tile' is read here, and the store at line"], ()),
    "a double buffer read from the buffer this round writes": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    tile = shared_array(f32, (2, 64))
    t = thread_idx.x
    acc = f32(0.0)
    for turn in range(4):
        for buf in range(2):
            tile[buf, t] = f32(turn + t)
            acc += tile[buf, 63 - t]  # <--
            sync_threads()
    out[FlatLayout1D.uid()] = acc
""", ["'tile' is read here, and the store at line"], ()),
    "a vector read that reaches the next thread's element": ("""
from gpu_native import load_vec4

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, (264,))
    t = thread_idx.x
    s[4 * t + 5] = f32(t)
    v = load_vec4(s, 4 * t)  # <--
    out[FlatLayout1D.uid()] = v.x + v.y + v.z + v.w
""", ["'s' is read here, and the store at line"], ()),
    "thread 0 reads its neighbour's element before the barrier": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    cache = shared_array(f32, (64,))
    tid = thread_idx.x
    cache[tid] = f32(tid)
    if tid == 0:
        out[block_idx.x] = cache[1]  # <--
""", ["'cache' is read here, and the store at line",
      "thread_idx.x = 0 and thread_idx.x = 1 both reach cache[1]"], ()),
    "thread 0 of every block, through an index it counts": ("""
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    if thread_idx.x == 0:
        c = 0
        for i in range(3):
            out[c] = 1.0  # <--
            c += 1
""", ["not provably unique"], ()),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_narrowed_store_is_refused_where_threads_meet(tmp_path, case):
    body, messages, _ = REFUSED[case]
    with pytest.raises(TranspileError) as info:
        build(tmp_path, marked_unsafe(body, wrap=False))
    for message in messages:
        assert message in str(info.value), str(info.value)


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_kernel_really_races(tmp_path, case):
    body, _, extra = REFUSED[case]
    assert _races(tmp_path, body, *extra) != []


ACCEPTED = {
    "a barrier between": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    tid = thread_idx.x
    s[tid] = 1.0
    sync_threads()
    if tid == 1:
        s[0] = 2.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
""",
    "a barrier in a loop that surely runs (Blelloch's up-sweep)": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    tid = thread_idx.x
    s[tid] = 1.0
    d = 32
    while d > 0:
        sync_threads()
        d //= 2
    if tid == 0:
        s[63] = 0.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
""",
    "a reduction's rounds, each ended by a barrier, read after the loop": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    cache = shared_array(f32, (64,))
    tid = thread_idx.x
    cache[tid] = f32(tid)
    sync_threads()
    s = 32
    while s > 1:
        if tid < s:
            cache[tid] += cache[tid + s]
        sync_threads()
        s //= 2
    out[FlatLayout1D.uid()] = cache[0] + cache[1]
""",
    "a double buffer read from the other buffer": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    tile = shared_array(f32, (2, 64))
    t = thread_idx.x
    tile[1, t] = 0.0
    sync_threads()
    acc = f32(0.0)
    for turn in range(4):
        for buf in range(2):
            tile[buf, t] = f32(turn + t)
            prev = 1 - buf
            acc += tile[prev, 63 - t]
            sync_threads()
    out[FlatLayout1D.uid()] = acc
""",
    "a vector read of the thread's own element among unwritten ones": """
from gpu_native import load_vec4

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, (256,))
    t = thread_idx.x
    s[4 * t + 2] = f32(t)
    v = load_vec4(s, 4 * t)
    out[FlatLayout1D.uid()] = v.z
""",
    "thread 0 reads its own element with no barrier": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    cache = shared_array(f32, (64,))
    tid = thread_idx.x
    cache[tid] = f32(tid)
    if tid == 0:
        out[block_idx.x] = cache[0]
""",
    "a barrier at the top of the loop": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 64)
    tid = thread_idx.x
    for j in range(3):
        sync_threads()
        s[tid] = f32(j)
        sync_threads()
        if tid == 0:
            s[5] = 9.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
""",
    "elements no other thread writes": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, 65)
    tid = thread_idx.x
    s[tid] = 1.0
    if tid == 0:
        s[64] = 2.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid] + s[64]
""",
    "the one thread that writes the element through both stores": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    if thread_idx.x == 0:
        out[block_idx.x] = 1.0
        if block_idx.x == 0:
            out[0] = 2.0
""",
    "a global element read by the thread that writes it": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    if thread_idx.x == 0:
        out[block_idx.x] = 1.0
        out[block_idx.x] += out[block_idx.x]
""",
    # One thread makes every store: it cannot race with itself, whatever the indices.
    "one thread's stores through an index it counts": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    if FlatLayout1D.uid() == 0:
        c = 0
        for i in range(10):
            out[c] = f32(i)
            c += 1
        out[10] = f32(c)
""",
    # A device function that indexes the array by its parameters, passed the thread's own
    # index, touches the thread's own element.
    "a device function's store and the kernel's, both at the thread's own element": """
@gpu_device
def put(y: CUDASliceMut[f32], i: UniqueId, v: f32):
    y[i] = v

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    if u < len(out):
        put(out, u, f32(u))
        out[u] = out[u] * 2.0
""",
    "a device function's read of the thread's own element beside the kernel's store": """
@gpu_device
def get(y: CUDASlice[f32], i: int) -> f32:
    return y[i]

@gpu_device
def twice(y: CUDASlice[f32], j: int) -> f32:
    return get(y, j) + get(y, j)

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    if u < len(out):
        out[u] = twice(out, u) + 1.0
""",
    "a lane's store and its read under the one condition": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    tid = thread_idx.x
    w = block_idx.x * 2 + tid // 32
    if tid % 32 == 0:
        out[w] = 1.0
        out[w] = out[w] * 2.0
""",
    "a shared histogram read after the barrier": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, 4)
    tid = thread_idx.x
    if tid < 4:
        s[tid] = 0.0
    sync_threads()
    s.atomic_ref(tid % 4).fetch_add(1.0)
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid % 4]
""",
    "a device function's atomics beside a read of another constant element": """
@gpu_device
def bump(c: CUDASliceMut[f32], i: i32):
    c.atomic_ref(i).fetch_add(1.0)

@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    bump(out, 0)
    if FlatLayout1D.uid() == 0:
        out[2] = out[1]
""",
    "a store and an atomic update, both at the thread's own element": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    if u < len(out):
        out[u] = 5.0
        out.atomic_ref(u).fetch_add(1.0)
""",
    "a store and an atomic update at constant elements that differ": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    out.atomic_ref(0).fetch_add(1.0)
    if FlatLayout1D.uid() == 0:
        out[1] = 5.0
""",
    "a shared neighbour read after the barrier": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, (65,))
    tid = thread_idx.x
    s[tid] = f32(tid)
    if tid == 0:
        s[64] = 0.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid + 1]
""",
    "a shared element a thread reads back from its own store": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 64
    s = shared_array(f32, (64,))
    tid = thread_idx.x
    s[tid] = f32(tid)
    out[FlatLayout1D.uid()] = s[tid] * 2.0
    if tid == 0:
        out[FlatLayout1D.uid()] = s[0]
""",
    "one thread's stores under two conditions that name it alike": """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    u = FlatLayout1D.uid()
    c = 0
    if u == 3:
        for i in range(4):
            out[c] = 1.0
            c += 1
    if u == 3:
        out[c + 7] = 2.0
""",
}


ONE_BLOCK = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert grid_dim.x == 1
    if thread_idx.x == 0:
        c = 0
        for i in range(3):
            out[c] = f32(i)
            c += 1
        out[c] = 9.0
"""


def test_thread_0_of_a_grid_of_one_block_is_one_thread(tmp_path):
    """With the grid one block wide (asserted), `thread_idx.x == 0` leaves one thread: its
    stores are race-free whatever their indices (it was refused as not provably unique)."""
    kernels = build(tmp_path, ONE_BLOCK)
    out = np.zeros(8, np.float32)
    assert launch(kernels["k"], 1, 64, out).races == []
    np.testing.assert_array_equal(out[:4], [0.0, 1.0, 2.0, 9.0])


def test_a_store_apart_from_an_unknown_index_names_its_line(tmp_path):
    """The refusal names the line of the other store (it said "line ?"), and a hint that fits
    a global array (no barrier orders two blocks' stores)."""
    body = REFUSED["two single threads, through an index one of them counts"][0]
    with pytest.raises(TranspileError) as info:
        build(tmp_path, marked_unsafe(body, wrap=False))
    err = info.value
    assert err.span is not None
    assert f"the store at line {err.span.line - 3}:" in str(err), str(err)
    assert err.hint is not None and "sync_threads" not in err.hint and "one thread" in err.hint


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_ordered_or_disjoint_narrowed_store_is_accepted_and_race_free(tmp_path, case):
    kernels = build(tmp_path, ACCEPTED[case])
    out = np.zeros(4096, np.float32)
    assert launch(kernels["k"], 2, 64, out).races == []


WARP_ROUNDS = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 32
    tid = thread_idx.x
    s = shared_array(f32, (32,))
    s[tid] = f32(tid)
    sync_warp()
    offset = 16
    while offset > 0:
        if tid < offset:
            s[tid] += s[tid + offset]
        sync_warp()
        offset //= 2
    if tid == 0:
        out[block_idx.x] = s[0]
"""


def test_rounds_a_sync_warp_ends_are_left_to_the_simulator(tmp_path):
    """A block of one warp whose reduction rounds `sync_warp()` parts is race-free; the read
    proofs know block barriers only (the trace would put every round in one interval), so
    they leave it to the simulator, which finds no race."""
    kernels = build(tmp_path, WARP_ROUNDS)
    out = np.zeros(4, np.float32)
    assert launch(kernels["k"], 2, 32, out).races == []
    np.testing.assert_array_equal(out[:2], [sum(range(32))] * 2)


# ---- wrap-around under the classic rule ----------------------------------------------------------

WRAPPING = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], p: i32):
    assert block_dim.x == 128
    tid = thread_idx.x
    for j in range(4):
        out[i64(p + (block_idx.x * 128 + tid) * 16777216) + j] = 1.0  # <--
"""


def test_classic_index_that_may_wrap_is_refused(tmp_path):
    """``u * K`` keeps ``u`` unique only while it does not wrap: in i32, thread 0 and thread 256
    both reach element 0 (256 * 2**24 == 2**32), and the widening cast comes too late."""
    with pytest.raises(TranspileError) as info:
        build(tmp_path, marked_unsafe(WRAPPING, wrap=False))
    text = str(info.value)
    assert "its index may wrap around in i32" in text, text
    # It names the arithmetic computed in i32 below the widening cast, and how to widen it.
    assert "`p + (block_idx.x * 128 + tid) * 16777216` is computed in i32 before the index " \
           "widens to i64" in text, text
    assert "hint: compute `p + (block_idx.x * 128 + tid) * 16777216` in i64: convert an " \
           "operand first" in text, text


WIDE_UNPROVEN = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut2D[f32], q: i64):
    assert block_dim.x == 1
    assert q > 0  # <-- bound
    pid = i64(block_idx.x)
    g = 8 * q
    row = pid // g * 8 + pid % g % 8
    out[row, (pid % g // 8) * 4] = 1.0  # <--
"""


GROUPED_1D = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut2D[f32]):
    assert block_dim.x == 1
    pid = i64(block_idx.x)
    g = 8 * (out.shape[1] // 4)
    row = pid // g * 8 + pid % g % 8
    col = (pid % g // 8) * 4
    for j in range(4):
        out[row, col + j] = 1.0
"""


def test_an_index_already_in_i64_is_not_told_to_be_widened(tmp_path):
    """Widened from the block's index, the arithmetic is in i64: the refusal names i64, not
    the i32 of ``block_idx.x`` (which wraps nowhere), and does not say to widen it.  (A grouped
    block order over a 1-D grid; the product by a quotient of runtime values is not bounded.)"""
    source = marked_unsafe(WIDE_UNPROVEN, wrap=False)
    with pytest.raises(TranspileError) as info:
        build(tmp_path, source.replace("  # <-- bound", ""))
    text = str(info.value)
    assert "its index may wrap around in i64" in text
    assert "compute the index in i64" not in text and "stays nonnegative and within i64" in text
    # What the hint says: with q bounded, 8 * q cannot wrap, and the store is proven.
    build(tmp_path, source.replace("q > 0  # <-- bound", "0 < q < 1000000"))


def test_a_grouped_block_order_over_a_1d_grid_is_race_free(tmp_path):
    """Triton's grouped order by ``//`` and ``%`` of the block's index: unique, and its
    ``(pid % g // 8) * 4`` below ``g`` from the shape's bound, so nothing wraps in i64."""
    kernels = build(tmp_path, GROUPED_1D)
    out = np.full((24, 16), np.nan, np.float32)
    # 16 columns are 4 tiles of 4, so a group is 8 block rows x 4 tiles (g = 32 blocks); 24
    # rows are 3 groups, 96 blocks, each writing its own 4 elements.
    run = launch(kernels["k"], 96, 1, out)
    assert run.races == [] and run.fails == []
    assert np.all(out == 1.0)
    # No shape names its block count, so the stores keep their bounds checks: a 97th block
    # (row 24 of 24) is an index error, not a write past the end.
    out = np.full((24, 16), np.nan, np.float32)
    run = launch(kernels["k"], 97, 1, out)
    assert run.races == [] and run.fails and np.all(out == 1.0)


def test_classic_index_that_may_wrap_really_races(tmp_path):
    assert _races(tmp_path, WRAPPING, np.int32(0), grid=3, block=128) != []


def test_classic_index_of_launch_indices_gets_a_launch_check(tmp_path):
    """Without the parameter the product is made of launch indices alone: accepted, with a
    launch check that refuses the grids that would make it wrap."""
    from gpu_native.errors import LaunchError
    from gpu_native.runtime.launch_checks import check_launch

    kernels = build(tmp_path, """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 128
    out[i64((block_idx.x * 128 + thread_idx.x) * 16777216)] = 1.0
""")
    checks = kernels["k"].launch_checks
    check_launch("k", "k.py", 0, checks, (1, 1, 1), (128, 1, 1))
    with pytest.raises(LaunchError, match="would wrap"):
        check_launch("k", "k.py", 0, checks, (3, 1, 1), (128, 1, 1))


def test_unsigned_index_that_may_wrap_gets_a_launch_check(tmp_path):
    """Unsigned arithmetic is never negative, wrapped or not: ``(u * 128 + t) * 2**24`` in u32
    meets itself at thread 256 (2**32 wraps to 0), so it is accepted only with a launch check."""
    from gpu_native.errors import LaunchError
    from gpu_native.runtime.launch_checks import check_launch

    body = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 128
    out[(u32(block_idx.x) * u32(128) + u32(thread_idx.x)) * u32(16777216)] = 1.0  # <--
"""
    checks = build(tmp_path, marked_unsafe(body, wrap=False))["k"].launch_checks
    check_launch("k", "k.py", 0, checks, (1, 1, 1), (128, 1, 1))
    with pytest.raises(LaunchError, match="past the u32 maximum"):
        check_launch("k", "k.py", 0, checks, (3, 1, 1), (128, 1, 1))
    assert _races(tmp_path, body, grid=3, block=128) != []


# A block-stride loop `range(tid, stop, block_dim.x)`: the launch keeps the step positive, so
# inside the body `tid <= i < stop` holds as for a literal step, and the widened index is exact.
BLOCK_STRIDE = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert grid_dim.x == 1
    tid = thread_idx.x
    for i in range(tid, 2048, block_dim.x):
        out[i64(block_idx.x) * 2048 + i64(i)] = 1.0
"""


def test_block_stride_loop_index_is_exact_and_race_free(tmp_path):
    """The index was refused as one that "may wrap around in i32" although nothing in it can:
    ``i`` is an i32 in ``[tid, 2048)`` and the casts widen."""
    kernels = build(tmp_path, BLOCK_STRIDE)
    out = np.zeros(4096, np.float32)
    errors = launch(kernels["k"], 1, 96, out)
    assert errors.races == [] and errors.fails == []
    assert out[:2048].tolist() == [1.0] * 2048 and not out[2048:].any()


# ---- hints -------------------------------------------------------------------------------------


def test_shared_store_hint_suggests_the_block_index(tmp_path):
    """A shared array is the block's own: the hint names the thread's index in the block, never
    the grid's uid (which would index past the array in every block but the first)."""
    with pytest.raises(TranspileError) as info:
        build(tmp_path, """
@gpu_kernel(Kernel1D)
def k(data: CUDASlice[i32], out: CUDASliceMut[f32]):
    s = shared_array(f32, (128,))
    s[data[thread_idx.x]] = 1.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[thread_idx.x]
""")
    hint = str(info.value).split("hint:")[1]
    assert "BlockLayout1D.uid()" in hint and "thread_idx.x" in hint
    assert "FlatLayout1D" not in hint


def test_global_store_hint_suggests_the_grid_uid(tmp_path):
    with pytest.raises(TranspileError) as info:
        build(tmp_path, """
@gpu_kernel(Kernel1D)
def k(data: CUDASlice[i32], out: CUDASliceMut[f32]):
    out[data[FlatLayout1D.uid()]] = 1.0
""")
    assert "FlatLayout1D.uid()" in str(info.value).split("hint:")[1]


def test_grid_uid_into_a_shared_array_is_caught_by_the_bounds_check(tmp_path):
    """Race-free within each block (the grid uid tells a block's threads apart), but past the
    array in block 1: the bounds check reports it instead of writing past it."""
    kernels = build(tmp_path, """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    s = shared_array(f32, (128,))
    s[FlatLayout1D.uid()] = 1.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[thread_idx.x]
""")
    errors = launch(kernels["k"], 2, 128, np.zeros(256, np.float32))
    assert errors.fails and errors.fails[0][1:4] == (128, 128, (1, 0, 0))


def test_each_device_function_s_stores_are_found_once_however_many_calls_reach_it(
        tmp_path, monkeypatch):
    """Where a device function stores into and reads its parameters (for the caller's race
    check) is worked out once per function: a chain of 20 functions that each call the next twice took 2**19
    walks of the innermost one (43 s at depth 20, doubling with each level)."""
    from gpu_native.check import calls

    depth = 20
    chain = ["@gpu_device\ndef g0(o: CUDASlice[f32], i: int) -> f32:\n    return o[i]\n"]
    chain += [f"@gpu_device\ndef g{n}(o: CUDASlice[f32], i: int) -> f32:\n"
              f"    return g{n - 1}(o, i) + g{n - 1}(o, i)\n" for n in range(1, depth)]
    seen = []
    real = calls.param_accesses
    monkeypatch.setattr(calls, "param_accesses", lambda fn: seen.append(fn) or real(fn))
    kernels = build(tmp_path, "\n\n".join(chain) + f"""

@gpu_kernel(Kernel1D)
def k(o: CUDASlice[f32], out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    out[i] = g{depth - 1}(o, i)
""")
    assert kernels["k"]  # transpiled
    # Each of the 2 * (depth - 1) + 1 call sites asks once, and each function's one walk asks
    # for the two calls in it.
    assert len(seen) <= 4 * depth, len(seen)
    assert {fn.name for fn in seen} == {f"g{n}" for n in range(depth)}


def test_a_plain_read_of_an_element_no_atomic_updates_is_accepted(tmp_path):
    kernels = build(tmp_path, """
@gpu_kernel(Kernel1D)
def k(counts: CUDASliceMut[f32], out: CUDASliceMut[f32]):
    counts.atomic_ref(0).fetch_add(1.0)
    out[FlatLayout1D.uid()] = counts[1]
""")
    counts = np.array([0.0, 7.0], np.float32)
    out = np.zeros(128, np.float32)
    errors = launch(kernels["k"], 2, 64, counts, out)
    assert errors.races == [] and (out == 7.0).all() and counts[0] == 128.0


def test_read_proofs_past_their_budget_are_left_to_the_simulator(tmp_path, monkeypatch):
    """The read-store proofs of the block's trace stop after a budget of pairs (a loop of
    thousands of rounds with dozens of reads took minutes): past it, the reads are left to the
    simulator's race detector, which reports the race the proofs would have refused."""
    import gpu_native.check.strides as strides

    body = REFUSED["a reduction's rounds with no barrier in its loop"][0]
    monkeypatch.setattr(strides, "_MAX_READ_PAIRS", 0)
    kernels = build(tmp_path, marked_unsafe(body, wrap=False))
    out = np.zeros(4096, np.float32)
    assert launch(kernels["k"], 2, 64, out).races != []


DIAGONAL = """
@gpu_kernel(Kernel2D)
def k(src: CUDASlice2D[f32], dst: CUDASliceMut2D[f32]):
    # cuda-samples' transposeDiagonal: the grid of tiles visited along its diagonals.
    assert block_dim.x == 8 and block_dim.y == 4
    assert grid_dim.x == grid_dim.y  # <-- square
    tile = shared_array(f32, (8, 9))
    tx = thread_idx.x
    ty = thread_idx.y
    by = block_idx.x
    bx = (block_idx.x + block_idx.y) % grid_dim.x  # <-- rotation
    rows = src.shape[0]
    cols = src.shape[1]
    for j in range(0, 8, 4):
        if by * 8 + ty + j < rows and bx * 8 + tx < cols:
            tile[ty + j, tx] = src[by * 8 + ty + j, bx * 8 + tx]
    sync_threads()
    for j in range(0, 8, 4):
        if bx * 8 + ty + j < cols and by * 8 + tx < rows:
            dst[bx * 8 + ty + j, by * 8 + tx] = tile[tx, ty + j]
"""


def test_a_diagonal_block_order_over_a_square_grid_is_race_free(tmp_path):
    """R11: ``(block_idx.x + block_idx.y) % grid_dim.x`` equal in two blocks, with
    ``block_idx.x`` equal and ``block_idx.y`` below ``grid_dim.y == grid_dim.x``, makes
    ``block_idx.y`` equal: the diagonal order visits each tile once."""
    _transposes(build(tmp_path, DIAGONAL)["k"], (40, 40), (5, 5))


@pytest.mark.parametrize("change", [
    ("    assert grid_dim.x == grid_dim.y  # <-- square\n", ""),
    ("(block_idx.x + block_idx.y) % grid_dim.x  # <-- rotation",
     "(block_idx.x + 2 * block_idx.y) % grid_dim.x"),
], ids=["a grid that may be taller than wide", "a rotation by twice the row"])
def test_a_diagonal_order_that_may_meet_itself_is_refused_and_races(tmp_path, change):
    """Without the square grid, block rows past grid_dim.x wrap onto earlier ones; rotated by
    2 * block_idx.y, rows half the grid apart meet on an even grid."""
    body = DIAGONAL.replace(*change)
    with pytest.raises(TranspileError, match="can reach the same element"):
        build(tmp_path, body)
    kernels = build(tmp_path, _wrap_dst(body), name="wrapped")
    src = np.random.default_rng().standard_normal((48, 48)).astype(np.float32)
    dst = np.full((48, 48), np.nan, np.float32)
    grid = (3, 6) if "2 *" not in body else (6, 6)
    assert launch(kernels["k"], grid, (8, 4), src, dst).races != []


def _wrap_dst(body: str) -> str:
    """``body`` with its store into ``dst`` inside ``with unsafe():``."""
    line = "            dst[bx * 8 + ty + j, by * 8 + tx] = tile[tx, ty + j]\n"
    assert line in body
    return body.replace(line, "            with unsafe():\n    " + line)


# transposeDiagonal's order for any grid: a flat block number, split and rotated.
DIAGONAL_ANY_GRID = DIAGONAL.replace("    assert grid_dim.x == grid_dim.y  # <-- square\n", "").replace(
    """    by = block_idx.x
    bx = (block_idx.x + block_idx.y) % grid_dim.x  # <-- rotation
""", """    bid = i64(block_idx.x) + i64(grid_dim.x) * block_idx.y
    by = bid % grid_dim.y  # <-- row
    bx = (bid // grid_dim.y + by) % grid_dim.x
""")


def test_the_diagonal_order_of_any_grid_is_race_free(tmp_path):
    """R11 with the quotient's range: ``bid // grid_dim.y`` is below ``grid_dim.x`` (``bid``
    below ``grid_dim.x * grid_dim.y``), so the rotation modulo ``grid_dim.x`` keeps it apart,
    and then R6 (quotient and remainder) the block number."""
    _transposes(build(tmp_path, DIAGONAL_ANY_GRID)["k"], (24, 40), (5, 3))  # 5 tiles by 3


def test_the_diagonal_order_by_the_other_extent_is_refused_with_a_hint_and_races(tmp_path):
    body = DIAGONAL_ANY_GRID.replace("bid % grid_dim.y  # <-- row", "bid % grid_dim.x")
    with pytest.raises(TranspileError) as info:
        build(tmp_path, body)
    text = str(info.value)
    assert "can reach the same element" in text
    # The hint says the index depends on the blocks through the splits (it said it did not
    # depend on them at all).
    assert "only through `(block_idx.x + block_idx.y * grid_dim.x) // grid_dim.y`, " \
        "`(block_idx.x + block_idx.y * grid_dim.x) % grid_dim.x`" in text, text
    assert "does not depend on" not in text
    kernels = build(tmp_path, _wrap_dst(body), name="wrapped")
    # 2 tiles across, 3 down: blocks 0 and 2 both take tile row 0, column 0 (and 3 and 5 row
    # 1, column 0), while tile row 2 is never taken.
    src = np.random.default_rng().standard_normal((24, 16)).astype(np.float32)
    dst = np.full((16, 24), np.nan, np.float32)
    assert launch(kernels["k"], (2, 3), (8, 4), src, dst).races != []


def test_the_diagonal_order_with_an_i32_block_number_has_the_launcher_check_it(tmp_path):
    """As the sample writes it, ``int bid``: the block number and the sum of its quotient and
    remainder are exact under launch checks (their largest values over the launch stay within
    i32), so the order is proven as in i64; a grid that would wrap them is refused."""
    from gpu_native.errors import LaunchError
    from gpu_native.runtime.launch_checks import check_launch

    body = DIAGONAL_ANY_GRID.replace("i64(block_idx.x) + i64(grid_dim.x) * block_idx.y",
                                     "block_idx.x + grid_dim.x * block_idx.y")
    k = build(tmp_path, body)["k"]
    _transposes(k, (24, 40), (5, 3))
    check_launch(k.name, "k.py", 0, k.launch_checks, (50_000, 40_000, 1), (8, 4, 1))
    with pytest.raises(LaunchError, match="past the i32 maximum"):
        check_launch(k.name, "k.py", 0, k.launch_checks, (70_000, 40_000, 1), (8, 4, 1))


def _transposes(kernel, shape: tuple[int, int], grid: tuple[int, int]) -> None:
    """``kernel`` (8 x 4 threads) transposes a fresh ``shape`` matrix on ``grid``, every element
    written once, with no race."""
    src = np.random.default_rng().standard_normal(shape).astype(np.float32)
    dst = np.full(shape[::-1], np.nan, np.float32)
    run = launch(kernel, grid, (8, 4), src, dst)
    assert run.races == [] and run.fails == []
    np.testing.assert_array_equal(dst, src.T)


FIRST_TEST = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32], n: i32):
    # GPU Gems' scan over a runtime n: its sweeps' barriers are in while loops.
    assert n >= 2  # <-- entry
    s = shared_array(f32, 64)
    tid = thread_idx.x
    s[tid] = 1.0
    half = n // 2
    while half >= 1:
        sync_threads()
        half //= 2
    if tid == 0:
        s[1] = 0.0
    d = 1
    while d < n:
        sync_threads()
        d *= 2
    if tid == 1:
        s[1] = 3.0
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
"""


def test_a_while_loop_whose_first_test_the_facts_pass_reaches_its_barrier(tmp_path):
    """``half = n // 2; while half >= 1:`` and ``d = 1; while d < n:`` under ``assert n >= 2``:
    each body surely runs once, so its barrier orders the stores before the loop with those
    after (they were refused as "may meet the store at line ... in another thread")."""
    kernels = build(tmp_path, FIRST_TEST)
    for n in (2, 3, 64):
        out = np.zeros(128, np.float32)
        assert launch(kernels["k"], 2, 64, out, np.int32(n)).races == []


def test_a_while_loop_that_may_not_run_still_orders_nothing(tmp_path):
    """With ``n >= 1`` only, n = 1 runs neither loop: thread 0's store and thread 1's meet."""
    body = FIRST_TEST.replace("assert n >= 2  # <-- entry", "assert n >= 1")
    with pytest.raises(TranspileError, match="may meet the store at line"):
        build(tmp_path, body)
    kernels = build(tmp_path, marked_unsafe(body.replace(
        "        s[1] = 0.0\n", "        s[1] = 0.0  # <--\n"), wrap=True), name="wrapped")
    out = np.zeros(128, np.float32)
    assert launch(kernels["k"], 2, 64, out, np.int32(1)).races != []


def test_expand_proofs_name_the_rotation():
    from gpu_native.expand import Expansion

    source = HEADER + DIAGONAL_ANY_GRID
    text = Expansion.of(source, "k.py", "k").proofs()
    assert "the rotation ((block_idx.x + block_idx.y * grid_dim.x) // grid_dim.y + (block_idx.x " \
           "+ block_idx.y * grid_dim.x) % grid_dim.y) % grid_dim.x (R11)" in text, text


UNROLLED_WARP = """
@gpu_kernel(Kernel1D)
def k(out: CUDASliceMut[f32]):
    assert block_dim.x == 128
    s = shared_array(f32, 128)
    tid = thread_idx.x
    s[tid] = f32(tid)
    sync_threads()
    if tid < 32:
        s[tid] += s[tid + 32]
        s[tid] += s[tid + 16]  # <--
    sync_threads()
    out[FlatLayout1D.uid()] = s[tid]
"""


def test_a_race_within_the_first_warp_is_told_to_use_sync_warp(tmp_path):
    """Harris' unrolled last warp without `volatile` or a barrier: the hint names sync_warp()
    (it said sync_threads(), which under `if tid < 32:` would hang), and the race is real."""
    with pytest.raises(TranspileError) as info:
        build(tmp_path, marked_unsafe(UNROLLED_WARP, wrap=False))
    assert "sync_warp()" in info.value.hint and "one warp" in info.value.hint, info.value.hint
    assert _races(tmp_path, UNROLLED_WARP, block=128) != []


def test_a_sign_changing_cast_in_an_index_is_named(tmp_path):
    """Rodinia kmeans' `unsigned int point_id = block_id * blockDim.x + threadIdx.x`: the
    refusal names the cast the proofs do not look through and the type to compute in (it said
    "a conversion or function of a thread-dependent value")."""
    body = """
@gpu_kernel(Kernel2D)
def k(out: CUDASliceMut[i32], n: i32):
    assert block_dim.y == 1
    block_id = u32(grid_dim.x * block_idx.y + block_idx.x)
    point_id = u32(block_id * block_dim.x + thread_idx.x)
    if point_id < n:
        out[point_id] = 1
"""
    with pytest.raises(TranspileError, match=r"a cast to u32 that may change the value .*"
                                             r"compute the index in i32 or i64"):
        build(tmp_path, body)
    build(tmp_path, body.replace("u32(", "i32("))  # the same in i32: accepted
