"""Reductions over `axes` (a tuple; None = all) with `keepdims`: the primitives sum,
amax, amin (kind "reduce", combine/init for the kernels) and argmax (-> i64), and
the compositions over them (mean, var, logsumexp, softmax, log_softmax; their
expansions are in `sexpgpu.ir.build`)."""

from __future__ import annotations

import numpy as np
import scipy.special

from sexpgpu.ir import build
from sexpgpu.ir.build import expand_reduced
from sexpgpu.ir.ops._define import composite
from sexpgpu.ir.ops._sampling import distinct, values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError, reduced, require_dtype
from sexpgpu.ir.shapes import axes as norm_axes
from sexpgpu.ir.shapes import axis as norm_axis
from sexpgpu.ir.types import FLOAT_DTYPES, INT_DTYPES, TensorType

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []

NUMERIC = FLOAT_DTYPES | INT_DTYPES
CASES = (((3, 4), (1,)), ((3, 4), (0, 1)), ((2, 3, 5), (0, 2)), ((7,), None), ((4, 1), (-1,)))
# (x :axis A :keep K) in Lisp, x.op(axis=A, keepdims=K) in Python
AXES = (Arg("axes", "axes", None, lisp="axis", py="axis"),
        Arg("keepdims", "flag", False, lisp="keep"))


def _infer(name: str, allow_empty: bool):
    def infer(types: list[TensorType], attrs: dict) -> TensorType:
        x = types[0]
        require_dtype(x, NUMERIC, f"{name}'s argument")
        ax = norm_axes(attrs.get("axes"), x.ndim)
        if not allow_empty and any(x.shape[i] == 0 for i in ax):
            raise ShapeRuleError("cannot reduce an empty axis (no identity)",
                                 actual=str(x.shape), fix="use sum, or a non-empty axis")
        return TensorType(reduced(x.shape, ax, attrs.get("keepdims", False)), x.dtype)
    return infer


def _np_axes(x: np.ndarray, axes) -> tuple[int, ...]:
    return norm_axes(axes, x.ndim)


def _sum_vjp(g, node, cts):
    x = node.inputs[0]
    ax = norm_axes(node.attrs.get("axes"), len(x.shape))
    return [expand_reduced(g, cts[0], x.shape, ax, node.attrs.get("keepdims", False))]


def _sum_samples(rng: np.random.Generator) -> list:
    cases = [([values(rng, s)], {"axes": a, "keepdims": k})
             for (s, a), k in zip(CASES, (False, True, False, True, False))]
    return cases + [([values(rng, (0, 3))], {"axes": (0,), "keepdims": False})]


OPS.append(OpDef(
    "sum", _infer("sum", True),
    lambda x, axes=None, keepdims=False: np.sum(x, axis=_np_axes(x, axes), keepdims=keepdims),
    _sum_vjp, kind="reduce", samples=_sum_samples,
    extra={"combine": "add", "init": 0.0, "reorders_sums": True}, doc="sum over axes",
    args=AXES, lisp=("sum",), method="sum", integers="count"))


def _extreme_vjp(g, node, cts):
    # the gradient is shared equally between tied extremes
    x, y = node.inputs[0], node.outputs[0]
    ax = norm_axes(node.attrs.get("axes"), len(x.shape))
    keep = node.attrs.get("keepdims", False)
    hit = g.apply("cast", g.apply("eq", x, expand_reduced(g, y, x.shape, ax, keep)),
                  dtype=cts[0].dtype)
    count = g.apply("sum", hit, axes=ax, keepdims=keep)
    share = g.apply("div", cts[0], count)
    return [g.apply("mul", hit, expand_reduced(g, share, x.shape, ax, keep))]


def _extreme_samples(rng: np.random.Generator) -> list:
    return [([distinct(rng, s)], {"axes": a, "keepdims": k})
            for (s, a), k in zip(CASES, (False, True, False, True, False))]


OPS.append(OpDef(
    "amax", _infer("amax", False),
    lambda x, axes=None, keepdims=False: np.amax(x, axis=_np_axes(x, axes), keepdims=keepdims),
    _extreme_vjp, kind="reduce", samples=_extreme_samples,
    extra={"combine": "max", "init": float("-inf")}, doc="max over axes",
    args=AXES, lisp=("amax",), method="amax"))
