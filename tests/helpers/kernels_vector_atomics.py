"""Atomics on arrays of vectors (one atomic of the element type per component), for
tests/language/test_vector_atomics.py and the NVRTC compile test (tests/compiler/test_nvrtc_all.py)."""

from gpu_native import (
    BlockLayout1D,
    CUDASlice,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    Kernel1D,
    MemoryOrder,
    gpu_kernel,
    i32,
    shared_array,
    sync_threads,
    vec2bf,
    vec2d,
    vec2f,
    vec2h,
    vec2i,
    vec3d,
    vec3f,
    vec3i,
    vec4d,
    vec4f,
    vec4i,
)

BINS = 8  # the shared bins of `binned`


@gpu_kernel(Kernel1D)
def atomics_vec2f(values: CUDASlice[vec2f], index: CUDASlice[i32], acc: CUDASliceMut2D[vec2f],
                  old: CUDASliceMut2D[vec2f]):
    """Thread i applies values[i] to acc[k, index[i]] by fetch_add (k = 0), fetch_sub (1),
    fetch_min (2) and fetch_max (3); old[i, k] is the vector each returned."""
    i = FlatLayout1D.uid()
    if i < len(values):
        j = index[i]
        old[i, 0] = acc.atomic_ref(0, j).fetch_add(values[i])
        old[i, 1] = acc.atomic_ref(1, j).fetch_sub(values[i])
        old[i, 2] = acc.atomic_ref(2, j).fetch_min(values[i])
        old[i, 3] = acc.atomic_ref(3, j).fetch_max(values[i])


@gpu_kernel(Kernel1D)
def atomics_vec3f(values: CUDASlice[vec3f], index: CUDASlice[i32], acc: CUDASliceMut2D[vec3f],
                  old: CUDASliceMut2D[vec3f]):
    """Thread i applies values[i] to acc[k, index[i]] by fetch_add (k = 0), fetch_sub (1),
    fetch_min (2) and fetch_max (3); old[i, k] is the vector each returned."""
    i = FlatLayout1D.uid()
    if i < len(values):
        j = index[i]
        old[i, 0] = acc.atomic_ref(0, j).fetch_add(values[i])
        old[i, 1] = acc.atomic_ref(1, j).fetch_sub(values[i])
        old[i, 2] = acc.atomic_ref(2, j).fetch_min(values[i])
        old[i, 3] = acc.atomic_ref(3, j).fetch_max(values[i])


@gpu_kernel(Kernel1D)
def atomics_vec4f(values: CUDASlice[vec4f], index: CUDASlice[i32], acc: CUDASliceMut2D[vec4f],
                  old: CUDASliceMut2D[vec4f]):
    """Thread i applies values[i] to acc[k, index[i]] by fetch_add (k = 0), fetch_sub (1),
    fetch_min (2) and fetch_max (3); old[i, k] is the vector each returned."""
    i = FlatLayout1D.uid()
    if i < len(values):
        j = index[i]
        old[i, 0] = acc.atomic_ref(0, j).fetch_add(values[i])
        old[i, 1] = acc.atomic_ref(1, j).fetch_sub(values[i])
        old[i, 2] = acc.atomic_ref(2, j).fetch_min(values[i])
        old[i, 3] = acc.atomic_ref(3, j).fetch_max(values[i])


@gpu_kernel(Kernel1D)
def atomics_vec2d(values: CUDASlice[vec2d], index: CUDASlice[i32], acc: CUDASliceMut2D[vec2d],
                  old: CUDASliceMut2D[vec2d]):
    """Thread i applies values[i] to acc[k, index[i]] by fetch_add (k = 0), fetch_sub (1),
    fetch_min (2) and fetch_max (3); old[i, k] is the vector each returned."""
    i = FlatLayout1D.uid()
    if i < len(values):
        j = index[i]
        old[i, 0] = acc.atomic_ref(0, j).fetch_add(values[i])
        old[i, 1] = acc.atomic_ref(1, j).fetch_sub(values[i])
        old[i, 2] = acc.atomic_ref(2, j).fetch_min(values[i])
        old[i, 3] = acc.atomic_ref(3, j).fetch_max(values[i])


@gpu_kernel(Kernel1D)
def atomics_vec3d(values: CUDASlice[vec3d], index: CUDASlice[i32], acc: CUDASliceMut2D[vec3d],
                  old: CUDASliceMut2D[vec3d]):
    """Thread i applies values[i] to acc[k, index[i]] by fetch_add (k = 0), fetch_sub (1),
    fetch_min (2) and fetch_max (3); old[i, k] is the vector each returned."""
    i = FlatLayout1D.uid()
    if i < len(values):
        j = index[i]
        old[i, 0] = acc.atomic_ref(0, j).fetch_add(values[i])
        old[i, 1] = acc.atomic_ref(1, j).fetch_sub(values[i])
        old[i, 2] = acc.atomic_ref(2, j).fetch_min(values[i])
        old[i, 3] = acc.atomic_ref(3, j).fetch_max(values[i])


