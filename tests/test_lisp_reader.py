"""The reader: every syntax docs/lisp.md ("The reader") lists, positions on lists, and
each reader diagnostic."""

from __future__ import annotations

from fractions import Fraction

import pytest

from sexpgpu.diagnostics import SexpError
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.reader import read_all
from sexpgpu.lisp.types import Char, Cons, Single, intern, keyword


@pytest.mark.parametrize(
    "text, printed",
    [
        ("42", "42"),
        ("-7", "-7"),
        ("+3", "3"),
        ("12.", "12"),
        ("1/3", "1/3"),
        ("4/2", "2"),
        ("1.0", "1.0"),
        ("1e-3", "0.001"),
        (".5", "0.5"),
        ("2.5d0", "2.5d0"),
        ("1e-4", "1.0e-4"),
        ("#x1F", "31"),
        ("#b101", "5"),
        ('"a\\"b"', '"a\\"b"'),
        ("#\\a", "#\\a"),
        ("#\\Space", "#\\ "),
        ("#\\Newline", "#\\Newline"),
        ("foo", "FOO"),
        ("|Foo Bar|", "|Foo Bar|"),
        (":key", ":KEY"),
        ("nn:linear", "NN:LINEAR"),
        ("1+", "1+"),
        ("'x", "'X"),
        ("#'car", "#'CAR"),
        ("`(a ,b ,@c)", "`(A ,B ,@C)"),
        ("(a . b)", "(A . B)"),
        ("(a b . c)", "(A B . C)"),
        ("#(1 2)", "#(1 2)"),
        ("#:g", "#:G"),
        ("(a #| block #| nested |# |# b)", "(A B)"),
        ("(a ; comment\n b)", "(A B)"),
        ("#+sbcl 1 #-sbcl 2", "1"),
    ],
)
def test_reads_and_prints_back(text: str, printed: str) -> None:
    forms = read_all(text, "t.sx")
    assert prin1_to_string(forms[0]) == printed


def test_number_types() -> None:
    one, third, single, double = read_all("1 1/3 1.5 1.5d0", "t.sx")
    assert type(one) is int and type(third) is Fraction
    assert type(single) is Single and type(double) is float


def test_characters_and_symbols_are_distinct() -> None:
    char, string, sym, key = read_all('#\\a "a" a :a', "t.sx")
    assert char == Char("a") and string == "a"
    assert sym is intern("A") and key is keyword("A")


def test_lists_keep_their_position() -> None:
    forms = read_all("(a\n  (b c)\n   (d))", "pos.sx")
    outer = forms[0]
    inner = outer.cdr.car
    last = outer.cdr.cdr.car
    assert (outer.span.line, outer.span.col) == (1, 1)
    assert (inner.span.line, inner.span.col) == (2, 3)
    assert (last.span.line, last.span.col) == (3, 4)
    assert isinstance(inner, Cons) and inner.span.file == "pos.sx"


def test_top_level_atoms_keep_their_position() -> None:
    forms = read_all("(a)\n  x", "pos.sx")
    assert (forms.spans[1].line, forms.spans[1].col) == (2, 3)


def _code(text: str) -> tuple[str, int, int]:
    with pytest.raises(SexpError) as info:
        read_all(text, "bad.sx")
    diag = info.value.diagnostic
    assert diag.fix
    return diag.code, diag.span.line, diag.span.col


@pytest.mark.parametrize(
    "text, code, line, col",
    [
        ("(defun f (x)\n  (+ x 1)", "E-READ-UNCLOSED", 1, 1),
        ("(a)\n  (b c", "E-READ-UNCLOSED", 2, 3),
        ("(a))", "E-READ-STRAY", 1, 4),
        ('(print "abc)', "E-READ-STRING", 1, 8),
        ("(a #| never closed", "E-READ-COMMENT", 1, 4),
        ("(+ 1/0 2)", "E-READ-NUMBER", 1, 4),
        ("12..3", "E-READ-NUMBER", 1, 1),
        ("1e400", "E-READ-NUMBER", 1, 1),
        ("#\\Bogus", "E-READ-CHAR", 1, 1),
        ("(a . )", "E-READ-SYNTAX", 1, 1),
        ("( . a)", "E-READ-SYNTAX", 1, 3),
        ("#<foo>", "E-READ-SYNTAX", 1, 1),
        ("'", "E-READ-SYNTAX", 1, 1),
    ],
)
def test_reader_errors(text: str, code: str, line: int, col: int) -> None:
    assert _code(text) == (code, line, col)


def test_deep_nesting_reads_without_recursion() -> None:
    forms = read_all("(" * 5000 + ")" * 5000, "deep.sx")
    depth = 0
    node = forms[0]
    while isinstance(node, Cons):
        depth += 1
        node = node.car
    assert depth == 4999
