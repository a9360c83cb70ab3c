"""Fused scaled dot-product attention (PyTorch's F.scaled_dot_product_attention):
`attention` gives softmax(q k^T * scale) v and each query row's logsumexp, and
`attention_backward` gives dq, dk, dv from them, recomputing the probabilities
(flash-attention style: no (T, S) matrix is ever stored). With `causal`, key j is
visible to query i when j <= i (top left, as PyTorch); a key a query cannot see gets
weight exactly 0 without its score entering the softmax (never exponentiated), and
the products with the values then take 0 * v, as the unfused form's masked softmax
does (an inf or NaN value of a later key is NaN in earlier rows there too).
Kernels: kernels/attention.py."""

from __future__ import annotations

import math

from sexpgpu.ir import build
from sexpgpu.ir.build import transpose, unsqueeze
from sexpgpu.ir.ops._define import composite, vjp_of_form
from sexpgpu.ir.ops._sampling import one_float_dtype, sprinkled, values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError, fmt, require_float, same_dtype
from sexpgpu.ir.types import TensorType
from sexpgpu.lazynumpy import np

OPS: list[OpDef] = []

_ARGS = (Arg("causal", "flag", False), Arg("scale", "number?", None))
_NAMES = ("the queries", "the keys", "the values")


def scale_of(attrs: dict, d: int) -> float:
    """The scores' factor: `scale`, by default 1/sqrt(d) (d the query size)."""
    scale = attrs.get("scale")
    return 1.0 / math.sqrt(d) if scale is None else float(scale)


def visible(t: int, s: int, causal: bool) -> np.ndarray:
    """bool (t, s): which keys each query row takes."""
    if not causal:
        return np.ones((t, s), dtype=bool)
    return np.arange(s)[None, :] <= np.arange(t)[:, None]


# -- shape rules ------------------------------------------------------------------------

def _check_qkv(q: TensorType, k: TensorType, v: TensorType) -> None:
    same_dtype([q, k, v], _NAMES)
    require_float(q, "attention's arguments")
    for t, name in zip((q, k, v), _NAMES):
        if t.ndim < 2:
            raise ShapeRuleError(f"{name} need rank >= 2", actual=fmt(t.shape),
                                 expected="(..., T, D) (..., S, D) (..., S, E)",
                                 fix="give (batch, heads, T, D) tensors")
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise ShapeRuleError("queries, keys and values need the same leading axes",
                             expected="(..., T, D) (..., S, D) (..., S, E)",
                             actual=f"{fmt(q.shape)} {fmt(k.shape)} {fmt(v.shape)}",
                             fix="split all three into the same batch and heads")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeRuleError("queries and keys need one size D, keys and values one length S",
                             expected="(..., T, D) (..., S, D) (..., S, E)",
                             actual=f"{fmt(q.shape)} {fmt(k.shape)} {fmt(v.shape)}",
                             fix="project q, k and v to the same head size")
    if k.shape[-2] == 0:
        raise ShapeRuleError("attention needs at least one key", actual=fmt(k.shape),
                             expected="S >= 1", fix="give a non-empty key sequence")


def _rows(q: TensorType) -> TensorType:
    """A value per query row (the logsumexp and its cotangent), always f32."""
    return TensorType(q.shape[:-1], "f32")


def _attention_infer(types: list[TensorType], attrs: dict) -> tuple[TensorType, TensorType]:
    q, k, v = types
    _check_qkv(q, k, v)
    return TensorType(q.shape[:-1] + v.shape[-1:], q.dtype), _rows(q)


def _backward_infer(types: list[TensorType], attrs: dict) -> tuple[TensorType, ...]:
    q, k, v, out, d_out, lse, d_lse = types
    _check_qkv(q, k, v)
    want = TensorType(q.shape[:-1] + v.shape[-1:], q.dtype)
    for t, row, name in ((out, want, "the output"), (d_out, want, "the output's cotangent"),
                         (lse, _rows(q), "the logsumexp"),
                         (d_lse, _rows(q), "the logsumexp's cotangent")):
        if t.shape != row.shape or t.dtype != row.dtype:
            raise ShapeRuleError(f"{name} does not fit the queries", expected=str(row),
                                 actual=str(t))
    return q, k, v


