"""Hostile programs: each must end with a coded diagnostic, quickly and in bounded memory.

Each row is a program that once hung, ate gigabytes or took seconds; the evaluation
limits (docs/lisp.md) must stop it with E-EVAL-LIMIT, or a coded error, in under 3 s.
"""

from __future__ import annotations

import time

import pytest

from sexpgpu.diagnostics import SexpError
from sexpgpu.lisp import run_program

CIRCULAR = "(let ((x (list 1 2))) (setf (cdr (cdr x)) x) x)"

HOSTILE = {
    "integer squaring": ("(let ((x 3)) (loop (setf x (* x x))))", "E-EVAL-LIMIT"),
    "ratio squaring": ("(let ((x 3/7)) (loop (setf x (* x x))))", "E-EVAL-LIMIT"),
    "integer doubling by +": ("(let ((x 3)) (loop (setf x (+ x x x x x x x x))))",
                              "E-EVAL-LIMIT"),
    "ash": ("(ash 1 10000000)", "E-EVAL-LIMIT"),
    "equal on circular lists": (f"(equal {CIRCULAR} {CIRCULAR})", "E-TYPE"),
    "copy-list of a circular list": (f"(copy-list {CIRCULAR})", "E-TYPE"),
    "reverse of a circular list": (f"(reverse {CIRCULAR})", "E-TYPE"),
    "length of a circular list": (f"(length {CIRCULAR})", "E-TYPE"),
    "2-million-digit literal": ("(print " + "7" * 2_000_000 + ")", "E-EVAL-LIMIT"),
    "parse-integer of a million digits":
        ('(parse-integer "' + "7" * 1_000_000 + '")', "E-EVAL-LIMIT"),
    "infinite loop": ("(loop)", "E-EVAL-LIMIT"),
    "infinite recursion": ("(defun f (x) (f (+ x 1))) (f 0)", "E-EVAL-LIMIT"),
}


def test_list_length_of_a_circular_list_is_nil():
    assert run_program(f"(princ (list-length {CIRCULAR}))").strip() == "NIL"


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_program_ends_with_a_coded_error(name):
    text, code = HOSTILE[name]
    start = time.process_time()
    with pytest.raises(SexpError) as info:
        run_program(text, "<hostile>")
    elapsed = time.process_time() - start
    assert info.value.diagnostics[0].code == code, info.value
    assert elapsed < 3.0, f"{name} took {elapsed:.1f} s of CPU"


def _require_error(tmp_path, body: str, monkeypatch=None) -> str:
    from sexpgpu.lisp import Interpreter

    run = tmp_path / "run" / "main.sx"
    run.parent.mkdir(exist_ok=True)
    run.write_text(body)
    import io
    with pytest.raises(SexpError) as info:
        Interpreter(io.StringIO()).load(body, str(run))
    diag = info.value.diagnostics[0]
    assert diag.code == "E-REQUIRE", info.value
    return str(info.value)


@pytest.mark.parametrize("name", ["/etc/passwd", "../secret.sx", "sexpgpu/../../secret",
                                  "sexpgpu/../../../../../../etc/hostname"])
def test_require_outside_the_run_tree_is_refused_without_leaking(tmp_path, name):
    secret = tmp_path / "secret.sx"
    secret.write_text("TOPSECRET-TOKEN (x)")
    if name.startswith("sexpgpu/../../secret"):
        name = "sexpgpu/" + "../" * 12 + str(secret)[1:-3]
    text = _require_error(tmp_path, f'(require "{name}")')
    assert "TOPSECRET" not in text and "root:" not in text
    assert "outside the directories" in text


def test_require_of_a_fifo_is_refused_not_blocked(tmp_path):
    import os

    (tmp_path / "run").mkdir()
    os.mkfifo(tmp_path / "run" / "pipe.sx")
    text = _require_error(tmp_path, '(require "./pipe.sx")')
    assert "not a regular file" in text


def test_require_reads_declared_library_roots(tmp_path, monkeypatch):
    import io

    from sexpgpu.lisp import Interpreter

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "m.sx").write_text("(defun f () 42)")
    run = tmp_path / "run" / "main.sx"
    run.parent.mkdir()
    body = f'(require "{lib / "m.sx"}" :as m) (princ (m:f))'
    with pytest.raises(SexpError):
        Interpreter(io.StringIO()).load(body, str(run))
    monkeypatch.setenv("SEXPGPU_LIBRARY_PATH", str(lib))
    out = io.StringIO()
    Interpreter(out).load(body, str(run))
    assert out.getvalue() == "42"
