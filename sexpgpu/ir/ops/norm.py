"""Fused layer normalisation over the last axis (PyTorch's F.layer_norm with a weight
and no bias: a bias is one more add, fused into the loops after it):
`layer_norm` gives y = ((x - mean) - shift) * rstd * weight and each row's mean and
rstd, and `layer_norm_backward` gives dx and dweight's sums over blocks of rows
(`weight_blocks`), which the VJP adds up. One kernel each way, a row at a time: the
unfused form read and wrote every element three times each way. Why blocks: a
kernel can share the rows between threads only if no sum runs across them, and a
sum in blocks fixed by the shape gives the same bits for any thread count (the
char-GPT's nine backward layer norms ran on one core, 0.6 ms of a 19 ms step).

The mean is corrected as `nn:layer-norm` always did it (docs/numerics.md): shift,
the mean of x - mean, is the f32 mean's rounding error (0 in exact arithmetic, so
no gradient), taken out of the centred values and of the variance,
var = mean((x - mean)^2) - shift^2. The backward recomputes shift from x and the
mean (a row is in cache) rather than storing a third row value.
Kernels: kernels/norm.py."""

from __future__ import annotations

from math import prod

from sexpgpu.ir import build
from sexpgpu.ir.build import unsqueeze
from sexpgpu.ir.ops._define import composite, vjp_of_form
from sexpgpu.ir.ops._sampling import one_float_dtype, sprinkled, values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError, fmt, require_float, same_dtype
from sexpgpu.ir.types import TensorType
from sexpgpu.lazynumpy import np

OPS: list[OpDef] = []

_ARGS = (Arg("eps", "number", 1e-5),)
MIN_BLOCK_ROWS = 16   # rows a block of dweight's sum has at least ...
MAX_BLOCKS = 64       # ... unless that makes more blocks than this


