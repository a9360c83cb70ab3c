"""`format`: the common directives (~a ~s ~d ~b ~o ~x ~r ~f ~e ~$ ~% ~& ~c ~p ~t ~{ ~} ~[ ~]
~( ~) ~^ ~* ~~), with parameters, the : and @ modifiers and field widths, as SBCL prints.

A control string parses once into a tree of text and directives; `DIRECTIVES` maps each
directive character to one small function that consumes arguments and emits text.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp.errors import E_TYPE, limit_error
from sexpgpu.lisp.format_numbers import (
    cardinal,
    exponent_text,
    fixed_text,
    group_digits,
    ordinal,
    roman,
)
from sexpgpu.lisp.format_parse import COUNT, Directive, V, bad_control, parse
from sexpgpu.lisp.printer import (
    integer_to_string,
    prin1_to_string,
    princ_to_string,
    shortest_digits,
)
from sexpgpu.lisp.strings import capitalize, char_name
from sexpgpu.lisp.types import NIL, Char, Cons, Single, to_py

_REAL = (int, Fraction, float, Single)


class _Stop(Exception):
    """~^ : stop the enclosing iteration (or the whole format)."""


# ------------------------------------------------------------ arguments and output


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

    def peek(self) -> Any:
        """The next argument, not consumed."""
        value = self.next()
        self.pos -= 1
        return value


MAX_FIELD = 100_000  # widths and repeat counts beyond this are runaway, not layout


def _param(params: list, index: int, args: _Args, default: Any) -> Any:
    if index >= len(params) or params[index] is None:
        return default
    value = params[index]
    if value is V:
        value = args.next()
        if value is NIL:
            return default
    elif value is COUNT:
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


class _Formatter:
    """One run over a parsed control string: the interpreter, the control string (for
    error messages), the arguments still to consume and the text produced."""

    __slots__ = ("interp", "control", "args", "out")

    def __init__(self, interp: Any, control: str, args: _Args, out: _Out):
        self.interp = interp
        self.control = control
        self.args = args
        self.out = out

    def run(self, items: list) -> None:
        for item in items:
            if type(item) is str:
                self.out.parts.append(item)
                continue
            handler = DIRECTIVES.get(item.char)
            if handler is None:
                raise bad_control(self.control, f"unsupported directive ~{item.char}")
            handler(self, item)

    def nested(self, args: _Args | None = None, out: _Out | None = None,
               control: str | None = None) -> _Formatter:
        """The same run with other arguments, output or control string."""
        return _Formatter(self.interp, self.control if control is None else control,
                          self.args if args is None else args, self.out if out is None else out)

    def param(self, d: Directive, index: int, default: Any) -> Any:
        return _param(d.params, index, self.args, default)

    def emit(self, text: str) -> None:
        self.out.parts.append(text)


# ------------------------------------------------------------------ the directives

DIRECTIVES: dict[str, Callable[[_Formatter, Directive], None]] = {}


def directive(*chars: str) -> Callable:
    """Register `fn(formatter, directive)` as the directive(s) `~c` (lower-case)."""

    def register(fn: Callable) -> Callable:
        for char in chars:
            DIRECTIVES[char] = fn
        return fn

    return register


@directive("a", "s")
def _aesthetic(f: _Formatter, d: Directive) -> None:
    """~mincol,colinc,minpad,padcharA (princ) / ~S (prin1); ~:A prints NIL as ()"""
    mincol = f.param(d, 0, 0)
    colinc = f.param(d, 1, 1)
    minpad = f.param(d, 2, 0)
    padchar = f.param(d, 3, " ")
    value = f.args.next()
    if value is NIL and d.colon:
        text = "()"
    else:
        # deferred: a program that never formats with ~a/~s (the usual `sexpgpu check`)
        # never needs the pretty printer
        from sexpgpu.lisp.pretty import layout

        text = layout(value, d.char == "s", f.out.column())
    text = padchar * minpad + text if d.at else text + padchar * minpad
    if len(text) < mincol:
        # pad in whole steps of colinc until at least mincol wide
        steps = -(-(mincol - len(text)) // max(1, colinc))
        fill = padchar * (steps * max(1, colinc))
        text = fill + text if d.at else text + fill
    f.emit(text)


def _integer(f: _Formatter, d: Directive, base: int, params: list) -> str:
    """~mincol,padchar,commachar,intervalD in `base`: ~:D groups digits, ~@D shows +."""
    mincol = _param(params, 0, f.args, 0)
    padchar = _param(params, 1, f.args, " ")
    comma = _param(params, 2, f.args, ",")
    interval = _param(params, 3, f.args, 3)
    value = f.args.next()
    if type(value) is not int:
        return _pad(princ_to_string(value), mincol, padchar, True)
    digits = integer_to_string(value, base)
    if d.colon:
        digits = group_digits(digits, comma, interval)
    if d.at and value >= 0:
        digits = "+" + digits
    return _pad(digits, mincol, padchar, True)


_BASES = {"d": 10, "b": 2, "o": 8, "x": 16}


@directive("d", "b", "o", "x")
def _radix_integer(f: _Formatter, d: Directive) -> None:
    """~D decimal, ~B binary, ~O octal, ~X hexadecimal"""
    f.emit(_integer(f, d, _BASES[d.char], d.params))


@directive("r")
def _radix(f: _Formatter, d: Directive) -> None:
    """~radix,mincol,...R in any base; without parameters ~R cardinal words,
    ~:R ordinal words, ~@R Roman numerals"""
    if d.params:
        base = f.param(d, 0, 10)
        f.emit(_integer(f, d, base, d.params[1:]))
        return
    value = f.args.next()
    if d.at:
        f.emit(roman(value, old=d.colon))
    elif d.colon:
        f.emit(ordinal(value))
    else:
        f.emit(cardinal(value))


@directive("f")
def _fixed_float(f: _Formatter, d: Directive) -> None:
    """~w,d,,,padcharF: fixed-point, d digits after the point, w wide; ~@F shows +"""
    width = f.param(d, 0, None)
    digits = f.param(d, 1, None)
    padchar = f.param(d, 4, " ")
    value = f.args.next()
    if type(value) not in _REAL:
        f.emit(_pad(princ_to_string(value), width or 0, " ", True))
        return
    text = fixed_text(value, digits)
    if width is not None and digits is None and len(text) > width and "." in text:
        # too wide: SBCL drops decimals (down to none) to fit the width
        whole = len(text.split(".")[0]) + (1 if d.at and value >= 0 else 0)
        text = fixed_text(value, max(0, width - whole - 1))
    if d.at and value >= 0:
        text = "+" + text
    if width is not None:
        if text.startswith("0.") and len(text) > width:
            text = text[1:]
        text = _pad(text, width, padchar, True)
    f.emit(text)


@directive("e")
def _exponent_float(f: _Formatter, d: Directive) -> None:
    """~w,dE: exponent notation, d digits after the point, w wide"""
    width = f.param(d, 0, None)
    digits = f.param(d, 1, None)
    value = f.args.next()
    if type(value) not in _REAL:
        f.emit(princ_to_string(value))
        return
    text = exponent_text(value, digits)
    f.emit(text if width is None else _pad(text, width, " ", True))


@directive("g")
def _general_float(f: _Formatter, d: Directive) -> None:
    """~w,d,eG: as ~F followed by e+2 spaces when the number's magnitude suits d digits,
    else as ~E (CLHS 22.3.3.3)"""
    width, digits, exp_digits = f.param(d, 0, None), f.param(d, 1, None), f.param(d, 2, None)
    value = f.args.peek()
    if type(value) not in _REAL:
        _exponent_float(f, d)
        return
    x = float(value)
    shown, exponent = shortest_digits(x, type(value) is not float)
    n = exponent + 1  # digits before the point; q: the digits needed, as SBCL counts them
    q = len(shown) - n if n < 0 else max(len(shown), n)
    ee = 4 if exp_digits is None else exp_digits + 2
    if digits is None:
        digits = max(q, min(n, 7))
    dd = digits - n
    f.args.next()
    if not 0 <= dd <= digits:
        text = exponent_text(value, digits)
        f.emit(text if width is None else _pad(text, width, " ", True))
        return
    text = fixed_text(value, dd)
    if d.at and x >= 0:
        text = "+" + text
    if width is not None:
        text = _pad(text, max(0, width - ee), f.param(d, 5, " "), True)
    f.emit(text + " " * ee)


@directive("$")
def _money(f: _Formatter, d: Directive) -> None:
    """~d,n,w$: d digits after the point, at least n before, w wide; ~@$ shows +"""
    digits = f.param(d, 0, 2)
    min_int = f.param(d, 1, 1)
    width = f.param(d, 2, 0)
    value = f.args.next()
    if type(value) not in _REAL:
        f.emit(princ_to_string(value))
        return
    text = fixed_text(Single(value) if type(value) is not float else value, digits)
    whole, _, frac = text.partition(".")
    sign = "-" if whole.startswith("-") else ("+" if d.at else "")
    whole = whole.lstrip("-").rjust(min_int, "0")
    f.emit(_pad(f"{sign}{whole}.{frac}", width, " ", True))


@directive("%")
def _newline(f: _Formatter, d: Directive) -> None:
    """~n%: n newlines"""
    f.emit("\n" * f.param(d, 0, 1))


@directive("&")
def _fresh_line(f: _Formatter, d: Directive) -> None:
    """~n&: a newline unless at the start of a line, then n-1 more"""
    count = f.param(d, 0, 1)
    if count > 0:
        f.emit(("" if f.out.at_line_start() else "\n") + "\n" * (count - 1))


@directive("|")
def _page(f: _Formatter, d: Directive) -> None:
    """~n|: n page separators"""
    f.emit("\f" * f.param(d, 0, 1))


@directive("~")
def _tilde(f: _Formatter, d: Directive) -> None:
    """~n~: n tildes"""
    f.emit("~" * f.param(d, 0, 1))


@directive("t")
def _tabulate(f: _Formatter, d: Directive) -> None:
    """~colnum,colincT: move to column colnum (or the next colinc stop past it);
    ~@T inserts colnum spaces"""
    colnum = f.param(d, 0, 1)
    colinc = f.param(d, 1, 1)
    column = f.out.column()
    if d.at:
        f.emit(" " * colnum)
    elif column < colnum:
        f.emit(" " * (colnum - column))
    elif colinc > 0:
        f.emit(" " * (colinc - (column - colnum) % colinc))


@directive("c")
def _character(f: _Formatter, d: Directive) -> None:
    """~C the character; ~:C its name when it has one; ~@C as #\\c"""
    value = f.args.next()
    if type(value) is not Char:
        raise TypeError(f"format: ~c needs a character, not {prin1_to_string(value)}")
    if d.colon:
        name = char_name(value)
        f.emit(value.ch if name is NIL else name)
    elif d.at:
        f.emit(prin1_to_string(value))
    else:
        f.emit(princ_to_string(value))


