"""Functions on functions, equality, types, symbols' values, conditions and evaluation."""

from __future__ import annotations

import sys
from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp import equality
from sexpgpu.lisp.closures import Closure
from sexpgpu.lisp.conditions import instantiate
from sexpgpu.lisp.errors import (
    E_LISP_ERROR,
    E_UNDEFINED_FUNCTION,
    Condition,
    condition_error,
    is_subtype,
)
from sexpgpu.lisp.format_ import format_to_string
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.registry import Builtin, builtin
from sexpgpu.lisp.types import MV, NIL, Cons, Symbol, T, boolean, intern, lisp_list, to_py
from sexpgpu.lisp.typespec import type_of, typep

builtin("EQ")(lambda a, b: boolean(equality.eq(a, b)))
builtin("EQL")(lambda a, b: boolean(equality.eql(a, b)))
builtin("EQUAL")(lambda a, b: boolean(equality.equal(a, b)))
builtin("EQUALP")(lambda a, b: boolean(equality.equalp(a, b)))
builtin("IDENTITY")(lambda x: x)


@builtin("FUNCALL", interp=True)
def funcall(interp, fn, *args):
    return interp.apply(fn, list(args))


@builtin("APPLY", interp=True)
def lisp_apply(interp, fn, *args):
    if not args:
        return interp.apply(fn, [])
    spread = list(args[:-1])
    last = args[-1]
    if last is not NIL and type(last) is not Cons:
        raise TypeError("apply: the last argument must be a list")
    return interp.apply(fn, spread + to_py(last))


class _Constantly:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __call__(self, *args):
        return self.value

    def lisp_repr(self, escape: bool) -> str:
        return "#<FUNCTION (LAMBDA (&REST SB-IMPL::ARGUMENTS) :IN CONSTANTLY)>"


class _Complement:
    __slots__ = ("interp", "fn")

    def __init__(self, interp, fn):
        self.interp = interp
        self.fn = fn

    def __call__(self, *args):
        return boolean(self.interp.call1(self.fn, *args) is NIL)

    def lisp_repr(self, escape: bool) -> str:
        return "#<FUNCTION (LAMBDA (&REST SB-IMPL::ARGUMENTS) :IN COMPLEMENT)>"


builtin("CONSTANTLY")(lambda value: _Constantly(value))
builtin("COMPLEMENT", interp=True)(lambda interp, fn: _Complement(interp, fn))


@builtin("FUNCTIONP")
def functionp(x):
    return boolean(type(x) in (Closure, Builtin, _Constantly, _Complement))


builtin("TYPE-OF")(type_of)
builtin("TYPEP", interp=True)(lambda interp, x, spec, env=NIL: boolean(typep(interp, x, spec)))


@builtin("SUBTYPEP", interp=True)
def subtypep(interp, a, b, env=NIL):
    if isinstance(a, Symbol) and isinstance(b, Symbol):
        return MV((boolean(is_subtype(a.name, b.name, interp.user_condition_types)), T))
    return MV((NIL, NIL))


# ------------------------------------------------------------------ variables


@builtin("SYMBOL-VALUE", interp=True)
def symbol_value(interp, sym):
    return interp.lookup(sym, None)


@builtin("SET", interp=True)
def lisp_set(interp, sym, value):
    interp.globals[sym] = value
    return value


@builtin("BOUNDP", interp=True)
def boundp(interp, sym):
    return boolean(sym in interp.globals or sym.is_keyword)


@builtin("MAKUNBOUND", interp=True)
def makunbound(interp, sym):
    interp.globals.pop(sym, None)
    return sym


@builtin("FBOUNDP", interp=True)
def fboundp(interp, name):
    if type(name) is Cons:
        return boolean(name.cdr.car in interp.setf_functions)
    fn = interp.functions.get(name)
    if fn is not None:
        return fn  # SBCL returns the function object as the true value
    return boolean(name in interp.macros or name in interp.special_forms)


@builtin("FMAKUNBOUND", interp=True)
def fmakunbound(interp, name):
    interp.functions.pop(name, None)
    interp.macros.pop(name, None)
    return name


@builtin("SYMBOL-FUNCTION", "FDEFINITION", interp=True)
def symbol_function(interp, name):
    if isinstance(name, Symbol) and name in interp.macros:
        return interp.macros[name]
    return interp.function_of(name, None)


