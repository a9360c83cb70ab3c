"""The compile workers' processes (`python -m sexpgpu.kernels.compile_pool`): spawned
when a compile needs them, or started early, as `sexpgpu run` begins, when the kernel
cache looks cold. A worker started early imports numba and compiles a throw-away
function (numba's first compile in a process costs ~0.4 s more than the next ones)
while this process is still evaluating the run file and tracing: on a 2-core machine
that core is otherwise idle, and the worker is ready when the kernels are known.
Importing this module does not import numba (`run` calls it first thing).
"""

from __future__ import annotations

import atexit
import subprocess
import sys

from sexpgpu.kernels.cache import kernel_dir

from sexpgpu import env

MIN_PER_WORKER = 6    # kernels a worker must have, on average, to pay for its start-up
MAX_JOBS = 8
WARM_UP = "--warm-up"   # the worker's flag: warm numba up before reading its job

_early: list[subprocess.Popen] = []


def jobs(count: int | None) -> int:
    """Processes to compile `count` kernels with (None: as many as it takes), this
    one included."""
    fixed = env.compile_jobs()
    if fixed:
        return fixed
    if (env.mpi_world_size() or 1) > 1:
        return 1  # every rank compiles already (the cache is shared): the cores are taken
    # thread_cap: SEXPGPU_NUM_THREADS (a sweep point's share of the cores) or the cores
    worth = MAX_JOBS if count is None else count // MIN_PER_WORKER
    return max(1, min(env.thread_cap(), MAX_JOBS, worth))


def spawn(warm_up: bool = False) -> subprocess.Popen | None:
    """A new worker process waiting for its job on standard input, or None."""
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "sexpgpu.kernels.compile_pool"] + ([WARM_UP] if warm_up else []),
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def start_early() -> None:
    """Start the workers a compile of many kernels would use, warming up, when the
    kernel cache has no kernel module (a first run, or a new cache directory): the
    compile that follows takes them."""
    count = jobs(None) - 1
    if count < 1 or _early or _cache_has_kernels():
        return
    for _ in range(count):
        worker = spawn(warm_up=True)
        if worker is not None:
            _early.append(worker)
    if _early:
        atexit.register(release)  # a run that never compiles leaves none behind


def take() -> subprocess.Popen | None:
    """A worker started early, if one is still waiting, else a new one."""
    while _early:
        worker = _early.pop(0)
        if worker.poll() is None:
            return worker
    return spawn()


def release() -> None:
    """End the workers started early that no compile took (nothing of theirs is on
    disk: a warmed-up worker holds only in-memory code)."""
    while _early:
        worker = _early.pop()
        if worker.poll() is None:
            worker.kill()
        worker.wait()


def _cache_has_kernels() -> bool:
    try:
        return any(name.suffix == ".py" for name in kernel_dir().iterdir())
    except OSError:
        return False
