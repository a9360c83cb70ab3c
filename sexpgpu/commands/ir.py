"""`sexpgpu ir FILE`: print the graphs (ir/printer.py) and the kernels' lowering report."""

from __future__ import annotations

import sys
from typing import Any

from sexpgpu import usage
from sexpgpu.atomic import print_json
from sexpgpu.contract.compile import compile_file
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.printer import format_node_line
from sexpgpu.selection import from_docopt

HELP = """\
Print the IR of a run file's training step (forward, backward and update sections)
and of its evaluate graphs, then the lowering report: the fused kernels in run order
and the source lines each came from.

Usage:
  sexpgpu ir FILE [--set K=V]... [--variant NAME] [--precision P] [--json] [--no-lower]
  sexpgpu ir FILE --kernels [--set K=V]... [--variant NAME] [--device DEV] [--json]
  sexpgpu ir (-h | --help)

Options:
  --set K=V        bind knob K to V (repeatable)
  --variant NAME   bind the knobs of a variant the file declares
  --precision P    f32 or bf16 (default: the file's defrun :precision); the graphs are
                   shown after the precision pass, casts included
  --no-lower       skip the lowering report
  --kernels        the launches of each graph's step instead of the IR: per launch its
                   family and configuration and, for cuda where ptxas is installed,
                   its registers, spills and shared memory (sm_90); launches per step
  --device DEV     cpu or cuda (default: the file's defrun :device)
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


def launch_report(g: Graph, device: str) -> dict[str, Any]:
    """The launches of `g`'s step on `device`: CPU kernel calls, or CUDA launches with
    their configuration and, where ptxas is here, its figures for sm_90."""
    from sexpgpu.kernels.codegen import cpu_plan  # numba: not with --no-lower
    from sexpgpu.kernels.generate import generate  # numba: not with --no-lower
    from sexpgpu.kernels.lower import lower  # numba: not with --no-lower
    from sexpgpu.kernels.memplan import plan_memory  # numba: not with --no-lower

    program = lower(g, device=device)
    if device == "cpu":
        program = cpu_plan(program)[0]  # in the order it runs
        kernels = [{"name": f"k{k.index}", "ops": [n.op for n in k.nodes], "from": k.spans()}
                   for k in program.kernels]
        return {"device": "cpu", "launches_per_step": len(kernels), "launches": kernels}
    from sexpgpu.kernels import cuda_codegen, ptx  # numba-cuda: only for --device cuda
    from sexpgpu.kernels.cuda_codegen import GPU  # numba-cuda: only for --device cuda

    cuda_codegen.PRESET = GPU  # what a GPU would run, also where only the simulator is
    generated = generate(program, plan_memory(program), "cuda", (["loss", "grad_norm"], "last"))
    ops = {f"k{k.index}": (k.nodes, k.spans()) for k in program.kernels}
    note = ""
    try:
        rows = ptx.report(generated, targets=((9, 0),))
    except (FileNotFoundError, ImportError) as exc:
        note = f"no ptxas figures: {exc}"
        rows = [{"name": launch.name, "family": launch.family, "grid": list(launch.grid),
                 "block": list(launch.block), "shared_bytes": launch.shared_bytes}
                for launch in generated.launches]
    for row in rows:
        nodes, spans = ops.get(row["name"].split(".")[0], ([], []))
        row["ops"], row["from"] = [n.op for n in nodes], spans
    out = {"device": "cuda", "launches_per_step": len(rows), "launches": rows,
           "kernels": len(generated.modules)}
    if note:
        out["note"] = note
    return out


def _launch_lines(name: str, report: dict[str, Any]) -> list[str]:
    out = [f"graph {name}: {report['launches_per_step']} launches per step ({report['device']})"]
    for row in report["launches"]:
        where = ", ".join(row["from"]) or "-"
        ops = "+".join(row["ops"]) or "-"
        if report["device"] == "cpu":
            out.append(f"  {row['name']:<8} {ops}  from {where}")
            continue
        config = (f"{row['family']:<11} grid {'x'.join(map(str, row['grid']))} "
                  f"block {'x'.join(map(str, row['block']))}")
        figures = ""
        if "sm_90" in row:
            sm = row["sm_90"]
            figures = (f"  error: {sm['error'][:120]}" if sm["error"] else
                       f"  regs {sm['registers']} spill {sm['spill_stores'] + sm['spill_loads']}"
                       f" B smem {sm['shared_bytes']} B")
        out.append(f"  {row['name']:<10} {config}{figures}  {ops}  from {where}")
    if "note" in report:
        out.append(f"  ({report['note']})")
    return out


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "ir", argv)
    compiled = compile_file(args["FILE"], from_docopt(args))
    lowered = compiled.lowered()  # the run's precision (--precision wins over defrun)
    if args["--kernels"]:
        run = compiled.experiment.run
        device = args["--device"] or (run.device if run is not None else "cpu")
        reports = {g.name: launch_report(g, device) for g in lowered.step_graphs()}
        if args["--json"]:
            print_json(reports)
        else:
            lines = [line for name, rep in reports.items() for line in _launch_lines(name, rep)]
            sys.stdout.write("\n".join(lines) + "\n")
        return 0
    bounds = lowered.sections
    graphs = [*lowered.step_graphs(), *lowered.evaluates.values(),
              *lowered.unused_evaluates.values()]
    report = {g.name: lowering(g) for g in graphs} if not args["--no-lower"] else {}
    if args["--json"]:
        payload = {g.name: {"sections": {name: [format_node_line(n).strip() for n in nodes]
                                         for name, nodes in sections(g, bounds.get(g.name))},
                            "kernels": report.get(g.name, [])} for g in graphs}
        print_json(payload)
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
