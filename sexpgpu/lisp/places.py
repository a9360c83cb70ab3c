"""Generalized places: setf, incf, decf, push, pop, pushnew, rotatef, shiftf.

A place resolves once to a (getter, setter) pair so its subforms run once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp.arrays import aref, row_major_aref, set_fill_pointer
from sexpgpu.lisp.bits import deposit_field, dpb, ldb, mask_field
from sexpgpu.lisp.closures import LAMBDA
from sexpgpu.lisp.errors import E_TYPE
from sexpgpu.lisp.forms import (
    args_of,
    paired_operands,
    set_variable,
    syntax_error,
    values_list,
)
from sexpgpu.lisp.lists import getf, putf
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.registry import Builtin, special
from sexpgpu.lisp.sequences import adjoin_to
from sexpgpu.lisp.types import NIL, Cons, MDArray, Symbol, T, intern, lisp_list, to_py

QUOTE = intern("QUOTE")

Accessor = tuple[Callable[[list], Any], Callable[[list, Any], Any]]


def _nthcdr(n: int, lst: Any) -> Any:
    for _ in range(n):
        lst = lst.cdr
    return lst


def _set_car(cell: Any, value: Any) -> Any:
    if type(cell) is not Cons:
        raise error(E_TYPE, f"cannot set the car of {prin1_to_string(cell)}",
                    expected="a cons", actual=prin1_to_string(cell),
                    fix="the list is too short or not a list")
    cell.car = value
    return value


def _set_cdr(cell: Any, value: Any) -> Any:
    if type(cell) is not Cons:
        raise error(E_TYPE, f"cannot set the cdr of {prin1_to_string(cell)}",
                    expected="a cons", actual=prin1_to_string(cell), fix="pass a cons")
    cell.cdr = value
    return value


def _cxr_path(name: str) -> str | None:
    if len(name) >= 3 and name[0] == "C" and name[-1] == "R" and set(name[1:-1]) <= {"A", "D"}:
        return name[1:-1]
    return None


def _cxr_get(path: str, x: Any) -> Any:
    for letter in reversed(path):
        x = x.car if letter == "A" else x.cdr
    return x


def _set_elt(seq: Any, index: int, value: Any) -> Any:
    if type(seq) is list:
        seq[index] = value
        return value
    if type(seq) is Cons:
        return _set_car(_nthcdr(index, seq), value)
    raise error(E_TYPE, f"cannot set an element of {prin1_to_string(seq)[:80]}",
                expected="a list or vector",
                actual=prin1_to_string(seq)[:80],
                fix="strings are immutable in this subset: build a new one (concatenate, subseq)")


def _aref_set(args: list, value: Any) -> Any:
    array, indices = args[0], args[1:]
    if type(array) is MDArray:
        array.data[array.index(tuple(indices))] = value
        return value
    target = array
    for i in indices[:-1]:
        target = target[i]
    return _set_elt(target, indices[-1], value)


def _set_row_major(args: list, value: Any) -> Any:
    array, index = args
    if type(array) is MDArray:
        array.data[index] = value
        return value
    return _set_elt(array, index, value)


def _aref_get(args: list) -> Any:
    if type(args[0]) is MDArray:
        return aref(*args)
    target = args[0]
    for i in args[1:]:
        target = target[i]
    return target


_ORDINALS = ["FIRST", "SECOND", "THIRD", "FOURTH", "FIFTH", "SIXTH", "SEVENTH", "EIGHTH",
             "NINTH", "TENTH"]

ACCESSORS: dict[str, Accessor] = {
    "CAR": (lambda a: a[0].car if a[0] is not NIL else NIL, lambda a, v: _set_car(a[0], v)),
    "CDR": (lambda a: a[0].cdr if a[0] is not NIL else NIL, lambda a, v: _set_cdr(a[0], v)),
    "REST": (lambda a: a[0].cdr if a[0] is not NIL else NIL, lambda a, v: _set_cdr(a[0], v)),
    "NTH": (lambda a: _nthcdr(a[0], a[1]).car, lambda a, v: _set_car(_nthcdr(a[0], a[1]), v)),
    "ELT": (lambda a: _elt(a[0], a[1]), lambda a, v: _set_elt(a[0], a[1], v)),
    "AREF": (_aref_get, _aref_set),
    "SVREF": (_aref_get, _aref_set),
    "CHAR": (_aref_get, _aref_set),
    "SCHAR": (_aref_get, _aref_set),
    "FILL-POINTER": (lambda a: len(a[0]), lambda a, v: set_fill_pointer(a[0], v)),
    "ROW-MAJOR-AREF": (lambda a: row_major_aref(a[0], a[1]), lambda a, v: _set_row_major(a, v)),
    "BIT": (_aref_get, _aref_set),
    "SBIT": (_aref_get, _aref_set),
    "NTHCDR": (lambda a: _nthcdr(a[0], a[1]),
               lambda a, v: _set_cdr(_nthcdr(a[0] - 1, a[1]), v)),
}
for _i, _name in enumerate(_ORDINALS):
    ACCESSORS[_name] = (
        (lambda i: lambda a: _nthcdr(i, a[0]).car if _nthcdr(i, a[0]) is not NIL else NIL)(_i),
        (lambda i: lambda a, v: _set_car(_nthcdr(i, a[0]), v))(_i),
    )


def _elt(seq: Any, index: int) -> Any:
    if type(seq) is Cons:
        return _nthcdr(index, seq).car
    return seq[index]


def resolve_place(interp, place: Any, env, form: Any) -> tuple[Callable[[], Any], Callable]:
    """(getter, setter) for `place`, evaluating its subforms now, once."""
    if type(place) is Symbol:
        if place.is_keyword or place is NIL:
            raise syntax_error(form, f"cannot assign to {prin1_to_string(place)}",
                               "assign to a variable or a place like (car x)")
        return (lambda: interp.lookup(place, env),
                lambda v: set_variable(interp, place, v, env, form))
    if type(place) is not Cons or type(place.car) is not Symbol:
        raise syntax_error(form, f"{prin1_to_string(place)} is not a place",
                           "setf a variable, (car x), (aref v i), (gethash k h), ...")
    head = place.car
    own = _OWN_PLACES.get(head.name)
    if own is not None:
        return own(interp, place, env, form)
    if head in interp.setf_functions:
        fn = interp.setf_functions[head]
        args = [interp.eval1(f, env) for f in to_py(place.cdr)]
        return (lambda: interp.call1(interp.function_of(head, env), *args),
                lambda v: interp.call1(fn, v, *args))
    path = _cxr_path(head.name)
    if path is None and head.name not in ACCESSORS:
        return _expanded_place(interp, place, env, form)
    args = [interp.eval1(f, env) for f in to_py(place.cdr)]
    if path is not None:
        return _cxr_place(path, args)
    return _accessor_place(head.name, ACCESSORS[head.name], args)


def _gethash_place(interp, place: Cons, env, form: Any) -> tuple:
    items = [interp.eval1(f, env) for f in to_py(place.cdr)]
    key, table = items[0], items[1]
    default = items[2] if len(items) > 2 else NIL
    return (lambda: table.get(key, default)[0], lambda v: table.put(key, v))


def _getf_place(interp, place: Cons, env, form: Any) -> tuple:
    plist_get, plist_set = resolve_place(interp, place.cdr.car, env, form)
    rest = [interp.eval1(f, env) for f in to_py(place.cdr.cdr)]
    key = rest[0]
    default = rest[1] if len(rest) > 1 else NIL
    return (lambda: getf(plist_get(), key, default),
            lambda v: plist_set(putf(plist_get(), key, v)))


def _symbol_value_place(interp, place: Cons, env, form: Any) -> tuple:
    sym = interp.eval1(place.cdr.car, env)
    return (lambda: interp.lookup(sym, None),
            lambda v: interp.globals.__setitem__(sym, v))


def _byte_place(interp, place: Cons, env, form: Any) -> tuple:
    """(ldb spec place) and (mask-field spec place): storing puts the bits back into the
    integer in the inner place (with dpb / deposit-field) and returns the new value."""
    parts = to_py(place.cdr)
    if len(parts) != 2:
        raise syntax_error(form, f"malformed {place.car.name.lower()} place",
                           f"write ({place.car.name.lower()} (byte size position) place)")
    spec = interp.eval1(parts[0], env)
    inner_get, inner_set = resolve_place(interp, parts[1], env, form)
    read, store = (ldb, dpb) if place.car.name == "LDB" else (mask_field, deposit_field)

    def set_bits(value):
        inner_set(store(value, spec, inner_get()))
        return value

    return (lambda: read(spec, inner_get()), set_bits)


# places that are not (accessor args...) with a fixed getter and setter; they come
# before (defun (setf name) ...) definitions
_OWN_PLACES = {"GETHASH": _gethash_place, "GETF": _getf_place, "LDB": _byte_place,
               "MASK-FIELD": _byte_place,
               "SYMBOL-VALUE": _symbol_value_place}


def _expanded_place(interp, place: Cons, env, form: Any) -> tuple:
    """A macro form (expanded, then resolved) or a defstruct slot accessor."""
    head = place.car
    macro = interp.macro_of(head, env)
    if macro is not None:
        return resolve_place(interp, interp.expand_macro(macro, place, env), env, form)
    struct_setter = interp.struct_setters.get(head) if hasattr(interp, "struct_setters") \
        else None
    if struct_setter is not None:
        obj = interp.eval1(place.cdr.car, env)
        return (lambda: struct_setter(obj, None, False), lambda v: struct_setter(obj, v, True))
    raise syntax_error(form, f"({head.name.lower()} ...) is not a place setf knows",
                       "define (defun (setf name) (new-value ...) ...) to make it one")


def _cxr_place(path: str, args: list) -> tuple:
    """(car x), (cadr x), (cdddr x)...: the last letter of the path is the cell's part."""
    def get_cxr():
        return _cxr_get(path, args[0])

    def set_cxr(v):
        cell = _cxr_get(path[1:], args[0])
        return _set_car(cell, v) if path[0] == "A" else _set_cdr(cell, v)

    return get_cxr, set_cxr


