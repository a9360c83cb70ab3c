"""The kernel program's compile ahead of the first step (sexpgpu/runtime/compiled.py):
every kernel of the training and evaluation graphs is compiled when the program is
built (one pool of compile processes for all of them: compiling the evaluation's at
its first call would start the workers and warm numba up a second time), and an
evaluation then gives the reference interpreter's numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sexpgpu.kernels import executor

from sexpgpu.api import load_program
from sexpgpu.ir.reference import run_reference

TINY = Path(__file__).resolve().parent / "e2e" / "tiny.sx"


def _not_compiled(compiled) -> int:
    return len(executor._kernel_calls(compiled))


def test_every_kernel_is_compiled_before_the_first_step(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SEXPGPU_COMPILE_JOBS", "1")
    _, program = load_program(str(TINY), {"steps": 2})
    assert _not_compiled(program._step) == 0
    evaluation, ctx_names = program._evals["test"]
    assert _not_compiled(evaluation) == 0  # the accuracy, the loss without its gradient
    rng = np.random.default_rng(0)
    batch = {"x": rng.standard_normal((100, 8)).astype(np.float32),
             "y": rng.integers(0, 4, 100).astype(np.int64)}
    ctx = {"step": 0, "microstep": 0}
    got = program.evaluate(batch, ctx, "test")
    assert _not_compiled(evaluation) == 0
    inputs = program._inputs(batch, ctx, ctx_names)
    want = run_reference(evaluation.program.graph,
                         {v.name: inputs[v.name] for v in evaluation.program.graph.inputs})
    for name, value in got.items():
        np.testing.assert_allclose(value, float(want[name]), rtol=1e-5, err_msg=name)