@directive("p")
def _plural(f: _Formatter, d: Directive) -> None:
    """~P: s unless the argument is 1; ~@P y/ies; ~:P looks at the previous argument"""
    if d.colon:
        if f.args.pos == 0:
            raise bad_control(f.control, "~:p needs an argument before it")
        f.args.pos -= 1
    value = f.args.next()
    if d.at:
        f.emit("y" if value == 1 else "ies")
    else:
        f.emit("" if value == 1 else "s")


@directive("*")
def _goto(f: _Formatter, d: Directive) -> None:
    """~n*: skip n arguments; ~n:* back up n; ~n@* go to argument n"""
    args = f.args
    count = f.param(d, 0, None)
    if d.at:
        args.pos = count or 0
    elif d.colon:
        args.pos -= count if count is not None else 1
    else:
        args.pos += count if count is not None else 1
    if not 0 <= args.pos <= len(args.items):
        raise error(E_TYPE, "format: ~* moved past the arguments", fix="check ~* counts")


@directive("^")
def _escape(f: _Formatter, d: Directive) -> None:
    """~^: stop here when no arguments are left"""
    if f.args.left() == 0:
        raise _Stop


@directive("[")
def _conditional(f: _Formatter, d: Directive) -> None:
    """~[a~;b~:;default~] by index; ~:[false~;true~]; ~@[shown if non-NIL~]"""
    args = f.args
    if d.at:
        if args.next() is not NIL:
            args.pos -= 1
            f.run(d.clauses[0])
        return
    if d.colon:
        value = args.next()
        f.run(d.clauses[1] if value is not NIL else d.clauses[0])
        return
    index = f.param(d, 0, None)
    if index is None:
        index = args.next()
    if type(index) is not int:
        raise error(E_TYPE, "format: ~[ needs an integer argument",
                    actual=prin1_to_string(index), fix="pass an integer or use ~:[")
    clauses = d.clauses
    if 0 <= index < len(clauses) - (1 if d.default_last else 0):
        f.run(clauses[index])
    elif d.default_last:
        f.run(clauses[-1])


