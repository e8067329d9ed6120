"""The SASS instruction mix of the benchmarked GEMM kernels beside their hand-written CUDA C++.

For each benchmark of tools/bench_suite.py that compares a generated kernel with the same
algorithm written by hand (``sgemm_vectorized``, ``hgemm_tc``, ``bgemm_tc``, ``gemm_bias_gelu``,
``gemm_bias_gelu_wgmma``),
this compiles three kernels to a cubin with the project's own pipeline
(:func:`gpu_native.compiler.nvrtc.compile_request`, NVRTC on the CPU, so no GPU is needed): the
example's kernel as it is, with ``bounds_check=False`` (the suite's second row), and the hand-written
CUDA C++ of tools/bench_suite.py / tools/_bench_hgemm.py, which the suite's CuPy ``RawKernel``
compiles with the same NVRTC options (``-lineinfo -std=c++17``).  Of a generated kernel it reads the
entry point the suite's 4096-cubed launches run: ``<symbol>_i32``, the 32-bit index one.

It disassembles each cubin with ``nvdisasm`` or ``cuobjdump`` (the pip wheels
``nvidia-cuda-nvdisasm`` / ``nvidia-cuda-cuobjdump``: ``pip install 'gpu-native[sass]'``) and
counts the static instructions by class, in the whole kernel and in one iteration of its main
loop (the backward branch whose span holds the most HMMA, HGMMA and FFMA).  Registers and the stack frame
come from the cubin's ``.nv.info`` section, so they need no disassembler.

    python3 -m tools.sass_mix [--only hgemm_tc,bgemm_tc] [--markdown] [--disassembler PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ("nvdisasm", "cuobjdump")
INSTALL_HINT = ("install the disassembler with `pip install 'gpu-native[sass]'` (the "
                "nvidia-cuda-nvdisasm wheel) or `pip install nvidia-cuda-cuobjdump`, or pass "
                "--disassembler PATH")


class DisassemblerNotFound(RuntimeError):
    """Neither ``nvdisasm`` nor ``cuobjdump`` was found; the message says what to install."""


# ---- finding and running the disassembler -------------------------------------------------------


def _bundled_dirs() -> list[Path]:
    """The ``bin`` folders of the installed ``nvidia`` wheels (``nvidia/cu13/bin`` for CUDA 13,
    ``nvidia/cuda_nvdisasm/bin`` for CUDA 12) and of Triton's bundled CUDA tools, found without
    importing either package."""
    dirs: list[Path] = []
    spec = importlib.util.find_spec("nvidia")
    for location in (spec.submodule_search_locations or []) if spec else []:
        dirs += sorted(Path(location).glob("*/bin"), reverse=True)   # cu13 before cu12
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.origin:
        dirs.append(Path(spec.origin).parent / "backends" / "nvidia" / "bin")
    return dirs


def find_disassembler(explicit: str | None = None) -> Path:
    """The disassembler to run: ``explicit`` if given, else ``nvdisasm`` or ``cuobjdump`` on
    ``PATH``, in the installed ``nvidia`` wheels, or in Triton's bundled tools.

    Raises
    ------
    DisassemblerNotFound
        When ``explicit`` is not an executable file, or nothing is found.
    """
    if explicit is not None:
        path = Path(explicit)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise DisassemblerNotFound(f"--disassembler {explicit}: not an executable file")
        return path
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            return Path(found)
    for directory in _bundled_dirs():
        for tool in TOOLS:
            path = directory / tool
            if path.is_file() and os.access(path, os.X_OK):
                return path
    raise DisassemblerNotFound(f"no nvdisasm or cuobjdump on PATH, in the nvidia wheels or in "
                               f"Triton; {INSTALL_HINT}")


def disassemble(tool: Path, cubin: bytes) -> str:
    """The SASS text of every function in ``cubin``: ``nvdisasm -c`` or ``cuobjdump -sass``."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "kernel.cubin"
        path.write_bytes(cubin)
        flag = "-sass" if "cuobjdump" in tool.name else "-c"
        run = subprocess.run([str(tool), flag, str(path)], capture_output=True, text=True,
                             timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"{tool} {flag} failed ({run.returncode}): {run.stderr.strip()}")
    return run.stdout


# ---- parsing and counting -----------------------------------------------------------------------

