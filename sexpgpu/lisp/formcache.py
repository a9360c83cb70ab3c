"""A disk cache of the standard modules' read forms (the prelude, sexpgpu/nn,
sexpgpu/optim and the contract forms), so a new process does not read ~15 KB of Lisp
again: `check` is started for every edit.

The cache holds data, never code: JSON of symbols, numbers, strings and lists with
their positions, rebuilt into forms by this module (no pickle, no marshal: a file
someone else wrote can at worst give wrong forms, which the sandboxed evaluator runs
within its limits, docs/security.md). Its source is the package version, the Python
version, the path and the text: a file is named by a checksum of it and used only
when it holds that same source, so an edit or an upgrade reads afresh. Forms
holding anything else (an uninterned symbol, an array literal, a bignum) are not
cached. Any failure to read or write the cache falls back to the reader.
zlib, not hashlib (OpenSSL, ~4 ms of every `check` and `eval`): the checksum only
names the file, the stored source decides. orjson, not the standard json: a
tampered file nested 100,000 deep overflowed the C stack in json's scanner once the
evaluator had raised Python's recursion limit (a segfault, not a fallback); orjson
refuses past 1024 levels.
"""

from __future__ import annotations

import os
import sys
import zlib
from fractions import Fraction
from pathlib import Path
from typing import Any

import orjson

from sexpgpu import __version__, env
from sexpgpu.diagnostics import Span
from sexpgpu.lisp.reader import read_all
from sexpgpu.lisp.types import Char, Cons, FormList, Single, Symbol, intern, keyword

# tags of the encoded values; a bare int or float is itself
SYMBOL, KEYWORD, LIST, STRING, CHAR, SINGLE, RATIO = range(7)
_MAX_INT = 1 << 62  # orjson's integers are 64-bit


class _Unencodable(Exception):
    """A form holds a value the cache does not keep."""


def _source(text: str, file: str) -> str:
    return "\0".join((__version__, sys.version, file, text))


def _path(source: str) -> Path:
    data = source.encode()
    name = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"
    return env.cache_dir() / "forms" / f"{name}.json"


def read_cached(text: str, file: str) -> FormList:
    """`read_all(text, file)`, from the cache when it holds this exact text."""
    source = _source(text, file)
    path = _path(source)
    try:
        data = orjson.loads(path.read_bytes())
        if data["source"] == source:
            return FormList([_decode(x, file) for x in data["forms"]],
                            [None if s is None else Span(file, *s) for s in data["spans"]])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError,
            RecursionError):
        pass  # absent, or not written by this module: read the text
    forms = read_all(text, file)
    try:
        _write(path, {"source": source, "forms": [_encode(x) for x in forms],
                      "spans": [None if s is None else _span(s) for s in forms.spans]})
    except (_Unencodable, OSError, RecursionError):
        pass
    return forms


def _write(path: Path, data: dict[str, Any]) -> None:
    """Write by rename, so a reader sees a whole file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    temp.write_bytes(orjson.dumps(data))
    os.replace(temp, path)


def _span(span: Span) -> list[int]:
    return [span.line, span.col, span.width]


def _encode(x: Any) -> Any:
    t = type(x)
    if t is Symbol:
        if not x.interned:
            raise _Unencodable(x.name)
        return [KEYWORD if x.is_keyword else SYMBOL, x.name]
    if t is Cons:
        items, span = [], x.span
        while type(x) is Cons:
            if items and x.span is not None:
                raise _Unencodable("a position inside a list")
            items.append(_encode(x.car))
            x = x.cdr
        return [LIST, None if span is None else _span(span), items, _encode(x)]
    if t is int:
        if abs(x) >= _MAX_INT:
            raise _Unencodable("a bignum")
        return x
    if t is float:
        return x
    if t is str:
        return [STRING, x]
    if t is Single:
        return [SINGLE, float(x)]
    if t is Char:
        return [CHAR, x.ch]
    if t is Fraction:
        return [RATIO, _encode(x.numerator), _encode(x.denominator)]
    raise _Unencodable(t.__name__)


def _decode(x: Any, file: str) -> Any:
    if type(x) is not list:
        return x
    tag = x[0]
    if tag == SYMBOL:
        return intern(x[1])
    if tag == LIST:
        tail = _decode(x[3], file)
        for item in reversed(x[2]):
            tail = Cons(_decode(item, file), tail)
        if x[1] is not None:
            tail.span = Span(file, *x[1])
        return tail
    if tag == KEYWORD:
        return keyword(x[1])
    if tag == STRING:
        return x[1]
    if tag == SINGLE:
        return Single(x[1])
    if tag == CHAR:
        return Char(x[1])
    if tag == RATIO:
        return Fraction(x[1], x[2])
    raise ValueError(f"unknown tag {tag}")
