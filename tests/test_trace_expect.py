"""expect-shape, expect-same-shape and expect-dtype: what library code states about its
tensor arguments, reported at the user's call with the library line as a note; and the
losses and metrics of sexpgpu/nn (and the Python API's) that state theirs with them."""

from __future__ import annotations

import numpy as np
import pytest

from sexpgpu import autodiff as ad
from sexpgpu.contract.compile import make_interpreter
from sexpgpu.diagnostics import SexpError
from sexpgpu.ir.graph import Graph
from sexpgpu.trace.tensor import Trace, TracedTensor, tracing

# the tensors every expression below may use
TENSORS = {"logits": ((8, 10), "f32"), "y": ((8,), "i64"), "ycol": ((8, 1), "i64"),
           "yf": ((8,), "f32"), "pred": ((8, 1), "f32"), "seq": ((8, 5, 10), "f32"),
           "yseq": ((8, 5), "i64")}


def run(expr: str) -> object:
    interp = make_interpreter()
    g = Graph("t")
    with tracing(Trace(g)):
        for name, (shape, dtype) in TENSORS.items():
            interp.set_global(name.upper(), TracedTensor(g.input(name, shape, dtype)),
                              special=False)
        return interp.load(f'(require "sexpgpu/nn" :as nn)\n{expr}', "t.sx")


# (expression, code, a piece of the fix); None: no error
CASES = [
    ("(expect-shape y '(8) \"y\")", None, None),
    ("(expect-shape logits '(nil 10) \"logits\")", None, None),
    ("(expect-shape logits '(_ 10) \"logits\")", None, None),
    ("(expect-shape ycol '(8) \"labels\")", "E-SHAPE", "(squeeze x 1)"),
    ("(expect-shape y '(8 1) \"labels\")", "E-SHAPE", "(unsqueeze x 1)"),
    ("(expect-shape logits '(10 8) \"logits\")", "E-SHAPE", "(reshape x '(10 8))"),
    ("(expect-shape logits '(3) \"logits\" \"my fix\")", "E-SHAPE", "my fix"),
    ("(expect-same-shape yf y \"a and b\")", None, None),
    ("(expect-same-shape pred yf \"a and b\")", "E-SHAPE", "(unsqueeze x 1)"),
    ("(expect-dtype y :integer \"ids\")", None, None),
    ("(expect-dtype y :i64 \"ids\")", None, None),
    ("(expect-dtype y '(:float :integer) \"ids\")", None, None),
    ("(expect-dtype yf :integer \"ids\")", "E-DTYPE", "(cast x :i64)"),
    ("(expect-dtype y :float \"scores\")", "E-DTYPE", "(cast x :f32)"),
    ("(expect-dtype y :complex \"scores\")", "E-ARG", None),
    ("(expect-shape 3 '(1) \"x\")", "E-ARG", None),
    ("(expect-shape y '(a) \"x\")", "E-ARG", None),
    # the library's losses and metrics
    ("(nn:cross-entropy logits y)", None, None),
    ("(nn:cross-entropy seq yseq)", None, None),
    ("(nn:cross-entropy logits ycol)", "E-SHAPE", "(squeeze x 1)"),
    ("(nn:cross-entropy y logits)", "E-DTYPE", "the logits come first"),
    ("(nn:cross-entropy logits yf)", "E-DTYPE", "(cast x :i64)"),
    ("(nn:cross-entropy seq y)", "E-SHAPE", None),
    ("(nn:accuracy logits y)", None, None),
    ("(nn:accuracy logits ycol)", "E-SHAPE", "(squeeze x 1)"),
    ("(nn:accuracy y logits)", "E-DTYPE", "the logits come first"),
    ("(nn:mse pred (unsqueeze yf 1))", None, None),
    ("(nn:mse pred (unsqueeze y 1))", None, None),
    ("(nn:mse pred yf)", "E-SHAPE", "(unsqueeze x 1)"),
    ("(nn:mse yf pred)", "E-SHAPE", "(squeeze x 1)"),
    ("(nn:mse y yf)", "E-DTYPE", None),
    ("(nn:cross-entropy logits y :ignore-index -100 :label-smoothing 0.1)", None, None),
    ("(nn:nll (log-softmax logits) y)", None, None),
    ("(nn:nll (log-softmax logits) ycol)", "E-SHAPE", "(squeeze x 1)"),
    ("(nn:binary-cross-entropy (sigmoid yf) yf)", None, None),
    ("(nn:binary-cross-entropy (sigmoid pred) yf)", "E-SHAPE", "(unsqueeze x 1)"),
    ("(nn:binary-cross-entropy-with-logits pred (unsqueeze yf 1))", None, None),
    ("(nn:binary-cross-entropy-with-logits yf pred)", "E-SHAPE", "(squeeze x 1)"),
    ("(nn:binary-cross-entropy-with-logits yf y)", "E-DTYPE", None),
    ("(nn:kl-div (log-softmax logits) (softmax logits) :reduction :batchmean)", None, None),
    ("(nn:kl-div (log-softmax logits) (softmax seq))", "E-SHAPE", None),
    ("(nn:huber pred (unsqueeze yf 1) :delta 0.5)", None, None),
    ("(nn:huber pred yf)", "E-SHAPE", "(unsqueeze x 1)"),
    ("(nn:smooth-l1 yf pred)", "E-SHAPE", "(squeeze x 1)"),
]


