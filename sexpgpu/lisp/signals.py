"""Conditions from Lisp: define-condition and make-condition, signalling (error, cerror,
signal, warn, assert, check-type), handling (handler-case) and the condition accessors.

Condition objects and their type hierarchy are conditions.py; a signalled condition
travels as the SexpError that carries it, so an unhandled one is a diagnostic.
"""

from __future__ import annotations

import sys
from typing import Any

from sexpgpu.diagnostics import SexpError, error
from sexpgpu.lisp.closures import Env, split_body
from sexpgpu.lisp.conditions import (
    CONDITION_PARENTS,
    Condition,
    condition_error,
    condition_of,
    lineage,
)
from sexpgpu.lisp.errors import E_ASSERT, E_LISP_ERROR, E_TYPE, LimitError
from sexpgpu.lisp.format_ import format_to_string
from sexpgpu.lisp.forms import args_of, eval_body, syntax_error, values_list
from sexpgpu.lisp.io import StringStream
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.registry import Builtin, builtin, special
from sexpgpu.lisp.types import NIL, Cons, Symbol, keyword, lisp_list, to_py
from sexpgpu.lisp.typespec import typep

# ------------------------------------------------------------------ condition types


def _options(items: list) -> dict:
    return {items[i].name: items[i + 1] for i in range(0, len(items) - 1, 2)
            if isinstance(items[i], Symbol)}


@special("DEFINE-CONDITION")
def sf_define_condition(interp, form, env):
    """(define-condition name (parent...) (slot-spec...) [(:report r)])"""
    items = to_py(form.cdr)
    if len(items) < 3 or type(items[0]) is not Symbol:
        raise syntax_error(form, "malformed define-condition",
                           "write (define-condition name (parent) ((slot :initarg :k)))")
    name, parents, slot_specs = items[0], to_py(items[1]), to_py(items[2])
    interp.user_condition_types[name.name] = parents[0].name if parents else "CONDITION"
    slots = [_condition_slot(interp, spec) for spec in slot_specs]
    report = None
    for option in items[3:]:
        if type(option) is Cons and getattr(option.car, "name", "") == "REPORT":
            report = option.cdr.car
    classes = interp.__dict__.setdefault("condition_classes", {})
    classes[name.name] = (slots, report, env)
    return name


def _condition_slot(interp, spec: Any) -> tuple:
    """(slot, initarg, initform, has-initform) of a slot spec; defines its readers."""
    slot = spec if type(spec) is Symbol else spec.car
    opts = _options(to_py(spec.cdr)) if type(spec) is Cons else {}
    for reader in (opts.get("READER"), opts.get("ACCESSOR")):
        if reader is not None:
            interp.functions[reader] = Builtin(
                reader.name, (lambda s: lambda c: c.slots.get(s.name, NIL))(slot))
    return (slot, opts.get("INITARG"), opts.get("INITFORM", NIL), "INITFORM" in opts)


def instantiate(interp, type_sym: Symbol, args: list) -> Condition:
    """make-condition: a condition of a built-in or defined type from its initargs."""
    name = type_sym.name
    classes = interp.__dict__.setdefault("condition_classes", {})
    if name not in classes and name not in CONDITION_PARENTS:
        raise TypeError(f"unknown condition type {name}")
    initargs = {args[i]: args[i + 1] for i in range(0, len(args) - 1, 2)}
    cond = Condition(name, "")
    report = _fill_slots(interp, cond, classes, initargs)
    for key, value in initargs.items():
        if isinstance(key, Symbol) and key.is_keyword and key.name not in cond.slots:
            cond.slots[key.name] = value  # built-in types keep their initargs (:datum ...)
    cond.message = _message(interp, cond, initargs, report)
    return cond


def _fill_slots(interp, cond: Condition, classes: dict, initargs: dict) -> tuple | None:
    """Slots from initargs or initforms, nearest class first; returns the nearest
    (report, env) any class of the condition declares."""
    report = None
    for cls in lineage(cond.type, interp.user_condition_types):
        if cls not in classes:
            continue
        slots, cls_report, env = classes[cls]
        if report is None:
            report = (cls_report, env)
        for slot, initarg, initform, has_initform in slots:
            if slot.name in cond.slots:
                continue
            if initarg is not None and initarg in initargs:
                cond.slots[slot.name] = initargs[initarg]
            elif has_initform:
                cond.slots[slot.name] = interp.eval1(initform, env)
    return report


def _message(interp, cond: Condition, initargs: dict, report: tuple | None) -> str:
    """What `princ` shows: the format control, the :report, or SBCL's default text."""
    control = initargs.get(keyword("FORMAT-CONTROL"))
    if control is not None:
        fargs = to_py(initargs.get(keyword("FORMAT-ARGUMENTS"), NIL))
        cond.slots["FORMAT-CONTROL"] = control
        cond.slots["FORMAT-ARGUMENTS"] = fargs
        return format_to_string(interp, control, fargs)
    if report is not None and report[0] is not None:
        return _report(interp, cond, report[0], report[1])
    if "DATUM" in cond.slots and "EXPECTED-TYPE" in cond.slots:
        return (f"The value\n  {prin1_to_string(cond.slots['DATUM'])}\nis not of type\n"
                f"  {prin1_to_string(cond.slots['EXPECTED-TYPE'])}")
    return f"Condition of type {cond.type} was signalled."