# -- references: the unfused math, in the inputs' precision ---------------------------

def _scores(q: np.ndarray, k: np.ndarray, causal: bool, scale: float | None):
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * q.dtype.type(scale_of({"scale": scale},
                                                                      q.shape[-1]))
    return s, visible(q.shape[-2], k.shape[-2], causal)


def attention_reference(q, k, v, causal: bool = False, scale: float | None = None):
    """(out, logsumexp) as the unfused ops give them, in the inputs' precision: a row
    whose scores are all -inf (or hold NaN or +inf) is NaN, as softmax's."""
    q, k, v = one_float_dtype(q, k, v)
    s, vis = _scores(q, k, causal, scale)
    m = np.max(np.where(vis, s, -np.inf), axis=-1, keepdims=True)
    e = np.where(vis, np.exp(s - m), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    out = np.matmul(e / total, v)
    return out, (m + np.log(total))[..., 0]


def attention_backward_reference(q, k, v, out, d_out, lse, d_lse, causal: bool = False,
                                 scale: float | None = None):
    """dq, dk, dv with ds = p (dO v^T - delta), p = exp(s - lse) on the visible keys
    and 0 on the others, delta = rowsum(dO * O) - dlse (a cotangent of the
    logsumexp adds p * dlse to ds)."""
    q, k, v, out, d_out, lse, d_lse = one_float_dtype(q, k, v, out, d_out, lse, d_lse)
    delta = (d_out * out).sum(axis=-1) - d_lse
    s, vis = _scores(q, k, causal, scale)
    factor = q.dtype.type(scale_of({"scale": scale}, q.shape[-1]))
    p = np.where(vis, np.exp(s - lse[..., None]), 0.0)
    dp = np.matmul(d_out, np.swapaxes(v, -1, -2))
    ds = np.where(vis, p * (dp - delta[..., None]), 0.0)
    dq = np.matmul(ds, k) * factor
    dk = np.matmul(np.swapaxes(ds, -1, -2), q) * factor
    dv = np.matmul(np.swapaxes(p, -1, -2), d_out)
    return dq, dk, dv


# -- VJPs -------------------------------------------------------------------------------

def _attention_vjp(g, node, cts):
    q, k, v = node.inputs
    out, lse = node.outputs
    d_out, d_lse = cts
    if d_out is None and d_lse is None:
        return [None, None, None]
    d_out = build.zeros_like(g, out) if d_out is None else d_out
    d_lse = build.zeros_like(g, lse) if d_lse is None else d_lse
    dq, dk, dv = g.apply("attention_backward", q, k, v, out, d_out, lse, d_lse,
                         **node.attrs)
    return [dq, dk, dv]


def _unfused_backward(g, q, k, v, out, d_out, lse, d_lse, causal=False, scale=None):
    """attention_backward from primitives (matmuls, exp, where): what its own VJP
    differentiates."""
    products = g.apply("mul", build.cast(g, d_out, "f32"), build.cast(g, out, "f32"))
    delta = g.apply("sub", g.apply("sum", products, axes=(-1,), keepdims=False), d_lse)
    factor = build.scalar(g, scale_of({"scale": scale}, q.shape[-1]), q.dtype)
    s = g.apply("mul", g.apply("matmul", q, transpose(g, k)), factor)
    if causal:
        rows = build.iota_along(g, q.shape[-2], 0, 2)
        cols = build.iota_along(g, k.shape[-2], 1, 2)
        s = build.masked_fill(g, s, g.apply("lt", rows, cols), -math.inf)
    p = g.apply("exp", g.apply("sub", s, unsqueeze(g, build.cast(g, lse, q.dtype), -1)))
    dv = g.apply("matmul", transpose(g, p), d_out)
    dp = g.apply("matmul", d_out, transpose(g, v))
    ds = g.apply("mul", p, g.apply("sub", dp, unsqueeze(g, build.cast(g, delta, q.dtype), -1)))
    dq = g.apply("mul", g.apply("matmul", ds, k), factor)
    dk = g.apply("mul", g.apply("matmul", transpose(g, ds), q), factor)
    return dq, dk, dv


def _backward_vjp(g, node, cts):
    """Second derivatives: the VJP of the unfused form."""
    return vjp_of_form(g, lambda: _unfused_backward(g, *node.inputs, **node.attrs),
                       node.inputs, cts)


# -- samples ----------------------------------------------------------------------------

_SHAPES = (((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4), {"causal": True}),
           ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4), {"causal": False, "scale": 0.3}),
           ((4, 3), (6, 3), (6, 2), {"causal": True}),        # T < S, E != D
           ((3, 7, 2), (3, 4, 2), (3, 4, 5), {"causal": True}),  # T > S
           # T < S by more than the CPU's row block (32): keys no query sees
           ((3, 2), (40, 2), (40, 2), {"causal": True}),
           ((1, 0, 3), (1, 2, 3), (1, 2, 3), {"causal": True}))  # no queries


