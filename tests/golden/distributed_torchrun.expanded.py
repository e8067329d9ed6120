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


@gpu_kernel(Kernel1D, _spec=('gpu_native.KernelSpec', 3, '0.1.0', 'histogram_kernel', 'distributed_torchrun', 'examples/distributed_torchrun.py', 42, 1, (('samples', 'u8', 1, False), ('hist', 'i32', 1, True)), (), (True, False, None), (((), 'gn_histogram_kernel', 8362763468191541150, '// gpu_native 0.1.0: kernel histogram_kernel of distributed_torchrun (generated; do not edit)\n#define GN_KERNEL_ID 0x740e8111062ba79eull\n#include "gpu_native/prelude.cuh"\nextern "C" __global__ void gn_histogram_kernel(\n    const unsigned char* __restrict__ samples,\n    gn_i64 __gn_samples_n0,\n    int* __restrict__ hist,\n    gn_i64 __gn_hist_n0,\n    gn_error_record* __restrict__ __gn_err)\n{\n    long long i{};\n#line 44 "distributed_torchrun.py"\n    {\n        const gn_i64 __gn_stop0 = __gn_samples_n0;\n        for (gn_i64 __gn_i0 = ((gn_i64)blockIdx.x * blockDim.x + threadIdx.x); __gn_i0 < __gn_stop0; __gn_i0 += (gn_i64)gridDim.x * blockDim.x) {\n            i = __gn_i0;\n#line 45 "distributed_torchrun.py"\n            atomicAdd(&hist[gn_chk(__gn_err, (gn_i64)samples[i], __gn_hist_n0, 0u)], 1);\n        }\n    }\n}\n\n// The same kernel over its logical uids 0..__gn_total-1, several per thread (it depends on nothing but its uid).\nextern "C" __global__ void gn_histogram_kernel_uids(\n    const unsigned char* __restrict__ samples,\n    gn_i64 __gn_samples_n0,\n    int* __restrict__ hist,\n    gn_i64 __gn_hist_n0,\n    gn_error_record* __restrict__ __gn_err,\n    gn_i64 __gn_total,\n    unsigned int __gn_block)\n{\n    long long i{};\n    for (gn_i64 __gn_uid = (gn_i64)blockIdx.x * blockDim.x + threadIdx.x; __gn_uid < __gn_total; __gn_uid += (gn_i64)gridDim.x * blockDim.x) {\n#line 44 "distributed_torchrun.py"\n        {\n            const gn_i64 __gn_stop0 = __gn_samples_n0;\n            for (gn_i64 __gn_i0 = __gn_uid; __gn_i0 < __gn_stop0; __gn_i0 += __gn_total) {\n                i = __gn_i0;\n#line 45 "distributed_torchrun.py"\n                atomicAdd(&hist[gn_chk_at(__gn_err, (gn_i64)samples[i], __gn_hist_n0, 0u, __gn_uid, __gn_block)], 1);\n            }\n        }\n    }\n}\n\n', (('index', 45, 8, 48, 'hist', 0, 1, ''),), ('uid_only',), (), b"x\xda\xc5V\xdfo\xd30\x10n\xb7u\x14\xd8\xf816\x180X6`Jat\xddV\xd0\xb4\xb7j\xa3\x08m\x14\x89\x14^\xaa\xa9rc\xa7\xb5H\x93\xca\xb5\xa5\xf6\xbf\xc7g\xd7\xce2\xd6\x97\xa6\x12y8\xd9>\xfb\xf2\xdd}\xe7;\xbb\x8b\xb9\\\x8e\xe6\xa5\x10\x8f\xa4\xa8V+\x9f\x10FA\xc5\xef\xa0\x0e\xc6\x15\xd7\x95\x8b\xaeR/I\x81\xa9\xcf\xdde\x98\xdd\x93\xc2\x8b\x05\xf3\x897@\x91p\xe4\x94\x8cP\x7f\x10\x92\xe1\x01\xa6C\xcehGp\x82\xdb<f~\x8f\x89\xa8<\x18\xd3\x0f\xf0+0C\xd7\xc1D\x1d\x0c\x92\xc0\xe9\xc9\xedq\x97\xa1~\xfb\x0fa\x11\t\xdd\xa1\xb6s\xea\x9c\xfd:\xafy!\xf5IK\x9c\\\xed\xab\x8d\xd7\x16\xbf\x0b\xde\xa2\xc7GW\xa5S\xb7\x08\xf6V\xa4\xb8P\x16\x9a\x0cQ>l\xd6\xd5\xe7\xc2\x1f\xc5\xaaU\xfe\x18p\x1aGR\xdb\x98\xdd\x93\x8f\xe0\x04\xfc\x94V\xc0\x04\x08g\xf2\x01\xc82\xe2q\x9f\xfamF\x02\xe3L\x8b^\x95\xca\x01\xe1~\xaf\x8d0v\x0fK\x1a3`\xf3('4\x07\xb3\x02X\x8c0\x19\xb5\xf2&Tj\x07\xd8T;4Q0r\x17,v\x1f\x85\x88}\x8b\x82X(.\x8f\x8fn\xea\x9a\xe3\x01\xd1\x16\xc1\xe1\x8c^\x97A\x1c\xcc\xec\xf5\x92\xf1\xf3Lr\xc05*\x88\x84\x1e\xdd1>\xce\x0er\xdfRs\x17LT' \x83\x989\xd4\xa1\x91S\x0f\x11\xbfD\xe3X\xf0\xc3\xf3r\x97Q\xdc\x06;\x98\xb8!\x89\x0c\xec\x92L\xa9\xa9\xf1\xfd\\\x9d\x1e\xdf\xfb\x00\x1d\xbcS[\x7f#&\xd4\xb2V\xaeX7\xe1h=#\x0f\xb0\x93\xeed\xe7\xe12\x96>hX\x0f,\xc0\x04\xeaj&2\xd4\x8d\xdf\x00\xb15\xe7\x1b\x7f\x1b=j\xedd:;\x8f\xad/\x90\x1a5\xc6\xd08Q\xae\x99\xd4\xab\x0b\xd8\xd2\r\xe3\x0e\n\x1bi2!=MD\xd5\xa1'6NP<\x9b\x19)\xdd\x04\xb1\x9d\x8d\xd2\xa2\xf1\xec'\t4\xb2\r\x8b1A\xbb\x9e\xbd\x0e(\xb0\xbb3\x83]6\xb5\xed2FX\x83zf\xe1\xad\xd9\xd1S\xd3~\xf4\xf4\xa1\x9962\xe6\xa4r\xe1p\xce99-\xb5lUkNO-S\xe6\xf5\x89\x17\xd6\xe3\xe7s\xc8\xab\xa2\xb9\xd2s\xcd\xab-\x8b1A\xfb\x12\xf8Qu\x17\x10\xd7\x94\xf1\xa4\x97%\xd1PnK\xf3z\xe5U\x9a\xe4M3U-\xef\x9aB\x19\x86\xe3\x8c\x84hD\xf0\xff\xed\xdf\x8b&,_F\x03\xe6\xf1\xfe\x84\xbam\x0b\xf7u\xf6>\xf6\xde\xa6\xe9\xcc}l\n{;s\xaf\n\n\xf0\x1e\x88\xa3L\x80\x0b\xa63y=dn\xd0\x9b[:\xd3\xae\xcd\x90l\x90!@\x8d\x8cp\xe1\xe7_\xa5\xd6S[4\xbew\xa9\x1e\xaaGo\xd3\t\r \xdd5s]\xf4\xf3T=\xc3o\x16#\xb1\xae\x1e\xdf\xffz!\x80\xbdn\xd4\xbey@?\xa2\x16R\xd4^\xbb\xa2\xf9t\x7f\xcfY\x91(\xf6\xd2\xd3\x82\x1d-\xdaQb>\x9f\xb6\x92\xb3\n\x18\xfd\x05Q\xdf\xed\xc7"),)))
def histogram_kernel(_gn_context):
    _gn_fast = _gn_context.fast_path(); _gn_DA = _gn_fast.DeviceArray; _gn_sig_samples = _gn_fast.signatures['samples']; _gn_sig_hist = _gn_fast.signatures['hist']; _gn_pack = _gn_fast.pack; _gn_buf = _gn_fast.buffer; _gn_address = _gn_fast.address; _gn_launch = _gn_fast.launch; _gn_fn = _gn_fast.function; _gn_gx, _gn_gy, _gn_gz = _gn_fast.grid; _gn_bx, _gn_by, _gn_bz = _gn_fast.block; _gn_smem = _gn_fast.shared_mem_bytes; _gn_stream = _gn_fast.stream; _gn_ok = _gn_fast.success; _gn_failed = _gn_fast.failed; _gn_slow = _gn_fast.slow
    return lambda samples, hist: (((_gn_err := _gn_launch(_gn_fn, _gn_gx, _gn_gy, _gn_gz, _gn_bx, _gn_by, _gn_bz, _gn_smem, _gn_stream, (_gn_pack(_gn_buf, 0, samples.launch_args, hist.launch_args) or _gn_address), 0)[0]) is _gn_ok or _gn_failed(_gn_err)) and None) if samples.__class__ is _gn_DA and samples.launch_sig is _gn_sig_samples and hist.__class__ is _gn_DA and hist.launch_sig_mut is _gn_sig_hist and hist.launch_base is not samples.launch_base else _gn_slow(samples, hist)


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
    import torch

    if samples.is_cuda:
        launch_histogram(samples, hist, torch.cuda.current_stream())
        return "zero-copy"
    d_samples = gn.to_device(samples.numpy())   # copy in: CPU tensors are not device memory
    d_hist = gn.to_device(hist.numpy())
    launch_histogram(d_samples, d_hist)
    hist.copy_(torch.from_numpy(d_hist.to_host()))  # copy out
    return "copied through host memory"


def main(n: int = 1_000_000) -> None:
    import torch
    import torch.distributed as dist

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

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000, help="samples per rank")
    main(parser.parse_args().samples)
