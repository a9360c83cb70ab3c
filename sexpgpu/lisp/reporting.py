"""How evaluation reports trouble: limits, type and arity errors, and the trail of
spans an error collects on its way out (innermost user form, calls, macro expansions).
"""

from __future__ import annotations

import time
from typing import Any

from sexpgpu.diagnostics import Note, SexpError, error
from sexpgpu.lisp.conditions import Condition
from sexpgpu.lisp.errors import (
    E_ARITY,
    E_DIVISION_BY_ZERO,
    E_FLOAT_OVERFLOW,
    E_TYPE,
    E_UNBOUND,
    E_UNDEFINED_FUNCTION,
    LimitError,
    limit_error,
)
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.registry import Builtin
from sexpgpu.lisp.types import Cons, Symbol, intern, is_number, lisp_list
from sexpgpu.suggest import nearest

CHECK_EVERY = 8192  # steps between CPU-time checks


def default_generic_op(name: str, args: list, span: Any) -> Any:
    """Arithmetic on a non-number with no host to handle it: a TYPE-ERROR, SBCL's wording."""
    shown = " ".join(prin1_to_string(a) for a in args)
    exc = error(E_TYPE, f"{name.lower()}: arguments must be numbers", span,
                expected="numbers", actual=f"({name.lower()} {shown})",
                fix="pass numbers (tensor arithmetic only works while tracing a model)")
    bad = next((a for a in args if not is_number(a)), None)
    exc.condition = Condition("TYPE-ERROR", _sbcl_type_message(bad, name, args, "NUMBER"),
                              {"DATUM": bad, "EXPECTED-TYPE": intern("NUMBER")})
    raise exc


def _sbcl_type_message(value: Any, name: str, args: list, expected: str) -> str:
    """SBCL's wording of a type error met at run time, which `(format t "~a" condition)`
    prints."""
    return f"The value\n  {prin1_to_string(value)}\nis not of type\n  {expected}"


# the argument type SBCL names when these builtins get a wrong first argument
_EXPECTED_TYPES = {name: "LIST" for name in (
    "CAR", "CDR", "FIRST", "REST", "SECOND", "THIRD", "CADR", "CDDR", "CAAR", "CDAR", "NTH",
    "ENDP", "MAPCAR", "DOLIST")}
# arithmetic whose arguments must all be numbers
_NUMERIC = frozenset(("+", "-", "*", "/", "<", ">", "<=", ">=", "=", "/=", "1+", "1-", "MAX",
                      "MIN", "ABS", "EXPT", "EXP", "LOG", "SQRT", "ZEROP", "PLUSP", "MINUSP"))
_EXPECTED_TYPES.update({"SYMBOL-NAME": "SYMBOL", "CHAR-CODE": "CHARACTER",
                        "STRING-UPCASE": "STRING", "LENGTH": "SEQUENCE"})




