"""A gpu_native kernel in every rank of a ``torch.distributed`` job, then an all-reduce.

    torchrun --nproc_per_node=NUM_GPUS examples/distributed_torchrun.py    # NCCL, one GPU per rank
    torchrun --standalone --nproc_per_node=2 examples/distributed_torchrun.py   # no GPU: gloo

Each rank owns a shard of byte-valued samples (made from its rank, so every rank can rebuild the
whole data set to check the answer).  It histograms its shard with ``histogram_kernel``, and one
all-reduce sums the per-rank histograms into the histogram of the whole data set, which every
rank compares with NumPy's.

* **On GPUs** (NCCL): rank ``r`` drives GPU ``LOCAL_RANK``; ``torch.cuda.set_device`` and
  ``gn.Device(...).set_current()`` select it for torch and for gpu_native.  The rank's torch CUDA
  tensors go straight into the kernel through ``__cuda_array_interface__`` (no copy), the kernel
  runs on torch's current stream, and NCCL reduces the very tensor the kernel wrote.
* **Without a GPU** (gloo, gpu_native's CPU simulator): torch CPU tensors are not device memory,
  so they cannot be passed to kernels.  ``local_histogram`` copies the samples into a gpu_native
  array and the histogram back into the torch tensor, explicitly, and says so in its output.
"""

import os

import numpy as np

import gpu_native as gn
from gpu_native import (
    DEFAULT_STREAM,
    BlockDim1D,
    CUDASlice,
    CUDASliceMut,
    FlatLayout1D,
    GridDim1D,
    Kernel1D,
    gpu_kernel,
    i32,
    u8,
)

BINS = 256
THREADS = 256


# gpu_native: kernel histogram_kernel, lines 42-45 of examples/distributed_torchrun.py,
# became the launcher factory below (`gpu-native expand --exact` prints the module as
# imported, with the full spec).
#   Kernel1D histogram_kernel(samples: CUDASlice[u8], hist: CUDASliceMut[i32])
#   options: bounds_check=True, fastmath=False, max_registers=None
#   variant gn_histogram_kernel (kernel id 0x740e8111062ba79e)
#     traits: uid_only
#     error sites: 1 bounds check (`expand --proofs` lists them)
#     launch checks: none
#     CUDA C++: 1,779 characters (`expand --cuda`); simulator IR: 753 bytes
@gpu_kernel(Kernel1D, _spec=...)  # L42
def histogram_kernel(_gn_context):  # L43
    _gn_fast = _gn_context.fast_path()                # L44
    _gn_DA = _gn_fast.DeviceArray                     # L44
    _gn_sig_samples = _gn_fast.signatures['samples']  # L44
    _gn_sig_hist = _gn_fast.signatures['hist']        # L44
    _gn_pack = _gn_fast.pack                          # L44
    _gn_buf = _gn_fast.buffer                         # L44
    _gn_address = _gn_fast.address                    # L44
    _gn_launch = _gn_fast.launch                      # L44
    _gn_fn = _gn_fast.function                        # L44
    _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid            # L44
    _gn_bx, _gn_by, _gn_bz = _gn_fast.block           # L44
    _gn_smem = _gn_fast.shared_mem_bytes              # L44
    _gn_stream = _gn_fast.stream                      # L44
    _gn_ok = _gn_fast.success                         # L44
    _gn_failed = _gn_fast.failed                      # L44
    _gn_slow = _gn_fast.slow                          # L44
    return lambda samples, hist: (                                                        # L45
        # launch: pack the arguments into the buffer, call the driver, raise if it refused
        ((_gn_err := _gn_launch(                                                          # L45
            _gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream,  # L45
            (_gn_pack(                                                                    # L45
                _gn_buf, 0, samples.launch_args, hist.launch_args,                        # L45
            ) or _gn_address),                                                            # L45
            0,                                                                            # L45
        )[0]) is _gn_ok or _gn_failed(_gn_err)) and None                                  # L45
        # ... when every argument is exactly what the kernel was compiled for
        if samples.__class__ is _gn_DA and samples.launch_sig is _gn_sig_samples          # L45
        and hist.__class__ is _gn_DA and hist.launch_sig_mut is _gn_sig_hist              # L45
        and hist.launch_base is not samples.launch_base                                   # L45
        # anything else: check each argument, say what is wrong, convert, launch
        else _gn_slow(samples, hist)                                                      # L45
    )                                                                                     # L45


