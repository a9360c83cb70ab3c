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
    start = time.thread_time()
    with pytest.raises(SexpError) as info:
        run_program(text, "<hostile>")
    elapsed = time.thread_time() - start
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


def test_prelude_cache_is_data_and_never_a_pickle(tmp_path, monkeypatch):
    """The prelude's disk cache (lisp/formcache.py) is one text file of tokens; a
    pickle put in its place is not loaded (it would run code), the text is read
    instead."""
    import pickle

    from sexpgpu.lisp import prelude
    from sexpgpu.lisp.formcache import HEADER

    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(prelude, "_FORMS", {})
    forms, _, _ = prelude.prelude_forms()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert forms and [p.parent.name for p in written] == ["forms"]
    assert written[0].read_text(encoding="utf-8").startswith(HEADER + "\n")

    class Boom:
        def __reduce__(self):
            return (pytest.fail, ("the cache was unpickled",))

    written[0].write_bytes(pickle.dumps(Boom()))
    monkeypatch.setattr(prelude, "_FORMS", {})
    again, _, _ = prelude.prelude_forms()
    assert len(again) == len(forms)


def test_extra_argument_to_a_tensor_builtin_is_an_arity_error(tmp_path):
    from pathlib import Path

    from sexpgpu.contract.compile import compile_file

    src = Path(__file__).resolve().parent.parent / "examples" / "mnist1d-mlp.sx"
    text = src.read_text()
    i = text.index("(relu ")
    j = text.index(")", i)
    run = tmp_path / "run.sx"
    run.write_text(text[:j] + " 0.1" + text[j:])
    with pytest.raises(SexpError) as info:
        compile_file(str(run), trace=True)
    assert info.value.diagnostics[0].code == "E-ARITY", info.value


def test_unterminated_string_points_at_its_opening_quote():
    from sexpgpu.lisp import read_all

    text = '(print 1)\n(print "abc)\n(print 2)\n(defun f (x)\n  "doc" x)\n'
    with pytest.raises(SexpError) as info:
        read_all(text, "t.sx")
    diag = info.value.diagnostics[0]
    assert diag.code == "E-READ-STRING"
    assert (diag.span.line, diag.span.col) == (2, 8)


@pytest.mark.parametrize("text,kind", [
    ("(defun car (x) x)", "a builtin function"),
    ("(defun print (x) x)", "a builtin function"),
    ("(defun block () 1)", "a special operator"),
    ("(defmacro let (x) x)", "a special operator"),
])
def test_redefining_a_standard_name_is_e_redefine(text, kind):
    with pytest.raises(SexpError) as info:
        run_program(text)
    diag = info.value.diagnostics[0]
    assert diag.code == "E-REDEFINE" and kind in diag.message


def test_a_model_named_like_a_special_operator_is_e_redefine(tmp_path):
    from pathlib import Path

    from sexpgpu.contract.compile import compile_file

    src = Path(__file__).resolve().parent.parent / "examples" / "mnist1d-mlp.sx"
    text = src.read_text()
    import re
    name = re.search(r"\(defmodel (\S+)", text).group(1)
    run = tmp_path / "run.sx"
    run.write_text(re.sub(rf"\b{re.escape(name)}\b", "block", text))
    with pytest.raises(SexpError) as info:
        compile_file(str(run), trace=False)
    assert info.value.diagnostics[0].code == "E-REDEFINE", info.value
