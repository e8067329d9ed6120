"""What tools/bench_suite.py's ``sgemm_tiled`` benchmark builds, checked without a GPU: its
hand-written CUDA C++ compiles with NVRTC under the options the suite's CuPy ``RawKernel`` uses,
the gallery kernel's ``bounds_check=False`` copy compiles without its bounds checks and computes
the product on the simulator, and the command line offers the benchmark."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys

import numpy as np
import pytest

from gpu_native.cache import BuildRequest
from gpu_native.compiler.nvrtc import compile_request
from gpu_native.rewrite import transpile_module
from tests.helpers import ROOT, child_env

SUITE = ROOT / "tools" / "bench_suite.py"


@pytest.fixture(scope="module")
def suite():
    """tools/bench_suite.py imported from its file (tools/ is no package); it puts examples/,
    examples/gallery and tools/ on ``sys.path``, which is restored afterwards."""
    path, modules = list(sys.path), set(sys.modules)
    spec = importlib.util.spec_from_file_location("bench_suite_under_test", SUITE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # its dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90"])
def test_hand_written_register_tiled_sgemm_compiles_cleanly(suite, arch):
    from sgemm_register_tiled import BK, BM, BN, TM, TN

    source = suite.sgemm_tiled_cuda(BM, BN, BK, TM, TN)
    assert f"BM = {BM}, BN = {BN}, BK = {BK}, TM = {TM}, TN = {TN};" in source
    image = compile_request(BuildRequest(source=source, symbol="sgemm_register_tiled",
                                         arch=arch))
    # The suite's RawKernel options, less the architecture CuPy adds itself.
    assert {"-lineinfo", "-std=c++17"} <= set(image.options)
    assert image.kind == "cubin" and image.image[:4] == b"\x7fELF"
    assert image.log.strip("\x00").strip() == ""


# The hand-written kernel compiled as C++ for the CPU: one std::thread per CUDA thread of a block,
# ``__syncthreads()`` a std::barrier, ``__shared__`` a static array (blocks run one after another),
# so the tiling, the shared loads and the bounds guards are checked without a GPU.
EMULATOR = r"""
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>
struct Dim { int x, y; };
thread_local Dim threadIdx, blockIdx;
std::barrier<>* block_barrier;
#define __global__
#define __restrict__
#define __shared__ static
#define __syncthreads() block_barrier->arrive_and_wait()
KERNEL
int main(int argc, char** argv) {
    int M = atoi(argv[1]), K = atoi(argv[2]), N = atoi(argv[3]);
    std::mt19937 gen(1);
    std::normal_distribution<float> normal;
    std::vector<float> A(M * K), B(K * N), C(M * N, NAN);
    for (auto& v : A) v = normal(gen);
    for (auto& v : B) v = normal(gen);
    for (int by = 0; by < (M + BM - 1) / BM; ++by)
        for (int bx = 0; bx < (N + BN - 1) / BN; ++bx) {
            std::barrier<> barrier(THREADS);
            block_barrier = &barrier;
            std::vector<std::thread> threads;
            for (int ty = 0; ty < TY; ++ty)
                for (int tx = 0; tx < TX; ++tx)
                    threads.emplace_back([=, &A, &B, &C] {
                        threadIdx = {tx, ty};
                        blockIdx = {bx, by};
                        sgemm_register_tiled(A.data(), B.data(), C.data(), M, K, N); });
            for (auto& t : threads) t.join();
        }
    double err = 0, norm = 0;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double r = 0;
            for (int k = 0; k < K; ++k) r += (double)A[i * K + k] * B[k * N + j];
            err += (C[i * N + j] - r) * (C[i * N + j] - r);
            norm += r * r;
        }
    printf("%.3e\n", std::sqrt(err / norm));
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (C++20) to emulate the kernel")
@pytest.mark.slow
def test_hand_written_register_tiled_sgemm_computes_the_product(suite, tmp_path):
    from sgemm_register_tiled import BK, BM, BN, TM, TN

    source = EMULATOR.replace("KERNEL", suite.sgemm_tiled_cuda(BM, BN, BK, TM, TN))
    (tmp_path / "emulate.cpp").write_text(source)
    build = subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", "emulate.cpp", "-o",
                            "emulate"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    if build.returncode != 0 and "barrier" in build.stderr:
        pytest.skip(f"g++ lacks C++20 <barrier>: {build.stderr[-300:]}")
    assert build.returncode == 0, build.stderr
    # Sizes that are not multiples of the tiles (partial blocks and a partial last k-slice), and
    # ones that are.
    for m, k, n in ((100, 70, 90), (2 * BM, 8 * BK, 3 * BN), (1, 1, 1)):
        run = subprocess.run([str(tmp_path / "emulate"), str(m), str(k), str(n)],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert float(run.stdout) <= 1e-5, (m, k, n, run.stdout)


@pytest.mark.slow
def test_unchecked_gallery_sgemm_compiles_without_bounds_checks(suite):
    checked = (ROOT / "examples" / "gallery" / "sgemm_register_tiled.py").read_text()
    source = suite.unchecked_source("gallery/sgemm_register_tiled")
    assert source.count("bounds_check=False") == 1
    (kernel,) = transpile_module(source, "sgemm_register_tiled_unchecked.py",
                                 "sgemm_register_tiled_unchecked").kernels
    # The example proves every index from its shape contract; without the contract its loads
    # are checked (the control that the search below would see checks).
    contract = '    assert grid_dim.x * BN >= c.shape[1], "the grid covers c\'s columns"\n'
    assert contract in checked
    (proven,) = transpile_module(checked, "sgemm_register_tiled.py",
                                 "sgemm_register_tiled").kernels
    assert not any("gn_chk32(" in v.cuda for v in proven.variants)
    (with_checks,) = transpile_module(checked.replace(contract, ""), "sgemm_register_tiled.py",
                                      "sgemm_register_tiled").kernels
    assert any("gn_chk32(" in v.cuda for v in with_checks.variants)
    for variant in kernel.variants:
        assert "gn_chk32(" not in variant.cuda and "gn_at2_32(" not in variant.cuda
        image = compile_request(BuildRequest(source=variant.cuda, symbol=variant.symbol,
                                             arch="sm_90"))
        assert image.kind == "cubin" and image.log.strip("\x00").strip() == ""


@pytest.mark.slow
def test_unchecked_gallery_sgemm_computes_the_product(suite):
    import gpu_native as gn
    from gpu_native.runtime.backend import use

    module = suite.unchecked("gallery/sgemm_register_tiled")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((100, 70), dtype=np.float32)
    b = rng.standard_normal((70, 90), dtype=np.float32)
    with use("sim"):
        c = gn.empty((100, 90), gn.f32)
        c.fill(np.nan)
        module.sgemm_register_tiled(gn.to_device(a), gn.to_device(b), c)
        out = c.to_host()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(out - ref) <= 1e-5 * np.linalg.norm(ref)


@pytest.mark.slow
def test_command_line_offers_sgemm_tiled(tmp_path):
    run = subprocess.run([sys.executable, str(SUITE), "--help"], capture_output=True, text=True,
                         env=child_env(tmp_path), timeout=120)
    assert run.returncode == 0, run.stderr
    assert "sgemm_tiled" in run.stdout
    run = subprocess.run([sys.executable, str(SUITE), "--only", "sgemm_tild"],
                         capture_output=True, text=True, env=child_env(tmp_path), timeout=120)
    assert run.returncode == 2
    assert "unknown benchmark(s) sgemm_tild" in run.stderr and "sgemm_tiled" in run.stderr


# ---- sgemm_vectorized ----------------------------------------------------------------------------


@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90"])
def test_hand_written_vectorized_sgemm_compiles_cleanly(suite, arch):
    from sgemm_vectorized import BK, BM, BN, THREADS

    source = suite.SGEMM_VECTORIZED_CUDA
    assert f"BM = {BM}, BN = {BN}, BK = {BK}, THREADS = {THREADS}," in source
    image = compile_request(BuildRequest(source=source, symbol="sgemm_vectorized", arch=arch))
    assert image.kind == "cubin" and image.image[:4] == b"\x7fELF"
    assert image.log.strip("\x00").strip() == ""


@pytest.mark.slow
def test_unchecked_vectorized_sgemm_has_no_checks_and_computes_the_product(suite):
    import gpu_native as gn
    from gpu_native.runtime.backend import use

    source = suite.unchecked_source("gallery/sgemm_vectorized")
    assert "@gpu_kernel(Kernel2D, bounds_check=False, max_registers=128)" in source
    (kernel,) = transpile_module(source, "sgemm_vectorized_unchecked.py",
                                 "sgemm_vectorized_unchecked").kernels
    for variant in kernel.variants:
        assert "gn_chk" not in variant.cuda and "gn_vload_chk" not in variant.cuda
        assert "gn_vload<gn_vec4f>" in variant.cuda
    module = suite.unchecked("gallery/sgemm_vectorized")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((130, 20), dtype=np.float32)
    b = rng.standard_normal((20, 132), dtype=np.float32)
    with use("sim"):
        c = gn.empty((130, 132), gn.f32)
        c.fill(np.nan)
        module.sgemm_vectorized(gn.to_device(a), gn.to_device(b), c)
        out = c.to_host()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(out - ref) <= 1e-5 * np.linalg.norm(ref)


@pytest.mark.slow
def test_checked_vectorized_sgemm_has_no_checks_in_its_inner_loop():
    source = (ROOT / "examples" / "gallery" / "sgemm_vectorized.py").read_text()
    (kernel,) = transpile_module(source, "sgemm_vectorized.py", "sgemm_vectorized").kernels
    cuda = kernel.variants[0].cuda
    # From the shared loads of the k loop to the stores of the next slice: no check at all.
    start = cuda.index("a_lo = ")
    inner = cuda[start:cuda.index("tile_a[(buf", start)]
    assert inner.count("gn_vload<gn_vec4f>(&tile_a[") == 2 and "gn_chk" not in inner
    assert "gn_vload_chk" not in inner
    # The two global loads of each entry point: their alignment is proven from the shape
    # contract (row lengths multiples of 4) and the launcher's address check, their bounds from
    # the guards, the contract and a grid that covers c; no access of the kernel is checked.
    entries = cuda.count('extern "C" __global__')
    assert "gn_vload_chk" not in cuda and "gn_chk" not in cuda
    assert cuda.count("gn_vload<gn_vec4f>(&a[") == entries
    assert cuda.count("gn_vload<gn_vec4f>(&b[") == entries


def test_command_line_offers_sgemm_vectorized(tmp_path):
    run = subprocess.run([sys.executable, str(SUITE), "--help"], capture_output=True, text=True,
                         env=child_env(tmp_path), timeout=120)
    assert run.returncode == 0, run.stderr
    assert "sgemm_vectorized" in run.stdout


# ---- hgemm_tc, bgemm_tc (tools/_bench_hgemm.py) ---------------------------------------------------


@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90"])
@pytest.mark.parametrize("symbol", ["hgemm_tc_f16", "hgemm_tc_bf16", "gemm_bias_gelu_f16"])
def test_hand_written_tensor_core_gemm_compiles_cleanly(suite, arch, symbol):
    import _bench_hgemm
    import hgemm_tensor_core as ex

    source = _bench_hgemm.HGEMM_CUDA
    assert symbol in _bench_hgemm.HGEMM_CUDA_KERNELS
    # The same tiling as the example it is compared against.
    assert (f"BM = {ex.BM}, BN = {ex.BN}, BK = {ex.BK}, STAGES = {ex.STAGES}, WM = {ex.WM}, "
            f"WN = {ex.WN},") in source
    image = compile_request(BuildRequest(source=source, symbol=symbol, arch=arch))
    assert image.kind == "cubin" and image.image[:4] == b"\x7fELF"
    assert image.log.strip("\x00").strip() == ""
    assert symbol.encode() in image.image


@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90"])
def test_hand_written_tf32_gemm_compiles_cleanly(suite, arch):
    import _bench_hgemm
    import sgemm_tf32 as ex

    source = _bench_hgemm.SGEMM_TF32_CUDA
    # The same tiling and padding as the example it is compared against.
    assert (f"BM = {ex.BM}, BN = {ex.BN}, BK = {ex.BK}, STAGES = {ex.STAGES}, WM = {ex.WM}, "
            f"WN = {ex.WN},") in source
    assert "A_ROW = BK + 4, B_ROW = BN + 8;" in source
    assert (ex.A_ROW, ex.B_ROW) == (ex.BK + 4, ex.BN + 8)
    image = compile_request(BuildRequest(source=source, symbol="sgemm_tf32", arch=arch))
    assert image.kind == "cubin" and image.image[:4] == b"\x7fELF"
    assert image.log.strip("\x00").strip() == ""


@pytest.mark.slow
def test_unchecked_hgemm_tc_has_no_checks_and_computes_the_product(suite):
    from gpu_native.runtime.backend import use

    source = suite.unchecked_source("tensor_core/hgemm_tensor_core")
    assert source.count("@gpu_kernel(Kernel2D, bounds_check=False)") == 1
    (kernel,) = transpile_module(source, "hgemm_tensor_core_unchecked.py",
                                 "hgemm_tensor_core_unchecked").kernels
    for variant in kernel.variants:
        assert "gn_chk" not in variant.cuda
    module = suite.unchecked("tensor_core/hgemm_tensor_core")
    import gpu_native as gn

    rng = np.random.default_rng(5)
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    with use("sim"):
        c = gn.empty((128, 128), gn.f16)
        module.hgemm_tc(gn.to_device(a), gn.to_device(b), c)
        out = c.to_host().astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(out - ref) <= 2e-3 * np.linalg.norm(ref)


def test_command_line_offers_the_tensor_core_gemms(tmp_path):
    run = subprocess.run([sys.executable, str(SUITE), "--help"], capture_output=True, text=True,
                         env=child_env(tmp_path), timeout=120)
    assert run.returncode == 0, run.stderr
    assert "hgemm_tc" in run.stdout and "bgemm_tc" in run.stdout
    assert "gemm_bias_gelu" in run.stdout


@pytest.mark.slow
def test_unchecked_gemm_bias_gelu_computes_the_fused_product(suite):
    import gpu_native as gn
    from gpu_native.runtime.backend import use

    source = suite.unchecked_source("tensor_core/gemm_bias_gelu")
    assert source.count("@gpu_kernel(Kernel2D, bounds_check=False)") == 1
    module = suite.unchecked("tensor_core/gemm_bias_gelu")
    rng = np.random.default_rng(6)
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = (rng.standard_normal((64, 128)) / 8).astype(np.float16)
    bias = rng.standard_normal(128).astype(np.float16)
    with use("sim"):
        c = gn.empty((128, 128), gn.f16)
        module.gemm_bias_gelu(gn.to_device(a), gn.to_device(b), gn.to_device(bias), c)
        out = c.to_host().astype(np.float64)
    ref = module.reference(a, b, bias)
    assert np.linalg.norm(out - ref) <= 2e-3 * np.linalg.norm(ref)


# ---- the SASS instruction mix (tools/sass_mix.py) -------------------------------------------------


def test_suite_reports_the_sass_mix_of_the_gemms_it_ran(suite, monkeypatch):
    from tools import sass_mix

    assert suite.sass_table(["vector_add", "sgemm"], "sm_90") is None
    monkeypatch.setattr(sass_mix.shutil, "which", lambda name: None)
    monkeypatch.setattr(sass_mix, "_bundled_dirs", lambda: [])
    text = suite.sass_table(["vector_add", "hgemm_tc"], "sm_90")
    assert text.startswith("Not made: ") and "gpu-native[sass]" in text
    monkeypatch.setattr(sass_mix, "find_disassembler", lambda: ROOT / "nvdisasm")
    monkeypatch.setattr(sass_mix, "report", lambda names, arch, tool, markdown: (
        f"{names} {arch} {tool.name} {markdown}"))
    text = suite.sass_table(["hgemm_tc", "sgemm", "gemm_bias_gelu"], "sm_90")
    assert text.startswith("`python3 -m tools.sass_mix --markdown --arch sm_90`")
    assert text.endswith("['hgemm_tc', 'gemm_bias_gelu'] sm_90 nvdisasm True")


# ---- hgemm_wgmma, bgemm_wgmma (tools/_bench_hgemm.py) ---------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("symbol", ["hgemm_wgmma_f16", "hgemm_wgmma_bf16", "hgemm_wgmma_f16_f32",
                                    "hgemm_wgmma_bf16_f32"])
