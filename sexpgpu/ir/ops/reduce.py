"""Reductions over `axes` (a tuple; None = all) with `keepdims`: the primitives sum,
amax, amin (kind "reduce", combine/init for the kernels) and argmax (-> i64), and
the compositions over them (mean, var, logsumexp, softmax, log_softmax; their
expansions are in `sexpgpu.ir.build`)."""

from __future__ import annotations

import math

from sexpgpu.ir import build
from sexpgpu.ir.build import expand_reduced, scalar
from sexpgpu.ir.ops import _special
from sexpgpu.ir.ops._define import composite
from sexpgpu.ir.ops._sampling import distinct, values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError, reduced, require_dtype
from sexpgpu.ir.shapes import axes as norm_axes
from sexpgpu.ir.shapes import axis as norm_axis
from sexpgpu.ir.types import FLOAT_DTYPES, INT_DTYPES, TensorType
from sexpgpu.lazynumpy import np

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


def _opt_axes(axes) -> tuple[int, ...] | None:
    return None if axes is None else tuple(axes)


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


def _arg_infer(name: str):
    def infer(types: list[TensorType], attrs: dict) -> TensorType:
        x = types[0]
        require_dtype(x, NUMERIC, f"{name}'s argument")
        ax = norm_axis(attrs.get("axis", -1), x.ndim)
        if x.shape[ax] == 0:
            raise ShapeRuleError(f"{name} of an empty axis", actual=str(x.shape))
        return TensorType(reduced(x.shape, (ax,), attrs.get("keepdims", False)), "i64")
    return infer


_ARG_ARGS = (Arg("axis", "axis", -1), Arg("keepdims", "flag", False, lisp="keep"))
for _name, _fn, _what in (("argmax", np.argmax, "max"), ("argmin", np.argmin, "min")):
    OPS.append(OpDef(
        _name, _arg_infer(_name),
        lambda x, axis=-1, keepdims=False, _fn=_fn: _fn(x, axis=axis, keepdims=keepdims),
        None, kind="opaque",
        samples=lambda rng: [([distinct(rng, (3, 5))], {"axis": -1}),
                             ([distinct(rng, (4, 2, 3))], {"axis": 1, "keepdims": True})],
        doc=f"index of the first {_what} along axis -> i64 (of the first NaN, if any)",
        args=_ARG_ARGS, lisp=(_name,), method=_name))


def _prod_vjp(g, node, cts):
    # d prod / dx_i = the product of the others: y / x_i when no x is 0; where one x
    # is 0, the product of the rest at that x and 0 elsewhere; 0 with two zeros
    x, y = node.inputs[0], node.outputs[0]
    ax = norm_axes(node.attrs.get("axes"), len(x.shape))
    keep = node.attrs.get("keepdims", False)
    zero = g.apply("eq", x, scalar(g, 0.0, x.dtype))
    rest = g.apply("prod", g.apply("where", zero, scalar(g, 1.0, x.dtype), x), axes=ax,
                   keepdims=True)                                  # product of the nonzeros
    zeros = g.apply("sum", g.apply("cast", zero, dtype="i64"), axes=ax, keepdims=True)
    none = g.apply("eq", zeros, scalar(g, 0, "i64"))
    lone = g.apply("logical_and", g.apply("eq", zeros, scalar(g, 1, "i64")), zero)
    others = g.apply("where", lone, rest, scalar(g, 0.0, x.dtype))
    slope = g.apply("where", none, g.apply("div", expand_reduced(g, y, x.shape, ax, keep), x),
                    others)
    return [g.apply("mul", slope, expand_reduced(g, cts[0], x.shape, ax, keep))]


def _prod_samples(rng: np.random.Generator) -> list:
    one_zero, two_zeros = values(rng, (3, 4)), values(rng, (3, 4))
    one_zero[1, 2] = 0.0
    two_zeros[2, 0] = two_zeros[2, 3] = 0.0
    return _sum_samples(rng)[:5] + [([one_zero], {"axes": (1,), "keepdims": False}),
                                    ([two_zeros], {"axes": (1,), "keepdims": True})]


