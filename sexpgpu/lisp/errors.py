"""The diagnostic codes of evaluation, and the Python exceptions that unwind it.

Limit errors are SexpErrors no handler catches. Non-local exits (block, go, throw)
are Python exceptions that are not SexpErrors, so `handler-case` never sees them.
Condition objects (what a handler sees) live in conditions.py.
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
E_FLOAT_OVERFLOW = define_code(
    "E-FLOAT-OVERFLOW", "float overflow",
    "A float operation's result is too large for its format (single-floats reach about "
    "3.4e38, double-floats 1.8d308), e.g. `(exp 1000.0)`; catchable as "
    "`floating-point-overflow`.",
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

E_REDEFINE = define_code(
    "E-REDEFINE", "redefines a standard name",
    "A `defun`, `defmacro` (or a form built on them, such as `defmodel`) names a special "
    "operator, a builtin, or a function or macro of the standard library.",
)


E_UNSUPPORTED = define_code(
    "E-UNSUPPORTED", "unsupported Common Lisp feature",
    "The program uses a part of standard Common Lisp this Lisp deliberately leaves out "
    "(CLOS, packages, files and streams beyond strings, restarts, displaced arrays...); "
    "docs/lisp.md lists each with the reason.",
)


class LimitError(SexpError):
    """E-EVAL-LIMIT: never caught by handler-case."""


class UnsupportedError(LimitError):
    """E-UNSUPPORTED: not caught by handler-case either, so that a program never quietly
    takes another path around a feature that is missing."""


def limit_error(message: str, fix: str, span: Any = None) -> LimitError:
    base = error(E_EVAL_LIMIT, message, span, fix=fix)
    return LimitError(*base.diagnostics)


def unsupported(feature: str, why: str, span: Any = None) -> UnsupportedError:
    """E-UNSUPPORTED naming the standard feature and why this Lisp leaves it out."""
    base = error(E_UNSUPPORTED, f"{feature} is standard Common Lisp that this Lisp does not "
                                f"support: {why}", span,
                 fix="see docs/lisp.md (Deliberate differences) for what to write instead")
    return UnsupportedError(*base.diagnostics)


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

