"""`sexpgpu eval`: the compile-time Lisp on its own, for trying forms and libraries."""

from __future__ import annotations

import sys

from sexpgpu import usage
from sexpgpu.cli import print_diagnostics
from sexpgpu.diagnostics import SexpError, SourceMap
from sexpgpu.lisp import Interpreter
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.reader import read_all
from sexpgpu.lisp.types import MV, FormList

HELP = """\
Evaluate a file as compile-time Lisp (what it prints goes to standard output), or
print the value of each form of -e EXPR.

Usage:
  sexpgpu eval FILE [--json]
  sexpgpu eval -e EXPR [--json]
  sexpgpu eval (-h | --help)

Options:
  -e EXPR   evaluate the forms of EXPR and print each value (prin1 style, one a line)
  --json    print diagnostics as JSON on standard output

Examples:
  sexpgpu eval -e '(loop for i below 5 collect (* i i))'
  sexpgpu eval my-lib.sx
"""


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "eval", argv)
    as_json = bool(args["--json"])
    interp = Interpreter(sys.stdout)
    try:
        if args["-e"] is not None:
            text = args["-e"]
            interp.sources["<expr>"] = text
            forms = read_all(text, "<expr>")
            for i, form in enumerate(forms):
                value = interp.eval_forms(FormList([form], forms.spans[i:i + 1]))
                values = list(value) if type(value) is MV else [value]
                for v in values:
                    if not interp.at_line_start:
                        sys.stdout.write("\n")
                        interp.at_line_start = True
                    sys.stdout.write(prin1_to_string(v) + "\n")
        else:
            path = args["FILE"]
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
            except OSError as exc:
                sys.stderr.write(f"sexpgpu eval: cannot read {path}: {exc.strerror}\n")
                return 1
            interp.load(text, path)
        sys.stdout.flush()
        return 0
    except SexpError as exc:
        sys.stdout.flush()
        sources = SourceMap()
        for file, source in interp.sources.items():
            sources.add(file, source)
        print_diagnostics(exc.diagnostics, as_json=as_json, sources=sources)
        return 1