_FUNCTION = re.compile(r"(?:Function : |\.section\s+\.text\.)([\w$]+)")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)"
                          r"([^;]*);")
_TARGET = re.compile(r"`\((\.L_x_\d+)\)|\b0x([0-9a-f]+)\b")


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: its byte offset in the function, its opcode with modifiers
    (``"LDG.E.128.CONSTANT"``) and, for a branch, the offset it jumps to."""

    offset: int
    opcode: str
    target: int | None = None


def parse_sass(text: str) -> dict[str, list[Instruction]]:
    """The instructions of each function in ``nvdisasm -c`` or ``cuobjdump -sass`` output."""
    functions: dict[str, list[Instruction]] = {}
    labels: dict[str, int] = {}
    pending: list[str] = []      # labels seen, waiting for the offset of the next instruction
    branches: list[tuple[list[Instruction], int, str]] = []
    current: list[Instruction] | None = None
    for line in text.splitlines():
        function = _FUNCTION.search(line)
        if function:
            current = functions.setdefault(function.group(1), [])
            continue
        label = _LABEL.match(line)
        if label:
            pending.append(label.group(1))
            continue
        match = _INSTRUCTION.match(line)
        if match is None or current is None:
            continue
        offset, opcode, operands = int(match.group(1), 16), match.group(2), match.group(3)
        for name in pending:
            labels[name] = offset
        pending.clear()
        target = _TARGET.search(operands) if opcode.split(".")[0] == "BRA" else None
        if target and target.group(2):
            current.append(Instruction(offset, opcode, int(target.group(2), 16)))
        else:
            if target:          # an nvdisasm label, perhaps defined further on
                branches.append((current, len(current), target.group(1)))
            current.append(Instruction(offset, opcode))
    for instructions, index, name in branches:
        if name in labels:
            instructions[index] = Instruction(instructions[index].offset,
                                              instructions[index].opcode, labels[name])
    return functions


Test = Callable[[str, "set[str]"], bool]


def _ops(*bases: str) -> Test:
    return lambda base, mods: base in bases


def _ldg(width: str) -> Test:
    def test(base: str, mods: set[str]) -> bool:
        return base == "LDG" and (width in mods if width != "32" else not mods & {"128", "64"})
    return test


# The rows of the table, in order: (label, test of an opcode's base and its set of modifiers).
CLASSES: tuple[tuple[str, Test], ...] = (
    ("HMMA (tensor core, mma.sync)", _ops("HMMA")),
    ("HGMMA (tensor core, warpgroup wgmma)", _ops("HGMMA")),
    ("UTMALDG, UBLKCP (tensor memory accelerator)", _ops("UTMALDG", "UBLKCP")),
    ("LDSM (ldmatrix)", _ops("LDSM")),
    ("LDGSTS (cp.async)", _ops("LDGSTS")),
    ("LDG.128", _ldg("128")),
    ("LDG.64", _ldg("64")),
    ("LDG, 32 bits or less", _ldg("32")),
    ("STG", _ops("STG")),
    ("LDS", _ops("LDS")),
    ("STS", _ops("STS")),
    ("FFMA", _ops("FFMA")),
    ("other float (FADD, FMUL, MUFU, F2FP...)",
     _ops("FADD", "FMUL", "FMNMX", "MUFU", "F2F", "F2FP", "HADD2", "HFMA2", "HMUL2", "FSETP",
          "FSEL", "FCHK")),
    ("IMAD (not IMAD.MOV)", lambda base, mods: base == "IMAD" and "MOV" not in mods),
    ("IADD3, VIADD", _ops("IADD3", "VIADD")),
    ("LEA", _ops("LEA")),
    ("SHF, LOP3, PRMT, SGXT (bit ops)", _ops("SHF", "LOP3", "PRMT", "SGXT", "BFE", "BMSK")),
    ("MOV, IMAD.MOV, CS2R (moves)",
     lambda base, mods: base in ("MOV", "CS2R") or (base == "IMAD" and "MOV" in mods)),
    ("ISETP (integer compare)", _ops("ISETP")),
    ("BRA", _ops("BRA")),
    ("BSSY, BSYNC (divergent branches)", _ops("BSSY", "BSYNC")),
    ("CALL", _ops("CALL")),
    ("BAR", _ops("BAR")),
    ("S2R, LDC (thread ids, parameters)", _ops("S2R", "LDC")),
    ("uniform datapath (ULDC, UIADD3, S2UR...)",
     lambda base, mods: base.startswith("U") or base in ("S2UR", "R2UR")),
    ("LDL (local load: spill)", _ops("LDL")),
    ("STL (local store: spill)", _ops("STL")),
)
OTHER, TOTAL = "other", "total (without NOP)"


def classify(instructions: list[Instruction]) -> Counter[str]:
    """Counts of ``instructions`` by the rows of :data:`CLASSES` (each counted once, in the
    first row that takes it; the rest in ``"other"``), and their total; NOPs (padding) are not
    counted."""
    counts: Counter[str] = Counter()
    for instruction in instructions:
        base, *rest = instruction.opcode.split(".")
        if base == "NOP":
            continue
        mods = set(rest)
        label = next((name for name, test in CLASSES if test(base, mods)), OTHER)
        counts[label] += 1
        counts[TOTAL] += 1
    return counts


def main_loop(instructions: list[Instruction]) -> list[Instruction]:
    """The instructions of the kernel's main loop: the span of a backward branch (its target to
    the branch) holding the most HMMA and HGMMA, or where there are none (a SIMT GEMM) the most
    FFMA, the shortest such span on a tie; empty if the kernel has no loop.  (A tensor-core
    GEMM's FFMA do not count: a fused GELU's epilogue holds more of them than the main loop, and
    a branch back from a retry loop placed after the epilogue spans both.)"""
    best: tuple[int, int, int] | None = None
    best_span: list[Instruction] = []
    for index, branch in enumerate(instructions):
        # (a branch to itself is the trap loop after the last EXIT, not a loop of the program)
        if branch.target is None or branch.target >= branch.offset:
            continue
        span = [i for i in instructions[:index + 1] if i.offset >= branch.target]
        ops = [i.opcode.split(".")[0] for i in span]
        tensor = sum(op in ("HMMA", "HGMMA") for op in ops)
        key = (tensor, 0 if tensor else ops.count("FFMA"), -len(span))
        if best is None or key > best:
            best, best_span = key, span
    return best_span


# ---- registers and stack frame from the cubin ---------------------------------------------------

_EIFMT_SVAL, _EIATTR_FRAME_SIZE, _EIATTR_REGCOUNT = 0x04, 0x11, 0x2F


def resource_usage(cubin: bytes) -> dict[str, tuple[int, int]]:
    """``{function: (registers, stack frame bytes)}`` from the ``EIATTR_REGCOUNT`` and
    ``EIATTR_FRAME_SIZE`` attributes of a cubin's ``.nv.info`` section (64-bit ELF)."""
    if cubin[:5] != b"\x7fELF\x02":
        raise ValueError("not a 64-bit ELF cubin")
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    # (name, type, flags, addr, offset, size, link, info, align, entsize) of each section
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * entsize)
                for i in range(count)]

    def data(section) -> bytes:
        return cubin[section[4]:section[4] + section[5]]

    def string(table: bytes, offset: int) -> str:
        return table[offset:table.index(b"\0", offset)].decode()

    names = data(sections[names_index])
    by_name = {string(names, s[0]): s for s in sections}
    symtab = by_name[".symtab"]
    strtab, symbols = data(sections[symtab[6]]), data(symtab)
    found: dict[str, list[int]] = {}
    info, pos = data(by_name[".nv.info"]), 0
    while pos + 4 <= len(info):
        fmt, attribute, size = struct.unpack_from("<BBH", info, pos)
        if fmt == _EIFMT_SVAL and attribute in (_EIATTR_REGCOUNT, _EIATTR_FRAME_SIZE):
            symbol, value = struct.unpack_from("<II", info, pos + 4)
            (name_offset,) = struct.unpack_from("<I", symbols, symbol * 24)
            entry = found.setdefault(string(strtab, name_offset), [0, 0])
            entry[attribute == _EIATTR_FRAME_SIZE] = value
        pos += 4 + (size if fmt == _EIFMT_SVAL else 0)   # only SVAL has a payload
    return {name: (regs, frame) for name, (regs, frame) in found.items()}


