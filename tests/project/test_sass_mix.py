"""tools/sass_mix.py: the SASS instruction mix of the benchmarked GEMMs.

The parsing and counting run on canned disassembler output (both formats), and the registers and
stack frame on cubins NVRTC builds here, so they need no disassembler; one test runs the real
disassembler where one is installed (``pip install 'gpu-native[sass]'``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gpu_native.build import BuildRequest
from gpu_native.compiler.nvrtc import compile_request
from gpu_native.rewrite import transpile_module
from tools import sass_mix
from tools.sass_mix import TOTAL, Instruction

# What `nvdisasm -c` prints (trimmed): labels on their own lines, branches to labels, one of them
# forward to a label defined further on; two functions.
NVDISASM = """\
\t.target\tsm_90

//--------------------- .text.first  --------------------------
\t.section\t.text.first,"ax",@progbits
        .global         first
first:
.text.first:
        /*0000*/                   S2R R2, SR_TID.X ;
        /*0010*/                   IMAD.MOV.U32 R3, RZ, RZ, 0x4 ;
.L_x_0:
        /*0020*/                   IADD3 R3, R3, -0x1, RZ ;
        /*0030*/                   ISETP.NE.AND P0, PT, R3, RZ, PT ;
        /*0040*/               @P0 BRA `(.L_x_0) ;
        /*0050*/              @!P2 BRA `(.L_x_2) ;
.L_x_1:
        /*0060*/                   LDG.E.128 R8, desc[UR4][R4.64] ;
        /*0070*/                   LDG.E.64 R12, desc[UR4][R4.64+0x10] ;
        /*0080*/                   LDG.E.U16.CONSTANT R14, desc[UR4][R4.64+0x20] ;
        /*0090*/                   HMMA.16816.F32 R16, R8, R12, R16 ;
        /*00a0*/                   FFMA R20, R8, R9, R20 ;
        /*00b0*/                   LDL R21, [R1] ;
        /*00c0*/                   STL [R1+0x4], R21 ;
        /*00d0*/              @!P1 BRA `(.L_x_1) ;
.L_x_2:
        /*00e0*/                   STG.E desc[UR4][R4.64], R20 ;
        /*00f0*/                   EXIT ;
.L_x_3:
        /*0100*/                   BRA `(.L_x_3);
        /*0110*/                   NOP;
.L_x_4:


//--------------------- .text.second  --------------------------
\t.section\t.text.second,"ax",@progbits
second:
.text.second:
        /*0000*/                   LDSM.16.M88.4 R4, [R2] ;
        /*0010*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR4][R6.64] ;
        /*0020*/                   EXIT ;
"""

# The same program as `cuobjdump -sass` prints it: "Function :" headers, branch targets as
# offsets, each instruction's encoding beside it and on a line of its own.
CUOBJDUMP = """\

