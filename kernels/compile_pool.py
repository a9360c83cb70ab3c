"""Compiling kernels before their first call, several at once.

numba compiles one function at a time and holds the GIL while it does, so a cold
char-GPT spent ~17 s compiling its 76 kernels on one core of a 2-core machine.
Compilation goes through numba's disk cache (`cache=True`) anyway, so other
processes can do part of it: each worker (`python -m sexpgpu.kernels.compile_pool`)
is told every uncached kernel (module file, argument types) and compiles those it
claims into numba's cache files, while this process compiles those it claims; then
this process loads the workers' from the cache (milliseconds each). A claim is a
file created exclusively in a directory of this compile: this process takes the
kernels costliest first, the workers cheapest first, so the work divides itself
however fast each process turns out to be (a worker starts ~0.5 s late, importing
numba; on a busy machine one may get less of a core). A worker that fails or is
killed costs nothing but time: a kernel it claimed and did not finish is compiled
here, as it would have been without it.

SEXPGPU_COMPILE_JOBS=n fixes the number of processes (1: all in this process); by
default it is SEXPGPU_NUM_THREADS (a sweep point's share of the cores) or the CPUs
this process may run on, at most 8, and only for a batch of kernels worth a
worker's start-up.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from sexpgpu import env

MIN_PER_WORKER = 6    # kernels a worker must have, on average, to pay for its start-up
MAX_JOBS = 8
WORKER_TIMEOUT_S = 600.0

Pending = list[tuple[Any, tuple]]   # (numba dispatcher, argument types)
# kernel groups a worker can be told about, each with its items' descriptions
Described = list[tuple[Pending, list[dict]]]


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
    here, cold = [], []
    for item in pending:
        (here if _on_disk(item[0]) else cold).append(item)
    shared: Described = []
    for items in _groups(cold):
        described = [_describe(item) for item in items]
        if None in described:
            here += items  # a type a worker cannot rebuild: compiled here
        else:
            shared.append((items, described))
    _compile_here(here, on_kernel)
    count = jobs(sum(len(items) for items, _ in shared))
    if count > 1:
        try:
            claims = tempfile.TemporaryDirectory(prefix="sexpgpu-claims-")
        except OSError:  # no writable temporary directory: all of them here
            claims = None
        if claims is not None:
            with claims as path:
                _with_workers(shared, path, count - 1, on_kernel)
            return
    _compile_here([item for items, _ in shared for item in items], on_kernel)


def _compile_here(items: Pending, on_kernel: Callable[[Any, bool], None]) -> None:
    for fn, signature in items:
        on_kernel(fn, _compile(fn, signature))


def _with_workers(shared: Described, claims: str, count: int,
                  on_kernel: Callable[[Any, bool], None]) -> None:
    """`shared` compiled by this process and `count` workers, each taking a kernel
    by claiming it in the directory `claims`."""
    job = _job(shared, claims)
    workers = [_start(job) for _ in range(count)]
    theirs: Pending = []
    try:
        for k, (items, _) in enumerate(shared):   # costliest first
            if _claim(claims, k):
                _compile_here(items, on_kernel)
            else:
                theirs += items
        for worker in workers:
            _wait(worker)
        for fn, signature in theirs:   # compiled by a worker: loaded from its cache
            _compile(fn, signature)
            on_kernel(fn, False)
    finally:  # interrupted (SIGTERM, a failed compile): no worker outlives the run
        for worker in workers:
            if worker is not None and worker.poll() is None:
                worker.kill()
                worker.wait()


def _claim(claims: str, k: int) -> bool:
    """Whether this process takes group `k` (the first to create its file does)."""
    try:
        os.close(os.open(os.path.join(claims, str(k)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


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


def _groups(pending: Pending) -> list[Pending]:
    """`pending` by kernel, the costliest first: a kernel's signatures stay together
    (one process writes its cache index)."""
    groups: dict[Any, Pending] = {}
    for fn, signature in pending:
        groups.setdefault(fn, []).append((fn, signature))
    return sorted(groups.values(), key=lambda items: -_cost(items[0][0]) * len(items))


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


def _job(shared: Described, claims: str) -> str:
    """What every worker is told: the claims directory and each kernel group's
    descriptions, in this process's order (costliest first)."""
    return json.dumps({"claims": claims, "groups": [described for _, described in shared]})


def _start(job: str) -> subprocess.Popen | None:
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


def _work(job_text: str) -> None:
    """Compile the kernels this worker claims (cheapest first) into numba's cache."""
    job = json.loads(job_text)
    for k in reversed(range(len(job["groups"]))):
        if _claim(job["claims"], k):
            for kernel in job["groups"][k]:
                _function(kernel).compile(tuple(_types(kernel["args"])))


def _function(kernel: dict) -> Any:
    """The dispatcher a description names, its module imported from its file."""
    module = sys.modules.get(kernel["module"])
    if module is None:
        spec = importlib.util.spec_from_file_location(kernel["module"], kernel["file"])
        module = importlib.util.module_from_spec(spec)
        sys.modules[kernel["module"]] = module
        spec.loader.exec_module(module)
    return getattr(module, kernel["name"])


if __name__ == "__main__":
    _work(sys.stdin.read())