# ---- the kernels --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """One benchmark: the example kernel (``example``, a path under examples/ without ``.py``;
    its kernel ``kernel`` specialised to ``types``) and the hand-written kernel ``symbol`` of the
    CUDA C++ named ``source`` (an attribute of tools/bench_suite.py or tools/_bench_hgemm.py)."""

    example: str
    kernel: str
    types: tuple[tuple[str, str], ...]
    source: str
    symbol: str
    hand_arch: str = ""   # the hand-written kernel's target where it is not the run's (sm_90a)
    defines: tuple[str, ...] = ()   # -D options of the hand-written source ("NAME=VALUE")


PAIRS = {
    "sgemm_vectorized": Pair("gallery/sgemm_vectorized", "sgemm_vectorized_kernel", (),
                             "SGEMM_VECTORIZED_CUDA", "sgemm_vectorized"),
    "hgemm_tc": Pair("tensor_core/hgemm_tensor_core", "hgemm_tc_kernel",
                     (("T", "f16"), ("Out", "f16")), "HGEMM_CUDA", "hgemm_tc_f16"),
    "bgemm_tc": Pair("tensor_core/hgemm_tensor_core", "hgemm_tc_kernel",
                     (("T", "bf16"), ("Out", "bf16")), "HGEMM_CUDA", "hgemm_tc_bf16"),
    "gemm_bias_gelu": Pair("tensor_core/gemm_bias_gelu", "gemm_bias_gelu_kernel", (),
                           "HGEMM_CUDA", "gemm_bias_gelu_f16"),
    "sgemm_tf32": Pair("tensor_core/sgemm_tf32", "sgemm_tf32_kernel", (), "SGEMM_TF32_CUDA",
                       "sgemm_tf32"),
    # The example's algorithm by hand is tools/tma_probe.py's sync4 (with the same grouped
    # block order, 8 block rows).
    "hgemm_wgmma": Pair("tensor_core/hgemm_wgmma", "hgemm_wgmma_kernel", (("T", "f16"),),
                        "TMA_PROBE", "tma_f16", "sm_90a",
                        ("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0", "TS_GROUP=8")),
    "bgemm_wgmma": Pair("tensor_core/hgemm_wgmma", "hgemm_wgmma_kernel", (("T", "bf16"),),
                        "TMA_PROBE", "tma_bf16", "sm_90a",
                        ("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0", "TS_GROUP=8")),
    "gemm_bias_gelu_wgmma": Pair("tensor_core/gemm_bias_gelu_wgmma",
                                 "gemm_bias_gelu_wgmma_kernel", (("T", "f16"),), "TMA_PROBE",
                                 "tma_f16", "sm_90a", ("TS_MODE=0", "TS_STAGES=4", "TS_EPI=0",
                                                       "TS_GROUP=8", "TS_GELU=1")),
}
COLUMNS = ("gpu_native", "gpu_native, bounds_check=False", "CUDA C++ (hand-written)")


def compile_example(pair: Pair, checked: bool, arch: str) -> tuple[bytes, str]:
    """The cubin of the example's kernel (with ``bounds_check=False`` unless ``checked``) and the
    entry point the benchmark runs, built as the runtime builds it."""
    from gpu_native.build import BuildRequest
    from gpu_native.compiler.nvrtc import compile_request
    from gpu_native.rewrite import transpile_module
    from tools import bench_suite

    path = ROOT / "examples" / f"{pair.example}.py"
    source = path.read_text() if checked else bench_suite.unchecked_source(pair.example)
    module = transpile_module(source, str(path.relative_to(ROOT)), Path(pair.example).name)
    spec = next(k for k in module.kernels if k.name == pair.kernel)
    variant = next(v for v in spec.variants if v.types == pair.types)
    image = compile_request(BuildRequest.for_variant(spec, variant, arch))
    symbol = variant.symbol + "_i32"
    return image.image, symbol if symbol.encode() in image.image else variant.symbol


def compile_hand_written(pair: Pair, arch: str) -> tuple[bytes, str]:
    """The cubin of the hand-written kernel, with the options the suite's ``RawKernel`` uses."""
    from gpu_native.build import BuildRequest
    from gpu_native.compiler.nvrtc import compile_request
    from tools import _bench_hgemm, bench_suite

    if pair.source == "TMA_PROBE":
        sys.path.insert(0, str(ROOT / "tools"))
        import tma_probe

        source = tma_probe.source()
    else:
        source = getattr(bench_suite, pair.source, None) or getattr(_bench_hgemm, pair.source)
    source = "".join(f"#define {d.replace('=', ' ', 1)}\n" for d in pair.defines) + source
    image = compile_request(BuildRequest(source=source, symbol=pair.symbol,
                                         arch=pair.hand_arch or arch))
    return image.image, pair.symbol


