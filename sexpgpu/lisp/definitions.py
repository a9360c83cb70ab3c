"""Definitions: defun, defmacro, defvar, defparameter, defconstant, symbol-macrolet."""

from __future__ import annotations

from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp import lambdalist
from sexpgpu.lisp.closures import Closure, Macro, block_body, split_body
from sexpgpu.lisp.errors import E_REDEFINE
from sexpgpu.lisp.forms import args_of, symbol_var, syntax_error
from sexpgpu.lisp.registry import Builtin, builtin, special
from sexpgpu.lisp.types import NIL, Cons, Symbol, intern, to_py

SETF = intern("SETF")
QUOTE = intern("QUOTE")


def _definition_name(form: Any, usage: str) -> tuple[Symbol, Any]:
    if type(form.cdr) is not Cons or type(form.cdr.cdr) is not Cons:
        raise syntax_error(form, f"malformed {form.car.name.lower()}", f"write {usage}")
    return form.cdr.car, form.cdr.cdr


def check_not_standard(interp, form: Any, name: Symbol, what: str) -> None:
    """Standard files (prelude, contract forms, standard modules) record the names they
    define; a user's global definition of such a name, a special operator or a builtin
    is E-REDEFINE at the definition, not a misbehaviour far away."""
    if interp.defining_standard:
        interp.standard_names.add(name)
        return
    if name in interp.special_forms:
        kind = "a special operator"
    elif name in interp.standard_names:
        kind = "a standard " + ("macro" if name in interp.macros else "function")
    elif type(interp.functions.get(name)) is Builtin:
        kind = "a builtin function"
    else:
        return
    span = getattr(form.cdr, "span", None) or form.span
    raise error(E_REDEFINE, f"{what} {name.name.lower()}: {name.name.lower()} is {kind}",
                span, fix="choose another name; the language and the standard library "
                          "keep theirs")


@special("DEFUN")
def sf_defun(interp, form, env):
    """(defun name lambda-list [doc] body...)"""
    name, rest = _definition_name(form, "(defun name (args...) body...)")
    ll = lambdalist.parse(rest.car, form.span)
    body, doc = split_body(rest.cdr, True)
    if type(name) is Cons and name.car is SETF and type(name.cdr) is Cons:
        target = name.cdr.car
        interp.setf_functions[target] = Closure(f"(SETF {target.name})", ll,
                                                block_body(target, body), env)
        return name
    name = symbol_var(form, name, "a function name")
    check_not_standard(interp, form, name, "defun")
    interp.functions[name] = Closure(name.name, ll, block_body(name, body), env)
    interp.macros.pop(name, None)
    _document(interp, name, "FUNCTION", doc)
    return name


def _document(interp, name: Symbol, kind: str, doc: Any) -> None:
    """Remember (or, for a definition without one, forget) a docstring for documentation."""
    if doc is NIL:
        interp.docs.pop((name, kind), None)
    else:
        interp.docs[(name, kind)] = doc


@special("DEFMACRO")
def sf_defmacro(interp, form, env):
    """(defmacro name lambda-list [doc] body...)"""
    name, rest = _definition_name(form, "(defmacro name (args...) body...)")
    name = symbol_var(form, name, "a macro name")
    check_not_standard(interp, form, name, "defmacro")
    ll = lambdalist.parse(rest.car, form.span, destructuring=True)
    body, doc = split_body(rest.cdr, True)
    interp.macros[name] = Macro(name.name, ll, block_body(name, body), env)
    _document(interp, name, "FUNCTION", doc)
    return name


def _define_variable(interp, form, env, always: bool, constant: bool):
    items = args_of(form, 1, 3, f"({form.car.name.lower()} name [value [doc]])")
    name = symbol_var(form, items[0], "defined")
    interp.specials.add(name)
    if len(items) > 1 and (always or name not in interp.globals):
        interp.globals[name] = interp.eval1(items[1], env)
    if constant:
        interp.constants.add(name)
        interp.specials.discard(name)
    if len(items) > 2:
        _document(interp, name, "VARIABLE", items[2])
    return name


@builtin("DOCUMENTATION", interp=True)
def documentation(interp, name, doc_type):
    """The docstring a definition gave name (functions and macros under FUNCTION,
    defvar/defparameter/defconstant under VARIABLE), or NIL."""
    key = doc_type.name if type(doc_type) is Symbol else ""
    if type(name) is Closure or type(name) is Macro:
        name = intern(name.name or "")
    return interp.docs.get((name, key), NIL)


@special("DEFVAR")
def sf_defvar(interp, form, env):
    """(defvar name [value [doc]]) — keeps an existing value"""
    return _define_variable(interp, form, env, False, False)


@special("DEFPARAMETER")
def sf_defparameter(interp, form, env):
    """(defparameter name value [doc])"""
    return _define_variable(interp, form, env, True, False)


@special("DEFCONSTANT")
def sf_defconstant(interp, form, env):
    """(defconstant name value [doc])"""
    return _define_variable(interp, form, env, True, True)


_STAR_FORM = Cons(intern("QUOTE"), Cons(intern("*"), NIL))


@special("DEFTYPE")
def sf_deftype(interp, form, env):
    """(deftype name lambda-list [doc] body...) — body returns the type name stands for;
    optional parameters default to *"""
    name, rest = _definition_name(form, "(deftype name (args...) body...)")
    name = symbol_var(form, name, "a type name")
    ll = lambdalist.parse(rest.car, form.span)
    ll.optional = [(var, _STAR_FORM if default is NIL else default, supplied)
                   for var, default, supplied in ll.optional]
    body, doc = split_body(rest.cdr, True)
    interp.deftypes[name.name] = Closure(name.name, ll, block_body(name, body), env)
    _document(interp, name, "TYPE", doc)
    return name


@special("SYMBOL-MACROLET")
def sf_symbol_macrolet(interp, form, env):
    """(symbol-macrolet ((name expansion)...) body...) — substitutes in the body"""
    items = args_of(form, 1, None, "(symbol-macrolet ((name expansion)...) body...)")
    table = {}
    for pair in to_py(items[0]):
        table[pair.car] = pair.cdr.car
    body = _substitute(form.cdr.cdr, table)
    return interp.progn(body, env)


def _substitute(tree: Any, table: dict) -> Any:
    if type(tree) is Symbol:
        return table.get(tree, tree)
    if type(tree) is Cons:
        if tree.car is QUOTE:
            return tree
        return Cons(_substitute(tree.car, table), _substitute(tree.cdr, table), tree.span)
    return tree
