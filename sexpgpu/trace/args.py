"""Reading Lisp arguments in Python builtins: keyword arguments, shapes, axes,
dtypes and numbers, each misuse reported as a diagnostic at the caller's line."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from sexpgpu.diagnostics import define_code, error
from sexpgpu.ir.types import DTYPES
from sexpgpu.lisp.interp import Closure
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.registry import Builtin
from sexpgpu.lisp.types import NIL, Cons, Single, Symbol, T, lisp_list, to_py
from sexpgpu.suggest import did_you_mean
from sexpgpu.trace.tensor import site

E_ARG = define_code(
    "E-ARG", "wrong argument to a builtin",
    "A contract form or tensor builtin got an argument it cannot use: a missing or "
    "unknown keyword, a shape that is not a list of integers, an axis that is not an "
    "integer, a dtype keyword that does not exist, an objective or evaluate function "
    "that takes a batch field its loader does not have. The diagnostic names the argument.",
)


def fail(message: str, *, expected: str, actual: str, fix: str | None = None) -> Exception:
    span, notes = site()
    return error(E_ARG, message, span, expected=expected, actual=actual, fix=fix,
                 notes=list(notes))


def show(value: Any) -> str:
    try:
        return prin1_to_string(value)
    except Exception:  # noqa: BLE001 - showing must never fail
        return repr(value)


def is_keyword(x: Any) -> bool:
    return isinstance(x, Symbol) and x.is_keyword


def kw_name(x: Symbol) -> str:
    """`:weight-decay` -> "weight-decay" (Lisp names are upcased by the reader)."""
    return x.name.lower()


def split(fn: str, args: tuple, keys: tuple[str, ...], *, min_pos: int = 0,
          max_pos: int | None = None, strict: bool = True) -> tuple[list[Any], dict[str, Any]]:
    """Positional arguments up to the first keyword, then a keyword plist."""
    pos: list[Any] = []
    i = 0
    while i < len(args) and not is_keyword(args[i]):
        pos.append(args[i])
        i += 1
    kwargs: dict[str, Any] = {}
    while i < len(args):
        key = args[i]
        if not is_keyword(key) or i + 1 >= len(args):
            raise fail(f"{fn}: malformed keyword arguments", expected="(... :key value ...)",
                       actual=" ".join(show(a) for a in args[i:]).lower(),
                       fix="give every :key one value")
        name = kw_name(key)
        if strict and name not in keys:
            raise fail(f"{fn}: unknown keyword :{name}",
                       expected=" ".join(f":{k}" for k in keys) or "no keywords",
                       actual=f":{name}", fix=did_you_mean(name, list(keys)))
        kwargs.setdefault(name, args[i + 1])
        i += 2
    if len(pos) < min_pos or (max_pos is not None and len(pos) > max_pos):
        want = f"{min_pos}" if max_pos == min_pos else f"{min_pos} to {max_pos or 'any'}"
        raise fail(f"{fn}: wrong number of arguments", expected=f"{want} positional",
                   actual=str(len(pos)))
    return pos, kwargs


def local_name(sym: Symbol) -> str:
    """A definition's own name: `require` prefixes a module's names (`sexpgpu/nn:mlp`)."""
    return sym.name.lower().rsplit(":", 1)[-1]


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float, Fraction)) and not isinstance(x, bool)


def is_function(x: Any) -> bool:
    """A Lisp function: a closure or a builtin."""
    return isinstance(x, (Closure, Builtin))


def short_float(x: float) -> float:
    """The shortest decimal that reads back as the same single float (1e-3, not
    0.0010000000474974513), so plans and JSON show what the file says."""
    for digits in range(6, 10):
        candidate = float(f"{x:.{digits}g}")
        if Single(candidate) == x:
            return candidate
    return float(x)


def number(fn: str, x: Any, what: str = "value") -> float | int:
    if isinstance(x, Fraction):
        return float(x)
    if isinstance(x, Single):
        return short_float(x)
    if not is_number(x):
        raise fail(f"{fn}: {what} must be a number", expected="a number", actual=show(x))
    return x


def integer(fn: str, x: Any, what: str = "value") -> int:
    if not isinstance(x, int) or isinstance(x, bool):
        raise fail(f"{fn}: {what} must be an integer", expected="an integer", actual=show(x))
    return x


def int_list(fn: str, x: Any, what: str = "shape") -> tuple[int, ...]:
    """A shape or axis list: a Lisp list (or vector) of integers; one integer is a list of one."""
    if isinstance(x, int) and not isinstance(x, bool):
        return (x,)
    items = to_py(x) if (x is NIL or type(x) is Cons) else x if isinstance(x, list) else None
    if items is None or not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
        raise fail(f"{fn}: {what} must be a list of integers", expected="e.g. (list 12 64)",
                   actual=show(x))
    return tuple(items)


def axes(fn: str, x: Any) -> tuple[int, ...] | None:
    """:axis nil (all), an integer, or a list of integers."""
    if x is None or x is NIL:
        return None
    return int_list(fn, x, "axis")


def flag(x: Any) -> bool:
    return x is not None and x is not NIL


def dtype(fn: str, x: Any) -> str:
    name = kw_name(x) if is_keyword(x) else None
    if name not in DTYPES:
        raise fail(f"{fn}: unknown dtype {show(x)}", expected=" ".join(f":{d}" for d in DTYPES),
                   actual=show(x), fix="use :f32 for floats and :i64 for indices")
    return name


def to_lisp_list(items: tuple | list) -> Any:
    return lisp_list(list(items))


def boolean(flag_: bool) -> Symbol:
    return T if flag_ else NIL
