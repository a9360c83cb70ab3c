"""Integers as bits beyond logand/logior/logxor: the other logical operations, logtest,
boole and its sixteen operation constants, and byte specifiers (byte, ldb, dpb,
mask-field, deposit-field, ldb-test)."""

from __future__ import annotations

from functools import reduce

from sexpgpu.lisp.registry import builtin
from sexpgpu.lisp.types import NIL, T, boolean, intern


def _ints(*xs: object) -> None:
    if any(type(x) is not int for x in xs):
        raise TypeError("lisp: not an integer")


# the sixteen two-argument operations, in the order of SBCL's BOOLE-* constant values
_BOOLE = (
    ("BOOLE-CLR", lambda a, b: 0), ("BOOLE-SET", lambda a, b: -1),
    ("BOOLE-1", lambda a, b: a), ("BOOLE-2", lambda a, b: b),
    ("BOOLE-C1", lambda a, b: ~a), ("BOOLE-C2", lambda a, b: ~b),
    ("BOOLE-AND", lambda a, b: a & b), ("BOOLE-IOR", lambda a, b: a | b),
    ("BOOLE-XOR", lambda a, b: a ^ b), ("BOOLE-EQV", lambda a, b: ~(a ^ b)),
    ("BOOLE-NAND", lambda a, b: ~(a & b)), ("BOOLE-NOR", lambda a, b: ~(a | b)),
    ("BOOLE-ANDC1", lambda a, b: ~a & b), ("BOOLE-ANDC2", lambda a, b: a & ~b),
    ("BOOLE-ORC1", lambda a, b: ~a | b), ("BOOLE-ORC2", lambda a, b: a | ~b),
)


def _two(name: str, op) -> None:
    def fn(a, b):
        _ints(a, b)
        return op(a, b)

    builtin(name)(fn)


for _name, _op in (("LOGANDC1", _BOOLE[12][1]), ("LOGANDC2", _BOOLE[13][1]),
                   ("LOGORC1", _BOOLE[14][1]), ("LOGORC2", _BOOLE[15][1]),
                   ("LOGNAND", _BOOLE[10][1]), ("LOGNOR", _BOOLE[11][1])):
    _two(_name, _op)


@builtin("LOGEQV")
def logeqv(*args):
    _ints(*args)
    return reduce(lambda a, b: ~(a ^ b), args, -1)


@builtin("LOGTEST")
def logtest(a, b):
    _ints(a, b)
    return boolean(a & b != 0)


@builtin("BOOLE")
def boole(op, a, b):
    _ints(op, a, b)
    if not 0 <= op < len(_BOOLE):
        raise TypeError("lisp: not a boole operation")
    return _BOOLE[op][1](a, b)


class ByteSpec:
    """(byte size position): `size` bits starting at bit `position`."""

    __slots__ = ("size", "position")

    def __init__(self, size: int, position: int):
        self.size = size
        self.position = position

    def mask(self) -> int:
        return ((1 << self.size) - 1) << self.position

    def lisp_repr(self, escape: bool) -> str:
        return f"({self.size} . {self.position})"  # SBCL's byte specifiers are conses


@builtin("BYTE")
def byte(size, position):
    _ints(size, position)
    if size < 0 or position < 0:
        raise TypeError("lisp: byte size and position must be non-negative")
    return ByteSpec(size, position)


builtin("BYTE-SIZE")(lambda spec: spec.size)
builtin("BYTE-POSITION")(lambda spec: spec.position)


@builtin("LDB")
def ldb(spec, n):
    _ints(n)
    return (n >> spec.position) & ((1 << spec.size) - 1)


@builtin("LDB-TEST")
def ldb_test(spec, n):
    return boolean(ldb(spec, n) != 0)


@builtin("MASK-FIELD")
def mask_field(spec, n):
    _ints(n)
    return n & spec.mask()


@builtin("DPB")
def dpb(new, spec, n):
    _ints(new, n)
    return (n & ~spec.mask()) | ((new << spec.position) & spec.mask())


@builtin("DEPOSIT-FIELD")
def deposit_field(new, spec, n):
    _ints(new, n)
    return (n & ~spec.mask()) | (new & spec.mask())


def install(interp) -> None:
    """The BOOLE-* constants."""
    for value, (name, _) in enumerate(_BOOLE):
        sym = intern(name)
        interp.globals[sym] = value
        interp.constants.add(sym)


# ------------------------------------------------------------------ bit arrays


def _bit_result(a: list, bits: list, result) -> list:
    """Where a bit-array operation's answer goes: a new vector (result NIL), the first
    argument (T), or the given vector."""
    if result is NIL:
        return bits
    target = a if result is T else result
    if type(target) is not list or len(target) != len(bits):
        raise TypeError("lisp: the result must be a bit vector of the same length")
    target[:] = bits
    return target


def _bit_op(name: str, op) -> None:
    def fn(a, b, result=NIL):
        if type(a) is not list or type(b) is not list or len(a) != len(b):
            raise TypeError("lisp: bit vectors of the same length")
        _ints(*a, *b)
        return _bit_result(a, [op(x, y) & 1 for x, y in zip(a, b)], result)

    builtin(name)(fn)


for _name, _op in _BOOLE[6:]:
    _bit_op("BIT-" + _name[len("BOOLE-"):], _op)


@builtin("BIT-NOT")
def bit_not(a, result=NIL):
    if type(a) is not list:
        raise TypeError("lisp: not a bit vector")
    _ints(*a)
    return _bit_result(a, [1 - x for x in a], result)
