"""The printer: Lisp objects to text exactly as SBCL prints them (prin1 and princ).

Floats follow SBCL: the shortest digits that read back, positional between 1e-3 and
1e7, exponent form outside; doubles end in `d0` (or use `d` as the exponent marker).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from sexpgpu.lisp import printvars
from sexpgpu.lisp.errors import limit_error
from sexpgpu.lisp.types import NIL, Char, Cons, MDArray, Single, Symbol, is_circular, to_single

CHAR_PRINT_NAMES = {
    "\n": "Newline", "\t": "Tab", "\r": "Return", "\b": "Backspace", "\f": "Page",
    "\x7f": "Rubout", "\x00": "Nul", "\x1b": "Esc", "\x07": "Bel",
}
PREFIX_PRINT = {"QUOTE": "'", "FUNCTION": "#'", "QUASIQUOTE": "`", "UNQUOTE": ",",
                "UNQUOTE-SPLICING": ",@"}
_NEEDS_BARS = re.compile(r"[a-z\s()'\"`,;|\\#]|^$")
_LOOKS_NUMERIC = re.compile(r"[+-]?(\d+\.?|\d+/\d+|\d*\.\d+([eEdD][+-]?\d+)?|\d+[eEdD][+-]?\d+)$")


_MIN_NORMAL_SINGLE = 2.0 ** -126
_MIN_NORMAL_DOUBLE = 2.0 ** -1022


def _single_digits(x: float) -> str:
    """The shortest %e text that reads back as the single-float x."""
    for precision in range(0, 10):
        text = f"{x:.{precision}e}"
        try:
            if to_single(float(text)) == x:
                return text
        except OverflowError:  # near the largest single a short text rounds past it
            continue
    return text


def _denormal_text(x: float, bits: int) -> str:
    """A denormal as SBCL prints it: the shortest digits that would identify it among
    floats of full precision (`bits` significant bits) at its exponent."""
    exact = Fraction(x)
    exponent = math.frexp(x)[1]
    scale = Fraction(2) ** (bits - exponent)
    target = exact * scale  # an integer: x has fewer significant bits than `bits`
    for precision in range(0, 20):
        text = f"{x:.{precision}e}"
        if round(Fraction(text) * scale) == target:
            return text
    return f"{x:.19e}"


def shortest_digits(x: float, single: bool) -> tuple[str, int]:
    """Shortest round-trip significant digits of |x| and the exponent of the first digit."""
    x = abs(x)
    if 0 < x < (_MIN_NORMAL_SINGLE if single else _MIN_NORMAL_DOUBLE):
        text = _denormal_text(x, 24 if single else 53)
    elif single:
        text = _single_digits(x)
    else:
        text = f"{x:e}" if False else repr(x)
        text = f"{float(text):.17e}"
        for precision in range(0, 18):
            candidate = f"{x:.{precision}e}"
            if float(candidate) == x:
                text = candidate
                break
    mantissa, exp = text.split("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    return digits, int(exp)


def format_float(x: float, single: bool) -> str:
    """SBCL's printed form of a single or double float."""
    if x != x:
        return "#<NaN>"
    if x in (float("inf"), float("-inf")):
        kind = "SINGLE" if single else "DOUBLE"
        sign = "POSITIVE" if x > 0 else "NEGATIVE"
        return f"#.SB-EXT:{kind}-FLOAT-{sign}-INFINITY"
    sign = "-" if x < 0 or (x == 0 and str(x).startswith("-")) else ""
    marker = "e" if single else "d"
    if x == 0:
        return sign + ("0.0" if single else "0.0d0")
    digits, exp = shortest_digits(x, single)
    if -3 <= exp < 7:
        if exp >= 0:
            whole = digits[: exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1 :] or "0"
        else:
            whole = "0"
            frac = "0" * (-exp - 1) + digits
        text = f"{whole}.{frac}"
        return sign + (text if single else text + "d0")
    return f"{sign}{digits[0]}.{digits[1:] or '0'}{marker}{exp}"


