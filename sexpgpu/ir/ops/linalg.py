"""Batched matmul with numpy broadcasting of the batch axes (rank >= 2 each;
the 1-D cases are unsqueezes in `sexpgpu.ir.build.matmul`)."""

from __future__ import annotations

import numpy as np

from sexpgpu.ir import build
from sexpgpu.ir.build import transpose, unbroadcast
from sexpgpu.ir.ops._sampling import values
from sexpgpu.ir.ops.opdef import OpDef
from sexpgpu.ir.shapes import ShapeRuleError, broadcast, fmt, require_float, same_dtype
from sexpgpu.ir.types import TensorType

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []


def _matmul_infer(types: list[TensorType], attrs: dict) -> TensorType:
    a, b = types
    dtype = same_dtype(types, ("the left matrix", "the right matrix"))
    require_float(a, "matmul's arguments")
    for t, name in ((a, "left"), (b, "right")):
        if t.ndim < 2:
            raise ShapeRuleError(f"the {name} argument needs rank >= 2",
                                 expected="(..., m, k) @ (..., k, n)", actual=fmt(t.shape),
                                 fix="unsqueeze it (the Tensor API's @ does this for 1-D)")
    if a.shape[-1] != b.shape[-2]:
        k = a.shape[-1]
        raise ShapeRuleError("inner dimensions differ",
                             expected=f"(..., {k}) @ ({k}, ...)",
                             actual=f"{fmt(a.shape)} @ {fmt(b.shape)}",
                             fix=f"give the right argument {k} rows, or transpose one side")
    batch = broadcast(a.shape[:-2], b.shape[:-2], names=("left batch", "right batch"))
    return TensorType(batch + (a.shape[-2], b.shape[-1]), dtype)


def _matmul_vjp(g, node, cts):
    a, b = node.inputs
    ct = cts[0]                                                  # [..., m, n]
    da = g.apply("matmul", ct, transpose(g, b))                  # [..., m, k]
    db = g.apply("matmul", transpose(g, a), ct)                  # [..., k, n]
    return [unbroadcast(g, da, a.shape), unbroadcast(g, db, b.shape)]


def _matmul_samples(rng: np.random.Generator) -> list:
    pairs = (((3, 4), (4, 5)), ((2, 3, 4), (4, 1)), ((1, 3), (2, 3, 5)), ((2, 1, 2, 3), (3, 3, 2)),
             ((0, 4), (4, 2)), ((3, 0), (0, 2)))
    return [([values(rng, a), values(rng, b)], {}) for a, b in pairs]


OPS.append(OpDef("matmul", _matmul_infer, np.matmul, _matmul_vjp, kind="opaque",
                 samples=_matmul_samples, extra={"reorders_sums": True},
                 doc="(..., m, k) @ (..., k, n) -> (..., m, n), batch axes broadcast; "
                     "the front ends take numpy's 1-D sides too",
                 inputs=("a", "b"), lisp=("@", "matmul"), method="__matmul__",
                 function="matmul", integers="reject", build=build.matmul))
