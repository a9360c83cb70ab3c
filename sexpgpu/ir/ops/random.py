"""Dropout from the counter-based generator in `ir/rng.py`: element i of
the output keeps x[i] when uniform(seed, stream, i) >= p. The seed is a tensor
input (role "rng"), so each step draws a new mask without recompiling."""

from __future__ import annotations

import numpy as np

from sexpgpu.ir.ops._sampling import values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.rng import uniform_array
from sexpgpu.ir.shapes import ShapeRuleError, fmt, require_dtype, require_float
from sexpgpu.ir.types import INT_DTYPES, TensorType

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []


def _dropout_infer(types: list[TensorType], attrs: dict) -> TensorType:
    x, seed = types
    require_float(x, "dropout's argument")
    require_dtype(seed, INT_DTYPES, "dropout's seed")
    if seed.shape != ():
        raise ShapeRuleError("the seed must be a scalar", expected="()", actual=fmt(seed.shape))
    if not 0.0 <= attrs["p"] < 1.0:
        raise ShapeRuleError("dropout probability p must be in [0, 1)", actual=str(attrs["p"]))
    return x


def keep_mask(seed: int, stream: int, shape: tuple[int, ...], p: float) -> np.ndarray:
    """The elements dropout keeps: the same bits on every launcher."""
    return uniform_array(int(seed), int(stream), tuple(shape)) >= np.float32(p)


def _dropout_reference(x: np.ndarray, seed: np.ndarray, p: float, stream: int = 0) -> np.ndarray:
    mask = keep_mask(int(seed), stream, x.shape, p)
    return np.where(mask, x * (1.0 / (1.0 - p)), 0.0).astype(x.dtype)


def _dropout_vjp(g, node, cts):
    # the same mask (same seed, stream and element index) scales the cotangent
    return [g.apply("dropout", cts[0], node.inputs[1], **node.attrs), None]


def _dropout_build(g, x, seed, p: float, stream: int = 0):
    """p = 0 keeps everything: no kernel."""
    return x if p == 0 else g.apply("dropout", x, seed, p=p, stream=stream)


def _dropout_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (4, 5)), np.array(7)], {"p": 0.3, "stream": 1}),
            ([values(rng, (0, 3)), np.array(1)], {"p": 0.5, "stream": 0})]


OPS.append(OpDef("dropout", _dropout_infer, _dropout_reference, _dropout_vjp, kind="opaque",
                 samples=_dropout_samples, extra={"rng": "uniform"},
                 doc="zero each element with probability p, scale the rest by 1/(1-p); "
                     "Lisp: while training only, the identity in evaluate graphs",
                 inputs=("x", "seed:rng"),
                 args=(Arg("p", "number", positional=True), Arg("stream", "stream", 0)),
                 lisp=("dropout",), function="dropout", integers="reject",
                 build=_dropout_build, train_only=True))
