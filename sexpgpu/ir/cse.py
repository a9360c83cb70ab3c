"""Common subexpressions: a graph that computes the same thing twice (the same op on
the same inputs, attributes and numerics tag) computes it once. Every op is a
function of its inputs and attributes (random ops too: their seed and stream are
inputs and attributes), so a repeated node's readers may read the first one's
results. Lowering runs it first (kernels/lower.py): the optimizers' per-parameter
bias corrections (1 - beta^t, one pair a parameter: 54 scalar kernels in the
char-GPT's step) become one pair."""

from __future__ import annotations

from typing import Any

from sexpgpu.ir.graph import Graph, Node, Value
from sexpgpu.ir.rewrite import rewritten

_PLAIN = (str, int, float, bool, type(None))


def merged(graph: Graph) -> Graph:
    """`graph` with each repeated node dropped and its readers reading the first
    such node's results: a new graph (the same inputs, copies of the nodes), or
    `graph` itself when nothing repeats. The first node keeps its span."""
    first: dict[tuple, Node] = {}
    same: dict[int, Value] = {}  # a dropped node's result -> the first node's
    for node in graph.nodes:
        key = _key(node, same)
        if key is None:
            continue
        kept = first.setdefault(key, node)
        if kept is not node:
            same.update((old.id, new) for old, new in zip(node.outputs, kept.outputs))
    if not same:
        return graph

    def rule(_: Graph, node: Node, __: tuple[Value, ...]) -> tuple[Value, ...] | None:
        # a repeated node: its readers read the first one's results (their copies)
        return tuple(same[o.id] for o in node.outputs) if node.outputs and \
            node.outputs[0].id in same else None

    return rewritten(graph, rule)


def _key(node: Node, same: dict[int, Value]) -> tuple | None:
    """What makes two nodes compute the same, or None for a node with an attribute
    that is not plain data (an array: never compared)."""
    attrs = _frozen(node.attrs)
    if attrs is None or not node.outputs:
        return None
    inputs = tuple(same.get(v.id, v).id for v in node.inputs)
    return node.op, inputs, attrs, node.numerics, tuple(o.type for o in node.outputs)


def _frozen(value: Any) -> Any:
    """A hashable copy of plain attribute data (dicts, lists and tuples of numbers and
    strings), or None. A float keeps its type beside its value (1 and 1.0, -0.0 and
    0.0 are different attributes; NaN equals itself here)."""
    if isinstance(value, dict):
        parts = [(k, _frozen(v)) for k, v in sorted(value.items())]
        return None if any(p is None for _, p in parts) else ("dict", tuple(parts))
    if isinstance(value, (list, tuple)):
        parts = [_frozen(v) for v in value]
        return None if any(p is None for p in parts) else (type(value).__name__, tuple(parts))
    if isinstance(value, _PLAIN):
        return (type(value).__name__, repr(value))
    return None
