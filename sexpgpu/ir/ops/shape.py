"""Ops that move elements without arithmetic: the primitives reshape, permute,
broadcast_to, slice (and its transpose slice_scatter) and concat, and the
compositions squeeze, unsqueeze, transpose, stack and slice along one axis
(their expansions in `sexpgpu.ir.build`)."""

from __future__ import annotations

from math import prod

from sexpgpu.ir import build
from sexpgpu.ir.build import unbroadcast
from sexpgpu.ir.ops._define import composite
from sexpgpu.ir.ops._sampling import values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError, broadcast, fmt, same_dtype
from sexpgpu.ir.shapes import axis as norm_axis
from sexpgpu.ir.types import TensorType
from sexpgpu.lazynumpy import np

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []

# -- reshape -----------------------------------------------------------------------

def _reshape_infer(types: list[TensorType], attrs: dict) -> TensorType:
    x, shape = types[0], tuple(attrs["shape"])
    if prod(shape) != x.size or any(d < 0 for d in shape):
        raise ShapeRuleError("the new shape holds a different number of elements",
                             expected=f"{x.size} elements, like {fmt(x.shape)}",
                             actual=f"{fmt(shape)} = {prod(shape)} elements",
                             fix="make the sizes multiply to the same count")
    return TensorType(shape, x.dtype)


def _reshape_vjp(g, node, cts):
    return [g.apply("reshape", cts[0], shape=node.inputs[0].shape)]


OPS.append(OpDef("reshape", _reshape_infer, lambda x, shape: np.reshape(x, shape), _reshape_vjp,
                 kind="view",
                 samples=lambda rng: [([values(rng, (3, 4))], {"shape": (2, 6)}),
                                      ([values(rng, (1,))], {"shape": ()}),
                                      ([values(rng, (0, 4))], {"shape": (2, 0, 2)}),
                                      ([values(rng, (2, 3, 5))], {"shape": (6, 1, 5)})],
                 doc="the same elements, row-major, in a new shape (one size may be -1)",
                 args=(Arg("shape", "newshape", positional=True, varargs=True),),
                 lisp=("reshape",), method="reshape"))


# -- permute -----------------------------------------------------------------------

def _permute_infer(types: list[TensorType], attrs: dict) -> TensorType:
    x, perm = types[0], tuple(attrs["perm"])
    if sorted(perm) != list(range(x.ndim)):
        raise ShapeRuleError("perm is not a permutation of the axes",
                             expected=f"an order of {tuple(range(x.ndim))}", actual=str(perm))
    return TensorType(tuple(x.shape[p] for p in perm), x.dtype)


def _permute_vjp(g, node, cts):
    perm = tuple(node.attrs["perm"])
    n = len(perm)
    if n >= 2 and perm == tuple(range(n - 2)) + (n - 1, n - 2):
        swapped = _transposed_product(g, cts[0])
        if swapped is not None:
            return [swapped]
    # the inverse permutation: axis perm[i] goes back to i
    return [g.apply("permute", cts[0], perm=tuple(sorted(range(n), key=perm.__getitem__)))]


def _swap_last(g, v):
    n = len(v.shape)
    return g.apply("permute", v, perm=tuple(range(n - 2)) + (n - 1, n - 2))


def _transposed_product(g, ct):
    """The transpose of a matmul's product (possibly summed over batch axes: a
    weight gradient) as b^T @ a^T, or None. A linear layer's weight is stored
    (out, in) and used transposed, so its gradient comes out (in, out): made this
    way it needs no copy, since matmuls read transposed operands in place."""
    node, summed = ct.node, None
    if node is not None and node.op == "sum" and not node.attrs.get("keepdims"):
        summed, node = node, node.inputs[0].node
    if node is None or node.op != "matmul":
        return None
    rank = len(node.outputs[0].shape)
    if summed is not None:
        axes = summed.attrs.get("axes")
        if axes is None or any(a % rank >= rank - 2 for a in axes):
            return None  # a sum over a matrix axis does not commute with the transpose
    a, b = node.inputs
    if len(a.shape) < 2 or len(b.shape) < 2:
        return None
    product = g.apply("matmul", _swap_last(g, b), _swap_last(g, a))
    if summed is None:
        return product
    return g.apply("sum", product, axes=summed.attrs["axes"], keepdims=False)


OPS.append(OpDef("permute", _permute_infer, lambda x, perm: np.transpose(x, perm).copy(),
                 _permute_vjp, kind="opaque",
                 samples=lambda rng: [([values(rng, (2, 3, 4))], {"perm": (2, 0, 1)}),
                                      ([values(rng, (3, 5))], {"perm": (1, 0)}),
                                      ([values(rng, (0, 2))], {"perm": (1, 0)})],
                 doc="axes reordered: output axis i is input axis perm[i]",
                 args=(Arg("perm", "ints", positional=True, varargs=True),),
                 lisp=("permute",), method="permute"))


