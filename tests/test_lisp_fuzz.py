"""No input makes the Lisp raise a Python exception: only SexpError, with sound diagnostics.

Hypothesis feeds `run_program` random text, truncated and mutated conformance programs,
odd unicode, `#` dispatch garbage, huge numbers and runaway programs. Derandomized so CI
is deterministic. Runaway programs must stop with E-EVAL-LIMIT within 2 s of CPU time.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cpu_time import thread_cpu
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sexpgpu.diagnostics import CODES, E_INTERNAL, SexpError

CORPUS = Path(__file__).parent / "conformance"
SOURCES = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.rglob("*.lisp"))]
FILE = "fuzz.lisp"
EXAMPLE_BOUND_S = 3.0  # CPU seconds; the evaluator's own 1 s limits should stop anything sooner
RUNAWAY_BOUND_S = 2.0

FUZZ = settings(
    derandomize=True,
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ODD_UNICODE = [
    "\u00e9",
    "\u0301",
    "\u200b",
    "\u202e",
    "\u2028",
    "\ufeff",
    "\x00",
    "\x07",
    "\x7f",
    "\U0001f600",
    "\u03bb",
    "\uff08",
    "\uff09",
    "\t",
    "\r",
    "\r\n",
    "\x0c",
]
HASH_GARBAGE = [
    "#",
    "#<",
    "#)",
    "#\\",
    "#\\NoSuchCharName",
    "#(",
    "#'",
    "#.",
    "#+",
    "#-",
    "#:",
    "#x",
    "#xZZ",
    "#b102",
    "#o9",
    "#*",
    "#|",
    "|#",
    "#=",
    "#1=",
    "#1#",
    "#'(",
    "#c(1 2)",
    '#p"x"',
    "#A",
    "#2A(",
    "#\\(",
    "##",
    "#'1",
    "#?",
    "#!",
]
LISP_BITS = [
    "(",
    ")",
    "(",
    ")",
    " ",
    "\n",
    "'",
    "`",
    ",",
    ",@",
    '"',
    ";",
    ".",
    ":",
    "::",
    "|",
    "\\",
    "1",
    "-1",
    "1.5",
    "1/0",
    "1e",
    "nil",
    "t",
    "x",
    "&rest",
    "&key",
    "lambda",
    "defun",
    "let",
    "setf",
    "car",
    "loop",
    "format",
    "+",
    "1+",
    "#'",
    "~a",
    "~{",
    "~%",
]


def _text_from(pieces: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces), max_size=40).map("".join)


def _insert(text: str, at: int, piece: str) -> str:
    at = at % (len(text) + 1)
    return text[:at] + piece + text[at:]


class ExampleTimeout(BaseException):
    """Raised by the CPU-time alarm; a BaseException so no `except Exception` swallows it."""


@contextmanager
def cpu_time_bound(seconds: float, text: str) -> Iterator[None]:
    """Fail (instead of hanging the suite) when running text takes more than `seconds` of CPU."""

    def on_alarm(signum: int, frame: object) -> None:
        raise ExampleTimeout(f"more than {seconds}s of CPU on {text[:200]!r}")

    previous = signal.signal(signal.SIGPROF, on_alarm)
    # re-fire every 0.25 s: a raise that lands in a __del__ or gc callback is swallowed
    signal.setitimer(signal.ITIMER_PROF, seconds, 0.25)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def check_run(text: str) -> str | None:
    """Run text; return its output, or the first diagnostic's code if it raised SexpError.

    Any exception other than SexpError fails the test, and so does a diagnostic whose
    code is undeclared, internal, or without a span in the user's file.
    """
    from sexpgpu.lisp import run_program

    start = time.thread_time()
    try:
        with cpu_time_bound(EXAMPLE_BOUND_S, text):
            out = run_program(text, file=FILE)
    except SexpError as exc:
        for diag in exc.diagnostics:
            assert diag.code in CODES, f"undeclared code {diag.code}"
            assert diag.code != E_INTERNAL, f"internal error for {text[:200]!r}: {diag.message}"
            assert diag.span is not None, f"{diag.code} without a span: {diag.message}"
            assert diag.span.line >= 1 and diag.span.col >= 1, (diag.code, diag.span)
            if diag.span.file == FILE:
                # a reader may also break lines at \r, \u2028, \f...: allow the most lines
                lines = max(text.count("\n"), len(text.splitlines())) + 1
                assert diag.span.line <= lines, (diag.code, diag.span)
        result = exc.diagnostic.code
    else:
        assert isinstance(out, str)
        result = None
    elapsed = time.thread_time() - start
    assert elapsed < EXAMPLE_BOUND_S, f"{elapsed:.1f}s on {text[:200]!r}"
    return result


@FUZZ
@given(st.sampled_from(SOURCES), st.integers(min_value=0, max_value=2000))
def test_truncated_programs(source: str, cut: int) -> None:
    check_run(source[: cut % (len(source) + 1)])


@FUZZ
@given(
    st.sampled_from(SOURCES),
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=2000),
            st.sampled_from(ODD_UNICODE + HASH_GARBAGE + ["(", ")", ")))", "((("]),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_mutated_programs(source: str, edits: list[tuple[int, str]]) -> None:
    for at, piece in edits:
        source = _insert(source, at, piece)
    check_run(source)


@FUZZ
@given(
    st.one_of(
        _text_from(LISP_BITS + HASH_GARBAGE + ODD_UNICODE),
        st.text(max_size=80),
        _text_from(LISP_BITS).map(lambda s: "(print " + s + ")"),
    )
)
def test_random_text(text: str) -> None:
    check_run(text)


# CL functions the corpus uses; called below with arguments of every wrong type and size
FUNCTIONS = """
+ - * / 1+ 1- = /= < > <= >= min max abs mod rem floor ceiling truncate round ffloor
expt exp log sqrt isqrt sin cos atan gcd lcm ash logand logior lognot integer-length
float rational numerator denominator signum evenp oddp zerop parse-integer
car cdr cons list list* append reverse nreverse nth nthcdr last butlast length elt
subseq copy-list copy-seq make-list mapcar mapc mapcan maplist reduce remove
remove-if find find-if position count member assoc rassoc sort stable-sort every some
fill replace search mismatch substitute remove-duplicates union intersection
make-array aref vector svref array-dimension make-hash-table gethash remhash maphash
string string-upcase concatenate char schar code-char char-code char-upcase
digit-char-p digit-char string-trim string= string< make-string format
prin1-to-string princ-to-string write-to-string read-from-string intern make-symbol
symbol-name symbol-value symbol-function funcall apply values values-list
error identity complement constantly coerce typep eql equal equalp get getf
""".split()
ATOMS = [
    "0",
    "-1",
    "1",
    "7",
    "-100",
    "1000000000",
    "(expt 2 200)",
    "1/3",
    "-2/5",
    "0.0",
    "1.5",
    "-2.5d0",
    "1e38",
    '""',
    '"abc"',
    "#\\a",
    "#\\Space",
    "nil",
    "t",
    ":key",
    "'sym",
    "'(1 2 3)",
    "'(a . b)",
    "'(nil)",
    "#(1 2)",
    "(vector)",
    "#'car",
    "#'+",
    "(lambda (x) x)",
    "(make-hash-table)",
    '"~a~"',
    '"~{"',
    "most-positive-fixnum",
]


def _call_text(depth: int) -> st.SearchStrategy[str]:
    args = (
        st.sampled_from(ATOMS)
        if depth == 0
        else st.one_of(st.sampled_from(ATOMS), _call_text(depth - 1))
    )
    return st.tuples(st.sampled_from(FUNCTIONS), st.lists(args, max_size=4)).map(
        lambda fa: "(" + " ".join([fa[0], *fa[1]]) + ")"
    )


@FUZZ
@given(st.lists(_call_text(2), min_size=1, max_size=3))
def test_random_calls(calls: list[str]) -> None:
    check_run("\n".join(f"(print {c})" for c in calls))


NASTY = {
    "huge-integer-literal": "(print " + "1" + "0" * 100000 + ")",
    "huge-integer-computed": "(print (expt 10 100000))",
    "huge-integer-length": "(print (length (princ-to-string (expt 10 100000))))",
    "float-overflow-literal": "(print 1e400)",
    "double-overflow-literal": "(print 1d400)",
    "float-overflow-arith": "(print (* 1e30 1e30 1e30))",
    "deep-unclosed": "(" * 10000,
    "deep-closed": "(" * 10000 + ")" * 10000,
    "deep-quoted": "(print '" + "(" * 10000 + ")" * 10000 + ")",
    "deep-backquote": "`" * 2000 + "x",
    "stray-close": ")))",
    "nul-only": "\x00",
    "empty": "",
}


@pytest.mark.parametrize("name", sorted(NASTY))
def test_nasty_inputs(name: str) -> None:
    check_run(NASTY[name])


# wrong arguments, bad shapes and runaway sizes: each must be a diagnostic (or print)
WRONG_CALLS = [
    "(intern 0 0)",
    "(make-symbol 5)",
    '(subseq "abc" 5)',
    "(subseq '(1 2) 1 0)",
    "(aref (vector) -1)",
    "(make-list -1)",
    "(expt 0 -1)",
    "(code-char -1)",
    '(parse-integer "")',
    "(nth -1 '(1))",
    "(log 0)",
    "(exp 1000)",
    "(exp 1000.0d0)",
    "(float (expt 10 400))",
    "(ash 1 100000000)",
    '(format nil "~v,d" -5 1)',
    '(format nil "~a")',
    '(format nil "~{~a" \'(1))',
    '(format nil "~[a~;b~]" \'x)',
    "(format nil 5)",
    "(sqrt -1)",
    "(make-string -3)",
    "(elt '(1) 5)",
    '(char "" 0)',
    "(gethash)",
    "(funcall 5)",
    "(apply #'+ 1)",
    '(coerce "a" \'integer)',
    "(string 5)",
    '(read-from-string "")',
    '(read-from-string ")")',
    "(make-array '(2 -1))",
    "(isqrt -4)",
    "(mod 1 0.0)",
    "(/ 1.0 0)",
    "(floor 1 0.0)",
    "(round 1e38 1e-38)",
    "(truncate (expt 10 400) 0.5)",
    "(* 1d300 1d300)",
    "(expt 2.0 10000)",
    "(expt 10 (expt 10 10))",
    "(sort '(1 a 2) #'<)",
    "(sort 5 #'<)",
    "(reduce #'+ 5)",
    "(mapcar #'car '(1 2))",
    "(nthcdr -1 '(1))",
    "(make-hash-table :test 'foo)",
    "(gethash 1 5)",
    "(symbol-value 5)",
    "(symbol-function 'no-such-fn)",
    "(setf (car nil) 1)",
    "(let ((x 1)) (setf (car x) 2))",
    "(string-upcase 5)",
    "(digit-char-p #\\a 99)",
    '(parse-integer "12" :radix 99)',
    "(write-to-string 5 :base 99)",
    "(coerce 1/3 'fixnum)",
    "(typep 1 'no-such-type)",
    "(typep 1 '(integer a b))",
    '(concatenate \'foo "a")',
    "(map 'foo #'identity '(1))",
    "(make-array 3 :element-type 'nosuch)",
    "(values-list 5)",
    "(apply #'values (make-list 100000))",
    "(length '(1 2 . 3))",
    "(reverse '(1 . 2))",
    "(last '(1 . 2) -1)",
    "(eval '(1 2))",
    "(eval 'undefined-var)",
    "(funcall (lambda (&key a) a) :b 1)",
    "(funcall (lambda (a &optional) a))",
    "(defun 5 () 1)",
    "(defmacro m (&rest) 1)",
    "(let ((1 2)) 1)",
    "(lambda (x x) x)",
    "(flet ((f)) 1)",
    "(destructuring-bind (a b) '(1) a)",
    "(loop for x in 5 collect x)",
    "(loop for i from 1 to 'a collect i)",
    "(loop foo)",
    "(handler-case (error 5) (error (c) c))",
    "(error 'no-such-condition)",
    "(catch 'a (throw 'b 1))",
    "(go nowhere)",
    "(return-from nowhere 1)",
    "(tagbody (go 1.5))",
    "(let ((s (make-string 3))) (elt s 10))",
    "(princ-to-string (make-list 3000000))",
    "(make-list 20000000)",
    '(format nil "~10000000a" 1)',
    '(format nil "~v@a" 100000000 1)',
    "(make-string 9999999)",
    "(coerce (make-list 9999999) 'vector)",
    '(string-trim 5 "a")',
    '(search 5 "a")',
    "(position 1 5)",
    "(assoc 1 '(1 2))",
    "(getf '(1) :a)",
    "(remove 1 5)",
    '(char-code "a")',
    "(1+ most-positive-double-float)",
    "(float 1/0)",
]


@pytest.mark.parametrize("call", WRONG_CALLS)
def test_wrong_calls(call: str) -> None:
    check_run(f"(print {call})")


RUNAWAY = {
    "recursion": "(defun f () (f))\n(f)\n",
    "infinite-loop": "(loop)\n",
    "huge-allocation": "(make-list 100000000)\n",
}


@pytest.mark.parametrize("name", sorted(RUNAWAY))
def test_runaway_programs_hit_eval_limit(name: str) -> None:
    code, elapsed = thread_cpu(lambda: check_run(RUNAWAY[name]))
    assert code == "E-EVAL-LIMIT"
    assert elapsed < RUNAWAY_BOUND_S, f"{name} took {elapsed:.2f}s of CPU"
