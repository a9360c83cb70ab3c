"""`sexpgpu ir FILE`: the IR of the training step split into forward, backward and
update, the evaluate graphs, and the lowering report (fused kernels, where each
came from). The graphs are shown after the precision pass: under bf16 the casts it
inserted are there, each at the line of the op that needed it.

Usage:
  sexpgpu ir FILE [--set K=V]... [--variant NAME] [--precision P] [--json] [--no-lower]
  sexpgpu ir (-h | --help)

Options:
  --set K=V        bind knob K to V (repeatable)
  --variant NAME   bind the knobs of a declared variant
  --precision P    f32 or bf16 (default: the file's defrun :precision)
  --no-lower       skip the lowering report
  --json           print graphs and kernels as JSON
"""

from __future__ import annotations

import sys
from typing import Any

import orjson
from docopt import docopt

from sexpgpu.contract.compile import compile_file
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.printer import format_node_line
from sexpgpu.selection import from_docopt


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
    args = docopt(__doc__, argv=["ir", *argv])
    compiled = compile_file(args["FILE"], from_docopt(args))
    lowered = compiled.lowered()  # the run's precision (--precision wins over defrun)
    bounds = lowered.sections
    graphs = [*lowered.step_graphs(), *lowered.evaluates.values(),
              *lowered.unused_evaluates.values()]
    report = {g.name: lowering(g) for g in graphs} if not args["--no-lower"] else {}
    if args["--json"]:
        payload = {g.name: {"sections": {name: [format_node_line(n).strip() for n in nodes]
                                         for name, nodes in sections(g, bounds.get(g.name))},
                            "kernels": report.get(g.name, [])} for g in graphs}
        sys.stdout.write(orjson.dumps(payload).decode() + "\n")
        return 0
    out: list[str] = [f";; precision {lowered.precision}"]
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
