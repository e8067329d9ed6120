"""Differential fuzzing of code generation: random valid kernels and what they must compute.

* :mod:`.generator` makes the kernels (seed ``k`` always gives the same kernel, launch and
  inputs) and writes their source;
* :mod:`.records` adds ``@gpu_struct`` values, ``const_array`` tables and Philox draws to
  the generator (their reference semantics in :mod:`.records_reference`);
* :mod:`.reference` evaluates a kernel lane by lane from ``docs/language.md`` alone;
* :mod:`.harness` runs one through the real pipeline on a backend and compares it with the
  reference;
* :mod:`.host_cuda` builds the generated CUDA C++ for the CPU (with UBSan), a backend that needs
  no GPU;
* :mod:`.indices` draws kernels that store through generated indices, for the unique-write
  proofs: what the checker accepts must run race-free.

``tests/fuzz/`` runs them in CI; ``python -m tools.fuzz_gpu`` runs thousands on a GPU, and
``python -m tools.fuzz_races`` the store indices.
"""