def _accessor_place(name: str, accessor: Accessor, args: list) -> tuple:
    """A place in ACCESSORS; a wrong object is an E-TYPE naming the place."""
    getter, setter = accessor

    def get():
        try:
            return getter(args)
        except (AttributeError, IndexError, TypeError):
            raise error(E_TYPE, f"cannot read place ({name.lower()} ...)",
                        actual=" ".join(prin1_to_string(a)[:60] for a in args),
                        fix="check the object has that element") from None

    def set_(v):
        try:
            return setter(args, v)
        except (AttributeError, IndexError, TypeError):
            raise error(E_TYPE, f"cannot set place ({name.lower()} ...)",
                        actual=" ".join(prin1_to_string(a)[:60] for a in args),
                        fix="check the object has that element") from None

    return get, set_


@special("SETF")
def sf_setf(interp, form, env):
    """(setf place value [place value]...)"""
    items = paired_operands(form, "setf", "(setf place value ...)")
    result = NIL
    for i in range(0, len(items), 2):
        place = items[i]
        if type(place) is Cons and place.car is intern("VALUES"):
            places = [resolve_place(interp, p, env, form)[1] for p in to_py(place.cdr)]
            value = interp.eval(items[i + 1], env)
            values = values_list(value)
            for j, setter in enumerate(places):
                setter(values[j] if j < len(values) else NIL)
            result = value
            continue
        if type(place) is Symbol:
            result = interp.eval1(items[i + 1], env)
            set_variable(interp, place, result, env, form)
            continue
        _, setter = resolve_place(interp, place, env, form)
        result = interp.eval1(items[i + 1], env)
        setter(result)
    return result


