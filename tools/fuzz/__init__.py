"""Differential fuzzing of code generation: random valid kernels and what they must compute.

* :mod:`.generator` makes the kernels (seed ``k`` always gives the same kernel, launch and
  inputs) and writes their source;
* :mod:`.reference` evaluates a kernel lane by lane from ``docs/language.md`` alone;
* :mod:`.harness` runs one through the real pipeline on a backend and compares it with the
  reference;
* :mod:`.host_cuda` builds the generated CUDA C++ for the CPU (with UBSan), a backend that needs
  no GPU.

``tests/fuzz/`` runs them in CI; ``python -m tools.fuzz_gpu`` runs thousands on a GPU.
"""
