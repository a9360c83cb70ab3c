"""Compiling kernels before their first call, several at once.

numba compiles one function at a time and holds the GIL while it does, so a cold
char-GPT spent ~17 s compiling its 76 kernels on one core of a 2-core machine.
Compilation goes through numba's disk cache (`cache=True`) anyway, so other
processes can do part of it: each worker (`python -m sexpgpu.kernels.compile_pool`)
is told every uncached kernel (module file, argument types) and compiles those it
claims into numba's cache files, while this process compiles those it claims; then
this process loads the workers' from the cache (milliseconds each). A claim is a
file created exclusively in a directory of this compile: every process takes the
next unclaimed kernel, costliest first (an estimate from its source), so the work
divides itself however fast each process turns out to be and the last kernels,
the cheapest, leave no process waiting long for another. A worker that fails or is
killed costs nothing but time: a kernel it claimed and did not finish is compiled
here, as it would have been without it. `sexpgpu run` starts the workers early when
the cache looks cold (kernels/workers.py), so that they are warm by then.

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
import time
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from sexpgpu.kernels import parallel, workers
from sexpgpu.kernels.workers import jobs

WORKER_TIMEOUT_S = 600.0
POLL_S = 0.005  # how often this process, out of kernels to claim, looks for the workers'

Pending = list[tuple[Any, tuple]]   # (numba dispatcher, argument types)
# kernel groups a worker can be told about, each with its items' descriptions
Described = list[tuple[Pending, list[dict]]]


def compile_all(pending: Pending, on_kernel: Callable[[Any, bool], None]) -> None:
    """Compile every (dispatcher, signature) of `pending`, in this process and in
    workers; `on_kernel(fn, cached)` as each is ready here."""
    try:
        _compile_all(pending, on_kernel)
    finally:  # workers started early that this compile did not take
        workers.release()


def _compile_all(pending: Pending, on_kernel: Callable[[Any, bool], None]) -> None:
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
    procs = [_start(job) for _ in range(count)]
    theirs: list[Pending] = []
    try:
        for k, (items, _) in enumerate(shared):   # costliest first, as the workers
            if _claim(claims, k):
                _compile_here(items, on_kernel)
            else:
                theirs.append(items)
        theirs = _load_while_waiting(theirs, procs, on_kernel)
        for proc in procs:
            _wait(proc)
        for items in theirs:   # compiled by a worker: loaded from its cache
            _load(items, on_kernel)
    finally:  # interrupted (SIGTERM, a failed compile): no worker outlives the run
        for proc in procs:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def _load_while_waiting(theirs: list[Pending], procs: list, on_kernel: Callable[[Any, bool], None]
                        ) -> list[Pending]:
    """While workers still run, load the kernels of one signature they have finished
    (its code file is on disk) rather than idle until the last one ends; the groups
    left to load after them."""
    while theirs and any(p is not None and p.poll() is None for p in procs):
        ready = [items for items in theirs if len(items) == 1 and _saved(items[0][0])]
        for items in ready:
            _load(items, on_kernel)
        theirs = [items for items in theirs if not any(items is r for r in ready)]
        if not ready:
            time.sleep(POLL_S)
    return theirs


def _load(items: Pending, on_kernel: Callable[[Any, bool], None]) -> None:
    for fn, signature in items:
        _compile(fn, signature)
        on_kernel(fn, False)


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


def _saved(fn: Any) -> bool:
    """Whether numba's cache holds the code of `fn`'s first signature: its index is
    written before the code, each file whole (renamed into place). numba's names."""
    try:
        files = fn._cache._cache_file
        return os.path.exists(files._data_path(files._data_name(1)))
    except AttributeError:
        return False


def _cost(fn: Any) -> float:
    """A kernel's compile time, estimated from its module's source (a fit over the
    char-GPT's 64 kernels, r = 0.95): LLVM's work grows with the text, each loop adds
    some, a BLAS call more (np.dot's typing and checks)."""
    try:
        with open(inspect.getfile(fn.py_func), encoding="utf-8") as fh:
            source = fh.read()
    except (OSError, TypeError):  # no file (a function made by exec): no estimate
        source = ""
    return 0.01 + 0.15 * len(source) / 1000 + 0.28 * source.count("np.dot(") \
        + 0.04 * source.count("for ")


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
    """A worker (one started early if one waits) told `job`, or None."""
    worker = workers.take()
    if worker is None:
        return None
    try:
        worker.stdin.write(job.encode())
        worker.stdin.close()
    except OSError:  # it died (killed, out of memory): its kernels are compiled here
        worker.kill()
        worker.wait()
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
    """Compile the kernels this worker claims (costliest first) into numba's cache."""
    if not job_text:
        return  # started early and let go: nothing to compile
    job = json.loads(job_text)
    for k in range(len(job["groups"])):
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


def _warm_up() -> None:
    """Compile, in memory only, a loop like the kernels': numba's first compile in a
    process sets up its typing and LLVM (~0.4 s), so the job's kernels then compile
    at their own cost. And compile (or load) the parallel loop every chunk function
    runs in, and the address read of an f32 buffer its launches make
    (kernels/parallel.py, cached with the package): a fresh install's first run then
    finds them in the cache at its first step (0.6 s to compile). Not an np.dot
    (a kernel's BLAS call for a vector operand): its first compile took 0.5 s more,
    which kept the worker from the char-GPT's job for 0.4 s after it came, and no
    shipped example's kernel calls it."""
    namespace = {"np": np, "numba": numba}
    exec(_WARM_UP_SOURCE, namespace)  # noqa: S102 - a constant text, this module's own
    a = np.zeros(16, np.float32)
    namespace["loop"].compile((numba.typeof(a),) * 2 + (numba.int64,))
    parallel.run.compile(parallel.RUN_ARGS)
    parallel.data_address.compile((numba.typeof(a),))


_WARM_UP_SOURCE = """
@numba.njit(error_model='numpy', fastmath={'reassoc', 'contract'}, no_cfunc_wrapper=True,
            _nrt=False)
def loop(p0, p1, n0):
    for i0 in range(n0):
        p1[i0] = p0[i0] * np.float32(0.5) + p1[i0]
"""


if __name__ == "__main__":
    if workers.WARM_UP in sys.argv[1:]:
        _warm_up()
    _work(sys.stdin.read())