OPS.append(OpDef(
    "prod", _infer("prod", True),
    lambda x, axes=None, keepdims=False: np.prod(x, axis=_np_axes(x, axes), keepdims=keepdims),
    _prod_vjp, kind="reduce", samples=_prod_samples,
    extra={"combine": "mul", "init": 1.0, "reorders_sums": True},
    doc="product over axes (the gradient is exact where x holds zeros)",
    args=AXES, lisp=("prod",), method="prod", integers="count"))


# -- compositions ----------------------------------------------------------------------


def _reduce_samples(rng: np.random.Generator) -> list:
    return [([values(rng, s)], {"axes": a, "keepdims": k})
            for (s, a), k in zip(CASES, (False, True, False, True, False))]


composite(OPS, "mean", build.mean,
          lambda x, axes=None, keepdims=False: np.mean(x, axis=_opt_axes(axes),
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
              x, axis=_opt_axes(axes), keepdims=keepdims, ddof=correction),
          args=AXES + (Arg("correction", "int", 0),), integers="float", samples=_var_samples,
          extra={"reorders_sums": True},
          doc="variance, sum of squared deviations / (count - correction): numpy's default "
              "correction 0; PyTorch's is 1 (corrected two-pass formula)")


composite(OPS, "logsumexp", build.logsumexp,
          lambda x, axes=None, keepdims=False: _special.special().logsumexp(
              x, axis=_opt_axes(axes), keepdims=keepdims),
          args=AXES, integers="reject", samples=_reduce_samples,
          extra={"reorders_sums": True},
          doc="log(sum(exp(x - m))) + m, m the max (0 where not finite)")


def _axis_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (3, 4))], {"axis": -1}), ([values(rng, (2, 3, 5))], {"axis": 1}),
            ([values(rng, (6,))], {"axis": 0})]


composite(OPS, "softmax", build.softmax,
          lambda x, axis=-1: _special.special().softmax(x, axis=axis),
          args=(Arg("axis", "axis", -1),), integers="reject", samples=_axis_samples,
          function="softmax", extra={"reorders_sums": True},
          doc="exp(x - m) / sum(exp(x - m)) along axis, m the max")
composite(OPS, "log_softmax", build.log_softmax,
          lambda x, axis=-1: _special.special().log_softmax(x, axis=axis),
          args=(Arg("axis", "axis", -1),), integers="reject", samples=_axis_samples,
          function="log_softmax", extra={"reorders_sums": True},
          doc="(x - m) - log(sum(exp(x - m))) along axis")


def _std(g, x, axes=None, keepdims=False, correction=0):
    return g.apply("sqrt", build.var(g, x, axes, keepdims, correction))


composite(OPS, "std", _std,
          lambda x, axes=None, keepdims=False, correction=0: np.std(
              x, axis=_opt_axes(axes), keepdims=keepdims, ddof=correction),
          args=AXES + (Arg("correction", "int", 0),), integers="float",
          # not over one element: sqrt's slope at a variance of 0 is infinite
          samples=lambda rng: [c for c in _var_samples(rng) if np.shape(c[0][0]) != (4, 1)],
          extra={"reorders_sums": True},
          doc="sqrt(var): numpy's default correction 0; PyTorch's is 1")


def _truth(name: str):
    def truth(g, x, axes=None, keepdims=False):
        """any: some element is not 0 (NaN counts); all: no element is 0. Empty: as numpy."""
        zero = build.scalar(g, False if x.dtype == "bool" else 0, x.dtype)
        ax = norm_axes(axes, len(x.shape))
        test = "ne" if name == "any" else "eq"
        count = g.apply("sum", g.apply("cast", g.apply(test, x, zero), dtype="i64"), axes=ax,
                        keepdims=keepdims)
        return g.apply("gt" if name == "any" else "eq", count, build.scalar(g, 0, "i64"))
    truth.__name__ = name
    return truth


def _truth_samples(rng: np.random.Generator) -> list:
    mask = rng.random((3, 4)) < 0.3
    some = values(rng, (2, 5))
    some[0] = 0.0
    return [([mask], {"axes": (1,), "keepdims": False}), ([some], {"axes": (1,)}),
            ([rng.random((4,)) < 0.5], {"axes": None}), ([mask], {"axes": (0,), "keepdims": True}),
            ([values(rng, (0, 3))], {"axes": (0,)})]


