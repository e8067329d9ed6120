"""Kernels drawing random numbers from philox generators (tests/test_random.py launches them)."""

from gpu_native import (
    CUDASlice,
    CUDASlice2D,
    CUDASliceMut,
    CUDASliceMut2D,
    FlatLayout1D,
    Kernel1D,
    f32,
    f64,
    gpu_device,
    gpu_kernel,
    i64,
    philox,
    u32,
    u64,
    vec4f,
)

DRAWS = 8  # the draws per thread of `streams`


@gpu_kernel(Kernel1D)
def streams(seed: u64, offset: u64, words: CUDASliceMut2D[u32], uniform32: CUDASliceMut2D[f32],
            uniform64: CUDASliceMut2D[f64], normal32: CUDASliceMut2D[f32],
            normal64: CUDASliceMut2D[f64], bounded: CUDASliceMut2D[i64], bound: i64):
    """Each kind of draw from its own generator of subsequence uid, DRAWS times."""
    i = FlatLayout1D.uid()
    if i < words.shape[0]:
        r_words = philox(seed, i, offset)
        r_u32 = philox(seed, i, offset)
        r_u64 = philox(seed, i, offset)
        r_n32 = philox(seed, i, offset)
        r_n64 = philox(seed, i, offset)
        r_int = philox(seed, i, offset)
        for k in range(DRAWS):
            words[i, k] = r_words.random_u32()
            uniform32[i, k] = r_u32.uniform()
            uniform64[i, k] = r_u64.uniform(f64)
            normal32[i, k] = r_n32.normal()
            normal64[i, k] = r_n64.normal(dtype=f64)
            bounded[i, k] = r_int.randint(bound)


@gpu_kernel(Kernel1D)
def streams4(seed: u64, offset: u64, uniform4: CUDASliceMut2D[vec4f],
             normal4: CUDASliceMut2D[vec4f], after: CUDASliceMut2D[u32]):
    """uniform4() and normal4(), each from its own generator of subsequence uid, DRAWS times;
    then each generator's next word (after[i, 0] and after[i, 1]): DRAWS blocks on."""
    i = FlatLayout1D.uid()
    if i < uniform4.shape[0]:
        r_u = philox(seed, i, offset)
        r_n = philox(seed, i, offset)
        for k in range(DRAWS):
            uniform4[i, k] = r_u.uniform4()
            normal4[i, k] = r_n.normal4()
        after[i, 0] = r_u.random_u32()
        after[i, 1] = r_n.random_u32()


@gpu_kernel(Kernel1D)
def uniforms(seed: u64, out: CUDASliceMut[f32]):
    i = FlatLayout1D.uid()
    rng = philox(seed, i)
    out[i] = rng.uniform()


@gpu_kernel(Kernel1D)
def normals(seed: u64, out: CUDASliceMut[f64]):
    i = FlatLayout1D.uid()
    rng = philox(seed, i)
    out[i] = rng.normal(f64)


@gpu_kernel(Kernel1D)
def dice(seed: u64, n: u32, out: CUDASliceMut[u32]):
    i = FlatLayout1D.uid()
    rng = philox(seed, i)
    out[i] = rng.randint(n)


@gpu_device
def in_circle(seed: u64, i: i64) -> i64:
    rng = philox(seed, i)
    x = rng.uniform()
    y = rng.uniform()
    return 1 if x * x + y * y < 1 else 0


@gpu_kernel(Kernel1D)
def mixed(seed: u64, out: CUDASliceMut[f32], hits: CUDASliceMut[i64]):
    """Draws under divergence, in conditional expressions, re-seeding, and in a device function."""
    i = FlatLayout1D.uid()
    rng = philox(seed, i)
    x = f32(0)
    if i % 2 == 0:
        x = rng.uniform()
    else:
        x = rng.normal() if i % 3 == 0 else -rng.uniform()
    y = rng.uniform() if x > 0.5 else f32(rng.randint(10))
    rng = philox(seed + 1, rng.random_u32(), 5)
    out[i] = x + y + rng.uniform()
    hits[i] = in_circle(seed, i)


