"""Subnormals flushed to zero in a run's CPU kernels (kernels/fpmode.py): on the
calling thread and on every thread of a parallel kernel, only while a graph that
asks for it runs, and IEEE subnormals everywhere else."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sexpgpu.kernels import fpmode, threads

from sexpgpu import kernels
from sexpgpu.api import load_program
from sexpgpu.ir.graph import Graph

TINY = np.float32(1e-40)  # a subnormal float32
X86 = fpmode._X86


def test_flush_and_restore_on_this_thread() -> None:
    before = fpmode.flush()
    try:
        flushed = np.array([TINY]) * np.float32(1.0)
    finally:
        fpmode.restore(before)
    kept = np.array([TINY]) * np.float32(1.0)
    assert kept[0] == TINY
    assert flushed[0] == (0.0 if X86 else TINY)


def _product(n: int) -> kernels.CompiledGraph:
    """x * ones, both inputs: nothing for the compiler to fold."""
    g = Graph("product")
    g.output("y", g.apply("mul", g.input("x", (n,)), g.input("ones", (n,))))
    return kernels.compile(g)


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setenv("SEXPGPU_THREADS", "2")  # both threads, however busy the box
    threads.reset()
    yield
    threads.reset()


def test_a_parallel_kernel_computes_in_the_mode_of_its_caller(two_threads) -> None:
    """Large enough to run as chunks on numba's threads: flushed on every chunk when
    the graph asks for it, and kept by the same threads when the next call does not."""
    n = 2 * threads.PARALLEL_WORK
    compiled = _product(n)
    assert "def chunk(" in "".join(compiled.generated.kernel_sources)
    inputs = {"x": np.full(n, TINY, np.float32), "ones": np.ones(n, np.float32)}
    compiled.flush_denormals = True
    flushed = compiled.run(inputs)["y"]
    compiled.flush_denormals = False
    kept = compiled.run(inputs)["y"]
    assert (kept == TINY).all()
    assert (flushed == (0.0 if X86 else TINY)).all()
    # and the caller's own mode is as it was
    assert (np.array([TINY]) * np.float32(1.0))[0] == TINY


TINY_RUN = Path(__file__).parent / "e2e" / "tiny.sx"  # a small run with an eval


@pytest.mark.parametrize(("setting", "flushed"), [(None, True), ("keep", False),
                                                  ("flush", True)])
def test_a_runs_graphs_flush_unless_told_to_keep(monkeypatch,
                                                 setting: str | None, flushed: bool) -> None:
    if setting is None:
        monkeypatch.delenv("SEXPGPU_DENORMALS", raising=False)
    else:
        monkeypatch.setenv("SEXPGPU_DENORMALS", setting)
    _, program = load_program(str(TINY_RUN))
    graphs = [program._step, *(c for c, _ in program._evals.values())]
    assert all(g.flush_denormals is flushed for g in graphs)
    assert threads.policy().describe()["denormals"] == ("flushed" if flushed else "kept")
