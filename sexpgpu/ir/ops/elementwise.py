"""Unary elementwise math: arithmetic, exponentials and logarithms, trigonometry,
rounding and tests for special values. Each is one `unary` entry: dtype rule, numpy
reference, scalar kernel body (valid in numba.njit and numba.cuda device code, over
`x0`), VJP as more IR, samples and front-end names. Activations are in activations.py."""

from __future__ import annotations

import math

import numpy as np
import scipy.special

from sexpgpu.ir.ops._define import BOOL, NUMERIC, const, unary, zero_vjp
from sexpgpu.ir.ops.opdef import OpDef

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []


# -- arithmetic ----------------------------------------------------------------------

def _neg_vjp(g, node, cts):
    return [g.apply("neg", cts[0])]


unary(OPS, "neg", np.negative, "-x0", _neg_vjp, NUMERIC, lisp=("-",), method="__neg__",
      doc="-x; Lisp `(- x)`")


def _abs_vjp(g, node, cts):
    return [g.apply("mul", cts[0], g.apply("sign", node.inputs[0]))]


unary(OPS, "abs", np.abs, "abs(x0)", _abs_vjp, NUMERIC, domain="away", doc="|x|")


def _square_vjp(g, node, cts):
    x = node.inputs[0]
    return [g.apply("mul", cts[0], g.apply("mul", x, const(g, 2, x)))]


unary(OPS, "square", np.square, "x0 * x0", _square_vjp, NUMERIC, doc="x * x")


def _recip_vjp(g, node, cts):
    y = node.outputs[0]
    return [g.apply("neg", g.apply("mul", cts[0], g.apply("square", y)))]


unary(OPS, "recip", lambda x: 1.0 / x, "1.0 / x0", _recip_vjp, domain="away", lisp=("/",),
      doc="1 / x; Lisp `(/ x)`")


# NaN gives NaN (x0 itself), as numpy's
unary(OPS, "sign", np.sign,
      "(1.0 if x0 > 0 else (-1.0 if x0 < 0 else (0.0 if x0 == 0 else x0)))",
      zero_vjp, NUMERIC, domain="away", lisp=("sign", "signum"),
      doc="-1, 0 or 1; NaN for NaN (gradient 0)")


# -- exponentials and logarithms ---------------------------------------------------------

def _exp_vjp(g, node, cts):
    return [g.apply("mul", cts[0], node.outputs[0])]


unary(OPS, "exp", np.exp, "math.exp(x0)", _exp_vjp, doc="e^x")


def _log_vjp(g, node, cts):
    return [g.apply("div", cts[0], node.inputs[0])]


unary(OPS, "log", np.log, "math.log(x0)", _log_vjp, domain="positive",
      doc="natural log; Lisp `(log x base)` is log x / log base")


def _sqrt_vjp(g, node, cts):
    y = node.outputs[0]
    return [g.apply("div", cts[0], g.apply("mul", y, const(g, 2.0, y)))]


unary(OPS, "sqrt", np.sqrt, "math.sqrt(x0)", _sqrt_vjp, domain="positive", doc="square root")


def _rsqrt_vjp(g, node, cts):
    # d/dx x^-1/2 = -1/2 * y / x
    x, y = node.inputs[0], node.outputs[0]
    slope = g.apply("mul", g.apply("div", y, x), const(g, -0.5, y))
    return [g.apply("mul", cts[0], slope)]


unary(OPS, "rsqrt", lambda x: 1.0 / np.sqrt(x), "1.0 / math.sqrt(x0)", _rsqrt_vjp,
      domain="positive", doc="1 / sqrt(x)")


# -- trigonometry ------------------------------------------------------------------------

def _tanh_vjp(g, node, cts):
    y = node.outputs[0]
    slope = g.apply("sub", const(g, 1.0, y), g.apply("square", y))
    return [g.apply("mul", cts[0], slope)]


unary(OPS, "tanh", np.tanh, "math.tanh(x0)", _tanh_vjp, doc="hyperbolic tangent")


def _sin_vjp(g, node, cts):
    return [g.apply("mul", cts[0], g.apply("cos", node.inputs[0]))]


unary(OPS, "sin", np.sin, "math.sin(x0)", _sin_vjp, doc="sine")


def _cos_vjp(g, node, cts):
    return [g.apply("neg", g.apply("mul", cts[0], g.apply("sin", node.inputs[0])))]


unary(OPS, "cos", np.cos, "math.cos(x0)", _cos_vjp, doc="cosine")


def _erf_vjp(g, node, cts):
    # d/dx erf(x) = 2/sqrt(pi) e^(-x^2)
    x = node.inputs[0]
    slope = g.apply("mul", const(g, 2.0 / math.sqrt(math.pi), x),
                    g.apply("exp", g.apply("neg", g.apply("square", x))))
    return [g.apply("mul", cts[0], slope)]


unary(OPS, "erf", scipy.special.erf, "math.erf(x0)", _erf_vjp, doc="the error function")


# -- logic and gradient control --------------------------------------------------------

unary(OPS, "logical_not", np.logical_not, "not x0", None, BOOL, doc="not x")


def _stop_gradient_vjp(g, node, cts):
    return [None]


# its VJP deliberately is not the derivative, so the finite-difference check skips it
unary(OPS, "stop_gradient", lambda x: x, "x0", _stop_gradient_vjp, NUMERIC | BOOL,
      doc="identity whose gradient is zero",
      extra={"fd_check": False, "gradient": "0 by definition"})