def _report(interp, cond: Condition, report: Any, env) -> str:
    if type(report) is str:
        return report
    stream = StringStream()
    fn = interp.make_lambda(report, env, None) if type(report) is Cons and \
        getattr(report.car, "name", "") == "LAMBDA" else interp.function_of(report, env)
    interp.call1(fn, cond, stream)
    return "".join(stream.parts)


@builtin("MAKE-CONDITION", interp=True)
def lisp_make_condition(interp, type_name, *args):
    return instantiate(interp, type_name, list(args))


# ------------------------------------------------------------------ signalling


def make_condition(interp, datum: Any, args: tuple, default_type: str) -> Condition:
    """The condition `error`/`signal`/`warn` signal: from a format control (of
    `default_type`), a condition object, or a condition type and its initargs."""
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
    """Whether an active handler-case clause accepts `cond`."""
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


@special("ASSERT")
def sf_assert(interp, form, env):
    """(assert test [(place...) [format-control args...]])"""
    items = args_of(form, 1, None, "(assert test)")
    if interp.eval1(items[0], env) is not NIL:
        return NIL
    if len(items) > 2:
        control = interp.eval1(items[2], env)
        args = [interp.eval1(a, env) for a in items[3:]]
        message = format_to_string(interp, control, args)
    else:
        message = f"The assertion {prin1_to_string(items[0])} failed."
    exc = error(E_ASSERT, message, form.span, fix="fix the value the assertion checks")
    exc.condition = Condition("SIMPLE-ERROR", message)
    raise exc


@special("CHECK-TYPE")
def sf_check_type(interp, form, env):
    """(check-type place type [description])"""
    items = args_of(form, 2, 3, "(check-type place type)")
    value = interp.eval1(items[0], env)
    if typep(interp, value, items[1]):
        return NIL
    message = (f"The value of {prin1_to_string(items[0])} is {prin1_to_string(value)}, "
               f"which is not of type {prin1_to_string(items[1])}.")
    exc = error(E_TYPE, message, form.span, expected=prin1_to_string(items[1]),
                actual=prin1_to_string(value), fix="pass a value of the declared type")
    exc.condition = Condition("TYPE-ERROR", message,
                              {"DATUM": value, "EXPECTED-TYPE": items[1]})
    raise exc


# ------------------------------------------------------------------ handling


@special("HANDLER-CASE")
def sf_handler_case(interp, form, env):
    """(handler-case form (type ([var]) body...)... [(:no-error (vars...) body...)])"""
    items = args_of(form, 1, None, "(handler-case form (type (var) body...)...)")
    clauses, no_error = _handler_clauses(form, items[1:])
    depth = interp.depth
    interp.handlers.append([clause.car for clause in clauses])
    try:
        value = interp.eval(items[0], env)
    except LimitError:
        raise  # running out of steps or depth is never a Lisp condition
    except SexpError as exc:
        interp.depth = depth
        cond = condition_of(exc)
        for clause in clauses:
            if typep(interp, cond, clause.car):
                return _run_handler(interp, clause, cond, env)
        raise
    finally:
        interp.handlers.pop()
    if no_error is not None:
        values = values_list(value)
        params = to_py(no_error.cdr.car)
        vars = {p: values[i] if i < len(values) else NIL for i, p in enumerate(params)}
        return interp.progn(no_error.cdr.cdr, Env(vars, env))
    return value


def _handler_clauses(form: Cons, items: list) -> tuple[list, Cons | None]:
    """The (type (var) body...) clauses of a handler-case, and its :no-error clause."""
    clauses = []
    no_error = None
    for clause in items:
        if type(clause) is not Cons or type(clause.cdr) is not Cons:
            raise syntax_error(form, f"malformed handler clause {prin1_to_string(clause)}",
                               "write (type (var) body...)")
        if type(clause.car) is Symbol and clause.car.name == "NO-ERROR" and clause.car.is_keyword:
            no_error = clause
        else:
            clauses.append(clause)
    return clauses, no_error


def _run_handler(interp, clause: Cons, cond: Condition, env) -> Any:
    params = to_py(clause.cdr.car)
    vars = {params[0]: cond} if params else {}
    body, _ = split_body(clause.cdr.cdr, False)
    return eval_body(interp, body, Env(vars, env))


# ------------------------------------------------------------------ accessors


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
builtin("ARITHMETIC-ERROR-OPERANDS")(lambda c: c.slots.get("OPERANDS", NIL))
