"""`sexpgpu fmt`: the canonical layout is idempotent, keeps comments and reads back as the
same forms on every example; a table of (input, expected layout) pins the rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from cmd_helpers import ROOT, sexpgpu, sexpgpu_json

from sexpgpu.commands.fmt import format_text
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.reader import read_all

FILES = sorted([*(ROOT / "examples").glob("*.sx"), *(ROOT / "tests" / "sweep").glob("*.sx"),
                *(ROOT / "tests" / "runs").glob("*.sx")])


def _printed(text: str) -> list[str]:
    return [prin1_to_string(form) for form in read_all(text, "<fmt>")]


def _comments(text: str) -> list[str]:
    return [line[line.index(";"):].strip() for line in text.splitlines()
            if ";" in line and '"' not in line]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fmt_is_idempotent_and_keeps_meaning_and_comments(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    once = format_text(text)
    assert format_text(once) == once
    assert _printed(once) == _printed(text)
    assert _comments(once) == _comments(text)


CASES = [
    # spacing inside a line, closing parens pulled up, trailing newline
    ("(defrun   :steps  10\n  :seed 1\n  )", "(defrun :steps 10\n  :seed 1)\n"),
    # a body is indented two past its paren, whatever the input had
    ("(defmodel m ()\n(defchild l (nn:linear 4 2))\n        (lambda (x) (l x)))",
     "(defmodel m ()\n  (defchild l (nn:linear 4 2))\n  (lambda (x) (l x)))\n"),
    # a call's arguments align under the first argument
    ("(foo a\nb\n     c)", "(foo a\n     b\n     c)\n"),
    # a data list aligns under its first element
    ("'((a 1)\n(b 2))", "'((a 1)\n  (b 2))\n"),
    # one blank line between top-level forms; adjacent one-line forms of one head together
    ("(defknob a 1)\n(defknob b 2)\n(defvariant v :a 2)\n\n\n\n(defrun :steps 1)",
     "(defknob a 1)\n(defknob b 2)\n\n(defvariant v :a 2)\n\n(defrun :steps 1)\n"),
    # comments: a header, one attached to its form, one after code keeps its column
    (";;;; header\n\n;; about a\n(defknob a 1)      ; the a knob\n",
     ";;;; header\n\n;; about a\n(defknob a 1)      ; the a knob\n"),
    # a comment as the last thing in a list puts the paren on the next line
    ("(progn (foo) ; why\n)", "(progn (foo) ; why\n  )\n"),
    # prefixes are glued to what they quote; strings and block comments are kept verbatim
    ("(list ' a #' car \"x  y\" #| keep  this |# ,@ b)",
     "(list 'a #'car \"x  y\" #| keep  this |# ,@b)\n"),
    # a feature expression stays beside the form it guards
    ("#+sbcl\n(print 1)\n(defknob a 1)", "#+sbcl (print 1)\n\n(defknob a 1)\n"),
    # inside a list, several blank lines become one
    ("(progn (a)\n\n\n  (b))", "(progn (a)\n\n  (b))\n"),
]


@pytest.mark.parametrize(("source", "expected"), CASES)
def test_layout_rules(source: str, expected: str) -> None:
    assert format_text(source) == expected
    assert format_text(expected) == expected


def test_fmt_prints_and_check_reports_the_first_changed_line(tmp_path, capsys) -> None:
    path = tmp_path / "messy.sx"
    path.write_text("(defknob a 1)\n(defrun   :steps 1)\n", encoding="utf-8")
    code, out, _ = sexpgpu(capsys, "fmt", path)
    assert code == 0 and out == "(defknob a 1)\n\n(defrun :steps 1)\n"
    code, payload = sexpgpu_json(capsys, "fmt", path, "--check")
    assert code == 1
    (diag,) = payload["diagnostics"]
    assert diag["code"] == "E-FMT-CHANGED"
    assert diag["span"]["line"] == 2


def test_fmt_write_rewrites_in_place_then_check_passes(tmp_path, capsys) -> None:
    path = tmp_path / "messy.sx"
    path.write_text("(defrun   :steps 1)", encoding="utf-8")
    code, _, err = sexpgpu(capsys, "fmt", path, "--write")
    assert code == 0 and "formatted" in err
    assert path.read_text(encoding="utf-8") == "(defrun :steps 1)\n"
    code, payload = sexpgpu_json(capsys, "fmt", path, "--check")
    assert code == 0 and payload["changed"] is False


def test_fmt_of_unreadable_text_is_the_readers_diagnostic(tmp_path, capsys) -> None:
    path = tmp_path / "open.sx"
    path.write_text("(defrun :steps 1\n", encoding="utf-8")
    code, payload = sexpgpu_json(capsys, "fmt", path)
    assert code == 1
    assert payload["diagnostics"][0]["code"] == "E-READ-UNCLOSED"
    assert path.read_text(encoding="utf-8") == "(defrun :steps 1\n"


# -- property: any readable layout of random forms formats idempotently to the same forms

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ATOMS = st.sampled_from(["a", "defun", "let", "lambda", "foo", ":key", "1", "2.5e-3", "1/2",
                         '"s  t"', "#\\(", "nn:linear", "&key", "defknob", "x"])
SPACE = st.sampled_from([" ", "  ", "\n", "\n\n", "\n   ", " ; note\n", "\n;; why\n"])


def _tree(leaves):
    return st.lists(leaves, min_size=0, max_size=5)


def _render(tree, draw_space) -> str:
    if isinstance(tree, str):
        return tree
    parts = [_render(t, draw_space) for t in tree]
    out = "("
    for i, part in enumerate(parts):
        out += (draw_space() if i else "") + part
    return out + draw_space().replace(";", "") + ")"  # no comment right before a paren


@settings(max_examples=150, deadline=None)
@given(st.lists(st.recursive(ATOMS, _tree, max_leaves=12), min_size=1, max_size=4),
       st.data())
def test_fmt_of_random_layouts(forms, data) -> None:
    def space() -> str:
        return data.draw(SPACE)

    prefix = data.draw(st.sampled_from(["", "'", "#'", "`", ","]))
    text = "\n".join(prefix + _render(f, space) if not isinstance(f, str) else f
                     for f in forms)
    once = format_text(text)
    assert format_text(once) == once
    assert _printed(once) == _printed(text)
