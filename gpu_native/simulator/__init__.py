"""The CPU simulator: the backend that runs kernels where there is no GPU.

It takes the same checked kernel IR the CUDA emitter takes and computes what the generated CUDA
computes, for every thread of every block, vectorised across threads with NumPy.  The simulator
backend (:mod:`gpu_native.runtime.sim_backend`) gets that IR from the imported module itself: the
rewrite embeds it, encoded by :mod:`gpu_native.ircodec`, in each kernel variant's spec.

Use
---
>>> program = compile_kernel(kernel)          # an ir.Kernel specialisation; cached
>>> program.run(grid, block, shared_mem_bytes, args, errors)

``args`` has one entry per kernel parameter: a C-contiguous NumPy array (written in place when
writable; bf16 arrays hold uint16 bit patterns) or a NumPy scalar.  ``errors.fail(site, index,
length, block, thread)`` receives the first failing bounds check, assert or integer division by
zero (the failing thread stops; the others go on, as on the GPU) and ``errors.race(message)``
every bug that lockstep execution would otherwise hide (below).

How it runs
-----------
Each kernel (and device function) becomes a Python function, generated from the IR and compiled
under the user's file name with the user's line numbers.  Threads are *lanes*: blocks are taken in
chunks (about 2**18 threads, ``GPU_NATIVE_SIM_LANES``), and every kernel variable is a NumPy
vector with one value per thread of the chunk (or a scalar while all threads agree).  All threads
of a chunk execute each statement together ("lockstep"); ``if``/``while``/``for`` run under lane
masks, a failed check or a ``return`` removes the thread from the mask, and ``sync_threads()`` is
a point every live thread of the block reaches at the same time.  Integer arithmetic wraps at the
type's width, ``f32`` stays ``f32``, ``f16`` rounds once per operation and ``bf16`` computes in
``f32`` and rounds to nearest even, exactly as the generated CUDA and the prelude header it
includes (``gpu_native/include/gpu_native/prelude.cuh``) define them.
Atomics take effect one thread after another in thread order.

Debugging
---------
Tracebacks from a simulated kernel show the kernel's own lines, and ``pdb`` can stop in it:
``b mykernels.py:12`` (or ``pdb.pm()`` after an error) lands in the simulated kernel.  There,
every kernel variable is a NumPy vector over the threads of the chunk (a scalar when all threads
hold the same value); ``_gn_m`` is the mask of threads executing the current line (``None``:
all of them), ``_gn.show(x)`` maps each executing ``(block, thread)`` to its value of ``x``, and
``_gn.threads()`` lists them.  Shared arrays are ``(blocks, size)`` tables in ``s.data``.
``program.source`` is the generated Python.

What the race detector reveals, and what it cannot
--------------------------------------------------
Lockstep execution makes racy kernels deterministic, so instead of letting them "work", the
simulator keeps shadow memory (for every shared array, and for every global array that a launch
writes inside ``with unsafe():``, both reads and writes, or updates atomically and also reads or
writes plainly) and reports through ``errors.race``:

* two threads of one launch writing one element with no ordering between them (for example a
  store inside ``unsafe()`` whose index is not really unique), naming the array, the element,
  both threads and both source lines;
* a read of a shared element that another thread of the block wrote since the last
  ``sync_threads()`` (a missing barrier), and a write of an element another thread read since the
  last barrier (write-after-read: the missing *second* barrier of a tiled loop); the report
  names the barrier to add: ``sync_threads()``, or, for two threads of one warp in divergent code
  (where not every thread of the block can reach ``sync_threads()``), ``sync_warp()`` with the
  mask of the lanes that run it;
* a plain access racing with another thread's atomic on the same element;
* ``sync_threads()`` (or ``sync_threads_count/and/or``, the same barrier) reached by some live
  threads of a block but not others (divergent barrier);
* warp intrinsics whose ``mask`` names live threads that do not execute them, a caller missing
  from its own mask, and shuffles that read a lane that is not executing the shuffle.

It cannot reveal:

* races between threads of *different* blocks on global arrays it does not shadow (arrays that
  the kernel only reads, only writes through unique indices, or only updates atomically);
* memory-ordering bugs: fences (``threadfence()`` and friends run as no-ops) and the memory
  order of atomics are not modelled, every access is sequentially consistent, so a missing fence
  goes unnoticed; a correctly fenced hand-off between blocks through plain stores inside
  ``unsafe()`` is reported as a race (use atomics for the hand-off);
* behaviour that depends on the relative speed of threads: spin locks and waits on a flag that
  another thread of the same launch sets cannot end in the simulator, because lockstep never
  lets the other thread run ahead (a loop that writes no memory is watched after 1024 rounds,
  and one whose round changes nothing is reported and its threads stopped, instead of
  hanging);
* reads of uninitialised shared or local memory (it holds NaN, or 0xCD bytes for integers, in
  the simulator; unspecified data on the GPU);
* the GPU's approximate math (``fastmath``, ``rsqrt``, ``sin``/``exp`` ulp differences): the
  simulator uses NumPy's correctly rounded or near-correct functions (on an H200, within 3 ulps
  of CUDA's for every function tried);
* multiply-add contraction: NVRTC's default ``--fmad=true`` fuses some ``a * b + c`` into one FMA
  (which ones depends on the compiler), while the simulator rounds the product and the sum as
  Python does; results then differ in the last bits (everything else agreed bit for bit with an
  H200 in ``tests/simulator/test_simulator_gpu.py``, and so does this with ``--fmad=false``);
* ``sync_warp()`` ordering is approximate: any warp barrier in the chunk is taken to order the
  accesses of threads of one warp;
* code that relies on how the GPU groups the threads of a divergent warp: ``activemask()`` names
  every thread of the warp that took the same path, where the GPU may report a smaller group.

Set ``GPU_NATIVE_SIM_RACES=0`` to turn the shadow memory off (faster, and nothing is reported).
"""

from __future__ import annotations

from .program import SimProgram, compile_kernel, races_enabled

__all__ = ["SimProgram", "compile_kernel", "races_enabled"]
