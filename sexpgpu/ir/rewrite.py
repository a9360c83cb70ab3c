"""Copying a graph with some nodes replaced: the passes that run before lowering
(`ir.cse`'s merging of repeated nodes, `kernels.outer`'s outer products) share it."""

from __future__ import annotations

from collections.abc import Callable

from sexpgpu.ir.graph import Graph, Node, Value

# a rule gets the new graph, an old node and its inputs as they are in the new graph;
# it returns the values that stand for the node's outputs (built in the new graph, or
# an earlier old node's, which then stand for theirs), or None to have the node copied
Rule = Callable[[Graph, Node, tuple[Value, ...]], tuple[Value, ...] | None]


def rewritten(graph: Graph, rule: Rule) -> Graph:
    """A new graph with `graph`'s inputs and each node as `rule` has it: nodes the rule
    builds carry the old node's span, notes and numerics tag; outputs and updates read
    what stands for their old values."""
    out = Graph(graph.name)
    out.inputs = list(graph.inputs)
    new: dict[int, Value] = {}

    def now(v: Value) -> Value:
        return new.get(v.id, v)

    for node in graph.nodes:
        inputs = tuple(now(v) for v in node.inputs)
        with out.at(node.span, node.notes), out.numerics(node.numerics):
            results = rule(out, node, inputs)
        if results is None:
            copy = Node(node.op, inputs, dict(node.attrs), (), node.span, node.notes,
                        node.numerics)
            copy.outputs = tuple(Value(o.type, copy, o.index) for o in node.outputs)
            out.nodes.append(copy)
            results = copy.outputs
        results = tuple(now(r) for r in results)
        new.update((o.id, r) for o, r in zip(node.outputs, results))
    out.outputs = {name: now(v) for name, v in graph.outputs.items()}
    out.updates = {target: now(v) for target, v in graph.updates.items()}
    return out
