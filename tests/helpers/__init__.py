"""What tests of several folders share: the repository's paths, the environment of a child
process, the check of a located transpile error, a call that must not block (on a FIFO), the
NVRTC compile of a transpiled module, a kernel source with its marked stores put under
``unsafe()``, and
the kernel modules beside this file (``kernels_runtime``, ``kernels_language`` and the
device functions of ``kernels_helpers``), imported as ``tests.helpers.kernels_runtime``."""

from __future__ import annotations

import functools
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HELPERS = Path(__file__).resolve().parent


def child_env(cache, **extra: str) -> dict[str, str]:
    """The environment of a child Python: this one's, with the repository first on
    ``PYTHONPATH``, no ``GPU_NATIVE_*`` setting but the cache directory ``cache``, then
    ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_NATIVE_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["GPU_NATIVE_CACHE_DIR"] = str(cache)
    env.update(extra)
    return env


@functools.cache
def gpu_available() -> bool:
    """Whether there is a CUDA GPU to run the ``gpu``-marked tests on."""
    try:
        from gpu_native.runtime import driver

        return driver.available()
    except Exception:
        return False


def located_transpile_error(source: str, path: Path, message: str):
    """Transpile ``source`` (written to ``path``) and return the TranspileError it must raise:
    one whose text holds ``message``, at the line marked ``# <-``, starting ``path:line:col:
    error: ``."""
    import pytest

    from gpu_native.errors import TranspileError
    from gpu_native.rewrite import rewrite_module

    path.write_text(source)
    with pytest.raises(TranspileError) as info:
        rewrite_module(source, str(path), path.stem)
    err = info.value
    text = str(err)
    marked = next(i for i, line in enumerate(source.splitlines(), 1) if "# <-" in line)
    assert message in text, text
    assert err.span is not None and err.span.line == marked, text
    assert text.startswith(f"{path}:{err.span.line}:{err.span.col + 1}: error: ")
    return err


def compiled_cleanly(source: str, path: str, module: str) -> list[str]:
    """Transpile ``source`` as module ``module`` at ``path`` and compile every variant of every
    kernel with NVRTC for sm_90: each must give a cubin and no message.  Returns their CUDA."""
    from gpu_native.cache import BuildRequest
    from gpu_native.compiler.nvrtc import compile_request
    from gpu_native.rewrite import transpile_module
    from gpu_native.spec import Trait

    cudas = []
    for kernel in transpile_module(source, path, module).kernels:
        for variant in kernel.variants:
            image = compile_request(BuildRequest(
                source=variant.cuda, symbol=variant.symbol, arch="sm_90", fastmath=False,
                max_registers=None, uses_half=Trait.USES_HALF in variant.traits,
                label=variant.symbol))
            assert image.kind == "cubin"
            assert image.log.strip("\x00").strip() == "", image.log
            cudas.append(variant.cuda)
    return cudas


def finishes(fn, seconds: float = 30.0):
    """``fn()``'s result (or its exception), or a failure if it is still running after
    ``seconds``: what a read of a FIFO without a writer would do forever.  The call runs in a
    daemon thread, which a failure leaves behind."""
    import threading

    result: list = []

    def run():
        try:
            result.append((True, fn()))
        except BaseException as exc:  # raised again below, in the test's thread
            result.append((False, exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"still running after {seconds} s: blocked on a FIFO?"
    ok, value = result[0]
    if not ok:
        raise value
    return value


def marked_unsafe(source: str, wrap: bool = True) -> str:
    """``source`` with each line ending in ``# <--`` put under ``with unsafe():`` (``wrap``),
    or with the mark dropped: a kernel the proofs refuse, and the same kernel run on the
    simulator's race detector to show that it races (or that it does not)."""
    lines = []
    for line in source.splitlines():
        if line.endswith("# <--"):
            text = line[:-len("# <--")].rstrip()
            if wrap:
                indent = text[:len(text) - len(text.lstrip())]
                lines.append(f"{indent}with unsafe():")
                text = "    " + text
            line = text
        lines.append(line)
    return "\n".join(lines) + "\n"
