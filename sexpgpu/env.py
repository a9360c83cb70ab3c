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


def library_path() -> list[Path]:
    """SEXPGPU_LIBRARY_PATH: directories (separated by os.pathsep) besides the run
    file's own directory tree from which `require` may load modules."""
    value = os.environ.get("SEXPGPU_LIBRARY_PATH", "")
    return [Path(p).resolve() for p in value.split(os.pathsep) if p]


def log_to() -> str:
    """SEXPGPU_LOG_TO: trackers every run mirrors its events to when `--log-to` is not
    given, comma-separated: tensorboard, wandb, mlflow (docs/run.md, "Trackers")."""
    return os.environ.get("SEXPGPU_LOG_TO", "")


def debug() -> bool:
    """SEXPGPU_DEBUG=1 prints the Python traceback of internal errors."""
    return os.environ.get("SEXPGPU_DEBUG", "") not in ("", "0")


def cuda_simulator() -> bool:
    """numba's own switch; read here so every module agrees on it."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")


def cuda_sync() -> bool:
    """SEXPGPU_CUDA_SYNC=1 synchronises after every CUDA launch (no CUDA graph), so a
    kernel that fails on the device is named by its own launch, not at the next read."""
    return os.environ.get("SEXPGPU_CUDA_SYNC", "") not in ("", "0")


def blas_threads() -> int:
    """SEXPGPU_BLAS_THREADS: threads of the BLAS behind CPU matmuls; default
    SEXPGPU_NUM_THREADS, else every core this process may run on (as numpy and
    PyTorch do). The kernels between matmuls run on one thread, so the BLAS's
    threads have the other cores to themselves: the GPT step went 74 -> 60 ms
    with 2 on 2 cores. On a box busy with other work, 1 avoids waiting on threads
    that are not scheduled."""
    value = os.environ.get("SEXPGPU_BLAS_THREADS")
    if value:
        return int(value)
    return num_threads() or len(os.sched_getaffinity(0))


def num_threads() -> int | None:
    """SEXPGPU_NUM_THREADS caps the CPU threads of parallel kernels."""
    value = os.environ.get("SEXPGPU_NUM_THREADS")
    return int(value) if value else None
