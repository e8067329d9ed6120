"""A gpu_native kernel mapped over the chunks of a large Dask array, on a cluster of workers.

    python examples/dask_map_blocks.py                 # 2 workers; on the simulator without a GPU
    python examples/dask_map_blocks.py --n 200000000 --chunk 20000000

* **Cluster.** With GPUs and dask-cuda installed, ``dask_cuda.LocalCUDACluster``: one worker per
  GPU, each seeing its GPU as device 0 through ``CUDA_VISIBLE_DEVICES``.  Otherwise
  ``distributed.LocalCluster`` with ``--workers`` worker processes (on one GPU they share it; on
  no GPU they run the simulator).
* **Kernels travel by module and name.** ``x.map_blocks(run_chunk, smoothstep_kernel, ...)``
  pickles the kernel as a reference to ``dask_kernels.smoothstep_kernel``; each worker imports
  that module and takes the kernel from it.
* **Compiled once, shared.** On a GPU the client precompiles the kernels of ``dask_kernels`` for
  the GPU's architecture into a directory (``gpu_native.precompile.precompile``, what
  ``gpu-native precompile`` runs) before starting the cluster, and the workers inherit
  ``GPU_NATIVE_PRECOMPILED`` pointing at it and ``GPU_NATIVE_REQUIRE_PRECOMPILED=1``: a worker that
  had to compile would fail, so a run that succeeds shows that no worker ran NVRTC.  (On the
  simulator nothing is compiled.)
"""

import argparse
import os
import sys
import tempfile
import time
from typing import cast

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _gpu_arch() -> str | None:
    """The first GPU's architecture (``sm_90``), or None without a GPU or on the simulator."""
    import gpu_native as gn

    if gn.backend() != "cuda":
        return None
    return gn.Device(0).arch


def _worker_gpu() -> str:
    """Which GPU this worker process runs on: the first entry of ``CUDA_VISIBLE_DEVICES`` (what
    dask-cuda sets per worker), ``shared`` when every worker sees every GPU, ``-`` on the
    simulator."""
    import gpu_native as gn

    if gn.backend() != "cuda":
        return "-"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return visible.split(",")[0] if visible else "shared"


def make_cluster(workers: int):
    """dask-cuda's one-worker-per-GPU cluster where there are GPUs and dask-cuda, else a local
    cluster of ``workers`` processes."""
    from distributed import LocalCluster

    if _gpu_arch() is not None:
        try:
            from dask_cuda import LocalCUDACluster  # type: ignore[import-not-found]
        except ImportError:
            pass
        else:
            return LocalCUDACluster(threads_per_worker=1), "dask_cuda.LocalCUDACluster"
    return (LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                         dashboard_address=None),  # pyright: ignore[reportArgumentType]
            f"distributed.LocalCluster ({workers} processes)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--n", type=int, default=2_000_003, help="elements in the array")
    parser.add_argument("--chunk", type=int, default=250_000, help="elements per chunk")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (no dask-cuda)")
    args = parser.parse_args(argv)

    import dask.array as da
    from distributed import Client

    sys.path.insert(0, HERE)  # the workers find dask_kernels through PYTHONPATH, set below
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (HERE, os.environ.get("PYTHONPATH")) if p)
    from dask_kernels import run_chunk, smoothstep_kernel, smoothstep_reference

    arch = _gpu_arch()
    with tempfile.TemporaryDirectory(prefix="gn-dask-") as shared:
        if arch is not None:
            from gpu_native.precompile import precompile

            report = precompile([os.path.join(HERE, "dask_kernels.py")], [arch], shared)
            print(f"precompiled {report.kernels} kernel(s) for {arch} into {shared}")
            os.environ["GPU_NATIVE_PRECOMPILED"] = shared       # inherited by the workers
            os.environ["GPU_NATIVE_REQUIRE_PRECOMPILED"] = "1"
        cluster, kind = make_cluster(args.workers)
        with cluster, Client(cluster) as client:
            # client.run is typed for async clients too; this one is synchronous: a dict.
            backends = cast(dict, client.run(lambda: __import__("gpu_native").backend()))
            gpus = cast(dict, client.run(_worker_gpu))
            print(f"{kind}: {len(backends)} workers, backends {sorted(set(backends.values()))}, "
                  f"GPUs {sorted(gpus.values())}")
            rng = np.random.default_rng()
            host = rng.uniform(-1.0, 2.0, args.n).astype(np.float32)
            x = da.from_array(host, chunks=args.chunk)
            y = x.map_blocks(run_chunk, smoothstep_kernel, 0.0, 1.0, dtype=np.float32)
            started = time.perf_counter()
            out = y.compute()
            seconds = time.perf_counter() - started
        err = float(np.max(np.abs(out - smoothstep_reference(host, 0.0, 1.0))))
        print(f"{args.n} elements in {x.numblocks[0]} chunks: {seconds:.2f} s, "
              f"max abs error {err:.2e}")
        if err > 1e-6:
            print("MISMATCH against NumPy", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
