"""Reverse mode: fan-out, un-broadcasting, integer values, stop_gradient, tied
parameters, missing rules; the diagnostics graph building raises; the printer
and the reference interpreter's dtype handling."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from sexpgpu import autodiff as ad
from sexpgpu.diagnostics import SexpError
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.ops.registry import OPS
from sexpgpu.ir.reference import round_bf16, run_reference


def _run(fn: ad.Function, **data) -> dict:
    return fn.compile("reference64")(**data)


def _line_of(marker: str) -> int:
    """The line of this file that contains `marker` (for span assertions)."""
    lines = inspect.getsource(inspect.getmodule(_line_of)).splitlines()
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "_line_of" not in text)


def test_fan_out_accumulates() -> None:
    fn = ad.Function()
    x = fn.input("x", (5,))
    loss = (x * x + x).sum()
    fn.output("dx", fn.grad(loss, [x])[x])
    xs = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(_run(fn, x=xs)["dx"], 2 * xs + 1)


def test_split_pieces_gradients_join_by_concat() -> None:
    # q, k, v cut from one projection (and a gap the loss never reads): the pieces'
    # cotangents are one concat with zeros in the gap, not zero-filled tensors added
    fn = ad.Function()
    x = fn.input("x", (3, 10))
    q, k, v, tail = x[:, 0:3], x[:, 3:5], x[:, 6:8], x[:, 9:10]
    loss = (q.tanh().sum() + (k * k).sum() + (v * 3.0).sum() + (tail * q[:, :1]).sum()
            + x[1:2, :].sum())
    fn.output("dx", fn.grad(loss, [x])[x])
    ops = [n.op for n in fn.graph.nodes]
    assert ops.count("concat") == 1
    xs = np.random.default_rng(3).standard_normal((3, 10))
    got = _run(fn, x=xs)["dx"]
    want = np.zeros_like(xs)
    want[:, 0:3] = 1 - np.tanh(xs[:, 0:3]) ** 2
    want[:, 0] += xs[:, 9]
    want[:, 3:5] = 2 * xs[:, 3:5]
    want[:, 6:8] = 3.0
    want[:, 9] = xs[:, 0]
    want[1, :] += 1.0
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_transposed_weight_gradient_is_made_transposed(batch: tuple) -> None:
    # y = x @ W^T with W stored (out, in): dW comes from dy^T @ x directly, not as
    # the transpose (a copy) of x^T @ dy
    fn = ad.Function()
    x, w = fn.input("x", batch + (4, 3)), fn.input("w", (5, 3))
    c = fn.input("c", batch + (4, 5))
    loss = ((x @ w.transpose()) * c).sum()
    fn.output("dw", fn.grad(loss, [w])[w])
    nodes = fn.graph.nodes
    made = {n.outputs[0].id: n for n in nodes}
    assert not any(n.op == "permute" and n.inputs[0].node is not None
                   and made[n.inputs[0].id].op in ("matmul", "sum") for n in nodes)
    r = np.random.default_rng(5)
    xs, ws, cs = r.standard_normal(batch + (4, 3)), r.standard_normal((5, 3)), \
        r.standard_normal(batch + (4, 5))
    # d/dW sum(c * (x W^T)) = sum over batch and rows of c^T x
    want = np.einsum("ij,ik->jk", cs.reshape(-1, 5), xs.reshape(-1, 3))
    np.testing.assert_allclose(_run(fn, x=xs, w=ws, c=cs)["dw"], want, rtol=1e-12)


def test_broadcast_is_summed_back() -> None:
    fn = ad.Function()
    x, b = fn.input("x", (4, 3)), fn.input("b", (3,))
    s = fn.input("s", ())
    loss = ((x + b) * s * x).sum()
    grads = fn.grad(loss, [b, s])
    fn.output("db", grads[b])
    fn.output("ds", grads[s])
    xs = np.arange(12.0).reshape(4, 3)
    out = _run(fn, x=xs, b=np.ones(3), s=np.array(2.0))
    np.testing.assert_allclose(out["db"], (2 * xs).sum(0))
    assert out["ds"].shape == ()
    np.testing.assert_allclose(out["ds"], ((xs + 1) * xs).sum())


def test_no_gradient_through_integers() -> None:
    fn = ad.Function()
    x = fn.input("x", (3, 4))
    picked = x.argmax(axis=1).cast("f32")          # an integer detour: no gradient
    loss = (picked * 2.0).sum() + x.sum()
    fn.output("dx", fn.grad(loss, [x])[x])
    np.testing.assert_allclose(_run(fn, x=np.random.default_rng(0).random((3, 4)))["dx"], 1.0)


def test_stop_gradient_cuts() -> None:
    fn = ad.Function()
    x = fn.input("x", (4,))
    loss = (x * x.stop_gradient()).sum()
    fn.output("dx", fn.grad(loss, [x])[x])
    xs = np.array([1.0, -2.0, 3.0, 0.5])
    np.testing.assert_allclose(_run(fn, x=xs)["dx"], xs)     # not 2x


def test_tied_parameter_gets_the_sum() -> None:
    fn = ad.Function()
    w = fn.param("w", (3,), ad.init.ones)
    a, b = fn.input("a", (3,)), fn.input("b", (2, 3))
    loss = (w * a).sum() + (b * w).sum()
    fn.output("dw", fn.grad(loss)[w])
    av, bv = np.array([1.0, 2.0, 3.0]), np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(_run(fn, a=av, b=bv)["dw"], av + bv.sum(0))


def test_unconnected_parameter_gets_zeros() -> None:
    fn = ad.Function()
    w, unused = fn.param("w", (2,)), fn.param("unused", (3, 2))
    grads = fn.grad((w * 3.0).sum())
    fn.output("d", grads[unused])
    np.testing.assert_array_equal(_run(fn)["d"], np.zeros((3, 2)))


def test_backward_nodes_carry_the_forward_span() -> None:
    fn = ad.Function()
    x = fn.input("x", (3,))
    y = x.tanh()  # the forward line
    fn.grad(y.sum(), [x])
    line = _line_of("y = x.tanh()  # the forward line")
    backward = [n for n in fn.graph.nodes if n.op == "square"]   # tanh's VJP: 1 - y^2
    assert backward and all(n.span is not None and n.span.line == line for n in backward)


def test_missing_rule_is_a_diagnostic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OPS["sin"], "vjp", None)
    fn = ad.Function()
    x = fn.input("x", (3,))
    y = x.sin()  # no rule here
    with pytest.raises(SexpError) as info:
        fn.grad(y.sum(), [x])
    diag = info.value.diagnostic
    assert diag.code == "E-GRAD-RULE"
    assert diag.message == "differentiation rule for sin not implemented"
    assert diag.span.line == _line_of("y = x.sin()  # no rule here")


def test_loss_must_be_a_float_scalar() -> None:
    fn = ad.Function()
    x = fn.input("x", (3,))
    with pytest.raises(SexpError) as info:
        fn.grad(x * 2.0, [x])
    assert info.value.diagnostic.code == "E-GRAD-LOSS"
    assert info.value.diagnostic.actual == "f32 (3)"


def test_matmul_shape_error_names_the_line() -> None:
    fn = ad.Function()
    x, w = fn.input("x", (12, 64, 128)), fn.input("w", (256, 65))
    with pytest.raises(SexpError) as info:
        x @ w  # bad matmul
    diag = info.value.diagnostic
    assert diag.code == "E-SHAPE"
    assert diag.message == "matmul: inner dimensions differ"
    assert diag.expected == "(..., 128) @ (128, ...)"
    assert diag.actual == "(12 64 128) @ (256 65)"
    assert diag.span.line == _line_of("x @ w  # bad matmul") and diag.span.col == 1


@pytest.mark.parametrize("make, code, fragment", [
    (lambda fn: fn.input("a", (3, 4)) + fn.input("b", (5,)), "E-SHAPE", "do not broadcast"),
    (lambda fn: fn.input("a", (3, 4)).reshape(5, 2), "E-SHAPE", "different number"),
    (lambda fn: fn.input("a", (3, 4)).sum(axis=2), "E-SHAPE", "out of range"),
    (lambda fn: fn.input("a", (3, 1)).squeeze(0), "E-SHAPE", "has size 3, not 1"),
    (lambda fn: fn.input("a", (3, 4))[3], "E-SHAPE", "index 3 out of range"),
    (lambda fn: fn.input("a", (3, 4)) @ fn.input("b", (4,), "i64"), "E-DTYPE", "dtypes"),
    (lambda fn: fn.input("a", (3,), "i64").exp(), "E-DTYPE", "exp's argument"),
    (lambda fn: ad.take(fn.input("t", (5, 2)), fn.input("i", (3,))), "E-DTYPE", "indices"),
    (lambda fn: fn.input("a", (3,)) + fn.input("b", (3,), "f16"), "E-DTYPE", "different dtypes"),
    (lambda fn: ad.conv1d(fn.input("x", (1, 3, 8)), fn.input("w", (2, 4, 3))), "E-SHAPE",
     "channels"),
])
def test_rule_failures_are_diagnostics(make, code: str, fragment: str) -> None:
    with pytest.raises(SexpError) as info:
        make(ad.Function())
    assert info.value.diagnostic.code == code
    assert fragment in info.value.diagnostic.message
    assert info.value.diagnostic.span is not None


def test_printer_shows_one_node_a_line() -> None:
    fn = ad.Function("demo")
    x, w = fn.input("x", (100, 40)), fn.param("w", (40, 256))
    fn.output("h", (x @ w).relu())
    text = str(fn.graph)
    assert "input %w : f32[40 256]  (param)" in text
    lines = [ln for ln in text.splitlines() if " = matmul " in ln]
    assert len(lines) == 1 and lines[0].strip().startswith("%")
    assert "matmul %x %w : f32[100 256]  ; " in lines[0] and "test_autodiff_grad.py:" in lines[0]


def test_bf16_rounds_to_nearest_even() -> None:
    one_plus = np.float32(1 + 2 ** -8)           # halfway between 1 and the next bf16
    three_halves = np.float32(1 + 3 * 2 ** -8)   # halfway, rounds up to even
    got = round_bf16(np.array([one_plus, three_halves, 1 + 2 ** -7, np.nan], np.float32))
    np.testing.assert_array_equal(got[:3], np.float32([1.0, 1 + 2 ** -6, 1 + 2 ** -7]))
    assert np.isnan(got[3])


def test_reference_casts_and_updates_in_place() -> None:
    g = Graph()
    x = g.input("x", (3,), role="state")
    g.output("h", g.apply("cast", x, dtype="bf16"))
    g.update(x, g.apply("add", x, g.apply("full", shape=(), dtype="f32", value=1.0)))
    state = np.array([1.0, 2.0, 1 + 2 ** -10], np.float32)
    out = run_reference(g, {"x": state})
    np.testing.assert_array_equal(out["h"], np.float32([1.0, 2.0, 1.0]))
    np.testing.assert_array_equal(state, np.float32([2.0, 3.0, 2 + 2 ** -10]))


def test_dropout_mask_is_shared_with_its_vjp() -> None:
    fn = ad.Function()
    x, seed = fn.input("x", (200, 50)), fn.input("seed", (), "i64", role="rng")
    y = ad.dropout(x, seed, p=0.25, stream=3)
    fn.output("y", y)
    fn.output("dx", fn.grad(y.sum(), [x])[x])
    prog = fn.compile()
    out = prog(x=np.ones((200, 50)), seed=np.array(11))
    kept = out["y"] != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(out["y"][kept], 1 / 0.75, rtol=1e-6)
    np.testing.assert_array_equal(out["dx"], out["y"])      # same mask, same scale
    other = prog(x=np.ones((200, 50)), seed=np.array(12))["y"]
    assert (other != out["y"]).any()


# loss builders over (w (3 4), v (4)): which parameters a gradient reaches, and the op
# named as the cut for those it does not
PATHS = {
    "both": (lambda w, v: ((w @ v).square()).sum(), {"w", "v"}, set()),
    "argmax": (lambda w, v: (w @ v).argmax().cast("f32").sum() + 0.0, set(), {"argmax"}),
    "compare": (lambda w, v: ((w @ v) > 0.0).cast("f32").sum(), set(), {"gt"}),
    "int-cast": (lambda w, v: (w @ v).cast("i64").cast("f32").sum(), set(), {"cast"}),
    "stop": (lambda w, v: (w.stop_gradient() @ v).sum(), {"v"}, {"stop_gradient"}),
    "sign": (lambda w, v: (w @ v).sign().sum() + v.sum(), {"v"}, {"sign"}),
    "unused": (lambda w, v: v.square().sum(), {"v"}, set()),
}


@pytest.mark.parametrize("name", list(PATHS))
def test_backward_says_which_parameters_no_gradient_reaches(name: str) -> None:
    from sexpgpu.autodiff.grad import backward

    build, reached, cut_ops = PATHS[name]
    fn = ad.Function()
    w, v = fn.param("w", (3, 4)), fn.param("v", (4,))
    result = backward(fn.graph, build(w, v).value, [w.value, v.value])
    assert {p.name for p in (w.value, v.value)} - {u.name for u in result.unreached} == reached
    assert {node.op for node in result.cuts} == cut_ops
    for u in result.unreached:  # still a zero gradient, as grad() always gave
        assert result.grads[u].node.op == "full"
