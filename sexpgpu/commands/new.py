"""`sexpgpu new FROM TO`: a new run file from another, the selection written in as the
knobs' defaults by editing the concrete syntax (commands/syntax.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sexpgpu import usage
from sexpgpu.atomic import print_json
from sexpgpu.commands.syntax import SyntaxNode, parse
from sexpgpu.contract.compile import evaluate_file
from sexpgpu.contract.forms import read_forms
from sexpgpu.diagnostics import define_code, error
from sexpgpu.selection import from_docopt, show, value_kind

HELP = """\
Start a new run file from another, with a selection written in as the knobs'
defaults: only `defknob` default values change; comments and layout stay.

Usage:
  sexpgpu new FROM TO [--set K=V]... [--variant NAME] [--json]
  sexpgpu new (-h | --help)

Options:
  --set K=V        write V as knob K's default (repeatable)
  --variant NAME   write the knob values of a declared variant as defaults
  --json           print {"ok", "from", "to", "set"} as JSON

KEY=VALUE after TO is the same as --set KEY=VALUE. TO must not exist yet.

Examples:
  sexpgpu new examples/mnist1d-mlp.sx mlp-small.sx --variant small
  sexpgpu new examples/mnist1d-mlp.sx mlp-wide.sx hidden=512 lr=5e-3
"""

E_NEW_EXISTS = define_code(
    "E-NEW-EXISTS", "the new run file already exists",
    "`sexpgpu new FROM TO` never overwrites: TO must not exist yet. Pick another name or "
    "remove the old file yourself.",
)


def lisp_text(value: Any) -> str:
    """A knob value as Lisp source."""
    if value_kind(value) == "string":
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value_kind(value) == "list":  # quoted, or the default would be a call
        return "'" + show(value)
    return show(value)


def knob_defaults(nodes: list[SyntaxNode]) -> dict[str, SyntaxNode]:
    """Knob name -> the node of its default value in `(defknob NAME DEFAULT ...)`."""
    found: dict[str, SyntaxNode] = {}
    for node in nodes:
        forms = node.forms()
        if node.head() == "defknob" and len(forms) >= 3:
            found[forms[1].text.lower()] = forms[2]
    return found


def write_in(text: str, values: dict[str, Any]) -> str:
    """`text` with each named knob's default replaced by its value (later edits first, so
    earlier offsets stay valid)."""
    defaults = knob_defaults(parse(text))
    edits = sorted(((defaults[name], lisp_text(value)) for name, value in values.items()),
                   key=lambda edit: -edit[0].start)
    for node, new in edits:
        text = text[:node.start] + new + text[node.end:]
    return text


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "new", argv)
    source, target = args["FROM"], args["TO"]
    if Path(target).exists():
        raise error(E_NEW_EXISTS, f"{target} already exists", expected="a path with no file",
                    actual=f"{target} exists", fix="pick another name; `new` never overwrites")
    selection = from_docopt(args)
    exp, _, _, _ = evaluate_file(source, selection)  # checks names, types, choices, ranges
    named = list(selection.sets)
    if selection.variant is not None:
        named += list(exp.decls.variants[selection.variant].values)
    values = {name: exp.knobs[name] for name in dict.fromkeys(named)}
    text, _ = read_forms(source)
    new_text = write_in(text, values)
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    with open(target, "x", encoding="utf-8") as fh:  # "x": never overwrite, even in a race
        fh.write(new_text)
    written = {name: lisp_text(value) for name, value in values.items()}
    if Path(source).resolve().parent != Path(target).resolve().parent:
        sys.stderr.write("note: requires and data paths are relative to the run file; "
                         f"{target} is in another directory than {source}\n")
    if args["--json"]:
        payload = {"ok": True, "from": source, "to": target, "set": written}
        print_json(payload)
    else:
        shown = " ".join(f"{k}={v}" for k, v in written.items()) or "(no knobs changed)"
        sys.stderr.write(f"wrote {target}: {shown}\n")
    return 0
