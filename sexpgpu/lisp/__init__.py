"""The compile-time Common Lisp subset: reader, evaluator, printer and prelude.

`run_program(text, file)` evaluates a whole program and returns what it printed;
`Interpreter` is the evaluator other stages build on (see docs/lisp.md).

The modules, roughly bottom up:

- data: types.py (symbols, conses, characters, floats, arrays), errors.py (diagnostic
  codes, the limit error, non-local exits), conditions.py (condition objects),
  equality.py
- text: reader.py (text to forms, through a readtable); printer.py and pretty.py (forms
  to text as SBCL prints them); format_.py (a directive table) with format_parse.py and
  format_numbers.py
- building blocks: registry.py (@builtin and @special tables, keyword arguments),
  closures.py (Env, Closure, Macro), lambdalist.py, forms.py (what special forms
  share), backquote.py, expanders.py (what macroexpand-1 shows)
- the language: special forms in specials.py, definitions.py, control.py, places.py,
  loop.py, signals.py (conditions from Lisp), structs.py, modules.py (require);
  builtins in numbers.py, lists.py, sequences.py, arrays.py, strings.py, symbols.py,
  hashtables.py, equality.py, typespec.py, functions.py, evaluation.py, io.py; and
  prelude.sx (loaded by prelude.py). library.py lists these modules and installs them.
- the evaluator: interp.py, with reporting.py (how errors get their span and notes).

Imports never form a cycle. Nothing imports interp.py; it loads library.py, and with
it the language, when the first Interpreter is made.
"""

from __future__ import annotations

import io as _io

from sexpgpu.lisp.closures import Closure, Env, Macro
from sexpgpu.lisp.interp import Interpreter
from sexpgpu.lisp.reader import read_all
from sexpgpu.lisp.types import NIL, Char, Cons, Single, Symbol, T, intern, keyword

__all__ = ["Interpreter", "run_program", "read_all", "Closure", "Macro", "Env", "Cons",
           "Symbol", "Char", "Single", "NIL", "T", "intern", "keyword"]


def run_program(text: str, file: str = "<string>") -> str:
    """Evaluate a whole program with a fresh interpreter; return its standard output."""
    out = _io.StringIO()
    interp = Interpreter(out)
    interp.load(text, file)
    return out.getvalue()