def test_hand_written_wgmma_gemm_compiles_for_sm_90a_as_the_suite_builds_it(suite, symbol):
    import _bench_hgemm
    import hgemm_wgmma as ex

    # The same tile and ring as the example it is compared against.
    assert (ex.BM, ex.BN, ex.BK, ex.THREADS) == (_bench_hgemm.WGMMA_BM, _bench_hgemm.WGMMA_BN,
                                                 _bench_hgemm.WGMMA_BK,
                                                 _bench_hgemm.WGMMA_THREADS)
    assert _bench_hgemm.wgmma_shared_bytes(ex.STAGES) == ex.SHARED_BYTES
    source = f"#define WG_STAGES {ex.STAGES}\n" + _bench_hgemm.HGEMM_WGMMA_CUDA
    image = compile_request(BuildRequest(source=source, symbol=symbol, arch="sm_90a"))
    assert (image.kind, image.target) == ("cubin", "sm_90a")
    assert symbol.encode() in image.image


def _unchecked_without_checks(suite, example: str, decorator: str):
    """The suite's ``bounds_check=False`` copy of examples/<example>.py, after checking that its
    one kernel is declared ``decorator`` and that no specialisation keeps a bounds check or a
    device-side assert."""
    source = suite.unchecked_source(example)
    assert source.count(decorator) == 1
    name = example.split("/")[-1] + "_unchecked"
    (kernel,) = transpile_module(source, f"{name}.py", name).kernels
    for variant in kernel.variants:
        assert "gn_chk" not in variant.cuda and "gn_assert" not in variant.cuda
    return suite.unchecked(example)


