"""Binary elementwise ops with numpy broadcasting (arithmetic, comparisons,
logic), `where` and `cast`. Both sides share one dtype: cast explicitly."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sexpgpu.ir.build import scalar, unbroadcast
from sexpgpu.ir.ops._sampling import BINARY_SHAPES, SPECIAL_VALUES, special_fill, values
from sexpgpu.ir.ops.opdef import OpDef
from sexpgpu.ir.shapes import E_DTYPE, ShapeRuleError, broadcast, require_dtype, same_dtype
from sexpgpu.ir.types import DTYPES, FLOAT_DTYPES, INT_DTYPES, TensorType

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []

NUMERIC = FLOAT_DTYPES | INT_DTYPES
NAMES = ("the left argument", "the right argument")


def _binary(name: str, reference: Callable, scalar_body: str, vjp: Callable | None,
            dtypes: frozenset[str] = NUMERIC, out_dtype: str | None = None,
            domains: tuple[str, str] = ("real", "real"), doc: str = "") -> None:
    """Define a broadcasting binary op; out dtype is the inputs' (or `out_dtype`)."""

    def infer(types: list[TensorType], attrs: dict) -> TensorType:
        dtype = same_dtype(types, NAMES)
        require_dtype(types[0], dtypes, f"{name}'s arguments")
        shape = broadcast(types[0].shape, types[1].shape, names=NAMES)
        return TensorType(shape, out_dtype or dtype)

    def samples(rng: np.random.Generator) -> list:
        if dtypes == frozenset({"bool"}):
            return [([rng.random(a) < 0.5, rng.random(b) < 0.5], {}) for a, b in BINARY_SHAPES]
        return [([values(rng, a, domains[0]), values(rng, b, domains[1])], {})
                for a, b in BINARY_SHAPES]

    OPS.append(OpDef(name, infer, reference, vjp, kind="elementwise", scalar=scalar_body,
                     samples=samples, doc=doc))


def _both(g, node, ct_a, ct_b):
    """Un-broadcast each input's cotangent back to that input's shape."""
    a, b = node.inputs
    return [None if ct_a is None else unbroadcast(g, ct_a, a.shape),
            None if ct_b is None else unbroadcast(g, ct_b, b.shape)]


def _add_vjp(g, node, cts):
    return _both(g, node, cts[0], cts[0])


_binary("add", np.add, "x0 + x1", _add_vjp, doc="a + b")


def _sub_vjp(g, node, cts):
    return _both(g, node, cts[0], g.apply("neg", cts[0]))


_binary("sub", np.subtract, "x0 - x1", _sub_vjp, doc="a - b")


def _mul_vjp(g, node, cts):
    a, b = node.inputs
    return _both(g, node, g.apply("mul", cts[0], b), g.apply("mul", cts[0], a))


_binary("mul", np.multiply, "x0 * x1", _mul_vjp, doc="a * b")


def _div_vjp(g, node, cts):
    # d(a/b)/db = -(a/b)/b
    b, y = node.inputs[1], node.outputs[0]
    ct_a = g.apply("div", cts[0], b)
    return _both(g, node, ct_a, g.apply("neg", g.apply("mul", ct_a, y)))


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # integer division truncates toward zero, as the kernels' C-style division does
    if np.issubdtype(np.result_type(a, b), np.integer):
        return np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))
    return np.true_divide(a, b)


_binary("div", _div, "x0 / x1", _div_vjp, FLOAT_DTYPES, domains=("real", "away"),
        doc="a / b (floats)")


def _pow_vjp(g, node, cts):
    # d/da = b a^(b-1); d/db = a^b log a (the base is taken positive)
    a, b = node.inputs
    y = node.outputs[0]
    da = g.apply("mul", b, g.apply("pow", a, g.apply("sub", b, scalar(g, 1.0, b.dtype))))
    db = g.apply("mul", y, g.apply("log", a))
    return _both(g, node, g.apply("mul", cts[0], da), g.apply("mul", cts[0], db))


_binary("pow", np.power, "x0 ** x1", _pow_vjp, FLOAT_DTYPES, domains=("positive", "real"),
        doc="a^b (floats; the gradient in b needs a > 0)")


def _choose_vjp(prefer_left: str) -> Callable:
    def vjp(g, node, cts):
        # ties send the gradient to the left argument
        a, b = node.inputs
        left = g.apply(prefer_left, a, b)
        zero = scalar(g, 0, cts[0].dtype)
        return _both(g, node, g.apply("where", left, cts[0], zero),
                     g.apply("where", left, zero, cts[0]))
    return vjp


