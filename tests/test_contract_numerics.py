"""The traced optimizer updates, schedules, clipping and microbatching compute what
their definitions say: step graphs run on the reference interpreter against numpy."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import plan_json
from sexpgpu.ir.reference import run_reference

TEMPLATE = """(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defknob steps 10 "steps")
(defloader train :source (synthetic :task :linear-regression :dim 8) :batch {batch})
(defmodel net ()
  (defchild l (nn:linear 8 {out}))
  (lambda (x)
    {forward}))
(defobjective (model &key x y)
  {objective})
(optimizer {optimizer})
(defrun :steps steps {run})
"""


def compile_text(tmp_path: Path, *, optimizer: str, batch: int = 4, run: str = "",
                 out: int = 1) -> object:
    text = TEMPLATE.format(
        batch=batch, out=out, run=run, optimizer=optimizer,
        forward="(reshape (l x) (list (dim x 0)))" if out == 1 else "(l x)",
        objective="(nn:mse (model x) y)" if out == 1 else "(nn:mse (sum (model x) :axis 1) y)")
    path = tmp_path / "run.sx"
    path.write_text(text)
    return compile_file(str(path))


def inputs_for(graph, rng: np.random.Generator, step: int = 0) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for v in graph.inputs:
        if v.role in ("param", "data"):
            out[v.name] = rng.standard_normal(v.shape).astype(np.float32)
        elif v.role == "state":
            out[v.name] = np.zeros(v.shape, np.float32)
        elif v.role == "ctx":
            out[v.name] = np.array(step, np.float32)
        else:
            out[v.name] = np.array(0, np.int64)
    return out


def grads_of(graph, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The loss gradient by central differences in float64 (independent of autodiff)."""
    def loss(params: dict[str, np.ndarray]) -> float:
        w, b = params["l/weight"], params["l/bias"]
        x, y = inputs["data/x"].astype(np.float64), inputs["data/y"].astype(np.float64)
        pred = x @ w.T + b
        return float(np.mean((pred[:, 0] - y) ** 2))

    base = {k: inputs[k].astype(np.float64) for k in ("l/weight", "l/bias")}
    grads = {}
    for name, value in base.items():
        g = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            for sign in (1, -1):
                shifted = {k: v.copy() for k, v in base.items()}
                shifted[name][idx] += sign * 1e-5
                g[idx] += sign * loss(shifted) / 2e-5
        grads[name] = g
    return grads


def test_sgd_is_p_minus_lr_g(tmp_path: Path) -> None:
    compiled = compile_text(tmp_path, optimizer="(optim:sgd :lr 0.1)")
    g = compiled.graphs.step
    inputs = inputs_for(g, np.random.default_rng(0))
    before = {k: inputs[k].copy() for k in ("l/weight", "l/bias")}
    grads = grads_of(g, inputs)
    run_reference(g, inputs)
    for name in before:
        np.testing.assert_allclose(inputs[name], before[name] - 0.1 * grads[name], rtol=1e-4,
                                   atol=1e-5)


