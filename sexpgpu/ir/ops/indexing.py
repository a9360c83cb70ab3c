"""Gather and its transpose: `take` (embedding lookup: a table indexed by an
integer tensor) and `scatter_add` (take's VJP). one_hot, take_along_axis and
masked_fill are compositions in `sexpgpu.ir.build`."""

from __future__ import annotations

import numpy as np

from sexpgpu.ir.ops._sampling import ints, values
from sexpgpu.ir.ops.opdef import OpDef
from sexpgpu.ir.shapes import ShapeRuleError, fmt, require_dtype
from sexpgpu.ir.shapes import axis as norm_axis
from sexpgpu.ir.types import INT_DTYPES, TensorType

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []


def _take_infer(types: list[TensorType], attrs: dict) -> TensorType:
    x, idx = types
    require_dtype(idx, INT_DTYPES, "take's indices (argument 2)")
    ax = norm_axis(attrs.get("axis", 0), x.ndim)
    return TensorType(x.shape[:ax] + idx.shape + x.shape[ax + 1:], x.dtype)


def _take_reference(x: np.ndarray, idx: np.ndarray, axis: int = 0) -> np.ndarray:
    return np.take(x, idx, axis=axis)


def _take_vjp(g, node, cts):
    x, idx = node.inputs
    ax = norm_axis(node.attrs.get("axis", 0), len(x.shape))
    return [g.apply("scatter_add", cts[0], idx, axis=ax, size=x.shape[ax]), None]


def _take_samples(rng: np.random.Generator) -> list:
    # repeated indices check that the VJP accumulates
    return [([values(rng, (5, 3)), np.array([[0, 4, 4], [1, 0, 2]])], {"axis": 0}),
            ([values(rng, (2, 6)), ints(rng, (4,), 6)], {"axis": 1}),
            ([values(rng, (7, 2)), ints(rng, (0,), 7)], {"axis": 0}),
            ([values(rng, (4,)), np.array(3)], {"axis": 0})]


OPS.append(OpDef("take", _take_infer, _take_reference, _take_vjp, kind="opaque",
                 samples=_take_samples,
                 doc="x [.., V, ..], idx int [I..] -> [.., I.., ..] along attrs axis (embedding)"))


def _scatter_add_infer(types: list[TensorType], attrs: dict) -> TensorType:
    src, idx = types
    require_dtype(idx, INT_DTYPES, "scatter_add's indices (argument 2)")
    ax, size = attrs.get("axis", 0), attrs["size"]
    if src.shape[ax:ax + idx.ndim] != idx.shape:
        raise ShapeRuleError("the source's axes do not match the indices",
                             expected=f"axes {ax}.. of the source {fmt(idx.shape)}",
                             actual=fmt(src.shape))
    return TensorType(src.shape[:ax] + (size,) + src.shape[ax + idx.ndim:], src.dtype)


def _scatter_add_reference(src: np.ndarray, idx: np.ndarray, axis: int, size: int) -> np.ndarray:
    out = np.zeros(src.shape[:axis] + (size,) + src.shape[axis + idx.ndim:], dtype=src.dtype)
    np.add.at(out, (slice(None),) * axis + (idx,), src)
    return out


def _scatter_add_vjp(g, node, cts):
    return [g.apply("take", cts[0], node.inputs[1], axis=node.attrs.get("axis", 0)), None]


def _scatter_add_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (2, 3, 4)), np.array([[0, 2, 2], [1, 0, 4]])],
             {"axis": 0, "size": 5}),
            ([values(rng, (3, 2)), ints(rng, (2,), 3)], {"axis": 1, "size": 3})]


OPS.append(OpDef("scatter_add", _scatter_add_infer, _scatter_add_reference, _scatter_add_vjp,
                 kind="opaque", samples=_scatter_add_samples,
                 doc="zeros with attrs size on attrs axis, src added at idx (take's VJP)"))
