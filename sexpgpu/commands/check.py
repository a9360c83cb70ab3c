"""`sexpgpu check FILE`: compile the run file, trace the forward, backward, update and
evaluate graphs so every shape is checked, without data, GPU or numba.

Usage:
  sexpgpu check FILE [--set K=V]... [--variant NAME] [--json]
  sexpgpu check (-h | --help)

Options:
  --set K=V        bind knob K to V (repeatable)
  --variant NAME   bind the knobs of a declared variant
  --json           print the result as JSON on standard output
"""

from __future__ import annotations

import sys

from docopt import docopt

from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.values import knob_json
from sexpgpu.diagnostics import render_all
from sexpgpu.selection import from_docopt


def main(argv: list[str]) -> int:
    args = docopt(__doc__, argv=["check", *argv])
    compiled = compile_file(args["FILE"], from_docopt(args))
    graphs = {g.name: len(g.nodes) for g in compiled.step_graphs()}
    for g in [*compiled.evaluates.values(), *compiled.unused_evaluates.values()]:
        graphs[g.name] = len(g.nodes)
    total = sum(p.count for p in compiled.params)
    if args["--json"]:
        import orjson  # only for --json: kept off check's import path

        payload = {"ok": True, "file": args["FILE"], "parameters": total, "graphs": graphs,
                   "knobs": {k: knob_json(v) for k, v in compiled.experiment.knobs.items()},
                   "warnings": [w.to_json() for w in compiled.warnings]}
        sys.stdout.write(orjson.dumps(payload).decode() + "\n")
    else:
        if compiled.warnings:  # reported; the check still passes
            sys.stderr.write(render_all(compiled.warnings) + "\n")
        shown = ", ".join(f"{name} {n} nodes" for name, n in graphs.items())
        warned = f" ({len(compiled.warnings)} warnings)" if compiled.warnings else ""
        sys.stdout.write(f"ok {args['FILE']}: {total:,} parameters; {shown}{warned}\n")
    return 0
