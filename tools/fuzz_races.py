#!/usr/bin/env python3
"""Soundness fuzzing of the unique-write proofs: generated store indices, the checker's verdict,
and every accepted kernel run on the simulator's race detector and on the GPU.

    python3 -m tools.fuzz_races --out fuzz_races.json                  # GPU + simulator
    python3 -m tools.fuzz_races --backend sim --nvrtc --out races.json  # no GPU: simulator + NVRTC

run from the repository root (``tools`` is a package there).  Seed ``k`` draws one kernel from
the ``--family`` generator (:func:`tools.fuzz.indices.generated` by default; see
:data:`FAMILIES`) with ``random.Random(k)``; repeated sources are dropped.  Each kernel the
checker accepts runs on every launch shape its asserts allow (grid 1-3, block 32-128), and for
the ``guarded``, ``ranges``, ``mirrored``, ``pairing``, ``residues``, ``rowwalk``, ``reads``,
``calls``, ``entries`` and ``columns`` families with each ``n`` the launcher's checks let through, on the
simulator, its race detector watching every written array: a race report means the proof
accepted a racy kernel (the main check).  With ``--backend cuda`` each launch also runs on the GPU, ``out`` poisoned (0xDEADBEEF)
before each run on both: every element must agree bit for bit (written or still poisoned), and
a device error must be raised on both or neither.  A kernel that
stores into shared memory runs with a copy-out appended (:func:`~tools.fuzz.indices.with_copy_out`;
the stores are unchanged), whose elements the simulator shows uninitialised are not compared.
``--nvrtc`` compiles each accepted kernel with NVRTC for sm_90 (no GPU needed).

The exit status is 0 when nothing disagreed, raced or failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import numpy as np

from tools.fuzz import (
    calls,
    columns,
    entries,
    guarded,
    indices,
    mirrored,
    pairing,
    ranges,
    reads,
    residues,
    rowwalk,
    scaled,
    splits,
    tiles,
    warps,
)

CHUNK = 16


@dataclass(frozen=True)
class Family:
    """A generator ``--family`` picks: ``generated`` draws a module body from a random state;
    ``launches`` gives, for a kernel the checker accepted, each ``(args, grid, block)`` to run it
    with (``args`` the arguments after ``out``)."""

    generated: Callable[[random.Random], str]
    launches: Callable[[Any], Iterable[tuple[tuple, int, int]]]


def _shapes(kernel) -> Iterator[tuple[tuple, int, int]]:
    """The launch shapes of a kernel ``k(out)``: those its launch checks let through."""
    for grid, block in indices.launch_shapes(kernel):
        yield (), grid, block


def _warps_shapes(kernel) -> Iterator[tuple[tuple, int, int]]:
    """The launch shapes of a whole-warps kernel ``k(out)``: blocks of 16s, not only of 32s."""
    for grid, block in warps.launch_shapes(kernel):
        yield (), grid, block


def _guarded_launches(kernel) -> Iterator[tuple[tuple, int, int]]:
    """A kernel ``k(out, n)``: each ``n`` and shape the launcher's checks of ``n`` let through."""
    for n, grid, block in guarded.launches(kernel):
        yield (np.int32(n),), grid, block


FAMILIES = {"indices": Family(indices.generated, _shapes),
            "scaled": Family(scaled.generated, _shapes),
            "splits": Family(splits.generated, _shapes),
            "tiles": Family(tiles.generated, _shapes),
            "guarded": Family(guarded.generated, _guarded_launches),
            "ranges": Family(ranges.generated, _guarded_launches),
            "mirrored": Family(mirrored.generated, _guarded_launches),
            "pairing": Family(pairing.generated, _guarded_launches),
            "residues": Family(residues.generated, _guarded_launches),
            "rowwalk": Family(rowwalk.generated, _guarded_launches),
            "reads": Family(reads.generated, _guarded_launches),
            "calls": Family(calls.generated, _guarded_launches),
            "warps": Family(warps.generated, _warps_shapes),
            "entries": Family(entries.generated, _guarded_launches),
            "columns": Family(columns.generated, _guarded_launches)}


def _transpile(source: str, name: str):
    """The checked kernel ``k`` of a generated module, or None when the checker refuses it."""
    from gpu_native.errors import TranspileError
    from gpu_native.rewrite import transpile_module

    try:
        module = transpile_module(indices.HEADER + source, f"{name}.py", name)
    except TranspileError:
        return None
    return module.checked[0].specializations[0]


def _import(source: str, name: str, directory: str):
    """Write the module and import it through the real pipeline (the launcher ``k``)."""
    import importlib

    with open(os.path.join(directory, name + ".py"), "w") as f:
        f.write(indices.HEADER + source)
    importlib.invalidate_caches()
    return importlib.import_module(name).k


def _nvrtc(fn) -> str:
    from gpu_native.cache import BuildRequest
    from gpu_native.compiler.nvrtc import compile_request

    logs = []
    for variant in fn.variants.values():
        image = compile_request(BuildRequest(source=variant.cuda, symbol=variant.symbol,
                                             arch="sm_90", label=variant.label))
        if image.log:
            logs.append(image.log)
    return "\n".join(logs)


