"""Condition objects: what `handler-case` binds and `princ` shows, the type hierarchy
handlers match against, and the link both ways between a condition and the SexpError
that carries it. The Lisp side (define-condition, error, handler-case) is signals.py.
"""

from __future__ import annotations

from sexpgpu.diagnostics import SexpError, error
from sexpgpu.lisp.errors import (
    E_ARITY,
    E_ASSERT,
    E_DIVISION_BY_ZERO,
    E_FLOAT_OVERFLOW,
    E_LISP_ERROR,
    E_SYNTAX,
    E_TYPE,
    E_UNBOUND,
    E_UNDEFINED_FUNCTION,
)

# condition type -> parent; the hierarchy handler-case matches against
CONDITION_PARENTS: dict[str, str | None] = {
    "CONDITION": None,
    "SERIOUS-CONDITION": "CONDITION",
    "ERROR": "SERIOUS-CONDITION",
    "WARNING": "CONDITION",
    "SIMPLE-CONDITION": "CONDITION",
    "SIMPLE-WARNING": "WARNING",
    "SIMPLE-ERROR": "ERROR",
    "TYPE-ERROR": "ERROR",
    "SIMPLE-TYPE-ERROR": "TYPE-ERROR",
    "PROGRAM-ERROR": "ERROR",
    "CONTROL-ERROR": "ERROR",
    "CELL-ERROR": "ERROR",
    "PARSE-ERROR": "ERROR",
    "UNBOUND-VARIABLE": "CELL-ERROR",
    "UNDEFINED-FUNCTION": "CELL-ERROR",
    "ARITHMETIC-ERROR": "ERROR",
    "DIVISION-BY-ZERO": "ARITHMETIC-ERROR",
    "FLOATING-POINT-OVERFLOW": "ARITHMETIC-ERROR",
    "STORAGE-CONDITION": "SERIOUS-CONDITION",
}

_CODE_TYPES = {
    E_TYPE: "TYPE-ERROR",
    E_UNBOUND: "UNBOUND-VARIABLE",
    E_UNDEFINED_FUNCTION: "UNDEFINED-FUNCTION",
    E_ARITY: "PROGRAM-ERROR",
    E_DIVISION_BY_ZERO: "DIVISION-BY-ZERO",
    E_FLOAT_OVERFLOW: "FLOATING-POINT-OVERFLOW",
    E_SYNTAX: "PROGRAM-ERROR",
    E_ASSERT: "SIMPLE-ERROR",
}


class Condition:
    """A Lisp condition object: what handler-case binds and `princ` shows."""

    __slots__ = ("type", "message", "slots")

    def __init__(self, type_name: str, message: str, slots: dict | None = None):
        self.type = type_name
        self.message = message
        self.slots = slots or {}

    def lisp_repr(self, escape: bool) -> str:
        if escape:
            return f"#<{self.type} {{{id(self):X}}}>"
        return self.message


def is_subtype(type_name: str, ancestor: str, user_types: dict[str, str | None]) -> bool:
    """Whether condition type `type_name` is `ancestor` or inherits from it."""
    name: str | None = type_name
    while name is not None:
        if name == ancestor:
            return True
        name = user_types.get(name, CONDITION_PARENTS.get(name))
    return False


def lineage(type_name: str, user_types: dict[str, str | None]) -> list[str]:
    """The condition type and its ancestors, nearest first (user types first, as
    define-condition may redefine a built-in one)."""
    chain = []
    name: str | None = type_name
    while name is not None:
        chain.append(name)
        name = user_types.get(name, CONDITION_PARENTS.get(name))
    return chain


def condition_of(exc: SexpError) -> Condition:
    """The condition a handler sees for a SexpError (built lazily for builtin errors)."""
    cond = getattr(exc, "condition", None)
    if cond is None:
        diag = exc.diagnostic
        cond = Condition(_CODE_TYPES.get(diag.code, "SIMPLE-ERROR"), diag.message)
        exc.condition = cond
    return cond


def condition_error(cond: Condition, code: str = E_LISP_ERROR, fix: str | None = None) -> SexpError:
    """The SexpError that signals `cond` (what `error` raises)."""
    exc = error(code, cond.message, fix=fix or "handle it with handler-case, or fix its cause")
    exc.condition = cond
    return exc
