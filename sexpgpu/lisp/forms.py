"""What every special form shares: checking operands (E-SYNTAX), evaluating a body,
assigning a variable and binding special variables dynamically."""

from __future__ import annotations

from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp.closures import LAMBDA, MISSING
from sexpgpu.lisp.errors import E_SYNTAX
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.types import MV, NIL, Cons, Symbol, T, to_py


def syntax_error(form: Any, message: str, fix: str) -> Exception:
    """E-SYNTAX at a malformed form, showing the form."""
    return error(E_SYNTAX, message, getattr(form, "span", None),
                 actual=prin1_to_string(form)[:200], fix=fix)


def args_of(form: Cons, low: int, high: int | None, usage: str) -> list:
    """The operands of a special form, checked against its arity."""
    items = []
    node = form.cdr
    while type(node) is Cons:
        items.append(node.car)
        node = node.cdr
    if node is not NIL or len(items) < low or (high is not None and len(items) > high):
        raise syntax_error(form, f"malformed {form.car.name.lower()}", f"write {usage}")
    return items


def symbol_var(form: Any, var: Any, what: str) -> Symbol:
    """`var`, checked to be a symbol that can name a variable (`what`: bound, assigned...)."""
    if type(var) is not Symbol or var.is_keyword or var is NIL or var is T:
        raise syntax_error(form, f"{prin1_to_string(var)} cannot be {what}",
                           "use a non-keyword symbol as a variable name")
    return var


def restore_globals(interp, saved: list) -> None:
    """Undo dynamic bindings: saved holds (var, old value or MISSING), innermost last."""
    for var, old in reversed(saved):
        if old is MISSING:
            interp.globals.pop(var, None)
        else:
            interp.globals[var] = old


def with_dynamic(interp, dynamic: list, body, env):
    """Run body() with special variables rebound (shallow binding, restored on exit)."""
    if not dynamic:
        return body()
    saved = []
    for var, value in dynamic:
        saved.append((var, interp.globals.get(var, MISSING)))
        if value is MISSING:  # progv with fewer values than symbols: bound, but no value
            interp.globals.pop(var, None)
        else:
            interp.globals[var] = value
    try:
        return body()
    finally:
        restore_globals(interp, saved)


def eval_body(interp, forms: list, env) -> Any:
    """Evaluate a body (a Python list of forms) in order; the last value, or NIL."""
    result = NIL
    for f in forms:
        result = interp.eval(f, env)
    return result


def set_variable(interp, sym: Symbol, value: Any, env, form: Any) -> None:
    """Assign a variable: the innermost lexical binding, else the global one."""
    e = env
    while e is not None:
        if sym in e.vars:
            e.vars[sym] = value
            return
        e = e.parent
    if sym in interp.constants or sym.is_keyword:
        raise syntax_error(form, f"cannot assign to the constant {sym.name.lower()}",
                           "use a variable defined with defvar or defparameter")
    target = interp.modules.resolve(sym)
    if target is not None and target in interp.globals:
        sym = target
    interp.globals[sym] = value


def paired_operands(form: Any, name: str, usage: str) -> list:
    """The operands of a setq-like form, checked to come in (place value) pairs."""
    items = to_py(form.cdr)
    if len(items) % 2:
        raise syntax_error(form, f"{name} needs an even number of operands", f"write {usage}")
    return items


def values_list(value: Any) -> list:
    """All the values a form returned, as a Python list."""
    if type(value) is MV:
        return list(value)
    return [value]


def as_function(interp, x: Any) -> Any:
    """A function object from a function, a function name or a lambda expression."""
    if type(x) is Cons and x.car is LAMBDA:
        return interp.make_lambda(x, None, None)
    if type(x) is Symbol or type(x) is Cons:
        return interp.function_of(x, None)
    if type(x).__name__ in ("Closure", "Builtin"):
        return x
    raise TypeError("lisp: not a function designator")
