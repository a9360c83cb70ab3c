"""The CPU thread policy: a matmul gets a second BLAS thread only when it is big and
the last window saw a free core; SEXPGPU_BLAS_THREADS fixes the count; a step's
results are the same bits with one thread and with two; the `open` event records
the policy and the BLAS, and `sexpgpu diff` shows two runs that differ there."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sexpgpu.kernels import blas, threads

from sexpgpu.api import load_program
from sexpgpu.commands import diff

WIDE = """
(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defknob steps 4 "steps")
(defloader train :source (synthetic :task :classes :n 512 :dim 64 :classes 10 :split :train)
  :batch 128)
(defmodel wide ()
  (defchild l1 (nn:linear 64 512))
  (defchild l2 (nn:linear 512 512))
  (defchild l3 (nn:linear 512 10))
  (lambda (x) (l3 (relu (l2 (relu (l1 x)))))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
(optimizer (optim:adam :lr 1e-3))
(defrun :steps steps)
"""


def test_small_matmuls_keep_one_thread_and_big_ones_take_the_free_cores() -> None:
    policy = threads.Policy(cap=2)
    big = 2 * 768 * 128 * 384
    assert policy.threads_for(big) == 1  # nothing measured yet: one thread
    policy.allowed = 2
    assert policy.threads_for(2 * 100 * 256 * 256) == 1  # gains little from a second
    assert policy.threads_for(big) == 2
    assert threads.Policy(cap=2, fixed=3).threads_for(10) == 3


@pytest.mark.parametrize("idle,ours,allowed", [(0.0, 0.4, 1), (0.0, 1.0, 1), (0.2, 0.9, 1),
                                                 (0.9, 1.0, 2), (1.0, 1.0, 2), (3.0, 1.0, 2)])
def test_free_cores_are_the_idle_time_plus_our_own(monkeypatch: pytest.MonkeyPatch,
                                                   idle: float, ours: float,
                                                   allowed: int) -> None:
    """Per second of wall time: the machine's idle CPU seconds and this process's."""
    clock = {"idle": 100.0, "ours": 5.0}
    monkeypatch.setattr(threads, "_idle_seconds", lambda: clock["idle"])
    monkeypatch.setattr(threads.time, "process_time", lambda: clock["ours"])
    policy = threads.Policy(cap=2)
    policy.refresh(now=10.0)
    clock["idle"] += idle
    clock["ours"] += ours
    policy.refresh(now=10.1)  # inside the window: not measured yet
    assert policy.windows == 0
    policy.refresh(now=11.0)
    assert policy.windows == 1 and policy.allowed == allowed


def test_unreadable_proc_stat_keeps_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_idle_seconds", lambda: None)
    policy = threads.Policy(cap=8)
    for now in (1.0, 2.0, 3.0):
        policy.refresh(now=now)
    assert policy.allowed == 1


def test_the_environment_fixes_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEXPGPU_BLAS_THREADS", "2")
    threads.reset()
    try:
        described = threads.policy().describe()
    finally:
        threads.reset()
    assert described["policy"] == "fixed" and described["blas_threads"] == 2
    assert described["blas"].startswith("OpenBLAS")  # scipy's, as pyproject requires


def _train(path: str, count: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list, dict]:
    monkeypatch.setenv("SEXPGPU_BLAS_THREADS", str(count))
    threads.reset()
    try:
        _, program = load_program(path)
        rng = np.random.default_rng(0)
        losses = []
        for step in range(4):
            x = rng.normal(size=(128, 64)).astype(np.float32)
            y = rng.integers(0, 10, size=128).astype(np.int64)
            ctx = {"step": step, "microstep": 0, "microbatches": 1, "epoch": 0,
                   "samples": 0, "tokens": 0, "stage": 0, "seed": 7}
            losses.append(program.train_step([{"x": x, "y": y}], ctx)["loss"])
        assert blas._library().scipy_openblas_get_num_threads() == count
        return losses, program.params()
    finally:
        threads.reset()


def test_one_and_two_threads_give_the_same_bits(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "wide.sx"
    path.write_text(WIDE)
    one, params_one = _train(str(path), 1, monkeypatch)
    two, params_two = _train(str(path), 2, monkeypatch)
    assert one == two  # float equality of every loss: the same bits
    for name, value in params_one.items():
        assert value.tobytes() == params_two[name].tobytes(), name


def test_diff_shows_runs_that_differ_only_in_threads() -> None:
    auto = {"blas": "OpenBLAS 0.3.30", "policy": "auto", "blas_threads": 2,
            "numba_threads": 2}
    fixed = {**auto, "policy": "fixed", "blas_threads": 1}
    side = {"state": "done", "step": 10, "steps": 10, "time_s": 1.0, "metrics": {},
            "targets": [], "targets_met": None}
    lines = diff.render_results(diff.compare_results({**side, "threads": auto},
                                                     {**side, "threads": fixed}))
    assert "  threads: BLAS auto (up to 2), numba 2 -> BLAS fixed (1), numba 2  (differ)" \
        in lines


def test_the_step_asks_for_threads_where_the_matmul_size_class_changes() -> None:
    """Small matmuls all get one thread: an unrolled loop of them asks once, and a
    big matmul between small ones asks before it and after it."""
    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph

    g = Graph("classes")
    h, w = g.input("h", (4, 6)), g.input("w", (6, 6))
    for _ in range(5):
        h = g.apply("tanh", g.apply("matmul", h, w))
    a, b = g.input("a", (512, 512)), g.input("b", (512, 512))   # 2^28 FLOPs: its own class
    big = g.apply("matmul", a, b)
    g.output("big", big)
    g.output("h", g.apply("matmul", h, w))
    source = kernels.compile(g).source
    asked = [int(line.split("(")[1].rstrip(")")) for line in source.splitlines()
             if line.strip().startswith("blas_threads(")]
    assert [threads.MIN_FLOPS_PER_THREAD <= f for f in asked] in ([False, True, False],
                                                                 [True, False])
    assert source.count("\n    f") >= 7 > len(asked)   # 7 matmul calls (and the tanhs)


@pytest.mark.parametrize("count", [1, 2])
def test_parallel_kernels_take_the_policys_threads_and_give_the_same_bits(
        count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop of at least PARALLEL_WORK element-operations is a prange, and the step
    sets numba's threads from the policy before it (one on a busy box): any count
    gives the bits of one thread."""
    import numba

    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph

    g = Graph("wide")
    x = g.input("x", (2048, 2048))
    y = x
    for k in range(16):  # one fused loop of 16 operations on 4M elements: 2^26
        y = g.apply("mul" if k % 2 else "add", y, x)
    g.output("y", y)
    compiled = kernels.compile(g)
    assert compiled.generated.source.count("kernel_threads()") == 1
    assert any("prange(" in text for text in compiled.generated.kernel_sources)
    feed = {"x": np.random.default_rng(3).uniform(0.5, 1.0, size=(2048, 2048)).astype(np.float32)}
    monkeypatch.setenv("SEXPGPU_BLAS_THREADS", "1")
    threads.reset()
    one = compiled.run(feed)
    monkeypatch.setenv("SEXPGPU_BLAS_THREADS", str(count))
    threads.reset()
    try:
        got = compiled.run(feed)
        assert numba.get_num_threads() == min(count, numba.config.NUMBA_NUM_THREADS)
    finally:
        threads.reset()
    assert got["y"].tobytes() == one["y"].tobytes()
