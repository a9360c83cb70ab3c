"""Kernels compiled by several processes (kernels/compile_pool.py): what a worker
claims is compiled into numba's disk cache and loaded from it here, each kernel is
compiled once, the results are those of compiling everything in one process, and a
failed worker costs only time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numba
import pytest
from sexpgpu.kernels import compile_pool, workers

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""
    import json, subprocess, sys, tempfile
    from sexpgpu.kernels import compile_pool, demo, executor, workers
    if sys.argv[1] == "early":   # started before the kernels are known, as `run` does
        workers.start_early()
        assert len(workers._early) == 1
    prog = demo.mlp_step(batch=8, sizes=(6, 12, 3)).compile("kernels")
    pending = executor._kernel_calls(prog.runner)
    if sys.argv[1] == "broken":   # every worker exits at once, compiling nothing
        compile_pool._start = lambda job: subprocess.Popen(
            [sys.executable, "-c", "raise SystemExit(3)"], stdin=subprocess.PIPE)
    if sys.argv[1] == "worker-first":   # a worker given every kernel runs to the end first
        shared = [(items, [compile_pool._describe(item) for item in items])
                  for items in compile_pool._groups(pending)]
        with tempfile.TemporaryDirectory() as claims:
            compile_pool._wait(compile_pool._start(compile_pool._job(shared, claims)))
    executor.warm([prog.runner])
    left = executor._kernel_calls(prog.runner)
    hits = {fn.py_func.__module__: sum(fn.stats.cache_hits.values()) for fn, _ in pending}
    misses = {fn.py_func.__module__: sum(fn.stats.cache_misses.values()) for fn, _ in pending}
    out = prog(**demo.batch(0, n=8, d=6, classes=3))
    print(json.dumps({"loss": float(out["loss"]), "kernels": len(pending), "left": len(left),
                      "hits": hits, "misses": misses}))
""")


