"""The Lisp data model: symbols, conses, characters, single floats, arrays, multiple values.

Integers are Python ints, ratios `fractions.Fraction`, doubles Python floats, strings
Python str, vectors Python lists. Reader conses carry their source `Span` in `span`.
"""

from __future__ import annotations

import math
import struct
import sys
from fractions import Fraction
from typing import Any

from sexpgpu.diagnostics import Span

# Lisp integers are bignums that print in full (SBCL prints any size); lift Python's cap.
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)


class FormList(list):
    """Top-level forms as read; `spans[i]` is where form i starts (atoms have no Cons)."""

    __slots__ = ("spans",)

    def __init__(self, forms=(), spans=None):
        super().__init__(forms)
        self.spans = list(spans or [])


class Symbol:
    """An interned symbol; keywords are symbols whose name starts with no package."""

    __slots__ = ("name", "is_keyword", "interned", "fkey", "bkey", "__weakref__")

    def __init__(self, name: str, is_keyword: bool = False, interned: bool = True):
        self.name = name
        self.is_keyword = is_keyword
        self.interned = interned
        # Distinct keys for the function and block namespaces of lexical environments.
        self.fkey = _NamespaceKey(self, "function")
        self.bkey = _NamespaceKey(self, "block")

    def __repr__(self) -> str:
        return (":" if self.is_keyword else "") + self.name

    def __reduce__(self):
        if not self.interned:
            return (Uninterned, (self.name,))
        return (keyword if self.is_keyword else intern, (self.name,))


class _NamespaceKey:
    __slots__ = ("symbol", "kind")

    def __init__(self, symbol: Symbol, kind: str):
        self.symbol = symbol
        self.kind = kind


_SYMBOLS: dict[str, Symbol] = {}
_KEYWORDS: dict[str, Symbol] = {}


def intern(name: str) -> Symbol:
    sym = _SYMBOLS.get(name)
    if sym is None:
        sym = _SYMBOLS[name] = Symbol(name)
    return sym


def find_interned(name: str, keywords: bool = False) -> Symbol | None:
    """The symbol of that name if one was ever interned (read, or made by intern)."""
    return (_KEYWORDS if keywords else _SYMBOLS).get(name)


def keyword(name: str) -> Symbol:
    sym = _KEYWORDS.get(name)
    if sym is None:
        sym = _KEYWORDS[name] = Symbol(name, True)
    return sym


def Uninterned(name: str) -> Symbol:  # noqa: N802 - reads like the class it makes
    """A symbol made by gensym / make-symbol / #: — equal only to itself."""
    return Symbol(name, False, False)


NIL = intern("NIL")
T = intern("T")


class Cons:
    """A cons cell; `span` is where the reader saw it (None for built conses).

    Its `repr` is the Lisp printed form; printer.py installs it, so that this module
    does not depend on the printer."""

    __slots__ = ("car", "cdr", "span")

    def __init__(self, car: Any, cdr: Any, span: Span | None = None):
        self.car = car
        self.cdr = cdr
        self.span = span

    def __iter__(self):
        """Iterate the elements of a proper (or the proper part of a dotted) list."""
        node = self
        while type(node) is Cons:
            yield node.car
            node = node.cdr

    def __reduce__(self):
        return (Cons, (self.car, self.cdr, self.span))


class Char:
    """A character, distinct from a one-letter string."""

    __slots__ = ("ch",)

    def __init__(self, ch: str):
        self.ch = ch

    def __eq__(self, other: object) -> bool:
        return type(other) is Char and other.ch == self.ch

    def __hash__(self) -> int:
        return hash(("char", self.ch))

    def __reduce__(self):
        return (Char, (self.ch,))

    def __repr__(self) -> str:
        return f"#\\{self.ch}"


_PACK = struct.Struct("f")
_SINGLE_MAX = (2 - 2 ** -23) * 2.0 ** 127
_SINGLE_ROUNDS_TO_MAX = _SINGLE_MAX + 2.0 ** 103  # half an ulp past it rounds to infinity


class FloatOverflow(OverflowError):
    """A float result too large for its format: FLOATING-POINT-OVERFLOW in Lisp (an
    OverflowError of any other kind is an integer past the evaluation limits)."""


def to_single(x: float) -> float:
    """Round a Python float to the nearest float32 value (an infinity past the range)."""
    r = _PACK.unpack(_PACK.pack(x))[0]
    if r - r != 0.0 and r != x and x == x and abs(x) < _SINGLE_ROUNDS_TO_MAX:
        return math.copysign(_SINGLE_MAX, x)  # within half an ulp of the largest single
    return r


class Single(float):
    """A single-float: a float32 value carried in a Python float (prints without d0)."""

    __slots__ = ()

    def __new__(cls, value: float):
        return float.__new__(cls, to_single(float(value)))