OPS.append(OpDef(
    "amin", _infer("amin", False),
    lambda x, axes=None, keepdims=False: np.amin(x, axis=_np_axes(x, axes), keepdims=keepdims),
    _extreme_vjp, kind="reduce", samples=_extreme_samples,
    extra={"combine": "min", "init": float("inf")}, doc="min over axes",
    args=AXES, lisp=("amin",), method="amin"))


def _argmax_infer(types: list[TensorType], attrs: dict) -> TensorType:
    x = types[0]
    require_dtype(x, NUMERIC, "argmax's argument")
    ax = norm_axis(attrs.get("axis", -1), x.ndim)
    if x.shape[ax] == 0:
        raise ShapeRuleError("argmax of an empty axis", actual=str(x.shape))
    return TensorType(reduced(x.shape, (ax,), attrs.get("keepdims", False)), "i64")


def _argmax_reference(x: np.ndarray, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    return np.argmax(x, axis=axis, keepdims=keepdims)


OPS.append(OpDef("argmax", _argmax_infer, _argmax_reference, None, kind="opaque",
                 samples=lambda rng: [([distinct(rng, (3, 5))], {"axis": -1}),
                                      ([distinct(rng, (4, 2, 3))], {"axis": 1, "keepdims": True})],
                 doc="index of the first max along axis -> i64",
                 args=(Arg("axis", "axis", -1), Arg("keepdims", "flag", False, lisp="keep")),
                 lisp=("argmax",), method="argmax"))


# -- compositions ----------------------------------------------------------------------

def _np_axes(x: np.ndarray, axes) -> tuple[int, ...] | None:
    return None if axes is None else tuple(axes)


def _reduce_samples(rng: np.random.Generator) -> list:
    return [([values(rng, s)], {"axes": a, "keepdims": k})
            for (s, a), k in zip(CASES, (False, True, False, True, False))]


composite(OPS, "mean", build.mean,
          lambda x, axes=None, keepdims=False: np.mean(x, axis=_np_axes(x, axes),
                                                       keepdims=keepdims),
          args=AXES, integers="float", samples=_reduce_samples,
          extra={"reorders_sums": True},
          doc="sum times 1/count (integers and bools are averaged as f32)")


def _var_samples(rng: np.random.Generator) -> list:
    cases = _reduce_samples(rng)
    return cases + [([values(rng, (4, 5))], {"axes": (1,), "keepdims": False,
                                             "correction": 1})]


composite(OPS, "var", build.var,
          lambda x, axes=None, keepdims=False, correction=0: np.var(
              x, axis=_np_axes(x, axes), keepdims=keepdims, ddof=correction),
          args=AXES + (Arg("correction", "int", 0),), integers="float", samples=_var_samples,
          extra={"reorders_sums": True},
          doc="variance, sum of squared deviations / (count - correction): numpy's default "
              "correction 0; PyTorch's is 1 (corrected two-pass formula)")


composite(OPS, "logsumexp", build.logsumexp,
          lambda x, axes=None, keepdims=False: scipy.special.logsumexp(
              x, axis=_np_axes(x, axes), keepdims=keepdims),
          args=AXES, integers="reject", samples=_reduce_samples,
          extra={"reorders_sums": True},
          doc="log(sum(exp(x - m))) + m, m the max (0 where not finite)")


def _axis_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (3, 4))], {"axis": -1}), ([values(rng, (2, 3, 5))], {"axis": 1}),
            ([values(rng, (6,))], {"axis": 0})]


composite(OPS, "softmax", build.softmax,
          lambda x, axis=-1: scipy.special.softmax(x, axis=axis),
          args=(Arg("axis", "axis", -1),), integers="reject", samples=_axis_samples,
          function="softmax", extra={"reorders_sums": True},
          doc="exp(x - m) / sum(exp(x - m)) along axis, m the max")
composite(OPS, "log_softmax", build.log_softmax,
          lambda x, axis=-1: scipy.special.log_softmax(x, axis=axis),
          args=(Arg("axis", "axis", -1),), integers="reject", samples=_axis_samples,
          function="log_softmax", extra={"reorders_sums": True},
          doc="(x - m) - log(sum(exp(x - m))) along axis")