\tcode for sm_90
\t\tFunction : first
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   S2R R2, SR_TID.X ;                 /* 0x0000000000027919 */
                                                                      /* 0x000e2e0000002100 */
        /*0010*/                   IMAD.MOV.U32 R3, RZ, RZ, 0x4 ;     /* 0x00000004ff037424 */
                                                                      /* 0x000fe200078e00ff */
        /*0020*/                   IADD3 R3, R3, -0x1, RZ ;           /* 0xffffffff03037810 */
                                                                      /* 0x000fc80007ffe0ff */
        /*0030*/                   ISETP.NE.AND P0, PT, R3, RZ, PT ;  /* 0x000000ff0300720c */
                                                                      /* 0x000fda0003f05270 */
        /*0040*/               @P0 BRA 0x20 ;                         /* 0xfffffffc00f40947 */
                                                                      /* 0x000fea000383ffff */
        /*0050*/              @!P2 BRA 0xe0 ;                         /* 0x0000000000209947 */
                                                                      /* 0x000fea0003800000 */
        /*0060*/                   LDG.E.128 R8, desc[UR4][R4.64] ;   /* 0x0000000404087981 */
                                                                      /* 0x000ea8000c1e1d00 */
        /*0070*/                   LDG.E.64 R12, desc[UR4][R4.64+0x10] ;  /* 0x00001004040c7981 */
                                                                      /* 0x000ea8000c1e1b00 */
        /*0080*/                   LDG.E.U16.CONSTANT R14, desc[UR4][R4.64+0x20] ;  /* 0x0000 */
                                                                      /* 0x000ea8000c1e1b00 */
        /*0090*/                   HMMA.16816.F32 R16, R8, R12, R16 ; /* 0x0000000c0810723c */
                                                                      /* 0x004fe20000001810 */
        /*00a0*/                   FFMA R20, R8, R9, R20 ;            /* 0x0000000908147223 */
                                                                      /* 0x000fe20000000014 */
        /*00b0*/                   LDL R21, [R1] ;                    /* 0x0000000001157983 */
                                                                      /* 0x000ea80000100800 */
        /*00c0*/                   STL [R1+0x4], R21 ;                /* 0x0000041501007387 */
                                                                      /* 0x004fe80000100800 */
        /*00d0*/              @!P1 BRA 0x60 ;                         /* 0xffffff8000e09947 */
                                                                      /* 0x000fea000383ffff */
        /*00e0*/                   STG.E desc[UR4][R4.64], R20 ;      /* 0x0000001404007986 */
                                                                      /* 0x000fe2000c101904 */
        /*00f0*/                   EXIT ;                             /* 0x000000000000794d */
                                                                      /* 0x000fea0003800000 */
        /*0100*/                   BRA 0x100;                         /* 0xfffffffc00fc7947 */
                                                                      /* 0x000fc0000383ffff */
        /*0110*/                   NOP;                               /* 0x0000000000007918 */
                                                                      /* 0x000fc00000000000 */
\t\t..........


\t\tFunction : second
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDSM.16.M88.4 R4, [R2] ;           /* 0x000000000204783b */
                                                                      /* 0x000e280000000200 */
        /*0010*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR4][R6.64] ;  /* 0x0000 */
                                                                      /* 0x000fe8000b981a04 */
        /*0020*/                   EXIT ;                             /* 0x000000000000794d */
                                                                      /* 0x000fea0003800000 */
