"""The reader: source text to forms, every list keeping its file:line:col.

`_TOKEN` splits the text into tokens (the formatter in commands/syntax.py shares it);
`READTABLE` maps each kind of token to the small function that reads it. Positions
live in `Cons.span` (the span of the opening paren or prefix), so the evaluator reports
errors at the innermost list that has a span. Symbols are interned and carry no position.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from sexpgpu.diagnostics import Note, Span, define_code, error
from sexpgpu.lisp.errors import limit_error
from sexpgpu.lisp.types import (
    NIL,
    Char,
    Cons,
    FormList,
    MDArray,
    Single,
    Uninterned,
    intern,
    keyword,
)

E_READ_UNCLOSED = define_code(
    "E-READ-UNCLOSED", "unclosed list",
    "A `(` was opened and the file ended before its `)`. The diagnostic points at the `(`.",
)
E_READ_STRAY = define_code(
    "E-READ-STRAY", "unexpected `)`",
    "A `)` appears with no matching `(` before it.",
)
E_READ_STRING = define_code(
    "E-READ-STRING", "unterminated string", "A string literal has no closing `\"`.",
)
E_READ_COMMENT = define_code(
    "E-READ-COMMENT", "unterminated block comment", "A `#|` comment has no matching `|#`.",
)
E_READ_NUMBER = define_code(
    "E-READ-NUMBER", "malformed number",
    "A token that starts like a number is not one (for example `1/0`, `1.5e99999`, `12..3`).",
)
E_READ_CHAR = define_code(
    "E-READ-CHAR", "unknown character name",
    "`#\\` must be followed by one character or a name such as Space, Newline or Tab.",
)
E_READ_SYNTAX = define_code(
    "E-READ-SYNTAX", "malformed syntax",
    "Text the reader cannot turn into a form: a misplaced dot, a `'` with nothing after it, "
    "an unsupported `#` dispatch, an unterminated `|symbol|`.",
)

QUOTE = intern("QUOTE")
FUNCTION = intern("FUNCTION")
QUASIQUOTE = intern("QUASIQUOTE")
UNQUOTE = intern("UNQUOTE")
UNQUOTE_SPLICING = intern("UNQUOTE-SPLICING")

CHAR_NAMES = {
    "SPACE": " ", "NEWLINE": "\n", "TAB": "\t", "RETURN": "\r", "LINEFEED": "\n",
    "BACKSPACE": "\b", "PAGE": "\f", "RUBOUT": "\x7f", "NUL": "\x00", "NULL": "\x00",
    "ESCAPE": "\x1b", "ESC": "\x1b", "BELL": "\x07",
}

_TOKEN = re.compile(
    r"""
    (?P<ws>[\s]+)
  | (?P<comment>;[^\n]*)
  | (?P<open>\()
  | (?P<close>\))
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<badstring>")
  | (?P<quote>')
  | (?P<qq>`)
  | (?P<splice>,@)
  | (?P<unquote>,)
  | (?P<block>\#\|)
  | (?P<char>\#\\(?:.[^\s()'"`,;]*|\n))
  | (?P<fquote>\#')
  | (?P<vector>\#\()
  | (?P<uninterned>\#:)
  | (?P<radix>\#[xXbBoO][^\s()'"`,;]*)
  | (?P<feature>\#[+-])
  | (?P<nradix>\#\d+[rR][^\s()'"`,;]*)
  | (?P<array>\#\d+[aA])
  | (?P<bits>\#\*[^\s()'"`,;]*)
  | (?P<hash>\#.?)
  | (?P<atom>(?:[^\s()'"`,;|\\]+|\\.|\|[^|]*\|)+)
  | (?P<badatom>[|\\])
    """,
    re.VERBOSE | re.DOTALL,
)

_INT = re.compile(r"[+-]?\d+\.?\Z")
_RATIO = re.compile(r"[+-]?\d+/\d+\Z")
_FLOAT = re.compile(r"[+-]?(?:\d*\.\d+|\d+\.?\d*(?=[eEdDfFsSlL]))(?:([eEdDfFsSlL])([+-]?\d+))?\Z")
_NUMBERISH = re.compile(r"[+-]?\.?\d[\d.eEdDfFsSlL/+-]*\Z")

# the prefix token -> the form it wraps the next one in: 'x is (quote x)
_PREFIXES = {"'": QUOTE, "`": QUASIQUOTE, ",@": UNQUOTE_SPLICING, ",": UNQUOTE, "#'": FUNCTION}


class _Frame:
    """What is open while reading: a list, a #( vector, a #nA array, a prefix (' ` , ,@ #')
    waiting for its form, a #+/#- feature test, or a form being skipped after one."""

    __slots__ = ("kind", "items", "span", "tail", "dot", "prefix")

    def __init__(self, kind: str, span: Span, prefix: Any = None):
        self.kind = kind
        self.items: list = []
        self.span = span
        self.tail: Any = NIL
        self.dot = 0  # 0 no dot seen, 1 dot seen awaiting tail, 2 tail read
        self.prefix = prefix


_NOTHING = object()  # a token that completed no object (it opened a frame, or was skipped)


class Reader:
    """Reads forms from one text; `READTABLE` says what each kind of token does."""

    def __init__(self, text: str, file: str):
        self.text = text
        self.file = file
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.suspect_string: int | None = None  # an earlier string that spans code lines

    def span(self, pos: int, width: int = 1) -> Span:
        line = bisect.bisect_right(self._line_starts, pos) - 1
        return Span(self.file, line + 1, pos - self._line_starts[line] + 1, width)

    def read_all(self, start: int = 0, max_forms: int | None = None) -> list:
        """Read forms from `start`; with `max_forms`, stop after that many and leave
        the position after them (and one following whitespace) in `self.end`."""
        self.forms = FormList()
        self.stack: list[_Frame] = []
        self.form_start = 0  # where the top-level form being read began
        self.end = len(self.text)
        self.pos = start
        text = self.text
        n = len(text)
        while self.pos < n:
            m = _TOKEN.match(text, self.pos)
            kind = m.lastgroup
            start = self.pos
            self.pos = m.end()
            if kind == "ws" or kind == "comment":
                continue
            if not self.stack:
                self.form_start = start
            obj = READTABLE[kind](self, m.group(), start)
            if obj is _NOTHING or not self._complete(obj):
                continue
            if max_forms is not None and len(self.forms) >= max_forms:
                if self.pos < n and text[self.pos].isspace():
                    self.pos += 1
                self.end = self.pos
                return self.forms
        self._check_all_closed()
        return self.forms

    def open(self, kind: str, start: int, width: int = 1, prefix: Any = None) -> Any:
        self.stack.append(_Frame(kind, self.span(start, width), prefix))
        return _NOTHING

    def _complete(self, obj: Any) -> bool:
        """Hand a finished object to the innermost open frame, or to the forms read;
        True when it was a top-level form."""
        stack = self.stack
        while stack:
            top = stack[-1]
            if top.kind == "prefix":
                stack.pop()
                obj = Cons(top.prefix, Cons(obj, NIL), top.span)
            elif top.kind == "array":
                stack.pop()
                obj = _md_array(obj, top.prefix, top.span)
            elif top.kind == "feature":
                stack.pop()
                if _feature_true(obj) != (top.prefix == "+"):
                    top.kind = "skip"
                    stack.append(top)  # the next complete form is dropped
                return False
            elif top.kind == "skip":
                stack.pop()
                return False
            else:
                _add_item(top, obj)
                return False
        self.forms.append(obj)
        self.forms.spans.append(self.span(self.form_start))
        return True

    def _check_all_closed(self) -> None:
        if not self.stack:
            return
        opens = [f for f in self.stack if f.kind in ("list", "vector")]
        if not opens:
            raise error(E_READ_SYNTAX, "a prefix has no form after it", self.stack[-1].span,
                        fix="put a form after the prefix")
        notes = [Note("also unclosed", f.span) for f in opens[1:4]]
        raise error(E_READ_UNCLOSED, "this `(` is never closed", opens[0].span,
                    fix=f"add {len(opens)} `)` where the form should end", notes=notes)


def _add_item(frame: _Frame, obj: Any) -> None:
    """An element of an open list or vector (or the tail after its dot)."""
    if frame.dot == 1:
        frame.tail = obj
        frame.dot = 2
    elif frame.dot == 2:
        raise error(E_READ_SYNTAX, "more than one form after the dot",
                    frame.span, fix="write (a . b) with one form after the dot")
    else:
        frame.items.append(obj)


# ------------------------------------------------------------------ the readtable
# Each reader function takes (reader, token text, token start) and returns the object
# read, or _NOTHING when the token only opened a frame or was skipped.


def _read_open(reader: Reader, tok: str, start: int) -> Any:
    return reader.open("list", start)


def _read_vector(reader: Reader, tok: str, start: int) -> Any:
    return reader.open("vector", start)


def _read_prefix(reader: Reader, tok: str, start: int) -> Any:
    return reader.open("prefix", start, len(tok), _PREFIXES[tok])


def _read_feature(reader: Reader, tok: str, start: int) -> Any:
    return reader.open("feature", start, 2, tok[1])


def _read_array(reader: Reader, tok: str, start: int) -> Any:
    return reader.open("array", start, len(tok), int(tok[1:-1]))


def _read_close(reader: Reader, tok: str, start: int) -> Any:
    stack = reader.stack
    if not stack or stack[-1].kind not in ("list", "vector"):
        if stack and stack[-1].kind in ("prefix", "feature", "array"):
            raise error(E_READ_SYNTAX, "a prefix has no form after it",
                        stack[-1].span, fix="put a form after the prefix")
        raise error(E_READ_STRAY, "unexpected `)`", reader.span(start),
                    fix="remove this `)` or add the `(` it closes")
    frame = stack.pop()
    if frame.dot == 1:
        raise error(E_READ_SYNTAX, "nothing after the dot of a dotted list",
                    frame.span, fix="write (a . b) with one form after the dot")
    if frame.kind == "vector":
        return list(frame.items)
    obj = frame.tail
    for item in reversed(frame.items):
        obj = Cons(item, obj)
    if type(obj) is Cons:
        obj.span = frame.span
    return obj


_CODE_LINE = re.compile(r"\n[ \t]*\(")  # a string with a line that starts like a form


def _read_string(reader: Reader, tok: str, start: int) -> Any:
    if "\n" in tok and reader.suspect_string is None \
            and _CODE_LINE.search(tok):
        reader.suspect_string = start
    return _unescape(tok[1:-1])


def _read_bad_string(reader: Reader, tok: str, start: int) -> Any:
    """A `"` with no closing one. When an earlier string ran over lines that look
    like code, that string's opening quote is the one missing its partner: every
    quote after it paired with the wrong one, so the error points there."""
    suspect = reader.suspect_string
    if suspect is not None and suspect < start:
        end = reader.span(start)
        raise error(E_READ_STRING, "unterminated string", reader.span(suspect),
                    notes=[Note(f"the quotes after it pair up wrongly, up to the last one "
                                f"at line {end.line}", end)],
                    fix='close this string with `"`')
    raise error(E_READ_STRING, "unterminated string", reader.span(start),
                fix='close the string with `"`')


def _read_block_comment(reader: Reader, tok: str, start: int) -> Any:
    """#| ... |#, nesting"""
    text = reader.text
    depth = 0
    pos = start
    while True:
        i = text.find("|#", pos)
        j = text.find("#|", pos)
        if j != -1 and (i == -1 or j < i):
            depth += 1
            pos = j + 2
            continue
        if i == -1:
            raise error(E_READ_COMMENT, "unterminated block comment", reader.span(start, 2),
                        fix="close the comment with |#")
        depth -= 1
        pos = i + 2
        if depth == 0:
            reader.pos = pos
            return _NOTHING


def _read_char(reader: Reader, tok: str, start: int) -> Any:
    """#\\a, #\\Space, #\\U+3BB"""
    body = tok[2:]
    if len(body) == 1:
        return Char(body)
    name = body.upper()
    if name in CHAR_NAMES:
        return Char(CHAR_NAMES[name])
    if name.startswith("U+") or (name.startswith("U") and len(name) > 1):
        try:
            return Char(chr(int(name.lstrip("U+"), 16)))
        except ValueError:
            pass
    raise error(E_READ_CHAR, f"unknown character name `#\\{body}`",
                reader.span(start, len(tok)),
                fix="use one character (#\\a) or a name: Space, Newline, Tab, Return")


def _read_uninterned(reader: Reader, tok: str, start: int) -> Any:
    """#:name"""
    m = _TOKEN.match(reader.text, reader.pos)
    if m is None or m.lastgroup != "atom":
        raise error(E_READ_SYNTAX, "`#:` must be followed by a symbol name",
                    reader.span(start, 2), fix="write #:name")
    reader.pos = m.end()
    return Uninterned(_symbol_name(m.group()))


def _read_radix(reader: Reader, tok: str, start: int) -> Any:
    """#x1F, #b101, #o17"""
    base = {"x": 16, "b": 2, "o": 8}[tok[1].lower()]
    try:
        return int(tok[2:], base)
    except ValueError:
        raise error(E_READ_NUMBER, f"malformed number `{tok}`", reader.span(start, len(tok)),
                    fix=f"digits in base {base} only") from None


def _read_nradix(reader: Reader, tok: str, start: int) -> Any:
    """#36rZZ: an integer in any base from 2 to 36"""
    split = tok.lower().index("r")
    base = int(tok[1:split])
    try:
        if not 2 <= base <= 36:
            raise ValueError
        return int(tok[split + 1:], base)
    except ValueError:
        raise error(E_READ_NUMBER, f"malformed number `{tok}`", reader.span(start, len(tok)),
                    fix="write #nR with n from 2 to 36 and digits of that base") from None


def _read_bits(reader: Reader, tok: str, start: int) -> Any:
    """#*1011: a bit vector (a vector of 0s and 1s here)"""
    if any(ch not in "01" for ch in tok[2:]):
        raise error(E_READ_SYNTAX, f"malformed bit vector `{tok}`", reader.span(start, len(tok)),
                    fix="write only 0 and 1 after #*")
    return [int(ch) for ch in tok[2:]]


def _read_unsupported_dispatch(reader: Reader, tok: str, start: int) -> Any:
    raise error(E_READ_SYNTAX, f"unsupported reader syntax `{tok}`",
                reader.span(start, len(tok)),
                fix="this subset has no reader macros beyond #' #( #\\ #| #: #x #+ #*")


def _read_atom(reader: Reader, tok: str, start: int) -> Any:
    """A number or a symbol; a lone `.` marks the tail of a dotted list."""
    if tok == ".":
        stack = reader.stack
        if not stack or stack[-1].kind != "list" or not stack[-1].items or stack[-1].dot:
            raise error(E_READ_SYNTAX, "misplaced dot", reader.span(start),
                        fix="a dot only goes between the last two forms of a list")
        stack[-1].dot = 1
        return _NOTHING
    c = tok[0]
    if c.isdigit() or c in "+-." and len(tok) > 1:
        number = _number(reader, tok, start)
        if number is not None:
            return number
    if c == ":" and "|" not in tok and "\\" not in tok:
        return keyword(tok[1:].upper())
    name = _symbol_name(tok)
    if name.startswith(":"):
        return keyword(name[1:])
    return intern(name)


def _read_bad_atom(reader: Reader, tok: str, start: int) -> Any:
    raise error(E_READ_SYNTAX, f"unterminated `{tok}` in a symbol",
                reader.span(start), fix="close `|` or remove the backslash")


READTABLE: dict[str, Callable[[Reader, str, int], Any]] = {
    # token kind (a named group of _TOKEN) -> what reading it does
    "open": _read_open,  # (
    "close": _read_close,  # )
    "string": _read_string,  # "..."
    "badstring": _read_bad_string,  # " with no closing "
    "quote": _read_prefix,  # 'x
    "qq": _read_prefix,  # `x
    "splice": _read_prefix,  # ,@x
    "unquote": _read_prefix,  # ,x
    "fquote": _read_prefix,  # #'f
    "block": _read_block_comment,  # #| ... |#
    "char": _read_char,  # #\a
    "vector": _read_vector,  # #(
    "uninterned": _read_uninterned,  # #:g
    "radix": _read_radix,  # #x1F #b101 #o17
    "feature": _read_feature,  # #+sbcl #-sbcl
    "array": _read_array,  # #2A(
    "bits": _read_bits,  # #*1011
    "nradix": _read_nradix,  # #36rZZ
    "hash": _read_unsupported_dispatch,  # any other #
    "atom": _read_atom,  # numbers, symbols, the dot of a dotted list
    "badatom": _read_bad_atom,  # an unterminated | or a trailing backslash
}


MAX_NUMBER_DIGITS = 30_000  # about the 100,000 bits the evaluator allows (interp.py)


def _number(reader: Reader, tok: str, start: int) -> Any:
    """The number a token spells (None when it is a symbol such as `+` or `1+`)."""
    if len(tok) > MAX_NUMBER_DIGITS and tok[0] in "+-.0123456789" \
            and sum(ch.isdigit() for ch in tok[:64]) > 32:
        raise limit_error(f"a {len(tok)}-character number is too long to read",
                          f"write numbers of at most {MAX_NUMBER_DIGITS} digits",
                          reader.span(start, 1))
    if _INT.match(tok):
        return int(tok.rstrip("."))
    if _RATIO.match(tok):
        num, den = tok.split("/")
        if int(den) == 0:
            raise error(E_READ_NUMBER, f"ratio `{tok}` divides by zero",
                        reader.span(start, len(tok)), fix="use a nonzero denominator")
        value = Fraction(int(num), int(den))
        return value.numerator if value.denominator == 1 else value
    m = _FLOAT.match(tok)
    if m:
        return _float(reader, tok, m, start)
    if _NUMBERISH.match(tok) and tok[-1] not in "+-" and any(ch.isdigit() for ch in tok) \
            and not tok.startswith("."):
        raise error(E_READ_NUMBER, f"malformed number `{tok}`", reader.span(start, len(tok)),
                    fix="write an integer (12), a ratio (1/2) or a float (1.5, 1e-3, 2.5d0)")
    return None


def _float(reader: Reader, tok: str, m: re.Match, start: int) -> float:
    """A float token: d and l exponent markers make a double, any other a single."""
    marker = (m.group(1) or "e").lower()
    mantissa = tok if m.group(1) is None else tok[: m.start(1)]
    exponent = int(m.group(2) or 0)
    if abs(exponent) > 400:
        raise error(E_READ_NUMBER, f"float `{tok}` is out of range",
                    reader.span(start, len(tok)), fix="use a smaller exponent")
    value = float(f"{mantissa}e{exponent}")
    if marker in "dl":
        if value in (float("inf"), float("-inf")):
            raise error(E_READ_NUMBER, f"float `{tok}` is out of range",
                        reader.span(start, len(tok)), fix="use a smaller exponent")
        return value
    single = Single(value)
    if single in (float("inf"), float("-inf")):
        raise error(E_READ_NUMBER, f"single-float `{tok}` is out of range",
                    reader.span(start, len(tok)),
                    fix="write it as a double (…d0) or use a smaller exponent")
    return single


def _md_array(contents: Any, rank: int, span: Span) -> Any:
    """#nA(...): an array of rank n from nested lists."""
    dims: list[int] = []
    level = contents
    for _ in range(rank):
        items = list(level) if type(level) is Cons else (level if type(level) is list else [])
        dims.append(len(items))
        level = items[0] if items else NIL
    data: list = []

    def flatten(x: Any, depth: int) -> None:
        if depth == rank:
            data.append(x)
            return
        items = list(x) if type(x) is Cons else (x if type(x) is list else [])
        if len(items) != dims[depth]:
            raise error(E_READ_SYNTAX, f"#{rank}A contents are not rectangular", span,
                        fix="give every row the same length")
        for item in items:
            flatten(item, depth + 1)

    flatten(contents, 0)
    if rank == 1:
        return data
    return MDArray(dims, data)


def _symbol_name(tok: str) -> str:
    """Upcase a symbol token except inside |...| and after a backslash."""
    if "|" not in tok and "\\" not in tok:
        return tok.upper()
    out = []
    i = 0
    while i < len(tok):
        ch = tok[i]
        if ch == "\\" and i + 1 < len(tok):
            out.append(tok[i + 1])
            i += 2
        elif ch == "|":
            j = tok.index("|", i + 1)
            out.append(tok[i + 1 : j])
            i = j + 1
        else:
            out.append(ch.upper())
            i += 1
    return "".join(out)


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", r"\1", body, flags=re.DOTALL)


_FEATURES = {"SBCL", "SEXPGPU", "COMMON-LISP", "ANSI-CL"}


def _feature_true(expr: Any) -> bool:
    if type(expr) is Cons:
        op = expr.car.name if hasattr(expr.car, "name") else ""
        args = []
        node = expr.cdr
        while type(node) is Cons:
            args.append(node.car)
            node = node.cdr
        if op == "AND":
            return all(_feature_true(a) for a in args)
        if op == "OR":
            return any(_feature_true(a) for a in args)
        if op == "NOT":
            return not any(_feature_true(a) for a in args)
        return False
    return getattr(expr, "name", "") in _FEATURES


def read_all(text: str, file: str = "<string>") -> list:
    """Read every form in `text`; raises SexpError (E-READ-*) on malformed input."""
    return Reader(text, file).read_all()
