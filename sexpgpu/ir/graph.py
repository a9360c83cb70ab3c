"""Graphs of IR nodes and the walk to the live ones. Building a node runs its op's
shape rule (from the registry) at once, so a shape error surfaces at the span of
the form that made the node."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from sexpgpu.diagnostics import Note, Span, error
from sexpgpu.ir.ops.registry import get_op
from sexpgpu.ir.printer import format_graph
from sexpgpu.ir.shapes import ShapeRuleError
from sexpgpu.ir.types import TensorType
from sexpgpu.record import factory, record

_ids = itertools.count()


class Value:
    """One SSA value: the output `index` of `node`, or a graph input (node None)."""

    __slots__ = ("id", "type", "node", "index", "name", "role")

    def __init__(self, type: TensorType, node: Node | None = None, index: int = 0,
                 name: str | None = None, role: str | None = None):
        self.id = next(_ids)
        self.type = type
        self.node = node
        self.index = index
        self.name = name
        self.role = role  # inputs only: "param", "data", "state", "ctx", "rng"

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    def __repr__(self) -> str:
        label = self.name or f"%{self.id}"
        return f"<{label} {self.type}>"


class OfValue:
    """A front end's tensor (the tracer's, the Python API's): the shape and dtype of
    the IR value it wraps."""

    __slots__ = ()
    value: Value

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def dtype(self) -> str:
        return self.value.dtype


@record(eq=False)
class Node:
    op: str
    inputs: tuple[Value, ...]
    attrs: dict[str, Any]
    outputs: tuple[Value, ...] = ()
    span: Span | None = None
    notes: tuple[Note, ...] = ()  # the chain from library code back to the user's line
    # the precision the user asked for at this node (`with-numerics`: "f32" or "bf16"),
    # None outside any region; the precision pass (ir/precision.py) reads it
    numerics: str | None = None
    id: int = factory(_ids.__next__)


class Graph:
    """A list of nodes in topological order, named inputs and named outputs."""

    def __init__(self, name: str = "graph"):
        self.name = name
        self.inputs: list[Value] = []
        self.nodes: list[Node] = []
        self.outputs: dict[str, Value] = {}
        # input -> value written back into that input's buffer after a run
        # (parameters and optimizer state updated in place by a training step)
        self.updates: dict[Value, Value] = {}
        self._span: Span | None = None
        self._notes: tuple[Note, ...] = ()
        self._numerics: str | None = None

    # -- construction -----------------------------------------------------

    def input(self, name: str, shape: tuple[int, ...], dtype: str = "f32",
              role: str = "data") -> Value:
        value = Value(TensorType(tuple(shape), dtype), name=name, role=role)
        self.inputs.append(value)
        return value

    def at(self, span: Span | None, notes: tuple[Note, ...] = ()) -> _At:
        """Nodes built inside (`with g.at(span):`) carry this span (the user's line)
        and notes."""
        return _At(self, span, notes)

    def set_numerics(self, precision: str | None) -> str | None:
        """Tag the nodes built from now on (None: the run's precision); returns the
        tag it replaces, for the caller to restore (`with-numerics` nests)."""
        saved, self._numerics = self._numerics, precision
        return saved

    def numerics(self, precision: str | None) -> _Numerics:
        """Nodes built inside (`with g.numerics(p):`) carry this numerics tag (None:
        the run's precision)."""
        return _Numerics(self, precision)

    def apply(self, op: str, *inputs: Value, **attrs: Any) -> Value | tuple[Value, ...]:
        """Add a node: check it with its op's rule and return its output(s). A
        composition adds the nodes of its expansion instead."""
        opdef = get_op(op)
        if opdef.kind == "composite":
            return self._expand(opdef, inputs, attrs)
        node = Node(op, inputs, attrs, (), self._span, self._notes, self._numerics)
        types = opdef.check(node)
        self.nodes.append(node)
        if len(types) == 1:
            out = Value(types[0], node)
            node.outputs = (out,)
            return out
        node.outputs = tuple(Value(t, node, i) for i, t in enumerate(types))
        return node.outputs

    def replay(self, nodes: list[Node], given: Iterable[tuple[Value, Value]]) -> dict[int, Value]:
        """Append a copy of each of `nodes` (in order), reading `new` for an input `old`
        of each `given` (old, new) pair (of the same type) and the input itself
        otherwise. A copy has its original's attrs, span and types (the same rule on
        the same types): the nodes tracing the same function on those inputs would
        have made, numbered in the same order. Returns the map from the id of each
        given and copied value to its replacement."""
        mapping: dict[int, Value] = {}
        for old, new in given:
            if new.type != old.type:
                raise AssertionError(f"internal error: replay on {new.type} for {old.type}")
            mapping[old.id] = new
        get, append = mapping.get, self.nodes.append
        for node in nodes:
            copy = Node(node.op, tuple([get(v.id, v) for v in node.inputs]), dict(node.attrs),
                        (), node.span, node.notes, node.numerics)
            copy.outputs = outs = tuple([Value(o.type, copy, o.index) for o in node.outputs])
            append(copy)
            for old, new in zip(node.outputs, outs):
                mapping[old.id] = new
        return mapping

    def opdef(self, op: str) -> Any:
        """The registry entry of `op`: for a rule that differentiates nodes it added
        (the ops modules cannot import the registry that gathers them)."""
        return get_op(op)

    def _expand(self, opdef: Any, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        """A composition's nodes; a rule failing outside any one node (a bad axis)
        is a diagnostic at the current span, named after the composition."""
        try:
            return opdef.build(self, *inputs, **attrs)
        except ShapeRuleError as exc:
            raise error(exc.code, f"{opdef.name}: {exc.message}", self._span,
                        expected=exc.expected, actual=exc.actual, fix=exc.fix,
                        notes=list(self._notes)) from None

    def output(self, name: str, value: Value) -> None:
        self.outputs[name] = value

    def update(self, target: Value, value: Value) -> None:
        """After a run, `target` (a graph input) holds `value`."""
        if target.node is not None:
            raise ValueError("only graph inputs can be updated in place")
        if target.type != value.type:
            raise ValueError(f"update of {target} with {value}: types differ")
        self.updates[target] = value

    # -- reading ------------------------------------------------------------

    def params(self) -> list[Value]:
        return [v for v in self.inputs if v.role == "param"]

    def __str__(self) -> str:
        return format_graph(self)


class _At:
    """`Graph.at`'s context: a class, not a generator, as tracing enters one per op."""

    __slots__ = ("graph", "span", "notes", "saved")

    def __init__(self, graph: Graph, span: Span | None, notes: tuple[Note, ...]):
        self.graph, self.span, self.notes = graph, span, notes

    def __enter__(self) -> None:
        g = self.graph
        self.saved = g._span, g._notes
        g._span, g._notes = self.span, self.notes

    def __exit__(self, *exc: object) -> None:
        self.graph._span, self.graph._notes = self.saved


class _Numerics:
    """`Graph.numerics`'s context (a class: the backward pass enters two per node)."""

    __slots__ = ("graph", "precision", "saved")

    def __init__(self, graph: Graph, precision: str | None):
        self.graph, self.precision = graph, precision

    def __enter__(self) -> None:
        self.saved = self.graph.set_numerics(self.precision)

    def __exit__(self, *exc: object) -> None:
        self.graph.set_numerics(self.saved)


def live_nodes(graph: Graph, roots: Iterable[Value] | None = None) -> list[Node]:
    """The nodes `roots` depend on (by default every output and update), in graph
    order: what runs after dead-code elimination (VJPs leave dead nodes: the
    cotangent of a constant, say)."""
    if roots is None:
        roots = [*graph.outputs.values(), *graph.updates.values()]
    needed = {v.id for v in roots}
    live: list[Node] = []
    for node in reversed(graph.nodes):  # topological order: readers come after
        if any(o.id in needed for o in node.outputs):
            live.append(node)
            needed.update(v.id for v in node.inputs)
    live.reverse()
    return live
