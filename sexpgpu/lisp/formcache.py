"""A disk cache of the standard modules' read forms (the prelude, sexpgpu/nn,
sexpgpu/optim and the contract forms), so a new process does not read ~15 KB of Lisp
again: `check` is started for every edit.

The cache holds data, never code: a text file of tokens, one a line (symbols,
numbers, strings, list starts with their positions, list ends), rebuilt into forms
by this module with a stack of open lists (no pickle, no marshal, no recursion: a
file someone else wrote can at worst give wrong forms, which the sandboxed evaluator
runs within its limits, docs/security.md; a list nested 100,000 deep is a long
list of lines). Its source is the package version, the Python version, the path
and the text: a file is named by a checksum of it and used only when it holds that
same source, so an edit or an upgrade reads afresh. Forms holding anything else (an
uninterned symbol, an array literal, a bignum) are not cached. Any failure to read
or write the cache falls back to the reader.
Why this format and not JSON: every `check` and `eval` reads these files first.
orjson's import (uuid, platform, datetime) was ~10 ms of a process meant to take a
fifth of a second; the standard json's C scanner recursed as deep as a tampered file
nested, up to the recursion limit the evaluator raises (402,000), and overflowed the
C stack. zlib names the files, not hashlib (OpenSSL, ~4 ms): the source decides.
"""

from __future__ import annotations

import os
import sys
import zlib
from fractions import Fraction
from pathlib import Path
from typing import Any

from sexpgpu import __version__, env
from sexpgpu.diagnostics import Span
from sexpgpu.lisp.reader import read_all
from sexpgpu.lisp.types import NIL, Char, Cons, FormList, Single, Symbol, intern, keyword

HEADER = "sexpgpu forms 2"  # the format; a file with another first line is not read
_MAX_INT = 1 << 62  # a bignum is not kept (rare in the standard modules)


class _Unencodable(Exception):
    """A form holds a value the cache does not keep."""


def _source(text: str, file: str) -> str:
    return "\0".join((__version__, sys.version, file, text))


def _path(source: str) -> Path:
    data = source.encode()
    name = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"
    return env.cache_dir() / "forms" / f"{name}.forms"


def read_cached(text: str, file: str) -> FormList:
    """`read_all(text, file)`, from the cache when it holds this exact text."""
    source = _source(text, file)
    path = _path(source)
    try:
        lines = path.read_bytes().decode("utf-8").split("\n")
        if lines[0] == HEADER and _unescape(lines[1]) == source:
            return _decode(lines, file)
    except (OSError, UnicodeDecodeError, KeyError, TypeError, ValueError, IndexError,
            ArithmeticError):
        pass  # absent, or not written by this module: read the text
    forms = read_all(text, file)
    try:
        _write(path, "\n".join([HEADER, _escape(source), *_encode_all(forms)]))
    except (_Unencodable, OSError, UnicodeEncodeError, RecursionError):
        pass
    return forms


def _write(path: Path, text: str) -> None:
    """Write by rename, so a reader sees a whole file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    temp.write_bytes(text.encode("utf-8"))
    os.replace(temp, path)


# -- the tokens ------------------------------------------------------------------------
# S name, K name (keyword), I int, F float, G single, T string, C char, R num/den;
# "(" line col width (a list's position; "(" alone without one), "." before a dotted
# tail, ")" ending a list; "@" line col width (or "@" alone) before each top-level form.

def _escape(s: str) -> str:
    """A string on one line: backslash and newline escaped."""
    return s.replace("\\", "\\\\").replace("\n", "\\n")


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    # every backslash of an escaped text starts "\\" or "\n": split at the first kind
    return "\\".join(part.replace("\\n", "\n") for part in s.split("\\\\"))


def _position(span: Span | None) -> str:
    return "" if span is None else f"{span.line} {span.col} {span.width}"


def _encode_all(forms: FormList) -> list[str]:
    out: list[str] = []
    for form, span in zip(forms, forms.spans):
        out.append("@" + _position(span))
        _encode(form, out)
    return out


def _encode(x: Any, out: list[str]) -> None:
    t = type(x)
    if t is Cons:
        out.append("(" + _position(x.span))
        first = True
        while type(x) is Cons:
            if not first and x.span is not None:
                raise _Unencodable("a position inside a list")
            _encode(x.car, out)
            x, first = x.cdr, False
        if x is not NIL:
            out.append(".")
            _encode(x, out)
        out.append(")")
    elif t is Symbol:
        if not x.interned:
            raise _Unencodable(x.name)
        out.append(("K" if x.is_keyword else "S") + _escape(x.name))
    elif t is int:
        if abs(x) >= _MAX_INT:
            raise _Unencodable("a bignum")
        out.append(f"I{x}")
    elif t is float:
        out.append(f"F{x!r}")
    elif t is Single:
        out.append(f"G{float(x)!r}")
    elif t is str:
        out.append("T" + _escape(x))
    elif t is Char:
        out.append("C" + _escape(x.ch))
    elif t is Fraction and abs(x.numerator) < _MAX_INT and x.denominator < _MAX_INT:
        out.append(f"R{x.numerator}/{x.denominator}")
    else:
        raise _Unencodable(t.__name__)


def _decode(lines: list[str], file: str) -> FormList:
    """The forms of the token lines after the header and the source: each value
    joins the innermost open list (a stack of them), or is a top-level form."""
    forms: list[Any] = []
    spans: list[Span | None] = []
    stack: list[list[Any]] = []  # per open list: [span, items, tail pending, tail]
    for line in lines[2:]:
        tag, rest = line[:1], line[1:]
        if tag == "@":
            if stack:
                raise ValueError("a top-level form inside a list")
            spans.append(_span(rest, file))
            continue
        if tag == "(":
            stack.append([_span(rest, file), [], False, NIL])
            continue
        if tag == ".":
            stack[-1][2] = True
            continue
        if tag == ")":
            span, items, _, tail = stack.pop()
            for item in reversed(items):
                tail = Cons(item, tail)
            if span is not None:
                tail.span = span
            value = tail
        else:
            value = _ATOMS[tag](rest)
        if not stack:
            forms.append(value)
        elif stack[-1][2]:
            stack[-1][2], stack[-1][3] = False, value
        else:
            stack[-1][1].append(value)
    if stack or len(forms) != len(spans):
        raise ValueError("unbalanced lists")
    return FormList(forms, spans)


def _span(position: str, file: str) -> Span | None:
    if not position:
        return None
    line, col, width = map(int, position.split(" "))
    return Span(file, line, col, width)


def _int(text: str) -> int:
    """An integer as the writer writes them (under _MAX_INT), else ValueError."""
    value = int(text) if len(text) <= 20 else _MAX_INT
    if abs(value) >= _MAX_INT:
        raise ValueError("not an integer this cache writes")
    return value


def _ratio(text: str) -> Fraction:
    num, den = text.split("/")
    return Fraction(_int(num), _int(den))


_ATOMS = {
    "S": lambda s: intern(_unescape(s)),
    "K": lambda s: keyword(_unescape(s)),
    "I": _int,
    "F": float,
    "G": lambda s: Single(float(s)),
    "T": _unescape,
    "C": lambda s: Char(_unescape(s)),
    "R": _ratio,
}
