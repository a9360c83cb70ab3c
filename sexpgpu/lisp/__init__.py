"""The compile-time Common Lisp subset: reader, evaluator, printer and prelude.

`run_program(text, file)` evaluates a whole program and returns what it printed;
`Interpreter` is the evaluator other stages build on (see docs/lisp.md).
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