@dataclass(frozen=True)
class Mix:
    """What one kernel's SASS holds: counts over the whole kernel and one main-loop iteration."""

    symbol: str
    kernel: Counter[str]
    loop: Counter[str]
    registers: int
    frame: int


def measure(tool: Path, cubin: bytes, symbol: str) -> Mix:
    """The :class:`Mix` of function ``symbol`` in ``cubin``."""
    instructions = parse_sass(disassemble(tool, cubin))[symbol]
    registers, frame = resource_usage(cubin).get(symbol, (0, 0))
    return Mix(symbol, classify(instructions), classify(main_loop(instructions)), registers, frame)


def table(mixes: list[Mix], markdown: bool, columns: list[str] | None = None) -> str:
    """The rows of :data:`CLASSES` (those non-zero in some kernel) with ``kernel / loop`` counts,
    one column per kernel, headed by ``columns`` (default :data:`COLUMNS`); then registers and
    the stack frame."""
    header = ["instructions: whole kernel / one main-loop iteration", *(columns or COLUMNS)]
    labels = [name for name, _ in CLASSES] + [OTHER, TOTAL]
    rows = [[label, *(f"{m.kernel[label]} / {m.loop[label]}" for m in mixes)]
            for label in labels if any(m.kernel[label] for m in mixes)]
    rows.append(["registers", *(str(m.registers) for m in mixes)])
    rows.append(["stack frame (bytes)", *(str(m.frame) for m in mixes)])
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(mixes)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(row, widths)))
                     for row in [header, *rows])