_WORD_START = re.compile(r"(?<![A-Za-z0-9])[a-z]")
_UPCASE, _DOWNCASE = "UPCASE", "DOWNCASE"
# the settings of the print in progress (printvars.now, kept here for the inner loops)
_case: Any = None
_plain_numbers = True


def with_options(opts: dict, thunk: Any) -> Any:
    """thunk() printing with write's :case, :base and :radix (those given)."""
    values = {}
    if "CASE" in opts:
        values["case"] = opts["CASE"]
    if "BASE" in opts:
        values["base"] = opts["BASE"]
    if "RADIX" in opts:
        values["radix"] = opts["RADIX"] is not NIL
    return printvars.with_overrides(values, thunk)


def _cased(name: str, case: Any) -> str:
    """A symbol name as *print-case* :downcase or :capitalize prints it (only uppercase
    letters change, as in SBCL)."""
    if case.name == _UPCASE or not any("A" <= c <= "Z" for c in name):
        return name
    lowered = "".join(c.lower() if "A" <= c <= "Z" else c for c in name)
    if case.name == _DOWNCASE:
        return lowered
    return _WORD_START.sub(lambda m: m.group().upper(), lowered)


def _symbol(sym: Symbol, escape: bool) -> str:
    name = sym.name
    if escape and (_NEEDS_BARS.search(name) or _LOOKS_NUMERIC.match(name)):
        name = "|" + name.replace("\\", "\\\\").replace("|", "\\|") + "|"
    elif _case is not None:
        name = _cased(name, _case)
    if sym.is_keyword:
        return ":" + name if escape else name
    if escape and not sym.interned:
        return "#:" + name
    return name


def _string(s: str, escape: bool) -> str:
    if not escape:
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _char(c: Char, escape: bool) -> str:
    if not escape:
        return c.ch
    name = CHAR_PRINT_NAMES.get(c.ch)
    if name is None and ord(c.ch) > 127:
        # deferred: only non-ASCII characters need the Unicode database
        import unicodedata

        # SBCL names non-ASCII characters by their Unicode name
        name = unicodedata.name(c.ch, c.ch).replace(" ", "_")
    return "#\\" + (name or c.ch)


MAX_PRINTED_PARTS = 2_000_000  # shared structure can make a small object print forever


def _too_long() -> Exception:
    return limit_error("printed text would be too long",
                       "print a smaller object (or a summary of it)")


def write(obj: Any, escape: bool, out: list[str]) -> None:
    """Append the printed representation of `obj` to `out`."""
    t = type(obj)
    if t is Symbol:
        out.append(_symbol(obj, escape))
    elif t is int:
        out.append(str(obj) if _plain_numbers else _rational_text(obj))
    elif t is str:
        out.append(_string(obj, escape))
    elif t is Cons:
        _cons(obj, escape, out)
    elif t is Single:
        out.append(format_float(obj, True))
    elif t is float:
        out.append(format_float(obj, False))
    elif t is Fraction:
        out.append(f"{obj.numerator}/{obj.denominator}" if _plain_numbers
                   else _rational_text(obj))
    elif t is Char:
        out.append(_char(obj, escape))
    elif t is list:
        out.append("#(")
        for i, item in enumerate(obj):
            if i:
                out.append(" ")
            write(item, escape, out)
            if len(out) > MAX_PRINTED_PARTS:
                raise _too_long()
        out.append(")")
    elif isinstance(obj, Symbol):
        out.append(_symbol(obj, escape))
    elif t is MDArray:
        out.append(_md_array(obj, escape))
    elif hasattr(obj, "lisp_repr"):
        out.append(obj.lisp_repr(escape))
    elif t is bool:  # a host leaked a Python bool: print it as the Lisp value it means
        out.append("T" if obj else "NIL")
    else:
        out.append(f"#<{type(obj).__name__} {obj!r}>")