@builtin("MACRO-FUNCTION", interp=True)
def macro_function(interp, name, env=NIL):
    return interp.macros.get(name, NIL)


@builtin("SPECIAL-OPERATOR-P", interp=True)
def special_operator_p(interp, name):
    return boolean(name in interp.special_forms)


def _plist(interp, sym) -> dict:
    plists = interp.__dict__.setdefault("plists", {})
    return plists.setdefault(sym, {})


@builtin("GET", interp=True)
def lisp_get(interp, sym, indicator, default=NIL):
    return _plist(interp, sym).get(indicator, default)


@builtin("%PUT", interp=True)
def lisp_put(interp, sym, indicator, value):
    _plist(interp, sym)[indicator] = value
    return value


@builtin("SYMBOL-PLIST", interp=True)
def symbol_plist(interp, sym):
    items = []
    for k, v in _plist(interp, sym).items():
        items.extend([k, v])
    return lisp_list(items)


@builtin("REMPROP", interp=True)
def remprop(interp, sym, indicator):
    return boolean(_plist(interp, sym).pop(indicator, None) is not None)


# ------------------------------------------------------------------ evaluation


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


# ------------------------------------------------------------------ conditions


def make_condition(interp, datum: Any, args: tuple, default_type: str) -> Condition:
    if type(datum) is str:
        message = format_to_string(interp, datum, list(args))
        return Condition(default_type, message,
                         {"FORMAT-CONTROL": datum, "FORMAT-ARGUMENTS": list(args)})
    if type(datum) is Condition:
        return datum
    if isinstance(datum, Symbol):
        return instantiate(interp, datum, list(args))
    raise TypeError("error: datum must be a string or a condition type")


@builtin("ERROR", interp=True)
def lisp_error(interp, datum, *args):
    cond = make_condition(interp, datum, args, "SIMPLE-ERROR")
    raise condition_error(cond, E_LISP_ERROR)


@builtin("CERROR", interp=True)
def lisp_cerror(interp, continue_text, datum, *args):
    return lisp_error(interp, datum, *args)


def _handled(interp, cond: Condition) -> bool:
    return any(typep(interp, cond, spec) for specs in interp.handlers for spec in specs)


@builtin("SIGNAL", interp=True)
def lisp_signal(interp, datum, *args):
    """Unwind to a handler-case that accepts the condition, else return NIL."""
    cond = make_condition(interp, datum, args, "SIMPLE-CONDITION")
    if _handled(interp, cond):
        raise condition_error(cond, E_LISP_ERROR)
    return NIL


@builtin("WARN", interp=True)
def lisp_warn(interp, datum, *args):
    """A handled warning unwinds to its handler; otherwise it prints to standard error."""
    cond = make_condition(interp, datum, args, "SIMPLE-WARNING")
    if _handled(interp, cond):
        raise condition_error(cond, E_LISP_ERROR)
    sys.stderr.write(f"WARNING: {cond.message}\n")
    return NIL


@builtin("MAKE-CONDITION", interp=True)
def lisp_make_condition(interp, type_name, *args):
    return instantiate(interp, type_name, list(args))


@builtin("SIMPLE-CONDITION-FORMAT-CONTROL")
def format_control(cond):
    return cond.slots.get("FORMAT-CONTROL", NIL)


@builtin("SIMPLE-CONDITION-FORMAT-ARGUMENTS")
def format_arguments(cond):
    return lisp_list(cond.slots.get("FORMAT-ARGUMENTS", []))


builtin("TYPE-ERROR-DATUM")(lambda c: c.slots.get("DATUM", NIL))
builtin("TYPE-ERROR-EXPECTED-TYPE")(lambda c: c.slots.get("EXPECTED-TYPE", NIL))
builtin("CELL-ERROR-NAME")(lambda c: c.slots.get("NAME", NIL))
builtin("ARITHMETIC-ERROR-OPERATION")(lambda c: c.slots.get("OPERATION", NIL))


@builtin("%UNDEFINED", interp=True)
def undefined(interp, name):
    raise error(E_UNDEFINED_FUNCTION, f"undefined function {prin1_to_string(name)}")


@builtin("GET-UNIVERSAL-TIME", "GET-INTERNAL-REAL-TIME", "GET-INTERNAL-RUN-TIME")
def clock():
    return 0  # deterministic: compile-time evaluation must not depend on the clock


builtin("%SYMBOL")(lambda name: intern(name))
