"""``gpu-native precompile PKG_OR_PATH... --arch sm_80,sm_90 --out DIR [-j N]``.

Builds every kernel of the given packages, modules or files for every arch, with no GPU, into
``DIR`` (artifacts and ``manifest.json``, with the modes your umask gives).  Nothing reaches
``DIR`` unless every kernel compiled: the first error stops the build and names the kernel's
file:line.  At run time ``GPU_NATIVE_PRECOMPILED=DIR`` — or
``DIR`` = ``mypkg/__gpu_native__`` shipped inside the package — makes them found before the user
cache; add ``GPU_NATIVE_REQUIRE_PRECOMPILED=1`` to forbid compiling on the target machine.
"""

from __future__ import annotations

import argparse
import os
import sys

# Show a progress line when there are at least this many compilations.
_PROGRESS_FROM = 8


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "precompile", help="compile every kernel ahead of time, for deployment without NVRTC",
        description="Compile every kernel (and every specialisation of a generic kernel) found "
        "in the given packages, modules or files, for every given arch, into DIR with a "
        "manifest.json. Needs no GPU; never imports the modules.")
    p.add_argument("targets", nargs="+", metavar="PKG_OR_PATH",
                   help="a dotted package or module name (found on sys.path), a file or a "
                   "directory")
    p.add_argument("--arch", action="append", required=True, metavar="sm_XX[,sm_YY...]",
                   help="GPU architectures, comma-separated or repeated (e.g. sm_80,sm_90)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output directory (e.g. mypkg/__gpu_native__ to ship it in the package)")
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="parallel compilations (default: one per CPU)")
    p.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    p.set_defaults(func=run)


class _Progress:
    """``[ 7/24] pkg.mod.kernel sm_90`` on one refreshed line on a terminal, every tenth otherwise."""

    def __init__(self, stream, quiet: bool):
        self.stream = stream
        self.quiet = quiet
        self.is_tty = stream.isatty()
        self.shown = False

    def __call__(self, done: int, total: int, job) -> None:
        if self.quiet or total < _PROGRESS_FROM:
            return
        width = len(str(total))
        line = f"[{done:>{width}}/{total}] {job.request.label} {job.request.arch}"
        if self.is_tty:
            self.stream.write("\r\x1b[K" + line)
            self.shown = True
            if done == total:
                self.stream.write("\n")
        elif done == total or done % max(1, total // 10) == 0:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def run(args: argparse.Namespace) -> int:
    from ..errors import GpuNativeError
    from ..precompile import precompile

    if args.jobs is not None and args.jobs < 1:
        raise GpuNativeError("-j/--jobs must be at least 1")
    progress = _Progress(sys.stderr, args.quiet)
    try:
        report = precompile(args.targets, args.arch, args.out, jobs=args.jobs, progress=progress)
    finally:
        progress.finish()
    for text in report.warnings:
        print(f"gpu-native: NVRTC warnings for {text}", file=sys.stderr)
    for text in report.skipped:
        print(f"gpu-native: note: {text}", file=sys.stderr)
    if report.private_files:
        import shlex

        first, more = report.private_files[0], len(report.private_files) - 1
        if report.only_own_files:  # nothing there but what gpu-native precompile wrote
            fix = f"chmod -R a+rX {shlex.quote(report.out_dir)}"
        else:
            fix = "chmod a+rX " + " ".join(shlex.quote(p) for p in report.private_files)
        print(f"gpu-native: note: other accounts cannot read {first}"
              f"{f' (and {more} more there)' if more else ''}, though your umask would let them "
              "(left private by an earlier build); if another account runs this deployment: "
              f"{fix}", file=sys.stderr)
    if not args.quiet:
        for arch, target, count in report.ptx_summary():
            print(f"gpu-native: note: {arch} is newer than NVRTC {report.nvrtc} knows, so its "
                  f"{count} artifact{'s are' if count != 1 else ' is'} PTX for {target}, which "
                  f"needs a driver at least as new as NVRTC {report.nvrtc}", file=sys.stderr)
        out = os.path.relpath(report.out_dir) if not os.path.isabs(args.out) else report.out_dir
        print(f"precompiled {report.kernels} kernel{'s' * (report.kernels != 1)} from "
              f"{report.modules} module{'s' * (report.modules != 1)} for "
              f"{', '.join(report.archs)}: {report.artifacts} "
              f"artifact{'s' * (report.artifacts != 1)} in {out} "
              f"(NVRTC {report.nvrtc}, {report.seconds:.1f} s)")
    return 0
