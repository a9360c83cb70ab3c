"""Type specifiers: `typep`, `type-of` and `subtypep` for the subset's objects."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from sexpgpu.lisp.closures import Closure
from sexpgpu.lisp.conditions import Condition, is_subtype
from sexpgpu.lisp.equality import eql
from sexpgpu.lisp.registry import Builtin, builtin
from sexpgpu.lisp.types import (
    NIL,
    Char,
    Cons,
    MDArray,
    Single,
    Symbol,
    T,
    boolean,
    intern,
    is_number,
    lisp_list,
)

_FIXNUM_MAX = 4611686018427387903
_FIXNUM_MIN = -4611686018427387904


def _is_function(x: Any) -> bool:
    return type(x) in (Closure, Builtin)


_ATOMIC = {
    "T": lambda x: True,
    "NIL": lambda x: False,
    "NULL": lambda x: x is NIL,
    "LIST": lambda x: x is NIL or type(x) is Cons,
    "CONS": lambda x: type(x) is Cons,
    "ATOM": lambda x: type(x) is not Cons,
    "SYMBOL": lambda x: isinstance(x, Symbol),
    "KEYWORD": lambda x: isinstance(x, Symbol) and x.is_keyword,
    "BOOLEAN": lambda x: x is NIL or x is T,
    "NUMBER": is_number,
    "REAL": lambda x: type(x) in (int, float, Single, Fraction),
    "RATIONAL": lambda x: type(x) in (int, Fraction),
    "INTEGER": lambda x: type(x) is int,
    "FIXNUM": lambda x: type(x) is int and _FIXNUM_MIN <= x <= _FIXNUM_MAX,
    "BIT": lambda x: type(x) is int and 0 <= x <= 1,
    "UNSIGNED-BYTE": lambda x: type(x) is int and x >= 0,
    "SIGNED-BYTE": lambda x: type(x) is int,
    "BIGNUM": lambda x: type(x) is int and not _FIXNUM_MIN <= x <= _FIXNUM_MAX,
    "RATIO": lambda x: type(x) is Fraction,
    "FLOAT": lambda x: type(x) in (float, Single),
    "SINGLE-FLOAT": lambda x: type(x) is Single,
    "SHORT-FLOAT": lambda x: type(x) is Single,
    "DOUBLE-FLOAT": lambda x: type(x) is float,
    "LONG-FLOAT": lambda x: type(x) is float,
    "STRING": lambda x: type(x) is str,
    "SIMPLE-STRING": lambda x: type(x) is str,
    "BASE-STRING": lambda x: type(x) is str,
    "CHARACTER": lambda x: type(x) is Char,
    "BASE-CHAR": lambda x: type(x) is Char and ord(x.ch) < 128,
    "STANDARD-CHAR": lambda x: type(x) is Char and (" " <= x.ch <= "~" or x.ch == "\n"),
    "VECTOR": lambda x: type(x) in (list, str),
    "SIMPLE-VECTOR": lambda x: type(x) is list,
    "ARRAY": lambda x: type(x) in (list, str, MDArray),
    "SIMPLE-ARRAY": lambda x: type(x) in (list, str, MDArray),
    "SEQUENCE": lambda x: x is NIL or type(x) in (Cons, list, str),
    "FUNCTION": _is_function,
    "COMPILED-FUNCTION": _is_function,
    "HASH-TABLE": lambda x: type(x).__name__ == "HashTable",
}


def expand_type(interp: Any, spec: Any) -> Any:
    """A type specifier with deftype names replaced by what they stand for (at the top)."""
    for _ in range(1000):  # a deftype that expands into itself must stop somewhere
        if type(spec) is Symbol and spec.name in interp.deftypes:
            spec = interp.call1(interp.deftypes[spec.name])
        elif type(spec) is Cons and type(spec.car) is Symbol and spec.car.name in interp.deftypes:
            spec = interp.call1(interp.deftypes[spec.car.name], *list(spec.cdr))
        else:
            return spec
    raise ValueError("lisp: a deftype expands forever")


def typep(interp: Any, x: Any, spec: Any) -> bool:
    """Whether `x` is of type `spec` (a symbol or a compound specifier)."""
    if type(spec) is Symbol:
        check = _ATOMIC.get(spec.name)
        if check is not None:
            return check(x)
        if spec.name in interp.deftypes:
            return typep(interp, x, expand_type(interp, spec))
        if type(x) is Condition:
            return is_subtype(x.type, spec.name, interp.user_condition_types)
        struct = getattr(x, "struct", None)
        if struct is not None:
            return struct.is_a(spec.name)
        return False
    if type(spec) is Cons:
        return _compound_typep(interp, x, spec)
    return False


_RANGE_TYPES = ("INTEGER", "REAL", "FLOAT", "RATIONAL", "SINGLE-FLOAT", "DOUBLE-FLOAT", "NUMBER")
ATOMIC_TYPES = frozenset(_ATOMIC)
# compound type specifiers typep decides exactly (others fall back to their head)
COMPOUND_TYPES = frozenset(("OR", "AND", "NOT", "MEMBER", "EQL", "SATISFIES", "UNSIGNED-BYTE",
                            "SIGNED-BYTE", "MOD") + _RANGE_TYPES)


def _compound_typep(interp: Any, x: Any, spec: Cons) -> bool:
    """(or ...) (and ...) (not t) (member ...) (eql v) (satisfies f) (integer low high)..."""
    head = spec.car.name if isinstance(spec.car, Symbol) else ""
    if head in interp.deftypes:
        return typep(interp, x, expand_type(interp, spec))
    args = list(spec.cdr)
    if head == "OR":
        return any(typep(interp, x, a) for a in args)
    if head == "AND":
        return all(typep(interp, x, a) for a in args)
    if head == "NOT":
        return not typep(interp, x, args[0])
    if head in ("MEMBER",):
        return any(eql(x, a) for a in args)
    if head == "EQL":
        return eql(x, args[0])
    if head == "SATISFIES":
        return interp.call1(interp.function_of(args[0], None), x) is not NIL
    if head in ("UNSIGNED-BYTE", "SIGNED-BYTE", "MOD"):
        return type(x) is int and _in_byte_range(head, x, args[0] if args else intern("*"))
    if head in _RANGE_TYPES:
        if not typep(interp, x, intern(head)):
            return False
        low = args[0] if args else intern("*")
        high = args[1] if len(args) > 1 else intern("*")
        return _in_bound(x, low, True) and _in_bound(x, high, False)
    return typep(interp, x, spec.car)


def _in_byte_range(head: str, x: int, size: Any) -> bool:
    """(unsigned-byte s), (signed-byte s), (mod n); a size of * means any integer of the kind."""
    if head == "MOD":
        return 0 <= x < size
    if isinstance(size, Symbol):
        return x >= 0 or head == "SIGNED-BYTE"
    if head == "UNSIGNED-BYTE":
        return 0 <= x < 2 ** size
    return -(2 ** (size - 1)) <= x < 2 ** (size - 1)


def _in_bound(x: Any, bound: Any, lower: bool) -> bool:
    if isinstance(bound, Symbol):
        return True
    if type(bound) is Cons:  # exclusive bound
        value = bound.car
        return x > value if lower else x < value
    return x >= bound if lower else x <= bound


def type_of(x: Any) -> Any:
    t = type(x)
    if t is int:
        if x in (0, 1):
            return intern("BIT")
        if 0 <= x <= _FIXNUM_MAX:
            return lisp_list([intern("INTEGER"), 0, _FIXNUM_MAX])
        return intern("FIXNUM" if _FIXNUM_MIN <= x <= _FIXNUM_MAX else "BIGNUM")
    names = {Single: "SINGLE-FLOAT", float: "DOUBLE-FLOAT", Fraction: "RATIO",
             Char: "STANDARD-CHAR", Cons: "CONS"}
    if t in names:
        return intern(names[t])
    if x is NIL:
        return intern("NULL")
    if x is T:
        return intern("BOOLEAN")
    if isinstance(x, Symbol):
        return intern("KEYWORD" if x.is_keyword else "SYMBOL")
    if t is str:
        return lisp_list([intern("SIMPLE-ARRAY"), intern("CHARACTER"), lisp_list([len(x)])])
    if t is list:
        return lisp_list([intern("SIMPLE-VECTOR"), len(x)])
    if _is_function(x):
        return intern("FUNCTION")
    if hasattr(x, "type") and type(x).__name__ == "Condition":
        return intern(x.type)
    struct = getattr(x, "struct", None)
    if struct is not None:
        return intern(struct.name)
    if t.__name__ == "HashTable":
        return intern("HASH-TABLE")
    return intern(t.__name__.upper())


builtin("TYPE-OF")(type_of)
builtin("TYPEP", interp=True)(lambda interp, x, spec, env=NIL: boolean(typep(interp, x, spec)))
