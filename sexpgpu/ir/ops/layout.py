"""Ops that rearrange elements along axes: the primitive flip and the compositions
roll, pad, tile, split, chunk, tril and triu (slices, concats, broadcasts and
masks of the shape primitives, so their gradients are the primitives')."""

from __future__ import annotations

import math

from sexpgpu.ir import build
from sexpgpu.ir.ops._define import composite
from sexpgpu.ir.ops._sampling import values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError, fmt
from sexpgpu.ir.shapes import axes as norm_axes
from sexpgpu.ir.shapes import axis as norm_axis
from sexpgpu.ir.types import FLOAT_DTYPES, TensorType
from sexpgpu.lazynumpy import np

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []


# -- flip ----------------------------------------------------------------------------------

def _flip_infer(types: list[TensorType], attrs: dict) -> TensorType:
    norm_axes(attrs.get("axes"), types[0].ndim)
    return types[0]


def _flip_build(g, x, axes=None):
    """The IR holds the axes explicitly (None: all of them)."""
    return g.apply("flip", x, axes=norm_axes(axes, len(x.shape)))


def _flip_vjp(g, node, cts):
    return [g.apply("flip", cts[0], **node.attrs)]


OPS.append(OpDef(
    "flip", _flip_infer, lambda x, axes: np.flip(x, axes).copy(), _flip_vjp, kind="opaque",
    samples=lambda rng: [([values(rng, (3, 4))], {"axes": (1,)}),
                         ([values(rng, (2, 3, 4))], {"axes": (0, 2)}),
                         ([values(rng, (5,))], {"axes": (0,)})],
    args=(Arg("axes", "axes", None, lisp="axis", py="axis", positional=True),),
    lisp=("flip",), method="flip", build=_flip_build,
    doc="the elements in reverse order along the axes (all by default)"))


# -- roll ----------------------------------------------------------------------------------

def _roll(g, x, shifts, axes=None):
    """PyTorch's roll: element i moves to i + shift (mod n); with no axes, over the
    flattened tensor. Two slices joined by a concat per axis."""
    if axes is None:
        flat = g.apply("reshape", x, shape=(math.prod(x.shape),))
        return g.apply("reshape", _roll(g, flat, shifts[:1], (0,)), shape=x.shape)
    if len(shifts) != len(axes):
        raise ShapeRuleError("roll needs one shift per axis",
                             actual=f"shifts {shifts}, axes {axes}")
    for shift, axis in zip(shifts, axes):
        ax = norm_axis(axis, len(x.shape))
        n = x.shape[ax]
        s = shift % n if n else 0
        if s:
            x = g.apply("concat", build.slice_axis(g, x, ax, n - s, n),
                        build.slice_axis(g, x, ax, 0, n - s), axis=ax)
    return x


composite(OPS, "roll", _roll,
          lambda x, shifts, axes=None: np.roll(x, shifts if axes is not None else shifts[0],
                                               axis=axes),
          args=(Arg("shifts", "ints", positional=True),
                Arg("axes", "axes", None, lisp="axis", py="axis")),
          samples=lambda rng: [([values(rng, (3, 5))], {"shifts": (2,), "axes": (1,)}),
                               ([values(rng, (2, 3, 4))], {"shifts": (-1, 5), "axes": (0, 2)}),
                               ([values(rng, (2, 3))], {"shifts": (4,)})],
          doc="elements moved shift places along the axes, wrapping around (flattened "
              "when no axes)")


# -- pad -----------------------------------------------------------------------------------

PAD_MODES = ("constant", "reflect", "replicate", "circular")
_NUMPY_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
                "circular": "wrap"}


