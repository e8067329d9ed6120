"""Device functions and constants another module's kernels import
(tests/helpers/kernels_language.py)."""

from typing import TypeVar

from gpu_native import CUDASliceMut, UniqueId, f32, f64, gpu_device, i32

SCALE = 3
OFFSETS = (1, 2, 3)
N = TypeVar("N", f32, f64)


@gpu_device
def clamp(x: f32, lo: f32, hi: f32) -> f32:
    return min(max(x, lo), hi)


@gpu_device
def square(x: N) -> N:
    return x * x


@gpu_device
def sum_of_squares(x: f32, y: f32) -> f32:
    return square(x) + square(y)


@gpu_device
def collatz_steps(n: i32) -> i32:
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@gpu_device
def store_twice(out: CUDASliceMut[f32], i: UniqueId, value: f32):
    out[i] = 2.0 * value


@gpu_device
def store_clamped(out: CUDASliceMut[f32], i: UniqueId, value: f32) -> None:
    if value < 0.0:
        out[i] = 0.0
        return
    out[i] = value