def single(value: Any) -> Single:
    """A Lisp arithmetic result as a single-float: one past the single-float range (from
    finite arguments) is a FloatOverflow, as SBCL traps it; hosts use Single, which gives
    an infinity."""
    try:
        result = Single(value)
    except OverflowError:  # an integer or ratio past the float range
        raise FloatOverflow("single-float overflow") from None
    if result - result != 0.0 and result == result and not math.isinf(value):
        raise FloatOverflow("single-float overflow")
    return result


NUMBER_TYPES = (int, Fraction, Single, float)
_NUMBER_TYPES = frozenset(NUMBER_TYPES)


def is_number(x: Any) -> bool:
    return type(x) in _NUMBER_TYPES


class MDArray:
    """An array of rank other than one: dimensions and row-major contents.

    (Arrays of rank one are Python lists, or str for strings; the printer prints this
    one as #nA(...).)"""

    __slots__ = ("dims", "data")

    def __init__(self, dims: list, data: list):
        self.dims = dims
        self.data = data

    def index(self, indices: tuple) -> int:
        if len(indices) != len(self.dims):
            raise IndexError("wrong number of subscripts")
        flat = 0
        for i, d in zip(indices, self.dims):
            if not 0 <= i < d:
                raise IndexError("subscript out of bounds")
            flat = flat * d + i
        return flat


class MV(tuple):
    """Multiple values in flight; consumers that want one value take the first."""

    __slots__ = ()


def primary(value: Any) -> Any:
    """The first of possibly-multiple values (NIL for zero values)."""
    if type(value) is MV:
        return value[0] if value else NIL
    return value


def lisp_list(items, tail: Any = NIL) -> Any:
    """Build a Lisp list from a Python iterable."""
    result = tail
    for item in reversed(list(items)):
        result = Cons(item, result)
    return result


# past this many cells a walker checks whether its list is circular: first within a
# bound (a short cycle is found at once: a walker that conses, REVERSE, had made a
# million cells, ~1-3 s of CPU, before it noticed a 2-cell cycle), then in full
_SHORT_LIST = 1 << 10
_LONG_LIST = 1 << 20


def is_circular(lst: Any, steps: int | None = None) -> bool:
    """Floyd's check: whether following cdrs from `lst` loops forever (within `steps`
    steps of the fast pointer, when given: False past them)."""
    slow = fast = lst
    while type(fast) is Cons and type(fast.cdr) is Cons:
        slow = slow.cdr
        fast = fast.cdr.cdr
        if slow is fast:
            return True
        if steps is not None:
            steps -= 1
            if steps <= 0:
                return False
    return False


def circular_so_far(start: Any, cells: int) -> bool:
    """For list walkers, with the count of cells walked so far: whether the list from
    `start` is found circular at this count (checked at _SHORT_LIST, within a bound,
    and at _LONG_LIST, in full)."""
    return ((cells == _SHORT_LIST and is_circular(start, 2 * _SHORT_LIST))
            or (cells == _LONG_LIST and is_circular(start)))


def check_not_circular(start: Any, cells: int) -> None:
    """For list walkers: raises when `circular_so_far`, so no walker loops forever
    or fills memory on a circular list."""
    if circular_so_far(start, cells):
        raise ValueError("lisp: circular list")


def cars(lst: Any) -> list:
    """The cars of a list's conses, ignoring a dotted tail (for butlast and the like)."""
    return cars_and_tail(lst)[0]


def cars_and_tail(lst: Any) -> tuple[list, Any]:
    """The cars of a list's conses and what ends it: NIL, or a dotted list's last cdr."""
    out = []
    node = lst
    while type(node) is Cons:
        out.append(node.car)
        node = node.cdr
        check_not_circular(lst, len(out))
    return out, node


def to_py(lst: Any) -> list:
    """The elements of a Lisp list as a Python list (a dotted tail is ignored: forms
    and host data; builtins on user lists use proper_items)."""
    out = []
    start = lst
    while type(lst) is Cons:
        out.append(lst.car)
        lst = lst.cdr
        if len(out) == _LONG_LIST and is_circular(start):
            raise ValueError("lisp: circular list")
    return out


def proper_items(lst: Any) -> list:
    """The elements of a proper list; a dotted list is a TypeError (a type-error in
    Lisp), as SBCL signals when a sequence function walks one to its end."""
    out = to_py(lst)
    if out:
        tail = lst
        for _ in range(len(out)):
            tail = tail.cdr
        if tail is not NIL:
            raise TypeError("lisp: not a proper list")
    return out


def truthy(x: Any) -> bool:
    return x is not NIL


def boolean(flag: bool) -> Symbol:
    return T if flag else NIL


def is_list(x: Any) -> bool:
    return x is NIL or type(x) is Cons


class Foreign:
    """Marker base for Python objects a host (tracer, contract) stores in Lisp values."""

    __slots__ = ()