def _pad_axis(g, x, ax: int, before: int, after: int, mode: str, value: float):
    n = x.shape[ax]
    if mode == "constant":
        def block(size: int):
            shape = x.shape[:ax] + (size,) + x.shape[ax + 1:]
            fill = value if x.dtype in FLOAT_DTYPES else int(value)
            return g.apply("full", shape=shape, dtype=x.dtype, value=fill)
        left, right = block(before), block(after)
    elif mode == "reflect":
        if max(before, after) >= n:
            raise ShapeRuleError(f"reflect padding must be smaller than the axis ({n})",
                                 actual=f"{before} and {after} on axis {ax}")
        left = _flip_build(g, build.slice_axis(g, x, ax, 1, before + 1), (ax,))
        right = _flip_build(g, build.slice_axis(g, x, ax, n - 1 - after, n - 1), (ax,))
    elif mode == "replicate":
        if n == 0:
            raise ShapeRuleError("replicate padding of an empty axis", actual=fmt(x.shape))
        edge = x.shape[:ax] + (before,) + x.shape[ax + 1:], x.shape[:ax] + (after,) + \
            x.shape[ax + 1:]
        left = g.apply("broadcast_to", build.slice_axis(g, x, ax, 0, 1), shape=edge[0])
        right = g.apply("broadcast_to", build.slice_axis(g, x, ax, n - 1, n), shape=edge[1])
    else:  # circular
        if max(before, after) > n:
            raise ShapeRuleError(f"circular padding must be at most the axis ({n})",
                                 actual=f"{before} and {after} on axis {ax}")
        left = build.slice_axis(g, x, ax, n - before, n)
        right = build.slice_axis(g, x, ax, 0, after)
    parts = ([left] if before else []) + [x] + ([right] if after else [])
    return g.apply("concat", *parts, axis=ax) if len(parts) > 1 else x


def _pad(g, x, pad, mode="constant", value=0.0):
    """PyTorch's F.pad: `pad` pairs (before, after) from the last axis backwards."""
    if len(pad) % 2 or len(pad) > 2 * len(x.shape) or any(p < 0 for p in pad):
        raise ShapeRuleError("pad takes (before after) pairs of sizes >= 0, the last axis "
                             "first", expected=f"at most {2 * len(x.shape)} sizes",
                             actual=str(tuple(pad)))
    for k in range(len(pad) // 2):
        x = _pad_axis(g, x, len(x.shape) - 1 - k, pad[2 * k], pad[2 * k + 1], mode, value)
    return x


def _pad_reference(x, pad, mode="constant", value=0.0):
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    if mode == "constant":
        return np.pad(x, widths, constant_values=value)
    return np.pad(x, widths, mode=_NUMPY_MODES[mode])


composite(OPS, "pad", _pad, _pad_reference,
          args=(Arg("pad", "ints", positional=True),
                Arg("mode", "choice", "constant", choices=PAD_MODES),
                Arg("value", "number", 0.0)), function="pad",
          samples=lambda rng: [([values(rng, (2, 3, 5))], {"pad": (1, 2), "value": 0.5}),
                               ([values(rng, (3, 4))], {"pad": (1, 1, 2, 0), "mode": "reflect"}),
                               ([values(rng, (2, 4))], {"pad": (2, 1), "mode": "replicate"}),
                               ([values(rng, (3, 4))], {"pad": (1, 3, 0, 1),
                                                        "mode": "circular"})],
          doc="pad the trailing axes: (before after) pairs from the last axis backwards "
              "(PyTorch's F.pad); constant, reflect, replicate or circular")


# -- tile ----------------------------------------------------------------------------------

def _tile(g, x, reps):
    """numpy's tile (PyTorch's repeat): each axis repeated reps times, by a broadcast
    of (1, d0, 1, d1, ...) to (r0, d0, r1, d1, ...)."""
    reps = tuple(reps)
    if any(r < 0 for r in reps):
        raise ShapeRuleError("tile's repetitions must be >= 0", actual=str(reps))
    n = max(len(reps), len(x.shape))
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - len(x.shape)) + tuple(x.shape)
    spread = tuple(d for size in shape for d in (1, size))
    wide = tuple(d for r, size in zip(reps, shape) for d in (r, size))
    b = g.apply("broadcast_to", g.apply("reshape", x, shape=spread), shape=wide)
    return g.apply("reshape", b, shape=tuple(r * size for r, size in zip(reps, shape)))


composite(OPS, "tile", _tile, lambda x, reps: np.tile(x, reps),
          args=(Arg("reps", "ints", positional=True, varargs=True),),
          lisp=("tile", "repeat"),
          samples=lambda rng: [([values(rng, (2, 3))], {"reps": (2, 1)}),
                               ([values(rng, (3,))], {"reps": (2, 2)}),
                               ([values(rng, (2, 1, 2))], {"reps": (3,)})],
          doc="x repeated along each axis (numpy's tile; PyTorch's x.repeat, also a "
              "method name here)")


