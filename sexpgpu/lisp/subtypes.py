"""`subtypep`: a proof of T, a counterexample for NIL, and NIL NIL when neither is found.

A yes comes from rules (the atomic type lattice, numeric ranges, `or`/`and`/`not`/
`member`/`eql`, condition and structure inheritance); a certain no comes from a witness,
an object of the first type that `typep` says is not of the second. Types written with
`satisfies`, or cases no rule covers and no witness refutes, answer NIL NIL as the
standard allows.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from sexpgpu.diagnostics import SexpError
from sexpgpu.lisp.conditions import CONDITION_PARENTS, Condition, is_subtype
from sexpgpu.lisp.equality import equal
from sexpgpu.lisp.registry import builtin
from sexpgpu.lisp.structs import StructInstance
from sexpgpu.lisp.types import (
    MV,
    NIL,
    Char,
    Cons,
    MDArray,
    Single,
    Symbol,
    T,
    intern,
    keyword,
    lisp_list,
)
from sexpgpu.lisp.typespec import _FIXNUM_MAX, _FIXNUM_MIN, expand_type, typep

# atomic type -> its direct supertypes (the lattice rules walk up it)
_PARENTS: dict[str, tuple[str, ...]] = {
    "NUMBER": ("ATOM",), "REAL": ("NUMBER",), "RATIONAL": ("REAL",), "FLOAT": ("REAL",),
    "INTEGER": ("RATIONAL",), "RATIO": ("RATIONAL",), "SINGLE-FLOAT": ("FLOAT",),
    "SHORT-FLOAT": ("FLOAT",), "DOUBLE-FLOAT": ("FLOAT",), "LONG-FLOAT": ("FLOAT",),
    "SYMBOL": ("ATOM",), "KEYWORD": ("SYMBOL",), "BOOLEAN": ("SYMBOL",),
    "NULL": ("BOOLEAN", "LIST"), "CONS": ("LIST",), "LIST": ("SEQUENCE",),
    "CHARACTER": ("ATOM",), "BASE-CHAR": ("CHARACTER",), "STANDARD-CHAR": ("BASE-CHAR",),
    "ARRAY": ("ATOM",), "SIMPLE-ARRAY": ("ARRAY",), "VECTOR": ("ARRAY", "SEQUENCE"),
    "SIMPLE-VECTOR": ("VECTOR", "SIMPLE-ARRAY"), "STRING": ("VECTOR",),
    "SIMPLE-STRING": ("STRING", "SIMPLE-ARRAY"), "BASE-STRING": ("STRING",),
    "FUNCTION": ("ATOM",), "COMPILED-FUNCTION": ("FUNCTION",), "HASH-TABLE": ("ATOM",),
    "CONDITION": ("ATOM",), "STRUCTURE-OBJECT": ("ATOM",), "SEQUENCE": ("T",), "ATOM": ("T",),
}
# integer types that are ranges: name -> (low, high), None for unbounded
_INTEGER_RANGES = {"INTEGER": (None, None), "SIGNED-BYTE": (None, None),
                   "UNSIGNED-BYTE": (0, None), "BIT": (0, 1),
                   "FIXNUM": (_FIXNUM_MIN, _FIXNUM_MAX)}
_NUMBER_KINDS = ("INTEGER", "RATIONAL", "REAL", "FLOAT", "SINGLE-FLOAT", "DOUBLE-FLOAT",
                 "SHORT-FLOAT", "LONG-FLOAT", "NUMBER")
# types that are unions of others (the or-rule proves (subtypep 'list '(or cons null)))
_UNIONS = {"LIST": ("CONS", "NULL"), "SEQUENCE": ("LIST", "VECTOR"),
           "RATIONAL": ("INTEGER", "RATIO"), "FLOAT": ("SINGLE-FLOAT", "DOUBLE-FLOAT"),
           "REAL": ("RATIONAL", "FLOAT")}
_STAR = intern("*")


def _samples() -> list:
    """One or more objects of every kind the Lisp has: the witnesses a no rests on."""
    return [0, 1, 2, -7, 300, _FIXNUM_MAX + 1, _FIXNUM_MIN - 1, Fraction(1, 2),
            Fraction(-3, 2), Single(0.5), Single(-2.0), 0.25, -1e300, Char("a"), Char("~"),
            Char("\u00e9"), NIL, T, intern("FOO"), keyword("K"), Cons(1, NIL),
            "abc", "", [1, 2], [], MDArray([2, 2], [1, 2, 3, 4])]


_SAMPLES = _samples()


def subtypep(interp: Any, a: Any, b: Any) -> tuple[bool, bool]:
    """(is a subtype, known for certain)."""
    a, b = _expand_all(interp, a), _expand_all(interp, b)
    if _proves(interp, a, b):
        return True, True
    for w in _witnesses(interp, a):
        if _safe_typep(interp, w, a) is True and _safe_typep(interp, w, b) is False:
            return False, True
    return False, False


def _safe_typep(interp: Any, x: Any, spec: Any) -> bool | None:
    """typep, or None when a satisfies predicate fails on x (then x proves nothing)."""
    try:
        return typep(interp, x, spec)
    except SexpError:
        return None


def _expand_all(interp: Any, spec: Any) -> Any:
    """deftype names replaced everywhere in or/and/not combinations."""
    spec = expand_type(interp, spec)
    if _head(spec) in ("OR", "AND", "NOT"):
        return Cons(spec.car, lisp_list([_expand_all(interp, x) for x in _args(spec)]))
    return spec


def _head(spec: Any) -> str:
    if type(spec) is Cons and type(spec.car) is Symbol:
        return spec.car.name
    return ""


def _args(spec: Cons) -> list:
    out, node = [], spec.cdr
    while type(node) is Cons:
        out.append(node.car)
        node = node.cdr
    return out


def _proves(interp: Any, a: Any, b: Any) -> bool:
    """Whether the rules show every object of type a is of type b."""
    if b is T or a is NIL or equal(a, b):
        return True
    ha, hb = _head(a), _head(b)
    if ha == "OR":
        return all(_proves(interp, x, b) for x in _args(a))
    if hb == "AND":
        return all(_proves(interp, a, y) for y in _args(b))
    if ha in ("MEMBER", "EQL"):
        return all(_safe_typep(interp, x, b) for x in _args(a))
    if ha == "AND" and any(_proves(interp, x, b) for x in _args(a)):
        return True
    if hb == "OR" and any(_proves(interp, a, y) for y in _args(b)):
        return True
    if hb == "NOT":
        return _disjoint(interp, a, _args(b)[0])
    if ha == "NOT" or hb in ("SATISFIES", "MEMBER", "EQL"):
        return False
    ra, rb = _range(a), _range(b)
    if ra is not None and rb is not None:
        return _range_within(ra, rb)
    if type(a) is Symbol and type(b) is Symbol:
        return _atomic_within(interp, a.name, b.name)
    if type(a) is Symbol and a.name in _UNIONS and hb == "OR":
        return all(_proves(interp, intern(x), b) for x in _UNIONS[a.name])
    return False


def _atomic_within(interp: Any, a: str, b: str) -> bool:
    """The lattice, condition inheritance and structure inclusion for named types."""
    if a == b or b == "T":
        return True
    if a in CONDITION_PARENTS or a in interp.user_condition_types:
        return is_subtype(a, b, interp.user_condition_types) or b == "ATOM"
    struct = interp.structs.get(a)
    if struct is not None:
        return struct.is_a(b) or b == "ATOM"
    return _atomic_kind_within(a, b)


def _range(spec: Any) -> tuple[str, Any, Any] | None:
    """A numeric type as (kind, low, high): bounds are numbers, (number) when exclusive,
    or None; integer bounds are made inclusive."""
    if type(spec) is Symbol:
        if spec.name in _INTEGER_RANGES:
            low, high = _INTEGER_RANGES[spec.name]
            return "INTEGER", low, high
        return (spec.name, None, None) if spec.name in _NUMBER_KINDS + ("RATIO",) else None
    head, args = _head(spec), _args(spec) if type(spec) is Cons else []
    if head in ("UNSIGNED-BYTE", "SIGNED-BYTE", "MOD") and args and type(args[0]) is int:
        n = args[0]
        if head == "MOD":
            return "INTEGER", 0, n - 1
        return ("INTEGER", 0, 2 ** n - 1) if head == "UNSIGNED-BYTE" else \
            ("INTEGER", -(2 ** (n - 1)), 2 ** (n - 1) - 1)
    if head not in _NUMBER_KINDS:
        return None
    low = _bound(args[0] if args else _STAR)
    high = _bound(args[1] if len(args) > 1 else _STAR)
    if head == "INTEGER":
        low = low + 1 if type(low) is _Exclusive else low
        high = high - 1 if type(high) is _Exclusive else high
    return head, low, high


def _bound(x: Any) -> Any:
    if x is _STAR:
        return None
    if type(x) is Cons:  # (5): an exclusive bound
        return _Exclusive(x.car)
    return x


class _Exclusive:
    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __add__(self, n: int) -> Any:  # an exclusive integer bound made inclusive
        return _ceil_floor(self.value, n)

    def __sub__(self, n: int) -> Any:
        return _ceil_floor(self.value, -n)


def _ceil_floor(value: Any, step: int) -> int:
    if step > 0:
        return math.floor(value) + 1
    return math.ceil(value) - 1


def _range_within(ra: tuple, rb: tuple) -> bool:
    kind_a, low_a, high_a = ra
    kind_b, low_b, high_b = rb
    if kind_a != kind_b and not _atomic_kind_within(kind_a, kind_b):
        return False
    return _bound_ok(low_a, low_b, True) and _bound_ok(high_a, high_b, False)


def _atomic_kind_within(a: str, b: str) -> bool:
    """Whether named type `a` is `b` or below it in the lattice (_PARENTS)."""
    todo = [a]
    while todo:
        name = todo.pop()
        if name == b:
            return True
        todo.extend(_PARENTS.get(name, ()))
    return False


def _bound_ok(inner: Any, outer: Any, lower: bool) -> bool:
    """Whether a bound `inner` lies within `outer` (both lower or both upper bounds)."""
    if outer is None:
        return True
    if inner is None:
        return False
    iv = inner.value if type(inner) is _Exclusive else inner
    ov = outer.value if type(outer) is _Exclusive else outer
    if type(outer) is _Exclusive and type(inner) is not _Exclusive:
        return iv > ov if lower else iv < ov
    return iv >= ov if lower else iv <= ov


def _disjoint(interp: Any, a: Any, b: Any) -> bool:
    """Whether types a and b share no object: shown when their kinds of object differ."""
    ka, kb = _kinds(interp, a), _kinds(interp, b)
    return ka is not None and kb is not None and not (ka & kb)


# the Python kinds of object each atomic type can hold
_KINDS = {
    "NUMBER": {int, Fraction, Single, float}, "REAL": {int, Fraction, Single, float},
    "RATIONAL": {int, Fraction}, "INTEGER": {int}, "FIXNUM": {int}, "BIGNUM": {int},
    "BIT": {int}, "UNSIGNED-BYTE": {int}, "SIGNED-BYTE": {int}, "RATIO": {Fraction},
    "FLOAT": {Single, float}, "SINGLE-FLOAT": {Single}, "SHORT-FLOAT": {Single},
    "DOUBLE-FLOAT": {float}, "LONG-FLOAT": {float}, "CHARACTER": {Char},
    "BASE-CHAR": {Char}, "STANDARD-CHAR": {Char}, "SYMBOL": {Symbol}, "KEYWORD": {Symbol},
    "BOOLEAN": {Symbol}, "NULL": {Symbol}, "CONS": {Cons}, "LIST": {Cons, Symbol},
    "STRING": {str}, "SIMPLE-STRING": {str}, "BASE-STRING": {str},
    "SIMPLE-VECTOR": {list}, "VECTOR": {list, str}, "ARRAY": {list, str, MDArray},
    "SIMPLE-ARRAY": {list, str, MDArray}, "SEQUENCE": {Cons, Symbol, list, str},
}


def _kinds(interp: Any, spec: Any) -> set | None:
    """An upper bound of the Python types of a type's objects (None: unknown)."""
    if type(spec) is Symbol:
        return _KINDS.get(spec.name)
    head = _head(spec)
    if head in ("MEMBER", "EQL"):
        return {type(x) for x in _args(spec)}
    if head == "OR":
        parts = [_kinds(interp, x) for x in _args(spec)]
        return None if any(p is None for p in parts) else set().union(*parts)
    if head == "AND":
        parts = [p for p in (_kinds(interp, x) for x in _args(spec)) if p is not None]
        return set.intersection(*parts) if parts else None
    rng = _range(spec)
    return _KINDS.get(rng[0]) if rng is not None else None


