"""`sexpgpu eval`: file output to stdout, -e values, exit codes, text and JSON diagnostics."""

from __future__ import annotations

import json

from sexpgpu.cli import main


def test_eval_file_prints_its_output(tmp_path, capsys) -> None:
    path = tmp_path / "hello.sx"
    path.write_text('(format t "hello ~a~%" (+ 1 2))\n(print :done)\n')
    assert main(["eval", str(path)]) == 0
    assert capsys.readouterr().out == "hello 3\n\n:DONE "


def test_eval_expression_prints_values(capsys) -> None:
    assert main(["eval", "-e", "(+ 1 2)"]) == 0
    assert capsys.readouterr().out == "3\n"
    assert main(["eval", "-e", "(floor 7 2) \"s\" 'sym 1.5d0"]) == 0
    assert capsys.readouterr().out == '3\n1\n"s"\nSYM\n1.5d0\n'


def test_eval_error_exits_1_with_a_rendered_diagnostic(tmp_path, capsys) -> None:
    path = tmp_path / "bad.sx"
    path.write_text("(print 1)\n(print (car 5))\n")
    assert main(["eval", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "\n1 "
    assert "error[E-TYPE]" in captured.err
    assert f"{path}:2:8" in captured.err
    assert "2 | (print (car 5))" in captured.err


def test_eval_expression_error_shows_the_expression(capsys) -> None:
    assert main(["eval", "-e", "(frob 1)"]) == 1
    err = capsys.readouterr().err
    assert "error[E-UNDEFINED-FUNCTION]" in err and "1 | (frob 1)" in err


def test_eval_json_diagnostics(tmp_path, capsys) -> None:
    path = tmp_path / "bad.sx"
    path.write_text("(defun f (x)\n  (+ x 1)\n")
    assert main(["eval", str(path), "--json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    diag = payload["diagnostics"][0]
    assert payload["ok"] is False
    assert diag["code"] == "E-READ-UNCLOSED"
    assert (diag["span"]["line"], diag["span"]["col"]) == (1, 1)
    assert diag["fix"]


def test_eval_missing_file(capsys) -> None:
    assert main(["eval", "/no/such/file.sx"]) == 1
    assert "cannot read" in capsys.readouterr().err
