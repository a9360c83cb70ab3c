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


def mpi_world_size() -> int | None:
    """The number of processes an MPI launcher started this one among (mpiexec of Open
    MPI or MPICH, srun), read from the variables it sets; None when none did."""
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"):
        value = os.environ.get(name)
        if value and value.isdigit():
            return int(value)
    if "PMIX_RANK" in os.environ and os.environ.get("SLURM_NTASKS", "").isdigit():
        return int(os.environ["SLURM_NTASKS"])
    return None


def collective_timeout_s() -> float:
    """SEXPGPU_COLLECTIVE_TIMEOUT: seconds a process of a data-parallel run waits for
    the others at a collective before it ends the job with E-RANK-LOST (default 20)."""
    return float(os.environ.get("SEXPGPU_COLLECTIVE_TIMEOUT", "20"))


def launch_info() -> str | None:
    """SEXPGPU_LAUNCH_INFO: set by `sexpgpu run --procs N` for its ranks; rank 0 writes
    the run directory there, so the launcher can close the run if a rank is killed."""
    return os.environ.get("SEXPGPU_LAUNCH_INFO") or None
