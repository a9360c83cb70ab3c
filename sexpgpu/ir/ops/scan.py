"""Ops along one axis whose outputs depend on a whole row or its prefix: the
primitives cumsum and cumprod (scans) and sort (values and indices, stable), and
the compositions argsort and topk over sort."""

from __future__ import annotations

from sexpgpu.ir import build
from sexpgpu.ir.ops._define import composite
from sexpgpu.ir.ops._sampling import distinct, ints, values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError, require_dtype
from sexpgpu.ir.shapes import axis as norm_axis
from sexpgpu.ir.types import FLOAT_DTYPES, INT_DTYPES, TensorType
from sexpgpu.lazynumpy import np

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []

NUMERIC = FLOAT_DTYPES | INT_DTYPES


# -- cumsum, cumprod ---------------------------------------------------------------------

def _scan_infer(name: str):
    def infer(types: list[TensorType], attrs: dict) -> TensorType:
        x = types[0]
        require_dtype(x, NUMERIC, f"{name}'s argument")
        norm_axis(attrs.get("axis", -1), x.ndim)
        return x
    return infer


def _scan_reference(fn):
    def reference(x: np.ndarray, axis: int = -1, reverse: bool = False) -> np.ndarray:
        if not reverse:
            return fn(x, axis=axis)
        return np.flip(fn(np.flip(x, axis), axis=axis), axis)
    return reference


def _cumsum_vjp(g, node, cts):
    # each input reaches every later (earlier, reversed) output: the reverse scan
    return [g.apply("cumsum", cts[0], axis=node.attrs.get("axis", -1),
                    reverse=not node.attrs.get("reverse", False))]


def _cumprod_vjp(g, node, cts):
    """d y_k / d x_i = the product of x_j, j <= k and j != i (for k >= i): exact where x
    holds zeros, at n^2 per row. With i on the scan axis and k after it,
    c[.., i, k, ..] = cumprod over k of x with x_i replaced by 1."""
    x, ct = node.inputs[0], cts[0]
    n_dims = len(x.shape)
    ax = norm_axis(node.attrs.get("axis", -1), n_dims)
    reverse = node.attrs.get("reverse", False)
    n = x.shape[ax]
    i = build.iota_along(g, n, ax, n_dims + 1)
    k = build.iota_along(g, n, ax + 1, n_dims + 1)
    others = g.apply("where", g.apply("eq", i, k), build.scalar(g, 1.0, x.dtype),
                     build.unsqueeze(g, x, ax))                  # [.., n(i), n(k), ..]
    c = g.apply("cumprod", others, axis=ax + 1, reverse=reverse)
    reached = g.apply("le" if reverse else "ge", k, i)           # y_k depends on x_i
    terms = g.apply("where", reached, g.apply("mul", build.unsqueeze(g, ct, ax), c),
                    build.scalar(g, 0.0, x.dtype))
    return [g.apply("sum", terms, axes=(ax + 1,), keepdims=False)]


def _scan_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (3, 4))], {"axis": 1, "reverse": False}),
            ([values(rng, (2, 3, 5))], {"axis": 0, "reverse": True}),
            ([values(rng, (7,))], {"axis": -1, "reverse": False}),
            ([ints(rng, (2, 5), 4)], {"axis": 1, "reverse": True}),
            ([values(rng, (0, 3))], {"axis": 1, "reverse": False})]


_SCAN_ARGS = (Arg("axis", "axis", -1), Arg("reverse", "flag", False))
for _name, _fn, _vjp, _what in (("cumsum", np.cumsum, _cumsum_vjp, "sums"),
                                ("cumprod", np.cumprod, _cumprod_vjp, "products")):
    OPS.append(OpDef(
        _name, _scan_infer(_name), _scan_reference(_fn), _vjp, kind="opaque",
        samples=_scan_samples, args=_SCAN_ARGS, lisp=(_name,), method=_name, integers="count",
        doc=f"running {_what} along axis, in order (from the end with reverse); "
            + ("its VJP is the reverse cumsum" if _name == "cumsum"
               else "its VJP is exact with zeros, n^2 per row")))


