"""Unary elementwise ops: the activations and math functions. Each is one entry:
dtype rule, numpy reference, scalar kernel body (valid in numba.njit and
numba.cuda device code, over `x0`), VJP as more IR, and its test samples."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sexpgpu.ir.build import scalar
from sexpgpu.ir.ops._sampling import UNARY_SHAPES, values
from sexpgpu.ir.ops.opdef import OpDef
from sexpgpu.ir.shapes import require_dtype
from sexpgpu.ir.types import FLOAT_DTYPES, INT_DTYPES, TensorType

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []

NUMERIC = FLOAT_DTYPES | INT_DTYPES
GELU_C = 0.7978845608028654  # sqrt(2 / pi), the tanh approximation's constant
GELU_K = 0.044715


def _unary(name: str, reference: Callable, scalar_body: str, vjp: Callable | None,
           dtypes: frozenset[str] = FLOAT_DTYPES, domain: str = "real", doc: str = "",
           extra: dict | None = None) -> None:
    """Define a unary elementwise op: same shape and dtype out."""

    def infer(types: list[TensorType], attrs: dict) -> TensorType:
        require_dtype(types[0], dtypes, f"{name}'s argument")
        return TensorType(types[0].shape, types[0].dtype)

    def samples(rng: np.random.Generator) -> list:
        if dtypes == frozenset({"bool"}):
            return [([rng.random(s) < 0.5], {}) for s in UNARY_SHAPES]
        return [([values(rng, s, domain)], {}) for s in UNARY_SHAPES]

    OPS.append(OpDef(name, infer, reference, vjp, kind="elementwise", scalar=scalar_body,
                     samples=samples, doc=doc, extra={"domain": domain, **(extra or {})}))


def _c(g, value: float, like) -> object:
    return scalar(g, value, like.dtype)


def _neg_vjp(g, node, cts):
    return [g.apply("neg", cts[0])]


_unary("neg", np.negative, "-x0", _neg_vjp, NUMERIC, doc="-x")


def _abs_vjp(g, node, cts):
    return [g.apply("mul", cts[0], g.apply("sign", node.inputs[0]))]


_unary("abs", np.abs, "abs(x0)", _abs_vjp, NUMERIC, domain="away", doc="|x|")


def _exp_vjp(g, node, cts):
    return [g.apply("mul", cts[0], node.outputs[0])]


_unary("exp", np.exp, "math.exp(x0)", _exp_vjp, doc="e^x")


def _log_vjp(g, node, cts):
    return [g.apply("div", cts[0], node.inputs[0])]


_unary("log", np.log, "math.log(x0)", _log_vjp, domain="positive", doc="natural log")


def _sqrt_vjp(g, node, cts):
    y = node.outputs[0]
    return [g.apply("div", cts[0], g.apply("mul", y, _c(g, 2.0, y)))]


_unary("sqrt", np.sqrt, "math.sqrt(x0)", _sqrt_vjp, domain="positive", doc="square root")


def _rsqrt_vjp(g, node, cts):
    # d/dx x^-1/2 = -1/2 * y / x
    x, y = node.inputs[0], node.outputs[0]
    slope = g.apply("mul", g.apply("div", y, x), _c(g, -0.5, y))
    return [g.apply("mul", cts[0], slope)]


_unary("rsqrt", lambda x: 1.0 / np.sqrt(x), "1.0 / math.sqrt(x0)", _rsqrt_vjp,
       domain="positive", doc="1 / sqrt(x)")


def _tanh_vjp(g, node, cts):
    y = node.outputs[0]
    slope = g.apply("sub", _c(g, 1.0, y), g.apply("square", y))
    return [g.apply("mul", cts[0], slope)]


_unary("tanh", np.tanh, "math.tanh(x0)", _tanh_vjp, doc="hyperbolic tangent")


def _sigmoid_vjp(g, node, cts):
    y = node.outputs[0]
    slope = g.apply("mul", y, g.apply("sub", _c(g, 1.0, y), y))
    return [g.apply("mul", cts[0], slope)]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # the two-branch form never overflows exp
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


_unary("sigmoid", _sigmoid, "1.0 / (1.0 + math.exp(-x0))", _sigmoid_vjp,
       doc="1 / (1 + e^-x)")


def _relu_vjp(g, node, cts):
    x = node.inputs[0]
    return [g.apply("where", g.apply("gt", x, _c(g, 0, x)), cts[0], _c(g, 0, cts[0]))]


_unary("relu", lambda x: np.maximum(x, 0), "max(x0, 0.0)", _relu_vjp, NUMERIC, domain="away",
       doc="max(x, 0); gradient 0 at 0")


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + GELU_K * x ** 3)))


def _gelu_vjp(g, node, cts):
    # gelu = x/2 (1 + t), t = tanh(c (x + k x^3))
    # d/dx = (1 + t)/2 + x/2 (1 - t^2) c (1 + 3k x^2)
    x = node.inputs[0]
    x2 = g.apply("square", x)
    inner = g.apply("mul", _c(g, GELU_C, x),
                    g.apply("add", x, g.apply("mul", _c(g, GELU_K, x), g.apply("mul", x2, x))))
    t = g.apply("tanh", inner)
    half = _c(g, 0.5, x)
    left = g.apply("mul", half, g.apply("add", _c(g, 1.0, x), t))
    dinner = g.apply("mul", _c(g, GELU_C, x),
                     g.apply("add", _c(g, 1.0, x), g.apply("mul", _c(g, 3 * GELU_K, x), x2)))
    right = g.apply("mul", g.apply("mul", half, x),
                    g.apply("mul", g.apply("sub", _c(g, 1.0, x), g.apply("square", t)), dinner))
    return [g.apply("mul", cts[0], g.apply("add", left, right))]


_unary("gelu", _gelu,
       f"0.5 * x0 * (1.0 + math.tanh({GELU_C!r} * (x0 + {GELU_K!r} * x0 * x0 * x0)))",
       _gelu_vjp, doc="GELU, tanh approximation (as GPT-2)")


def _silu_vjp(g, node, cts):
    # silu = x s, s = sigmoid(x); d/dx = s (1 + x (1 - s))
    x = node.inputs[0]
    s = g.apply("sigmoid", x)
    one = _c(g, 1.0, x)
    slope = g.apply("mul", s, g.apply("add", one, g.apply("mul", x, g.apply("sub", one, s))))
    return [g.apply("mul", cts[0], slope)]


_unary("silu", lambda x: x * _sigmoid(x), "x0 / (1.0 + math.exp(-x0))", _silu_vjp,
       doc="x * sigmoid(x)")


def _sin_vjp(g, node, cts):
    return [g.apply("mul", cts[0], g.apply("cos", node.inputs[0]))]


_unary("sin", np.sin, "math.sin(x0)", _sin_vjp, doc="sine")


def _cos_vjp(g, node, cts):
    return [g.apply("neg", g.apply("mul", cts[0], g.apply("sin", node.inputs[0])))]


_unary("cos", np.cos, "math.cos(x0)", _cos_vjp, doc="cosine")


def _square_vjp(g, node, cts):
    x = node.inputs[0]
    return [g.apply("mul", cts[0], g.apply("mul", x, _c(g, 2, x)))]


_unary("square", np.square, "x0 * x0", _square_vjp, NUMERIC, doc="x * x")


def _recip_vjp(g, node, cts):
    y = node.outputs[0]
    return [g.apply("neg", g.apply("mul", cts[0], g.apply("square", y)))]


_unary("recip", lambda x: 1.0 / x, "1.0 / x0", _recip_vjp, domain="away", doc="1 / x")


def _zero_vjp(g, node, cts):
    # piecewise constant: the derivative is zero wherever it exists
    return [None]


# NaN gives NaN (x0 itself), as numpy's
_unary("sign", np.sign, "(1.0 if x0 > 0 else (-1.0 if x0 < 0 else (0.0 if x0 == 0 else x0)))",
       _zero_vjp, NUMERIC, domain="away", doc="-1, 0 or 1; NaN for NaN (gradient 0)")
_unary("logical_not", np.logical_not, "not x0", None, frozenset({"bool"}), doc="not x")


def _stop_gradient_vjp(g, node, cts):
    return [None]


# its VJP deliberately is not the derivative, so the finite-difference check skips it
_unary("stop_gradient", lambda x: x, "x0", _stop_gradient_vjp, NUMERIC | {"bool"},
       doc="identity whose gradient is zero", extra={"fd_check": False})
