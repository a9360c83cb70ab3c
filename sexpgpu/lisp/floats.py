"""The float-decoding family: float-radix, float-digits, float-precision, decode-float,
integer-decode-float, scale-float and float-sign, for single and double floats."""

from __future__ import annotations

import math
from typing import Any

from sexpgpu.lisp.registry import builtin
from sexpgpu.lisp.types import MV, FloatOverflow, Single, single

# mantissa bits (with the hidden bit) and the smallest normal exponent, by format
_DIGITS = {Single: 24, float: 53}
_MIN_EXPONENT = {Single: -125, float: -1021}


def _float(x: Any) -> type:
    """The format of a float argument (anything else is a type-error)."""
    t = type(x)
    if t is not Single and t is not float:
        raise TypeError("lisp: not a float")
    return t


def _like(t: type, value: float) -> Any:
    return single(value) if t is Single else float(value)


@builtin("FLOAT-RADIX")
def float_radix(x):
    _float(x)
    return 2


@builtin("FLOAT-DIGITS")
def float_digits(x):
    return _DIGITS[_float(x)]


@builtin("FLOAT-PRECISION")
def float_precision(x):
    """Significant bits: fewer than float-digits for a denormal, 0 for zero."""
    t = _float(x)
    if x == 0:
        return 0
    _, exponent = math.frexp(abs(x))
    return _DIGITS[t] - max(0, _MIN_EXPONENT[t] - exponent)


@builtin("DECODE-FLOAT")
def decode_float(x):
    """Mantissa in [1/2, 1), exponent, and sign (1.0 or -1.0) of the float."""
    t = _float(x)
    mantissa, exponent = math.frexp(abs(x))
    sign = -1.0 if math.copysign(1.0, x) < 0 else 1.0
    if x == 0:
        exponent = 0
    return MV((_like(t, mantissa), exponent, _like(t, sign)))


@builtin("INTEGER-DECODE-FLOAT")
def integer_decode_float(x):
    """An integer significand, an exponent and the sign (1 or -1): x = s * 2^e * sign."""
    t = _float(x)
    sign = -1 if math.copysign(1.0, x) < 0 else 1
    if x == 0:
        return MV((0, 0, sign))
    digits = _DIGITS[t]
    mantissa, exponent = math.frexp(abs(x))
    shift = digits if exponent - digits >= _MIN_EXPONENT[t] - digits else \
        exponent - _MIN_EXPONENT[t] + digits
    significand = int(math.ldexp(mantissa, shift))
    return MV((significand, exponent - shift, sign))


@builtin("SCALE-FLOAT")
def scale_float(x, n):
    t = _float(x)
    if type(n) is not int:
        raise TypeError("lisp: the scale must be an integer")
    try:
        return _like(t, math.ldexp(x, n))
    except OverflowError:
        raise FloatOverflow("scale-float overflow") from None


@builtin("FLOAT-SIGN")
def float_sign(x, magnitude=None):
    t = _float(x)
    size = 1.0 if magnitude is None else abs(magnitude)
    if magnitude is not None:
        t = _float(magnitude)
    return _like(t, math.copysign(size, x))
