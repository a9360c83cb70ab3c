"""The losses, as run files write them (sexpgpu/stdlib/nn.sx) and as the Python API
does (autodiff/functional.py): both against one numpy formulation per loss (with
PyTorch's options and defaults), the Python gradient against float64 finite
differences, and the compiled kernels, CPU and CUDA simulator, against the reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special
from op_cases import assert_same_values
from sexpgpu.autodiff.grad import grad
from sexpgpu.autodiff.gradcheck import directional
from sexpgpu.autodiff.tensor import Tensor

from sexpgpu import autodiff as ad
from sexpgpu import kernels
from sexpgpu.contract.compile import make_interpreter
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.reference import run_reference
from sexpgpu.trace.tensor import Trace, TracedTensor, tracing

RNG = np.random.default_rng(11)
LOGITS = RNG.standard_normal((6, 5))
LABELS = np.array([0, 4, 2, -100, 1, 2])          # -100: ignored where asked
PROBS = scipy.special.expit(RNG.standard_normal((4, 3)))
TARGETS = (RNG.random((4, 3)) < 0.5).astype(np.float64)
PRED, WANT = RNG.standard_normal((5, 2)) * 2, RNG.standard_normal((5, 2))
P_LOG = scipy.special.log_softmax(RNG.standard_normal((3, 4)), axis=-1)
Q = scipy.special.softmax(RNG.standard_normal((3, 4)), axis=-1)
Q[0, 1] = 0.0                                       # kl-div's 0 log 0 = 0


def _ce(logits, labels, ignore_index=None, label_smoothing=0.0):
    logp = scipy.special.log_softmax(logits, axis=-1)
    keep = labels != ignore_index if ignore_index is not None else np.ones(len(labels), bool)
    safe = np.where(keep, labels, 0)
    nll = -logp[np.arange(len(labels)), safe]
    losses = (1 - label_smoothing) * nll + label_smoothing * -logp.mean(-1)
    return losses[keep].mean()


def _bce(p, t):
    return -np.mean(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log(1 - p), -100))


def _kl(inp, target, log_target=False, reduction="mean"):
    if log_target:
        pointwise = np.exp(target) * (target - inp)
    else:
        pointwise = scipy.special.xlogy(target, target) - target * inp
    if reduction == "sum":
        return pointwise.sum()
    return pointwise.sum() / inp.shape[0] if reduction == "batchmean" else pointwise.mean()


def _huber(p, t, delta=1.0):
    d = np.abs(p - t)
    return np.mean(np.where(d < delta, 0.5 * d ** 2, delta * (d - 0.5 * delta)))


def _smooth_l1(p, t, beta=1.0):
    d = np.abs(p - t)
    return np.mean(np.where(d < beta, 0.5 * d ** 2 / beta, d - 0.5 * beta))


FIRST = np.where(LABELS < 0, 3, LABELS)
# name: (Lisp name, Python name, inputs, options (Python names), numpy formulation)
CASES = [
    ("cross-entropy", "cross_entropy", [LOGITS, FIRST], {}, _ce),
    ("cross-entropy", "cross_entropy", [LOGITS, LABELS], {"ignore_index": -100}, _ce),
    ("cross-entropy", "cross_entropy", [LOGITS, FIRST], {"label_smoothing": 0.1}, _ce),
    ("cross-entropy", "cross_entropy", [LOGITS, LABELS],
     {"ignore_index": -100, "label_smoothing": 0.2}, _ce),
    ("nll", "nll", [scipy.special.log_softmax(LOGITS, -1), LABELS], {"ignore_index": -100},
     lambda lp, y, ignore_index: _ce(lp, y, ignore_index)),
    ("binary-cross-entropy", "binary_cross_entropy", [PROBS, TARGETS], {}, _bce),
    ("binary-cross-entropy-with-logits", "binary_cross_entropy_with_logits",
     [scipy.special.logit(PROBS), TARGETS], {}, lambda x, t: _bce(scipy.special.expit(x), t)),
    ("kl-div", "kl_div", [P_LOG, Q], {}, _kl),
    ("kl-div", "kl_div", [P_LOG, Q], {"reduction": "batchmean"}, _kl),
    ("kl-div", "kl_div", [P_LOG, np.log(Q + 0.1)], {"log_target": True, "reduction": "sum"}, _kl),
    ("huber", "huber", [PRED, WANT], {}, _huber),
    ("huber", "huber", [PRED, WANT], {"delta": 0.5}, _huber),
    ("smooth-l1", "smooth_l1", [PRED, WANT], {"beta": 0.7}, _smooth_l1),
    ("mse", "mse", [PRED, WANT], {}, lambda p, t: np.mean((p - t) ** 2)),
]
IDS = [f"{c[0]}{''.join(f'-{k}' for k in c[3])}" for c in CASES]


def _dtype(a: np.ndarray) -> str:
    return "i64" if a.dtype.kind == "i" else "f32"


def _lisp_value(v: object) -> str:
    if v is True:
        return "t"
    if isinstance(v, str):
        return f":{v}"
    return repr(v) + ("d0" if isinstance(v, float) else "")


def _graph(python: str, inputs: list, options: dict) -> tuple[Graph, list]:
    g = Graph(python)
    xs = [Tensor(g, g.input(f"x{i}", a.shape, _dtype(a))) for i, a in enumerate(inputs)]
    g.output("loss", getattr(ad, python)(*xs, **options).value)
    return g, xs


def _feed(inputs: list) -> dict:
    return {f"x{i}": a for i, a in enumerate(inputs)}


@pytest.mark.parametrize("lisp,python,inputs,options,reference", CASES, ids=IDS)
def test_python_loss_matches_numpy_and_its_gradient(lisp, python, inputs, options, reference):
    g, xs = _graph(python, inputs, options)
    got = run_reference(g, _feed(inputs), dtype_override="f64")["loss"]
    assert float(got) == pytest.approx(float(reference(*inputs, **options)), rel=1e-10)
    floats = xs[:1]  # the prediction's gradient (targets are data; kl-div's has a kink at 0)
    grads = grad(g, g.outputs["loss"], [x.value for x in floats])
    for x in floats:
        g.output(f"d{x.value.name}", grads[x.value])
    analytic, numeric = directional(g, _feed(inputs), "loss",
                                    {x.value.name: f"d{x.value.name}" for x in floats})
    assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("lisp,python,inputs,options,reference", CASES, ids=IDS)
def test_lisp_loss_matches_numpy(lisp, python, inputs, options, reference):
    interp = make_interpreter()
    g = Graph(lisp)
    keys = " ".join(f":{k.replace('_', '-')} {_lisp_value(v)}" for k, v in options.items())
    with tracing(Trace(g)):
        for i, a in enumerate(inputs):
            interp.set_global(f"X{i}", TracedTensor(g.input(f"x{i}", a.shape, _dtype(a))),
                              special=False)
        args = " ".join(f"x{i}" for i in range(len(inputs)))
        loss = interp.load(f'(require "sexpgpu/nn" :as nn)\n(nn:{lisp} {args} {keys})', "l.sx")
    g.output("loss", loss.value)
    got = run_reference(g, _feed(inputs), dtype_override="f64")["loss"]
    assert float(got) == pytest.approx(float(reference(*inputs, **options)), rel=1e-10)


def test_losses_compile_and_agree_with_the_reference() -> None:
    """Every case in one graph, compiled for the CPU (the simulator: below)."""
    g, feed = _all_losses()
    want = run_reference(g, feed)
    got = kernels.compile(g).run(feed)
    for key in want:
        assert_same_values(got[key], want[key], key, rtol=1e-5, atol=1e-6)


def _all_losses() -> tuple[Graph, dict]:
    g = Graph("losses")
    feed = {}
    for k, (_, python, inputs, options, _) in enumerate(CASES):
        xs = []
        for i, a in enumerate(inputs):
            name = f"c{k}x{i}"
            feed[name] = a.astype(np.int64 if a.dtype.kind == "i" else np.float32)
            xs.append(Tensor(g, g.input(name, a.shape, _dtype(a))))
        g.output(f"loss{k}", getattr(ad, python)(*xs, **options).value)
    return g, feed
