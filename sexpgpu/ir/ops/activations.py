"""Activation functions: elementwise nonlinearities of neural networks, each one
`unary` entry (rule, numpy reference, scalar kernel body, VJP as more IR, samples,
front-end names). Their forms and defaults follow PyTorch's."""

from __future__ import annotations

import math

from sexpgpu.ir.ops import _special
from sexpgpu.ir.ops._define import NUMERIC, const, unary
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.lazynumpy import np

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []

GELU_C = 0.7978845608028654  # sqrt(2 / pi), the tanh approximation's constant
GELU_K = 0.044715
SQRT_HALF = 0.7071067811865476  # 1 / sqrt(2)


def _relu_vjp(g, node, cts):
    x = node.inputs[0]
    return [g.apply("where", g.apply("gt", x, const(g, 0, x)), cts[0], const(g, 0, cts[0]))]


unary(OPS, "relu", lambda x: np.maximum(x, 0), "max(x0, 0.0)", _relu_vjp, NUMERIC,
      domain="away", doc="max(x, 0); gradient 0 at 0")


def sigmoid(x: np.ndarray) -> np.ndarray:
    # the two-branch form never overflows exp
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _sigmoid_vjp(g, node, cts):
    y = node.outputs[0]
    slope = g.apply("mul", y, g.apply("sub", const(g, 1.0, y), y))
    return [g.apply("mul", cts[0], slope)]


unary(OPS, "sigmoid", sigmoid, "1.0 / (1.0 + math.exp(-x0))", _sigmoid_vjp,
      doc="1 / (1 + e^-x)")


def _silu_vjp(g, node, cts):
    # silu = x s, s = sigmoid(x); d/dx = s (1 + x (1 - s))
    x = node.inputs[0]
    s = g.apply("sigmoid", x)
    one = const(g, 1.0, x)
    slope = g.apply("mul", s, g.apply("add", one, g.apply("mul", x, g.apply("sub", one, s))))
    return [g.apply("mul", cts[0], slope)]


unary(OPS, "silu", lambda x: x * sigmoid(x), "x0 / (1.0 + math.exp(-x0))", _silu_vjp,
      doc="x * sigmoid(x)")


def _gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + GELU_K * x ** 3)))
    return 0.5 * x * (1.0 + _special.erf(x * SQRT_HALF))


def _gelu_body(attrs: dict) -> str:
    if attrs.get("approximate", "none") == "tanh":
        return f"0.5 * x0 * (1.0 + math.tanh({GELU_C!r} * (x0 + {GELU_K!r} * x0 * x0 * x0)))"
    return f"0.5 * x0 * (1.0 + math.erf(x0 * {SQRT_HALF!r}))"


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + _special.erf(x * SQRT_HALF))


def _normal_pdf(g, x):
    """phi(x) = e^(-x^2 / 2) / sqrt(2 pi), as IR."""
    return g.apply("mul", const(g, 1.0 / math.sqrt(2.0 * math.pi), x),
                   g.apply("exp", g.apply("mul", g.apply("square", x), const(g, -0.5, x))))


def _normal_cdf_vjp(g, node, cts):
    return [g.apply("mul", cts[0], _normal_pdf(g, node.inputs[0]))]


# Phi's result is a probability the GELU's backward multiplies by: in a bf16 step it
# stays f32 like a statistic (ir/precision.py), so x Phi(x) is rounded once, as
# PyTorch's bf16 GELU is, and the gradient's Phi is exact
unary(OPS, "normal_cdf", _normal_cdf, f"0.5 * (1.0 + math.erf(x0 * {SQRT_HALF!r}))",
      _normal_cdf_vjp, extra={"f32_outputs": (0,)},
      doc="Phi(x) = (1 + erf(x / sqrt 2)) / 2, the standard normal CDF "
          "(torch.special.ndtr); gradient phi(x) = e^(-x^2/2) / sqrt(2 pi)")


def _gelu_build(g, x, approximate: str = "none"):
    """The front ends' exact GELU is x * Phi(x): Phi is then a forward value the
    backward reads (g Phi + g x phi(x)) instead of a second erf in the backward's
    loop, which cost 1.5x the forward's; every derivative order stays exact. The
    tanh form is the primitive."""
    if approximate == "none":
        return g.apply("mul", x, g.apply("normal_cdf", x))
    return g.apply("gelu", x, approximate=approximate)


def _gelu_vjp(g, node, cts):
    if node.attrs.get("approximate", "none") == "tanh":
        return _gelu_tanh_vjp(g, node, cts)
    # gelu = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2; d/dx = Phi(x) + x phi(x),
    # phi(x) = e^(-x^2 / 2) / sqrt(2 pi)
    x = node.inputs[0]
    cdf = g.apply("normal_cdf", x)
    return [g.apply("mul", cts[0], g.apply("add", cdf, g.apply("mul", x, _normal_pdf(g, x))))]


