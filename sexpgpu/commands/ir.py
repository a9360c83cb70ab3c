"""`sexpgpu ir FILE`: print the graphs (ir/printer.py) and the kernels' lowering report."""

from __future__ import annotations

import sys
from typing import Any

import orjson

from sexpgpu import usage
from sexpgpu.contract.compile import compile_file
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.printer import format_node_line
from sexpgpu.selection import from_docopt

HELP = """\
Print the IR of a run file's training step (forward, backward and update sections)
and of its evaluate graphs, then the lowering report: the fused kernels in run order
and the source lines each came from.

Usage:
  sexpgpu ir FILE [--set K=V]... [--variant NAME] [--json] [--no-lower]
  sexpgpu ir (-h | --help)

Options:
  --set K=V        bind knob K to V (repeatable)
  --variant NAME   bind the knobs of a variant the file declares
  --no-lower       skip the lowering report
  --json           print graphs and kernels as JSON

KEY=VALUE after FILE is the same as --set KEY=VALUE.

Example:
  sexpgpu ir examples/mnist1d-logreg.sx --no-lower
"""


def sections(g: Graph, bounds: Any) -> list[tuple[str, list[Any]]]:
    if bounds is None:
        return [("nodes", list(g.nodes))]
    return [("forward", g.nodes[:bounds.forward]),
            ("backward", g.nodes[bounds.forward:bounds.backward]),
            ("update", g.nodes[bounds.backward:])]


def lowering(g: Graph) -> list[dict[str, Any]]:
    """The fused kernels of a graph, or an empty list where lowering is unavailable."""
    try:
        from sexpgpu.kernels.lower import lower  # numba: not loaded for --no-lower
    except ImportError:
        return []
    program = lower(g)
    return [{"kind": k.kind, "ops": [n.op for n in k.nodes], "domain": list(k.domain),
             "from": k.spans()} for k in program.kernels]


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "ir", argv)
    compiled = compile_file(args["FILE"], from_docopt(args))
    bounds = compiled.graphs.sections if compiled.graphs else {}
    graphs = [*compiled.step_graphs(), *compiled.evaluates.values(),
              *compiled.unused_evaluates.values()]
    report = {g.name: lowering(g) for g in graphs} if not args["--no-lower"] else {}
    if args["--json"]:
        payload = {g.name: {"sections": {name: [format_node_line(n).strip() for n in nodes]
                                         for name, nodes in sections(g, bounds.get(g.name))},
                            "kernels": report.get(g.name, [])} for g in graphs}
        sys.stdout.write(orjson.dumps(payload).decode() + "\n")
        return 0
    out: list[str] = []
    for g in graphs:
        out.append(f"graph {g.name}")
        for v in g.inputs:
            out.append(f"  input %{v.name} : {v.type}  ({v.role})")
        for name, nodes in sections(g, bounds.get(g.name)):
            out.append(f" ;; {name} ({len(nodes)} nodes)")
            out.extend(format_node_line(n) for n in nodes)
        for name, v in g.outputs.items():
            out.append(f"  output {name} = %{v.name or v.id}")
        out.append(f"  {len(g.updates)} updates")
        kernels = report.get(g.name)
        if kernels:
            out.append(f" ;; lowering: {len(kernels)} kernels")
            for i, k in enumerate(kernels):
                where = ", ".join(k["from"]) or "-"
                out.append(f"  k{i} {k['kind']} {'+'.join(k['ops'])}  from {where}")
        out.append("")
    sys.stdout.write("\n".join(out))
    return 0
