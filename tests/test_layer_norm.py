"""The fused layer norm (sexpgpu/ir/ops/norm.py, kernels/norm.py) beyond its generated
tests: its output and gradients equal the unfused form `nn:layer-norm` used before
(in float64 on the reference interpreter, and in f32 through the kernels), with a
large mean that the correction keeps exact; and it lowers to one kernel each way."""

from __future__ import annotations

import numpy as np
import pytest
from sexpgpu.autodiff.grad import grad
from thread_runs import runs_by_threads

from sexpgpu import kernels
from sexpgpu.diagnostics import SexpError
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.ops.norm import MAX_BLOCKS, MIN_BLOCK_ROWS, _unfused_forward, weight_blocks
from sexpgpu.ir.reference import run_reference

SHAPE = (3, 7, 40)


def _graph(fused: bool) -> Graph:
    """sum(layer_norm(x, w) * c): y's gradient is c, dx and dw through the op."""
    g = Graph("ln-fused" if fused else "ln-unfused")
    x, w, c = g.input("x", SHAPE), g.input("w", SHAPE[-1:]), g.input("c", SHAPE)
    y = (g.apply("fused_layer_norm", x, w, eps=1e-5) if fused
         else _unfused_forward(g, x, w, eps=1e-5)[0])
    loss = g.apply("sum", g.apply("mul", y, c), axes=None, keepdims=False)
    grads = grad(g, loss, [x, w])
    dx, dw = grads[x], grads[w]
    for name, v in (("y", y), ("dx", dx), ("dw", dw), ("loss", loss)):
        g.output(name, v)
    return g


def _inputs(mean: float) -> dict[str, np.ndarray]:
    r = np.random.default_rng(7)
    return {"x": (mean + 0.1 * r.standard_normal(SHAPE)).astype(np.float32),
            "w": r.standard_normal(SHAPE[-1:]).astype(np.float32),
            "c": r.standard_normal(SHAPE).astype(np.float32)}


@pytest.mark.parametrize("mean", [0.0, 1e4])
def test_fused_equals_the_unfused_form(mean: float) -> None:
    inputs = _inputs(mean)
    exact = run_reference(_graph(False), inputs, "f64")
    fused64 = run_reference(_graph(True), inputs, "f64")
    got = kernels.compile(_graph(True)).run(inputs)
    for name in ("y", "dx", "dw"):
        np.testing.assert_allclose(fused64[name], exact[name], rtol=1e-9, atol=1e-9,
                                   err_msg=name)
        scale = np.abs(exact[name]).max()
        # f32 at mean 1e4 and std 0.1: x itself holds ~6 digits of its deviation
        tol = 2e-3 if mean else 2e-5
        np.testing.assert_allclose(got[name], exact[name], rtol=0, atol=tol * scale,
                                   err_msg=name)


def test_one_kernel_each_way() -> None:
    compiled = kernels.compile(_graph(True))
    ops = [k.nodes[0].op for k in compiled.program.kernels if k.kind == "op"]
    assert ops.count("layer_norm") == 1 and ops.count("layer_norm_backward") == 1
    # no reduction loop is left of the normalisation but the sum of dweight's block
    # sums (ir/ops/norm.weight_blocks), beside the loss's
    reductions = [k for k in compiled.program.kernels if k.reduce is not None]
    assert len(reductions) == 2, [n.op for k in reductions for n in k.nodes]
    backward = next(k for k in compiled.program.kernels if k.nodes[0].op == "layer_norm_backward")
    sums = backward.nodes[0].outputs[1]
    assert sums.shape == (2, SHAPE[-1])  # 21 rows: blocks of 16
    assert sum(sums in k.reduce.inputs for k in reductions) == 1


def test_a_width_mismatch_names_both_widths() -> None:
    g = Graph("ln-bad")
    x, w = g.input("x", (4, 32)), g.input("w", (40,))
    with pytest.raises(SexpError) as info:
        g.apply("fused_layer_norm", x, w)
    diag = info.value.diagnostic
    assert diag.code == "E-SHAPE" and "width 40 applied to width 32" in diag.message


@pytest.mark.parametrize("rows", [1, 16, 17, 768, 5000])
def test_dweight_blocks_cover_every_row_once(rows: int) -> None:
    blocks, per = weight_blocks(rows)
    assert (blocks - 1) * per < rows <= blocks * per
    assert blocks <= MAX_BLOCKS and (per >= MIN_BLOCK_ROWS or blocks == 1)


@pytest.mark.parametrize("count", [1, 2])
def test_the_backward_blocks_are_shared_by_threads_with_the_same_bits(
        count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows enough for PARALLEL_WORK: the backward is a chunk function over dweight's
    blocks, and any thread count gives one thread's bits (no sum runs across a
    block), close to the float64 reference."""
    shape = (3000, 160)  # 3000 rows: 64 blocks of 47
    g = Graph("ln-wide")
    x, w, c = g.input("x", shape), g.input("w", shape[-1:]), g.input("c", shape)
    y = g.apply("fused_layer_norm", x, w, eps=1e-5)
    loss = g.apply("sum", g.apply("mul", y, c), axes=None, keepdims=False)
    grads = grad(g, loss, [x, w])
    g.output("dx", grads[x])
    g.output("dw", grads[w])
    compiled = kernels.compile(g)
    assert any("def chunk(" in t and "(layer_norm_backward)" in t
               for t in compiled.generated.kernel_sources)
    r = np.random.default_rng(2)
    feed = {"x": r.standard_normal(shape).astype(np.float32),
            "w": r.standard_normal(shape[-1:]).astype(np.float32),
            "c": r.standard_normal(shape).astype(np.float32)}
    one, many = runs_by_threads(compiled, feed, [1, count], monkeypatch)
    for name in ("dx", "dw"):
        assert many[name].tobytes() == one[name].tobytes(), name
    exact = run_reference(g, feed, "f64")
    for name in ("dx", "dw"):
        scale = np.abs(exact[name]).max()
        np.testing.assert_allclose(one[name], exact[name], rtol=0, atol=2e-5 * scale)
