"""Every environment variable SexpGPU reads, in one place (see docs/environment.md)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Where generated kernel modules and prepared data are cached."""
    explicit = os.environ.get("SEXPGPU_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "sexpgpu"


def debug() -> bool:
    """SEXPGPU_DEBUG=1 prints the Python traceback of internal errors."""
    return os.environ.get("SEXPGPU_DEBUG", "") not in ("", "0")


def cuda_simulator() -> bool:
    """numba's own switch; read here so every module agrees on it."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")


def blas_threads() -> int:
    """SEXPGPU_BLAS_THREADS: threads of the BLAS behind CPU matmuls (default 1: a
    step's matmuls are small and extra BLAS threads fight the kernels' own)."""
    value = os.environ.get("SEXPGPU_BLAS_THREADS")
    return int(value) if value else 1


def num_threads() -> int | None:
    """SEXPGPU_NUM_THREADS caps the CPU threads of parallel kernels."""
    value = os.environ.get("SEXPGPU_NUM_THREADS")
    return int(value) if value else None