def test_adamw_matches_its_definition_over_three_steps(tmp_path: Path) -> None:
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.99, 1e-8, 0.1
    compiled = compile_text(
        tmp_path, optimizer=f"(optim:adamw :lr {lr} :beta1 {b1} :beta2 {b2} :weight-decay {wd})")
    g = compiled.graphs.step
    inputs = inputs_for(g, np.random.default_rng(1))
    p = {k: inputs[k].astype(np.float64) for k in ("l/weight", "l/bias")}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(x) for k, x in p.items()}
    for step in range(3):
        inputs["ctx/step"] = np.array(step, np.float32)
        grads = grads_of(g, inputs)
        run_reference(g, inputs)
        t = step + 1
        for k in p:
            p[k] = p[k] - lr * wd * p[k]
            m[k] = b1 * m[k] + (1 - b1) * grads[k]
            v[k] = b2 * v[k] + (1 - b2) * grads[k] ** 2
            mhat, vhat = m[k] / (1 - b1 ** t), v[k] / (1 - b2 ** t)
            p[k] = p[k] - lr * mhat / (np.sqrt(vhat) + eps)
            np.testing.assert_allclose(inputs[k], p[k], rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_with_momentum_matches_pytorchs_rule_over_three_steps(tmp_path: Path,
                                                                  nesterov: bool) -> None:
    """torch.optim.SGD: buf = momentum buf + g (g itself at the first step, which
    zeros give), then p -= lr (g + momentum buf) with nesterov, else lr buf."""
    lr, mu, wd = 0.1, 0.9, 0.01
    flag = "t" if nesterov else "nil"
    compiled = compile_text(tmp_path, optimizer=f"(optim:sgd :lr {lr} :momentum {mu} "
                                                f":weight-decay {wd} :nesterov {flag})")
    g = compiled.graphs.step
    assert sorted(v.name for v in g.inputs if v.role == "state") == [
        "opt/l/bias/buf", "opt/l/weight/buf"]
    inputs = inputs_for(g, np.random.default_rng(4))
    p = {k: inputs[k].astype(np.float64) for k in ("l/weight", "l/bias")}
    buf = {k: np.zeros_like(v) for k, v in p.items()}
    for _ in range(3):
        grads = grads_of(g, inputs)
        run_reference(g, inputs)
        for k in p:
            d = grads[k] + wd * p[k]
            buf[k] = mu * buf[k] + d
            p[k] = p[k] - lr * (d + mu * buf[k] if nesterov else buf[k])
            np.testing.assert_allclose(inputs[k], p[k], rtol=1e-4, atol=1e-5)


def test_plain_sgd_keeps_no_state_and_a_group_may_take_momentum(tmp_path: Path) -> None:
    compiled = compile_text(tmp_path, optimizer="""(optim:sgd :lr 0.1)
  :groups ((:ndim 1 :momentum 0.5))""")
    states = [v.name for v in compiled.graphs.step.inputs if v.role == "state"]
    assert states == ["opt/l/bias/buf"]
    groups = plan_json(compiled)["optimizer"]["groups"]
    assert sorted(grp["state"] for grp in groups) == [[], ["buf"]]


@pytest.mark.parametrize("optimizer", [
    "(optim:sgd-momentum :lr 0.1 :momentum 0.9 :nesterov t)", "(optim:adam :lr 0.01)",
    "(optim:lion :lr 0.001 :weight-decay 0.1)", "(optim:sgd :lr 0.1 :weight-decay 0.01)",
])
def test_every_optimizer_traces_and_updates(tmp_path: Path, optimizer: str) -> None:
    compiled = compile_text(tmp_path, optimizer=optimizer)
    g = compiled.graphs.step
    inputs = inputs_for(g, np.random.default_rng(2))
    before = inputs["l/weight"].copy()
    outputs = run_reference(g, inputs)
    assert np.isfinite(outputs["loss"]) and not np.allclose(inputs["l/weight"], before)


def test_muon_for_matrices_and_adam_for_vectors(tmp_path: Path) -> None:
    compiled = compile_text(tmp_path, out=4, optimizer="""(optim:muon :lr 0.02)
  :groups ((:ndim 1 :optimizer (optim:adam :lr 1e-3)))""")
    groups = {grp["optimizer"]: grp["params"]
              for grp in plan_json(compiled)["optimizer"]["groups"]}
    assert groups == {"adam": ["l/bias"], "muon": ["l/weight"]}
    g = compiled.graphs.step
    assert sum(n.op == "matmul" for n in g.nodes) >= 5 * 3      # Newton-Schulz iterations
    inputs = inputs_for(g, np.random.default_rng(3))
    before = inputs["l/weight"].copy()
    grad = grads_of_sum(inputs)
    run_reference(g, inputs)
    step = (before - inputs["l/weight"]) / 0.02
    # the gradient of a summed output is rank one: Newton-Schulz keeps its direction
    # and pushes its one singular value towards 1
    singular = np.linalg.svd(step, compute_uv=False)
    assert 0.5 < singular[0] < 1.5 and np.all(singular[1:] < 1e-3)
    cosine = np.sum(step * grad) / (np.linalg.norm(step) * np.linalg.norm(grad))
    assert cosine > 0.99


def grads_of_sum(inputs: dict[str, np.ndarray]) -> np.ndarray:
    """d/dW of mean((sum_j (x W^T + b)_j - y)^2), by hand."""
    x, y = inputs["data/x"].astype(np.float64), inputs["data/y"].astype(np.float64)
    w, b = inputs["l/weight"].astype(np.float64), inputs["l/bias"].astype(np.float64)
    residual = (x @ w.T + b).sum(axis=1) - y                       # (B,)
    row = 2 * (residual[:, None] * x).mean(axis=0)                 # (8,)
    return np.tile(row, (w.shape[0], 1))


def test_cosine_schedule_is_nanogpts(tmp_path: Path) -> None:
    peak, final, warmup, steps = 1e-3, 1e-4, 100, 2000
    compiled = compile_text(tmp_path, optimizer=(
        f"(optim:adamw :lr (optim:cosine :peak {peak} :final {final} :warmup {warmup} "
        f":steps {steps}))"))
    g = compiled.graphs.step

    def nanogpt(it: int) -> float:
        if it < warmup:
            return peak * (it + 1) / (warmup + 1)
        if it > steps:
            return final
        ratio = (it - warmup) / (steps - warmup)
        return final + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (peak - final)

    for it in (0, 50, 99, 100, 500, 1999, 2000, 2500):
        inputs = inputs_for(g, np.random.default_rng(4), step=it)
        lr = float(run_reference(g, inputs)["lr"])
        assert lr == pytest.approx(nanogpt(it), rel=1e-5), it


@pytest.mark.parametrize("schedule,expected", [
    ("(optim:linear-warmup :peak 1.0 :warmup 9)", [0.1, 0.5, 1.0, 1.0]),
    ("(optim:linear-decay :peak 1.0 :final 0.0 :steps 100)", [1.0, 0.96, 0.5, 0.0]),
    ("(optim:step-schedule :peak 1.0 :milestones '(10 60) :gamma 0.1)", [1.0, 1.0, 0.1, 0.01]),
    ("(optim:constant 0.5)", [0.5, 0.5, 0.5, 0.5]),
])
def test_schedules(tmp_path: Path, schedule: str, expected: list[float]) -> None:
    g = compile_text(tmp_path, optimizer=f"(optim:sgd :lr {schedule})").graphs.step
    for it, want in zip((0, 4, 50, 100), expected):
        lr = float(run_reference(g, inputs_for(g, np.random.default_rng(5), step=it))["lr"])
        assert lr == pytest.approx(want, abs=1e-6), (schedule, it)


def test_clipping_by_global_norm(tmp_path: Path) -> None:
    compiled = compile_text(tmp_path, optimizer="(optim:sgd :lr 1.0) :clip 0.01")
    g = compiled.graphs.step
    inputs = inputs_for(g, np.random.default_rng(6))
    before = {k: inputs[k].copy() for k in ("l/weight", "l/bias")}
    grads = grads_of(g, inputs)
    norm = math.sqrt(sum(float(np.sum(x ** 2)) for x in grads.values()))
    out = run_reference(g, inputs)
    assert float(out["grad_norm"]) == pytest.approx(norm, rel=1e-3)
    step = math.sqrt(sum(float(np.sum((before[k] - inputs[k]) ** 2)) for k in before))
    assert step == pytest.approx(0.01, rel=1e-3)


def test_microbatches_equal_one_big_batch(tmp_path: Path) -> None:
    big = compile_text(tmp_path, optimizer="(optim:sgd :lr 0.1)", batch=8).graphs
    (tmp_path / "micro").mkdir()
    small = compile_text(tmp_path / "micro", optimizer="(optim:sgd :lr 0.1)", batch=8,
                         run=":microbatches 4").graphs
    assert small.step is None and small.accumulate.inputs[-1].role == "state"
    assert next(v for v in small.accumulate.inputs if v.name == "data/x").shape == (2, 8)
    rng = np.random.default_rng(7)
    inputs = inputs_for(big.step, rng)
    params = {k: inputs[k].copy() for k in ("l/weight", "l/bias")}
    run_reference(big.step, inputs)
    acc_in = inputs_for(small.accumulate, rng)
    acc_in.update({k: v.copy() for k, v in params.items()})
    for i in range(4):
        acc_in["data/x"] = inputs["data/x"][2 * i:2 * i + 2]
        acc_in["data/y"] = inputs["data/y"][2 * i:2 * i + 2]
        run_reference(small.accumulate, acc_in)
    app_in = inputs_for(small.apply, rng)
    app_in.update({k: v.copy() for k, v in params.items()})
    app_in.update({k: v for k, v in acc_in.items() if k.startswith("grad/")})
    run_reference(small.apply, app_in)
    for k in params:
        np.testing.assert_allclose(app_in[k], inputs[k], rtol=1e-5, atol=1e-6)
        assert not app_in[f"grad/{k}"].any()                        # buffers zeroed
