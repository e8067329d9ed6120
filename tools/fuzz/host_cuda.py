"""Run generated CUDA C++ on the CPU: the emitter's output, compiled by the host C++ compiler.

A differential backend for the fuzzer that needs no GPU.  When the GPU disagrees with the
reference, this tells whether the CUDA we generate is wrong (the host build disagrees too) or the
device compiler is (the host build agrees).  It also builds with UBSan, so undefined behaviour in
the generated code (which a device compiler may exploit) is reported.

Only what the fuzzer generates is supported: 1-D launches, no shared memory, barriers or warp
operations; atomics only as the error record and the prelude's vector atomics use them (the
threads run one after another).  The prelude header a translation unit includes
(``gpu_native/prelude.cuh``) is pasted in place of its ``#include``, and its few PTX ``asm``
helpers are replaced by their portable meaning.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

from gpu_native import headers

SHIM = r"""
#include <cmath>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <algorithm>
using std::isnan; using std::isinf; using std::isfinite;
#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__
#define __restrict__
#define __align__(x) alignas(x)
struct uint3 { unsigned int x, y, z; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) uint4 { unsigned int x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(16) ulonglong2 { unsigned long long x, y; };
static uint3 threadIdx, blockIdx, blockDim, gridDim;
static inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return {x, y, z}; }
struct gn_host_exit_t {};
static inline void gn_host_exit() { throw gn_host_exit_t(); }
static inline unsigned int atomicAdd_system(unsigned int* p, unsigned int v) { unsigned int o = *p; *p += v; return o; }
static inline unsigned int atomicCAS_system(unsigned int* p, unsigned int c, unsigned int v) { unsigned int o = *p; if (o == c) *p = v; return o; }
static inline unsigned int atomicExch_system(unsigned int* p, unsigned int v) { unsigned int o = *p; *p = v; return o; }
template <typename T> static inline T atomicCAS(T* p, T c, T v) { T o = *p; if (o == c) *p = v; return o; }
// The prelude's atomics on vectors call these; threads run one after another, so each is a
// plain read-modify-write (int arithmetic wraps, as on the GPU).
template <typename T> static inline T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
static inline int atomicAdd(int* p, int v) { int o = *p; *p = (int)((unsigned int)o + (unsigned int)v); return o; }
static inline int atomicSub(int* p, int v) { int o = *p; *p = (int)((unsigned int)o - (unsigned int)v); return o; }
static inline int atomicMin(int* p, int v) { int o = *p; *p = v < o ? v : o; return o; }
static inline int atomicMax(int* p, int v) { int o = *p; *p = v > o ? v : o; return o; }
static inline void __threadfence_system() {}
static inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, 4); return f; }
static inline int __float_as_int(float v) { int i; std::memcpy(&i, &v, 4); return i; }
// The bit intrinsics the prelude's helpers call (CUDA's documented meaning).
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline unsigned int __brev(unsigned int x) {
    unsigned int r = 0; for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i); return r; }
static inline unsigned long long __brevll(unsigned long long x) {
    unsigned long long r = 0; for (int i = 0; i < 64; ++i) r |= ((x >> i) & 1ull) << (63 - i); return r; }
static inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    unsigned long long v = ((unsigned long long)y << 32) | x; unsigned int r = 0;
    for (int k = 0; k < 4; ++k) r |= (unsigned int)((v >> (8 * ((s >> (4 * k)) & 7))) & 0xFF) << (8 * k);
    return r; }