def _run(tmp_path: Path, jobs: int, mode: str = "normal") -> dict:
    cache = tmp_path / f"cache-{jobs}-{mode}"
    env = {**os.environ, "SEXPGPU_CACHE_DIR": str(cache), "SEXPGPU_COMPILE_JOBS": str(jobs),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_workers_kernels_are_loaded_from_the_cache_it_wrote(tmp_path) -> None:
    run = _run(tmp_path, 2, "worker-first")
    assert run["kernels"] >= 4 and run["left"] == 0
    # the worker claimed and compiled every kernel: here each is a cache hit, none compiled
    assert all(run["hits"].values()) and not any(run["misses"].values())
    assert run["loss"] == _run(tmp_path, 1)["loss"]


def test_two_processes_compile_each_kernel_once_with_the_same_results(tmp_path) -> None:
    alone, shared = _run(tmp_path, 1), _run(tmp_path, 2)
    assert shared["left"] == 0 and set(shared["hits"]) == set(alone["hits"])
    for module in shared["hits"]:
        # compiled here (a miss) or by the worker (a hit on its cache files): once
        assert shared["hits"][module] + shared["misses"][module] >= 1, module
        assert not (shared["hits"][module] and shared["misses"][module]), module
    assert not any(alone["hits"].values())
    assert shared["loss"] == alone["loss"]


def test_a_failed_worker_leaves_its_kernels_to_this_process(tmp_path) -> None:
    broken, alone = _run(tmp_path, 2, "broken"), _run(tmp_path, 1)
    assert broken["left"] == 0
    assert not any(broken["hits"].values())  # nothing came from a cache: all compiled here
    assert broken["loss"] == alone["loss"]


def test_claims_are_taken_once() -> None:
    with tempfile.TemporaryDirectory() as claims:
        assert compile_pool._claim(claims, 3)
        assert not compile_pool._claim(claims, 3)
        assert compile_pool._claim(claims, 4)


def test_a_type_a_worker_cannot_rebuild_stays_in_this_process() -> None:
    @numba.njit
    def f(a):
        return a

    plain = (numba.types.Array(numba.float32, 1, "C"), numba.int64)
    strided = (numba.types.Array(numba.float32, 1, "A"), numba.int64)
    assert compile_pool._describe((f, plain))["args"] == [["array", "float32", 1], ["int"]]
    assert compile_pool._describe((f, strided)) is None


@pytest.mark.parametrize(("setting", "kernels", "want"), [("3", 1, 3), ("1", 100, 1)])
def test_compile_jobs_setting_fixes_the_count(monkeypatch, setting, kernels, want) -> None:
    monkeypatch.setenv("SEXPGPU_COMPILE_JOBS", setting)
    assert compile_pool.jobs(kernels) == want


def test_few_kernels_or_mpi_ranks_compile_in_this_process(monkeypatch) -> None:
    monkeypatch.delenv("SEXPGPU_COMPILE_JOBS", raising=False)
    assert compile_pool.jobs(workers.MIN_PER_WORKER - 1) == 1
    monkeypatch.setenv("SEXPGPU_NUM_THREADS", "2")  # a sweep point's share of the cores
    assert compile_pool.jobs(1000) == 2
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert compile_pool.jobs(1000) == 1


def test_without_a_temporary_directory_everything_compiles_here(monkeypatch) -> None:
    import numpy as np

    @numba.njit
    def twice(a):
        return a * 2

    def no_tmp(*args, **kwargs):
        raise OSError("read-only file system")

    monkeypatch.setattr(compile_pool.tempfile, "TemporaryDirectory", no_tmp)
    monkeypatch.setenv("SEXPGPU_COMPILE_JOBS", "2")
    signature = (numba.typeof(np.zeros(3, np.float32)),)
    ready = []
    compile_pool.compile_all([(twice, signature)], lambda fn, cached: ready.append(fn))
    assert ready == [twice] and signature in twice.overloads


def test_a_worker_started_early_compiles_for_the_run(tmp_path) -> None:
    early, alone = _run(tmp_path, 2, "early"), _run(tmp_path, 1)
    assert early["left"] == 0 and early["loss"] == alone["loss"]
    # whatever the early worker took is a hit here (loaded from its cache), once
    assert all(early["hits"][m] + early["misses"][m] == 1 for m in early["hits"])


def test_workers_start_early_only_when_the_cache_has_no_kernels(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SEXPGPU_COMPILE_JOBS", "3")
    workers.start_early()
    started = list(workers._early)
    assert len(started) == 2  # this process compiles too
    workers.release()  # none taken: ended, none left waiting
    assert not workers._early and all(w.poll() is not None for w in started)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "sexpgpu_kernels_0.py").write_text("")
    workers.start_early()
    assert not workers._early
    monkeypatch.setenv("SEXPGPU_COMPILE_JOBS", "1")
    (tmp_path / "kernels" / "sexpgpu_kernels_0.py").unlink()
    workers.start_early()
    assert not workers._early


def test_every_process_takes_the_costliest_kernel_left(tmp_path) -> None:
    kernels = {"small": "def kernel(a):\n    a[0] = 1\n",
               "big": "def kernel(a, b, c):\n    for i in range(3):\n        for j in range(4):\n"
                      "            c[i * 4 + j] = a[i] * b[j] + a[j] - b[i] * c[j]\n"}
    functions = {}
    for name, body in kernels.items():
        (tmp_path / f"{name}.py").write_text(f"import numba\n\n\n@numba.njit\n{body}")
        functions[name] = compile_pool._function(
            {"module": f"cost_{name}", "file": str(tmp_path / f"{name}.py"), "name": "kernel"})
    one = numba.types.Array(numba.float32, 1, "C")
    groups = compile_pool._groups([(functions["small"], (one,)),
                                   (functions["big"], (one, one, one))])
    assert [items[0][0] for items in groups] == [functions["big"], functions["small"]]