def _gelu_tanh_vjp(g, node, cts):
    # gelu = x/2 (1 + t), t = tanh(c (x + k x^3))
    # d/dx = (1 + t)/2 + x/2 (1 - t^2) c (1 + 3k x^2)
    x = node.inputs[0]
    x2 = g.apply("square", x)
    inner = g.apply("mul", const(g, GELU_C, x),
                    g.apply("add", x, g.apply("mul", const(g, GELU_K, x), g.apply("mul", x2, x))))
    t = g.apply("tanh", inner)
    half = const(g, 0.5, x)
    left = g.apply("mul", half, g.apply("add", const(g, 1.0, x), t))
    dinner = g.apply("mul", const(g, GELU_C, x),
                     g.apply("add", const(g, 1.0, x), g.apply("mul", const(g, 3 * GELU_K, x), x2)))
    right = g.apply("mul", g.apply("mul", half, x),
                    g.apply("mul", g.apply("sub", const(g, 1.0, x), g.apply("square", t)), dinner))
    return [g.apply("mul", cts[0], g.apply("add", left, right))]


unary(OPS, "gelu", _gelu, _gelu_body, _gelu_vjp, build=_gelu_build,
      args=(Arg("approximate", "choice", "none", choices=("none", "tanh")),),
      cases=({"approximate": "none"}, {"approximate": "tanh"}),
      doc="x Phi(x), Phi the normal CDF (PyTorch's default; the front ends build it "
          "as x * normal_cdf(x), whose backward reuses the forward's Phi); approximate "
          ":tanh is GPT-2's 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))")


def _softplus(x: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _softplus_vjp(g, node, cts):
    # d/dx log(1 + e^(bx))/b = sigmoid(bx); the linear part above the threshold: 1
    x = node.inputs[0]
    bx = g.apply("mul", x, const(g, node.attrs.get("beta", 1.0), x))
    linear = g.apply("gt", bx, const(g, node.attrs.get("threshold", 20.0), x))
    return [g.apply("where", linear, cts[0], g.apply("mul", cts[0], g.apply("sigmoid", bx)))]


unary(OPS, "softplus", _softplus,
      "(x0 if x0 * {beta} > {threshold} else math.log1p(math.exp(x0 * {beta})) / {beta})",
      _softplus_vjp, args=(Arg("beta", "number", 1.0), Arg("threshold", "number", 20.0)),
      cases=({"beta": 1.0, "threshold": 20.0}, {"beta": 2.0, "threshold": 3.0}),
      doc="log(1 + e^(beta x)) / beta, x itself above the threshold (PyTorch's)")


def _leaky_relu_vjp(g, node, cts):
    x = node.inputs[0]
    slope = const(g, node.attrs.get("negative_slope", 0.01), cts[0])
    return [g.apply("where", g.apply("gt", x, const(g, 0, x)), cts[0],
                    g.apply("mul", cts[0], slope))]


unary(OPS, "leaky_relu", lambda x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope),
      "(x0 if x0 > 0 else x0 * {negative_slope})", _leaky_relu_vjp, domain="away",
      args=(Arg("negative_slope", "number", 0.01),),
      cases=({"negative_slope": 0.01}, {"negative_slope": 0.2}),
      doc="x above 0, negative_slope x below")


def _elu_vjp(g, node, cts):
    x, y = node.inputs[0], node.outputs[0]
    below = g.apply("add", y, const(g, node.attrs.get("alpha", 1.0), y))  # alpha e^x
    return [g.apply("where", g.apply("gt", x, const(g, 0, x)), cts[0],
                    g.apply("mul", cts[0], below))]


unary(OPS, "elu", lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x)),
      "(x0 if x0 > 0 else {alpha} * math.expm1(x0))", _elu_vjp, domain="away",
      args=(Arg("alpha", "number", 1.0),), cases=({"alpha": 1.0}, {"alpha": 0.5}),
      doc="x above 0, alpha (e^x - 1) below")


def _mish_vjp(g, node, cts):
    # mish = x t, t = tanh(softplus(x)); d/dx = t + x sigmoid(x) (1 - t^2)
    x = node.inputs[0]
    t = g.apply("tanh", g.apply("softplus", x, beta=1.0, threshold=20.0))
    rest = g.apply("mul", g.apply("mul", x, g.apply("sigmoid", x)),
                   g.apply("sub", const(g, 1.0, x), g.apply("square", t)))
    return [g.apply("mul", cts[0], g.apply("add", t, rest))]


# softplus as max(x, 0) + log1p(e^-|x|), which never overflows
unary(OPS, "mish", lambda x: x * np.tanh(np.logaddexp(0.0, x)),
      "x0 * math.tanh(max(x0, 0.0) + math.log1p(math.exp(-abs(x0))))", _mish_vjp,
      doc="x tanh(softplus(x))")