template <typename T> static inline unsigned int __match_all_sync(unsigned int m, T, int* p) { *p = 1; return m; }
static inline double __longlong_as_double(long long v) { double f; std::memcpy(&f, &v, 8); return f; }
static inline long long __double_as_longlong(double v) { long long i; std::memcpy(&i, &v, 8); return i; }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / std::cbrt(x); }
struct alignas(8) uint2 { unsigned int x, y; };
static inline uint2 make_uint2(unsigned int x, unsigned int y) { return {x, y}; }
static inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return {x, y, z, w}; }
static inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a * b) >> 32); }
/* One IEEE operation each: -O2 for baseline x86-64 has no FMA to contract them into. */
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double a) { return std::sqrt(a); }
static inline float __double2float_rn(double a) { return (float)a; }
"""

_ASM_REPLACEMENTS = [
    # The thread ends; the emulator moves on to the next one.
    (r'asm volatile\("exit;"\);', "gn_host_exit();"),
    (r'asm volatile\("mov\.u32 %0, %%laneid;" : "=r"\(lane\)\);', "lane = threadIdx.x % 32;"),
    (r'asm volatile\("mov\.u32 %0, %%dynamic_smem_size;" : "=r"\(bytes\)\);', "bytes = 0;"),
    (r'asm\("cvt\.s64\.s32 %0, %1;" : "=l"\(r\) : "r"\(v\)\);', "r = (long long)v;"),
    (r'asm\("div\.rn\.f(32|64) %0, %1, %2;" : "=[fd]"\(r\) : "[fd]"\(x\), "[fd]"\(y\)\);',
     "r = x / y;"),
]
# PTX-only specialisations: the generic templates above them have the same meaning.
_ASM_BLOCKS = [
    (r"#define GN_SELECT_MINMAX\(", r"#undef GN_SELECT_MINMAX\n"),
    (r"template <> __device__ __forceinline__ int gn_iabs<int>", r"\n\n"),
    (r"__device__ __forceinline__ int gn_asr32", r"#undef GN_SHR_SIGNED\n"),
    # Tensor-core and cp.async helpers have no host meaning; kernels using them are not emulated.
    (r"/\* ---- warp matrices and asynchronous copies", r"/\* A nonzero low address bit"),
]


def _include_shipped_headers(cuda: str) -> str:
    """``cuda`` with each ``#include`` of a header gpu_native ships replaced by its text (which
    the PTX rewrites below then apply to, as they would to the translation unit itself)."""
    def paste(m: re.Match) -> str:
        return headers.header_text(m.group(1)) if m.group(1) in headers.SHIPPED else m.group(0)

    return re.sub(r'^#include "([^"]+)"[ \t]*$', paste, cuda, flags=re.M)


def host_source(cuda: str) -> str:
    """``cuda`` (one generated translation unit) rewritten to compile as host C++."""
    text = _include_shipped_headers(cuda)
    for start, end in _ASM_BLOCKS:
        m = re.search(start, text)
        if m is None:
            continue
        e = re.search(end, text[m.start():])
        if e is None:
            raise ValueError(f"host_cuda: no end for {start!r}")
        cut = m.start() + e.start()
        keep = e.group(0) if not end.startswith("#undef") else ""
        text = text[:m.start()] + keep + text[cut + len(e.group(0)):]
    for pattern, replacement in _ASM_REPLACEMENTS:
        text = re.sub(pattern, replacement, text)
    if re.search(r"\basm\b", text):
        raise ValueError("host_cuda: the generated code has PTX this emulator does not know")
    text = re.sub(r'^#line .*$', "", text, flags=re.M)
    text = text.replace('extern "C" __global__', 'static')
    return SHIM + text


_PARAM = re.compile(r"static void (\w+)\(\s*(.*?)\)\s*\{", re.S)


def _driver(source: str, symbol: str) -> str:
    m = next((m for m in _PARAM.finditer(source) if m.group(1) == symbol), None)
    if m is None:
        raise ValueError(f"host_cuda: kernel {symbol} not found")
    params = [p.strip() for p in m.group(2).split(",") if p.strip()]
    unpack = []
    for k, p in enumerate(params):
        decl = p.replace("__restrict__", "").strip()
        ctype = decl.rsplit(None, 1)[0]
        if "*" in ctype:
            unpack.append(f"({ctype})argv[{k}]")
        else:
            unpack.append(f"*({ctype}*)argv[{k}]")
    call = f"{symbol}({', '.join(unpack)});"
    return (source + f"""
extern "C" int gn_host_launch(void** argv, unsigned int grid, unsigned int block) {{
    int exited = 0;
    gridDim = make_uint3(grid, 1, 1); blockDim = make_uint3(block, 1, 1);
    for (unsigned int b = 0; b < grid; ++b)
        for (unsigned int t = 0; t < block; ++t) {{
            blockIdx = make_uint3(b, 0, 0); threadIdx = make_uint3(t, 0, 0);
            try {{ {call} }} catch (gn_host_exit_t&) {{ ++exited; }}
        }}
    return exited;
}}
""")


_BUILT: dict[str, ctypes.CDLL] = {}


def compiler() -> str | None:
    """The host C++ compiler, or None."""
    return shutil.which(os.environ.get("CXX", "g++")) or shutil.which("clang++")


def build(cuda: str, symbol: str, sanitize: bool = True) -> ctypes.CDLL:
    """Compile one generated translation unit for the host; cached per source."""
    key = hashlib.sha256((cuda + symbol + str(sanitize)).encode()).hexdigest()[:20]
    if key in _BUILT:
        return _BUILT[key]
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no host C++ compiler")
    flags = ["-std=c++17", "-O2", "-shared", "-fPIC", "-w"]
    if sanitize:
        flags += ["-fsanitize=undefined", "-fno-sanitize=vptr"]
    # The library stays mapped once loaded, so its directory can go at once (a fuzz run builds
    # thousands).
    with tempfile.TemporaryDirectory(prefix="gn-host-") as directory:
        src = os.path.join(directory, "k.cpp")
        lib = os.path.join(directory, "k.so")
        with open(src, "w") as f:
            f.write(_driver(host_source(cuda), symbol))
        proc = subprocess.run([cxx, *flags, src, "-o", lib], capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"host_cuda: {cxx} failed:\n{proc.stderr[-3000:]}")
        _BUILT[key] = ctypes.CDLL(lib)
    return _BUILT[key]


def launch(cuda: str, symbol: str, arrays: list[np.ndarray], grid: int, block: int,
           sanitize: bool = True) -> tuple[int, bytes, list[str]]:
    """Run the kernel over ``grid`` x ``block`` threads on the host, writing ``arrays`` in place
    (1-D or 2-D, C-contiguous; each passed as pointer and extents, as the launcher does).
    Returns (threads that ended on an error, the 64-byte error record, UBSan's reports)."""
    lib = build(cuda, symbol, sanitize)
    keep = []
    argv = []
    for a in arrays:
        keep.append(a)
        argv.append(ctypes.c_void_p(a.ctypes.data))
        for extent in a.shape:
            v = ctypes.c_longlong(extent)
            keep.append(v)
            argv.append(ctypes.cast(ctypes.pointer(v), ctypes.c_void_p))
    record = (ctypes.c_ubyte * 64)()
    record_ptr = ctypes.c_void_p(ctypes.addressof(record))
    argv.append(record_ptr)
    array_t = ctypes.c_void_p * len(argv)
    # UBSan writes its reports to fd 2: catch them, so undefined behaviour fails the case.
    with tempfile.TemporaryFile() as log:
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            exited = lib.gn_host_launch(array_t(*argv), ctypes.c_uint(grid), ctypes.c_uint(block))
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        reports = [line for line in log.read().decode("utf-8", "replace").splitlines()
                   if "runtime error" in line]
    return int(exited), bytes(record), reports
