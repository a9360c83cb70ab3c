"""`sexpgpu check`: compile a run file and trace every graph (forward, backward, update,
evaluate) so every shape is checked, without data, GPU or numba."""

from __future__ import annotations

import sys

from sexpgpu import usage
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.values import knob_json
from sexpgpu.diagnostics import render_all
from sexpgpu.selection import from_docopt

HELP = """\
Check a run file: every shape, dtype, knob and data header, in under a second.
No data is read, no GPU is touched, nothing is trained.

Usage:
  sexpgpu check FILE [--set K=V]... [--variant NAME] [--json]
  sexpgpu check (-h | --help)

Options:
  --set K=V        bind knob K to V for this check (repeatable)
  --variant NAME   bind the knobs of a variant the file declares
  --json           print the result (or the diagnostics) as one JSON object

KEY=VALUE after FILE is the same as --set KEY=VALUE.

Examples:
  sexpgpu check examples/mnist1d-mlp.sx
  sexpgpu check examples/mnist1d-mlp.sx hidden=64 --json
"""


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "check", argv)
    compiled = compile_file(args["FILE"], from_docopt(args))
    graphs = {g.name: len(g.nodes) for g in compiled.step_graphs()}
    for g in [*compiled.evaluates.values(), *compiled.unused_evaluates.values()]:
        graphs[g.name] = len(g.nodes)
    total = sum(p.count for p in compiled.params)
    if args["--json"]:
        # only for --json: orjson kept off check's import path
        from sexpgpu.atomic import print_json

        payload = {"ok": True, "file": args["FILE"], "parameters": total, "graphs": graphs,
                   "knobs": {k: knob_json(v) for k, v in compiled.experiment.knobs.items()},
                   "warnings": [w.to_json() for w in compiled.warnings]}
        print_json(payload)
    else:
        if compiled.warnings:  # reported; the check still passes
            sys.stderr.write(render_all(compiled.warnings) + "\n")
        shown = ", ".join(f"{name} {n} nodes" for name, n in graphs.items())
        warned = f" ({len(compiled.warnings)} warnings)" if compiled.warnings else ""
        sys.stdout.write(f"ok {args['FILE']}: {total:,} parameters; {shown}{warned}\n")
    return 0
