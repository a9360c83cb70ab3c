"""Activation functions: elementwise nonlinearities of neural networks, each one
`unary` entry (rule, numpy reference, scalar kernel body, VJP as more IR, samples,
front-end names). Their forms and defaults follow PyTorch's."""

from __future__ import annotations

import math

import numpy as np
import scipy.special

from sexpgpu.ir.ops._define import NUMERIC, const, unary
from sexpgpu.ir.ops.opdef import Arg, OpDef

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
    return 0.5 * x * (1.0 + scipy.special.erf(x * SQRT_HALF))


def _gelu_body(attrs: dict) -> str:
    if attrs.get("approximate", "none") == "tanh":
        return f"0.5 * x0 * (1.0 + math.tanh({GELU_C!r} * (x0 + {GELU_K!r} * x0 * x0 * x0)))"
    return f"0.5 * x0 * (1.0 + math.erf(x0 * {SQRT_HALF!r}))"


def _gelu_vjp(g, node, cts):
    if node.attrs.get("approximate", "none") == "tanh":
        return _gelu_tanh_vjp(g, node, cts)
    # gelu = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2; d/dx = Phi(x) + x phi(x),
    # phi(x) = e^(-x^2 / 2) / sqrt(2 pi)
    x = node.inputs[0]
    cdf = g.apply("mul", const(g, 0.5, x),
                  g.apply("add", const(g, 1.0, x),
                          g.apply("erf", g.apply("mul", x, const(g, SQRT_HALF, x)))))
    pdf = g.apply("mul", const(g, 1.0 / math.sqrt(2.0 * math.pi), x),
                  g.apply("exp", g.apply("mul", g.apply("square", x), const(g, -0.5, x))))
    return [g.apply("mul", cts[0], g.apply("add", cdf, g.apply("mul", x, pdf)))]


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


unary(OPS, "gelu", _gelu, _gelu_body, _gelu_vjp,
      args=(Arg("approximate", "choice", "none", choices=("none", "tanh")),),
      cases=({"approximate": "none"}, {"approximate": "tanh"}),
      doc="x Phi(x), Phi the normal CDF (PyTorch's default); approximate :tanh is "
          "GPT-2's 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))")