def _run_device(fn, grid: int, block: int, device: str, args: tuple = ()):
    """``out`` after one launch ``fn(out, *args)`` from poison through the runtime on backend
    ``device`` (``cuda``; ``sim`` checks this half without a GPU), and the device error's type or
    None."""
    import gpu_native as gn
    from gpu_native.runtime.backend import use

    with use(device):
        out = gn.to_device(np.full(indices.OUT_SIZE, indices.POISON, np.int32))
        fn.launch(gn.GridDim1D(grid), gn.BlockDim1D(block))(out, *args)
        error = None
        try:
            gn.synchronize()
        except gn.GpuNativeError as exc:
            error = type(exc).__name__
        return out.to_host(), error


def run_one(seed: int, source: str, device: str | None, nvrtc: bool, directory: str,
            family: str = "indices") -> dict:
    """Check one generated kernel of ``family`` and run it on the simulator, and when ``device``
    names a runtime backend (``cuda``) there too, compared: one plain dict of counts (and what
    went wrong)."""
    name = f"gnraces_{seed}_{os.getpid()}"
    item: dict = {"seed": seed, "accepted": False, "launches": 0, "gpu_launches": 0,
                  "compared": 0, "mismatches": [], "races": [], "sim_errors": 0,
                  "error_disagreements": [], "failure": None}
    try:
        original = _transpile(source, name)
        if original is None:
            return item
        item["accepted"] = True
        shared = indices.uses_shared(source)
        item["shared"] = shared
        run_source, kernel = source, original
        if shared:
            run_source = indices.with_copy_out(source)
            kernel = _transpile(run_source, name + "_copy")
            if kernel is None:
                item["failure"] = "the copy-out of an accepted shared-array kernel was refused"
                return item
        fn = None
        if nvrtc or device:
            fn = _import(run_source, name, directory)
        if nvrtc:
            log = _nvrtc(fn)
            if log:
                item["nvrtc_log"] = log[:400]
        for args, grid, block in FAMILIES[family].launches(original):
            # The original alone, as the checker saw it, then the kernel that is compared.
            runs = [original] if kernel is original else [original, kernel]
            shape = f"grid {grid}, block {block}" + "".join(f", {a}" for a in args)
            for k in runs:
                out = np.full(indices.OUT_SIZE, indices.POISON, np.int32)
                errors = indices.run_sim(k, grid, block, out, *args)
                item["launches"] += 1
                item["races"] += [f"{shape}: {m}" for m in errors.races]
                item["sim_errors"] += bool(errors.fails)
            if not device:
                continue
            got, gpu_error = _run_device(fn, grid, block, device, tuple(map(int, args)))
            item["gpu_launches"] += 1
            if bool(errors.fails) != (gpu_error is not None):
                item["error_disagreements"].append(
                    f"{shape}: simulator {errors.fails[:1] or 'no error'}, "
                    f"GPU {gpu_error or 'no error'}")
            compared, differ = indices.compare(out, got, shared)
            item["compared"] += compared
            for i in differ[:4]:
                item["mismatches"].append(
                    f"{shape}: out[{i}] simulator {out[i]:#x}, "
                    f"GPU {got[i]:#x}" + (f" ({len(differ)} elements differ)" if i == differ[0]
                                         else ""))
    except Exception:
        item["failure"] = traceback.format_exc(limit=6)
    return item


def run_chunk(cases: list[tuple[int, str]], backend: str, nvrtc: bool, workdir: str,
              family: str = "indices") -> list[dict]:
    """Worker: run some cases, one dict each (the source only where something went wrong)."""
    os.environ.setdefault("GPU_NATIVE_CACHE_DIR", os.path.join(workdir, "cache"))
    directory = os.path.join(workdir, f"modules-{os.getpid()}")
    os.makedirs(directory, exist_ok=True)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    results = []
    for seed, source in cases:
        item = run_one(seed, source, "cuda" if backend == "cuda" else None, nvrtc, directory,
                       family)
        if item["mismatches"] or item["races"] or item["failure"] or item["error_disagreements"]:
            item["source"] = source
        results.append(item)
    return results


