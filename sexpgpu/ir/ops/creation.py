"""Ops with no tensor inputs: `full` (a constant fill), `iota` (indices along an
axis) and `const` (a literal array). zeros/ones are `full`."""

from __future__ import annotations

from math import prod

import numpy as np

from sexpgpu.ir.ops._sampling import SPECIAL_VALUES
from sexpgpu.ir.ops.opdef import OpDef
from sexpgpu.ir.shapes import E_DTYPE, ShapeRuleError
from sexpgpu.ir.shapes import axis as norm_axis
from sexpgpu.ir.types import DTYPES, TensorType

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []


def _shape_dtype(attrs: dict) -> tuple[tuple[int, ...], str]:
    shape = tuple(attrs["shape"])
    if any((not isinstance(d, int)) or d < 0 for d in shape):
        raise ShapeRuleError("a shape needs non-negative integer sizes", actual=str(shape))
    dtype = attrs.get("dtype", "f32")
    if dtype not in DTYPES:
        raise ShapeRuleError("unknown dtype", expected=" | ".join(DTYPES), actual=repr(dtype),
                             code=E_DTYPE)
    return shape, dtype


def _full_infer(types: list[TensorType], attrs: dict) -> TensorType:
    return TensorType(*_shape_dtype(attrs))


def _full_reference(shape: tuple[int, ...], dtype: str, value: float) -> np.ndarray:
    return np.full(shape, value)


def _full_specials(rng: np.random.Generator) -> list:
    return [([], {"shape": (2,), "dtype": dtype, "value": float(v)})
            for dtype in ("f32", "bf16") for v in SPECIAL_VALUES]


OPS.append(OpDef("full", _full_infer, _full_reference, None, kind="elementwise", scalar="{value}",
                 samples=lambda rng: [([], {"shape": (2, 3), "dtype": "f32", "value": 1.5}),
                                      ([], {"shape": (), "dtype": "i64", "value": 7}),
                                      ([], {"shape": (0, 2), "dtype": "bool", "value": True})],
                 extra={"specials": _full_specials},
                 doc="attrs shape, dtype, value; no inputs; its scalar body formats {value}"))


def _iota_infer(types: list[TensorType], attrs: dict) -> TensorType:
    shape, dtype = _shape_dtype(attrs)
    norm_axis(attrs.get("axis", 0), len(shape))
    return TensorType(shape, dtype)


def _iota_reference(shape: tuple[int, ...], dtype: str, axis: int = 0) -> np.ndarray:
    ax = axis % len(shape)
    line = np.arange(shape[ax]).reshape([-1 if i == ax else 1 for i in range(len(shape))])
    return np.broadcast_to(line, shape).copy()


OPS.append(OpDef("iota", _iota_infer, _iota_reference, None, kind="opaque",
                 samples=lambda rng: [([], {"shape": (4,), "dtype": "i64", "axis": 0}),
                                      ([], {"shape": (2, 5), "dtype": "f32", "axis": 1}),
                                      ([], {"shape": (3, 1), "dtype": "i32", "axis": -2})],
                 doc="attrs shape, dtype, axis: element = its index along axis"))


def _const_infer(types: list[TensorType], attrs: dict) -> TensorType:
    shape, dtype = _shape_dtype(attrs)
    if len(attrs["value"]) != prod(shape):
        raise ShapeRuleError("a constant's values do not fill its shape",
                             expected=f"{prod(shape)} values", actual=f"{len(attrs['value'])}")
    return TensorType(shape, dtype)


def _const_reference(shape: tuple[int, ...], dtype: str, value: tuple) -> np.ndarray:
    return np.asarray(value).reshape(shape)


OPS.append(OpDef("const", _const_infer, _const_reference, None, kind="opaque",
                 samples=lambda rng: [([], {"shape": (2, 2), "dtype": "f32",
                                            "value": (1.0, 2.0, 3.0, 4.0)})],
                 extra={"specials": lambda rng: [([], {
                     "shape": (2, 7), "dtype": "f32",
                     "value": tuple(float(v) for v in SPECIAL_VALUES)})]},
                 doc="attrs shape, dtype, value (a flat tuple, row-major): a literal array"))
