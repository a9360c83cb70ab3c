"""Macros as Lisp sees them: macro-function, macroexpand-1, macroexpand, special-operator-p.

The standard macros (`when`, `loop`, `push`, ...) run as special forms here, for speed;
to a program they are macros, as the standard says: `macro-function` returns a function
that expands them, `special-operator-p` is false for them, and an `&environment` object
lets `macro-function` and `macroexpand-1` see local `macrolet` macros.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.closures import Env, Macro
from sexpgpu.lisp.registry import Builtin, builtin
from sexpgpu.lisp.types import MV, NIL, Cons, Symbol, boolean

# the 25 special operators of ANSI Common Lisp (everything else is a macro or function)
SPECIAL_OPERATORS = frozenset("""
BLOCK CATCH EVAL-WHEN FLET FUNCTION GO IF LABELS LET LET* LOAD-TIME-VALUE LOCALLY MACROLET
MULTIPLE-VALUE-CALL MULTIPLE-VALUE-PROG1 PROGN PROGV QUOTE RETURN-FROM SETQ SYMBOL-MACROLET
TAGBODY THE THROW UNWIND-PROTECT""".split())


def _env(env: Any) -> Env | None:
    """The lexical environment an &environment object stands for (NIL: the global one)."""
    return env if type(env) is Env else None


def _expander(interp, name: Symbol) -> Builtin:
    """The macro function of a standard macro that is a special form here: it returns
    the form's one-step expansion (the form itself where no comparable one exists)."""

    def expand(form, env=NIL):
        return interp.macroexpand_1(form, _env(env))[0]

    return Builtin(name.name, expand, False)


def is_standard_macro(interp, name: Any) -> bool:
    """A special form here that the standard (or this Lisp) calls a macro."""
    return type(name) is Symbol and name in interp.special_forms \
        and name.name not in SPECIAL_OPERATORS and not name.name.startswith("%")


@builtin("MACRO-FUNCTION", interp=True)
def macro_function(interp, name, env=NIL):
    local = _env(env)
    if local is not None and type(name) is Symbol:
        e = local.fns
        while e is not None:
            fn = e.vars.get(name.fkey)
            if fn is not None:
                return fn if type(fn) is Macro else NIL
            e = e.outer_fns()
    macro = interp.macros.get(name)
    if macro is not None:
        return macro
    return _expander(interp, name) if is_standard_macro(interp, name) else NIL


@builtin("SPECIAL-OPERATOR-P", interp=True)
def special_operator_p(interp, name):
    if type(name) is Symbol and name.name in SPECIAL_OPERATORS and name.interned:
        return boolean(not name.is_keyword)
    return boolean(name in interp.special_forms and not is_standard_macro(interp, name))


@builtin("MACROEXPAND-1", interp=True)
def macroexpand_1(interp, form, env=NIL):
    expansion, expanded = interp.macroexpand_1(form, _env(env))
    return MV((expansion, boolean(expanded)))


@builtin("MACROEXPAND", interp=True)
def macroexpand(interp, form, env=NIL):
    expanded_any = False
    local = _env(env)
    while True:
        form, expanded = interp.macroexpand_1(form, local)
        if not expanded:
            return MV((form, boolean(expanded_any)))
        expanded_any = True
        interp.steps += 1


def call_macro(interp, macro: Macro, args: list) -> Any:
    """(funcall (macro-function 'm) form env): the expansion of form."""
    if not args or type(args[0]) is not Cons or len(args) > 2:
        raise TypeError("lisp: a macro function takes a form and an environment")
    return interp.expand_macro(macro, args[0], _env(args[1]) if len(args) > 1 else None)