@pytest.mark.slow
def test_unchecked_hgemm_wgmma_has_no_checks_and_computes_the_product(suite):
    import gpu_native as gn
    from gpu_native.runtime.backend import use

    module = _unchecked_without_checks(suite, "tensor_core/hgemm_wgmma",
                                       "@gpu_kernel(Kernel3D, bounds_check=False)")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((128, 128)).astype(np.float16)
    b = rng.standard_normal((128, 256)).astype(np.float16)
    with use("sim"):
        c = gn.empty((128, 256), gn.f16)
        module.hgemm_wgmma(gn.to_device(a), gn.to_device(b), c)
        out = c.to_host().astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # One rounding of each output to f16 (half an ulp, 2^-11 relative).
    assert np.linalg.norm(out - ref) <= 1e-3 * np.linalg.norm(ref)


def test_the_suite_offers_the_wgmma_gemms(suite):
    assert {"hgemm_wgmma", "bgemm_wgmma"} <= set(suite.BENCHES)
    assert callable(suite.Suite.hgemm_wgmma) and callable(suite.Suite.bgemm_wgmma)


# ---- gemm_bias_gelu_wgmma (tools/_bench_hgemm.py; the hand-written kernel in tools/tma_probe.py)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["sync4", "sync4flat", "sync4gelu"])
def test_the_suites_tma_kernels_compile_for_sm_90a(suite, variant):
    import tma_probe

    defines = tma_probe.VARIANTS[variant][0]
    source = "".join(f"#define {d.replace('=', ' ', 1)}\n" for d in defines) + tma_probe.source()
    for symbol in ("tma_f16", "tma_bf16"):
        image = compile_request(BuildRequest(source=source, symbol=symbol, arch="sm_90a"))
        assert (image.kind, image.target) == ("cubin", "sm_90a")
        assert symbol.encode() in image.image