\t\t..........
"""


@pytest.mark.parametrize("text", [NVDISASM, CUOBJDUMP], ids=["nvdisasm", "cuobjdump"])
def test_parses_both_disassemblers_alike(text):
    functions = sass_mix.parse_sass(text)
    assert list(functions) == ["first", "second"]
    first = functions["first"]
    assert [i.offset for i in first] == list(range(0, 0x120, 0x10))
    assert first[1] == Instruction(0x10, "IMAD.MOV.U32")
    # Backward, forward (to a label defined later) and self branches get their targets.
    assert {i.offset: i.target for i in first if i.target is not None} == {
        0x40: 0x20, 0x50: 0xE0, 0xD0: 0x60, 0x100: 0x100}
    assert [i.opcode for i in functions["second"]] == ["LDSM.16.M88.4", "LDGSTS.E.BYPASS.128",
                                                       "EXIT"]


def test_counts_each_class_once_and_leaves_out_nops():
    counts = sass_mix.classify(sass_mix.parse_sass(NVDISASM)["first"])
    assert counts["HMMA (tensor core, mma.sync)"] == 1 and counts["FFMA"] == 1
    assert (counts["LDG.128"], counts["LDG.64"], counts["LDG, 32 bits or less"]) == (1, 1, 1)
    assert counts["MOV, IMAD.MOV, CS2R (moves)"] == 1 and counts["IMAD (not IMAD.MOV)"] == 0
    assert counts["BRA"] == 4 and counts["ISETP (integer compare)"] == 1
    assert counts["LDL (local load: spill)"] == counts["STL (local store: spill)"] == 1
    assert counts["other"] == 1                    # EXIT
    assert counts[TOTAL] == 17                     # 18 instructions less the NOP
    assert sum(n for label, n in counts.items() if label != TOTAL) == counts[TOTAL]


def test_main_loop_is_the_loop_that_does_the_arithmetic():
    first = sass_mix.parse_sass(CUOBJDUMP)["first"]
    loop = sass_mix.main_loop(first)
    # Not the counting loop at 0x20 (no HMMA, FFMA), nor the trap loop branching to itself.
    assert [i.offset for i in loop] == list(range(0x60, 0xE0, 0x10))
    assert sass_mix.main_loop(sass_mix.parse_sass(CUOBJDUMP)["second"]) == []
    # Without arithmetic anywhere the shortest loop is taken, still not the trap loop.
    plain = [i for i in first if not i.opcode.startswith(("HMMA", "FFMA"))]
    assert [i.offset for i in sass_mix.main_loop(plain)] == [0x20, 0x30, 0x40]


SPILLS = r"""
extern "C" __global__ void spills(float* x, int n) {
    float buf[256];                          // too big for registers, indexed at run time: local
    for (int i = 0; i < 256; ++i) buf[i] = x[i * n];
    x[threadIdx.x] = buf[(n + threadIdx.x) & 255];
}
extern "C" __global__ void plain(float* x) { x[threadIdx.x] *= 2.0f; }
"""


@pytest.mark.slow
def test_registers_and_stack_frame_from_the_cubin():
    cubin = compile_request(BuildRequest(source=SPILLS, symbol="spills", arch="sm_90")).image
    usage = sass_mix.resource_usage(cubin)
    registers, frame = usage["spills"]
    assert frame == 256 * 4 and 0 < registers <= 255
    registers, frame = usage["plain"]
    assert frame == 0 and 0 < registers < 32
    with pytest.raises(ValueError, match="not a 64-bit ELF cubin"):
        sass_mix.resource_usage(b"//\n// Generated by NVIDIA NVVM Compiler\n.version 8.0")


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_finds_the_disassembler_of_a_wheel_or_of_triton(tmp_path, monkeypatch):
    wheel = _executable(tmp_path / "nvidia" / "cu13" / "bin" / "nvdisasm")
    triton = _executable(tmp_path / "triton" / "backends" / "nvidia" / "bin" / "cuobjdump")
    (tmp_path / "triton" / "__init__.py").write_text("")
    # Only these: an installed nvidia-cuda-nvdisasm wheel would join the namespace package.
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    for name in ("nvidia", "triton"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(sass_mix.shutil, "which", lambda name: None)
    dirs = sass_mix._bundled_dirs()
    assert wheel.parent in dirs and dirs[-1] == triton.parent
    assert sass_mix.find_disassembler() == wheel
    wheel.unlink()
    assert sass_mix.find_disassembler() == triton


def test_says_what_to_install_when_nothing_is_found(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sass_mix.shutil, "which", lambda name: None)
    monkeypatch.setattr(sass_mix, "_bundled_dirs", lambda: [tmp_path])
    with pytest.raises(sass_mix.DisassemblerNotFound, match=r"gpu-native\[sass\]"):
        sass_mix.find_disassembler()
    assert sass_mix.main(["--only", "hgemm_tc"]) == 2
    assert "pip install 'gpu-native[sass]'" in capsys.readouterr().err
    # An explicit path that cannot be run is named.
    (tmp_path / "nvdisasm").write_text("")
    with pytest.raises(sass_mix.DisassemblerNotFound, match="not an executable file"):
        sass_mix.find_disassembler(str(tmp_path / "nvdisasm"))


def test_unknown_benchmark_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        sass_mix.main(["--only", "hgemm_tc,sgemm_tild"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unknown benchmark(s) sgemm_tild" in err and "sgemm_vectorized" in err


def _disassembler() -> Path | None:
    try:
        return sass_mix.find_disassembler(os.environ.get("GN_DISASSEMBLER"))
    except sass_mix.DisassemblerNotFound:
        return None


# One warp: a 16 x 16 tile of A and of B staged in shared memory by cp_async, one ldmatrix each
# and one mma_sync m16n8k16.
TINY_MMA = """\
from gpu_native import (gpu_kernel, Kernel1D, CUDASlice2D, CUDASliceMut2D, f16, f32, shared_array,
                        local_array, lane_id, cp_async, cp_async_commit, cp_async_wait,
                        sync_threads, ldmatrix, mma_sync, store_matrix, unsafe, block_dim)