def report(names: list[str], arch: str, tool: Path, markdown: bool) -> str:
    """The tables of the benchmarks ``names`` (keys of :data:`PAIRS`) for ``arch``, each under a
    title naming the three kernels' entry points."""
    parts = []
    for name in names:
        pair = PAIRS[name]
        builds = [compile_example(pair, True, arch), compile_example(pair, False, arch),
                  compile_hand_written(pair, arch)]
        mixes = [measure(tool, cubin, symbol) for cubin, symbol in builds]
        title = f"{name}: {', '.join(f'`{m.symbol}`' for m in mixes)}, {arch}"
        parts.append(f"### {title}\n\n" if markdown else f"{title}\n")
        parts[-1] += table(mixes, markdown)
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.sass_mix",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated benchmarks, of: " + ", ".join(PAIRS))
    parser.add_argument("--markdown", action="store_true", help="markdown tables")
    parser.add_argument("--arch", default="sm_90", help="GPU architecture (default sm_90)")
    parser.add_argument("--disassembler", help="path of nvdisasm or cuobjdump")
    parser.add_argument("--cubin", type=Path, action="append", default=[],
                        help="also (or only) a table of this cubin's functions, e.g. a peer's "
                             "from tools/peer_kernels.py (repeatable)")
    args = parser.parse_args(argv)
    names = list(PAIRS)
    if args.only:
        unknown = [n for n in args.only.split(",") if n not in PAIRS]
        if unknown:
            parser.error(f"--only: unknown benchmark(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(PAIRS)}")
        names = [n for n in names if n in args.only.split(",")]
    try:
        tool = find_disassembler(args.disassembler)
    except DisassemblerNotFound as exc:
        print(f"sass_mix: {exc}", file=sys.stderr)
        return 2
    if args.cubin:
        for path in args.cubin:
            cubin = path.read_bytes()
            functions = parse_sass(disassemble(tool, cubin))
            mixes = [measure(tool, cubin, symbol) for symbol in functions]
            print(f"### {path.name}: {', '.join(f'`{m.symbol}`' for m in mixes)}\n")
            print(table(mixes, args.markdown, [m.symbol for m in mixes]) + "\n")
        if not args.only:
            return 0
    print(report(names, args.arch, tool, args.markdown))
    print(f"\n(disassembled by {tool})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