def test_the_hand_written_fused_kernel_is_the_gemm_with_the_gelu_epilogue(suite):
    """sync4gelu is sync4 plus the epilogue: the same defines and TS_GELU=1, which adds the tanh
    GELU of the accumulator plus the bias before the store."""
    import tma_probe

    gelu, plain = tma_probe.VARIANTS["sync4gelu"], tma_probe.VARIANTS["sync4"]
    assert set(gelu[0]) - set(plain[0]) == {"TS_GELU=1"} and gelu[1:] == plain[1:]
    assert "#if TS_GELU" in tma_probe.SOURCE and "gelu_tanh(acc[4 * j] + b0)" in tma_probe.SOURCE


@pytest.mark.slow
def test_unchecked_fused_wgmma_kernel_has_no_checks_and_computes_it(suite):
    import gemm_bias_gelu_wgmma as ex

    import gpu_native as gn
    from gpu_native.runtime.backend import use

    module = _unchecked_without_checks(
        suite, "tensor_core/gemm_bias_gelu_wgmma",
        "@gpu_kernel(Kernel3D, bounds_check=False, fastmath=True)")
    rng = np.random.default_rng(8)
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = (rng.standard_normal((64, 256)) / 8).astype(np.float16)
    bias = rng.standard_normal(256).astype(np.float16)
    with use("sim"):
        c = gn.empty((128, 256), gn.f16)
        module.gemm_bias_gelu_wgmma(gn.to_device(a), gn.to_device(b), gn.to_device(bias), c)
        out = c.to_host().astype(np.float64)
    ref = ex.reference(*(x.astype(np.float64) for x in (a, b, bias)))
    assert np.linalg.norm(out - ref) <= 1e-3 * np.linalg.norm(ref)