def _attention_samples(rng: np.random.Generator) -> list:
    return [([values(rng, a), values(rng, b), values(rng, c)], dict(attrs))
            for a, b, c, attrs in _SHAPES]


def _backward_samples(rng: np.random.Generator) -> list:
    """Consistent inputs: the logsumexp of the forward on the same q, k."""
    out = []
    for (q, k, v), attrs in _attention_samples(rng):
        o, lse = attention_reference(q, k, v, **attrs)
        d_out = values(rng, o.shape)
        out.append(([q, k, v, o, d_out, lse, 0.1 * values(rng, lse.shape)], attrs))
    return out


def _sdpa(g, q, k, v, causal=False, scale=None):
    """The front ends' call: the output only (the logsumexp is for the backward)."""
    return g.apply("attention", q, k, v, causal=causal, scale=scale)[0]


OPS.append(OpDef(
    "attention", _attention_infer, attention_reference, _attention_vjp, kind="opaque",
    samples=_attention_samples, args=_ARGS, inputs=("q", "k", "v"), integers="reject",
    reached=("scaled_dot_product_attention",),
    extra={"reorders_sums": True, "specials": sprinkled(_attention_samples),
           "f32_outputs": (1,)},
    doc="softmax(q k^T * scale) v and each query row's logsumexp (two results), for "
        "(..., T, D) (..., S, D) (..., S, E); one kernel, no (T, S) matrix stored"))

OPS.append(OpDef(
    "attention_backward", _backward_infer, attention_backward_reference, _backward_vjp,
    kind="opaque", samples=_backward_samples, args=_ARGS,
    inputs=("q", "k", "v", "out", "d_out", "lse", "d_lse"), integers="reject",
    reached=("scaled_dot_product_attention",),
    extra={"reorders_sums": True, "specials": sprinkled(_backward_samples),
           "f32_inputs": (5, 6)},
    doc="attention's VJP: dq, dk, dv from the output, the logsumexp and their "
        "cotangents (delta = rowsum(dO * O) - dlse per row), "
        "recomputing the probabilities; its own VJP is the unfused form's"))

composite(OPS, "scaled_dot_product_attention", _sdpa,
          lambda q, k, v, causal=False, scale=None: attention_reference(q, k, v, causal,
                                                                        scale)[0],
          inputs=("q", "k", "v"), args=_ARGS, method=None,
          function="scaled_dot_product_attention", integers="reject",
          samples=_attention_samples,
          extra={"reorders_sums": True, "specials": sprinkled(_attention_samples)},
          doc="PyTorch's F.scaled_dot_product_attention: softmax(q k^T * scale) v over "
              "(..., T, D) (..., S, D) (..., S, E), scale 1/sqrt(D) by default; causal: "
              "query i sees keys j <= i. One fused op forward and one backward (no (T, S) "
              "matrix stored): the GPT's attention (nn:causal-self-attention)")
