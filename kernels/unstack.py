"""A concat read only by reductions over its concat axis is never written: a sum
over that axis is the sum of its pieces' sums, and a matmul contracting over it,
when each piece is one deep there (a stack), the sum of the pieces' outer
products, which `kernels.outer` makes elementwise. Lowering runs it after `ir.cse`;
a piece's sum that the graph already takes is read, not taken again.

Why: a scan's layer (`nn:lstm`, `nn:gru`) computes every step's input gates in one
matmul, so their gradient is the (B, T, G) stack of the steps' gate gradients, read
only by the input bias's sum and the input weight's batched product. At 128 units
the stack took 0.9 ms of a 19.6 ms step to write and 0.7 ms to read twice, while each
step's gate gradient is summed over the batch anyway for the hidden bias: the same
sums, which the input bias now adds up, and the input weight's product becomes one
fused loop over the pieces."""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from sexpgpu.ir import build
from sexpgpu.ir.cse import merged
from sexpgpu.ir.graph import Graph, Node, Value, live_nodes
from sexpgpu.ir.rewrite import rewritten
from sexpgpu.ir.shapes import axes as norm_axes
from sexpgpu.ir.shapes import axis as norm_axis

_FLOATS = ("f32", "f64")  # sums in a narrower type keep the one reduction they had


class _Stack(NamedTuple):
    """A concat, or a permute of one, as its readers see it: the axis its pieces
    are stacked on and the permute (None: the concat itself)."""

    axis: int
    perm: tuple[int, ...] | None


class _Split(NamedTuple):
    """How a reader takes the pieces: which of its inputs is the stack, and for a
    sum whose every piece's sum is already taken (over the same axes), those sums."""

    at: int
    stack: _Stack
    shared: tuple[Node, ...] | None = None


def unstacked(graph: Graph) -> Graph:
    """`graph` with every such concat's readers reading its pieces instead (the
    concat then dead), or `graph` itself when there is none."""
    live = live_nodes(graph)
    readers: dict[int, list[Node]] = defaultdict(list)
    for node in live:
        for v in {v.id: v for v in node.inputs}.values():
            readers[v.id].append(node)
    kept = {v.id for v in [*graph.outputs.values(), *graph.updates.values()]}
    split: dict[int, _Split] = {}  # a reader's id -> how it reads the pieces
    for node in live:
        if node.op != "concat" or len(node.inputs) < 2 or node.outputs[0].dtype not in _FLOATS:
            continue
        plan = _readers_split(node, readers, kept)
        if plan is not None:
            split.update(plan)
    if not split:
        return graph

    shared = {id(n) for found in split.values() for n in found.shared or ()}
    sums = _Copied()

    def rule(g: Graph, node: Node, inputs: tuple[Value, ...]) -> tuple[Value, ...] | None:
        if id(node) in shared:
            sums.made[id(node)] = g.apply("sum", *inputs, **node.attrs)
            return (sums.made[id(node)],)
        found = split.get(id(node))
        return None if found is None else (_per_piece(g, node, inputs, found, sums),)

    out = rewritten(graph, rule)
    return merged(out) if sums.late else out


class _Copied:
    """The shared sums copied into the new graph so far (an old sum's id -> its copy),
    and whether a reader met one before it was copied: that one is then built twice,
    and `ir.cse` merges the two."""

    def __init__(self) -> None:
        self.made: dict[int, Value] = {}
        self.late = False


def _readers_split(concat: Node, readers: dict[int, list[Node]],
                   kept: set[int]) -> dict[int, _Split] | None:
    """{reader: how it takes the pieces} when every reader of the concat (or of a
    permute of it: an input weight's gradient reads (B, G, T)) can take them, else
    None."""
    out = concat.outputs[0]
    axis = _along(concat)
    stacks = {out.id: (out, _Stack(axis, None))}
    for reader in readers[out.id]:
        if reader.op == "permute":
            perm = tuple(reader.attrs["perm"])
            stacks[reader.outputs[0].id] = (reader.outputs[0], _Stack(perm.index(axis), perm))
    plan: dict[int, _Split] = {}
    for value, stack in stacks.values():
        if value.id in kept:
            return None
        for reader in readers[value.id]:
            if reader.op == "permute" and value is out:
                continue
            if not _splits(reader, value, stack.axis, concat):
                return None
            shared = _shared_sums(reader, concat, readers) if stack.perm is None else None
            if reader.op == "sum" and shared is None and \
                    len({p.shape for p in concat.inputs}) > 1:
                return None  # a sum per piece: more loops than the concat and one sum
            plan[id(reader)] = _Split(reader.inputs.index(value), stack, shared)
    return plan or None