@gpu_kernel(Kernel1D)
def host_streams(keys: CUDASlice[u64], words: CUDASliceMut2D[u32],
                 uniform32: CUDASliceMut2D[f32], uniform64: CUDASliceMut2D[f64],
                 normal32: CUDASliceMut2D[f32], normal64: CUDASliceMut2D[f64],
                 bounded: CUDASliceMut2D[u32]):
    """`streams` with array parameters only (tools/fuzz/host_cuda.py runs it on the CPU): thread i
    uses seed keys[0], subsequence i, offset keys[1] and randint bound keys[2]."""
    i = FlatLayout1D.uid()
    if i < words.shape[0]:
        r_words = philox(keys[0], i, keys[1])
        r_u32 = philox(keys[0], i, keys[1])
        r_u64 = philox(keys[0], i, keys[1])
        r_n32 = philox(keys[0], i, keys[1])
        r_n64 = philox(keys[0], i, keys[1])
        r_int = philox(keys[0], i, keys[1])
        for k in range(DRAWS):
            words[i, k] = r_words.random_u32()
            uniform32[i, k] = r_u32.uniform()
            uniform64[i, k] = r_u64.uniform(f64)
            normal32[i, k] = r_n32.normal()
            normal64[i, k] = r_n64.normal(dtype=f64)
            bounded[i, k] = r_int.randint(u32(keys[2]))


@gpu_kernel(Kernel1D)
def host_streams4(keys: CUDASlice[u64], uniform4: CUDASliceMut2D[vec4f],
                  normal4: CUDASliceMut2D[vec4f]):
    """`streams4` with array parameters only (tools/fuzz/host_cuda.py runs it on the CPU):
    seed keys[0], subsequence i, offset keys[1]."""
    i = FlatLayout1D.uid()
    if i < uniform4.shape[0]:
        r_u = philox(keys[0], i, keys[1])
        r_n = philox(keys[0], i, keys[1])
        for k in range(DRAWS):
            uniform4[i, k] = r_u.uniform4()
            normal4[i, k] = r_n.normal4()


@gpu_kernel(Kernel1D)
def first_words(params: CUDASlice2D[u64], words: CUDASliceMut[u32], pairs: CUDASliceMut[f64]):
    """The first draws of philox(params[i, 0], params[i, 1], params[i, 2]): its block's word
    x0 (random_u32) and (x0 + 2**32 x1) >> 11 (uniform(f64) * 2**53) of the same block."""
    i = FlatLayout1D.uid()
    if i < params.shape[0]:
        a = philox(params[i, 0], params[i, 1], params[i, 2])
        b = philox(params[i, 0], params[i, 1], params[i, 2])
        words[i] = a.random_u32()
        pairs[i] = b.uniform(f64)


@gpu_kernel(Kernel1D)
def bounded_draws(seed: u64, n: i64, out: CUDASliceMut[i64]):
    i = FlatLayout1D.uid()
    rng = philox(seed, i)
    out[i] = rng.randint(n)


@gpu_kernel(Kernel1D, fastmath=True)
def fast_draws(seed: u64, uniform32: CUDASliceMut[f32], normal32: CUDASliceMut[f32],
               normal64: CUDASliceMut[f64]):
    """Under --use_fast_math the draws are the same numbers (the prelude's __*_rn operations
    are exact-rounding intrinsics that fast math leaves alone)."""
    i = FlatLayout1D.uid()
    a = philox(seed, i)
    b = philox(seed, i)
    c = philox(seed, i)
    uniform32[i] = a.uniform()
    normal32[i] = b.normal()
    normal64[i] = c.normal(f64)


@gpu_kernel(Kernel1D, fastmath=True)
def fast_draws4(seed: u64, uniform4: CUDASliceMut[vec4f], normal4: CUDASliceMut[vec4f]):
    """uniform4() and normal4() under --use_fast_math: the same numbers."""
    i = FlatLayout1D.uid()
    a = philox(seed, i)
    b = philox(seed, i)
    uniform4[i] = a.uniform4()
    normal4[i] = b.normal4()
