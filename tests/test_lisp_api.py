"""The evaluator's Python API: what later stages (the run-file compiler, the tracer) use."""

from __future__ import annotations

import io

import pytest

from sexpgpu.diagnostics import SexpError, error
from sexpgpu.lisp import NIL, Interpreter, intern, read_all, run_program
from sexpgpu.lisp.errors import E_TYPE
from sexpgpu.lisp.types import Cons, to_py


class Tensor:
    """A stand-in for a traced tensor: records the generic op applied to it."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"Tensor({self.name})"


def test_output_stream_is_a_parameter() -> None:
    out = io.StringIO()
    interp = Interpreter(out)
    interp.load('(princ "to the stream")', "x.sx")
    assert out.getvalue() == "to the stream"


def test_python_builtins_and_calls() -> None:
    interp = Interpreter(io.StringIO())

    @interp.builtin("twice")
    def twice(x):
        return x * 2

    interp.load("(defun add3 (a b c) (+ a b c))", "x.sx")
    assert interp.eval_forms(read_all("(twice 21)")) == 42
    assert interp.call(intern("ADD3"), 1, 2, 3) == 6
    square = interp.eval_forms(read_all("(lambda (x) (* x x))"))
    assert interp.call(square, 9) == 81


def test_builtin_receiving_the_interpreter() -> None:
    interp = Interpreter(io.StringIO())

    @interp.builtin("apply-twice", interp=True)
    def apply_twice(it, fn, x):
        return it.call1(fn, it.call1(fn, x))

    assert interp.eval_forms(read_all("(apply-twice #'1+ 5)")) == 7


def test_globals_get_and_set() -> None:
    interp = Interpreter(io.StringIO())
    interp.set_global("hidden", 64)
    assert interp.eval_forms(read_all("(* 2 hidden)")) == 128
    interp.load("(defparameter *lr* 0.5d0)", "x.sx")
    assert interp.get_global("*lr*") == 0.5


def test_generic_arithmetic_delegates_foreign_objects() -> None:
    interp = Interpreter(io.StringIO())
    seen = []

    def generic_op(name, args, span):
        seen.append((name, args))
        return Tensor(f"{name}-result")

    interp.generic_op = generic_op
    interp.set_global("w", Tensor("w"))
    result = interp.eval_forms(read_all("(+ (* w 2) 1)"))
    assert isinstance(result, Tensor)
    assert [name for name, _ in seen] == ["*", "+"]
    spans = []
    interp.generic_op = lambda name, args, span: spans.append(span) or Tensor(name)
    interp.load("(defun double (x)\n  (* x 2))\n(double w)", "model.sx")
    assert [(s.file, s.line, s.col) for s in spans] == [("model.sx", 2, 3)]
    for expr in ("(exp w)", "(max w 0)", "(< w 1)", "(sqrt w)", "(expt w 2)", "(abs w)"):
        assert isinstance(interp.eval_forms(read_all(expr)), Tensor)


def test_generic_arithmetic_default_is_a_type_diagnostic() -> None:
    interp = Interpreter(io.StringIO())
    interp.set_global("w", Tensor("w"))
    with pytest.raises(SexpError) as info:
        interp.load("(+ w 1)", "x.sx")
    assert info.value.diagnostic.code == "E-TYPE"
    assert info.value.diagnostic.span.line == 1


def test_foreign_objects_live_in_lists_and_print() -> None:
    interp = Interpreter(io.StringIO())
    interp.set_global("w", Tensor("w"))
    value = interp.eval_forms(read_all("(list w (car (list w)))"))
    assert all(isinstance(x, Tensor) for x in to_py(value))
    out = io.StringIO()
    interp.out = out
    interp.load("(princ (list 1 w))", "x.sx")
    assert out.getvalue() == "(1 #<Tensor Tensor(w)>)"


def test_special_forms_defined_from_python() -> None:
    interp = Interpreter(io.StringIO())

    def sf_metric(it, form, env):
        """(metric name expr)"""
        name = form.cdr.car
        value = it.eval1(form.cdr.cdr.car, env)
        return Cons(name, value)

    interp.define_special_form("metric", sf_metric)
    result = interp.eval_forms(read_all("(let ((x 3)) (metric loss (* x x)))"))
    assert result.car is intern("LOSS") and result.cdr == 9
    with pytest.raises(SexpError):
        Interpreter(io.StringIO()).load("(metric loss 1)", "x.sx")


def test_python_builtin_errors_keep_their_code() -> None:
    interp = Interpreter(io.StringIO())

    @interp.builtin("strict")
    def strict(x):
        raise error(E_TYPE, "strict wants an integer")

    with pytest.raises(SexpError) as info:
        interp.load("\n  (strict 1)", "x.sx")
    assert (info.value.diagnostic.span.line, info.value.diagnostic.span.col) == (2, 3)


def test_module_prefixes(tmp_path) -> None:
    lib = tmp_path / "layers.sx"
    lib.write_text("(defvar *scale* 3)\n(defun scale (x) (* x *scale*))\n"
                   "(defmacro twice (x) `(* 2 ,x))\n")
    main = tmp_path / "main.sx"
    text = ('(require "./layers.sx" :as ly)\n(require "./layers.sx" :as ly)\n'
            "(defun scale (x) :user)\n"
            "(print (list (ly:scale 2) (ly:twice 5) ly:*scale* (scale 1)))")
    out = io.StringIO()
    Interpreter(out).load(text, str(main))
    assert out.getvalue() == "\n(6 10 3 :USER) "


def test_stdlib_names_resolve_to_package_data() -> None:
    interp = Interpreter(io.StringIO())
    calls = []

    def resolver(name, from_file):
        calls.append((name, from_file))
        return "(defun ident (x) x)", "<stdlib " + name + ">"

    interp.module_resolver = resolver
    interp.load('(require "sexpgpu/nn" :as nn)\n(print (nn:ident 4))', "main.sx")
    assert calls == [("sexpgpu/nn", "main.sx")]
    from sexpgpu.lisp.modules import STDLIB, default_resolver

    with pytest.raises(FileNotFoundError):
        default_resolver("sexpgpu/no-such-module", None)
    assert STDLIB.name == "stdlib"


def test_run_program_returns_stdout() -> None:
    assert run_program('(print "a") (princ 1) (terpri)') == '\n"a" 1\n'
    assert run_program("") == ""
    assert NIL is intern("NIL")
