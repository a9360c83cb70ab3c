"""Declarations that change meaning: `special` makes a binding or reference dynamic, and a
type declaration (`(type fixnum x)`, `(fixnum x)`) is checked, as SBCL checks it in safe
code, when the variable is bound and when a `locally` declaring it is entered; `the`
checks its value. Other declarations (ignore, optimize, inline, ...) change nothing.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp.closures import MISSING
from sexpgpu.lisp.conditions import CONDITION_PARENTS, Condition
from sexpgpu.lisp.errors import E_TYPE
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.types import MV, NIL, Cons, Symbol, intern, to_py
from sexpgpu.lisp.typespec import ATOMIC_TYPES, COMPOUND_TYPES, typep

SPECIAL = intern("SPECIAL")
DECLARE = intern("DECLARE")
_TYPE = intern("TYPE")
_VALUES = intern("VALUES")
# declaration identifiers that are not type names
_NOT_TYPES = frozenset(map(intern, (
    "IGNORE", "IGNORABLE", "OPTIMIZE", "SPECIAL", "INLINE", "NOTINLINE", "DYNAMIC-EXTENT",
    "FTYPE", "DECLARATION", "VALUES", "SB-EXT:MUFFLE-CONDITIONS")))


def _declaration_specs(body: Any):
    """Each (identifier arg...) in a body's leading declare forms."""
    node = body
    while type(node) is Cons and type(node.car) is Cons and node.car.car is DECLARE:
        for spec in to_py(node.car.cdr):
            if type(spec) is Cons:
                yield spec
        node = node.cdr


def declared_specials(body: Any) -> set:
    """Variables a body's leading (declare (special ...)) makes dynamic."""
    names: set = set()
    for spec in _declaration_specs(body):
        if spec.car is SPECIAL:
            names.update(to_py(spec.cdr))
    return names


class DynamicRefs(dict):
    """The variables of an environment frame that `(locally (declare (special x)))`
    makes refer to the dynamic binding: reading or setting one goes to the global
    table, past any lexical binding of the same name further out."""

    def __init__(self, interp: Any, names: set):
        super().__init__((name, None) for name in names)
        self.interp = interp

    def get(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            return default
        value = self.interp.globals.get(key, MISSING)
        if value is MISSING:
            raise self.interp._unbound(key, None)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        self.interp.globals[key] = value


def declared_types(body: Any) -> list[tuple[Symbol, Any]]:
    """(variable, type) for each type declaration of a body."""
    out = []
    for spec in _declaration_specs(body):
        head = spec.car
        if head is _TYPE and type(spec.cdr) is Cons:
            out.extend((var, spec.cdr.car) for var in to_py(spec.cdr.cdr))
        elif head not in _NOT_TYPES and (type(head) is Cons or type(head) is Symbol):
            out.extend((var, head) for var in to_py(spec.cdr))
    return out


def has_declarations(body: Any) -> bool:
    return type(body) is Cons and type(body.car) is Cons and body.car.car is DECLARE


def known_type(interp, spec: Any) -> bool:
    """Whether typep understands spec (a declaration of any other type is not checked)."""
    if type(spec) is Symbol:
        return spec.name in ATOMIC_TYPES or spec.name in interp.structs \
            or spec.name in interp.deftypes \
            or spec.name in CONDITION_PARENTS or spec.name in interp.user_condition_types
    if type(spec) is not Cons or type(spec.car) is not Symbol:
        return False
    head = spec.car.name
    if head in interp.deftypes:
        return True
    if head in ("OR", "AND", "NOT"):
        return all(known_type(interp, part) for part in to_py(spec.cdr))
    return head in COMPOUND_TYPES


def check_type(interp, value: Any, spec: Any, form: Any, what: str) -> None:
    """Signal TYPE-ERROR (datum value, expected type spec) unless value is of type spec."""
    if typep(interp, value, spec) or not known_type(interp, spec):
        return
    shown, wanted = prin1_to_string(value), prin1_to_string(spec)
    message = f"The value\n  {shown}\nis not of type\n  {wanted}"
    exc = error(E_TYPE, f"{what} is {shown}, not of its declared type {wanted}",
                getattr(form, "span", None), expected=wanted, actual=shown,
                fix="give it a value of the declared type, or change the declaration")
    exc.condition = Condition("TYPE-ERROR", message, {"DATUM": value, "EXPECTED-TYPE": spec})
    raise exc


def check_bound_types(interp, body: Any, env: Any, form: Any) -> None:
    """Check the declared types of the variables a body's declarations name."""
    for var, spec in declared_types(body):
        value = interp.lookup(var, env)
        check_type(interp, value, spec, form, f"{var.name.lower()}")


def check_the(interp, spec: Any, value: Any, form: Any) -> Any:
    """(the spec form): the value, checked (each of (values t...) against its values)."""
    if type(spec) is Cons and spec.car is _VALUES:
        values = list(value) if type(value) is MV else [value]
        for i, part in enumerate(to_py(spec.cdr)):
            if type(part) is Symbol and part.name.startswith("&"):
                break
            check_type(interp, values[i] if i < len(values) else NIL, part, form, "the value")
        return value
    first = (value[0] if value else NIL) if type(value) is MV else value
    check_type(interp, first, spec, form, "the value")
    return value
