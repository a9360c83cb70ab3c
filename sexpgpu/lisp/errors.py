"""Evaluation diagnostics and the Lisp condition objects built from them.

Non-local exits (block, go, throw) are Python exceptions that are not SexpErrors,
so `handler-case` never sees them. Limit errors are SexpErrors no handler catches.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.diagnostics import SexpError, define_code, error

E_UNBOUND = define_code(
    "E-UNBOUND", "unbound variable", "A symbol was evaluated that names no variable in scope.",
)
E_UNDEFINED_FUNCTION = define_code(
    "E-UNDEFINED-FUNCTION", "undefined function",
    "A form calls a function (or macro) that is not defined.",
)
E_ARITY = define_code(
    "E-ARITY", "wrong number of arguments",
    "A function was called with too few or too many arguments, or with an unknown or "
    "odd-length list of keyword arguments.",
)
E_TYPE = define_code(
    "E-TYPE", "wrong type of argument",
    "A function received a value of a type it cannot work on, e.g. `(+ 1 \"a\")`.",
)
E_DIVISION_BY_ZERO = define_code(
    "E-DIVISION-BY-ZERO", "division by zero", "A number was divided by an exact or float zero.",
)
E_EVAL_LIMIT = define_code(
    "E-EVAL-LIMIT", "evaluation limit exceeded",
    "Compile-time evaluation ran too many steps, recursed too deeply or allocated too much. "
    "Usually an infinite loop or a recursion without a base case.",
)
E_LISP_ERROR = define_code(
    "E-LISP-ERROR", "unhandled error",
    "The program called `error` (or `ecase`/`etypecase`/`check-type` failed) and no "
    "`handler-case` caught it.",
)
E_ASSERT = define_code("E-ASSERT", "assertion failed", "An `(assert form)` evaluated to NIL.")
E_SYNTAX = define_code(
    "E-SYNTAX", "malformed special form",
    "A special form or macro was written with the wrong shape, e.g. `(let (x 1) x)`.",
)
E_REQUIRE = define_code(
    "E-REQUIRE", "cannot load module",
    "`require` names a module that does not exist, or modules require each other in a cycle.",
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
    name: str | None = type_name
    while name is not None:
        if name == ancestor:
            return True
        name = user_types.get(name, CONDITION_PARENTS.get(name))
    return False


class LimitError(SexpError):
    """E-EVAL-LIMIT: never caught by handler-case."""


def limit_error(message: str, fix: str) -> LimitError:
    base = error(E_EVAL_LIMIT, message, fix=fix)
    return LimitError(*base.diagnostics)


def condition_of(exc: SexpError) -> Condition:
    """The condition a handler sees for a SexpError (built lazily for builtin errors)."""
    cond = getattr(exc, "condition", None)
    if cond is None:
        diag = exc.diagnostic
        cond = Condition(_CODE_TYPES.get(diag.code, "SIMPLE-ERROR"), diag.message)
        exc.condition = cond
    return cond


def condition_error(cond: Condition, code: str = E_LISP_ERROR, fix: str | None = None) -> SexpError:
    exc = error(code, cond.message, fix=fix or "handle it with handler-case, or fix its cause")
    exc.condition = cond
    return exc


class BlockExit(Exception):
    """`return-from`: unwinds to the block whose tag object it carries."""

    def __init__(self, tag: object, value: Any):
        self.tag = tag
        self.value = value


class GoExit(Exception):
    """`go`: unwinds to the tagbody that owns the tag."""

    def __init__(self, body: object, tag: Any):
        self.body = body
        self.tag = tag


class ThrowExit(Exception):
    """`throw`: unwinds to the innermost `catch` with an `eq` tag."""

    def __init__(self, tag: Any, value: Any):
        self.tag = tag
        self.value = value