# NaN on either side gives NaN, as numpy's: numba's max(a, b) is `b if b > a else a`,
# which keeps a NaN a but drops a NaN b, so a NaN b is taken explicitly
_binary("maximum", np.maximum, "(max(x0, x1) if x1 == x1 else x1)", _choose_vjp("ge"),
        doc="elementwise max; NaN if either is NaN")
_binary("minimum", np.minimum, "(min(x0, x1) if x1 == x1 else x1)", _choose_vjp("le"),
        doc="elementwise min; NaN if either is NaN")

for _name, _ref, _sym in (("lt", np.less, "<"), ("le", np.less_equal, "<="),
                          ("gt", np.greater, ">"), ("ge", np.greater_equal, ">="),
                          ("eq", np.equal, "=="), ("ne", np.not_equal, "!=")):
    _binary(_name, _ref, f"x0 {_sym} x1", None, NUMERIC | {"bool"}, out_dtype="bool",
            doc=f"a {_sym} b -> bool")

_binary("logical_and", np.logical_and, "x0 and x1", None, frozenset({"bool"}), doc="a and b")
_binary("logical_or", np.logical_or, "x0 or x1", None, frozenset({"bool"}), doc="a or b")


# -- where(cond, a, b) ----------------------------------------------------------

def _where_infer(types: list[TensorType], attrs: dict) -> TensorType:
    require_dtype(types[0], {"bool"}, "where's condition")
    dtype = same_dtype(types[1:], ("the true branch", "the false branch"))
    shape = broadcast(*(t.shape for t in types),
                      names=("the condition", "the true branch", "the false branch"))
    return TensorType(shape, dtype)


def _where_vjp(g, node, cts):
    c, a, b = node.inputs
    zero = scalar(g, 0, cts[0].dtype)
    return [None, unbroadcast(g, g.apply("where", c, cts[0], zero), a.shape),
            unbroadcast(g, g.apply("where", c, zero, cts[0]), b.shape)]


def _where_samples(rng: np.random.Generator) -> list:
    shapes = (((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), ()), ((2, 3), (3,), (2, 1)),
              ((0, 2), (1, 2), (0, 1)))
    return [([rng.random(c) < 0.5, values(rng, a), values(rng, b)], {}) for c, a, b in shapes]


OPS.append(OpDef("where", _where_infer, np.where, _where_vjp, kind="elementwise",
                 scalar="x1 if x0 else x2", samples=_where_samples,
                 doc="cond ? a : b, broadcasting all three"))


# -- cast -------------------------------------------------------------------------

def _cast_infer(types: list[TensorType], attrs: dict) -> TensorType:
    if attrs.get("dtype") not in DTYPES:
        raise ShapeRuleError("unknown target dtype", expected=" | ".join(DTYPES),
                             actual=repr(attrs.get("dtype")), code=E_DTYPE)
    return TensorType(types[0].shape, attrs["dtype"])


def _cast_vjp(g, node, cts):
    x = node.inputs[0]
    if x.dtype not in FLOAT_DTYPES:
        return [None]
    return [g.apply("cast", cts[0], dtype=x.dtype)]


def _cast_reference(x: np.ndarray, dtype: str) -> np.ndarray:
    # float -> int truncates toward zero (numpy and numba agree); the runner
    # rounds to the storage dtype (bf16 round-to-nearest-even)
    if dtype == "bool":
        return x != 0
    if dtype in INT_DTYPES:
        return np.trunc(x).astype(np.int64)
    return x.astype(np.float64) if x.dtype == np.bool_ else x


def _cast_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (3, 4))], {"dtype": "f16"}), ([values(rng, (5,))], {"dtype": "bf16"}),
            ([values(rng, (2, 3)) * 5], {"dtype": "i32"}), ([values(rng, (4,))], {"dtype": "bool"}),
            ([values(rng, (0, 2))], {"dtype": "f32"})]


# a float outside an integer dtype's range (inf, NaN, 3e38) has no integer value:
# numpy and C leave the cast undefined, so int targets are tried on finite values
_FINITE_VALUES = (0.0, -0.0, 1e-40, -1e-40, 1e4, -1e4, 1.5, -0.5, 2.0, -2.7)


def _cast_specials(rng: np.random.Generator) -> list:
    return [([special_fill((len(pool),), pool)], {"dtype": dtype})
            for dtype in ("f16", "bf16", "i32", "i64", "bool", "f32")
            for pool in [_FINITE_VALUES if dtype in INT_DTYPES else SPECIAL_VALUES]]


OPS.append(OpDef("cast", _cast_infer, _cast_reference, _cast_vjp, kind="elementwise",
                 scalar="x0", samples=_cast_samples, extra={"specials": _cast_specials},
                 doc="convert to attrs dtype; the kernel's store does the conversion "
                     "(bf16: round to nearest even), the body is the identity"))