def test_the_suite_offers_the_fused_wgmma_gemm(suite):
    assert "gemm_bias_gelu_wgmma" in suite.BENCHES
    assert callable(suite.Suite.gemm_bias_gelu_wgmma)


@pytest.mark.slow
def test_chart_from_a_saved_run_lays_the_panels_in_rows(suite, tmp_path, monkeypatch):
    """``--chart-from`` redraws a saved run's chart without a GPU, at most CHART_COLUMNS panels a
    row (with every benchmark in one row the chart was too wide to read)."""
    pytest.importorskip("matplotlib")
    import json

    import matplotlib.pyplot as plt

    rows = [suite.Row(f"bench{i}", variant, 1.0, value, "TB/s", True)
            for i in range(7) for variant, value in (("gpu_native", 2.0), ("CUDA C++", 1.5))]
    saved = tmp_path / "bench.json"
    saved.write_text(json.dumps({"meta": {}, "rows": [r.__dict__ for r in rows]}))
    made = []
    real = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    assert suite.main(["--out", str(tmp_path / "out"), "--chart-from", str(saved)]) == 0
    assert (tmp_path / "out" / "bench.png").stat().st_size > 0
    axes = made[0][1]
    assert axes.shape == (2, suite.CHART_COLUMNS)
    assert [ax.get_visible() for ax in axes.flat] == [True] * 7 + [False] * 3
    assert [ax.get_title() for ax in axes.flat[:7]] == [f"bench{i}" for i in range(7)]