@gpu_kernel(Kernel1D)
def atomics_vec4d(values: CUDASlice[vec4d], index: CUDASlice[i32], acc: CUDASliceMut2D[vec4d],
                  old: CUDASliceMut2D[vec4d]):
    """Thread i applies values[i] to acc[k, index[i]] by fetch_add (k = 0), fetch_sub (1),
    fetch_min (2) and fetch_max (3); old[i, k] is the vector each returned."""
    i = FlatLayout1D.uid()
    if i < len(values):
        j = index[i]
        old[i, 0] = acc.atomic_ref(0, j).fetch_add(values[i])
        old[i, 1] = acc.atomic_ref(1, j).fetch_sub(values[i])
        old[i, 2] = acc.atomic_ref(2, j).fetch_min(values[i])
        old[i, 3] = acc.atomic_ref(3, j).fetch_max(values[i])


@gpu_kernel(Kernel1D)
def atomics_vec2i(values: CUDASlice[vec2i], index: CUDASlice[i32], acc: CUDASliceMut2D[vec2i],
                  old: CUDASliceMut2D[vec2i]):
    """Thread i applies values[i] to acc[k, index[i]] by fetch_add (k = 0), fetch_sub (1),
    fetch_min (2) and fetch_max (3); old[i, k] is the vector each returned."""
    i = FlatLayout1D.uid()
    if i < len(values):
        j = index[i]
        old[i, 0] = acc.atomic_ref(0, j).fetch_add(values[i])
        old[i, 1] = acc.atomic_ref(1, j).fetch_sub(values[i])
        old[i, 2] = acc.atomic_ref(2, j).fetch_min(values[i])
        old[i, 3] = acc.atomic_ref(3, j).fetch_max(values[i])


@gpu_kernel(Kernel1D)
def atomics_vec3i(values: CUDASlice[vec3i], index: CUDASlice[i32], acc: CUDASliceMut2D[vec3i],
                  old: CUDASliceMut2D[vec3i]):
    """Thread i applies values[i] to acc[k, index[i]] by fetch_add (k = 0), fetch_sub (1),
    fetch_min (2) and fetch_max (3); old[i, k] is the vector each returned."""
    i = FlatLayout1D.uid()
    if i < len(values):
        j = index[i]
        old[i, 0] = acc.atomic_ref(0, j).fetch_add(values[i])
        old[i, 1] = acc.atomic_ref(1, j).fetch_sub(values[i])
        old[i, 2] = acc.atomic_ref(2, j).fetch_min(values[i])
        old[i, 3] = acc.atomic_ref(3, j).fetch_max(values[i])


@gpu_kernel(Kernel1D)
def atomics_vec4i(values: CUDASlice[vec4i], index: CUDASlice[i32], acc: CUDASliceMut2D[vec4i],
                  old: CUDASliceMut2D[vec4i]):
    """Thread i applies values[i] to acc[k, index[i]] by fetch_add (k = 0), fetch_sub (1),
    fetch_min (2) and fetch_max (3); old[i, k] is the vector each returned."""
    i = FlatLayout1D.uid()
    if i < len(values):
        j = index[i]
        old[i, 0] = acc.atomic_ref(0, j).fetch_add(values[i])
        old[i, 1] = acc.atomic_ref(1, j).fetch_sub(values[i])
        old[i, 2] = acc.atomic_ref(2, j).fetch_min(values[i])
        old[i, 3] = acc.atomic_ref(3, j).fetch_max(values[i])


@gpu_kernel(Kernel1D)
def atomics_vec2h(values: CUDASlice[vec2h], index: CUDASlice[i32], acc: CUDASliceMut[vec2h],
                  old: CUDASliceMut[vec2h]):
    """Thread i adds values[i] to acc[index[i]] (CUDA's atomicAdd of a __half2)."""
    i = FlatLayout1D.uid()
    if i < len(values):
        old[i] = acc.atomic_ref(index[i]).fetch_add(values[i])


@gpu_kernel(Kernel1D)
def atomics_vec2bf(values: CUDASlice[vec2bf], index: CUDASlice[i32], acc: CUDASliceMut[vec2bf],
                   old: CUDASliceMut[vec2bf]):
    """Thread i adds values[i] to acc[index[i]] (CUDA's atomicAdd of a __nv_bfloat162), with
    fences around it."""
    i = FlatLayout1D.uid()
    if i < len(values):
        old[i] = acc.atomic_ref(index[i]).fetch_add(values[i], order=MemoryOrder.SEQ_CST)


@gpu_kernel(Kernel1D)
def binned(values: CUDASlice[vec3f], bin_of: CUDASlice[i32], sums: CUDASliceMut[vec3f],
           low: CUDASliceMut[vec3i]):
    """Each block sums its values by bin (BINS of them) in shared memory, then adds its sums
    to `sums`; `low[b]` becomes the componentwise minimum of vec3i(v) over bin b's values
    (a global fetch_min whose result is not used)."""
    t = BlockLayout1D.uid()
    i = FlatLayout1D.uid()
    part = shared_array(vec3f, BINS)
    if t < BINS:
        part[t] = vec3f()
    sync_threads()
    if i < len(values):
        b = bin_of[i]
        part.atomic_ref(b).fetch_add(values[i])
        low.atomic_ref(b).fetch_min(vec3i(values[i]))
    sync_threads()
    if t < BINS:
        sums.atomic_ref(t).fetch_add(part[t], order=MemoryOrder.RELEASE)
