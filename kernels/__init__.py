"""Kernels: lowering of IR graphs to fused loops, numba code generation cached
on disk, CPU (njit) and CUDA launchers, and the counter-based RNG. Importing
this package does not import numba; `kernels.compile` does."""

from __future__ import annotations

from typing import Any

__all__ = ["CompiledGraph", "compile"]


def __getattr__(name: str) -> Any:
    # lazy: the executor imports numba; autodiff imports this package on `check`'s path,
    # and `check` must never load numba
    if name in ("compile", "CompiledGraph"):
        from sexpgpu.kernels import executor

        return getattr(executor, name)
    raise AttributeError(f"module 'sexpgpu.kernels' has no attribute {name!r}")
