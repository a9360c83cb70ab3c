"""defstruct: record types with a constructor, a predicate, a copier and slot accessors
(setf-able through `interp.struct_setters`), printing as #S(NAME :SLOT value ...)."""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp import lambdalist
from sexpgpu.lisp.closures import Closure
from sexpgpu.lisp.forms import syntax_error
from sexpgpu.lisp.printer import prin1_to_string, princ_to_string
from sexpgpu.lisp.registry import Builtin, builtin, special
from sexpgpu.lisp.types import NIL, Cons, Symbol, boolean, intern, keyword, lisp_list, to_py


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
    conc, constructors, parent = _options(interp, name.name, options)
    slots = _slots(parent, items[1:])
    struct = StructType(name.name, slots, parent)
    interp.structs[name.name] = struct
    _define_functions(interp, struct, conc, constructors, env)
    return name


def _options(interp, name: str, options: list) -> tuple[str, list, StructType | None]:
    """(:conc-name c) (:constructor make [boa-lambda-list])... (:include parent) ->
    (conc, [(constructor name, its lambda list or None)], parent)."""
    conc = name + "-"
    constructors: list = []
    default = True
    parent = None
    for option in options:
        opt_name = option.car.name if type(option) is Cons else option.name
        values = to_py(option.cdr) if type(option) is Cons else []
        if opt_name == "CONC-NAME":
            conc = "" if not values or values[0] is NIL else _designator(values[0])
        elif opt_name == "CONSTRUCTOR" and values:
            default = False
            if values[0] is not NIL:
                constructors.append((values[0].name, values[1] if len(values) > 1 else None))
        elif opt_name == "INCLUDE" and values:
            parent = interp.structs[values[0].name]
    if default:
        constructors.append(("MAKE-" + name, None))
    return conc, constructors, parent


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


def _define_functions(interp, struct: StructType, conc: str, constructors: list,
                      env) -> None:
    name = struct.name

    def make(*args):
        given = {args[i]: args[i + 1] for i in range(0, len(args) - 1, 2)}
        values = {}
        for slot, default in struct.slots:
            key = keyword(slot)
            values[slot] = given[key] if key in given else interp.eval1(default, env)
        return StructInstance(struct, values)

    for constructor, boa in constructors:
        interp.functions[intern(constructor)] = Builtin(constructor, make) if boa is None \
            else _boa_constructor(interp, struct, constructor, boa, make, env)
    interp.functions[intern(name + "-P")] = Builtin(
        name + "-P", lambda x: boolean(type(x) is StructInstance and x.struct.is_a(name)))
    interp.functions[intern("COPY-" + name)] = Builtin(
        "COPY-" + name, lambda x: StructInstance(x.struct, dict(x.values)))
    for slot, _ in struct.slots:
        accessor = intern(conc + slot)
        interp.functions[accessor] = Builtin(accessor.name, (lambda s: lambda x: x.values[s])(slot))
        interp.struct_setters[accessor] = _slot_setter(slot)


def _boa_constructor(interp, struct: StructType, name: str, boa: Any, make, env) -> Closure:
    """(:constructor name (x &optional (y 2) &key z)): a function taking that lambda list
    whose variables fill the slots of the same names (an optional or key parameter with
    no default of its own takes the slot's default); the other slots take their defaults."""
    ll = lambdalist.parse(boa, None)
    defaults = {slot: form for slot, form in struct.slots}
    ll.optional = [(var, defaults.get(var.name, NIL) if init is NIL else init, sup)
                   for var, init, sup in ll.optional]
    ll.keys = [(key, var, defaults.get(var.name, NIL) if init is NIL else init, sup)
               for key, var, init, sup in ll.keys]
    bound = list(ll.required) + [o[0] for o in ll.optional] + [k[1] for k in ll.keys] \
        + ([ll.rest] if ll.rest is not None else []) + [a[0] for a in ll.aux]
    args = []
    for var in bound:
        if var.name in defaults:
            args.extend([keyword(var.name), var])
    body = [Cons(intern("FUNCALL"), Cons(Builtin(name, make), lisp_list(args)))]
    return Closure(name, ll, body, env)


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