for _name, _fn in (("any", np.any), ("all", np.all)):
    composite(OPS, _name, _truth(_name),
              lambda x, axes=None, keepdims=False, _fn=_fn: _fn(
                  x, axis=_opt_axes(axes), keepdims=keepdims),
              args=AXES, samples=_truth_samples,
              doc=f"bool: {'some' if _name == 'any' else 'every'} element along the axes is "
                  "true (not 0; NaN counts as true)")


def _extreme_with_index(name: str):
    reduce_op, arg_op = ("amax", "argmax") if name == "max" else ("amin", "argmin")

    def extreme(g, x, axis=None, keepdims=False):
        """PyTorch's max(x) (one value) and max(x, dim) (values and indices)."""
        if axis is None:
            return g.apply(reduce_op, x, axes=None, keepdims=False)
        return (g.apply(reduce_op, x, axes=(axis,), keepdims=keepdims),
                g.apply(arg_op, x, axis=axis, keepdims=keepdims))
    extreme.__name__ = name
    return extreme


def _extreme_reference(fn, arg):
    def reference(x, axis=None, keepdims=False):
        if axis is None:
            return fn(x)
        return fn(x, axis=axis, keepdims=keepdims), arg(x, axis=axis, keepdims=keepdims)
    return reference


for _name, _fn, _arg in (("max", np.max, np.argmax), ("min", np.min, np.argmin)):
    composite(OPS, _name, _extreme_with_index(_name), _extreme_reference(_fn, _arg),
              args=(Arg("axis", "axis?", None), Arg("keepdims", "flag", False, lisp="keep")),
              returns="values",
              samples=lambda rng: [([distinct(rng, (3, 5))], {"axis": 1}),
                                   ([distinct(rng, (2, 3, 4))], {"axis": 0, "keepdims": True}),
                                   ([distinct(rng, (6,))], {})],
              doc=f"the {_name} along axis and its first index (two results); over every "
                  "element, the value alone; Lisp `(max a b)` is elementwise")


def _norm(g, x, p=2.0, axes=None, keepdims=False):
    """The vector p-norm over the axes: sum(|x|^p)^(1/p); p inf is max |x|, -inf min
    |x|, 0 the count of nonzeros. Its gradient at a zero vector is NaN for p = 2."""
    ax = norm_axes(axes, len(x.shape))
    a = g.apply("abs", x)
    if p == math.inf:
        return g.apply("amax", a, axes=ax, keepdims=keepdims)
    if p == -math.inf:
        return g.apply("amin", a, axes=ax, keepdims=keepdims)
    if p == 0:
        nonzero = g.apply("cast", g.apply("ne", x, build.scalar(g, 0.0, x.dtype)), dtype=x.dtype)
        return g.apply("sum", nonzero, axes=ax, keepdims=keepdims)
    if p == 1:
        return g.apply("sum", a, axes=ax, keepdims=keepdims)
    if p == 2:
        return g.apply("sqrt", g.apply("sum", g.apply("square", x), axes=ax, keepdims=keepdims))
    if p < 0:
        raise ShapeRuleError("a p-norm needs p > 0, or p inf, -inf or 0", actual=str(p))
    powered = g.apply("pow", a, build.scalar(g, float(p), x.dtype))
    total = g.apply("sum", powered, axes=ax, keepdims=keepdims)
    return g.apply("pow", total, build.scalar(g, 1.0 / p, x.dtype))


def _norm_reference(x, p=2.0, axes=None, keepdims=False):
    a = np.abs(x)
    ax = _opt_axes(axes)
    if p == math.inf:
        return np.max(a, axis=ax, keepdims=keepdims)
    if p == -math.inf:
        return np.min(a, axis=ax, keepdims=keepdims)
    if p == 0:
        return np.sum(x != 0, axis=ax, keepdims=keepdims).astype(x.dtype)
    return np.sum(a ** p, axis=ax, keepdims=keepdims) ** (1.0 / p)


def _norm_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (3, 4), "away")], {"p": p, "axes": a, "keepdims": k})
            for p, a, k in ((2.0, None, False), (1.0, (1,), False), (math.inf, (0,), True),
                            (-math.inf, (1,), False), (3.0, (1,), False), (0.0, None, False))]


composite(OPS, "norm", _norm, _norm_reference,
          args=(Arg("p", "order", 2.0),) + AXES, integers="reject", samples=_norm_samples,
          extra={"reorders_sums": True},
          doc="the vector p-norm over the axes (p 2, 1, inf, -inf, 0 or any p > 0)")