def weight_blocks(rows: int) -> tuple[int, int]:
    """(blocks, rows per block) of layer_norm_backward's dweight sums over `rows`
    rows (the last block has the rest)."""
    per = max(MIN_BLOCK_ROWS, -(-rows // MAX_BLOCKS))
    return max(1, -(-rows // per)), per


# -- shape rules ------------------------------------------------------------------------

def _check(x: TensorType, weight: TensorType) -> None:
    same_dtype([x, weight], ("the input", "the weight"))
    require_float(x, "layer norm's arguments")
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ShapeRuleError("layer norm needs rows of at least one element",
                             actual=fmt(x.shape), expected="(..., C), C >= 1",
                             fix="normalise a tensor with a non-empty last axis")
    if weight.shape != x.shape[-1:]:
        raise ShapeRuleError(f"layer norm of width {weight.shape[0] if weight.ndim else '?'} "
                             f"applied to width {x.shape[-1]}",
                             expected=f"a weight of shape {fmt(x.shape[-1:])}",
                             actual=fmt(weight.shape),
                             fix="give the layer norm the width of the input's last axis")


def _rows(x: TensorType) -> TensorType:
    """A value per row (the mean, rstd), always f32."""
    return TensorType(x.shape[:-1], "f32")


def _forward_infer(types: list[TensorType], attrs: dict) -> tuple[TensorType, ...]:
    x, weight = types
    _check(x, weight)
    return x, _rows(x), _rows(x)


def _backward_infer(types: list[TensorType], attrs: dict) -> tuple[TensorType, ...]:
    x, weight, mean, rstd, dy = types
    _check(x, weight)
    for t, want, name in ((mean, _rows(x), "the mean"), (rstd, _rows(x), "the rstd"),
                          (dy, x, "the output's cotangent")):
        if t.shape != want.shape or t.dtype != want.dtype:
            raise ShapeRuleError(f"{name} does not fit the input", expected=str(want),
                                 actual=str(t))
    blocks, _ = weight_blocks(prod(x.shape[:-1]))
    return x, TensorType((blocks, x.shape[-1]), "f32")


# -- references: the unfused math, in the inputs' precision ---------------------------

def _centred(x: np.ndarray, mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x - mean and shift, the mean of that (the mean's rounding error)."""
    xc = x - mean[..., None]
    return xc, xc.sum(axis=-1, keepdims=True) / x.dtype.type(x.shape[-1])


def layer_norm_reference(x, weight, eps: float = 1e-5):
    """(y, mean, rstd) as nn:layer-norm's unfused ops give them."""
    x, weight = one_float_dtype(x, weight)
    n = x.dtype.type(x.shape[-1])
    mean = x.sum(axis=-1) / n
    xc, shift = _centred(x, mean)
    var = (xc * xc).sum(axis=-1, keepdims=True) / n - shift * shift
    rstd = 1.0 / np.sqrt(var + x.dtype.type(eps))
    return (xc - shift) * rstd * weight, mean, rstd[..., 0]


def layer_norm_backward_reference(x, weight, mean, rstd, dy, eps: float = 1e-5):  # noqa: ARG001
    """dx, dweight's block sums: with a = (x - mean) - shift, xhat = a * rstd, g = dy *
    weight, dxc = rstd g - rstd^3 (x - mean) mean(g a), dx = dxc - mean(dxc) (shift
    taken as a constant, as the forward's stop-gradient does), and the sums of dy xhat
    over each block of rows (f32)."""
    x, weight, mean, rstd, dy = one_float_dtype(x, weight, mean, rstd, dy)
    n = x.dtype.type(x.shape[-1])
    xc, shift = _centred(x, mean)
    r = rstd[..., None]
    a = xc - shift
    g = dy * weight
    dxc = r * g - r * r * r * xc * ((g * a).sum(axis=-1, keepdims=True) / n)
    dx = dxc - dxc.sum(axis=-1, keepdims=True) / n
    terms = (dy * a * r).reshape(-1, x.shape[-1])
    blocks, per = weight_blocks(len(terms))
    sums = [terms[b * per:(b + 1) * per].sum(axis=0) for b in range(blocks)]
    return dx, np.stack(sums)


# -- VJPs -------------------------------------------------------------------------------

def _forward_vjp(g, node, cts):
    """The cotangent of y (the mean and rstd are the backward's: a cotangent of
    theirs goes through the unfused form)."""
    dy, d_mean, d_rstd = cts
    if d_mean is not None or d_rstd is not None:
        return vjp_of_form(g, lambda: _unfused_forward(g, *node.inputs, **node.attrs),
                           node.inputs, cts)
    if dy is None:
        return [None, None]
    x, weight = node.inputs
    _, mean, rstd = node.outputs
    dx, sums = g.apply("layer_norm_backward", x, weight, mean, rstd, dy, **node.attrs)
    return [dx, build.cast(g, g.apply("sum", sums, axes=(0,)), weight.dtype)]


def _unfused_forward(g, x, weight, eps=1e-5):
    """layer_norm from primitives (nn:layer-norm's form before this op), in f32."""
    dtype, x, weight = x.dtype, build.cast(g, x, "f32"), build.cast(g, weight, "f32")
    inv = build.scalar(g, 1.0 / x.shape[-1], "f32")
    mu = g.apply("mul", g.apply("sum", x, axes=(-1,), keepdims=True), inv)
    xc = g.apply("sub", x, mu)
    shift = g.apply("mul", g.apply("stop_gradient", g.apply("sum", xc, axes=(-1,),
                                                             keepdims=True)), inv)
    var = g.apply("sub", g.apply("mul", g.apply("sum", g.apply("mul", xc, xc), axes=(-1,),
                                                keepdims=True), inv),
                  g.apply("mul", shift, shift))
    rstd = g.apply("rsqrt", g.apply("add", var, build.scalar(g, eps, "f32")))
    y = g.apply("mul", g.apply("mul", g.apply("sub", xc, shift), rstd), weight)
    squeeze = lambda v: g.apply("reshape", v, shape=x.shape[:-1])  # noqa: E731
    return build.cast(g, y, dtype), squeeze(mu), squeeze(rstd)


def _unfused_backward(g, x, weight, mean, rstd, dy, eps=1e-5):  # noqa: ARG001
    """layer_norm_backward from primitives, in f32: what its own VJP differentiates."""
    dtype = x.dtype
    x, weight, dy = (build.cast(g, v, "f32") for v in (x, weight, dy))
    inv = build.scalar(g, 1.0 / x.shape[-1], "f32")
    xc = g.apply("sub", x, unsqueeze(g, mean, -1))
    shift = g.apply("mul", g.apply("sum", xc, axes=(-1,), keepdims=True), inv)
    a = g.apply("sub", xc, shift)
    r = unsqueeze(g, rstd, -1)
    gw = g.apply("mul", dy, weight)
    ga = g.apply("mul", g.apply("sum", g.apply("mul", gw, a), axes=(-1,), keepdims=True), inv)
    r3 = g.apply("mul", g.apply("mul", r, r), r)
    dxc = g.apply("sub", g.apply("mul", r, gw), g.apply("mul", g.apply("mul", r3, xc), ga))
    dx = g.apply("sub", dxc, g.apply("mul", g.apply("sum", dxc, axes=(-1,), keepdims=True), inv))
    return build.cast(g, dx, dtype), _block_sums(g, g.apply("mul", g.apply("mul", dy, a), r))


def _block_sums(g, terms):
    """The sums of `terms` (..., C) over each block of rows (`weight_blocks`): the rows
    padded with zeros to whole blocks."""
    c = terms.shape[-1]
    rows = prod(terms.shape[:-1])
    blocks, per = weight_blocks(rows)
    flat = g.apply("reshape", terms, shape=(rows, c))
    if blocks * per > rows:
        zeros = build.scalar(g, 0.0, "f32")
        pad = g.apply("broadcast_to", zeros, shape=(blocks * per - rows, c))
        flat = g.apply("concat", flat, pad, axis=0)
    return g.apply("sum", g.apply("reshape", flat, shape=(blocks, per, c)), axes=(1,))


def _backward_vjp(g, node, cts):
    """Second derivatives: the VJP of the unfused backward."""
    return vjp_of_form(g, lambda: _unfused_backward(g, *node.inputs, **node.attrs),
                       node.inputs, cts)


# -- samples ----------------------------------------------------------------------------

_SHAPES = (((4, 6), {"eps": 1e-5}), ((2, 3, 5), {"eps": 0.1}), ((3, 1), {"eps": 1e-5}),
           ((0, 4), {"eps": 1e-5}), ((5,), {"eps": 1e-5}))  # one row, its stats rank 0


def _forward_samples(rng: np.random.Generator) -> list:
    return [([values(rng, shape) * 3.0 + 1.0, values(rng, shape[-1:])], dict(attrs))
            for shape, attrs in _SHAPES]


def _backward_samples(rng: np.random.Generator) -> list:
    """Consistent inputs: the mean and rstd of the forward on the same x."""
    out = []
    for (x, weight), attrs in _forward_samples(rng):
        _, mean, rstd = layer_norm_reference(x, weight, **attrs)
        out.append(([x, weight, mean, rstd, values(rng, x.shape)], attrs))
    return out


def _fused(g, x, weight, eps=1e-5):
    """The front ends' call: y only (the mean and rstd are for the backward)."""
    return g.apply("layer_norm", x, weight, eps=eps)[0]


OPS.append(OpDef(
    "layer_norm", _forward_infer, layer_norm_reference, _forward_vjp, kind="opaque",
    samples=_forward_samples, args=_ARGS, inputs=("x", "weight"), integers="reject",
    reached=("fused_layer_norm",),
    extra={"reorders_sums": True, "specials": sprinkled(_forward_samples),
           "f32_outputs": (1, 2)},
    doc="((x - mean) - shift) * rstd * weight over the last axis and each row's mean "
        "and rstd (three results), the mean corrected by shift (its rounding error); "
        "one kernel"))

OPS.append(OpDef(
    "layer_norm_backward", _backward_infer, layer_norm_backward_reference, _backward_vjp,
    kind="opaque", samples=_backward_samples, args=_ARGS,
    inputs=("x", "weight", "mean", "rstd", "dy"), integers="reject",
    reached=("fused_layer_norm",),
    extra={"reorders_sums": True, "specials": sprinkled(_backward_samples),
           "f32_inputs": (2, 3), "f32_outputs": (1,)},
    doc="layer_norm's VJP: dx and dweight's f32 sums over blocks of rows (their sum is "
        "dweight) from the input, the rows' mean and rstd and y's cotangent (shift "
        "recomputed); its own VJP is the unfused form's"))

composite(OPS, "fused_layer_norm", _fused,
          lambda x, weight, eps=1e-5: layer_norm_reference(x, weight, eps)[0],
          inputs=("x", "weight"), args=_ARGS, method=None, function="fused_layer_norm",
          integers="reject", samples=_forward_samples,
          extra={"reorders_sums": True, "specials": sprinkled(_forward_samples)},
          doc="layer normalisation over the last axis with a weight, no bias (PyTorch's "
              "F.layer_norm(x, x.shape[-1:], weight, None, eps)): one fused op forward "
              "and one backward, the mean corrected by its rounding error (nn:layer-norm)")
