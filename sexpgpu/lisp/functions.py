"""Builtins on functions: calling them (funcall, apply), making them (identity,
constantly, complement), and the global function namespace (fboundp, symbol-function,
fdefinition, fmakunbound); macro-function is in macrofns.py."""

from __future__ import annotations

from sexpgpu.diagnostics import error
from sexpgpu.lisp.closures import Closure
from sexpgpu.lisp.errors import E_UNDEFINED_FUNCTION
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.registry import Builtin, builtin
from sexpgpu.lisp.types import NIL, Cons, Symbol, boolean, to_py

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


@builtin("FUNCTIONP", "COMPILED-FUNCTION-P")
def functionp(x):
    return boolean(type(x) in (Closure, Builtin, _Constantly, _Complement))


# ------------------------------------------------------------------ the namespace


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


@builtin("%UNDEFINED", interp=True)
def undefined(interp, name):
    raise error(E_UNDEFINED_FUNCTION, f"undefined function {prin1_to_string(name)}")