@gpu_kernel(Kernel1D)
def tiny_mma(a: CUDASlice2D[f16], b: CUDASlice2D[f16], c: CUDASliceMut2D[f32]):
    assert block_dim.x == 32
    assert a.shape[0] == 16 and a.shape[1] == 16, "a is 16 x 16"
    assert b.shape[0] == 16 and b.shape[1] == 16, "b is 16 x 16"
    assert c.shape[0] == 16 and c.shape[1] == 8, "c is 16 x 8"
    tile_a = shared_array(f16, (16, 16))
    tile_b = shared_array(f16, (16, 16))
    frag_a = local_array(f16, (1, 8))
    frag_b = local_array(f16, (2, 4))
    acc = local_array(f32, (1, 1, 4))
    lane = lane_id()
    r = lane // 2
    k = (lane % 2) * 8
    with unsafe():
        cp_async(tile_a, (r, k), a, (r, k), 16)
        cp_async(tile_b, (r, k), b, (r, k), 16)
    cp_async_commit()
    cp_async_wait(0)
    sync_threads()
    for e in range(4):
        acc[0, 0, e] = 0.0
    ldmatrix(frag_a, 0, tile_a, (lane % 16, (lane // 16) * 8))
    ldmatrix(frag_b, 0, tile_b, (lane % 16, (lane // 16) * 8), trans=True)
    mma_sync(acc, (0, 0), frag_a, 0, frag_b, 0)
    with unsafe():
        store_matrix(c, (0, 0), acc, (0, 0))
"""


@pytest.mark.skipif(_disassembler() is None,
                    reason="no nvdisasm or cuobjdump (pip install 'gpu-native[sass]')")
def test_real_disassembly_of_a_tensor_core_kernel():
    (spec,) = transpile_module(TINY_MMA, "tiny_mma.py", "tiny_mma").kernels
    (variant,) = spec.variants
    cubin = compile_request(BuildRequest.for_variant(spec, variant, "sm_90")).image
    tool = _disassembler()
    assert tool is not None
    mix = sass_mix.measure(tool, cubin, variant.symbol + "_i32")
    assert mix.kernel["HMMA (tensor core, mma.sync)"] == 1
    assert mix.kernel["LDSM (ldmatrix)"] == 2
    assert mix.kernel["LDGSTS (cp.async)"] == 2
    assert mix.kernel["BAR"] == 1 and mix.loop[TOTAL] == 0      # no loop
    assert mix.registers > 0 and mix.frame == 0
    assert set(sass_mix.parse_sass(sass_mix.disassemble(tool, cubin))) >= {
        variant.symbol, variant.symbol + "_i32"}


def test_warpgroup_mma_and_tensor_memory_copies_have_rows_of_their_own():
    # A peer's Hopper kernel (Triton, cuBLAS): wgmma and TMA, not "uniform datapath" or "other".
    ops = ["HGMMA.64x256x16.F32", "HGMMA.64x256x16.F32.gsb0", "UTMALDG.2D", "UBLKCP.S.G",
           "UIADD3", "WARPGROUP.ARRIVE"]
    counts = sass_mix.classify([sass_mix.Instruction(16 * i, op) for i, op in enumerate(ops)])
    assert counts["HGMMA (tensor core, warpgroup wgmma)"] == 2
    assert counts["UTMALDG, UBLKCP (tensor memory accelerator)"] == 2
    assert counts["uniform datapath (ULDC, UIADD3, S2UR...)"] == 1
    assert counts[sass_mix.OTHER] == 1 and counts[sass_mix.TOTAL] == 6
