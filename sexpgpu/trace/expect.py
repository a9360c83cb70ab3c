"""Contracts library code states about its tensor arguments: `expect-shape`,
`expect-same-shape` and `expect-dtype` check shapes and dtypes exactly (no
broadcasting) and report E-SHAPE/E-DTYPE at the user's call, not in the library."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.ir.shapes import (
    DTYPE_CLASSES,
    ShapeRuleError,
    require_kind,
    require_same_shape,
    require_shape,
)
from sexpgpu.lisp.types import NIL, Cons, to_py
from sexpgpu.trace import args as A
from sexpgpu.trace.tensor import TracedTensor, site

EXPECT_BUILTINS: dict[str, Callable[..., Any]] = {}


def _builtin(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        EXPECT_BUILTINS[name] = fn
        return fn

    return deco


def _report(exc: ShapeRuleError, fix: Any) -> Exception:
    """The rule's failure at the user's form (the evaluator adds the library lines as
    notes); a fix the library wrote wins over the generic one."""
    span, notes = site()
    return error(exc.code, exc.message, span, expected=exc.expected, actual=exc.actual,
                 fix=str(fix) if isinstance(fix, str) else exc.fix, notes=list(notes))


def _tensor(fn: str, x: Any) -> TracedTensor:
    if not isinstance(x, TracedTensor):
        raise A.fail(f"{fn}: expected a tensor", expected="a tensor", actual=A.show(x))
    return x


def _what(fn: str, what: Any) -> str:
    if not isinstance(what, str):
        raise A.fail(f"{fn}: the description must be a string", expected='"nn:mse: target"',
                     actual=A.show(what))
    return what


@_builtin("expect-shape")
def expect_shape(x: Any, shape: Any, what: Any, fix: Any = None) -> Any:
    """(expect-shape x '(8 10) "what" [fix]): x has exactly this shape; nil or _ in the
    list matches any size on that axis. Returns x."""
    t = _tensor("expect-shape", x)
    items = to_py(shape) if type(shape) is Cons or shape is NIL else None
    if items is None or not all(_is_dim(d) or d is None or _is_blank(d)
                                for d in items):
        raise A.fail("expect-shape: the shape must be a list of integers (nil or _ for any)",
                     expected="(10 nil)", actual=A.show(shape))
    expected = [None if d is None or _is_blank(d) else int(d) for d in items]
    try:
        require_shape(t.value.type, expected, _what("expect-shape", what))
    except ShapeRuleError as exc:
        raise _report(exc, fix) from None
    return x


@_builtin("expect-same-shape")
def expect_same_shape(a: Any, b: Any, what: Any, fix: Any = None) -> Any:
    """(expect-same-shape a b "what" [fix]): a and b have the same shape. Returns a."""
    ta, tb = _tensor("expect-same-shape", a), _tensor("expect-same-shape", b)
    try:
        require_same_shape(ta.value.type, tb.value.type, _what("expect-same-shape", what))
    except ShapeRuleError as exc:
        raise _report(exc, fix) from None
    return a


@_builtin("expect-dtype")
def expect_dtype(x: Any, kinds: Any, what: Any, fix: Any = None) -> Any:
    """(expect-dtype x :float "what" [fix]) or a list of kinds '(:float :integer): x's
    dtype is of one of them (:float :integer :bool or a dtype like :i64). Returns x."""
    t = _tensor("expect-dtype", x)
    names = [A.kw_name(k) if A.is_keyword(k) else None
             for k in (to_py(kinds) if type(kinds) is Cons else [kinds])]
    if not names or any(n not in DTYPE_CLASSES for n in names):
        raise A.fail("expect-dtype: unknown dtype kind", actual=A.show(kinds),
                     expected=" ".join(f":{k}" for k in DTYPE_CLASSES))
    try:
        require_kind(t.value.type, names, _what("expect-dtype", what))
    except ShapeRuleError as exc:
        raise _report(exc, fix) from None
    return x


def _is_blank(d: Any) -> bool:
    """nil or `_`: any size on that axis."""
    return d is NIL or d == [] or getattr(d, "name", None) == "_"


def _is_dim(d: Any) -> bool:
    return isinstance(d, int) and not isinstance(d, bool)