@special("PSETF")
def sf_psetf(interp, form, env):
    """(psetf place value [place value]...) — each place's subforms, then its value, left
    to right; then every place is set (a (values ...) place takes all the values)"""
    items = paired_operands(form, "psetf", "(psetf place value ...)")
    pending = []
    for i in range(0, len(items), 2):
        place = items[i]
        if type(place) is Cons and place.car is intern("VALUES"):
            setters = [resolve_place(interp, p, env, form)[1] for p in to_py(place.cdr)]
            values = values_list(interp.eval(items[i + 1], env))
            pending.extend((setter, values[j] if j < len(values) else NIL)
                           for j, setter in enumerate(setters))
            continue
        _, setter = resolve_place(interp, place, env, form)
        pending.append((setter, interp.eval1(items[i + 1], env)))
    for setter, value in pending:
        setter(value)
    return NIL


@special("%MODIFY-PLACE")
def sf_modify_place(interp, form, env):
    """(%modify-place function place arg...) — what define-modify-macro expands to: the
    place's subforms once, then the args, then (setf place (function old args...))"""
    items = args_of(form, 2, None, "(%modify-place function place arg...)")
    get, set_ = resolve_place(interp, items[1], env, form)
    args = [interp.eval1(f, env) for f in items[2:]]
    value = interp.call1(interp.function_of(items[0], env), get(), *args)
    set_(value)
    return value


_OPS = {"+": intern("+"), "-": intern("-")}


