"""Ops with no tensor inputs: `full` (a constant fill), `iota` (indices along an
axis) and `const` (a literal array); the compositions zeros, ones and causal_mask."""

from __future__ import annotations

from math import prod

from sexpgpu.ir import build
from sexpgpu.ir.ops._define import composite
from sexpgpu.ir.ops._sampling import SPECIAL_VALUES
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import E_DTYPE, ShapeRuleError
from sexpgpu.ir.shapes import axis as norm_axis
from sexpgpu.ir.types import DTYPES, TensorType
from sexpgpu.lazynumpy import np

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
                 doc="a tensor of one value (its scalar body formats {value})",
                 inputs=(), args=(Arg("shape", "shape", positional=True),
                                  Arg("value", "number", positional=True),
                                  Arg("dtype", "dtype", "f32")),
                 lisp=("full",), function="full"))


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
                 doc="each element is its index along axis",
                 inputs=(), args=(Arg("shape", "ints", positional=True),
                                  Arg("axis", "axis", 0), Arg("dtype", "dtype", "i64")),
                 lisp=("iota",), function="iota"))


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
                 doc="a literal array: values (flat, row-major) in a shape",
                 inputs=(), args=(Arg("shape", "shape", positional=True),
                                  Arg("value", "numbers", positional=True),
                                  Arg("dtype", "dtype", "f32")),
                 lisp=("const",), function="const"))


# -- compositions ----------------------------------------------------------------------

def _zeros(g, shape: tuple[int, ...], dtype: str = "f32"):
    return g.apply("full", shape=tuple(shape), dtype=dtype, value=0)


def _ones(g, shape: tuple[int, ...], dtype: str = "f32"):
    return g.apply("full", shape=tuple(shape), dtype=dtype, value=1)


_FILL_ARGS = (Arg("shape", "shape", positional=True), Arg("dtype", "dtype", "f32"))
composite(OPS, "zeros", _zeros, lambda shape, dtype="f32": np.zeros(shape), inputs=(),
          args=_FILL_ARGS, method=None, function="zeros",
          samples=lambda rng: [([], {"shape": (2, 3)}), ([], {"shape": (), "dtype": "i64"})],
          doc="a tensor of zeros")
composite(OPS, "ones", _ones, lambda shape, dtype="f32": np.ones(shape), inputs=(),
          args=_FILL_ARGS, method=None, function="ones",
          samples=lambda rng: [([], {"shape": (2, 3)}), ([], {"shape": (4,), "dtype": "bool"})],
          doc="a tensor of ones")
composite(OPS, "causal_mask", build.causal_mask,
          lambda t: np.tril(np.ones((t, t), dtype=bool)), inputs=(),
          args=(Arg("t", "int", positional=True),), method=None, function="causal_mask",
          samples=lambda rng: [([], {"t": 4}), ([], {"t": 1})],
          doc="bool (t t): true where column <= row (what a position may attend to)")
