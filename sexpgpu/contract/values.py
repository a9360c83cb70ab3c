"""Lisp values <-> plain Python values for the contract: keywords become strings,
t/nil booleans, lists Python lists; knobs keep keywords apart from strings."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from sexpgpu.lisp.types import NIL, Cons, Single, Symbol, T, keyword, lisp_list, to_py
from sexpgpu.selection import Keyword
from sexpgpu.trace.args import short_float


def to_python(x: Any, *, keywords_as: type = str) -> Any:
    """A Lisp datum as Python: :train -> "train" (or Keyword), t -> True, nil -> None."""
    if x is T:
        return True
    if x is NIL:
        return None
    if isinstance(x, Symbol):
        name = x.name.lower()
        return keywords_as(name) if x.is_keyword else name
    if type(x) is Cons:
        return [to_python(i, keywords_as=keywords_as) for i in to_py(x)]
    if isinstance(x, list):
        return [to_python(i, keywords_as=keywords_as) for i in x]
    if isinstance(x, Fraction):
        return float(x)
    if isinstance(x, Single):
        return short_float(x)
    return x


def knob_value(x: Any) -> Any:
    """A knob default or selection value as Python (keywords stay Keyword, nil is false)."""
    if x is NIL:
        return False
    return to_python(x, keywords_as=Keyword)


def knob_json(value: Any) -> Any:
    """A knob value as JSON (in plan.json, `check --json`): a keyword as ":name"."""
    if isinstance(value, Keyword):
        return f":{value}"
    return value


def to_lisp(value: Any, like: Any = None) -> Any:
    """The Lisp value of a knob; a float knob whose default was single stays single."""
    if isinstance(value, bool):
        return T if value else NIL
    if isinstance(value, Keyword):
        return keyword(str(value).upper())
    if isinstance(value, float) and isinstance(like, Single):
        return Single(value)
    if isinstance(value, list):
        return lisp_list([to_lisp(v) for v in value])
    return value


def plist(items: Any) -> list[tuple[str, Any]]:
    """(:a 1 :b 2) -> [("a", 1), ("b", 2)] keeping Lisp values."""
    seq = to_py(items) if (items is NIL or type(items) is Cons) else list(items)
    out = []
    for i in range(0, len(seq) - 1, 2):
        key = seq[i]
        name = key.name.lower() if isinstance(key, Symbol) else str(key)
        out.append((name, seq[i + 1]))
    return out