def _arith(interp, op: str, a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:  # the common case, without a call
        return a + b if op == "+" else a - b
    return interp.apply(interp.functions[_OPS[op]], [a, b])


def _modify(interp, form, env, op: str):
    rest = form.cdr
    place = rest.car if type(rest) is Cons else None
    if type(place) is Symbol and not place.is_keyword and place is not NIL:
        # a variable: no getter/setter closures
        delta_form = rest.cdr.car if type(rest.cdr) is Cons else None
        if type(rest.cdr) is Cons and rest.cdr.cdr is not NIL:
            args_of(form, 1, 2, f"({form.car.name.lower()} place [delta])")
        delta = interp.eval1(delta_form, env) if delta_form is not None else 1
        value = _arith(interp, op, interp.lookup(place, env), delta)
        set_variable(interp, place, value, env, form)
        return value
    items = args_of(form, 1, 2, f"({form.car.name.lower()} place [delta])")
    get, set_ = resolve_place(interp, items[0], env, form)
    delta = interp.eval1(items[1], env) if len(items) > 1 else 1
    value = _arith(interp, op, get(), delta)
    set_(value)
    return value


@special("INCF")
def sf_incf(interp, form, env):
    """(incf place [delta])"""
    return _modify(interp, form, env, "+")


@special("DECF")
def sf_decf(interp, form, env):
    """(decf place [delta])"""
    return _modify(interp, form, env, "-")


@special("PUSH")
def sf_push(interp, form, env):
    """(push item place)"""
    items = args_of(form, 2, 2, "(push item place)")
    item = interp.eval1(items[0], env)
    get, set_ = resolve_place(interp, items[1], env, form)
    value = Cons(item, get())
    set_(value)
    return value


@special("POP")
def sf_pop(interp, form, env):
    """(pop place)"""
    items = args_of(form, 1, 1, "(pop place)")
    get, set_ = resolve_place(interp, items[0], env, form)
    value = get()
    if value is NIL:
        return NIL
    if type(value) is not Cons:
        raise error(E_TYPE, "pop needs a list", form.span, actual=prin1_to_string(value),
                    fix="pop from a variable holding a list")
    set_(value.cdr)
    return value.car


@special("DEFSETF")
def sf_defsetf(interp, form, env):
    """(defsetf access update) or (defsetf access (params...) (store) body...): how
    (setf (access args...) value) stores; the long form's body returns the form to run,
    with the parameters bound to the (quoted) argument values"""
    items = args_of(form, 2, None, "(defsetf access update)")
    name = items[0]
    if type(name) is not Symbol:
        raise syntax_error(form, "defsetf needs a function name", "write (defsetf name updater)")
    if type(items[1]) is Symbol and len(items) <= 3:
        updater = items[1]

        def store_short(value, *args):
            return interp.call1(updater, *args, value)

        interp.setf_functions[name] = Builtin(f"(SETF {name.name})", store_short)
        return name
    if len(items) < 3 or type(items[2]) is not Cons:
        raise syntax_error(form, "malformed defsetf",
                           "write (defsetf name (args...) (store) body...)")
    params = _append(items[1], items[2])
    expander = interp.make_lambda(Cons(LAMBDA, Cons(params, form.cdr.cdr.cdr.cdr)), env,
                                  f"(SETF {name.name})")

    def store_long(value, *args):
        quoted = [lisp_list([QUOTE, a]) for a in (*args, value)]
        return interp.eval(interp.call1(expander, *quoted), None)

    interp.setf_functions[name] = Builtin(f"(SETF {name.name})", store_long)
    return name


def _append(a: Any, b: Any) -> Any:
    return lisp_list(to_py(a) + to_py(b))


@special("REMF")
def sf_remf(interp, form, env):
    """(remf place indicator): remove the indicator and its value from the property list
    in place (the list's own conses); T if it was there"""
    items = args_of(form, 2, 2, "(remf place indicator)")
    get, set_ = resolve_place(interp, items[0], env, form)
    indicator = interp.eval1(items[1], env)
    plist = get()
    previous, node = None, plist
    while type(node) is Cons and type(node.cdr) is Cons:
        if node.car is indicator:
            if previous is None:
                set_(node.cdr.cdr)
            else:
                previous.cdr.cdr = node.cdr.cdr
            return T
        previous, node = node, node.cdr.cdr
    if node is not NIL:
        raise error(E_TYPE, "remf needs a property list", form.span,
                    actual=prin1_to_string(plist), fix="pass a list of indicator value pairs")
    return NIL


@special("PUSHNEW")
def sf_pushnew(interp, form, env):
    """(pushnew item place [:test fn] [:key fn])"""
    items = args_of(form, 2, None, "(pushnew item place [:test fn] [:key fn])")
    item = interp.eval1(items[0], env)
    get, set_ = resolve_place(interp, items[1], env, form)
    options = [interp.eval1(f, env) for f in items[2:]]
    current = get()
    value = adjoin_to(interp, item, current, options)
    if value is not current:
        set_(value)
    return value


@special("ROTATEF")
def sf_rotatef(interp, form, env):
    """(rotatef place...)"""
    places = [resolve_place(interp, p, env, form) for p in to_py(form.cdr)]
    values = [get() for get, _ in places]
    for (_, set_), value in zip(places, values[1:] + values[:1]):
        set_(value)
    return NIL


@special("SHIFTF")
def sf_shiftf(interp, form, env):
    """(shiftf place... new-value)"""
    items = args_of(form, 2, None, "(shiftf place... value)")
    places = [resolve_place(interp, p, env, form) for p in items[:-1]]
    values = [get() for get, _ in places]
    new = interp.eval1(items[-1], env)
    for (_, set_), value in zip(places, values[1:] + [new]):
        set_(value)
    return values[0]