def _shared_sums(reader: Node, concat: Node,
                 readers: dict[int, list[Node]]) -> tuple[Node, ...] | None:
    """For a sum over the stack: the sum each piece (or what it reshapes, `_source`)
    already has over the same axes, or None where one lacks it."""
    if reader.op != "sum":
        return None
    axes = norm_axes(reader.attrs.get("axes"), len(concat.outputs[0].shape))
    keep = bool(reader.attrs.get("keepdims", False))
    shared = []
    for piece in concat.inputs:
        source, summed = _source(piece, axes)
        same = [r for r in readers[source.id] if r.op == "sum" and summed and
                norm_axes(r.attrs.get("axes"), len(source.shape)) == summed and
                bool(r.attrs.get("keepdims", False)) == keep]
        if not same:
            return None
        shared.append(same[0])
    return tuple(shared)


def _splits(reader: Node, value: Value, axis: int, concat: Node) -> bool:
    """Whether `reader` reduces over the stacked axis of `value`, so that it can read
    the pieces."""
    if sum(v is value for v in reader.inputs) != 1:
        return False
    if reader.op == "sum":
        return axis in norm_axes(reader.attrs.get("axes"), len(value.shape))
    if reader.op != "matmul" or any(p.shape[_along(concat)] != 1 for p in concat.inputs):
        return False
    # contracted: the right operand's rows, or the left one's columns
    return axis == len(value.shape) - (2 if reader.inputs[1] is value else 1)


def _along(concat: Node) -> int:
    """The concat's axis."""
    return norm_axis(concat.attrs.get("axis", 0), len(concat.outputs[0].shape))


def _per_piece(g: Graph, reader: Node, inputs: tuple[Value, ...], split: _Split,
               sums: _Copied) -> Value:
    """The reader's result from the pieces of the stack it reads (`inputs` as they
    are in the new graph: the concat, or its permute, copied)."""
    stack = split.stack
    top = inputs[split.at].node
    concat = top if stack.perm is None else top.inputs[0].node
    pieces = [p if stack.perm is None else _permuted(g, p, stack.perm) for p in concat.inputs]
    if reader.op == "sum":
        return _summed(g, reader, pieces, split.shared, sums)
    other = inputs[1 - split.at]
    terms = []
    for i, piece in enumerate(pieces):
        # the other operand's column i (a left one) or row i (a right one)
        part = build.slice_axis(g, other, -1 if split.at == 1 else -2, i, i + 1)
        terms.append(g.apply("matmul", *((part, piece) if split.at == 1 else (piece, part))))
    return _total(g, terms)


def _summed(g: Graph, reader: Node, pieces: list[Value], shared: tuple[Node, ...] | None,
            sums: _Copied) -> Value:
    """The sum over the stack: of the sums the pieces already have (an LSTM's
    per-step hidden bias sums, the input bias's the same), else of the pieces added
    up first, one loop (a GRU's input and hidden gate gradients differ; pieces of
    one shape, `_readers_split` sees to it)."""
    if shared is None:
        return g.apply("sum", _total(g, pieces), **reader.attrs)
    shape = reader.outputs[0].shape
    axes = norm_axes(reader.attrs.get("axes"), len(reader.inputs[0].shape))
    terms = []
    for piece, old in zip(pieces, shared):
        total = sums.made.get(id(old))
        if total is None:
            sums.late = True
            total = g.apply("sum", _source(piece, axes)[0], **old.attrs)
        terms.append(total if total.shape == shape else g.apply("reshape", total, shape=shape))
    return _total(g, terms)


def _permuted(g: Graph, piece: Value, perm: tuple[int, ...]) -> Value:
    """The piece permuted: a reshape when only axes of one move (a stacked step's
    (B, 1, G) as (B, G, 1)), which costs no copy."""
    shape = tuple(piece.shape[p] for p in perm)
    if [piece.shape[p] for p in perm if piece.shape[p] != 1] == \
            [n for n in piece.shape if n != 1]:
        return g.apply("reshape", piece, shape=shape)
    return g.apply("permute", piece, perm=perm)


def _source(piece: Value, axes: tuple[int, ...]) -> tuple[Value, tuple[int, ...]]:
    """What the piece reshapes when that reshape only adds axes of one (a stacked
    step's value), else the piece, and `axes` of the piece as that value's axes."""
    source = piece.node.inputs[0] if piece.node is not None and piece.node.op == "reshape" \
        else None
    places = _inserted(source.shape, piece.shape) if source is not None else None
    if places is None:
        return piece, axes
    return source, tuple(sorted({places[a] for a in axes if places[a] is not None}))


def _inserted(source: tuple[int, ...], shape: tuple[int, ...]) -> list[int | None] | None:
    """For each axis of `shape`, the axis of `source` it is, or None for an axis of
    one that the reshape added; None when the reshape does more than add such axes."""
    places: list[int | None] = []
    i = 0
    for size in shape:
        if i < len(source) and source[i] == size:
            places.append(i)
            i += 1
        elif size == 1:
            places.append(None)
        else:
            return None
    return places if i == len(source) else None


def _total(g: Graph, terms: list[Value]) -> Value:
    """The terms' sum, added in pairs (log-depth rounding; elementwise, one loop)."""
    while len(terms) > 1:
        pairs = [g.apply("add", a, b) for a, b in zip(terms[::2], terms[1::2])]
        terms = pairs + terms[len(pairs) * 2:]
    return terms[0]