class Reporting:
    """Error and limit methods of the Interpreter (a mixin: it owns no state)."""


    def check_limits(self) -> None:
        """Called every few thousand steps: the step limit and the CPU-time backstop."""
        if self.steps > self.max_steps:
            raise limit_error(f"evaluation took more than {self.max_steps} steps",
                              "look for a loop or recursion that never ends")
        now = time.thread_time()  # this thread's CPU: neither a loaded machine nor
        # another thread of the process (a loader, a kernel pool) may fail a program
        if self.started is None:
            self.started = now
        elif now - self.started > self.max_seconds:
            raise limit_error(f"evaluation took more than {self.max_seconds} s of CPU time",
                              "look for a loop or recursion that never ends")
        self.checkpoint = min(self.max_steps, self.steps + CHECK_EVERY)

    def note_alloc(self, n: int) -> None:
        """Count `n` allocated elements; E-EVAL-LIMIT past the allocation limit."""
        if n > self.max_alloc or self.allocated + n > self.max_alloc * 10:
            raise limit_error(f"allocation of {n} elements exceeds the limit of {self.max_alloc}",
                              "allocate smaller lists, strings or arrays")
        self.allocated += n

    def _depth_error(self) -> LimitError:
        return limit_error(f"recursion deeper than {self.max_depth} calls",
                           "check the recursion has a base case that is reached")

    def _unbound(self, sym: Symbol, env: Any) -> SexpError:
        names = set(s.name for s in self.globals if isinstance(s, Symbol))
        e = env
        while e is not None:
            names.update(k.name for k in e.vars if type(k) is Symbol)
            e = e.parent
        hint = nearest(sym.name, sorted(names))  # sorted: ties break the same every run
        exc = error(E_UNBOUND, f"unbound variable {sym.name.lower()}",
                    fix=f"did you mean {hint.lower()}?" if hint
                    else "bind it with let, or define it with defvar/defparameter")
        # cell-error-name answers the variable
        exc.condition = Condition("UNBOUND-VARIABLE", f"The variable {sym.name} is unbound.",
                                  {"NAME": sym})
        return exc

    def _builtin_arity(self, fn: Builtin, n: int) -> SexpError:

        want = f"{fn.min}" if fn.max == fn.min else (
            f"at least {fn.min}" if fn.max is None else f"{fn.min} to {fn.max}")
        return error(E_ARITY, f"{fn.name.lower()} called with {n} argument{'s' if n != 1 else ''}",
                     expected=f"{want} argument(s)", actual=str(n),
                     fix=f"call {fn.name.lower()} with {want} argument(s)")

    def _builtin_type_error(self, fn: Builtin, args: list, exc: Exception) -> SexpError:
        try:
            shown = " ".join(prin1_to_string(a) for a in args)
        except Exception:  # noqa: BLE001 - a broken argument must not hide the error
            shown = " ".join(type(a).__name__ for a in args)
        if len(shown) > 200:
            shown = shown[:200] + "..."
        detail = str(exc) if isinstance(exc, ValueError) and str(exc).startswith("lisp:") else ""
        result = error(E_TYPE, f"{fn.name.lower()}: wrong type of argument"
                       + (f" ({detail[5:].strip()})" if detail else ""),
                       actual=f"({fn.name.lower()} {shown})",
                       fix=f"check the types of the arguments to {fn.name.lower()}")
        expected = _EXPECTED_TYPES.get(fn.name)
        if expected is not None and args:
            result.condition = Condition(
                "TYPE-ERROR", _sbcl_type_message(args[0], fn.name, args, expected),
                {"DATUM": args[0], "EXPECTED-TYPE": intern(expected)})
        elif fn.name in _NUMERIC:  # the first argument that is not a number
            bad = next((a for a in args if not is_number(a)), None)
            if bad is not None:
                result.condition = Condition(
                    "TYPE-ERROR", _sbcl_type_message(bad, fn.name, args, "NUMBER"),
                    {"DATUM": bad, "EXPECTED-TYPE": intern("NUMBER")})
        return result

    def _not_a_function_name(self, form: Cons) -> SexpError:
        return error(E_UNDEFINED_FUNCTION,
                     f"{prin1_to_string(form.car)} is not a function name", form.span,
                     fix="the first element of a form must name a function")

    def _wrong_value_in(self, form: Cons) -> SexpError:
        """A Python error escaping a special form: the form got a value it cannot use."""
        head = form.car
        name = head.name.lower() if isinstance(head, Symbol) else "form"
        return error(E_TYPE, f"{name}: wrong type of value", form.span,
                     actual=prin1_to_string(form)[:120],
                     fix=f"check the values given to {name}")

    def _division_by_zero(self, fn: Builtin, args: list) -> SexpError:
        """E-DIVISION-BY-ZERO, carrying the DIVISION-BY-ZERO condition SBCL would signal."""
        shown = " ".join(prin1_to_string(a) for a in args)
        exc = error(E_DIVISION_BY_ZERO, f"division by zero in ({fn.name.lower()} {shown})",
                    fix="check the divisor before dividing")
        operation = "(" + " ".join([fn.name] + [prin1_to_string(a) for a in args]) + ")"
        exc.condition = Condition(
            "DIVISION-BY-ZERO",
            f"arithmetic error DIVISION-BY-ZERO signalled\nOperation was {operation}.",
            {"OPERATION": intern(fn.name), "OPERANDS": lisp_list(args)})
        return exc

    def _float_overflow(self, fn: Builtin, args: list) -> SexpError:
        """E-FLOAT-OVERFLOW, carrying the FLOATING-POINT-OVERFLOW condition SBCL signals."""
        operation = "(" + " ".join([fn.name] + [prin1_to_string(a) for a in args]) + ")"
        exc = error(E_FLOAT_OVERFLOW, f"float overflow in {operation.lower()}",
                    fix="keep single-floats under 3.4e38 and double-floats under 1.8d308, "
                        "or catch floating-point-overflow with handler-case")
        exc.condition = Condition(
            "FLOATING-POINT-OVERFLOW",
            "arithmetic error FLOATING-POINT-OVERFLOW signalled")
        return exc

    def _trail(self, exc: SexpError, form: Cons) -> None:
        span = form.span
        if span is None:
            return
        trail = exc.__dict__.get("trail")
        if trail is None:
            exc.trail = [(span, None)]
            exc.pending = None
            return
        pending = exc.__dict__.get("pending")
        if pending:
            trail.append((span, pending))
            exc.pending = None

    def finish_error(self, exc: SexpError) -> SexpError:
        """Give the diagnostic its span (the innermost user form) and its notes."""
        if exc.__dict__.get("finished"):
            return exc
        exc.finished = True
        diag = exc.diagnostic
        trail = exc.__dict__.get("trail") or []
        primary = self._innermost_user_form(trail)
        notes: list[Note] = []
        if primary is not None:
            user_span = trail[primary][0]
            original = diag.span
            if original is None or (original.file in self.library_files
                                    and user_span.file not in self.library_files):
                # report at the user's line; the library position becomes a note
                diag.span = user_span
                if original is not None:
                    notes.append(Note("in library code", original))
            for span, _ in trail[:primary]:
                if span != diag.span and span != original:
                    notes.append(Note("in library code", span))
            _add_call_notes(notes, trail[primary + 1:])
        diag.notes.extend(notes)
        return exc

    def _innermost_user_form(self, trail: list) -> int | None:
        """Index of the innermost trail entry outside library files (else the innermost)."""
        for i, (span, _) in enumerate(trail):
            if span.file not in self.library_files:
                return i
        return 0 if trail else None


def _add_call_notes(notes: list[Note], trail: list) -> None:
    """A note per call or expansion the error passed on its way out (at most 8 notes);
    a recursion says how many nested calls instead of repeating itself."""
    repeats = 0
    for span, message in trail:
        if not message:
            continue
        if notes and notes[-1].message.startswith(message):
            repeats += 1
            continue
        if repeats:
            notes[-1].message += f" ({repeats + 1} nested calls)"
            repeats = 0
        if len(notes) < 8:
            notes.append(Note(message, span))
    if repeats and notes:
        notes[-1].message += f" ({repeats + 1} nested calls)"