# -- broadcast_to -----------------------------------------------------------------

def _broadcast_to_infer(types: list[TensorType], attrs: dict) -> TensorType:
    x, shape = types[0], tuple(attrs["shape"])
    if len(shape) < x.ndim or broadcast(x.shape, shape, names=("x", "shape")) != shape:
        raise ShapeRuleError("cannot broadcast to this shape",
                             expected=f"a shape {fmt(x.shape)} stretches to",
                             actual=fmt(shape))
    return TensorType(shape, x.dtype)


def _broadcast_to_vjp(g, node, cts):
    return [unbroadcast(g, cts[0], node.inputs[0].shape)]


OPS.append(OpDef("broadcast_to", _broadcast_to_infer,
                 lambda x, shape: np.broadcast_to(x, shape).copy(), _broadcast_to_vjp,
                 kind="elementwise", scalar="x0",
                 samples=lambda rng: [([values(rng, (3, 1))], {"shape": (2, 3, 4)}),
                                      ([values(rng, ())], {"shape": (5,)}),
                                      ([values(rng, (1, 4))], {"shape": (0, 4)})],
                 doc="numpy broadcasting made explicit",
                 args=(Arg("shape", "shape", positional=True),),
                 lisp=("broadcast-to",), method="broadcast_to"))


# -- slice and slice_scatter -------------------------------------------------------

def _slices(shape: tuple[int, ...], attrs: dict) -> tuple[slice, ...]:
    """Python slices from attrs starts/stops/steps (one entry per axis; None = default)."""
    n = len(shape)
    starts = tuple(attrs.get("starts") or (None,) * n)
    stops = tuple(attrs.get("stops") or (None,) * n)
    steps = tuple(attrs.get("steps") or (None,) * n)
    if not len(starts) == len(stops) == len(steps) == n:
        raise ShapeRuleError("starts, stops and steps need one entry per axis",
                             expected=f"{n} entries each",
                             actual=f"{len(starts)}, {len(stops)}, {len(steps)}")
    if any(s is not None and s < 1 for s in steps):
        raise ShapeRuleError("slice steps must be positive", actual=str(steps))
    return tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps))


def slice_bounds(shape: tuple[int, ...], attrs: dict) -> list[tuple[int, int, int]]:
    """(start, stop, step) per axis of a slice or slice_scatter window, normalised."""
    return [s.indices(d) for s, d in zip(_slices(shape, attrs), shape)]


def _sliced_shape(shape: tuple[int, ...], attrs: dict) -> tuple[int, ...]:
    return tuple(len(range(*s.indices(d))) for s, d in zip(_slices(shape, attrs), shape))


def _slice_infer(types: list[TensorType], attrs: dict) -> TensorType:
    return TensorType(_sliced_shape(types[0].shape, attrs), types[0].dtype)


def _slice_reference(x: np.ndarray, **attrs) -> np.ndarray:
    return x[_slices(x.shape, attrs)].copy()


def _slice_vjp(g, node, cts):
    return [g.apply("slice_scatter", cts[0], shape=node.inputs[0].shape,
                    **{k: node.attrs.get(k) for k in ("starts", "stops", "steps")})]


def _slice_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (5, 6))], {"starts": (1, 0), "stops": (4, None), "steps": (1, 2)}),
            ([values(rng, (7,))], {"starts": (-3,), "stops": (None,), "steps": (None,)}),
            ([values(rng, (3, 4))], {"starts": (2, 0), "stops": (2, 4), "steps": (1, 1)})]


OPS.append(OpDef("slice", _slice_infer, _slice_reference, _slice_vjp, kind="opaque",
                 samples=_slice_samples,
                 doc="attrs starts, stops, steps: Python slicing per axis (steps > 0)",
                 reached=("slice_axis",)))


def _slice_scatter_infer(types: list[TensorType], attrs: dict) -> TensorType:
    shape = tuple(attrs["shape"])
    want = _sliced_shape(shape, attrs)
    if want != types[0].shape:
        raise ShapeRuleError("the source does not fit the slice",
                             expected=fmt(want), actual=fmt(types[0].shape))
    return TensorType(shape, types[0].dtype)


def _slice_scatter_reference(src: np.ndarray, shape, **attrs) -> np.ndarray:
    out = np.zeros(shape, dtype=src.dtype)
    out[_slices(tuple(shape), attrs)] = src
    return out


def _slice_scatter_vjp(g, node, cts):
    window = {k: node.attrs.get(k) for k in ("starts", "stops", "steps")}
    return [g.apply("slice", cts[0], **window)]


def _slice_scatter_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (3, 3))], {"shape": (5, 6), "starts": (1, 0), "stops": (4, None),
                                     "steps": (1, 2)})]


