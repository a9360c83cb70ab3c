"""A concat read only by reductions over its axis is never written (kernels/unstack.py):
the gradient of a scan layer's input gates, stacked over the steps, read by the input
bias's sum and the input weight's batched product."""

from __future__ import annotations

import numpy as np
import pytest
from sexpgpu.kernels.lower import lower
from sexpgpu.kernels.unstack import unstacked

from sexpgpu import kernels
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph, live_nodes
from sexpgpu.ir.reference import run_reference

BATCH, STEPS, GATES = 6, 5, 8


def _stacked_gradient(g: Graph, shared: str | None):
    """A scan's input-gate gradient: each step's gate gradient (a loop), summed over
    the batch for the hidden bias when `shared` (the sums made "before" the stack's
    readers, as the VJPs make them, or "after"), stacked as (B, T, G); the input
    bias's sum over (B, T) and the input weight's gradient x^T dG (x: (B, T, 1)),
    read through a permute."""
    x = g.input("x", (BATCH, STEPS, 1))
    a, w = g.input("a", (BATCH, GATES)), g.input("w", (GATES, GATES))
    grads, h = [], a
    for t in range(STEPS):
        h = g.apply("mul", g.apply("tanh", g.apply("matmul", h, w)), a)
        grads.append(h)
        if shared == "before":
            g.output(f"hidden_bias_{t}", g.apply("sum", h, axes=(0,), keepdims=False))
    stack = g.apply("concat", *(g.apply("reshape", d, shape=(BATCH, 1, GATES)) for d in grads),
                    axis=1)
    g.output("input_bias", g.apply("sum", stack, axes=(0, 1), keepdims=False))
    product = g.apply("matmul", g.apply("permute", stack, perm=(0, 2, 1)), x)  # (B, G, 1)
    g.output("input_weight", g.apply("sum", product, axes=(0,), keepdims=False))
    g.output("rows", g.apply("sum", g.apply("matmul", g.apply("permute", x, perm=(0, 2, 1)),
                                            stack), axes=(0,), keepdims=True))
    for t, h in enumerate(grads if shared == "after" else ()):
        g.output(f"hidden_bias_{t}", g.apply("sum", h, axes=(0,), keepdims=False))
    return grads


def _inputs(g: Graph, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in g.inputs}
    inputs["a"][0, :2] = (np.inf, -0.0)  # special values reach the sums
    inputs["x"][1, :3, 0] = (-0.0, np.inf, np.nan)  # ... and the products
    return inputs


def _ops(graph: Graph) -> list[str]:
    return [n.op for n in live_nodes(graph)]


SHARED = pytest.mark.parametrize("shared", ["before", "after", None],
                                 ids=["lstm", "sums-after", "gru"])


@SHARED
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_stack_read_only_over_its_axis_is_never_written(shared: bool, device: str) -> None:
    g = Graph("stack")
    _stacked_gradient(g, shared)
    program = lower(g, device=device)
    assert "concat" not in _ops(program.graph)
    sums = [n for n in live_nodes(program.graph) if n.op == "sum"]
    # the steps' own sums make the input bias's (an LSTM's): no sum of its own; else
    # the pieces are added up and summed once. The two products' sums over the batch
    assert len(sums) == (STEPS + 2 if shared else 3)


@SHARED
def test_the_pieces_give_the_stacks_numbers(shared: bool) -> None:
    g = Graph("stack")
    _stacked_gradient(g, shared)
    inputs = _inputs(g, 3)
    got, want = kernels.compile(g).run(inputs), run_reference(g, inputs)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
    # x's NaN reaches every input weight; a's inf makes one bias column NaN (inf * 0)
    assert np.isnan(got["input_weight"]).all()
    assert np.isnan(got["input_bias"][0]) and np.isfinite(got["input_bias"][1:]).all()


