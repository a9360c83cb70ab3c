"""define-condition and defstruct: the two user-defined record types of the subset."""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.errors import CONDITION_PARENTS, Condition
from sexpgpu.lisp.format_ import format_to_string
from sexpgpu.lisp.io import StringStream
from sexpgpu.lisp.printer import prin1_to_string, princ_to_string
from sexpgpu.lisp.registry import Builtin, special
from sexpgpu.lisp.specials import syntax_error
from sexpgpu.lisp.types import NIL, Cons, Symbol, boolean, intern, keyword, to_py


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
    slots = []
    for spec in slot_specs:
        slot = spec if type(spec) is Symbol else spec.car
        opts = _options(to_py(spec.cdr)) if type(spec) is Cons else {}
        slots.append((slot, opts.get("INITARG"), opts.get("INITFORM", NIL),
                      "INITFORM" in opts))
        for reader in (opts.get("READER"), opts.get("ACCESSOR")):
            if reader is not None:
                interp.functions[reader] = Builtin(
                    reader.name, (lambda s: lambda c: c.slots.get(s.name, NIL))(slot))
    report = None
    for option in items[3:]:
        if type(option) is Cons and getattr(option.car, "name", "") == "REPORT":
            report = option.cdr.car
    classes = interp.__dict__.setdefault("condition_classes", {})
    classes[name.name] = (slots, report, env)
    return name


def instantiate(interp, type_sym: Symbol, args: list) -> Condition:
    name = type_sym.name
    classes = interp.__dict__.setdefault("condition_classes", {})
    if name not in classes and name not in CONDITION_PARENTS:
        raise TypeError(f"unknown condition type {name}")
    initargs = {args[i]: args[i + 1] for i in range(0, len(args) - 1, 2)}
    cond = Condition(name, "")
    chain = []
    current: str | None = name
    while current is not None:
        chain.append(current)
        current = interp.user_condition_types.get(current, CONDITION_PARENTS.get(current))
    report = None
    for cls in chain:
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
    for key, value in initargs.items():
        if isinstance(key, Symbol) and key.is_keyword and key.name not in cond.slots:
            cond.slots[key.name] = value  # built-in types keep their initargs (:datum ...)
    control = initargs.get(keyword("FORMAT-CONTROL"))
    if control is not None:
        fargs = to_py(initargs.get(keyword("FORMAT-ARGUMENTS"), NIL))
        cond.slots["FORMAT-CONTROL"] = control
        cond.slots["FORMAT-ARGUMENTS"] = fargs
        cond.message = format_to_string(interp, control, fargs)
    elif report is not None and report[0] is not None:
        cond.message = _report(interp, cond, report[0], report[1])
    elif "DATUM" in cond.slots and "EXPECTED-TYPE" in cond.slots:
        cond.message = (f"The value\n  {prin1_to_string(cond.slots['DATUM'])}\nis not of type\n"
                        f"  {prin1_to_string(cond.slots['EXPECTED-TYPE'])}")
    else:
        cond.message = f"Condition of type {name} was signalled."
    return cond


def _report(interp, cond: Condition, report: Any, env) -> str:
    if type(report) is str:
        return report
    stream = StringStream()
    fn = interp.make_lambda(report, env, None) if type(report) is Cons and \
        getattr(report.car, "name", "") == "LAMBDA" else interp.function_of(report, env)
    interp.call1(fn, cond, stream)
    return "".join(stream.parts)


# ------------------------------------------------------------------ defstruct


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
    conc = name.name + "-"
    constructor = "MAKE-" + name.name
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
    slots = list(parent.slots) if parent else []
    for spec in items[1:]:
        if type(spec) is str:
            continue
        if type(spec) is Symbol:
            slots.append((spec.name, NIL))
        else:
            slots.append((spec.car.name, spec.cdr.car if type(spec.cdr) is Cons else NIL))
    struct = StructType(name.name, slots, parent)
    interp.structs[name.name] = struct

    def make(*args):
        given = {args[i]: args[i + 1] for i in range(0, len(args) - 1, 2)}
        values = {}
        for slot, default in slots:
            key = keyword(slot)
            values[slot] = given[key] if key in given else interp.eval1(default, env)
        return StructInstance(struct, values)

    if constructor:
        interp.functions[intern(constructor)] = _builtin(constructor, make)
    interp.functions[intern(name.name + "-P")] = _builtin(
        name.name + "-P", lambda x: boolean(type(x) is StructInstance and x.struct.is_a(name.name)))
    interp.functions[intern("COPY-" + name.name)] = _builtin(
        "COPY-" + name.name, lambda x: StructInstance(x.struct, dict(x.values)))
    for slot, _ in slots:
        accessor = intern(conc + slot)
        reader = (lambda s: lambda x: x.values[s])(slot)
        interp.functions[accessor] = _builtin(accessor.name, reader)
        interp.struct_setters[accessor] = (lambda s: _slot_setter(s))(slot)
    return name


def _slot_setter(slot: str):
    def access(obj, value, store):
        if store:
            obj.values[slot] = value
            return value
        return obj.values[slot]

    return access


def _designator(x: Any) -> str:
    return x if type(x) is str else x.name


def _builtin(name: str, fn) -> Builtin:
    return Builtin(name, fn)
