"""The graph printer behind `str(graph)` and `sexpgpu ir`: one node a line,
`%12 = matmul %3 %7 : f32[100 256]  ; gpt.sx:42` (`[:f32]` after the type marks a node
inside a `with-numerics` region)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: Graph.__str__ prints through this module
    from sexpgpu.ir.graph import Graph, Value


def _name(v: Value) -> str:
    return f"%{v.name}" if v.node is None and v.name else f"%{v.id}"


def _attr(value: Any) -> str:
    if isinstance(value, tuple):
        if len(value) > 8:  # long literals (const values) stay one line
            return "(" + " ".join(_attr(v) for v in value[:8]) + f" ... {len(value)} values)"
        return "(" + " ".join(_attr(v) for v in value) + ")"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def format_node_line(node: Any) -> str:
    outs = ", ".join(_name(o) for o in node.outputs)
    args = " ".join(_name(v) for v in node.inputs)
    attrs = " ".join(f":{k} {_attr(v)}" for k, v in node.attrs.items())
    types = ", ".join(str(o.type) for o in node.outputs)
    line = f"  {outs} = {node.op}" + (f" {args}" if args else "") + (f" {attrs}" if attrs else "")
    line = f"{line} : {types}"
    if getattr(node, "numerics", None):  # inside (with-numerics (:f32) ...)
        line += f" [:{node.numerics}]"
    if node.span is not None:
        line += f"  ; {node.span.file}:{node.span.line}"
    return line


def format_graph(graph: Graph) -> str:
    """The whole graph: inputs with roles, nodes in order, outputs and updates."""
    lines = [f"graph {graph.name}"]
    for v in graph.inputs:
        lines.append(f"  input {_name(v)} : {v.type}  ({v.role})")
    lines.extend(format_node_line(node) for node in graph.nodes)
    for name, v in graph.outputs.items():
        lines.append(f"  output {name} = {_name(v)}")
    for target, v in graph.updates.items():
        lines.append(f"  update {_name(target)} <- {_name(v)}")
    return "\n".join(lines)
