"""Gather and its transpose: `take` (embedding lookup: a table indexed by an
integer tensor), `scatter_add` (take's VJP) and `check_index` (the index rule
alone, for compositions). one_hot, take_along_axis and masked_fill are
compositions in `sexpgpu.ir.build`.

The index rule, for every op here: an index into an axis of size n is valid in
[-n, n), a negative one counting from the end (numpy's `take`); any other is
E-INDEX, from the reference interpreter and from compiled kernels alike (which
read nothing for it, set an error flag, and the launcher raises)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sexpgpu.diagnostics import SexpError, define_code, error
from sexpgpu.ir import build
from sexpgpu.ir.ops._define import composite
from sexpgpu.ir.ops._sampling import distinct, ints, values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError, fmt, require_dtype
from sexpgpu.ir.shapes import axis as norm_axis
from sexpgpu.ir.types import INT_DTYPES, TensorType
from sexpgpu.lazynumpy import np

if TYPE_CHECKING:  # annotations only: graph.py imports the ops at run time
    from sexpgpu.ir.graph import Node

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []

E_INDEX = define_code(
    "E-INDEX", "index out of range",
    "An integer index into an axis of size n must lie in [-n, n); a negative index "
    "counts from the end. `take`, `scatter_add`, `take_along_axis` and `one_hot` check "
    "every index when the step runs (compiled kernels read nothing for a bad one and "
    "report it after the step); the results of that step are not meaningful.",
)


class IndexRangeError(Exception):
    """Raised by a reference on an index outside [-size, size); the interpreter
    (and the kernels' launcher, from its error flag) turn it into E-INDEX."""

    def __init__(self, value: int, size: int):
        super().__init__(f"index {value} out of range for size {size}")
        self.value, self.size = value, size


def index_error(node: Node, value: int, size: int) -> SexpError:
    """The E-INDEX diagnostic for `node`, the same from the reference and the
    kernels (a check_index names the composition it checks for, attrs `of`)."""
    op = node.attrs.get("of", node.op)
    return error(E_INDEX, f"{op}: index {value} is out of range for an axis of size {size}",
                 node.span, expected=f"an index in [{-size}, {size - 1}]" if size else
                 "no index (the axis is empty)", actual=str(value),
                 fix="check the data's labels or token ids against the table's size",
                 notes=list(node.notes))


def in_range(idx: np.ndarray, size: int) -> np.ndarray:
    """`idx` with negative entries counted from the end, or IndexRangeError for the
    first entry (row-major) outside [-size, size)."""
    idx = np.asarray(idx)
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        raise IndexRangeError(int(idx[bad].flat[0]), size)
    return np.where(idx < 0, idx + size, idx)


def _take_infer(types: list[TensorType], attrs: dict) -> TensorType:
    x, idx = types
    require_dtype(idx, INT_DTYPES, "take's indices (argument 2)")
    ax = norm_axis(attrs.get("axis", 0), x.ndim)
    return TensorType(x.shape[:ax] + idx.shape + x.shape[ax + 1:], x.dtype)


def _take_reference(x: np.ndarray, idx: np.ndarray, axis: int = 0) -> np.ndarray:
    return np.take(x, in_range(idx, x.shape[axis]), axis=axis)


def _take_vjp(g, node, cts):
    x, idx = node.inputs
    ax = norm_axis(node.attrs.get("axis", 0), len(x.shape))
    return [g.apply("scatter_add", cts[0], idx, axis=ax, size=x.shape[ax]), None]


def _take_samples(rng: np.random.Generator) -> list:
    # repeated indices check that the VJP accumulates; -1 counts from the end
    return [([values(rng, (5, 3)), np.array([[0, 4, 4], [1, 0, -1]])], {"axis": 0}),
            ([values(rng, (2, 6)), ints(rng, (4,), 6)], {"axis": 1}),
            ([values(rng, (7, 2)), ints(rng, (0,), 7)], {"axis": 0}),
            ([values(rng, (4,)), np.array(3)], {"axis": 0})]


def _take_indices(arrays: list, attrs: dict) -> dict[int, int]:
    x = np.shape(arrays[0])
    return {1: x[norm_axis(attrs.get("axis", 0), len(x))]}


OPS.append(OpDef("take", _take_infer, _take_reference, _take_vjp, kind="opaque",
                 samples=_take_samples, extra={"indices": _take_indices},
                 doc="x [.., V, ..], idx int [I..] -> [.., I.., ..] along axis "
                     "(embedding lookup); idx in [-V, V)",
                 inputs=("table", "idx:index"), args=(Arg("axis", "axis", 0),),
                 lisp=("take",), function="take"))


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
    np.add.at(out, (slice(None),) * axis + (in_range(idx, size),), src)
    return out


def _scatter_add_vjp(g, node, cts):
    return [g.apply("take", cts[0], node.inputs[1], axis=node.attrs.get("axis", 0)), None]


def _scatter_add_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (2, 3, 4)), np.array([[0, 2, 2], [1, 0, 4]])],
             {"axis": 0, "size": 5}),
            ([values(rng, (3, 2)), ints(rng, (2,), 3)], {"axis": 1, "size": 3})]


