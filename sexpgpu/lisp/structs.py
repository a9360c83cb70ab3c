"""defstruct: record types with a constructor, a predicate, a copier and slot accessors
(setf-able through `interp.struct_setters`), printing as #S(NAME :SLOT value ...)."""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.forms import syntax_error
from sexpgpu.lisp.printer import prin1_to_string, princ_to_string
from sexpgpu.lisp.registry import Builtin, builtin, special
from sexpgpu.lisp.types import NIL, Cons, Symbol, boolean, intern, keyword, to_py


class StructType:
    __slots__ = ("name", "slots", "parent")

    def __init__(self, name: str, slots: list, parent: StructType | None):
        self.name = name
        self.slots = slots  # [(name, default form)]
        self.parent = parent

    def is_a(self, name: str) -> bool:
        t: StructType | None = self
        while t is not None:
            if t.name == name:
                return True
            t = t.parent
        return name in ("STRUCTURE-OBJECT", "T")


class StructInstance:
    __slots__ = ("struct", "values")

    def __init__(self, struct: StructType, values: dict):
        self.struct = struct
        self.values = values

    def lisp_repr(self, escape: bool) -> str:
        show = prin1_to_string if escape else princ_to_string
        parts = [f"#S({self.struct.name}"]
        for slot, _ in self.struct.slots:
            parts.append(f" :{slot} {show(self.values[slot])}")
        return "".join(parts) + ")"


@special("DEFSTRUCT")
def sf_defstruct(interp, form, env):
    """(defstruct name-or-(name option...) [doc] slot-or-(slot default)...)"""
    items = to_py(form.cdr)
    if not items:
        raise syntax_error(form, "malformed defstruct", "write (defstruct name slot...)")
    head = items[0]
    options = to_py(head.cdr) if type(head) is Cons else []
    name = head.car if type(head) is Cons else head
    if type(name) is not Symbol:
        raise syntax_error(form, "malformed defstruct", "write (defstruct name slot...)")
    conc, constructor, parent = _options(interp, name.name, options)
    slots = _slots(parent, items[1:])
    struct = StructType(name.name, slots, parent)
    interp.structs[name.name] = struct
    _define_functions(interp, struct, conc, constructor, env)
    return name


def _options(interp, name: str, options: list) -> tuple[str, str | None, StructType | None]:
    """(:conc-name c) (:constructor make) (:include parent) -> (conc, constructor, parent)."""
    conc = name + "-"
    constructor: str | None = "MAKE-" + name
    parent = None
    for option in options:
        opt_name = option.car.name if type(option) is Cons else option.name
        values = to_py(option.cdr) if type(option) is Cons else []
        if opt_name == "CONC-NAME":
            conc = "" if not values or values[0] is NIL else _designator(values[0])
        elif opt_name == "CONSTRUCTOR" and values:
            constructor = values[0].name if values[0] is not NIL else None
        elif opt_name == "INCLUDE" and values:
            parent = interp.structs[values[0].name]
    return conc, constructor, parent


def _slots(parent: StructType | None, specs: list) -> list:
    """[(slot name, default form)]: the parent's slots, then these (a docstring skipped)."""
    slots = list(parent.slots) if parent else []
    for spec in specs:
        if type(spec) is str:
            continue
        if type(spec) is Symbol:
            slots.append((spec.name, NIL))
        else:
            slots.append((spec.car.name, spec.cdr.car if type(spec.cdr) is Cons else NIL))
    return slots


def _define_functions(interp, struct: StructType, conc: str, constructor: str | None,
                      env) -> None:
    name = struct.name

    def make(*args):
        given = {args[i]: args[i + 1] for i in range(0, len(args) - 1, 2)}
        values = {}
        for slot, default in struct.slots:
            key = keyword(slot)
            values[slot] = given[key] if key in given else interp.eval1(default, env)
        return StructInstance(struct, values)

    if constructor:
        interp.functions[intern(constructor)] = Builtin(constructor, make)
    interp.functions[intern(name + "-P")] = Builtin(
        name + "-P", lambda x: boolean(type(x) is StructInstance and x.struct.is_a(name)))
    interp.functions[intern("COPY-" + name)] = Builtin(
        "COPY-" + name, lambda x: StructInstance(x.struct, dict(x.values)))
    for slot, _ in struct.slots:
        accessor = intern(conc + slot)
        interp.functions[accessor] = Builtin(accessor.name, (lambda s: lambda x: x.values[s])(slot))
        interp.struct_setters[accessor] = _slot_setter(slot)


def _slot_setter(slot: str):
    def access(obj, value, store):
        if store:
            obj.values[slot] = value
            return value
        return obj.values[slot]

    return access


def _designator(x: Any) -> str:
    return x if type(x) is str else x.name


@builtin("COPY-STRUCTURE")
def copy_structure(x):
    """A new instance with the same slot values (a shallow copy)."""
    if type(x) is not StructInstance:
        raise TypeError("lisp: not a structure")
    return StructInstance(x.struct, dict(x.values))
