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


def _class_loss(name: str, logits: Tensor, labels: Tensor) -> None:
    g = logits.graph
    _expect(g, require_kind, logits.value.type, ["float"], f"{name}: logits")
    _expect(g, require_kind, labels.value.type, ["integer"], f"{name}: labels")
    _expect(g, require_shape, labels.value.type, logits.shape[:-1], f"{name}: labels")


def _pick(logp: Tensor, labels: Tensor, ignore_index: int | None) -> Tensor:
    """-logp at each label (..., C) -> (...); an ignored row picks label 0."""
    safe = labels if ignore_index is None else FUNCTIONS["where"](labels.eq(ignore_index), 0,
                                                                  labels)
    picked = FUNCTIONS["take_along_axis"](logp, safe.unsqueeze(-1), -1)     # [..., 1]
    return -picked.squeeze(-1)


def _mean_kept(losses: Tensor, labels: Tensor, ignore_index: int | None) -> Tensor:
    if ignore_index is None:
        return losses.mean()
    keep = labels.ne(ignore_index)
    return FUNCTIONS["where"](keep, losses, 0.0).sum() / keep.cast("f32").sum()


def cross_entropy(logits: Tensor, labels: Tensor, ignore_index: int | None = None,
                  label_smoothing: float = 0.0) -> Tensor:
    """Mean negative log-likelihood: logits [..., C] float, labels [...] int (exactly
    the logits' shape without the class axis: no broadcasting). PyTorch's options:
    rows labelled `ignore_index` do not count; `label_smoothing` e gives
    (1 - e) nll + e mean(-log p)."""
    _class_loss("cross_entropy", logits, labels)
    logp = logits.log_softmax(-1)
    losses = _pick(logp, labels, ignore_index)
    if label_smoothing > 0:
        losses = (1.0 - label_smoothing) * losses + label_smoothing * -logp.mean(-1)
    return _mean_kept(losses, labels, ignore_index)


def nll(logp: Tensor, labels: Tensor, ignore_index: int | None = None) -> Tensor:
    """Mean negative log-likelihood of labels [...] under log-probabilities [..., C]."""
    _class_loss("nll", logp, labels)
    return _mean_kept(_pick(logp, labels, ignore_index), labels, ignore_index)


def _pair(name: str, a: Tensor, b: Tensor, what: tuple[str, str],
          kinds: tuple[list[str], list[str]] = (["float"], ["float"])) -> None:
    g = a.graph
    _expect(g, require_kind, a.value.type, kinds[0], f"{name}: {what[0]}")
    if isinstance(b, Tensor):  # a Python number is a constant target
        _expect(g, require_kind, b.value.type, kinds[1], f"{name}: {what[1]}")
        _expect(g, require_same_shape, a.value.type, b.value.type,
                f"{name}: {what[0]} and {what[1]}")


def binary_cross_entropy(probs: Tensor, targets: Tensor) -> Tensor:
    """Mean of -(t log p + (1 - t) log(1 - p)), each log at least -100 (PyTorch's)."""
    _pair("binary_cross_entropy", probs, targets, ("probabilities", "targets"))
    lo = FUNCTIONS["maximum"]
    return -(targets * lo(probs.log(), -100.0)
             + (1.0 - targets) * lo((1.0 - probs).log(), -100.0)).mean()


def binary_cross_entropy_with_logits(logits: Tensor, targets: Tensor) -> Tensor:
    """binary_cross_entropy of sigmoid(logits): max(x, 0) - x t + log(1 + e^-|x|)."""
    _pair("binary_cross_entropy_with_logits", logits, targets, ("logits", "targets"))
    return (logits.relu() - logits * targets + (-logits.abs()).exp().log1p()).mean()


def kl_div(input: Tensor, target: Tensor, log_target: bool = False,  # noqa: A002
           reduction: str = "mean") -> Tensor:
    """PyTorch's kl_div: target (log target - input), 0 where the target is 0;
    reduction "mean" (every element), "batchmean" (the KL divergence) or "sum"."""
    _pair("kl_div", input, target, ("input", "target"))
    where = FUNCTIONS["where"]
    if log_target:
        pointwise = target.exp() * (target - input)
    else:
        # log of 1 where the target is 0: the product's gradient is then 0, not 0 * -inf
        pos = target > 0
        pointwise = where(pos, target * (where(pos, target, 1.0).log() - input), 0.0)
    if reduction == "sum":
        return pointwise.sum()
    if reduction == "batchmean":
        return pointwise.sum() / float(input.shape[0])
    return pointwise.mean()


def huber(pred: Tensor, target: Tensor, delta: float = 1.0) -> Tensor:
    """Mean of 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    _pair("huber", pred, target, ("prediction", "target"), (["float"], ["float", "integer"]))
    d = (pred - target).abs()
    return FUNCTIONS["where"](d < delta, 0.5 * d.square(), delta * (d - 0.5 * delta)).mean()


def smooth_l1(pred: Tensor, target: Tensor, beta: float = 1.0) -> Tensor:
    """Mean of 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta."""
    _pair("smooth_l1", pred, target, ("prediction", "target"), (["float"], ["float", "integer"]))
    d = (pred - target).abs()
    if beta <= 0:
        return d.mean()
    return FUNCTIONS["where"](d < beta, 0.5 * d.square() / beta, d - 0.5 * beta).mean()


def mse(pred: Tensor, target: Tensor) -> Tensor:
    """Mean squared error of a float prediction and a target of the same shape."""
    _pair("mse", pred, target, ("prediction", "target"), (["float"], ["float", "integer"]))
    return (pred - target).square().mean()


LOSSES = ("cross_entropy", "nll", "binary_cross_entropy", "binary_cross_entropy_with_logits",
          "kl_div", "huber", "smooth_l1", "mse")
