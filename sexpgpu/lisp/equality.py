"""eq, eql, equal, equalp (the builtins and the Python predicates the other modules
use) and hashing keys that agree with them."""

from __future__ import annotations

import math
import zlib
from fractions import Fraction
from typing import Any

from sexpgpu.lisp.registry import builtin
from sexpgpu.lisp.types import NUMBER_TYPES, Char, Cons, Single, boolean, check_not_circular


def eq(a: Any, b: Any) -> bool:
    if a is b:
        return True
    ta = type(a)
    # fixnums and characters are immediate in SBCL, so eq on equal ones is true
    return ta is type(b) and (ta is int or ta is Char) and a == b


def eql(a: Any, b: Any) -> bool:
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is float or ta is Single:
        # 0.0 and -0.0 are = but not eql
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if ta in (int, Fraction, Char):
        return a == b
    return False


def equal(a: Any, b: Any) -> bool:
    start, cells = a, 0
    while True:
        if eql(a, b):
            return True
        ta = type(a)
        if ta is str:
            return type(b) is str and a == b
        if ta is Cons and type(b) is Cons:
            if not equal(a.car, b.car):
                return False
            a, b = a.cdr, b.cdr
            cells += 1
            check_not_circular(start, cells)
            continue
        return False


def equalp(a: Any, b: Any) -> bool:
    if eql(a, b):
        return True
    ta, tb = type(a), type(b)
    if ta in NUMBER_TYPES and tb in NUMBER_TYPES:
        return a == b
    if ta is str and tb is str:
        return a.lower() == b.lower()
    if ta is Char and tb is Char:
        return a.ch.lower() == b.ch.lower()
    if ta is Cons and tb is Cons:
        return equalp(a.car, b.car) and equalp(a.cdr, b.cdr)
    if ta in (list, str) and tb in (list, str):
        # a string and a vector holding the same characters are equalp
        if len(a) != len(b):
            return False
        xs = [Char(c) for c in a] if ta is str else a
        ys = [Char(c) for c in b] if tb is str else b
        return all(equalp(x, y) for x, y in zip(xs, ys))
    if hasattr(a, "table") and hasattr(b, "table"):
        return a.equalp_to(b, equalp)
    if ta is tb and getattr(a, "struct", None) is not None:  # structures: slot by slot
        return a.struct is b.struct and all(equalp(a.values[s], b.values[s]) for s in a.values)
    return False


builtin("EQ")(lambda a, b: boolean(eq(a, b)))
builtin("EQL")(lambda a, b: boolean(eql(a, b)))
builtin("EQUAL")(lambda a, b: boolean(equal(a, b)))
builtin("EQUALP")(lambda a, b: boolean(equalp(a, b)))


@builtin("SXHASH")
def sxhash(x: Any) -> int:
    """A non-negative fixnum, the same for equal objects and in every run (the first
    levels of a list decide it, as in SBCL; other objects hash by kind only)."""
    return zlib.crc32(_hash_text(x, 4).encode("utf-8")) & 0x3FFFFFFFFFFFFFFF


def _hash_text(x: Any, depth: int) -> str:
    t = type(x)
    if t is str:
        return "s" + x
    if t is Cons:
        if depth == 0:
            return "c"
        return f"({_hash_text(x.car, depth - 1)} . {_hash_text(x.cdr, depth - 1)})"
    if t in (int, Fraction, float, Single):
        return f"{t.__name__}{x!r}"
    if t is Char:
        return "#" + x.ch
    name = getattr(x, "name", None)
    if type(name) is str and hasattr(x, "is_keyword"):  # a symbol
        return ("k" if x.is_keyword else "y") + name
    return t.__name__  # vectors, hash tables...: equal only when eq, so any value works


def eql_key(x: Any) -> Any:
    t = type(x)
    if t is float or t is Single:
        # 0.0 and -0.0 are different keys under eql (and equal)
        return (t, x, math.copysign(1.0, x))
    if t in (int, Fraction):
        return (t, x)
    if t is Char:
        return x
    return _Identity(x)


def _cons_key(x: Cons, part_key) -> tuple:
    """The key of a (possibly dotted) list: its elements and final tail keyed by part_key."""
    parts = []
    node = x
    while type(node) is Cons:
        parts.append(part_key(node.car))
        node = node.cdr
    return ("cons", tuple(parts), part_key(node))


def equal_key(x: Any) -> Any:
    t = type(x)
    if t is str:
        return x
    if t is Cons:
        return _cons_key(x, equal_key)
    return eql_key(x)


def equalp_key(x: Any) -> Any:
    t = type(x)
    if t in (int, float, Single, Fraction):
        return ("num", x)
    if t is str:
        return _folded(x)
    if t is Char:
        return Char(x.ch.lower())
    if t is Cons:
        return _cons_key(x, equalp_key)
    if t is list:
        if all(type(i) is Char for i in x):  # equalp to the string of its characters
            return _folded("".join(i.ch for i in x))
        return ("vec", tuple(equalp_key(i) for i in x))
    return eql_key(x)


def _folded(text: str) -> str:
    """A string's equalp key: each character case-folded as char-equal does it."""
    return "".join(c.lower() for c in text)


class _Identity:
    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return type(other) is _Identity and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)