def _bad(r: dict) -> bool:
    return bool(r["mismatches"] or r["races"] or r["failure"] or r["error_disagreements"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=30000,
                        help="kernels to draw (default 30000: about 2 minutes on 14 workers)")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--backend", choices=("cuda", "sim"), default="cuda",
                        help="cuda: GPU and simulator (default); sim: the simulator only")
    parser.add_argument("--nvrtc", action="store_true",
                        help="also compile each accepted kernel with NVRTC for sm_90")
    parser.add_argument("--jobs", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)))
    parser.add_argument("--time-limit", type=float, default=180.0,
                        help="seconds; no new cases start after it (default 180)")
    parser.add_argument("--out", default="fuzz_races_summary.json", help="JSON summary file")
    parser.add_argument("--replay", type=int, help="run one seed in this process and print it")
    parser.add_argument("--family", choices=sorted(FAMILIES), default="indices",
                        help="the generator, tools/fuzz/FAMILY.py (default indices)")
    args = parser.parse_args(argv)
    generate = FAMILIES[args.family].generated
    if args.backend == "cuda":
        from gpu_native.runtime import driver

        if not driver.available():
            parser.error("--backend cuda (the default) needs a CUDA GPU and none was found; "
                         "use --backend sim to run the simulator alone")

    if args.replay is not None:
        source = generate(random.Random(args.replay))
        print(source)
        with tempfile.TemporaryDirectory() as workdir:
            (item,) = run_chunk([(args.replay, source)], args.backend, args.nvrtc, workdir,
                                args.family)
        print(json.dumps(item, indent=1))
        return 1 if _bad(item) else 0

    start = time.perf_counter()
    seen: set[str] = set()
    cases = []
    for seed in range(args.start, args.start + args.seeds):
        source = generate(random.Random(seed))
        if source not in seen:
            seen.add(source)
            cases.append((seed, source))
    chunks = [cases[k:k + CHUNK] for k in range(0, len(cases), CHUNK)]
    results: list[dict] = []
    stopped = False
    with tempfile.TemporaryDirectory(prefix="gn-races-") as workdir:
        context = multiprocessing.get_context("spawn")  # one CUDA context per worker
        with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
            pending: set = set()
            while chunks or pending:
                while chunks and len(pending) < 2 * args.jobs and not stopped:
                    if time.perf_counter() - start > args.time_limit:
                        stopped = True
                        break
                    pending.add(pool.submit(run_chunk, chunks.pop(0), args.backend, args.nvrtc,
                                            workdir, args.family))
                if not pending:
                    break
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        results.extend(future.result())
                    except Exception as exc:  # a worker died: report it, keep going
                        results.append({"seed": None, "accepted": False, "launches": 0,
                                        "gpu_launches": 0, "compared": 0, "mismatches": [],
                                        "races": [], "sim_errors": 0, "error_disagreements": [],
                                        "failure": repr(exc)})
                if len(results) % 2000 < CHUNK:
                    print(f"  {len(results)} kernels, {sum(map(_bad, results))} bad, "
                          f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - start
    results.sort(key=lambda r: (r["seed"] is None, r["seed"]))
    accepted = [r for r in results if r["accepted"]]
    bad = [r for r in results if _bad(r)]
    summary = {
        "tool": "tools/fuzz_races.py",
        "family": args.family,
        "backend": args.backend,
        "nvrtc_compiled": args.nvrtc,
        "first_seed": args.start,
        "seeds": args.seeds,
        "generated": len(cases),
        "duplicates_dropped": args.seeds - len(cases),
        "run": len(results),
        "stopped_by_time_limit": stopped,
        "accepted": len(accepted),
        "refused": sum(1 for r in results if not r["accepted"] and r["seed"] is not None),
        "accepted_shared": sum(1 for r in accepted if r.get("shared")),
        "launches": sum(r["launches"] for r in results),
        "gpu_launches": sum(r["gpu_launches"] for r in results),
        "elements_compared": sum(r["compared"] for r in results),
        "mismatches": sum(1 for r in results if r["mismatches"]),
        "error_disagreements": sum(1 for r in results if r["error_disagreements"]),
        "race_reports": sum(len(r["races"]) for r in results),
        "sim_launches_with_device_errors": sum(r["sim_errors"] for r in results),
        "failures": sum(1 for r in results if r["failure"]),
        "nvrtc_logs": [r["seed"] for r in results if r.get("nvrtc_log")],
        "bad_seeds": [r["seed"] for r in bad],
        "seconds": round(elapsed, 1),
        **_device(),
        "bad": bad[:50],
    }
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1, default=str)
    print(f"fuzz_races: {summary['generated']} generated ({summary['duplicates_dropped']} "
          f"duplicates dropped), {summary['run']} run in {elapsed:.0f} s: "
          f"{summary['accepted']} accepted ({summary['accepted_shared']} shared-array), "
          f"{summary['refused']} refused; {summary['launches']} simulator launches, "
          f"{summary['gpu_launches']} GPU launches, {summary['elements_compared']} elements "
          f"compared; {summary['mismatches']} mismatches, {summary['error_disagreements']} "
          f"device-error disagreements, {summary['race_reports']} race reports, "
          f"{summary['failures']} failures; GPU {summary['gpu']}, NVRTC {summary['nvrtc']}; "
          f"summary in {args.out}")
    for r in bad[:5]:
        print(f"\nseed {r['seed']} (replay: python3 -m tools.fuzz_races --replay {r['seed']}"
              f" --family {args.family}{' --backend sim' if args.backend == 'sim' else ''}):")
        print("  " + str(r.get("source", "")).strip().replace("\n", "\n  "))
        for line in (r["races"][:3] + r["mismatches"][:4] + r["error_disagreements"][:2]
                     + ([r["failure"]] if r["failure"] else [])):
            print("  " + str(line).strip().replace("\n", "\n  ")[:2000])
    return 1 if bad else 0


def _device() -> dict:
    from tools.fuzz_gpu import device_description

    return device_description()


if __name__ == "__main__":
    sys.exit(main())
