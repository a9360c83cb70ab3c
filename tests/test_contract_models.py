"""Models: parameter paths from defchild (single and lists), weight tying,
initialisers scaled by knobs, `require` of relative libraries with :as (and cycles),
the nn layers traced and checked against numpy on the reference interpreter."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from sexpgpu import kernels
from sexpgpu.contract.compile import compile_file
from sexpgpu.diagnostics import SexpError
from sexpgpu.ir.reference import run_reference
from sexpgpu.selection import Selection

HEADER = """(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defknob steps 10 "steps")
(defknob scale 2.0 "init scale")
"""
TAIL = """(optimizer (optim:sgd :lr 0.1))
(defrun :steps steps)
"""


def write(tmp_path: Path, body: str, name: str = "run.sx") -> str:
    path = tmp_path / name
    path.write_text(HEADER + body + TAIL)
    return str(path)


def test_paths_lists_and_tying(tmp_path: Path) -> None:
    path = write(tmp_path, """(defloader train :source (text "t.txt" :context 8) :batch 2)
(defmodel tiny ()
  (defchild emb (nn:embedding 65 16))
  (defchild blocks (loop repeat 2 collect (nn:mlp 16 :hidden 32 :bias nil)))
  (defchild norm (nn:rms-norm 16))
  (defchild head (nn:linear 16 65 :bias nil :tie (child-param emb 'weight)))
  (lambda (idx)
    (let ((x (emb idx)))
      (dolist (b blocks) (setf x (+ x (funcall b x))))
      (head (norm x)))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
""")
    (tmp_path / "t.txt").write_text("abc" * 50)
    compiled = compile_file(path)
    paths = [p.path for p in compiled.params]
    assert paths == ["emb/weight", "blocks/0/c-fc/weight", "blocks/0/c-proj/weight",
                     "blocks/1/c-fc/weight", "blocks/1/c-proj/weight", "norm/weight"]
    assert compiled.aliases == {"head/weight": "emb/weight"}
    # one parameter, two uses: its gradient is the sum of both (one update)
    step = compiled.graphs.step
    assert sum(1 for v in step.inputs if v.role == "param") == len(paths)


def test_initialisers(tmp_path: Path) -> None:
    path = write(tmp_path, """(defloader train :source (mnist1d :split :train) :batch 4)
(defmodel net ()
  (defparam a (list 10 40) :init (kaiming-normal))
  (defparam b (list 10 40) :init (xavier-uniform :gain scale))
  (defparam c (list 10) :init (constant 0.5))
  (defparam d (list 10 40) :init (normal (* 0.01 scale)))
  (defparam e (list 10) :init :ones)
  (lambda (x)
    (+ (@ x (transpose (+ a (+ b d)))) (* c e))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
""")
    inits = {p.path: p.init for p in compile_file(path).params}
    assert inits["a"].dist == "normal" and inits["a"].params["std"] == pytest.approx(
        1 / math.sqrt(40))
    bound = 2.0 * math.sqrt(6 / 50)
    assert inits["b"].params == pytest.approx({"low": -bound, "high": bound})
    assert inits["c"].params == {"value": 0.5}
    assert inits["d"].params["std"] == pytest.approx(0.02)
    assert inits["e"].dist == "ones"


def test_require_relative_with_prefix_and_cycle(tmp_path: Path) -> None:
    (tmp_path / "blocks.sx").write_text("""(defmodel double-linear (n)
  (defchild a (sexpgpu/nn:linear n n))
  (defchild b (sexpgpu/nn:linear n n))
  (lambda (x) (b (a x))))
""")
    path = write(tmp_path, """(require "./blocks.sx" :as blk)
(defloader train :source (mnist1d :split :train) :batch 4)
(defmodel net ()
  (defchild body (blk:double-linear 40))
  (defchild head (nn:linear 40 10))
  (lambda (x) (head (body x))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
""")
    assert [p.path for p in compile_file(path).params][:2] == ["body/a/weight", "body/a/bias"]
    (tmp_path / "one.sx").write_text('(require "./two.sx")\n')
    (tmp_path / "two.sx").write_text('(require "./one.sx")\n')
    cyclic = write(tmp_path, """(require "./one.sx")
(defloader train :source (mnist1d :split :train) :batch 4)
(defmodel net () (defchild head (nn:linear 40 10)) (lambda (x) (head x)))
(defobjective (model &key x y) (nn:cross-entropy (model x) y))
""", "cyclic.sx")
    with pytest.raises(SexpError) as info:
        compile_file(cyclic)
    assert info.value.diagnostic.code == "E-REQUIRE" and "cycle" in info.value.diagnostic.message


LAYERS = """(defloader train :source (mnist1d :split :train) :batch 4)
(defmodel net ()
  (defchild ln (nn:layer-norm 40))
  (defchild attn (nn:causal-self-attention 8 2 :bias nil))
  (defchild cell (nn:lstm-cell 40 6))
  (defchild conv (nn:conv2d-layer 1 3 3 :padding 1))
  (defchild stack (nn:conv1d-stack '(1 4 4) '(3 3) :strides '(2 1)))
  (defchild head (nn:linear 40 10))
  (lambda (x)
    (let* ((seq (reshape x (list 4 5 8)))
           (h (first (funcall cell x (list (zeros (list 4 6)) (zeros (list 4 6))))))
           (img (conv (reshape x (list 4 1 5 8))))
           (pooled (max-pool (funcall stack (reshape x (list 4 1 40))) 2))
           (avg (avg-pool img 2)))
      (metric ln-sum (sum (* (ln x) (ln x))))
      (metric attn-sum (sum (attn seq)))
      (metric extra (+ (sum h) (+ (sum pooled) (sum avg))))
      (head (dropout (nn:flatten x) 0.5)))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
(defevaluate (model &key x y)
  (metric accuracy (nn:accuracy (model x) y)))
"""


def test_layers_trace_and_agree_with_numpy(tmp_path: Path) -> None:
    compiled = compile_file(write(tmp_path, LAYERS))
    step = compiled.graphs.step
    assert any(n.op == "dropout" for n in step.nodes)              # on while training
    evaluate = compiled.unused_evaluates["default"]                  # no defeval runs it
    assert not any(n.op == "dropout" for n in evaluate.nodes)      # off when evaluating
    rng = np.random.default_rng(0)
    inputs = {}
    for v in step.inputs:
        if v.role == "param":
            inputs[v.name] = rng.standard_normal(v.shape).astype(np.float32) * 0.5
        elif v.role == "data":
            inputs[v.name] = (rng.standard_normal(v.shape).astype(np.float32) if v.dtype == "f32"
                              else rng.integers(0, 10, v.shape))
        elif v.role == "state":
            inputs[v.name] = np.zeros(v.shape, np.float32)
        else:
            inputs[v.name] = np.array(0, np.float32 if v.role == "ctx" else np.int64)
    x = inputs["data/x"].astype(np.float64)
    out = run_reference(step, {k: v.copy() for k, v in inputs.items()})
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    ln = (x - mu) / np.sqrt(var + 1e-5) * inputs["ln/weight"] + inputs["ln/bias"]
    assert float(out["ln-sum"]) == pytest.approx(float(np.sum(ln * ln)), rel=1e-4)
    seq = x.reshape(4, 5, 8)
    qkv = seq @ inputs["attn/c-attn/weight"].T                      # (4 5 24)
    q, k, v = (qkv[..., i * 8:(i + 1) * 8].reshape(4, 5, 2, 4).transpose(0, 2, 1, 3)
               for i in range(3))
    att = q @ k.transpose(0, 1, 3, 2) / 2.0
    att = np.where(np.tril(np.ones((5, 5), bool)), att, -np.inf)
    att = np.exp(att - att.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(4, 5, 8) @ inputs["attn/c-proj/weight"].T
    assert float(out["attn-sum"]) == pytest.approx(float(y.sum()), rel=1e-4, abs=1e-4)


NUMERICS = """(defloader train :source (mnist1d :split :train) :batch 4)
(defmodel net ()
  (defchild ln (nn:layer-norm 40))
  (defchild head (nn:linear 40 10))
  (lambda (x)
    (let ((y (ln (+ (* x 0.1) 10000.0))))
      (metric ln-squares (sum (square y)))
      (metric ln-centre (sum (abs (sum y :axis -1)))))
    (head x)))
(defobjective (model &key x y)
  (nn:cross-entropy (+ (model x) (log (cast (/= (iota 10) 9) :f32))) y))
"""


@pytest.mark.parametrize("backend", ["reference", "kernels"])
def test_layer_norm_and_cross_entropy_numerics(tmp_path: Path, backend: str) -> None:
    """layer-norm keeps f32 precision at mean 1e4, std 0.1 (the corrected
    two-pass: each row's outputs sum to 0, where the f32 mean's rounding error
    offset them all by up to 3e-3), and cross-entropy with a -inf logit off the
    target is finite, as PyTorch's (a product with the one-hot made -inf * 0 = NaN)."""
    step = compile_file(write(tmp_path, NUMERICS)).graphs.step
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 40)).astype(np.float32)
    inputs = {"data/x": x, "data/y": np.array([0, 3, 8, 5]),
              "ln/weight": np.ones(40, np.float32), "ln/bias": np.zeros(40, np.float32),
              "head/weight": (0.1 * rng.standard_normal((10, 40))).astype(np.float32),
              "head/bias": np.zeros(10, np.float32)}
    for v in step.inputs:
        inputs.setdefault(v.name, np.zeros(v.shape, np.float32 if v.dtype == "f32"
                                           else np.int64))
    if backend == "kernels":
        out = kernels.compile(step, outputs=["ln-squares", "ln-centre", "loss"]).run(
            {k: np.array(v, copy=True) for k, v in inputs.items()})  # updated in place
    else:
        out = run_reference(step, {k: np.array(v, copy=True) for k, v in inputs.items()})
    z = (x * np.float32(0.1) + np.float32(1e4)).astype(np.float64)
    ln = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5)
    assert float(out["ln-squares"]) == pytest.approx(float(np.sum(ln * ln)), rel=1e-6)
    assert float(out["ln-centre"]) < 1e-4
    logits = x.astype(np.float64) @ inputs["head/weight"].T.astype(np.float64)
    logits[:, 9] = -np.inf
    logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
        - logits.max(-1, keepdims=True)
    want = -np.mean(logp[np.arange(4), inputs["data/y"]])
    assert float(out["loss"]) == pytest.approx(want, rel=1e-5)


def test_initial_values_follow_the_initialisers() -> None:
    from sexpgpu.runtime.compiled import init_param as initial_value

    gpt = Path(__file__).resolve().parent.parent / "examples" / "shakespeare-char.sx"
    # any existing file stands in for the text: check reads no data
    compiled = compile_file(str(gpt), Selection.from_args([f"data={__file__}"]))
    specs = {p.path: p for p in compiled.params}
    w = initial_value(specs["blocks/0/attn/c-attn/weight"], seed=1)
    assert w.dtype == np.float32 and w.shape == (384, 128)
    assert abs(float(w.std()) - 0.02) < 0.001 and abs(float(w.mean())) < 0.001
    proj = initial_value(specs["blocks/0/attn/c-proj/weight"], seed=1)
    assert abs(float(proj.std()) - 0.02 / math.sqrt(8)) < 0.0005
    assert np.array_equal(w, initial_value(specs["blocks/0/attn/c-attn/weight"], seed=1))
    assert not np.array_equal(w, initial_value(specs["blocks/0/attn/c-attn/weight"], seed=2))
    other = initial_value(specs["blocks/1/attn/c-attn/weight"], seed=1)
    assert not np.array_equal(w, other)                          # a stream per path
    assert np.all(initial_value(specs["ln-f/weight"], seed=1) == 1.0)


def test_bidirectional_gru_matches_pytorch_equations(tmp_path: Path) -> None:
    compiled = compile_file(write(tmp_path, """
(defloader train :source (mnist1d :split :train) :batch 4)
(defmodel net ()
  (defchild gru (nn:gru 2 3 :bidirectional t))
  (defchild head (nn:linear 120 10))
  (lambda (x)
    (let ((hs (gru (reshape x (list 4 20 2)))))
      (metric hsum (sum (* hs (iota 6 :dtype :f32))))
      (head (nn:flatten hs)))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
"""))
    inputs, out = _run_on_random_inputs(compiled.graphs.step, seed=1)
    xs = inputs["data/x"].astype(np.float64).reshape(4, 20, 2)

    def sigmoid(a: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-a))

    def direction(cell: str, order: range) -> np.ndarray:
        p = {k: inputs[f"gru/cells/{cell}/{k}"].astype(np.float64)
             for k in ("weight-ih", "weight-hh", "bias-ih", "bias-hh")}
        h, hs = np.zeros((4, 3)), np.zeros((4, 20, 3))
        for t in order:
            gi = xs[:, t] @ p["weight-ih"].T + p["bias-ih"]
            gh = h @ p["weight-hh"].T + p["bias-hh"]
            r = sigmoid(gi[:, :3] + gh[:, :3])
            z = sigmoid(gi[:, 3:6] + gh[:, 3:6])
            n = np.tanh(gi[:, 6:] + r * gh[:, 6:])
            h = (1 - z) * n + z * h
            hs[:, t] = h
        return hs

    hs = np.concatenate([direction("0", range(20)), direction("1", range(19, -1, -1))], -1)
    assert float(out["hsum"]) == pytest.approx(float(np.sum(hs * np.arange(6))), rel=1e-4)


def test_objective_receives_only_the_fields_it_names(tmp_path: Path) -> None:
    compiled = compile_file(write(tmp_path, """
(defloader train :source (mnist1d :split :train) :batch 4)
(defmodel autoencoder ()
  (defchild enc (nn:linear 40 8))
  (defchild dec (nn:linear 8 40))
  (lambda (x) (dec (tanh (enc x)))))
(defobjective (model &key x)
  (nn:mse (model x) x))
"""))
    data = [v.name for v in compiled.graphs.step.inputs if v.role == "data"]
    assert data == ["data/x"]


def _run_on_random_inputs(step, seed: int) -> tuple[dict, dict]:
    """The step's inputs (standard normal floats, zero integers) and its outputs on them
    in the reference interpreter."""
    rng = np.random.default_rng(seed)
    inputs = {v.name: (rng.standard_normal(v.shape).astype(np.float32) if v.dtype == "f32"
                       else np.zeros(v.shape, np.int64)) for v in step.inputs}
    return inputs, run_reference(step, {k: v.copy() for k, v in inputs.items()})


def _lstm_reference(inputs: dict, cell: str, xs: np.ndarray, order: range) -> np.ndarray:
    """PyTorch's LSTM equations in float64: gates i, f, g, o of W_ih x + b_ih + W_hh h + b_hh."""
    p = {k: inputs[f"{cell}/{k}"].astype(np.float64)
         for k in ("weight-ih", "weight-hh", "bias-ih", "bias-hh")}
    hidden = p["weight-hh"].shape[1]
    h, c = np.zeros((xs.shape[0], hidden)), np.zeros((xs.shape[0], hidden))
    hs = np.zeros((xs.shape[0], xs.shape[1], hidden))
    for t in order:
        g = xs[:, t] @ p["weight-ih"].T + p["bias-ih"] + h @ p["weight-hh"].T + p["bias-hh"]
        i, f, cell_in, o = (g[:, k * hidden:(k + 1) * hidden] for k in range(4))
        c = (1 / (1 + np.exp(-f))) * c + (1 / (1 + np.exp(-i))) * np.tanh(cell_in)
        h = (1 / (1 + np.exp(-o))) * np.tanh(c)
        hs[:, t] = h
    return hs


def test_lstm_layer_and_run_cell_with_a_list_state_match_pytorch_equations(
        tmp_path: Path) -> None:
    """nn:lstm (bidirectional) and run-cell over an lstm-cell, whose state is the list
    (h c), against the LSTM equations in numpy."""
    compiled = compile_file(write(tmp_path, """
(defloader train :source (mnist1d :split :train) :batch 4)
(defmodel net ()
  (defchild lstm (nn:lstm 2 3 :bidirectional t))
  (defchild cell (nn:lstm-cell 2 3))
  (defchild head (nn:linear 120 10))
  (lambda (x)
    (let* ((xs (reshape x (list 4 20 2)))
           (hs (lstm xs))
           (zero (zeros (list 4 3)))
           (cs (nn:run-cell #'cell xs (list zero zero))))
      (metric hsum (sum (* hs (iota 6 :dtype :f32))))
      (metric csum (sum (* cs (iota 3 :dtype :f32))))
      (head (nn:flatten hs)))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
"""))
    inputs, out = _run_on_random_inputs(compiled.graphs.step, seed=2)
    xs = inputs["data/x"].astype(np.float64).reshape(4, 20, 2)
    hs = np.concatenate([_lstm_reference(inputs, "lstm/cells/0", xs, range(20)),
                         _lstm_reference(inputs, "lstm/cells/1", xs, range(19, -1, -1))], -1)
    assert float(out["hsum"]) == pytest.approx(float(np.sum(hs * np.arange(6))), rel=1e-4)
    cs = _lstm_reference(inputs, "cell", xs, range(20))
    assert float(out["csum"]) == pytest.approx(float(np.sum(cs * np.arange(3))), rel=1e-4)