def test_other_readers_keep_the_concat() -> None:
    # a sum over another axis, an elementwise reader, a stack that is an output, a
    # product over a piece deeper than one, pieces of two depths summed (a sum each
    # would be more loops than the concat's): each concat stays, and so do the numbers
    g = Graph("kept")
    a, b = g.input("a", (BATCH, GATES)), g.input("b", (BATCH, 2 * GATES))
    pieces = [g.apply("reshape", g.apply("tanh", a), shape=(BATCH, 1, GATES)),
              g.apply("reshape", g.apply("exp", a), shape=(BATCH, 1, GATES))]
    stack = g.apply("concat", *pieces, axis=1)
    g.output("per_step", g.apply("sum", stack, axes=(0,), keepdims=False))
    other = g.apply("concat", *pieces, axis=0)
    g.output("scaled", g.apply("mul", other, other))
    g.output("stack", g.apply("concat", *pieces[::-1], axis=1))
    wide = g.apply("concat", a, g.apply("sin", a), axis=1)  # (B, 2G): pieces G deep
    g.output("product", g.apply("matmul", g.apply("permute", b, perm=(1, 0)), wide))
    deep = g.apply("concat", g.apply("cos", a), g.apply("sin", b), axis=1)
    g.output("total", g.apply("sum", deep, axes=None, keepdims=False))
    assert unstacked(g) is g
    assert _ops(lower(g).graph).count("concat") == 5
    inputs = {"a": np.linspace(-2, 2, BATCH * GATES, dtype=np.float32).reshape(BATCH, GATES),
              "b": np.linspace(-1, 1, BATCH * 2 * GATES, dtype=np.float32).reshape(BATCH, -1)}
    got, want = kernels.compile(g).run(inputs), run_reference(g, inputs)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5, err_msg=name)


LAYERS = """
(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defloader train :source (mnist1d :split :train) :batch 4)
(defmodel net ()
  (defchild lstm (nn:lstm 2 3 :bidirectional t))
  (defchild gru (nn:gru 2 3))
  (defchild head (nn:linear 180 10))
  (lambda (x)
    (let ((xs (reshape x (list 4 20 2))))
      (head (nn:flatten (concat (list (lstm xs) (gru xs)) :axis -1))))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
(optimizer (optim:adam :lr 1e-2))
(defrun :steps 1)
"""


def test_scan_layers_write_no_stack_of_gate_gradients(tmp_path) -> None:
    # nn:lstm (both directions) and nn:gru through the compiler: their backward writes
    # no (B, T, G) concat of the steps' gate gradients (the forward's stacks of
    # hidden states stay: the head's matmul reads them), and the step's every output
    # (the parameters' updates and moments, the loss) is the reference interpreter's
    from sexpgpu.contract.compile import compile_file
    from sexpgpu.selection import Selection

    path = tmp_path / "layers.sx"
    path.write_text(LAYERS)
    step = compile_file(str(path), Selection()).graphs.step
    stacks = sorted(n.outputs[0].shape for n in live_nodes(lower(step).graph)
                    if n.op == "concat" and len(n.inputs) == 20)
    assert stacks == [(4, 20, 3)] * 3, stacks
    rng = np.random.default_rng(4)
    inputs = {v.name: (rng.standard_normal(v.shape).astype(np.float32) if v.dtype == "f32"
                       else rng.integers(0, 10, v.shape)) for v in step.inputs}
    got = kernels.compile(step).run({k: v.copy() for k, v in inputs.items()})
    want = run_reference(step, {k: v.copy() for k, v in inputs.items()})
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5, err_msg=name)



@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shared", [False, True], ids=["added", "shared"])
def test_sums_over_any_stacked_axis_match_the_reference(axis: int, keepdims: bool,
                                                        shared: bool) -> None:
    # three (4, 5) values stacked on each axis of a 3-d stack, summed over the stacked
    # axis and the values' first one (with the values' own such sums taken when
    # `shared`), and another stack summed over every axis; dims kept or not: the
    # concats go and the numbers (NaN, -inf, -0 among them) are the reference's
    g = Graph("axes")
    a = g.input("a", (4, 5))
    at = axis % 3
    values = [g.apply(op, g.apply("mul", a, g.apply("full", shape=(), dtype="f32",
                                                     value=0.5 * (k + 1))))
              for k, op in enumerate(("tanh", "exp", "sin"))]
    if shared:
        for k, value in enumerate(values):
            g.output(f"own_{k}", g.apply("sum", value, axes=(0,), keepdims=keepdims))
    pieces = [build.unsqueeze(g, value, at) for value in values]
    first = 1 if at == 0 else 0  # the values' first axis in the stack
    g.output("over", g.apply("sum", g.apply("concat", *pieces, axis=axis),
                             axes=tuple(sorted((at, first))), keepdims=keepdims))
    g.output("all", g.apply("sum", g.apply("concat", *pieces[::-1], axis=axis), axes=None,
                            keepdims=keepdims))
    program = lower(g)
    assert "concat" not in _ops(program.graph)
    assert sum(op == "sum" for op in _ops(program.graph)) == (4 if shared else 2)
    rng = np.random.default_rng(11)
    inputs = {"a": rng.standard_normal((4, 5)).astype(np.float32)}
    inputs["a"][0, :3] = (np.nan, -np.inf, -0.0)
    got, want = kernels.compile(g).run(inputs), run_reference(g, inputs)
    for name, value in want.items():
        assert got[name].shape == value.shape, name
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
