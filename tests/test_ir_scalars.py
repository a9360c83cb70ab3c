"""`ir/scalars.py`: a graph of f32 scalars computed in plain Python (the check's
learning-rate values without numpy) against the reference interpreter, and the
nodes it leaves to the reference."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from test_contract_targets import compile_with

from sexpgpu.ir import build, scalars
from sexpgpu.ir.graph import Graph, live_nodes
from sexpgpu.ir.reference import run_reference
from sexpgpu.trace import optimizer

SCHEDULES = [
    "(lambda (ctx) (+ (* 0.0 (ctx-ref ctx :step)) 3e-4))",
    "(optim:linear-warmup :peak 1e-3 :warmup 10)",
    "(optim:cosine :peak 1e-3 :final 1e-4 :warmup 7 :steps 100)",
    "(optim:cosine :peak 1e-3 :steps 50)",
    "(optim:linear-decay :peak 2e-3 :final 0.0 :warmup 5 :steps 90)",
    "(optim:step-schedule :peak 1e-3 :milestones '(30 60) :gamma 0.5)",
    "(lambda (ctx) (* 1e-3 (exp (* -0.01 (ctx-ref ctx :step)))))",
    "(lambda (ctx) (/ 1e-2 (sqrt (+ 1.0 (ctx-ref ctx :microstep)))))",
]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_schedules_match_the_reference(tmp_path: Path, schedule: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = compile_with(tmp_path, optimizer=f"(optim:adam :lr {schedule})", micro=2)
    g = compiled.graphs.apply
    [(_, lr)] = compiled.graphs.learning_rates
    steps = list(range(0, 120, 3))
    exact = optimizer.schedule_values(g, lr.value, steps, 2)
    # the fast path serves every stdlib schedule: the reference would fail here
    monkeypatch.setattr(optimizer, "run_reference", None)
    fast = optimizer.schedule_values(g, lr.value, steps, 2, exact=False)
    assert fast is not None and fast.keys() == exact.keys()
    for step in steps:  # libm's cos and exp against numpy's f32 ones: an ulp or two
        # (of cos near -1, then 1 + cos cancels: a few ulp of the value, < 1e-6 of peak)
        assert fast[step] == pytest.approx(exact[step], rel=3e-7, abs=1e-9), step
    assert all(np.float32(v) == v for v in fast.values())  # f32 values


def _graph() -> tuple[Graph, object]:
    g = Graph("t")
    return g, g.input("ctx/step", (), "f32", role="ctx")


def _both(g: Graph, x: object, out: object, step: float) -> tuple[float | None, float]:
    nodes = live_nodes(g, [out])
    fast = scalars.evaluate(nodes, {x.id: step}, out)
    sub = Graph("s")
    sub.inputs, sub.nodes, sub.outputs = [x], nodes, {"v": out}
    return fast, float(run_reference(sub, {"ctx/step": step}, apply_updates=False)["v"])


def test_each_result_is_rounded_to_f32() -> None:
    g, x = _graph()
    out = g.apply("add", g.apply("mul", x, build.scalar(g, 0.1, "f32")),
                  build.scalar(g, 0.2, "f32"))
    fast, ref = _both(g, x, out, 3.0)
    assert fast == ref == float(np.float32(np.float32(3 * np.float32(0.1)) + np.float32(0.2)))
    big = g.apply("mul", x, build.scalar(g, 3e38, "f32"))
    assert _both(g, x, big, 10.0) == (math.inf, math.inf)  # f32 overflow, as numpy's


def test_comparisons_and_where() -> None:
    g, x = _graph()
    out = g.apply("where", g.apply("lt", x, build.scalar(g, 5.0, "f32")),
                  build.scalar(g, 1.0, "f32"), g.apply("neg", x))
    assert [_both(g, x, out, s) for s in (4.0, 6.0)] == [(1.0, 1.0), (-6.0, -6.0)]


def test_other_graphs_are_left_to_the_reference() -> None:
    g, x = _graph()
    # a math domain error (numpy gives nan), a tensor, an integer
    log = g.apply("log", g.apply("sub", build.scalar(g, 1.0, "f32"), x))
    fast, ref = _both(g, x, log, 2.0)
    assert fast is None and math.isnan(ref)
    vec = g.apply("sum", g.apply("add", x, g.input("v", (3,), "f32")), axes=None,
                  keepdims=False)
    assert scalars.evaluate(live_nodes(g, [vec]), {x.id: 1.0}, vec) is None
    i = g.apply("cast", x, dtype="i32")
    assert scalars.evaluate(live_nodes(g, [i]), {x.id: 1.0}, i) is None
