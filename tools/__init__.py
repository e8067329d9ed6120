"""The project's developer tools: benchmarks, the load test and the GPU fuzzer.

A package so that ``python -m tools.fuzz_gpu`` and the tests import :mod:`tools.fuzz` from the
repository root; not part of the gpu_native distribution (``pyproject.toml`` packages only
``gpu_native``).
"""
