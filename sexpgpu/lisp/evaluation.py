"""The evaluator as Lisp sees it: eval, compile, and a
clock that always reads 0 (compile-time evaluation must not depend on the time)."""

from __future__ import annotations

from sexpgpu.lisp.registry import builtin
from sexpgpu.lisp.types import NIL


@builtin("EVAL", interp=True)
def lisp_eval(interp, form):
    return interp.eval(form, None)


@builtin("COMPILE", interp=True)
def compile_(interp, name, definition=NIL):
    if definition is not NIL:
        interp.functions[name] = definition
        return definition
    return name


@builtin("GET-UNIVERSAL-TIME", "GET-INTERNAL-REAL-TIME", "GET-INTERNAL-RUN-TIME")
def clock():
    return 0  # deterministic: compile-time evaluation must not depend on the clock