# -- split, chunk ----------------------------------------------------------------------------

def _bounds(n: int, sizes) -> list[tuple[int, int]]:
    if isinstance(sizes, int):
        if sizes <= 0:
            raise ShapeRuleError("a split size must be positive", actual=str(sizes))
        return [(a, min(a + sizes, n)) for a in range(0, n, sizes)] or [(0, 0)]
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise ShapeRuleError("the sections must add up to the axis",
                             expected=f"sizes >= 0 summing to {n}", actual=str(tuple(sizes)))
    starts = np.cumsum((0,) + tuple(sizes))
    return [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]


def _split(g, x, sizes, axis=0):
    """PyTorch's split: pieces of `sizes` elements (the last may be smaller), or of
    each of a list of sizes."""
    ax = norm_axis(axis, len(x.shape))
    return tuple(build.slice_axis(g, x, ax, a, b) for a, b in _bounds(x.shape[ax], sizes))


def _split_reference(x, sizes, axis=0):
    bounds = _bounds(x.shape[axis], sizes)
    return tuple(np.take(x, np.arange(a, b), axis=axis) for a, b in bounds)


composite(OPS, "split", _split, _split_reference,
          args=(Arg("sizes", "sizes", positional=True), Arg("axis", "axis", 0)),
          returns="list",
          samples=lambda rng: [([values(rng, (5, 3))], {"sizes": 2}),
                               ([values(rng, (2, 6))], {"sizes": (1, 3, 2), "axis": 1})],
          doc="pieces along axis of `sizes` elements each (the last may be smaller), or "
              "of each size in a list (a Lisp list of tensors, a Python tuple)")


def _chunk(g, x, chunks, axis=0):
    """PyTorch's chunk: pieces of ceil(n / chunks) (so maybe fewer than chunks)."""
    if chunks <= 0:
        raise ShapeRuleError("chunks must be positive", actual=str(chunks))
    ax = norm_axis(axis, len(x.shape))
    return _split(g, x, max(1, -(-x.shape[ax] // chunks)), ax)


composite(OPS, "chunk", _chunk,
          lambda x, chunks, axis=0: _split_reference(
              x, max(1, -(-x.shape[axis] // chunks)), axis),
          args=(Arg("chunks", "int", positional=True), Arg("axis", "axis", 0)),
          returns="list",
          samples=lambda rng: [([values(rng, (7, 2))], {"chunks": 3}),
                               ([values(rng, (2, 4))], {"chunks": 2, "axis": 1})],
          doc="about `chunks` equal pieces along axis (PyTorch's chunk)")


# -- tril, triu ----------------------------------------------------------------------------

def _triangle(name: str):
    def triangle(g, x, diagonal=0):
        if len(x.shape) < 2:
            raise ShapeRuleError(f"{name} needs a matrix (rank >= 2)", actual=fmt(x.shape))
        n, m = x.shape[-2:]
        rows = build.iota_along(g, n, 0, 2)
        cols = build.iota_along(g, m, 1, 2)
        offset = g.apply("sub", cols, rows)                        # j - i
        edge = build.scalar(g, diagonal, "i64")
        keep = g.apply("le" if name == "tril" else "ge", offset, edge)
        return g.apply("where", keep, x, build.scalar(g, 0, x.dtype))
    triangle.__name__ = name
    return triangle


for _name, _fn, _part in (("tril", np.tril, "on and below"), ("triu", np.triu, "on and above")):
    composite(OPS, _name, _triangle(_name),
              lambda x, diagonal=0, _fn=_fn: _fn(x, diagonal),
              args=(Arg("diagonal", "int", 0, positional=True),),
              samples=lambda rng: [([values(rng, (4, 5))], {}),
                                   ([values(rng, (2, 3, 3))], {"diagonal": 1}),
                                   ([values(rng, (3, 4))], {"diagonal": -1})],
              doc=f"the last two axes' elements {_part} the diagonal (shifted by diagonal), "
                  "0 elsewhere")