@directive("{")
def _iterate(f: _Formatter, d: Directive) -> None:
    """~n{body~}: the body over the elements of a list argument (at most n times);
    ~:{ over sublists, ~@{ over the remaining arguments, ~:} at least once"""
    limit = f.param(d, 0, None)
    source = f.args if d.at else _Args(_list_arg(f.args.next()))
    interp = f.interp
    count = 0
    once = d.default_last
    while source.left() > 0 or once:
        once = False
        if limit is not None and count >= limit:
            break
        count += 1
        if d.colon:
            inner = _Args(_list_arg(source.next()))
            try:
                f.nested(args=inner).run(d.body)
            except _Stop:
                if source.left() == 0:
                    break
        else:
            try:
                f.nested(args=source).run(d.body)
            except _Stop:
                break
        interp.steps += 1
        if interp.steps > interp.checkpoint:
            interp.check_limits()


def _list_arg(value: Any) -> list:
    """The elements of a list argument of ~{ (anything else is a type-error in SBCL)."""
    if value is not NIL and type(value) is not Cons:
        raise TypeError(f"format: ~{{ needs a list, not {prin1_to_string(value)}")
    return to_py(value)


@directive("(")
def _case_conversion(f: _Formatter, d: Directive) -> None:
    """~(lower~), ~:(Capitalize Each Word~), ~@(Capitalize first~), ~:@(UPPER~)"""
    inner = _Out(f.out.at_line_start())
    try:
        f.nested(out=inner).run(d.body)
    finally:
        # a ~^ inside still shows what came before it
        f.emit(_convert_case("".join(inner.parts), d.colon, d.at))