OPS.append(OpDef("scatter_add", _scatter_add_infer, _scatter_add_reference, _scatter_add_vjp,
                 kind="opaque", samples=_scatter_add_samples,
                 extra={"indices": lambda arrays, attrs: {1: attrs["size"]},
                        "reorders_sums": True},
                 doc="zeros with attrs size on attrs axis, src added at idx (take's VJP); "
                     "idx in [-size, size)", reached=("take",)))


# -- check_index -------------------------------------------------------------------

def _check_index_infer(types: list[TensorType], attrs: dict) -> TensorType:
    require_dtype(types[0], INT_DTYPES, "check_index's indices")
    if not isinstance(attrs.get("size"), int) or attrs["size"] < 0:
        raise ShapeRuleError("check_index needs a non-negative integer size",
                             actual=repr(attrs.get("size")))
    return types[0]


OPS.append(OpDef(
    "check_index", _check_index_infer,
    lambda idx, size, of=None: in_range(idx, size).astype(idx.dtype), None, kind="opaque",
    samples=lambda rng: [([np.array([[0, 3, -1], [-4, 2, 1]])], {"size": 4}),
                         ([ints(rng, (0,), 3)], {"size": 3})],
    extra={"indices": lambda arrays, attrs: {0: attrs["size"]}},
    doc="idx int, attrs size (and of, the name E-INDEX gives) -> idx in [0, size): "
        "negatives counted from the end, E-INDEX outside [-size, size) "
        "(take_along_axis and one_hot check through it)",
    reached=("one_hot", "take_along_axis")))


# -- compositions ----------------------------------------------------------------------

def _one_hot_reference(idx: np.ndarray, n: int, dtype: str = "f32") -> np.ndarray:
    return in_range(idx, n)[..., None] == np.arange(n)


composite(OPS, "one_hot", build.one_hot, _one_hot_reference,
          inputs=("idx:index",), args=(Arg("n", "int", positional=True),
                                       Arg("dtype", "dtype", "f32")),
          method=None, function="one_hot",
          samples=lambda rng: [([np.array([[0, 3], [-1, 2]])], {"n": 4}),
                               ([ints(rng, (5,), 3)], {"n": 3, "dtype": "bool"})],
          extra={"indices": lambda arrays, attrs: {0: attrs["n"]}},
          doc="idx [...] -> [..., n]: 1 where the last index equals idx (integer idx only)")


def _take_along_axis_reference(x: np.ndarray, idx: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.take_along_axis(x, in_range(idx, x.shape[axis]), axis=axis)


composite(OPS, "take_along_axis", build.take_along_axis, _take_along_axis_reference,
          inputs=("x", "idx:index"), args=(Arg("axis", "axis", -1),), method=None,
          function="take_along_axis",
          samples=lambda rng: [([distinct(rng, (3, 5)), np.array([[0], [4], [-2]])],
                                {"axis": -1}),
                               ([values(rng, (4, 2)), np.array([[3, 1], [0, 0]])], {"axis": 0})],
          extra={"indices": lambda arrays, attrs: {1: np.shape(arrays[0])[attrs["axis"]]},
                 "reorders_sums": True},
          doc="numpy's take_along_axis: x [.., V, ..], idx [.., M, ..] -> [.., M, ..]")
