"""The evaluator as Lisp sees it: eval, macroexpand-1, macroexpand, compile, and a
clock that always reads 0 (compile-time evaluation must not depend on the time)."""

from __future__ import annotations

from sexpgpu.lisp.registry import builtin
from sexpgpu.lisp.types import MV, NIL, boolean


@builtin("EVAL", interp=True)
def lisp_eval(interp, form):
    return interp.eval(form, None)


@builtin("MACROEXPAND-1", interp=True)
def macroexpand_1(interp, form, env=NIL):
    expansion, expanded = interp.macroexpand_1(form, None)
    return MV((expansion, boolean(expanded)))


@builtin("MACROEXPAND", interp=True)
def macroexpand(interp, form, env=NIL):
    expanded_any = False
    while True:
        form, expanded = interp.macroexpand_1(form, None)
        if not expanded:
            return MV((form, boolean(expanded_any)))
        expanded_any = True
        interp.steps += 1


@builtin("COMPILE", interp=True)
def compile_(interp, name, definition=NIL):
    if definition is not NIL:
        interp.functions[name] = definition
        return definition
    return name


@builtin("GET-UNIVERSAL-TIME", "GET-INTERNAL-REAL-TIME", "GET-INTERNAL-RUN-TIME")
def clock():
    return 0  # deterministic: compile-time evaluation must not depend on the clock