def _convert_case(text: str, colon: bool, at: bool) -> str:
    if colon and at:
        return text.upper()
    if colon:
        return capitalize(text)
    if at:
        lower = text.lower()
        idx = next((i for i, ch in enumerate(lower) if ch.isalpha()), None)
        return lower if idx is None else lower[:idx] + lower[idx].upper() + lower[idx + 1:]
    return text.lower()


@directive("w")
def _write(f: _Formatter, d: Directive) -> None:
    """~W: the argument as `write` prints it (prin1 with the printer variables)"""
    f.emit(prin1_to_string(f.args.next()))


@directive("i", "_")
def _pretty_only(f: _Formatter, d: Directive) -> None:
    """~I indentation and ~_ conditional newlines act only inside a pretty-printing
    logical block (~<...~:>), which this Lisp does not have: outside one, as here, SBCL
    prints nothing for them either"""


@directive("<")
def _justification(f: _Formatter, d: Directive) -> None:
    """~<a~;b~>: the clauses one after another (no justification)"""
    for clause in d.clauses:
        f.run(clause)


@directive("?")
def _indirection(f: _Formatter, d: Directive) -> None:
    """~?: a control string and a list of its arguments; ~@? takes them from ours"""
    sub = f.args.next()
    sub_args = _Args(to_py(f.args.next())) if not d.at else f.args
    f.nested(args=sub_args, control=sub).run(parse(sub))


# ------------------------------------------------------------------ entry point

_CACHE: dict[str, list] = {}


def format_to_string(interp, control: Any, args: list, line_start: bool = True,
                     column: int = 0) -> str:
    """The text `(format nil control args...)` produces."""
    return format_with_rest(interp, control, args, line_start, column)[0]


def format_with_rest(interp, control: Any, args: list, line_start: bool = True,
                     column: int = 0) -> tuple[str, list]:
    """The text a control string produces, and the arguments it left unused (what a
    `formatter` function returns)."""
    if type(control) is not str:
        raise error(E_TYPE, "format: the control must be a string or a function",
                    actual=prin1_to_string(control), fix='write (format nil "~a" x)')
    tree = _CACHE.get(control)
    if tree is None:
        tree = _CACHE[control] = parse(control)
    out = _Out(line_start, column)
    source = _Args(list(args))
    try:
        _Formatter(interp, control, source, out).run(tree)
    except _Stop:
        pass
    return "".join(out.parts), source.items[source.pos:]
