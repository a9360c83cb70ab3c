"""Backquote: expand a `template (with nested levels) into list-building code."""

from __future__ import annotations

from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp.errors import E_SYNTAX
from sexpgpu.lisp.reader import QUASIQUOTE, QUOTE, UNQUOTE, UNQUOTE_SPLICING
from sexpgpu.lisp.types import NIL, Cons, Symbol, intern, lisp_list

# internal names so a user's flet of LIST or APPEND cannot change what ` builds
QQ_LIST = intern("%QQ-LIST")
QQ_APPEND = intern("%QQ-APPEND")
QQ_VECTOR = intern("%QQ-VECTOR")
QQ_UNQUOTE_EACH = intern("%QQ-UNQUOTE-EACH")


def _is(form: Any, head: Symbol) -> bool:
    return type(form) is Cons and form.car is head and type(form.cdr) is Cons \
        and form.cdr.cdr is NIL


def _has_unquote(x: Any) -> bool:
    if type(x) is Cons:
        if x.car is UNQUOTE or x.car is UNQUOTE_SPLICING:
            return True
        return _has_unquote(x.car) or _has_unquote(x.cdr)
    if type(x) is list:
        return any(_has_unquote(i) for i in x)
    return False


def _quote(x: Any) -> Any:
    if type(x) is Symbol and not x.is_keyword and x is not NIL or type(x) is Cons:
        return lisp_list([QUOTE, x])
    return x


def expand_quasiquote(template: Any, whole: Any, depth: int = 1) -> Any:
    """Code that builds `template`, evaluating unquotes at nesting depth 1."""
    if not _has_unquote(template):
        return _quote(template)
    if type(template) is list:
        return lisp_list([intern("APPLY"), lisp_list([intern("FUNCTION"), QQ_VECTOR]),
                          expand_quasiquote(_to_cons(template), whole, depth)])
    if type(template) is not Cons:
        return _quote(template)
    if _is(template, UNQUOTE):
        if depth == 1:
            return template.cdr.car
        return lisp_list([QQ_LIST, _quote(UNQUOTE),
                          expand_quasiquote(template.cdr.car, whole, depth - 1)])
    if _is(template, QUASIQUOTE):
        return lisp_list([QQ_LIST, _quote(QUASIQUOTE),
                          expand_quasiquote(template.cdr.car, whole, depth + 1)])
    if _is(template, UNQUOTE_SPLICING):
        raise error(E_SYNTAX, ",@ right after a backquote has no list to splice into",
                    getattr(whole, "span", None), fix="write `(a ,@list) instead of `,@list")
    return _expand_list(template, whole, depth)


def _expand_list(template: Cons, whole: Any, depth: int) -> Any:
    """`(a ,b ,@c . d): (%qq-append (%qq-list 'a) (%qq-list b) c 'd)."""
    parts = []
    node = template
    while type(node) is Cons:
        if node is not template and (node.car is UNQUOTE or node.car is UNQUOTE_SPLICING) \
                and _is(node, node.car):
            break  # `(a . ,b) reads as (a unquote b): the tail is unquoted
        item = node.car
        if depth == 2 and _is(item, UNQUOTE) and _is(item.cdr.car, UNQUOTE_SPLICING):
            # ,,@x inside a nested backquote: one ,e per element e of x
            parts.append(lisp_list([QQ_UNQUOTE_EACH, item.cdr.car.cdr.car]))
        elif _is(item, UNQUOTE_SPLICING):
            if depth == 1:
                parts.append(item.cdr.car)
            else:
                inner = lisp_list([QQ_LIST, _quote(UNQUOTE_SPLICING),
                                   expand_quasiquote(item.cdr.car, whole, depth - 1)])
                parts.append(lisp_list([QQ_LIST, inner]))
        else:
            parts.append(lisp_list([QQ_LIST, expand_quasiquote(item, whole, depth)]))
        node = node.cdr
    if node is not NIL:
        parts.append(expand_quasiquote(node, whole, depth))
    return Cons(QQ_APPEND, lisp_list(parts))


def _to_cons(items: list) -> Any:
    return lisp_list(items)