# -- sort ------------------------------------------------------------------------------

def _sort_infer(types: list[TensorType], attrs: dict) -> tuple[TensorType, TensorType]:
    x = types[0]
    require_dtype(x, NUMERIC, "sort's argument")
    norm_axis(attrs.get("axis", -1), x.ndim)
    return x, TensorType(x.shape, "i64")


def _sort_reference(x: np.ndarray, axis: int = -1, descending: bool = False):
    """Stable; NaN is larger than everything (last ascending, first descending)."""
    axis = axis % x.ndim
    moved = np.moveaxis(x, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    order = np.empty(rows.shape, np.int64)
    for r, row in enumerate(rows):
        if descending:
            order[r] = np.lexsort((-row, ~np.isnan(row)))
        else:
            order[r] = np.argsort(row, kind="stable")
    idx = np.moveaxis(order.reshape(moved.shape), -1, axis)
    return np.take_along_axis(x, idx, axis), idx


def _sort_vjp(g, node, cts):
    # values[.., k, ..] = x[.., idx[k], ..]: x's cotangent gathers the values' at the
    # inverse permutation (the argsort of idx); a compare-and-sum gather, n^2 a row
    ct = cts[0]
    if ct is None:
        return [None]
    ax = norm_axis(node.attrs.get("axis", -1), len(node.inputs[0].shape))
    _, inverse = g.apply("sort", node.outputs[1], axis=ax, descending=False)
    return [build.take_along_axis(g, ct, inverse, ax)]


def _sort_samples(rng: np.random.Generator) -> list:
    return [([distinct(rng, (3, 5))], {"axis": -1, "descending": False}),
            ([distinct(rng, (4, 2, 3))], {"axis": 0, "descending": True}),
            ([ints(rng, (3, 7), 3)], {"axis": 1, "descending": True}),
            ([ints(rng, (2, 6), 2)], {"axis": -1, "descending": False})]


OPS.append(OpDef(
    "sort", _sort_infer, _sort_reference, _sort_vjp, kind="opaque", samples=_sort_samples,
    args=(Arg("axis", "axis", -1), Arg("descending", "flag", False)), returns="values",
    lisp=("sort",), method="sort",
    doc="the values sorted along axis and their indices (two results); stable, NaN the "
        "largest; an insertion sort per row (rows of thousands at most)"))


def _argsort(g, x, axis=-1, descending=False):
    return g.apply("sort", x, axis=axis, descending=descending)[1]


composite(OPS, "argsort", _argsort,
          lambda x, axis=-1, descending=False: _sort_reference(x, axis, descending)[1],
          args=(Arg("axis", "axis", -1), Arg("descending", "flag", False)),
          samples=_sort_samples, doc="the indices that sort x along axis (stable)")


def _topk(g, x, k, axis=-1, largest=True):
    ax = norm_axis(axis, len(x.shape))
    if not 0 <= k <= x.shape[ax]:
        raise ShapeRuleError(f"k must be in [0, {x.shape[ax]}], the size of axis {ax}",
                             actual=str(k))
    vals, idx = g.apply("sort", x, axis=ax, descending=largest)
    return build.slice_axis(g, vals, ax, 0, k), build.slice_axis(g, idx, ax, 0, k)


def _topk_reference(x, k, axis=-1, largest=True):
    vals, idx = _sort_reference(x, axis, largest)
    window = (slice(None),) * (axis % x.ndim) + (slice(0, k),)
    return vals[window], idx[window]


composite(OPS, "topk", _topk, _topk_reference,
          args=(Arg("k", "int", positional=True), Arg("axis", "axis", -1),
                Arg("largest", "flag", True)), returns="values",
          samples=lambda rng: [([distinct(rng, (3, 6))], {"k": 2}),
                               ([distinct(rng, (5, 2))], {"k": 3, "axis": 0, "largest": False})],
          doc="the k largest (smallest) values along axis, sorted, and their indices")
