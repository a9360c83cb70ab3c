"""Compiling kernels before their first call, several at once.

numba compiles one function at a time and holds the GIL while it does, so a cold
char-GPT spent ~17 s compiling its 76 kernels on one core of a 2-core machine.
Compilation goes through numba's disk cache (`cache=True`) anyway, so other
processes can do part of it: each worker (`python -m sexpgpu.kernels.compile_pool`)
imports the kernel modules it is given from the cache directory and compiles them
for the argument types the step passes, writing numba's cache files; this process
compiles its own share meanwhile and then loads the workers' share from the cache
(milliseconds each). A worker that fails or is killed costs nothing but time: its
kernels are compiled here, as they would have been without it.

SEXPGPU_COMPILE_JOBS=n fixes the number of processes (1: all in this process); by
default it is SEXPGPU_NUM_THREADS (a sweep point's share of the cores) or the CPUs
this process may run on, at most 8, and only for a batch of kernels worth a
worker's start-up (~0.5 s of importing numba).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from sexpgpu import env

MIN_PER_WORKER = 6    # kernels a worker must have to pay for its start-up
MAX_JOBS = 8
WORKER_TIMEOUT_S = 600.0

Pending = list[tuple[Any, tuple]]   # (numba dispatcher, argument types)


def jobs(count: int) -> int:
    """Processes to compile `count` kernels with, this one included."""
    fixed = env.compile_jobs()
    if fixed:
        return fixed
    if (env.mpi_world_size() or 1) > 1:
        return 1  # every rank compiles already (the cache is shared): the cores are taken
    # thread_cap: SEXPGPU_NUM_THREADS (a sweep point's share of the cores) or the cores
    return max(1, min(env.thread_cap(), MAX_JOBS, count // MIN_PER_WORKER))


def compile_all(pending: Pending, on_kernel: Callable[[Any, bool], None]) -> None:
    """Compile every (dispatcher, signature) of `pending`, in this process and in
    workers; `on_kernel(fn, cached)` as each is ready here."""
    cold = [item for item in pending if not _on_disk(item[0])]
    shares = _split(cold, jobs(len(cold)))
    workers = [_start(share) for share in shares[1:]]
    try:
        for fn, signature in [item for item in pending if _on_disk(item[0])] + shares[0]:
            on_kernel(fn, _compile(fn, signature))
        for worker, share in zip(workers, shares[1:]):
            _wait(worker)
            for fn, signature in share:   # compiled by the worker: loaded from its cache
                _compile(fn, signature)
                on_kernel(fn, False)
    finally:  # interrupted (SIGTERM, a failed compile): no worker outlives the run
        for worker in workers:
            if worker is not None and worker.poll() is None:
                worker.kill()
                worker.wait()


def _compile(fn: Any, signature: tuple) -> bool:
    """Compile (or load) one signature; True when numba's disk cache had it."""
    hits = sum(fn.stats.cache_hits.values())
    fn.compile(signature)
    return sum(fn.stats.cache_hits.values()) > hits


def _on_disk(fn: Any) -> bool:
    """Whether numba's disk cache has an index for `fn` (then loading it here takes
    milliseconds: no worker for it). The index's path is numba's internal name."""
    try:
        return os.path.exists(fn._cache._cache_file._index_path)
    except AttributeError:
        return False


def _cost(fn: Any) -> int:
    # a kernel that calls the BLAS compiles ~3x longer (np.dot's typing and checks),
    # a parallel one ~2x (numba's parfor passes)
    source = inspect.getsource(fn.py_func)
    return 3 if "np.dot(" in source else 2 if "prange(" in source else 1


def _split(pending: Pending, n: int) -> list[Pending]:
    """`n` shares of about equal cost, the costliest kernels placed first (LPT). A
    kernel's signatures stay together (one process writes its cache index), and a
    kernel a worker cannot be told about stays in the first share (this process)."""
    groups: dict[Any, Pending] = {}
    for fn, signature in pending:
        groups.setdefault(fn, []).append((fn, signature))
    shares: list[Pending] = [[] for _ in range(n)]
    load = [0] * n
    for fn, items in sorted(groups.items(), key=lambda group: -_cost(group[0])):
        describable = all(_describe(item) is not None for item in items)
        i = load.index(min(load)) if describable else 0
        shares[i] += items
        load[i] += _cost(fn) * len(items)
    return shares


# -- the worker's side and what it is told ----------------------------------------------

def _describe(item: tuple[Any, tuple]) -> dict | None:
    """What a worker needs to compile one kernel: its module file and each argument
    as a sample value's description, or None when a type does not round-trip."""
    fn, signature = item
    args = []
    for t in signature:
        if isinstance(t, numba.types.Array):
            args.append(["array", str(t.dtype), t.ndim])
        elif isinstance(t, numba.types.Integer):
            args.append(["int"])
        else:
            return None
    if tuple(_types(args)) != signature:
        return None
    return {"module": fn.py_func.__module__, "file": inspect.getfile(fn.py_func),
            "name": fn.py_func.__name__, "args": args}


def _types(args: list[list]) -> list[Any]:
    samples = [np.zeros((1,) * a[2], a[1]) if a[0] == "array" else 0 for a in args]
    return [numba.typeof(s) for s in samples]


def _start(share: Pending) -> subprocess.Popen | None:
    if not share:
        return None
    job = json.dumps([_describe(item) for item in share])
    try:
        worker = subprocess.Popen([sys.executable, "-m", "sexpgpu.kernels.compile_pool"],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        worker.stdin.write(job.encode())
        worker.stdin.close()
    except OSError:
        return None
    return worker


def _wait(worker: subprocess.Popen | None) -> None:
    if worker is None:
        return
    try:
        worker.wait(timeout=WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


def _work(jobs_text: str) -> None:
    """Compile each described kernel into numba's disk cache."""
    for job in json.loads(jobs_text):
        if job["module"] in sys.modules:
            module = sys.modules[job["module"]]
        else:
            spec = importlib.util.spec_from_file_location(job["module"], job["file"])
            module = importlib.util.module_from_spec(spec)
            sys.modules[job["module"]] = module
            spec.loader.exec_module(module)
        getattr(module, job["name"]).compile(tuple(_types(job["args"])))


if __name__ == "__main__":
    _work(sys.stdin.read())
