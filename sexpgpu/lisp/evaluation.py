"""The evaluator as Lisp sees it: eval, compile, constantp, load-time-value, and a
clock that always reads 0 (compile-time evaluation must not depend on the time)."""

from __future__ import annotations

from sexpgpu.lisp.forms import args_of, as_function
from sexpgpu.lisp.registry import builtin, special
from sexpgpu.lisp.types import MV, NIL, Cons, Symbol, boolean, intern

_QUOTE = intern("QUOTE")


@builtin("CONSTANTP", interp=True)
def constantp(interp, form, env=NIL):
    """Self-evaluating objects, keywords, defconstant names and quoted forms."""
    if type(form) is Symbol:
        return boolean(form.is_keyword or form in interp.constants)
    if type(form) is Cons:
        return boolean(form.car is _QUOTE)
    return boolean(True)


@special("LOAD-TIME-VALUE")
def sf_load_time_value(interp, form, env):
    """(load-time-value form [read-only-p]): form evaluated once, in the global
    environment, the first time this call site runs (there is one time here)"""
    items = args_of(form, 1, 2, "(load-time-value form [read-only-p])")
    cached = interp.load_time_values.get(id(form))
    if cached is None or cached[0] is not form:
        cached = (form, interp.eval1(items[0], None))
        interp.load_time_values[id(form)] = cached
    return cached[1]


@builtin("EVAL", interp=True)
def lisp_eval(interp, form):
    return interp.eval(form, None)


@builtin("COMPILE", interp=True)
def compile_(interp, name, definition=NIL):
    """Nothing to compile here: (compile nil f) returns the function, (compile 'name
    [f]) defines name as f (when given) and returns it, with NIL NIL as SBCL does."""
    if name is NIL:
        return MV((as_function(interp, definition), NIL, NIL))
    if definition is not NIL:
        interp.functions[name] = as_function(interp, definition)
    return MV((name, NIL, NIL))


@builtin("GET-UNIVERSAL-TIME", "GET-INTERNAL-REAL-TIME", "GET-INTERNAL-RUN-TIME")
def clock():
    return 0  # deterministic: compile-time evaluation must not depend on the clock