def _cons(obj: Cons, escape: bool, out: list[str]) -> None:
    head = obj.car
    if type(head) is Symbol and head.name in PREFIX_PRINT and type(obj.cdr) is Cons \
            and obj.cdr.cdr is NIL:
        out.append(PREFIX_PRINT[head.name])
        write(obj.cdr.car, escape, out)
        return
    out.append("(")
    write(head, escape, out)
    node = obj.cdr
    count = 0
    while type(node) is Cons:
        out.append(" ")
        write(node.car, escape, out)
        node = node.cdr
        count += 1
        if len(out) > MAX_PRINTED_PARTS:
            raise _too_long()
        if count == 1 << 16 and is_circular(obj):
            raise ValueError("lisp: cannot print a circular list")
    if node is not NIL:
        out.append(" . ")
        write(node, escape, out)
    out.append(")")


def _md_array(array: MDArray, escape: bool) -> str:
    """#nA(...): the nested lists of an array of rank n, each element printed alone."""
    show = prin1_to_string if escape else princ_to_string

    def nested(level: int, offset: int) -> str:
        if level == len(array.dims):
            return show(array.data[offset])
        stride = 1
        for d in array.dims[level + 1:]:
            stride *= d
        parts = [nested(level + 1, offset + i * stride) for i in range(array.dims[level])]
        return "(" + " ".join(parts) + ")"

    return f"#{len(array.dims)}A" + nested(0, 0)


def prin1_to_string(obj: Any) -> str:
    out: list[str] = []
    write(limited(obj), True, out)
    return "".join(out)


def princ_to_string(obj: Any) -> str:
    out: list[str] = []
    write(limited(obj), False, out)
    return "".join(out)


_RADIX_PREFIX = {2: "#b", 8: "#o", 16: "#x"}


def _rational_text(x: Any) -> str:
    """An integer or ratio in *print-base*, with SBCL's radix marks under *print-radix*."""
    base, radix = printvars.now.base, printvars.now.radix
    if type(x) is int:
        text = integer_to_string(x, base)
        if radix:
            text = text + "." if base == 10 else _RADIX_PREFIX.get(base, f"#{base}r") + text
        return text
    text = f"{integer_to_string(x.numerator, base)}/{integer_to_string(x.denominator, base)}"
    return _RADIX_PREFIX.get(base, f"#{base}r") + text if radix else text


class _Elided:
    """What stands for the parts *print-length* and *print-level* leave out."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def lisp_repr(self, escape: bool) -> str:
        return self.text


_ELLIPSIS = _Elided("...")
_DEEPER = _Elided("#")


def limited(obj: Any) -> Any:
    """obj cut to *print-level* and *print-length* (itself when neither is set); the
    start of every print, so it reads the printer variables for it."""
    global _case, _plain_numbers
    settings = printvars.refresh()
    _case, _plain_numbers = settings.case, printvars.plain_numbers
    level, length = settings.level, settings.length
    if level is None and length is None or type(obj) not in (Cons, list):
        return obj
    return _limit(obj, level, length, 0)


def _limit(obj: Any, level: Any, length: Any, depth: int) -> Any:
    t = type(obj)
    if t is not Cons and t is not list:
        return obj
    if level is not None and depth >= level:
        return _DEEPER
    items, node, cells = [], obj, 0
    parts = obj if t is list else None
    while (cells < len(parts)) if parts is not None else (type(node) is Cons):
        if length is not None and cells >= length:
            items.append(_ELLIPSIS)
            node = NIL
            break
        item = parts[cells] if parts is not None else node.car
        items.append(_limit(item, level, length, depth + 1))
        if parts is None:
            node = node.cdr
        cells += 1
        if parts is None and cells == 1 << 16 and is_circular(obj):
            raise ValueError("lisp: cannot print a circular list")
    if parts is not None:
        return items
    result = node if node is not NIL else NIL
    for item in reversed(items):
        result = Cons(item, result)
    return result


def integer_to_string(value: int, base: int) -> str:
    """An integer's digits in `base` (2 to 36), upper-case letters, as SBCL prints them."""
    if base == 10:
        return str(value)
    sign = "-" if value < 0 else ""
    value = abs(value)
    chars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = ""
    while True:
        out = chars[value % base] + out
        value //= base
        if value == 0:
            break
    return sign + out


# What a Python traceback or pytest shows for a cons: its Lisp printed form.
Cons.__repr__ = prin1_to_string  # type: ignore[assignment]
