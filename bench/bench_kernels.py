"""Kernel benchmarks (pytest-benchmark; run `pytest bench/bench_kernels.py`).
Each records its baseline in the same run and stores the ratio in extra_info:
a fused 5-op elementwise expression on 1M f32 vs numpy, a full MLP training step
vs the same step by hand in numpy, and cold vs warm compile of that step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import timeit
from pathlib import Path

import numpy as np
from sexpgpu.kernels import demo

from sexpgpu import kernels
from sexpgpu.ir.graph import Graph

ROOT = Path(__file__).resolve().parent.parent
N = 1_000_000


def _best(fn, number: int = 5, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def _c(g: Graph, value: float):
    return g.apply("full", shape=(), dtype="f32", value=value)


def test_fused_elementwise_1m(benchmark) -> None:
    # y = relu(x * 1.5 + b) * x - b: five ops, one fused parallel loop. (With a
    # transcendental such as tanh numpy wins: its SIMD tanh beats libm per element.)
    g = Graph("fused-5")
    x, b = g.input("x", (N,)), g.input("b", (N,))
    t = g.apply("relu", g.apply("add", g.apply("mul", x, _c(g, 1.5)), b))
    g.output("y", g.apply("sub", g.apply("mul", t, x), b))
    compiled = kernels.compile(g)
    r = np.random.default_rng(0)
    xs, bs = r.standard_normal(N).astype(np.float32), r.standard_normal(N).astype(np.float32)
    inputs = {"x": xs, "b": bs}
    def by_numpy():
        return np.maximum(xs * np.float32(1.5) + bs, np.float32(0)) * xs - bs

    np.testing.assert_allclose(compiled.run(inputs)["y"], by_numpy(), rtol=1e-6, atol=1e-6)
    numpy_s = _best(by_numpy)
    ours_s = _best(lambda: compiled.run(inputs))
    benchmark.extra_info.update(numpy_ms=numpy_s * 1e3, kernels_ms=ours_s * 1e3,
                                speedup_vs_numpy=numpy_s / ours_s)
    print(f"\nfused 5-op 1M: numpy {numpy_s * 1e3:.2f} ms, kernels {ours_s * 1e3:.2f} ms, "
          f"{numpy_s / ours_s:.2f}x")
    benchmark(compiled.run, inputs)


def test_mlp_step(benchmark) -> None:
    fn = demo.mlp_step()
    prog = fn.compile("kernels")
    data = demo.batch(0)
    by_hand = demo.NumpyMLP(prog.params)
    prog(**data)
    numpy_s = _best(lambda: by_hand.step(data["x"], data["y"]), number=20)
    ours_s = _best(lambda: prog(**data), number=20)
    benchmark.extra_info.update(numpy_ms=numpy_s * 1e3, kernels_ms=ours_s * 1e3,
                                speedup_vs_numpy=numpy_s / ours_s,
                                kernels=len(prog.runner.program.kernels),
                                peak_bytes=prog.runner.peak_bytes)
    print(f"\nMLP step: numpy {numpy_s * 1e3:.3f} ms, kernels {ours_s * 1e3:.3f} ms, "
          f"{numpy_s / ours_s:.2f}x ({len(prog.runner.program.kernels)} kernels, "
          f"peak {prog.runner.peak_bytes} B)")
    benchmark(prog, **data)


COMPILE = textwrap.dedent("""
    import json, time
    t0 = time.perf_counter()
    import numba, autodiff, kernels.executor  # imports are not compilation
    from sexpgpu.kernels import demo
    t1 = time.perf_counter()
    prog = demo.mlp_step().compile("kernels")
    prog(**demo.batch(0))
    t2 = time.perf_counter()
    print(json.dumps({"seconds": t2 - t1, "imports": t1 - t0}))
""")


def _compile_seconds(cache: str) -> float:
    env = {**os.environ, "SEXPGPU_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", COMPILE], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


def test_compile_cold_vs_warm(benchmark) -> None:
    with tempfile.TemporaryDirectory() as cache:
        cold = _compile_seconds(cache)
        warm = benchmark.pedantic(_compile_seconds, args=(cache,), rounds=2, iterations=1)
        warm = _compile_seconds(cache)
    benchmark.extra_info.update(cold_s=cold, warm_s=warm)
    print(f"\nMLP step build + compile + first run, new process (imports excluded): "
          f"cold {cold:.2f} s, warm {warm:.2f} s")
