"""The printer variables in force: *print-case*, *print-level*, *print-length*,
*print-base* and *print-radix*.

The printer is module-level code with no interpreter; an evaluating interpreter hands
over its table of global values (`watch`), where let-bindings of special variables live
too, and `reset` goes back to the defaults when the evaluation ends, so diagnostics
printed afterwards are not affected. Each print reads the variables once (`refresh`);
the printer's inner loops look at the result only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from sexpgpu.lisp.types import NIL, Symbol, intern


class Settings(NamedTuple):
    case: Any = None  # the *print-case* keyword; None for :upcase
    level: Any = None  # *print-level*, None for no limit
    length: Any = None  # *print-length*, None for no limit
    base: int = 10
    radix: bool = False


DEFAULT = Settings()
_NAMES = tuple(intern(n) for n in (
    "*PRINT-CASE*", "*PRINT-LEVEL*", "*PRINT-LENGTH*", "*PRINT-BASE*", "*PRINT-RADIX*"))

_globals: dict | None = None  # the evaluating interpreter's global values
_seen: tuple = ()  # the variables' values the cached settings were made from
_cached = DEFAULT
now = DEFAULT
plain_numbers = True  # base 10 without radix marks: integers print with str()
_overrides: dict = {}  # what write's :case/:base/:radix bind for one print


def watch(table: dict) -> None:
    """Print as the variables in `table` (an interpreter's globals) say."""
    global _globals
    _globals = table


def reset() -> None:
    """Back to the defaults (no interpreter is evaluating)."""
    global _globals
    _globals = None


def refresh() -> Settings:
    """Read the variables at the start of a print."""
    global now, plain_numbers
    settings = _current()
    if _overrides:
        settings = settings._replace(**_overrides)
    if settings is not now:
        now = settings
        plain_numbers = settings.base == 10 and not settings.radix
    return settings


def _current() -> Settings:
    global _seen, _cached
    table = _globals
    if table is None:
        return DEFAULT
    get = table.get
    values = (get(_NAMES[0]), get(_NAMES[1]), get(_NAMES[2]), get(_NAMES[3]), get(_NAMES[4]))
    if values == _seen:  # tuple equality tries identity first: cheap when unchanged
        return _cached
    case, level, length, base, radix = values
    _cached = Settings(
        case if type(case) is Symbol and case.name != "UPCASE" else None,
        level if type(level) is int and level >= 0 else None,
        length if type(length) is int and length >= 0 else None,
        base if type(base) is int and 2 <= base <= 36 else 10,
        radix is not None and radix is not NIL)
    _seen = values
    return _cached


def with_overrides(values: dict, thunk: Callable[[], Any]) -> Any:
    """thunk() with some settings replaced (keys are Settings fields)."""
    global _overrides
    saved = _overrides
    _overrides = {**saved, **values}
    try:
        return thunk()
    finally:
        _overrides = saved
