"""`format`: the common directives (~a ~s ~d ~b ~o ~x ~r ~f ~e ~$ ~% ~& ~c ~p ~t ~{ ~} ~[ ~]
~( ~) ~^ ~* ~~), with parameters, the : and @ modifiers and field widths, as SBCL prints."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp.errors import E_TYPE, limit_error
from sexpgpu.lisp.pretty import layout
from sexpgpu.lisp.printer import (
    format_float,
    integer_to_string,
    prin1_to_string,
    princ_to_string,
    shortest_digits,
)
from sexpgpu.lisp.strings import capitalize, char_name
from sexpgpu.lisp.types import NIL, Single, to_py

_CLOSERS = {"{": "}", "[": "]", "(": ")", "<": ">"}
_V = object()  # the v parameter: take the value from the arguments
_COUNT = object()  # the # parameter: the number of arguments left


class _Directive:
    __slots__ = ("char", "params", "colon", "at", "body", "clauses", "default_last", "pos")

    def __init__(self, char, params, colon, at, pos):
        self.char = char
        self.params = params
        self.colon = colon
        self.at = at
        self.body: list = []
        self.clauses: list = []
        self.default_last = False
        self.pos = pos


class _Stop(Exception):
    """~^ : stop the enclosing iteration (or the whole format)."""


def _bad(control: str, message: str) -> Exception:
    return error(E_TYPE, f"format: {message}", actual=repr(control)[:80],
                 fix="see docs/builtins.md for the supported format directives")


def _parse(control: str) -> list:
    """Parse a control string into a tree of text and directives."""
    stack: list[tuple[_Directive | None, list]] = [(None, [])]
    i = 0
    n = len(control)
    text_start = 0
    while i < n:
        if control[i] != "~":
            i += 1
            continue
        if i > text_start:
            stack[-1][1].append(control[text_start:i])
        start = i
        i += 1
        params: list = []
        while True:
            if i < n and control[i] == "'":
                params.append(control[i + 1] if i + 1 < n else " ")
                i += 2
            elif i < n and control[i] in "vV":
                params.append(_V)
                i += 1
            elif i < n and control[i] == "#":
                params.append(_COUNT)
                i += 1
            else:
                j = i
                while j < n and (control[j].isdigit() or (j == i and control[j] in "+-")):
                    j += 1
                params.append(int(control[i:j]) if j > i else None)
                i = j
            if i < n and control[i] == ",":
                i += 1
                continue
            break
        if params == [None]:
            params = []
        colon = at = False
        while i < n and control[i] in ":@":
            colon = colon or control[i] == ":"
            at = at or control[i] == "@"
            i += 1
        if i >= n:
            raise _bad(control, "the control string ends inside a directive")
        ch = control[i]
        i += 1
        low = ch.lower()
        if ch == "\n":
            if at:
                stack[-1][1].append("\n")
            if not colon:
                while i < n and control[i] in " \t":
                    i += 1
        elif low in _CLOSERS:
            directive = _Directive(low, params, colon, at, start)
            stack[-1][1].append(directive)
            stack.append((directive, []))
        elif low in "}])>":
            owner, items = stack.pop() if len(stack) > 1 else (None, None)
            if owner is None or _CLOSERS[owner.char] != low:
                raise _bad(control, f"~{ch} has no matching opening directive")
            if owner.char in "[<":
                owner.clauses.append(items)
            else:
                owner.body = items
            if low == "}" and colon:
                owner.default_last = True  # ~:} : run the body at least once
        elif low == ";":
            owner, items = stack[-1]
            if owner is None or owner.char not in "[<":
                raise _bad(control, "~; outside ~[ ~]")
            owner.clauses.append(items)
            if colon:
                owner.default_last = True
            stack[-1] = (owner, [])
        else:
            stack[-1][1].append(_Directive(low, params, colon, at, start))
        text_start = i
    if text_start < n:
        stack[-1][1].append(control[text_start:])
    if len(stack) > 1:
        raise _bad(control, f"~{stack[-1][0].char} is never closed")
    return stack[0][1]


class _Args:
    __slots__ = ("items", "pos")

    def __init__(self, items: list):
        self.items = items
        self.pos = 0

    def next(self) -> Any:
        if self.pos >= len(self.items):
            raise error(E_TYPE, "format: not enough arguments for the control string",
                        fix="pass one argument per consuming directive")
        value = self.items[self.pos]
        self.pos += 1
        return value

    def left(self) -> int:
        return len(self.items) - self.pos


MAX_FIELD = 100_000  # widths and repeat counts beyond this are runaway, not layout


def _param(params: list, index: int, args: _Args, default: Any) -> Any:
    if index >= len(params) or params[index] is None:
        return default
    value = params[index]
    if value is _V:
        value = args.next()
        if value is NIL:
            return default
    elif value is _COUNT:
        return args.left()
    if type(value) is int and abs(value) > MAX_FIELD:
        raise limit_error(f"format parameter {value} is too large",
                          f"use field widths and counts below {MAX_FIELD}")
    return value


def _pad(text: str, mincol: int, padchar: str, left: bool) -> str:
    if len(text) >= mincol:
        return text
    fill = padchar * (mincol - len(text))
    return fill + text if left else text + fill


def _group(digits: str, comma: str, interval: int) -> str:
    sign = "-" if digits.startswith("-") else ""
    digits = digits.lstrip("-")
    groups = []
    while len(digits) > interval:
        groups.insert(0, digits[-interval:])
        digits = digits[:-interval]
    groups.insert(0, digits)
    return sign + comma.join(groups)


def _integer(d: _Directive, args: _Args, base: int) -> str:
    mincol = _param(d.params, 0, args, 0)
    padchar = _param(d.params, 1, args, " ")
    comma = _param(d.params, 2, args, ",")
    interval = _param(d.params, 3, args, 3)
    value = args.next()
    if type(value) is not int:
        return _pad(princ_to_string(value), mincol, padchar, True)
    digits = integer_to_string(value, base)
    if d.colon:
        digits = _group(digits, comma, interval)
    if d.at and value >= 0:
        digits = "+" + digits
    return _pad(digits, mincol, padchar, True)


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


def roman(n: int) -> str:
    table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
             (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    out = ""
    for value, letters in table:
        while n >= value:
            out += letters
            n -= value
    return out


def _fixed(value: Any, digits: int | None) -> str:
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


def _float_f(d: _Directive, args: _Args) -> str:
    width = _param(d.params, 0, args, None)
    digits = _param(d.params, 1, args, None)
    padchar = _param(d.params, 4, args, " ")
    value = args.next()
    if type(value) not in (int, Fraction, float, Single):
        return _pad(princ_to_string(value), width or 0, " ", True)
    text = _fixed(value, digits)
    if d.at and value >= 0:
        text = "+" + text
    if width is not None:
        if text.startswith("0.") and len(text) > width:
            text = text[1:]
        text = _pad(text, width, padchar, True)
    return text


def _float_e(d: _Directive, args: _Args) -> str:
    width = _param(d.params, 0, args, None)
    digits = _param(d.params, 1, args, None)
    value = args.next()
    if type(value) not in (int, Fraction, float, Single):
        return princ_to_string(value)
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
    text = f"{mantissa}{marker}{'+' if exp >= 0 else '-'}{abs(exp)}"
    return text if width is None else _pad(text, width, " ", True)


def _dollar(d: _Directive, args: _Args) -> str:
    digits = _param(d.params, 0, args, 2)
    min_int = _param(d.params, 1, args, 1)
    width = _param(d.params, 2, args, 0)
    value = args.next()
    if type(value) not in (int, Fraction, float, Single):
        return princ_to_string(value)
    text = _fixed(Single(value) if type(value) is not float else value, digits)
    whole, _, frac = text.partition(".")
    sign = "-" if whole.startswith("-") else ("+" if d.at else "")
    whole = whole.lstrip("-").rjust(min_int, "0")
    return _pad(f"{sign}{whole}.{frac}", width, " ", True)


class _Out:
    """The text being produced, knowing whether it sits at the start of a line."""

    __slots__ = ("parts", "line_start", "start_col")

    def __init__(self, line_start: bool, start_col: int = 0):
        self.parts: list[str] = []
        self.line_start = line_start
        self.start_col = start_col

    def at_line_start(self) -> bool:
        for part in reversed(self.parts):
            if part:
                return part.endswith("\n")
        return self.line_start

    def column(self) -> int:
        text = "".join(self.parts)
        newline = text.rfind("\n")
        return self.start_col + len(text) if newline < 0 else len(text) - newline - 1


def _run(interp, items: list, args: _Args, out: _Out, control: str) -> None:
    for item in items:
        if type(item) is str:
            out.parts.append(item)
            continue
        _directive(interp, item, args, out, control)


def _directive(interp, d: _Directive, args: _Args, out: _Out, control: str) -> None:
    c = d.char
    emit = out.parts.append
    if c in "as":
        mincol = _param(d.params, 0, args, 0)
        colinc = _param(d.params, 1, args, 1)
        minpad = _param(d.params, 2, args, 0)
        padchar = _param(d.params, 3, args, " ")
        value = args.next()
        if value is NIL and d.colon:
            text = "()"
        else:
            text = layout(value, c == "s", out.column())
        text = padchar * minpad + text if d.at else text + padchar * minpad
        if len(text) < mincol:
            # pad in whole steps of colinc until at least mincol wide
            steps = -(-(mincol - len(text)) // max(1, colinc))
            fill = padchar * (steps * max(1, colinc))
            text = fill + text if d.at else text + fill
        emit(text)
    elif c == "d":
        emit(_integer(d, args, 10))
    elif c == "b":
        emit(_integer(d, args, 2))
    elif c == "o":
        emit(_integer(d, args, 8))
    elif c == "x":
        emit(_integer(d, args, 16))
    elif c == "r":
        if d.params:
            base = _param(d.params, 0, args, 10)
            d2 = _Directive("r", d.params[1:], d.colon, d.at, d.pos)
            emit(_integer(d2, args, base))
        else:
            value = args.next()
            if d.at:
                emit(roman(value))
            elif d.colon:
                emit(ordinal(value))
            else:
                emit(cardinal(value))
    elif c == "f":
        emit(_float_f(d, args))
    elif c == "e":
        emit(_float_e(d, args))
    elif c == "g":
        emit(princ_to_string(args.next()))
    elif c == "$":
        emit(_dollar(d, args))
    elif c == "%":
        emit("\n" * _param(d.params, 0, args, 1))
    elif c == "&":
        count = _param(d.params, 0, args, 1)
        if count > 0:
            emit(("" if out.at_line_start() else "\n") + "\n" * (count - 1))
    elif c == "|":
        emit("\f" * _param(d.params, 0, args, 1))
    elif c == "~":
        emit("~" * _param(d.params, 0, args, 1))
    elif c == "t":
        colnum = _param(d.params, 0, args, 1)
        colinc = _param(d.params, 1, args, 1)
        column = out.column()
        if d.at:
            emit(" " * colnum)
        elif column < colnum:
            emit(" " * (colnum - column))
        elif colinc > 0:
            emit(" " * (colinc - (column - colnum) % colinc))
    elif c == "c":
        value = args.next()
        if d.colon:
            name = char_name(value)
            emit(value.ch if name is NIL else name)
        elif d.at:
            emit(prin1_to_string(value))
        else:
            emit(princ_to_string(value))
    elif c == "p":
        if d.colon:
            args.pos -= 1
        value = args.next()
        if d.at:
            emit("y" if value == 1 else "ies")
        else:
            emit("" if value == 1 else "s")
    elif c == "*":
        count = _param(d.params, 0, args, None)
        if d.at:
            args.pos = count or 0
        elif d.colon:
            args.pos -= count if count is not None else 1
        else:
            args.pos += count if count is not None else 1
        if not 0 <= args.pos <= len(args.items):
            raise error(E_TYPE, "format: ~* moved past the arguments", fix="check ~* counts")
    elif c == "^":
        if args.left() == 0:
            raise _Stop
    elif c == "[":
        _conditional(interp, d, args, out, control)
    elif c == "{":
        _iterate(interp, d, args, out, control)
    elif c == "(":
        inner = _Out(out.at_line_start())
        try:
            _run(interp, d.body, args, inner, control)
        finally:
            text = "".join(inner.parts)
            if d.colon and d.at:
                text = text.upper()
            elif d.colon:
                text = capitalize(text)
            elif d.at:
                lower = text.lower()
                idx = next((i for i, ch in enumerate(lower) if ch.isalpha()), None)
                text = lower if idx is None else lower[:idx] + lower[idx].upper() + lower[idx + 1:]
            else:
                text = text.lower()
            emit(text)
    elif c == "<":
        for clause in d.clauses:
            _run(interp, clause, args, out, control)
    elif c == "?":
        sub = args.next()
        sub_args = _Args(to_py(args.next())) if not d.at else args
        _run(interp, _parse(sub), sub_args, out, sub)
    else:
        raise _bad(control, f"unsupported directive ~{d.char}")


def _conditional(interp, d: _Directive, args: _Args, out: _Out, control: str) -> None:
    if d.at:
        value = args.next()
        if value is not NIL:
            args.pos -= 1
            _run(interp, d.clauses[0], args, out, control)
        return
    if d.colon:
        value = args.next()
        clause = d.clauses[1] if value is not NIL else d.clauses[0]
        _run(interp, clause, args, out, control)
        return
    index = _param(d.params, 0, args, None)
    if index is None:
        index = args.next()
    if type(index) is not int:
        raise error(E_TYPE, "format: ~[ needs an integer argument",
                    actual=prin1_to_string(index), fix="pass an integer or use ~:[")
    clauses = d.clauses
    if 0 <= index < len(clauses) - (1 if d.default_last else 0):
        _run(interp, clauses[index], args, out, control)
    elif d.default_last:
        _run(interp, clauses[-1], args, out, control)


def _iterate(interp, d: _Directive, args: _Args, out: _Out, control: str) -> None:
    limit = _param(d.params, 0, args, None)
    if d.at:
        source = args
    else:
        source = _Args(to_py(args.next()))
    count = 0
    once = d.default_last
    while source.left() > 0 or once:
        once = False
        if limit is not None and count >= limit:
            break
        count += 1
        if d.colon:
            inner = _Args(to_py(source.next()))
            try:
                _run(interp, d.body, inner, out, control)
            except _Stop:
                if source.left() == 0:
                    break
        else:
            try:
                _run(interp, d.body, source, out, control)
            except _Stop:
                break
        interp.steps += 1
        if interp.steps > interp.checkpoint:
            interp.check_limits()


_CACHE: dict[str, list] = {}


def format_to_string(interp, control: Any, args: list, line_start: bool = True,
                     column: int = 0) -> str:
    """The text `(format nil control args...)` produces."""
    if type(control) is not str:
        if callable(control) or type(control).__name__ in ("Closure", "Builtin"):
            raise error(E_TYPE, "format: function control strings are not supported",
                        fix="pass a control string")
        raise error(E_TYPE, "format: the control must be a string",
                    actual=prin1_to_string(control), fix='write (format nil "~a" x)')
    tree = _CACHE.get(control)
    if tree is None:
        tree = _CACHE[control] = _parse(control)
    out = _Out(line_start, column)
    try:
        _run(interp, tree, _Args(list(args)), out, control)
    except _Stop:
        pass
    return "".join(out.parts)

