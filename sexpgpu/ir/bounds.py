"""Index bounds: which integer inputs of a graph are indices into what size, read
from the graph itself. A `take` from an (n, d) table wants rows 0..n-1; a one-hot of
n classes (an `eq` against an `iota` of n) and a comparison with an argmax over n
want classes 0..n-1. Each index is followed back to the graph input it comes from,
through ops that keep its values (reshape, permute, broadcast, slice, integer casts)
and a constant shift (`(- y 1)`), so the data can be checked where it enters."""

from __future__ import annotations

from sexpgpu.diagnostics import Note, Span
from sexpgpu.ir.graph import Graph, Node, Value
from sexpgpu.ir.shapes import fmt
from sexpgpu.ir.types import INT_DTYPES
from sexpgpu.record import record

# ops whose output holds (some of) its first input's values, unchanged
KEEP_VALUES = frozenset({"reshape", "permute", "broadcast_to", "slice", "stop_gradient",
                         "check_index"})
# ops that place values along axes without changing them (the iota side of a one-hot)
LAYOUT = KEEP_VALUES | {"cast"}


@record(frozen=True)
class IndexBound:
    """Values of input `name` must lie in low..high-1 because of `use`, built at `span`."""

    name: str
    low: int
    high: int
    use: str
    span: Span | None = None
    notes: tuple[Note, ...] = ()


def index_bounds(graph: Graph) -> dict[str, IndexBound]:
    """Input name -> the tightest bound its uses as an index put on it."""
    found: dict[str, IndexBound] = {}
    for node in graph.nodes:
        for index, size, use in _index_uses(node):
            traced = _source(index)
            if traced is None:
                continue
            source, offset = traced
            bound = IndexBound(source.name or "", -offset, size - offset, use, node.span,
                               node.notes)
            found[bound.name] = both(found.get(bound.name), bound)
    return found


def both(old: IndexBound | None, new: IndexBound) -> IndexBound:
    """The values that satisfy both bounds, described by the one with the lower limit."""
    if old is None:
        return new
    first = new if new.high < old.high else old
    return IndexBound(first.name, max(old.low, new.low), min(old.high, new.high), first.use,
                      first.span, first.notes)


def _index_uses(node: Node) -> list[tuple[Value, int, str]]:
    """(index value, size, what it indexes) for each index this node reads."""
    if node.op == "take":
        table, idx = node.inputs
        axis = node.attrs.get("axis", 0) % len(table.shape)
        return [(idx, table.shape[axis], f"row of a {fmt(table.shape)} table (an embedding)")]
    if node.op in ("eq", "ne"):
        uses = []
        for this, other in (node.inputs, node.inputs[::-1]):
            classes = _classes(other)
            if classes is not None and this.dtype in INT_DTYPES:
                uses.append((this, *classes))
        return uses
    return []


def _classes(v: Value) -> tuple[int, str] | None:
    """The number of classes when `v` enumerates them: an iota of n (one-hot) or an
    argmax over n (accuracy), seen through layout ops."""
    while v.node is not None and v.node.op in LAYOUT:
        v = v.node.inputs[0]
    node = v.node
    if node is None:
        return None
    if node.op == "iota":
        shape = node.attrs["shape"]
        n = shape[node.attrs.get("axis", 0) % len(shape)]
        return n, f"class of a one-hot over {n} classes"
    if node.op == "argmax":
        x = node.inputs[0]
        n = x.shape[node.attrs["axis"] % len(x.shape)]
        return n, f"class compared with an argmax over {n} classes"
    return None


def _source(v: Value) -> tuple[Value, int] | None:
    """The graph input `v` holds the values of, plus a constant offset, if any."""
    offset = 0
    while v.node is not None:
        node = v.node
        if node.op in KEEP_VALUES:
            v = node.inputs[0]
        elif node.op == "cast" and node.inputs[0].dtype in INT_DTYPES:
            v = node.inputs[0]
        elif node.op in ("add", "sub"):
            a, b = node.inputs
            shift = _constant(b)
            if shift is None and node.op == "add":
                a, shift = b, _constant(a)
            if shift is None:
                return None
            offset += shift if node.op == "add" else -shift
            v = a
        else:
            return None
    return (v, offset) if v.dtype in INT_DTYPES else None


def _constant(v: Value) -> int | None:
    """The value of a scalar integer constant (after broadcasting), else None."""
    while v.node is not None and v.node.op in ("broadcast_to", "reshape"):
        v = v.node.inputs[0]
    node = v.node
    if node is not None and node.op == "full" and v.dtype in INT_DTYPES:
        return int(node.attrs["value"])
    return None