def shard(rank: int, n: int, seed: int = 2026) -> np.ndarray:
    """Rank ``rank``'s samples: uniform bytes, plus a spike at ``rank`` so every rank shows."""
    data = np.random.default_rng([seed, rank]).integers(0, BINS, n, dtype=np.uint8)
    data[: n // 8] = rank % BINS
    return data


def launch_histogram(samples, hist, stream=DEFAULT_STREAM) -> None:
    """Add the histogram of ``samples`` (u8) into ``hist`` (i32, ``BINS`` bins): any device arrays,
    gpu_native's or another library's."""
    blocks = max(1, min(1024, (len(samples) + THREADS - 1) // THREADS))
    histogram_kernel.launch(GridDim1D(blocks), BlockDim1D(THREADS), 0, stream)(samples, hist)


def local_histogram(samples, hist) -> str:
    """Histogram a rank's torch tensor ``samples`` into its torch tensor ``hist``.

    CUDA tensors are passed to the kernel as they are; CPU tensors are copied into gpu_native
    arrays and the result copied back.  Returns which of the two happened.
    """
    import torch  # type: ignore[import-not-found, unused-ignore]  # optional

    if samples.is_cuda:
        launch_histogram(samples, hist, torch.cuda.current_stream())
        return "zero-copy"
    d_samples = gn.to_device(samples.numpy())   # copy in: CPU tensors are not device memory
    d_hist = gn.to_device(hist.numpy())
    launch_histogram(d_samples, d_hist)
    hist.copy_(torch.from_numpy(d_hist.to_host()))  # copy out
    return "copied through host memory"


def main(n: int = 1_000_000) -> None:
    import torch  # type: ignore[import-not-found, unused-ignore]  # optional
    import torch.distributed as dist  # type: ignore[import-not-found, unused-ignore]

    on_gpu = torch.cuda.is_available()
    if not on_gpu:
        os.environ.setdefault("GPU_NATIVE_BACKEND", "sim")  # before gpu_native picks a backend
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if on_gpu:
        torch.cuda.set_device(local_rank)
        gn.Device(local_rank).set_current()
    dist.init_process_group("nccl" if on_gpu else "gloo")
    try:
        device = torch.device("cuda", local_rank) if on_gpu else torch.device("cpu")
        samples = torch.from_numpy(shard(rank, n)).to(device)
        hist = torch.zeros(BINS, dtype=torch.int32, device=device)
        how = local_histogram(samples, hist)
        local = hist.cpu().numpy().copy()
        dist.all_reduce(hist, op=dist.ReduceOp.SUM)
        total = hist.cpu().numpy()
        expected = sum(np.bincount(shard(r, n), minlength=BINS) for r in range(world))
        assert np.array_equal(local, np.bincount(shard(rank, n), minlength=BINS)), \
            f"rank {rank}: the local histogram is wrong"
        assert np.array_equal(total, expected), f"rank {rank}: the all-reduced histogram is wrong"
        where = (f"GPU {local_rank} ({torch.cuda.get_device_name(local_rank)})" if on_gpu
                 else "CPU")
        print(f"rank {rank}/{world}: {n} samples on {where}, gpu_native backend "
              f"{gn.backend()}, tensors {how}; all-reduced ({dist.get_backend()}) histogram of "
              f"{int(total.sum())} samples matches NumPy", flush=True)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000, help="samples per rank")
    main(parser.parse_args().samples)
