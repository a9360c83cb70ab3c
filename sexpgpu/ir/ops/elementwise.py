"""Unary elementwise math: arithmetic, exponentials and logarithms, trigonometry,
rounding and tests for special values. Each is one `unary` entry: dtype rule, numpy
reference, scalar kernel body (valid in numba.njit and numba.cuda device code, over
`x0`), VJP as more IR, samples and front-end names. Activations are in activations.py."""

from __future__ import annotations

import math

from sexpgpu.ir.ops import _special
from sexpgpu.ir.ops._define import BOOL, FLOAT, NUMERIC, const, unary, zero_vjp
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError
from sexpgpu.lazynumpy import np

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


# -- rounding ----------------------------------------------------------------------------
# math.floor & co. give an integer in numba (as in Python), which has no value for
# inf or NaN and loses the sign of -0.0: so a value already integral in f64 (from
# 2^52, inf, NaN) is kept, and the sign of x is put back (numpy's floor(-0.5) is
# -1, ceil(-0.5) is -0.0)
_INTEGRAL = "4503599627370496.0"  # 2^52: every f64 from here is an integer


def _rounding(name: str, reference, integer: str, lisp: tuple[str, ...], doc: str) -> None:
    body = (f"(math.copysign(float({integer}), x0) if abs(x0) < {_INTEGRAL} else x0)")
    unary(OPS, name, reference, body, zero_vjp, domain="real", lisp=lisp, doc=doc)


# Lisp: CL's names first (they stay CL's functions on numbers)
_rounding("floor", np.floor, "math.floor(x0)", ("floor",), "the largest integer <= x")
_rounding("ceil", np.ceil, "math.ceil(x0)", ("ceiling", "ceil"), "the smallest integer >= x")
_rounding("trunc", np.trunc, "math.trunc(x0)", ("truncate", "trunc"), "x rounded toward zero")
# half to even, as numpy's and PyTorch's round: floor, plus 1 above the half or at
# the half of an odd floor
_rounding("round", np.round,
          "math.floor(x0) + (1 if (x0 - math.floor(x0) > 0.5 or (x0 - math.floor(x0) == 0.5"
          " and math.floor(x0) % 2 == 1)) else 0)", ("round",),
          "x rounded to the nearest integer, halves to even")


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


def _log1p_vjp(g, node, cts):
    x = node.inputs[0]
    return [g.apply("div", cts[0], g.apply("add", x, const(g, 1.0, x)))]


unary(OPS, "log1p", np.log1p, "math.log1p(x0)", _log1p_vjp, domain="positive",
      doc="log(1 + x), exact for small x")


def _expm1_vjp(g, node, cts):
    y = node.outputs[0]
    return [g.apply("mul", cts[0], g.apply("add", y, const(g, 1.0, y)))]


unary(OPS, "expm1", np.expm1, "math.expm1(x0)", _expm1_vjp, doc="e^x - 1, exact for small x")


def _log_base_vjp(base: float):
    def vjp(g, node, cts):
        x = node.inputs[0]
        return [g.apply("div", cts[0], g.apply("mul", x, const(g, math.log(base), x)))]
    return vjp


unary(OPS, "log2", np.log2, "math.log2(x0)", _log_base_vjp(2.0), domain="positive",
      doc="base-2 log")
unary(OPS, "log10", np.log10, "math.log10(x0)", _log_base_vjp(10.0), domain="positive",
      doc="base-10 log")


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


def _tan_vjp(g, node, cts):
    y = node.outputs[0]
    return [g.apply("mul", cts[0], g.apply("add", const(g, 1.0, y), g.apply("square", y)))]


unary(OPS, "tan", np.tan, "math.tan(x0)", _tan_vjp, domain="unit", doc="tangent")


def _atan_vjp(g, node, cts):
    x = node.inputs[0]
    return [g.apply("div", cts[0], g.apply("add", const(g, 1.0, x), g.apply("square", x)))]


unary(OPS, "atan", np.arctan, "math.atan(x0)", _atan_vjp,
      doc="arc tangent; Lisp `(atan y x)` is atan2")


def _erf_vjp(g, node, cts):
    # d/dx erf(x) = 2/sqrt(pi) e^(-x^2)
    x = node.inputs[0]
    slope = g.apply("mul", const(g, 2.0 / math.sqrt(math.pi), x),
                    g.apply("exp", g.apply("neg", g.apply("square", x))))
    return [g.apply("mul", cts[0], slope)]


unary(OPS, "erf", _special.erf, "math.erf(x0)", _erf_vjp, doc="the error function")


# -- special values ------------------------------------------------------------------

unary(OPS, "isnan", np.isnan, "x0 != x0", None, NUMERIC, out_dtype="bool",
      doc="true where x is NaN (never for integers)")
unary(OPS, "isfinite", np.isfinite, "abs(x0) < math.inf", None, NUMERIC, out_dtype="bool",
      doc="true where x is neither infinite nor NaN (always for integers)")

_FLOAT_MAX = {"f32": 3.4028234663852886e38, "bf16": 3.3895313892515355e38,
              "f16": 65504.0}


def _nan_to_num_build(g, x, nan: float = 0.0, posinf: float | None = None,
                      neginf: float | None = None):
    """PyTorch's defaults: infinities become the dtype's largest finite values."""
    top = _FLOAT_MAX.get(x.dtype, 0.0)
    return g.apply("nan_to_num", x, nan=nan, posinf=top if posinf is None else posinf,
                   neginf=-top if neginf is None else neginf)


def _nan_to_num_vjp(g, node, cts):
    x = node.inputs[0]
    finite = g.apply("isfinite", x)
    return [g.apply("where", finite, cts[0], const(g, 0.0, cts[0]))]


def _nan_to_num_check(attrs: dict) -> None:
    # the front ends fill the infinities' defaults (_nan_to_num_build); the node holds them
    for name in ("nan", "posinf", "neginf"):
        if not isinstance(attrs.get(name), (int, float)):
            raise ShapeRuleError(f"{name} must be a number", actual=repr(attrs.get(name)))


unary(OPS, "nan_to_num", lambda x, nan, posinf, neginf: np.nan_to_num(
          x, nan=nan, posinf=posinf, neginf=neginf),
      "({nan} if x0 != x0 else ({posinf} if x0 == math.inf else "
      "({neginf} if x0 == -math.inf else x0)))", _nan_to_num_vjp, FLOAT,
      args=(Arg("nan", "number", 0.0), Arg("posinf", "number?", None),
            Arg("neginf", "number?", None)),
      cases=({"nan": 0.0, "posinf": _FLOAT_MAX["f32"], "neginf": -_FLOAT_MAX["f32"]},
             {"nan": 1.5, "posinf": 2.0, "neginf": -7.0}),
      build=_nan_to_num_build, check=_nan_to_num_check,
      doc="NaN, +inf and -inf replaced (by 0 and the dtype's largest finite values)")


# -- logic and gradient control --------------------------------------------------------

unary(OPS, "logical_not", np.logical_not, "not x0", None, BOOL, doc="not x")


def _stop_gradient_vjp(g, node, cts):
    return [None]


# its VJP deliberately is not the derivative, so the finite-difference check skips it
unary(OPS, "stop_gradient", lambda x: x, "x0", _stop_gradient_vjp, NUMERIC | BOOL,
      doc="identity whose gradient is zero",
      extra={"fd_check": False, "gradient": "0 by definition"})
