"""Binary elementwise ops with numpy broadcasting (arithmetic, comparisons,
logic), `where` and `cast`. Both sides share one dtype: cast explicitly."""

from __future__ import annotations

from collections.abc import Callable

from sexpgpu.ir import build
from sexpgpu.ir.build import scalar, unbroadcast
from sexpgpu.ir.ops._define import BOOL, NUMERIC, binary, both, composite
from sexpgpu.ir.ops._sampling import SPECIAL_VALUES, special_fill, values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import E_DTYPE, ShapeRuleError, broadcast, require_dtype, same_dtype
from sexpgpu.ir.types import DTYPES, FLOAT_DTYPES, INT_DTYPES, TensorType
from sexpgpu.lazynumpy import np

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []


def _add_vjp(g, node, cts):
    return both(g, node, cts[0], cts[0])


binary(OPS, "add", np.add, "x0 + x1", _add_vjp, lisp=("+",), method="__add__", doc="a + b")


def _sub_vjp(g, node, cts):
    return both(g, node, cts[0], g.apply("neg", cts[0]))


binary(OPS, "sub", np.subtract, "x0 - x1", _sub_vjp, lisp=("-",), method="__sub__",
       doc="a - b")


def _mul_vjp(g, node, cts):
    a, b = node.inputs
    return both(g, node, g.apply("mul", cts[0], b), g.apply("mul", cts[0], a))


binary(OPS, "mul", np.multiply, "x0 * x1", _mul_vjp, lisp=("*",), method="__mul__",
       doc="a * b")


def _div_vjp(g, node, cts):
    # d(a/b)/db = -(a/b)/b
    b, y = node.inputs[1], node.outputs[0]
    ct_a = g.apply("div", cts[0], b)
    return both(g, node, ct_a, g.apply("neg", g.apply("mul", ct_a, y)))


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # integer division truncates toward zero, as the kernels' C-style division does
    if np.issubdtype(np.result_type(a, b), np.integer):
        return np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))
    return np.true_divide(a, b)


binary(OPS, "div", _div, "x0 / x1", _div_vjp, FLOAT_DTYPES, domains=("real", "away"),
       lisp=("/",), method="__truediv__", doc="a / b (floats)")


def _pow_vjp(g, node, cts):
    # d/da = b a^(b-1); d/db = a^b log a (the base is taken positive)
    a, b = node.inputs
    y = node.outputs[0]
    da = g.apply("mul", b, g.apply("pow", a, g.apply("sub", b, scalar(g, 1.0, b.dtype))))
    db = g.apply("mul", y, g.apply("log", a))
    return both(g, node, g.apply("mul", cts[0], da), g.apply("mul", cts[0], db))


binary(OPS, "pow", np.power, "x0 ** x1", _pow_vjp, FLOAT_DTYPES, domains=("positive", "real"),
       lisp=("expt",), method="__pow__", doc="a^b (floats; the gradient in b needs a > 0)")


def _choose_vjp(prefer_left: str) -> Callable:
    def vjp(g, node, cts):
        # ties send the gradient to the left argument
        a, b = node.inputs
        left = g.apply(prefer_left, a, b)
        zero = scalar(g, 0, cts[0].dtype)
        return both(g, node, g.apply("where", left, cts[0], zero),
                    g.apply("where", left, zero, cts[0]))
    return vjp


# NaN on either side gives NaN, as numpy's: numba's max(a, b) is `b if b > a else a`,
# which keeps a NaN a but drops a NaN b, so a NaN b is taken explicitly
binary(OPS, "maximum", np.maximum, "(max(x0, x1) if x1 == x1 else x1)", _choose_vjp("ge"),
       lisp=("max",), function="maximum", doc="elementwise max; NaN if either is NaN")
binary(OPS, "minimum", np.minimum, "(min(x0, x1) if x1 == x1 else x1)", _choose_vjp("le"),
       lisp=("min",), function="minimum", doc="elementwise min; NaN if either is NaN")

for _name, _ref, _sym, _lisp, _method in (
        ("lt", np.less, "<", ("<",), "__lt__"), ("le", np.less_equal, "<=", ("<=",), "__le__"),
        ("gt", np.greater, ">", (">",), "__gt__"),
        ("ge", np.greater_equal, ">=", (">=",), "__ge__"),
        ("eq", np.equal, "==", ("=", "=="), "eq"), ("ne", np.not_equal, "!=", ("/=",), "ne")):
    binary(OPS, _name, _ref, f"x0 {_sym} x1", None, NUMERIC | BOOL, out_dtype="bool",
           lisp=_lisp, method=_method, doc=f"a {_sym} b -> bool")

def _atan2_vjp(g, node, cts):
    # d atan2(a, b) = (b da - a db) / (a^2 + b^2)
    a, b = node.inputs
    r2 = g.apply("add", g.apply("square", a), g.apply("square", b))
    ct = g.apply("div", cts[0], r2)
    return both(g, node, g.apply("mul", ct, b), g.apply("neg", g.apply("mul", ct, a)))


binary(OPS, "atan2", np.arctan2, "math.atan2(x0, x1)", _atan2_vjp, FLOAT_DTYPES,
       domains=("away", "away"), lisp=("atan2", "atan"), method="atan2", function="atan2",
       doc="the angle of (b, a): atan(a / b) in the right quadrant")

binary(OPS, "logical_and", np.logical_and, "x0 and x1", None, BOOL, function="logical_and",
       doc="a and b")
binary(OPS, "logical_or", np.logical_or, "x0 or x1", None, BOOL, function="logical_or",
       doc="a or b")


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
                 inputs=("cond:bool", "a", "b"), lisp=("where",), function="where",
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
                 args=(Arg("dtype", "dtype", positional=True),), lisp=("cast",), method="cast",
                 doc="convert to attrs dtype; the kernel's store does the conversion "
                     "(bf16: round to nearest even), the body is the identity"))


# -- compositions ----------------------------------------------------------------------

def _masked_fill_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (3, 4)), rng.random((3, 4)) < 0.5], {"value": -100.0}),
            ([values(rng, (2, 3)), rng.random((3,)) < 0.5], {"value": 0.0})]


composite(OPS, "masked_fill", build.masked_fill,
          lambda x, mask, value: np.where(mask, value, x),
          inputs=("x", "mask:bool"), args=(Arg("value", "number", positional=True),),
          method=None, function="masked_fill", samples=_masked_fill_samples,
          doc="value where mask is true, else x")


def _clamp(g, x, min=None, max=None):  # noqa: A002 - PyTorch's names
    """max(x, min), then min(., max): NaN stays NaN; min > max gives max (PyTorch's)."""
    y = x if min is None else g.apply("maximum", x, min)
    return y if max is None else g.apply("minimum", y, max)


def _clamp_reference(x, lo=None, hi=None):
    y = x if lo is None else np.maximum(x, lo)
    return y if hi is None else np.minimum(y, hi)


def _clamp_samples(rng: np.random.Generator) -> list:
    lo = values(rng, (3, 1)) - 0.5
    return [([values(rng, (3, 4)), lo, lo + 1.0], {}),
            ([values(rng, (5,)), values(rng, ())], {}),
            ([values(rng, (2, 3)), values(rng, (3,)), values(rng, (3,)) - 2.0], {})]


composite(OPS, "clamp", _clamp, _clamp_reference, inputs=("x", "min?", "max?"),
          lisp=("clamp", "clip"), method="clamp", function="clip", samples=_clamp_samples,
          doc="x limited to [min, max] (either may be nil/None; tensors or numbers)")
