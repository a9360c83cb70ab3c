"""How `format` writes numbers, as SBCL does: digit groups (~:D), English words and
Roman numerals (~R), fixed-point (~F ~$) and exponent (~E) floats. Pure text functions;
format_.py reads the directive's parameters and pads the result."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

from sexpgpu.lisp.printer import format_float, shortest_digits
from sexpgpu.lisp.types import Single


def group_digits(digits: str, comma: str, interval: int) -> str:
    """`-1234567` -> `-1,234,567`: a separator every `interval` digits from the right."""
    sign = "-" if digits.startswith("-") else ""
    digits = digits.lstrip("-")
    groups = []
    while len(digits) > interval:
        groups.insert(0, digits[-interval:])
        digits = digits[:-interval]
    groups.insert(0, digits)
    return sign + comma.join(groups)


_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = ["", " thousand", " million", " billion", " trillion", " quadrillion", " quintillion"]
_ORD_IRREGULAR = {"one": "first", "two": "second", "three": "third", "five": "fifth",
                  "eight": "eighth", "nine": "ninth", "twelve": "twelfth"}


def _cardinal_below_1000(n: int) -> str:
    parts = []
    if n >= 100:
        parts.append(_ONES[n // 100] + " hundred")
        n %= 100
    if n >= 20:
        parts.append(_TENS[n // 10] + ("-" + _ONES[n % 10] if n % 10 else ""))
    elif n > 0:
        parts.append(_ONES[n])
    return " ".join(parts)


def cardinal(n: int) -> str:
    """~R: 1234 -> one thousand two hundred thirty-four."""
    if n == 0:
        return "zero"
    if n < 0:
        return "negative " + cardinal(-n)
    groups = []
    scale = 0
    while n > 0:
        n, chunk = divmod(n, 1000)
        if chunk:
            groups.insert(0, _cardinal_below_1000(chunk) + _SCALES[scale])
        scale += 1
    return " ".join(groups)


def ordinal(n: int) -> str:
    """~:R: 22 -> twenty-second."""
    words = cardinal(n)
    head, sep, last = words.rpartition(" ")
    pre, dash, word = last.rpartition("-")
    if word in _ORD_IRREGULAR:
        word = _ORD_IRREGULAR[word]
    elif word.endswith("y"):
        word = word[:-1] + "ieth"
    else:
        word += "th"
    return head + sep + pre + dash + word


def roman(n: int, old: bool = False) -> str:
    """~@R: 1999 -> MCMXCIX; ~:@R old Roman numerals, without subtraction: 4 -> IIII."""
    table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
             (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    if old:
        table = [entry for entry in table if len(entry[1]) == 1]
    out = ""
    for value, letters in table:
        while n >= value:
            out += letters
            n -= value
    return out


def fixed_text(value: Any, digits: int | None) -> str:
    """Fixed-point text of a number. Without `digits`: the shortest digits; with them,
    the exact binary value rounded half away from zero, as SBCL does."""
    if type(value) in (int, Fraction):
        value = Single(value)
    if digits is None:
        shortest = format_float(value, type(value) is Single).replace("d", "e")
        text = format(Decimal(shortest), "f")
        return text if "." in text else text + ".0"
    quantum = Decimal(1).scaleb(-digits)
    text = format(Decimal(float(value)).quantize(quantum, rounding=ROUND_HALF_UP), "f")
    if digits == 0:
        text += "."
    return text


def exponent_text(value: Any, digits: int | None) -> str:
    """~E's text of a number: mantissa, `e` (single) or `d` (double), signed exponent."""
    single = type(value) is not float
    if type(value) in (int, Fraction):
        value = Single(value)
    if value == 0:
        mantissa, exp = "0.0", 0
    elif digits is None:
        ds, exp = shortest_digits(value, single)
        mantissa = ("-" if value < 0 else "") + ds[0] + "." + (ds[1:] or "0")
    else:
        text = f"{float(value):.{digits}e}"
        mant, e = text.split("e")
        mantissa, exp = mant, int(e)
    marker = "e" if single else "d"
    return f"{mantissa}{marker}{'+' if exp >= 0 else '-'}{abs(exp)}"