@pytest.mark.parametrize("expr,code,fix", CASES, ids=[c[0] for c in CASES])
def test_expectations(expr: str, code: str | None, fix: str | None) -> None:
    if code is None:
        run(expr)
        return
    with pytest.raises(SexpError) as info:
        run(expr)
    diag = info.value.diagnostic
    assert diag.code == code, diag.message
    assert (diag.span.file, diag.span.line, diag.span.col) == ("t.sx", 2, 1), diag.span
    assert diag.expected and diag.actual
    if fix is not None:
        assert fix in diag.fix
    if expr.startswith("(nn:"):  # reported at the call, the library line as a note
        assert any(n.span and n.span.file.endswith("stdlib/nn.sx") for n in diag.notes)


def test_expectations_return_their_argument() -> None:
    assert run("(expect-dtype (expect-shape y '(8) \"y\") :integer \"y\")").shape == (8,)


def _python_loss(loss: str, a: tuple, b: tuple) -> SexpError | None:
    fn = ad.Function()
    x = fn.input("a", *a)
    y = fn.input("b", *b)
    try:
        getattr(ad, loss)(x, y)
    except SexpError as exc:
        return exc
    return None


@pytest.mark.parametrize("loss,a,b,code", [
    ("cross_entropy", ((8, 10), "f32"), ((8,), "i64"), None),
    ("cross_entropy", ((8, 10), "f32"), ((8, 1), "i64"), "E-SHAPE"),
    ("cross_entropy", ((8,), "i64"), ((8, 10), "f32"), "E-DTYPE"),
    ("mse", ((8, 1), "f32"), ((8, 1), "f32"), None),
    ("mse", ((8, 1), "f32"), ((8,), "f32"), "E-SHAPE"),
])
def test_python_api_losses_state_their_shapes(loss: str, a: tuple, b: tuple,
                                              code: str | None) -> None:
    exc = _python_loss(loss, a, b)
    assert (exc.diagnostic.code if exc else None) == code
    if exc:
        assert exc.diagnostic.span.file == __file__


def test_python_api_mse_still_takes_a_number() -> None:
    fn = ad.Function()
    x = fn.input("x", (3,), "f32")
    fn.output("l", ad.mse(x, 1.0))
    out = fn.compile("reference")(x=np.array([1.0, 2.0, 3.0], np.float32))
    assert float(out["l"]) == pytest.approx(5 / 3)
