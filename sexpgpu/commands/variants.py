"""`sexpgpu variants FILE`: the selection space a run file declares (knobs, variants,
sweeps), read from its header without evaluating the model."""

from __future__ import annotations

import sys
from typing import Any

from sexpgpu import usage
from sexpgpu.atomic import print_json
from sexpgpu.contract.compile import evaluate_file
from sexpgpu.selection import Declarations, show, value_kind

HELP = """\
List what a run file lets a run vary: its knobs (default, type, limits), its
variants and its sweeps with every point.

Usage:
  sexpgpu variants FILE [--json]
  sexpgpu variants (-h | --help)

Options:
  --json   print the declarations as JSON

Example:
  sexpgpu variants examples/mnist1d-mlp.sx
"""


def describe(decls: Declarations) -> dict[str, Any]:
    def js(v: Any) -> Any:
        return show(v) if value_kind(v) == "keyword" else v

    return {
        "knobs": [{"name": k.name, "default": js(k.default), "type": k.kind, "doc": k.doc,
                   "choices": [js(c) for c in k.choices] if k.choices else None,
                   "range": list(k.range) if k.range else None}
                  for k in decls.knobs.values()],
        "variants": [{"name": v.name, "set": {k: js(x) for k, x in v.values.items()}}
                     for v in decls.variants.values()],
        "sweeps": [{"name": s.name, "zip": s.zip, "variant": s.variant,
                    "points": [{k: js(x) for k, x in p.items()} for p in s.points()]}
                   for s in decls.sweeps.values()],
    }


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "variants", argv)
    exp, _, _, _ = evaluate_file(args["FILE"])
    data = describe(exp.decls)
    if args["--json"]:
        print_json(data)
        return 0
    out = ["knobs"]
    for k in data["knobs"]:
        limits = (f"  one of {' '.join(map(str, k['choices']))}" if k["choices"] else "") + \
                 (f"  in [{k['range'][0]}, {k['range'][1]}]" if k["range"] else "")
        out.append(f"  {k['name']:<16} {k['default']!s:<12} {k['type']:<8}{limits}  {k['doc']}")
    out.append("variants" if data["variants"] else "variants: none")
    for v in data["variants"]:
        out.append(f"  {v['name']}: " + " ".join(f"--set {k}={x}" for k, x in v["set"].items()))
    out.append("sweeps" if data["sweeps"] else "sweeps: none")
    for s in data["sweeps"]:
        out.append(f"  {s['name']} ({len(s['points'])} points{', zipped' if s['zip'] else ''})")
        for i, p in enumerate(s["points"]):
            out.append(f"    {i}: " + " ".join(f"{k}={x}" for k, x in p.items()))
    sys.stdout.write("\n".join(out) + "\n")
    return 0
