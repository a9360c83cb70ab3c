"""Kernels: an IR graph lowered to a few fused loops, generated as numba Python
modules cached on disk, run on the CPU (njit) or CUDA. Importing this package
does not import numba; `kernels.compile` (kernels.executor) does.

Modules, in pipeline order:
    unstack     a concat that only reductions over its axis read, read piece by piece
    outer       matmuls over an inner dimension of one as elementwise products
    lower       group nodes into kernels; KernelPlan says where each value lives
    views       strided views (slice, permute, reshape chains) read without a copy
    memplan     one slot per stored value, reused once the value is dead
    hostmem     host arrays on a cache line: the arena, parameters, optimizer state
    render      one kernel's body: a fused loop, a fused reduction, or a structured op
    structured  the structured ops' renderers (matmul, concat, take, fold, ...)
    source      source pieces every renderer shares: loads, stores, literals, offsets
    codegen     the step module, and one cached module per distinct kernel text
    bands       runs of kernels that keep to their batch rows, run in bands of rows
    parallel    chunk functions and their launches: numba's threads share a kernel
    cache       the on-disk module cache, imported under stable module names
    executor    `compile(graph)` and `CompiledGraph.run(inputs)`: the entry point
    compile_pool  kernels compiled ahead of their first call, by several processes
    workers     the compile workers' processes, started early when the cache is cold
    sgemm       the sgemm call of CPU matmuls: numba's BLAS call with np.dot's arguments
    blas        the thread count of the OpenBLAS behind `np.dot` in CPU kernels
    mathfn      vectorisable `exp`, `tanh`, `log` and `erf` for kernels
    scalars     the math and RNG helpers of CPU kernels, compiled once, inlined by LLVM
    bf16        bf16 stored as uint16: scalar conversions for kernels, numpy ones
    rng         the counter-based RNG: the same bits from numpy, njit and CUDA
    fpmode      subnormals flushed to zero while a run's kernels execute (MXCSR)
    vectorwidth 512-bit vectors in numba's loops on AVX-512 CPUs, set before numba starts
    demo        an MLP training step and its numpy baseline, for tests and benches
"""

from __future__ import annotations

from typing import Any

from sexpgpu.kernels import vectorwidth

__all__ = ["CompiledGraph", "compile", "op"]


def __getattr__(name: str) -> Any:
    # lazy: the executor imports numba; autodiff imports this package on `check`'s path,
    # and `check` must never load numba
    if name in ("compile", "CompiledGraph", "op"):
        from sexpgpu.kernels import executor  # numba: loaded on first use only

        return getattr(executor, name)
    raise AttributeError(f"module 'sexpgpu.kernels' has no attribute {name!r}")


vectorwidth.before_numba()
