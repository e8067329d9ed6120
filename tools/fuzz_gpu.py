#!/usr/bin/env python3
"""Differential fuzzing of code generation on a GPU: thousands of random kernels, each run on the
GPU and on the simulator and compared with the reference of docs/language.md.

    python3 -m tools.fuzz_gpu --cases 3000                 # GPU + simulator, JSON summary
    python3 -m tools.fuzz_gpu --cases 200 --backends sim --nvrtc   # no GPU: simulator + NVRTC

run from the repository root (``tools`` is a package there).  The kernels come from
:mod:`tools.fuzz.generator` (seed ``k`` always gives the same kernel, launch and inputs), the
reference from :mod:`tools.fuzz.reference`.  Every fourth seed is a straight-line
elementwise kernel (``--straight-every``); of the others, every third also loads at computed
indices, some out of range (``--indexing-every``): those must raise ``KernelIndexError`` for one
of the failing lanes' indices, and a bounds check dropped by a wrong proof shows up as a read
past the array that raises nothing.  Some of the rest use the language's other features
(``--bits-every``, ``--tuples-every``, ``--vectors-every``, ``--complex-every``, and
``--structs-every``, ``--const-every``, ``--rng-every`` for ``@gpu_struct`` values,
``const_array`` tables and Philox draws).  Cases run in worker processes (one CUDA
context each) so that NVRTC compiles in parallel; ``--time-limit`` stops submitting new cases in
time to write the summary.  Every failing case is written out with its source, so it can be
replayed with ``--replay SEED``.

The exit status is 0 when every case agreed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from tools.fuzz import generator
from tools.fuzz.harness import Workspace, run_case

CHUNK = 4


def config_for(seed: int, args):
    # Every fourth kernel is straight-line elementwise code: the 16-byte vector path.
    straight = True if args.straight_every and seed % args.straight_every == 0 else None
    # Every third (of the others) also loads at computed indices, some out of range: the bounds
    # checks and their proofs.  Seeds of runs made before this option replay with
    # --indexing-every 0.
    every = getattr(args, "indexing_every", 0)
    indexing = bool(every) and seed % every == 1 % every and straight is None
    # Every fifth (of the rest) uses the bit intrinsics and bitcast; --bits-every 0 replays
    # seeds of runs made before this option.
    every_bits = getattr(args, "bits_every", 0)
    bits = bool(every_bits) and seed % every_bits == 2 % every_bits and straight is None \
        and not indexing
    # Every seventh (of the rest) uses divmod, tuple assignments and loops over tuples;
    # --tuples-every 0 replays seeds of runs made before this option.
    every_tuples = getattr(args, "tuples_every", 0)
    tuples = bool(every_tuples) and seed % every_tuples == 3 % every_tuples \
        and straight is None and not indexing and not bits
    # Every eleventh (of the rest) uses vector locals, arithmetic, dot and length;
    # --vectors-every 0 replays seeds of runs made before this option.
    every_vectors = getattr(args, "vectors_every", 0)
    vectors = bool(every_vectors) and seed % every_vectors == 4 % every_vectors \
        and straight is None and not indexing and not bits and not tuples
    # Every thirteenth (of the rest) uses complex numbers; --complex-every 0 replays seeds of
    # runs made before this option.
    every_complex = getattr(args, "complex_every", 0)
    complex_ = bool(every_complex) and seed % every_complex == 5 % every_complex \
        and straight is None and not (indexing or bits or tuples or vectors)
    # Every seventeenth, nineteenth and twenty-third (of the rest) use @gpu_struct values,
    # const_array tables and Philox generators (tools/fuzz/records.py); 0 replays seeds of runs
    # made before these options.
    taken = straight is not None or indexing or bits or tuples or vectors or complex_
    every_structs = getattr(args, "structs_every", 0)
    structs = bool(every_structs) and seed % every_structs == 6 % every_structs and not taken
    every_tables = getattr(args, "const_every", 0)
    tables = bool(every_tables) and seed % every_tables == 7 % every_tables \
        and not (taken or structs)
    every_rng = getattr(args, "rng_every", 0)
    rng = bool(every_rng) and seed % every_rng == 8 % every_rng \
        and not (taken or structs or tables)
    return generator.Config(known_bugs=args.known_bugs, straight=straight,
                          max_statements=args.max_statements, max_depth=args.max_depth,
                          indexing=indexing, bits=bits, tuples=tuples, vectors=vectors,
                          complex=complex_, structs=structs, tables=tables, rng=rng)


def run_chunk(seeds: list[int], args, workdir: str) -> list[dict]:
    """Worker: run some seeds, return one plain dict per case."""
    os.environ.setdefault("GPU_NATIVE_CACHE_DIR", os.path.join(workdir, "cache"))
    workspace = Workspace(os.path.join(workdir, f"modules-{os.getpid()}"))
    out = []
    for seed in seeds:
        kernel = generator.random_kernel(seed, config_for(seed, args))
        result = run_case(kernel, workspace, backends=tuple(args.backends), nvrtc=args.nvrtc)
        item = {"seed": seed, "ok": result.ok, "exact": result.exact,
                "tolerant": result.tolerant, "skipped": result.skipped,
                "known_bugs": list(result.known_bugs), "seconds": round(result.seconds, 3),
                "layout": kernel.layout, "n": kernel.n, "block": kernel.block,
                "nvrtc_warnings": [w[:400] for w in result.warnings]}
        if not result.ok:
            item.update(mismatches=result.mismatches[:40], failure=result.failure,
                        source=result.source)
        out.append(item)
    return out


def device_description() -> dict:
    info: dict = {"python": platform.python_version()}
    try:
        import gpu_native as gn

        d = gn.Device(0)
        info["gpu"] = d.name
        info["arch"] = d.arch
    except Exception as exc:  # no GPU: the simulator-only mode
        info["gpu"] = f"none ({type(exc).__name__})"
    try:
        from gpu_native.compiler import nvrtc_version

        info["nvrtc"] = "{}.{}".format(*nvrtc_version())
    except Exception:
        info["nvrtc"] = None
    return info


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--backends", default="cuda,sim",
                        help="comma-separated: cuda, sim, host (the generated C++ built by the host "
                             "compiler; default cuda,sim)")
    parser.add_argument("--nvrtc", action="store_true",
                        help="also compile each kernel with NVRTC for sm_90 (no GPU needed)")
    parser.add_argument("--known-bugs", action="store_true",
                        help="also generate the patterns of bugs already reported")
    parser.add_argument("--straight-every", type=int, default=4,
                        help="every Nth seed is a straight-line elementwise kernel (0: none)")
    parser.add_argument("--indexing-every", type=int, default=3,
                        help="seeds s with s %% N == 1 %% N load at computed indices (0: none, 1: all)")
    parser.add_argument("--bits-every", type=int, default=5,
                        help="every Nth kernel uses bit intrinsics and bitcast (0: none)")
    parser.add_argument("--tuples-every", type=int, default=7,
                        help="every Nth kernel uses divmod, tuple assignments and loops over "
                             "tuples (0: none)")
    parser.add_argument("--vectors-every", type=int, default=11,
                        help="every Nth kernel uses vector locals, dot and length (0: none)")
    parser.add_argument("--complex-every", type=int, default=13,
                        help="every Nth kernel uses complex64 and complex128 (0: none)")
    parser.add_argument("--structs-every", type=int, default=17,
                        help="every Nth kernel uses @gpu_struct locals, fields, device functions "
                             "and arrays of structs (0: none)")
    parser.add_argument("--const-every", type=int, default=19,
                        help="every Nth kernel reads const_array tables (0: none)")
    parser.add_argument("--rng-every", type=int, default=23,
                        help="every Nth kernel draws from Philox generators (0: none)")
    parser.add_argument("--max-statements", type=int, default=6)
    parser.add_argument("--max-depth", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)))
    parser.add_argument("--time-limit", type=float, default=480.0,
                        help="seconds; no new cases start after it (default 480)")
    parser.add_argument("--json", default="fuzz_gpu_summary.json", help="summary file")
    parser.add_argument("--replay", type=int, help="run one seed in this process and print it")
    args = parser.parse_args(argv)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]

    if args.replay is not None:
        kernel = generator.random_kernel(args.replay, config_for(args.replay, args))
        print(generator.kernel_source(kernel))
        with tempfile.TemporaryDirectory() as workdir:
            results = run_chunk([args.replay], args, workdir)
        print(json.dumps(results[0], indent=1))
        return 0 if results[0]["ok"] else 1

    start = time.perf_counter()
    seeds = list(range(args.start, args.start + args.cases))
    chunks = [seeds[k:k + CHUNK] for k in range(0, len(seeds), CHUNK)]
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="gn-fuzz-") as workdir:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
            pending = set()
            queue = list(chunks)
            stopped = False
            while queue or pending:
                while queue and len(pending) < 2 * args.jobs and not stopped:
                    if time.perf_counter() - start > args.time_limit:
                        stopped = True
                        break
                    pending.add(pool.submit(run_chunk, queue.pop(0), args, workdir))
                if stopped:
                    queue.clear()
                if not pending:
                    break
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        results.extend(future.result())
                    except Exception as exc:  # a worker died: report it, keep going
                        results.append({"seed": None, "ok": False, "failure": repr(exc),
                                        "exact": 0, "tolerant": 0, "skipped": 0,
                                        "known_bugs": []})
                ran = len(results)
                if ran and ran % 200 < CHUNK:
                    print(f"  {ran} cases, {sum(not r['ok'] for r in results)} failed, "
                          f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - start
    results.sort(key=lambda r: (r["seed"] is None, r["seed"]))
    failed = [r for r in results if not r["ok"]]
    summary = {
        "tool": "tools/fuzz_gpu.py",
        "backends": args.backends,
        "nvrtc_compiled": args.nvrtc,
        "known_bug_patterns_included": args.known_bugs,
        "cases_requested": args.cases,
        "cases_run": len(results),
        "passed": len(results) - len(failed),
        "failed": len(failed),
        "failed_seeds": [r["seed"] for r in failed],
        "outputs_compared_exactly": sum(r["exact"] for r in results),
        "outputs_compared_within_bound": sum(r["tolerant"] for r in results),
        "outputs_not_comparable": sum(r["skipped"] for r in results),
        "cases_with_nvrtc_warnings": [r["seed"] for r in results if r.get("nvrtc_warnings")],
        "straight_line_cases": sum(1 for r in results if r.get("seed") is not None
                                   and args.straight_every
                                   and r["seed"] % args.straight_every == 0),
        "seconds": round(elapsed, 1),
        "cases_per_second": round(len(results) / elapsed, 2) if elapsed else None,
        "first_seed": args.start,
        **device_description(),
        "failures": failed[:50],
    }
    with open(args.json, "w") as f:
        json.dump(summary, f, indent=1, default=str)
    print(f"fuzz_gpu: {summary['cases_run']} cases on {'+'.join(args.backends)}"
          f"{' (+NVRTC)' if args.nvrtc else ''} in {elapsed:.0f} s: {summary['passed']} agreed, "
          f"{summary['failed']} failed; {summary['outputs_compared_exactly']} outputs compared "
          f"exactly, {summary['outputs_compared_within_bound']} within a derived float bound, "
          f"{summary['outputs_not_comparable']} not comparable; GPU {summary['gpu']}, "
          f"NVRTC {summary['nvrtc']}; summary in {args.json}")
    for r in failed[:5]:
        print(f"\nseed {r['seed']} (replay: python3 -m tools.fuzz_gpu --replay {r['seed']}"
              f"{' --known-bugs' if args.known_bugs else ''}):")
        if r.get("failure"):
            print("  " + str(r["failure"]).strip().replace("\n", "\n  ")[:3000])
        for m in r.get("mismatches", [])[:8]:
            print("  " + m)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
