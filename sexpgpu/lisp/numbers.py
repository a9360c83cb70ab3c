"""Numeric builtins: integers, ratios, single and double floats with CL contagion.

Arguments that are not Lisp numbers (a traced tensor, say) go to
`interp.generic_op(name, args, span)`, which a host replaces.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

from sexpgpu.lisp.registry import builtin
from sexpgpu.lisp.types import (
    MV,
    NIL,
    NUMBER_TYPES,
    FloatOverflow,
    Single,
    T,
    boolean,
    intern,
    single,
)

_NUM = frozenset(NUMBER_TYPES)

def norm(r: Any) -> Any:
    """A rational result as an int when it is whole."""
    if type(r) is Fraction and r.denominator == 1:
        return r.numerator
    return r


def contagion(a: Any, b: Any, r: Any) -> Any:
    """Coerce result `r` of an operation on a and b to the CL result type."""
    ta, tb = type(a), type(b)
    if ta is float or tb is float:
        r = float(r)
        if r - r != 0.0:  # inf or nan: from finite arguments, a double-float overflow
            check_finite(r, a, b)
        return r
    if ta is Single or tb is Single:
        return single(r)
    return norm(r)


def check_finite(r: float, *args: Any) -> None:
    """Raise FloatOverflow when r is infinite though no argument was (SBCL traps it)."""
    if math.isinf(r) and not any(type(a) in (float, Single) and math.isinf(a) for a in args):
        raise FloatOverflow("double-float overflow")


def to_float_like(x: Any, proto: Any) -> Any:
    if type(proto) is not float:
        return single(x)
    try:
        return float(x)
    except OverflowError:  # an integer or ratio past the double range
        raise FloatOverflow("double-float overflow") from None


def _lisp_float_result(x: Any, value: float) -> Any:
    """Irrational function results: double in, double out; otherwise single."""
    return float(value) if type(x) is float else single(value)


def _check(interp, name: str, args: tuple) -> bool:
    for a in args:
        if type(a) not in _NUM:
            return False
    return True


def generic(interp, name: str, args: tuple) -> Any:
    return interp.generic_op(name, list(args), interp.current_span)


def add2(a, b):
    if type(a) is int and type(b) is int:
        return a + b
    return contagion(a, b, a + b)


def sub2(a, b):
    if type(a) is int and type(b) is int:
        return a - b
    return contagion(a, b, a - b)


def mul2(a, b):
    if type(a) is int and type(b) is int:
        return a * b
    return contagion(a, b, a * b)


def div2(a, b):
    ta, tb = type(a), type(b)
    if ta in (int, Fraction) and tb in (int, Fraction):
        return norm(Fraction(a) / Fraction(b))
    return contagion(a, b, a / b)


@builtin("+", interp=True)
def plus(interp, *args):
    if not _check(interp, "+", args):
        return generic(interp, "+", args)
    result = 0
    for a in args:
        result = add2(result, a)
    return result


@builtin("-", interp=True)
def minus(interp, first, *rest):
    if not _check(interp, "-", (first, *rest)):
        return generic(interp, "-", (first, *rest))
    if not rest:
        return contagion(first, first, -first)
    result = first
    for a in rest:
        result = sub2(result, a)
    return result


@builtin("*", interp=True)
def times(interp, *args):
    if not _check(interp, "*", args):
        return generic(interp, "*", args)
    result = 1
    for a in args:
        result = mul2(result, a)
    return result


@builtin("/", interp=True)
def divide(interp, first, *rest):
    if not _check(interp, "/", (first, *rest)):
        return generic(interp, "/", (first, *rest))
    if not rest:
        return div2(1, first)
    result = first
    for a in rest:
        result = div2(result, a)
    return result


@builtin("1+", interp=True)
def one_plus(interp, x):
    return plus(interp, x, 1)


@builtin("1-", interp=True)
def one_minus(interp, x):
    return minus(interp, x, 1)


def _compare(name: str, test):
    def compare(interp, first, *rest):
        args = (first, *rest)
        if not _check(interp, name, args):
            return generic(interp, name, args)
        for a, b in zip(args, args[1:]):
            if not test(a, b):
                return NIL
        return T

    return compare


builtin("=", interp=True)(_compare("=", lambda a, b: a == b))
builtin("<", interp=True)(_compare("<", lambda a, b: a < b))
builtin(">", interp=True)(_compare(">", lambda a, b: a > b))
builtin("<=", interp=True)(_compare("<=", lambda a, b: a <= b))
builtin(">=", interp=True)(_compare(">=", lambda a, b: a >= b))


@builtin("/=", interp=True)
def not_equal(interp, first, *rest):
    args = (first, *rest)
    if not _check(interp, "/=", args):
        return generic(interp, "/=", args)
    for i, a in enumerate(args):
        for b in args[i + 1:]:
            if a == b:
                return NIL
    return T


def _extremum(name: str, better):
    def pick(interp, first, *rest):
        args = (first, *rest)
        if not _check(interp, name, args):
            return generic(interp, name, args)
        best = first
        for a in rest:
            if better(a, best):
                best = a
        return best  # SBCL returns the winning argument itself, uncoerced

    return pick


builtin("MAX", interp=True)(_extremum("max", lambda a, b: a > b))
builtin("MIN", interp=True)(_extremum("min", lambda a, b: a < b))


@builtin("ABS", interp=True)
def lisp_abs(interp, x):
    if type(x) not in _NUM:
        return generic(interp, "abs", (x,))
    return abs(x) if type(x) is not Single else Single(abs(x))


def _division(name: str, rounder):
    def op(a, b=1):
        if type(a) not in _NUM or type(b) not in _NUM:
            raise TypeError(name)
        if b == 0:
            raise ZeroDivisionError
        if type(a) is int and type(b) is int and rounder is math.floor:
            q, r = divmod(a, b)
            return MV((q, r))
        exact = Fraction(a) / Fraction(b)
        q = rounder(exact)
        r = Fraction(a) - q * Fraction(b)
        return MV((q, contagion(a, b, r)))

    return op


def _round_half_even(x: Fraction) -> int:
    return round(x)


builtin("FLOOR")(_division("floor", math.floor))
builtin("CEILING")(_division("ceiling", math.ceil))
builtin("TRUNCATE")(_division("truncate", math.trunc))
builtin("ROUND")(_division("round", _round_half_even))


def _float_division(rounder):
    def op(a, b=1):
        q, r = _division("f", rounder)(a, b)
        floats = [x for x in (a, b) if type(x) in (float, Single)]
        proto = floats[0] if floats else Single(0)
        return MV((to_float_like(q, proto), r))

    return op


builtin("FFLOOR")(_float_division(math.floor))
builtin("FCEILING")(_float_division(math.ceil))
builtin("FTRUNCATE")(_float_division(math.trunc))
builtin("FROUND")(_float_division(_round_half_even))


@builtin("MOD")
def lisp_mod(a, b):
    return _division("mod", math.floor)(a, b)[1]


@builtin("REM")
def lisp_rem(a, b):
    return _division("rem", math.trunc)(a, b)[1]


@builtin("GCD")
def lisp_gcd(*args):
    result = 0
    for a in args:
        result = math.gcd(result, a)
    return result


@builtin("LCM")
def lisp_lcm(*args):
    result = 1
    for a in args:
        result = abs(result * a) // math.gcd(result, a) if a else 0
    return result


@builtin("EXPT", interp=True)
def lisp_expt(interp, base, power):
    if type(base) not in _NUM or type(power) not in _NUM:
        return generic(interp, "expt", (base, power))
    if type(power) is int:
        if type(base) in (int, Fraction):
            if abs(power) > 100000 or (type(base) is int and abs(base) > 1
                                       and abs(power) * math.log2(abs(base)) > 1_000_000):
                raise OverflowError
            return norm(Fraction(base) ** power)
        try:
            return contagion(base, base, base ** power)
        except OverflowError:  # a double past its range (Python raises for **)
            raise FloatOverflow("expt overflow") from None
    if base == 0:
        return contagion(base, power, 0.0)
    try:
        value = float(base) ** float(power)
    except OverflowError:
        raise FloatOverflow("expt overflow") from None
    if isinstance(value, complex):
        raise ValueError("lisp: expt of a negative number to a fractional power is complex")
    return contagion(base, power, value) if type(base) is not int or type(power) is not Fraction \
        else single(value)


def _unary_float(name: str, fn):
    def op(interp, x):
        if type(x) not in _NUM:
            return generic(interp, name, (x,))
        try:
            return _lisp_float_result(x, fn(float(x)))
        except OverflowError:  # math.exp/sinh/cosh past the double range
            raise FloatOverflow(f"{name} overflow") from None

    return op


def _sqrt(v: float) -> float:
    if v < 0:
        raise ValueError("lisp: sqrt of a negative number is complex (not in this subset)")
    return math.sqrt(v)


builtin("SQRT", interp=True)(_unary_float("sqrt", _sqrt))
builtin("EXP", interp=True)(_unary_float("exp", math.exp))
builtin("SIN", interp=True)(_unary_float("sin", math.sin))
builtin("COS", interp=True)(_unary_float("cos", math.cos))
builtin("TAN", interp=True)(_unary_float("tan", math.tan))
builtin("ASIN", interp=True)(_unary_float("asin", math.asin))
builtin("ACOS", interp=True)(_unary_float("acos", math.acos))
builtin("SINH", interp=True)(_unary_float("sinh", math.sinh))
builtin("COSH", interp=True)(_unary_float("cosh", math.cosh))
builtin("TANH", interp=True)(_unary_float("tanh", math.tanh))
builtin("ASINH", interp=True)(_unary_float("asinh", math.asinh))
builtin("ACOSH", interp=True)(_unary_float("acosh", math.acosh))  # below 1: complex, E-TYPE
builtin("ATANH", interp=True)(_unary_float("atanh", math.atanh))


@builtin("ATAN", interp=True)
def lisp_atan(interp, y, x=None):
    if x is None:
        return _unary_float("atan", math.atan)(interp, y)
    return contagion(y, x, math.atan2(float(y), float(x))) if type(y) is float or \
        type(x) is float else Single(math.atan2(float(y), float(x)))


@builtin("LOG", interp=True)
def lisp_log(interp, x, base=None):
    if type(x) not in _NUM:
        return generic(interp, "log", (x,) if base is None else (x, base))
    if x <= 0:
        raise ValueError("lisp: log of a non-positive number is not real")
    if base is None:
        return _lisp_float_result(x, math.log(float(x)))
    value = math.log(float(x)) / math.log(float(base))
    return float(value) if float in (type(x), type(base)) else single(value)


@builtin("ISQRT")
def lisp_isqrt(n):
    return math.isqrt(n)


@builtin("SIGNUM")
def lisp_signum(x):
    if x == 0:
        return x
    one = 1 if x > 0 else -1
    return contagion(x, x, one)


@builtin("FLOAT")
def lisp_float(x, proto=None):
    if type(x) not in _NUM:
        raise TypeError("float")
    if proto is None:
        return x if type(x) in (float, Single) else single(x)
    return to_float_like(x, proto)


@builtin("RATIONAL")
def lisp_rational(x):
    if type(x) in (float, Single):
        return norm(Fraction(x))
    if type(x) not in (int, Fraction):
        raise TypeError("lisp: not a real")
    return x


@builtin("RATIONALIZE")
def lisp_rationalize(x):
    """The simplest rational that rounds to the float x (within half an ulp of it)."""
    if type(x) not in (float, Single):
        return lisp_rational(x)
    if x == 0 or math.isinf(x) or x != x:
        return norm(Fraction(x)) if x == 0 else _not_finite()
    exact = Fraction(x)
    if exact.denominator == 1:  # a whole float is that integer (SBCL does not search)
        return exact.numerator
    half_ulp = Fraction(_ulp(abs(x), type(x) is Single)) / 2
    low, high = abs(exact) - half_ulp, abs(exact) + half_ulp
    result = _simplest_between(low, high)
    return norm(result if x > 0 else -result)


def _not_finite():
    raise TypeError("lisp: not a finite float")


def _ulp(x: float, single: bool) -> float:
    """The gap between x and the next float of its format away from zero."""
    _, exponent = math.frexp(x)
    digits = 24 if single else 53
    return math.ldexp(1.0, exponent - digits)


def _simplest_between(low: Fraction, high: Fraction) -> Fraction:
    """The rational with the smallest denominator in [low, high] (0 < low < high), by
    continued fractions."""
    whole = math.floor(low)
    if whole == low:
        return Fraction(whole)
    if whole + 1 <= high:
        return Fraction(whole + 1)
    return whole + 1 / _simplest_between(1 / (high - whole), 1 / (low - whole))


@builtin("NUMERATOR")
def lisp_numerator(x):
    return Fraction(x).numerator


@builtin("DENOMINATOR")
def lisp_denominator(x):
    return Fraction(x).denominator


@builtin("ZEROP")
def zerop(x):
    return boolean(x == 0) if type(x) in _NUM else _nan(x)


def _nan(x):
    raise TypeError("not a number")


@builtin("PLUSP")
def plusp(x):
    return boolean(x > 0)


@builtin("MINUSP")
def minusp(x):
    return boolean(x < 0)


@builtin("EVENP")
def evenp(x):
    if type(x) is not int:
        raise TypeError("evenp")
    return boolean(x % 2 == 0)


@builtin("ODDP")
def oddp(x):
    if type(x) is not int:
        raise TypeError("oddp")
    return boolean(x % 2 == 1)


builtin("NUMBERP", "REALP")(lambda x: boolean(type(x) in _NUM))
builtin("INTEGERP")(lambda x: boolean(type(x) is int))
builtin("RATIONALP")(lambda x: boolean(type(x) in (int, Fraction)))
builtin("FLOATP")(lambda x: boolean(type(x) in (float, Single)))


@builtin("ASH")
def ash(n, count):
    if count > 1_000_000:
        raise OverflowError
    return n << count if count >= 0 else n >> -count


@builtin("LOGAND")
def logand(*args):
    result = -1
    for a in args:
        result &= a
    return result


@builtin("LOGIOR")
def logior(*args):
    result = 0
    for a in args:
        result |= a
    return result


@builtin("LOGXOR")
def logxor(*args):
    result = 0
    for a in args:
        result ^= a
    return result


builtin("LOGNOT")(lambda n: ~n)
builtin("LOGBITP")(lambda i, n: boolean((n >> i) & 1))
builtin("LOGCOUNT")(lambda n: bin(n if n >= 0 else ~n).count("1"))
builtin("INTEGER-LENGTH")(lambda n: (n if n >= 0 else ~n).bit_length())


class _Random:
    """A deterministic generator: (random n) is reproducible across runs."""

    def __init__(self) -> None:
        self.rng = random.Random(0)


_RANDOM = _Random()


@builtin("RANDOM")
def lisp_random(limit, state=None):
    if type(limit) is int:
        if limit <= 0:
            raise ValueError("lisp: random needs a positive limit")
        return _RANDOM.rng.randrange(limit)
    return contagion(limit, limit, _RANDOM.rng.random() * float(limit))


CONSTANTS = {
    "PI": math.pi,
    "MOST-POSITIVE-FIXNUM": 4611686018427387903,
    "MOST-NEGATIVE-FIXNUM": -4611686018427387904,
    "MOST-POSITIVE-DOUBLE-FLOAT": 1.7976931348623157e308,
    "MOST-NEGATIVE-DOUBLE-FLOAT": -1.7976931348623157e308,
    "MOST-POSITIVE-SINGLE-FLOAT": Single(3.4028234663852886e38),
    "MOST-NEGATIVE-SINGLE-FLOAT": Single(-3.4028234663852886e38),
    "SINGLE-FLOAT-EPSILON": Single(5.960465e-08),
    "DOUBLE-FLOAT-EPSILON": 1.1102230246251568e-16,
    "LEAST-POSITIVE-SINGLE-FLOAT": Single(1.4e-45),
    "LEAST-POSITIVE-DOUBLE-FLOAT": 5e-324,
    "CALL-ARGUMENTS-LIMIT": 4611686018427387903,
    "ARRAY-DIMENSION-LIMIT": 4611686018427387901,
    "ARRAY-TOTAL-SIZE-LIMIT": 4611686018427387901,
    "ARRAY-RANK-LIMIT": 129,
    "CHAR-CODE-LIMIT": 1114112,
    "LAMBDA-PARAMETERS-LIMIT": 4611686018427387903,
    "MULTIPLE-VALUES-LIMIT": 4611686018427387903,
    "INTERNAL-TIME-UNITS-PER-SECOND": 1000000,
    "SINGLE-FLOAT-NEGATIVE-EPSILON": Single(2.9802326e-8),
    "DOUBLE-FLOAT-NEGATIVE-EPSILON": 5.551115123125784e-17,
    "LEAST-NEGATIVE-SINGLE-FLOAT": Single(-1.4e-45),
    "LEAST-NEGATIVE-DOUBLE-FLOAT": -5e-324,
    "LEAST-POSITIVE-NORMALIZED-SINGLE-FLOAT": Single(1.1754943508222875e-38),
    "LEAST-NEGATIVE-NORMALIZED-SINGLE-FLOAT": Single(-1.1754943508222875e-38),
    "LEAST-POSITIVE-NORMALIZED-DOUBLE-FLOAT": 2.2250738585072014e-308,
    "LEAST-NEGATIVE-NORMALIZED-DOUBLE-FLOAT": -2.2250738585072014e-308,
}
# short-float is single-float and long-float is double-float, as in SBCL
for _name, _value in list(CONSTANTS.items()):
    for _format, _alias in (("SINGLE-FLOAT", "SHORT-FLOAT"), ("DOUBLE-FLOAT", "LONG-FLOAT")):
        if _format in _name:
            CONSTANTS[_name.replace(_format, _alias)] = _value


def install(interp) -> None:
    """Define the numeric constants (pi is a double, as in SBCL)."""
    for name, value in CONSTANTS.items():
        sym = intern(name)
        interp.globals[sym] = value
        interp.constants.add(sym)
