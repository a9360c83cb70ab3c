"""What the SBCL corpus cannot show: diagnostics no handler catches, the printer's case
not leaking out of an evaluation, and the interpreter state the new forms keep."""

from __future__ import annotations

import io

import pytest

from sexpgpu.diagnostics import SexpError
from sexpgpu.lisp import Interpreter, run_program
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.types import intern


def code_of(text: str) -> str:
    with pytest.raises(SexpError) as info:
        run_program(text, "user.sx")
    return info.value.diagnostic.code


@pytest.mark.parametrize("text", [
    "(handler-case (defclass p () ()) (error () :caught))",
    "(ignore-errors (open \"x\"))",
    "(handler-case (make-array 2 :displaced-to (vector 1 2)) (condition () :caught))",
])
def test_unsupported_features_are_never_caught(text: str) -> None:
    """A program cannot route around a missing feature by catching its error."""
    assert code_of(text) == "E-UNSUPPORTED"


def test_unsupported_names_the_operator_and_the_reason() -> None:
    with pytest.raises(SexpError) as info:
        run_program("(defmethod area ((s square)) 1)", "user.sx")
    message = info.value.diagnostic.message
    assert message.startswith("defmethod is standard Common Lisp")
    assert "CLOS" in message


def test_a_defined_function_shadows_an_unsupported_name() -> None:
    assert run_program("(defun open (x) x) (print (open 3))") == "\n3 "


def test_float_overflow_is_catchable_and_coded_when_not() -> None:
    assert run_program("(print (handler-case (exp 1000.0) (floating-point-overflow () 1)))") \
        == "\n1 "
    assert code_of("(exp 1000d0)") == "E-FLOAT-OVERFLOW"


def test_print_case_does_not_leak_out_of_the_evaluation() -> None:
    interp = Interpreter(io.StringIO())
    interp.load("(setf *print-case* :downcase)")
    # diagnostics and the compiler print symbols after evaluation: always upcase there
    assert prin1_to_string(intern("FOO")) == "FOO"
    out = io.StringIO()
    Interpreter(out).load("(prin1 'bar)")
    assert out.getvalue() == "BAR"


def test_print_case_of_each_interpreter_is_its_own() -> None:
    out = io.StringIO()
    lower = Interpreter(out)
    lower.load("(setf *print-case* :downcase)")
    Interpreter(io.StringIO()).load("(prin1 'other)")
    lower.load("(prin1 'mine)")
    assert out.getvalue() == "mine"


def test_deftype_and_docs_live_in_their_interpreter() -> None:
    first = Interpreter(io.StringIO())
    first.load('(deftype small () \'(integer 0 9)) (defun f () "doc" 1)')
    second = Interpreter(io.StringIO())
    assert prin1_to_string(first.load("(list (typep 3 'small) (documentation 'f 'function))")) \
        == '(T "doc")'
    assert prin1_to_string(second.load("(documentation 'f 'function)")) == "NIL"


def test_catch_tags_are_popped_after_an_error() -> None:
    """An error escaping a catch leaves no stale tag that would make a later throw look
    caught."""
    interp = Interpreter(io.StringIO())
    with pytest.raises(SexpError):
        interp.load("(catch 'k (error \"boom\"))")
    assert interp.catch_tags == []
    assert prin1_to_string(interp.load(
        "(handler-case (throw 'k 1) (control-error () :no-catch))")) == ":NO-CATCH"
