"""Functions mirroring the ops for `Tensor`s (where, concat, conv2d, dropout,
cross_entropy, ...). Methods on Tensor cover the one-argument ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sexpgpu.autodiff.tensor import Tensor, apply, caller_span, compose, lift

from sexpgpu.diagnostics import error
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.shapes import ShapeRuleError, require_kind, require_same_shape, require_shape


def _values_op(graph: Graph, fn: Any, *args: Any) -> Tensor:
    with graph.at(graph._span or caller_span()):
        return Tensor(graph, build.checked(fn, graph, *args))


def where(cond: Tensor, a: Any, b: Any) -> Tensor:
    dtype = next((t.dtype for t in (a, b) if isinstance(t, Tensor)), "f32")
    return apply(cond.graph, "where", cond, lift(cond.graph, a, dtype), lift(cond.graph, b, dtype))


def maximum(a: Tensor, b: Any) -> Tensor:
    return a.apply("maximum", b)


def minimum(a: Tensor, b: Any) -> Tensor:
    return a.apply("minimum", b)


def logical_and(a: Tensor, b: Tensor) -> Tensor:
    return a.apply("logical_and", b)


def logical_or(a: Tensor, b: Tensor) -> Tensor:
    return a.apply("logical_or", b)


def concat(xs: Sequence[Tensor], axis: int = 0) -> Tensor:
    return apply(xs[0].graph, "concat", *xs, axis=axis)


def stack(xs: Sequence[Tensor], axis: int = 0) -> Tensor:
    return _values_op(xs[0].graph, build.stack, [x.value for x in xs], axis)


def full(graph: Graph, shape: tuple[int, ...], value: float, dtype: str = "f32") -> Tensor:
    return apply(graph, "full", shape=tuple(shape), dtype=dtype, value=value)


def zeros(graph: Graph, shape: tuple[int, ...], dtype: str = "f32") -> Tensor:
    return full(graph, shape, 0, dtype)


def ones(graph: Graph, shape: tuple[int, ...], dtype: str = "f32") -> Tensor:
    return full(graph, shape, 1, dtype)


def iota(graph: Graph, shape: tuple[int, ...], axis: int = 0, dtype: str = "i64") -> Tensor:
    return apply(graph, "iota", shape=tuple(shape), dtype=dtype, axis=axis)


def take(table: Tensor, idx: Tensor, axis: int = 0) -> Tensor:
    """Gather rows (embedding lookup): table [V, D], idx int [...] -> [..., D]."""
    return table.apply("take", idx, axis=axis)


def take_along_axis(x: Tensor, idx: Tensor, axis: int = -1) -> Tensor:
    return _values_op(x.graph, build.take_along_axis, x.value, idx.value, axis)


def one_hot(idx: Tensor, n: int, dtype: str = "f32") -> Tensor:
    return _values_op(idx.graph, build.one_hot, idx.value, n, dtype)


def masked_fill(x: Tensor, mask: Tensor, value: float) -> Tensor:
    return _values_op(x.graph, build.masked_fill, x.value, mask.value, value)


def causal_mask(graph: Graph, t: int) -> Tensor:
    return _values_op(graph, build.causal_mask, t)


def dropout(x: Tensor, seed: Tensor, p: float, stream: int = 0) -> Tensor:
    """Zero each element with probability p (scaling the rest); seed is an int scalar input."""
    return x.apply("dropout", seed, p=p, stream=stream)


def conv1d(x: Tensor, w: Tensor, stride: int = 1, padding: int = 0) -> Tensor:
    """x [N, C, L], w [O, C, K] -> [N, O, L']; add a bias separately."""
    return _values_op(x.graph, build.conv, x.value, w.value, stride, padding)


def conv2d(x: Tensor, w: Tensor, stride: Any = 1, padding: Any = 0) -> Tensor:
    """x [N, C, H, W], w [O, C, KH, KW] -> [N, O, H', W']."""
    return _values_op(x.graph, build.conv, x.value, w.value, stride, padding)


def max_pool1d(x: Tensor, kernel: int, stride: int | None = None) -> Tensor:
    return _values_op(x.graph, build.pool, x.value, kernel, stride, "max", 1)


def avg_pool1d(x: Tensor, kernel: int, stride: int | None = None) -> Tensor:
    return _values_op(x.graph, build.pool, x.value, kernel, stride, "avg", 1)


def max_pool2d(x: Tensor, kernel: Any, stride: Any = None) -> Tensor:
    return _values_op(x.graph, build.pool, x.value, kernel, stride, "max", 2)


def avg_pool2d(x: Tensor, kernel: Any, stride: Any = None) -> Tensor:
    return _values_op(x.graph, build.pool, x.value, kernel, stride, "avg", 2)


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    return compose(build.softmax, x, axis)


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    return compose(build.log_softmax, x, axis)


def _expect(graph: Graph, check: Any, *args: Any) -> None:
    """A loss's statement about its arguments, reported at the caller's line."""
    span = graph._span or caller_span()
    try:
        check(*args)
    except ShapeRuleError as exc:
        raise error(exc.code, exc.message, span, expected=exc.expected, actual=exc.actual,
                    fix=exc.fix, notes=list(graph._notes)) from None


def cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean negative log-likelihood: logits [..., C] float, labels [...] int (exactly
    the logits' shape without the class axis: no broadcasting)."""
    g = logits.graph
    _expect(g, require_kind, logits.value.type, ["float"], "cross_entropy: logits")
    _expect(g, require_kind, labels.value.type, ["integer"], "cross_entropy: labels")
    _expect(g, require_shape, labels.value.type, logits.shape[:-1], "cross_entropy: labels")
    logp = log_softmax(logits, -1)
    picked = take_along_axis(logp, labels.unsqueeze(-1), -1)    # [..., 1]
    return -picked.mean()


def mse(pred: Tensor, target: Tensor) -> Tensor:
    """Mean squared error of a float prediction and a target of the same shape."""
    g = pred.graph
    _expect(g, require_kind, pred.value.type, ["float"], "mse: prediction")
    if isinstance(target, Tensor):  # a Python number is a constant target
        _expect(g, require_same_shape, pred.value.type, target.value.type,
                "mse: prediction and target")
    return (pred - target).square().mean()
