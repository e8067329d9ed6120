"""Kernels with ``for i in reversed(range(...))`` loops, for tests/language/test_reversed.py and
the NVRTC compile test (tests/compiler/test_nvrtc_all.py)."""

from gpu_native import (
    CUDASlice,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    Kernel1D,
    block_idx,
    f32,
    gpu_kernel,
    i32,
    i64,
    local_array,
    shared_array,
    sync_threads,
    thread_idx,
    u32,
    unroll,
)

TAPS = 8
LOG_THREADS = 7
THREADS = 1 << LOG_THREADS
STEP = 3


@gpu_kernel(Kernel1D)
def walk_i64(starts: CUDASlice[i64], stops: CUDASlice[i64], steps: CUDASlice[i64],
             out: CUDASliceMut2D[i64], counts: CUDASliceMut[i64]):
    """Row t of ``out``: the values of ``reversed(range(starts[t], stops[t], steps[t]))`` in the
    order the loop takes them (as many as fit); ``counts[t]``: how many there were."""
    t = FlatLayout1D.uid()
    n = 0
    for v in reversed(range(starts[t], stops[t], steps[t])):
        if n < out.shape[1]:
            out[t, n] = v
        n += 1
    counts[t] = n


@gpu_kernel(Kernel1D)
def walk_i32(starts: CUDASlice[i32], stops: CUDASlice[i32], steps: CUDASlice[i32],
             out: CUDASliceMut2D[i64], counts: CUDASliceMut[i64]):
    """:func:`walk_i64` over ``i32`` bounds: the loop counts in ``i32``."""
    t = FlatLayout1D.uid()
    n = 0
    for v in reversed(range(starts[t], stops[t], steps[t])):
        if n < out.shape[1]:
            out[t, n] = i64(v)
        n += 1
    counts[t] = n


@gpu_kernel(Kernel1D)
def walk_u32(starts: CUDASlice[u32], stops: CUDASlice[u32], steps: CUDASlice[u32],
             out: CUDASliceMut2D[i64], counts: CUDASliceMut[i64]):
    """:func:`walk_i64` over ``u32`` bounds (steps are positive)."""
    t = FlatLayout1D.uid()
    n = 0
    for v in reversed(range(starts[t], stops[t], steps[t])):
        if n < out.shape[1]:
            out[t, n] = i64(v)
        n += 1
    counts[t] = n


@gpu_kernel(Kernel1D)
def walk_constant_steps(starts: CUDASlice[i32], stops: CUDASlice[i32],
                        out: CUDASliceMut2D[i64], counts: CUDASliceMut[i64]):
    """Rows of ``reversed(range(start, stop))``, ``reversed(range(start, stop, STEP))`` and
    ``reversed(range(start, stop, -STEP))``, one after another in row t, with -99 between."""
    t = FlatLayout1D.uid()
    n = 0
    for v in reversed(range(starts[t], stops[t])):
        if n < out.shape[1]:
            out[t, n] = i64(v)
        n += 1
    if n < out.shape[1]:
        out[t, n] = -99
    n += 1
    for v in reversed(range(starts[t], stops[t], STEP)):
        if n < out.shape[1]:
            out[t, n] = i64(v)
        n += 1
    if n < out.shape[1]:
        out[t, n] = -99
    n += 1
    for v in reversed(range(starts[t], stops[t], -STEP)):
        if n < out.shape[1]:
            out[t, n] = i64(v)
        n += 1
    counts[t] = n


@gpu_kernel(Kernel1D)
def suffix_sums(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    """out[i] = a[i] + a[i + 1] / 2 + a[i + 2] / 4 + ... over the rest of ``a`` (Horner's rule
    from the end), and the steps of ``a`` read backwards: the indices the ranges bound are
    proven in bounds."""
    i = FlatLayout1D.uid()
    acc = f32(0.0)
    for j in reversed(range(i, len(a))):
        acc = acc * 0.5 + a[j]
    back = f32(0.0)
    for j in reversed(range(1, len(a))):
        back += a[j] - a[j - 1]
    out[i] = acc + back * 0.0


@gpu_kernel(Kernel1D)
def reversed_taps(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    """out[i] = a[i + TAPS - 1] + 2 * a[i + TAPS - 2] + ...: a register array filled and read by
    unrolled loops, one of them reversed."""
    i = FlatLayout1D.uid()
    if i < len(out):
        taps = local_array(f32, (TAPS,))
        for k in unroll(range(TAPS)):
            taps[k] = a[i + k]
        s = f32(0.0)
        for k in unroll(reversed(range(TAPS))):
            s = s * 2.0 + taps[k]
        out[i] = s


@gpu_kernel(Kernel1D)
def block_sums(a: CUDASlice[f32], out: CUDASliceMut[f32]):
    """One sum per block of THREADS: a tree reduction in shared memory whose strides come from
    ``reversed(range(LOG_THREADS))`` (64, 32, ..., 1), a barrier each round."""
    tid = thread_idx.x
    s = shared_array(f32, (THREADS,))
    i = FlatLayout1D.uid()
    s[tid] = a[i] if i < len(a) else f32(0.0)
    for p in reversed(range(LOG_THREADS)):
        sync_threads()
        stride = 1 << p
        if tid < stride:
            s[tid] += s[tid + stride]
    if tid == 0:
        out[block_idx.x] = s[0]