def _witnesses(interp: Any, spec: Any) -> list:
    """Candidate objects of type `spec` (the caller keeps those typep accepts)."""
    out = list(_SAMPLES)
    head = _head(spec)
    if head in ("MEMBER", "EQL"):
        return _args(spec)
    if head in ("OR", "AND", "NOT"):
        for part in _args(spec):
            out.extend(_witnesses(interp, part))
        return out
    rng = _range(spec)
    if rng is not None:
        out.extend(_range_samples(rng))
    if type(spec) is Symbol:
        out.extend(_named_instances(interp, spec.name))
    return out


def _named_instances(interp: Any, name: str) -> list:
    """An object of a condition or structure type (of exactly that type)."""
    if name in CONDITION_PARENTS or name in interp.user_condition_types:
        return [Condition(name, "")]
    struct = interp.structs.get(name)
    return [StructInstance(struct, {})] if struct is not None else []


def _range_samples(rng: tuple) -> list:
    """Numbers at and just inside a range's bounds, in the range's kind."""
    kind, low, high = rng
    points = []
    for bound in (low, high):
        if bound is not None:
            value = bound.value if type(bound) is _Exclusive else bound
            points.extend([value, value + Fraction(1, 2), value - Fraction(1, 2),
                           value + 1, value - 1])
    if kind in ("SINGLE-FLOAT", "SHORT-FLOAT", "FLOAT"):
        points = [Single(p) for p in points if abs(p) < 1e38]
    elif kind in ("DOUBLE-FLOAT", "LONG-FLOAT"):
        points = [float(p) for p in points if abs(p) < 1e308]
    elif kind == "INTEGER":
        points = [int(p) for p in points if type(p) is int or p.denominator == 1]
    return points


@builtin("SUBTYPEP", interp=True)
def lisp_subtypep(interp, a, b, env=NIL):
    sub, known = subtypep(interp, a, b)
    return MV((T if sub else NIL, T if known else NIL))

