"""Functions over `Tensor`s: one per registry entry that names a `function` (where,
concat, conv2d, dropout, zeros, ...), generated as the Tensor methods are; and the
losses, written here as `sexpgpu/stdlib/nn.sx` writes them for run files."""

from __future__ import annotations

from typing import Any

from sexpgpu.autodiff.tensor import Tensor, caller_span, functions

from sexpgpu.diagnostics import error
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.shapes import ShapeRuleError, require_kind, require_same_shape, require_shape

# where, concat, stack, maximum, minimum, logical_and, logical_or, full, zeros, ones,
# iota, const, take, take_along_axis, one_hot, masked_fill, causal_mask, dropout,
# conv1d, conv2d, max_pool, avg_pool, softmax, log_softmax, matmul, ... (docs/autodiff.md)
FUNCTIONS = functions()
globals().update(FUNCTIONS)


def max_pool1d(x: Tensor, kernel: int, stride: int | None = None) -> Tensor:
    return FUNCTIONS["max_pool"](x, kernel, stride)


def avg_pool1d(x: Tensor, kernel: int, stride: int | None = None) -> Tensor:
    return FUNCTIONS["avg_pool"](x, kernel, stride)


def max_pool2d(x: Tensor, kernel: Any, stride: Any = None) -> Tensor:
    return FUNCTIONS["max_pool"](x, kernel, stride)


def avg_pool2d(x: Tensor, kernel: Any, stride: Any = None) -> Tensor:
    return FUNCTIONS["avg_pool"](x, kernel, stride)


# -- losses ---------------------------------------------------------------------------


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
    logp = logits.log_softmax(-1)
    picked = FUNCTIONS["take_along_axis"](logp, labels.unsqueeze(-1), -1)    # [..., 1]
    return -picked.mean()


def mse(pred: Tensor, target: Tensor) -> Tensor:
    """Mean squared error of a float prediction and a target of the same shape."""
    g = pred.graph
    _expect(g, require_kind, pred.value.type, ["float"], "mse: prediction")
    if isinstance(target, Tensor):  # a Python number is a constant target
        _expect(g, require_same_shape, pred.value.type, target.value.type,
                "mse: prediction and target")
    return (pred - target).square().mean()
