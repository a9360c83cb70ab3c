"""Every environment variable SexpGPU reads, in one place (see docs/environment.md)."""

from __future__ import annotations

import math
import os
from pathlib import Path

from sexpgpu.diagnostics import define_code, error

E_ENV = define_code(
    "E-ENV", "an environment variable has a value SexpGPU cannot use",
    "A SEXPGPU_ variable (docs/environment.md) is set to a value outside its kind: a "
    "count that is not a positive integer, a number of seconds that is not a positive "
    "number, or a word that is not one of its choices. It is read when the run needs "
    "it, and refused rather than guessed at.",
)


def count(name: str) -> int | None:
    """A positive integer variable; None when unset or empty."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise _refused(name, value, "a positive integer", "2")
    return int(value)


def seconds(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        parsed = float(value)
    except ValueError:
        parsed = math.nan
    if not (parsed > 0 and math.isfinite(parsed)):
        raise _refused(name, value, "a positive number of seconds", f"{default:g}")
    return parsed


def choice(name: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (the first when unset), in any case."""
    value = os.environ.get(name, "").strip()
    if not value:
        return choices[0]
    if value.lower() not in choices:
        raise _refused(name, value, " or ".join(choices), choices[0])
    return value.lower()


def _refused(name: str, value: str, expected: str, example: str) -> Exception:
    return error(E_ENV, f"{name}={value} is not {expected}", expected=expected,
                 actual=value, fix=f"{name}={example}, or unset it")


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


def threads_fixed() -> int | None:
    """SEXPGPU_THREADS (or its old name SEXPGPU_BLAS_THREADS): a fixed thread count for
    a CPU step's parallel parts (matmul chunks and parallel loops). Unset (the
    default), the count follows the cores the machine leaves free
    (kernels/threads.py): a parallel loop waits for all its threads, so on a box busy
    with other work a second thread that is not scheduled made a 100x256x256 matmul
    13 times slower."""
    if os.environ.get("SEXPGPU_THREADS", "").strip():
        return count("SEXPGPU_THREADS")
    return count("SEXPGPU_BLAS_THREADS")


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def thread_cap() -> int:
    """The most threads a matmul or parallel kernel may get: SEXPGPU_NUM_THREADS,
    else every core this process may run on."""
    return num_threads() or usable_cores()


def num_threads() -> int | None:
    """SEXPGPU_NUM_THREADS caps the CPU threads of parallel kernels."""
    return count("SEXPGPU_NUM_THREADS")


def compile_jobs() -> int | None:
    """SEXPGPU_COMPILE_JOBS: processes that compile a run's kernels when they are not
    in the cache (kernels/compile_pool.py); 1 compiles them all in this process."""
    return count("SEXPGPU_COMPILE_JOBS")


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
    return seconds("SEXPGPU_COLLECTIVE_TIMEOUT", 20.0)


def slurm_step_tasks() -> int | None:
    """The tasks `srun` started this process among (SLURM_STEP_NUM_TASKS, or
    SLURM_NTASKS inside a job step); None outside a step: a batch script's own
    shell sees SLURM_NTASKS of the whole allocation but is one process."""
    value = os.environ.get("SLURM_STEP_NUM_TASKS")
    if value is None and "SLURM_STEP_ID" in os.environ:
        value = os.environ.get("SLURM_NTASKS")
    return int(value) if value and value.isdigit() else None


def flush_denormals() -> bool:
    """SEXPGPU_DENORMALS: `flush` (the default: a run's CPU kernels flush subnormal
    floats to zero, kernels/fpmode.py) or `keep` (IEEE subnormals, at their cost)."""
    return choice("SEXPGPU_DENORMALS", ("flush", "keep")) == "flush"


def vector_bits() -> str:
    """SEXPGPU_VECTOR_BITS: `auto` (the default: numba's loops use 512-bit vectors on
    CPUs with AVX-512, kernels/vectorwidth.py) or `256` (LLVM's tuning for them)."""
    return choice("SEXPGPU_VECTOR_BITS", ("auto", "256"))


# every reader above of a variable with a kind: `sexpgpu doctor` calls each, so a
# variable added here with a kind is checked there too
TYPED_READERS = (threads_fixed, num_threads, compile_jobs, collective_timeout_s,
                 flush_denormals, vector_bits)


def collective() -> str:
    """SEXPGPU_COLLECTIVE: how a CUDA run of several processes sums its gradients:
    `auto` (NCCL where every rank can, else host-staged MPI), `nccl` or `mpi-host`."""
    value = os.environ.get("SEXPGPU_COLLECTIVE", "auto").strip().lower()
    return value if value in ("nccl", "mpi-host") else "auto"


def launch_info() -> str | None:
    """SEXPGPU_LAUNCH_INFO: set by `sexpgpu run --procs N` for its ranks; rank 0 writes
    the run directory there, so the launcher can close the run if a rank is killed."""
    return os.environ.get("SEXPGPU_LAUNCH_INFO") or None