OPS.append(OpDef("slice_scatter", _slice_scatter_infer, _slice_scatter_reference,
                 _slice_scatter_vjp, kind="opaque", samples=_slice_scatter_samples,
                 doc="zeros of attrs shape with the input written at the slice (slice's VJP)",
                 reached=("slice_axis",)))


# -- concat --------------------------------------------------------------------------

def _concat_infer(types: list[TensorType], attrs: dict) -> TensorType:
    if not types:
        raise ShapeRuleError("concat needs at least one tensor")
    first = types[0]
    ax = norm_axis(attrs.get("axis", 0), first.ndim)
    names = tuple(f"argument {i + 1}" for i in range(len(types)))
    dtype = same_dtype(types, names)
    for t, name in zip(types[1:], names[1:]):
        rest = (t.shape[:ax] + t.shape[ax + 1:], first.shape[:ax] + first.shape[ax + 1:])
        if t.ndim != first.ndim or rest[0] != rest[1]:
            raise ShapeRuleError(f"{name} differs from argument 1 off the concat axis {ax}",
                                 expected=f"like {fmt(first.shape)} except axis {ax}",
                                 actual=fmt(t.shape))
    size = sum(t.shape[ax] for t in types)
    return TensorType(first.shape[:ax] + (size,) + first.shape[ax + 1:], dtype)


def _concat_vjp(g, node, cts):
    ax = norm_axis(node.attrs.get("axis", 0), len(node.inputs[0].shape))
    out, start = [], 0
    n = len(node.inputs[0].shape)
    for x in node.inputs:
        stop = start + x.shape[ax]
        starts = tuple(start if i == ax else None for i in range(n))
        stops = tuple(stop if i == ax else None for i in range(n))
        out.append(g.apply("slice", cts[0], starts=starts, stops=stops, steps=(None,) * n))
        start = stop
    return out


OPS.append(OpDef("concat", _concat_infer, lambda *xs, axis=0: np.concatenate(xs, axis=axis),
                 _concat_vjp, kind="opaque",
                 samples=lambda rng: [([values(rng, (2, 3)), values(rng, (4, 3))], {"axis": 0}),
                                      ([values(rng, (2, 1)), values(rng, (2, 0)),
                                        values(rng, (2, 3))], {"axis": -1})],
                 doc="join tensors that agree off the axis",
                 inputs=("xs:list",), args=(Arg("axis", "axis", 0),),
                 lisp=("concat",), function="concat"))


# -- compositions ----------------------------------------------------------------------

composite(OPS, "squeeze", build.squeeze,
          lambda x, axes=None: np.squeeze(x, axis=None if axes is None else tuple(axes)),
          args=(Arg("axes", "axes", None, lisp="axis", py="axis", positional=True),),
          samples=lambda rng: [([values(rng, (3, 1, 4))], {"axes": (1,)}),
                               ([values(rng, (1, 2, 1))], {"axes": None})],
          doc="drop size-1 axes (all of them by default)")
composite(OPS, "unsqueeze", build.unsqueeze, lambda x, axis: np.expand_dims(x, axis),
          args=(Arg("axis", "axis", positional=True),),
          samples=lambda rng: [([values(rng, (3, 4))], {"axis": 1}),
                               ([values(rng, (2,))], {"axis": -1})],
          doc="insert a size-1 axis")
composite(OPS, "transpose", build.transpose, lambda x, a=-2, b=-1: np.swapaxes(x, a, b),
          args=(Arg("a", "axis", -2, positional=True), Arg("b", "axis", -1, positional=True)),
          samples=lambda rng: [([values(rng, (2, 3, 4))], {"a": 0, "b": 2}),
                               ([values(rng, (3, 5))], {})],
          doc="swap two axes (the last two by default)")
composite(OPS, "stack", build.stack, lambda *xs, axis=0: np.stack(xs, axis=axis),
          inputs=("xs:list",), args=(Arg("axis", "axis", 0),), method=None, function="stack",
          samples=lambda rng: [([values(rng, (2, 3)), values(rng, (2, 3)), values(rng, (2, 3))],
                                {"axis": 1})],
          doc="join tensors of one shape along a new axis")


def _slice_axis_reference(x: np.ndarray, axis: int = 0, start: int = 0,
                          end: int | None = None) -> np.ndarray:
    return x[(slice(None),) * (axis % x.ndim) + (slice(start, end),)].copy()


composite(OPS, "slice_axis", build.slice_axis, _slice_axis_reference,
          args=(Arg("axis", "axis", 0), Arg("start", "int", 0), Arg("end", "int?", None)),
          lisp=("slice",), method="slice",
          samples=lambda rng: [([values(rng, (5, 6))], {"axis": 1, "start": 1, "end": 4}),
                               ([values(rng, (7,))], {"start": -3}),
                               ([values(rng, (3, 4))], {"axis": 0, "start": 2, "end": 2})],
          doc="elements start..end-1 along one axis (Python: also x[...])")
