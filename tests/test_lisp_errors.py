"""Every evaluation diagnostic: its code, its span at the running form, its notes."""

from __future__ import annotations

import pytest
from cpu_time import thread_cpu

from sexpgpu.diagnostics import SexpError
from sexpgpu.lisp import Interpreter, run_program


def diagnose(text: str, file: str = "user.sx"):
    with pytest.raises(SexpError) as info:
        run_program(text, file)
    return info.value.diagnostic


@pytest.mark.parametrize(
    "text, code, line, col",
    [
        ("(print 1)\n(print undefined-thing)", "E-UNBOUND", 2, 1),
        ("(let ((x 1))\n  (+ x y))", "E-UNBOUND", 2, 3),
        ("nope", "E-UNBOUND", 1, 1),
        ("(frobnicate 1 2)", "E-UNDEFINED-FUNCTION", 1, 1),
        ("(defun f (a b) a)\n(f 1)", "E-ARITY", 2, 1),
        ("(defun f (&key a) a)\n(f :b 1)", "E-ARITY", 2, 1),
        ("(car 1 2)", "E-ARITY", 1, 1),
        ('(+ 1 "a")', "E-TYPE", 1, 1),
        ("(defun f (x) (car x))\n(f 5)", "E-TYPE", 1, 14),
        ("(/ 1 0)", "E-DIVISION-BY-ZERO", 1, 1),
        ("(print 1)\n(exp 1000.0)", "E-FLOAT-OVERFLOW", 2, 1),
        ("(* 1d300 1d300)", "E-FLOAT-OVERFLOW", 1, 1),
        ("(print 1)\n(defclass point () (x y))", "E-UNSUPPORTED", 2, 1),
        ("(make-array 3 :displaced-to (vector 1 2 3))", "E-UNSUPPORTED", 1, 1),
        ("(loop)", "E-EVAL-LIMIT", 1, 1),
        ("(defun f () (f))\n(f)", "E-EVAL-LIMIT", 1, 13),
        ("(make-list 100000000)", "E-EVAL-LIMIT", 1, 1),
        ('(error "bad ~a" 42)', "E-LISP-ERROR", 1, 1),
        ("(ecase 3 (1 :one))", "E-LISP-ERROR", 1, 1),
        ("(assert (= 1 2))", "E-ASSERT", 1, 1),
        ("(let (1) 2)", "E-SYNTAX", 1, 1),
        ("(if)", "E-SYNTAX", 1, 1),
        # a local function named after a special operator could never be called
        ("(print 1)\n(flet ((block (x) x)) (block 1))", "E-SYNTAX", 2, 1),
        ("(labels ((if (x) x)) (if 1))", "E-SYNTAX", 1, 1),
        ('(require "./does-not-exist.sx")', "E-REQUIRE", 1, 1),
    ],
)
def test_code_and_position(text: str, code: str, line: int, col: int) -> None:
    diag = diagnose(text)
    assert diag.code == code, diag.message
    assert (diag.span.file, diag.span.line, diag.span.col) == ("user.sx", line, col)
    assert diag.fix


def test_did_you_mean_for_variables_and_functions() -> None:
    assert "counter" in diagnose("(defvar *counter* 0)\n(print *countr*)").fix.lower()
    assert "factorial" in diagnose("(defun factorial (n) n)\n(factoral 3)").fix.lower()


def test_user_error_message_is_formatted() -> None:
    assert diagnose('(error "bad ~a" 42)').message == "bad 42"


def test_notes_walk_back_through_calls() -> None:
    diag = diagnose("(defun inner (x) (car x))\n(defun outer (y) (inner y))\n(outer 5)")
    assert (diag.span.line, diag.span.col) == (1, 18)
    lines = [n.span.line for n in diag.notes]
    assert lines == [2, 3]
    assert "INNER" in diag.notes[0].message and "OUTER" in diag.notes[1].message


def test_notes_walk_back_through_macros() -> None:
    text = "(defmacro twice (x) `(progn ,x ,x))\n(twice (car 5))"
    diag = diagnose(text)
    assert diag.code == "E-TYPE"
    assert (diag.span.line, diag.span.col) == (2, 8)


def test_library_code_points_at_the_users_call(tmp_path) -> None:
    lib = tmp_path / "lib.sx"
    lib.write_text("(defun head (x)\n  (car x))\n")
    user = tmp_path / "main.sx"
    text = '(require "./lib.sx" :as lib)\n(lib:head 7)\n'
    user.write_text(text)
    interp = Interpreter()
    interp.library_files.add(str(lib.resolve()))
    with pytest.raises(SexpError) as info:
        interp.load(text, str(user))
    diag = info.value.diagnostic
    assert diag.span.file == str(user) and diag.span.line == 2
    assert any(n.span.file == str(lib.resolve()) and n.span.line == 2 for n in diag.notes)


def test_require_cycle_is_a_diagnostic(tmp_path) -> None:
    (tmp_path / "a.sx").write_text('(require "./b.sx")\n(defun fa () 1)\n')
    (tmp_path / "b.sx").write_text('(require "./a.sx")\n(defun fb () 2)\n')
    main = tmp_path / "main.sx"
    main.write_text('(require "./a.sx")\n')
    with pytest.raises(SexpError) as info:
        Interpreter().load(main.read_text(), str(main))
    assert info.value.diagnostic.code == "E-REQUIRE"
    assert "cycle" in info.value.diagnostic.message


@pytest.mark.parametrize(
    "text",
    ["(loop)", "(defun f () (f)) (f)", "(make-list 100000000)", "(tagbody a (go a))",
     "(let ((x nil)) (loop (push 1 x)))", "(defmacro m () '(m)) (m)"],
)
def test_runaway_programs_stop_quickly(text: str) -> None:
    diagnostic, seconds = thread_cpu(lambda: diagnose(text))
    assert diagnostic.code == "E-EVAL-LIMIT"
    assert seconds < 2.0


def test_handler_case_catches_builtin_errors_but_not_limits() -> None:
    out = run_program('(print (handler-case (car 5) (type-error () :caught)))')
    assert out == "\n:CAUGHT "
    out = run_program('(print (handler-case (/ 1 0) (division-by-zero () :div)))')
    assert out == "\n:DIV "
    assert diagnose("(handler-case (loop) (error () :no))").code == "E-EVAL-LIMIT"
