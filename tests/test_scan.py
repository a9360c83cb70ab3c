"""`scan`: a recurrence traced once and copied. The graph is the one an unrolled
`dotimes` makes, node for node; its values are the recurrence's in float64 numpy;
a body that draws random numbers or records a metric is traced at every step; a
carry it changes is E-SCAN at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sexpgpu.contract.compile import compile_file
from sexpgpu.diagnostics import SexpError
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.reference import run_reference

HEAD = """(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defloader train :source (mnist1d :split :train) :batch 4)
(defmodel net ()
  (defparam wx (list 2 3))
  (defparam wh (list 3 3))
  (defparam b (list 3))
  (defchild head (nn:linear 60 10))
  (lambda (x)
    (let* ((xs (reshape x (list 4 20 2)))
           (h0 (zeros (list 4 3)))
           (wht (transpose wh))
"""
TAIL = """))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
(optimizer (optim:sgd :lr 0.1))
(defrun :steps 1)
"""
# a tanh RNN's step, written once as a scan body and once inside a loop
CELL = "(tanh (+ (@ x wx) (@ h wht) b))"


def _compile(tmp_path: Path, body: str) -> object:
    path = tmp_path / "run.sx"
    path.write_text(HEAD + body + TAIL)
    return compile_file(str(path))


def _structure(g: Graph) -> list[str]:
    """Each node as its op, attrs, output types and inputs numbered by position."""
    number = {v.id: f"in:{v.name}" for v in g.inputs}
    lines = []
    for i, node in enumerate(g.nodes):
        ins = [number.get(v.id, "outside") for v in node.inputs]
        for out in node.outputs:
            number[out.id] = f"%{i}.{out.index}"
        lines.append(f"{node.op} {sorted(node.attrs.items())!r} {ins} "
                     f"{[str(o.type) for o in node.outputs]}")
    return lines


SCANNED = {
    "forward": f"(scan (lambda (h x) {CELL}) h0 xs)",
    "reverse": f"(scan (lambda (h x) {CELL}) h0 xs :reverse t)",
}
UNROLLED = {
    "forward": f"""(let ((h h0) (outs nil))
  (dotimes (i 20)
    (let ((x (reshape (slice xs :axis 1 :start i :end (1+ i)) (list 4 2))))
      (setf h {CELL})
      (push h outs)))
  (stack (reverse outs) :axis 1))""",
    "reverse": f"""(let ((h h0) (outs nil))
  (dotimes (k 20)
    (let* ((i (- 19 k))
           (x (reshape (slice xs :axis 1 :start i :end (1+ i)) (list 4 2))))
      (setf h {CELL})
      (push h outs)))
  (stack outs :axis 1))""",
}


def _model(hs: str) -> str:
    return f"(hs {hs}))\n  (head (nn:flatten hs)"


@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_scan_makes_the_graph_an_unrolled_loop_makes(tmp_path: Path, direction: str) -> None:
    scanned = _compile(tmp_path, _model(SCANNED[direction])).graphs.step
    unrolled = _compile(tmp_path, _model(UNROLLED[direction])).graphs.step
    assert _structure(scanned) == _structure(unrolled)
    assert sum(n.op == "tanh" for n in scanned.nodes) == 20


def test_every_step_points_at_the_user_lines(tmp_path: Path) -> None:
    """The steps' slices of xs are at the scan call's line and the copied nodes at
    the body's, as in the first step (for diagnostics and `sexpgpu ir`)."""
    step = _compile(tmp_path, _model(f"(scan (lambda (h x)\n {CELL})\n h0 xs)")).graphs.step
    forward = step.nodes[:_loss_node(step)]
    line = HEAD.count("\n") + 1
    assert {(n.span.line, n.span.col) for n in forward if n.op == "slice"} == {(line, 5)}
    assert {n.span.line for n in forward if n.op == "tanh"} == {line + 1}


def _rnn_reference(inputs: dict, order: range) -> np.ndarray:
    """The tanh RNN in float64 numpy: its hidden states (B T H) in time order."""
    xs = inputs["data/x"].astype(np.float64).reshape(4, 20, 2)
    wx, wh, b = (inputs[k].astype(np.float64) for k in ("wx", "wh", "b"))
    h, hs = np.zeros((4, 3)), np.zeros((4, 20, 3))
    for t in order:
        h = np.tanh(xs[:, t] @ wx + h @ wh.T + b)
        hs[:, t] = h
    return hs


def _run(step: Graph, seed: int = 3) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    inputs = {v.name: (rng.standard_normal(v.shape).astype(np.float32) if v.dtype == "f32"
                       else np.zeros(v.shape, np.int64)) for v in step.inputs}
    return inputs, run_reference(step, {k: v.copy() for k, v in inputs.items()})


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_values_and_last_carry_match_numpy(tmp_path: Path, reverse: bool) -> None:
    flag = " :reverse t" if reverse else ""
    step = _compile(tmp_path, f"""(hs nil))
  (multiple-value-bind (states last) (scan (lambda (h x) {CELL}) h0 xs{flag})
    (setf hs states)
    (metric hsum (sum (* hs (iota 3 :dtype :f32))))
    (metric last (sum (* last (iota 3 :dtype :f32)))))
  (head (nn:flatten hs)""").graphs.step
    inputs, out = _run(step)
    hs = _rnn_reference(inputs, range(19, -1, -1) if reverse else range(20))
    weights = np.arange(3)
    assert float(out["hsum"]) == pytest.approx(float(np.sum(hs * weights)), rel=1e-5)
    last = hs[:, 0] if reverse else hs[:, -1]
    assert float(out["last"]) == pytest.approx(float(np.sum(last * weights)), rel=1e-5)


def test_a_list_carry_holding_one_tensor_twice_keeps_its_parts_apart(tmp_path: Path) -> None:
    """(list h0 h0): the first step is traced, not recorded (a copy keyed by value
    could not tell h from c); h and c then part ways, and every step is right."""
    step = _compile(tmp_path, """(hs (scan (lambda (state x)
                    (let ((h (first state)) (c (second state)))
                      (list (tanh (+ (@ x wx) (@ h wht) c)) (+ c b))))
                  (list h0 h0) xs)))
  (metric hsum (sum (* hs (iota 3 :dtype :f32))))
  (head (nn:flatten hs)""").graphs.step
    inputs, out = _run(step)
    xs = inputs["data/x"].astype(np.float64).reshape(4, 20, 2)
    wx, wh, b = (inputs[k].astype(np.float64) for k in ("wx", "wh", "b"))
    h, c, total = np.zeros((4, 3)), np.zeros((4, 3)), 0.0
    for t in range(20):
        h, c = np.tanh(xs[:, t] @ wx + h @ wh.T + c), c + b
        total += float(np.sum(h * np.arange(3)))
    assert float(out["hsum"]) == pytest.approx(total, rel=1e-5)


def test_nodes_not_depending_on_the_carry_are_made_once(tmp_path: Path) -> None:
    """A transposed weight and a scaled bias inside the body: one node each, shared by
    the 20 steps (an unrolled loop makes 20 of the scaled bias)."""
    step = _compile(tmp_path, """(hs (scan (lambda (h x)
                   (tanh (+ (@ x wx) (@ h (transpose wh)) (* 0.5 b))))
                 h0 xs)))
  (head (nn:flatten hs)""").graphs.step
    forward = step.nodes[:_loss_node(step)]
    assert sum(n.op == "tanh" for n in forward) == 20
    assert sum(n.op == "mul" and any(v.name == "b" for v in n.inputs) for n in forward) == 1


def _loss_node(step: Graph) -> int:
    """The index of the first node of the backward (the forward's nodes come first)."""
    loss = step.outputs["loss"]
    return next(i for i, n in enumerate(step.nodes) if loss in n.outputs) + 1


def test_a_body_that_draws_random_numbers_draws_anew_at_every_step(tmp_path: Path) -> None:
    step = _compile(tmp_path, f"""(hs (scan (lambda (h x) (dropout {CELL} 0.5)) h0 xs)))
  (head (nn:flatten hs)""").graphs.step
    forward = step.nodes[:_loss_node(step)]
    streams = [n.attrs["stream"] for n in forward if "stream" in n.attrs]
    assert len(streams) == 20 and len(set(streams)) == 20


@pytest.mark.parametrize("loop", ["(scan (lambda (h x) {body}) h0 xs)",
                                  "(let ((h h0)) (dotimes (i 20) (let ((x (reshape (slice xs "
                                  ":axis 1 :start i :end (1+ i)) (list 4 2)))) (setf h {body}))) "
                                  "(stack (list h) :axis 1))"])
def test_a_body_that_records_a_metric_is_traced_at_every_step(tmp_path: Path,
                                                               loop: str) -> None:
    """A metric inside the body is recorded at every step, as in a loop, and so is
    E-METRIC the second time (a copy of the first step's nodes would have kept the
    first step's value without a word)."""
    body = f"(let ((new {CELL})) (metric hlast (sum new)) new)"
    d = _error(tmp_path, f"(hs {loop.format(body=body)}))\n  (head (nn:flatten hs)")
    assert d.code == "E-METRIC" and "recorded twice" in d.message


def test_the_body_is_evaluated_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Its Lisp side effects happen at the first step (the documented semantics)."""
    _compile(tmp_path, f"""(hs (scan (lambda (h x) (format t "step~%") {CELL}) h0 xs)))
  (head (nn:flatten hs)""")
    assert capsys.readouterr().err.count("step\n") == 1  # the one graph: 20 steps


def _error(tmp_path: Path, body: str) -> object:
    with pytest.raises(SexpError) as info:
        _compile(tmp_path, body)
    return info.value.diagnostic


def test_a_carry_of_another_shape_is_e_scan_at_the_call(tmp_path: Path) -> None:
    d = _error(tmp_path, """(hs (scan (lambda (h x) (concat (list h h) :axis -1))
                 h0 xs)))
  (head (nn:flatten hs)""")
    # at the scan call (line 1 of the body, column 5), noting where fn returned it
    assert d.code == "E-SCAN" and (d.span.line, d.span.col) == (HEAD.count("\n") + 1, 5)
    assert d.expected == "f32 (4 3)" and d.actual == "f32 (4 6)"
    assert d.notes[0].message == "the step function returned it here"
    assert d.notes[0].span.line == HEAD.count("\n") + 1 and d.notes[0].span.col == 25


def test_a_carry_of_another_form_is_e_scan(tmp_path: Path) -> None:
    d = _error(tmp_path, """(hs (scan (lambda (state x) (first state)) (list h0 h0) xs)))
  (head (nn:flatten hs)""")
    assert d.code == "E-SCAN"
    assert d.expected == "(f32 (4 3), f32 (4 3))" and d.actual == "f32 (4 3)"


def test_an_init_that_is_not_tensors_is_e_scan(tmp_path: Path) -> None:
    d = _error(tmp_path, f"""(hs (scan (lambda (h x) {CELL}) 0.0 xs)))
  (head (nn:flatten hs)""")
    assert d.code == "E-SCAN" and "INIT is not a tensor" in d.message


def test_a_circular_init_is_an_error_not_a_hang(tmp_path: Path) -> None:
    d = _error(tmp_path, """(hs (let ((c (list h0)))
         (setf (cdr c) c)
         (scan (lambda (h x) h) c xs))))
  (head (nn:flatten hs)""")
    assert d.code == "E-TYPE" and "circular" in d.message


def test_an_axis_without_steps_is_e_scan(tmp_path: Path) -> None:
    d = _error(tmp_path, f"""(hs (scan (lambda (h x) {CELL}) h0 xs :axis 3)))
  (head (nn:flatten hs)""")
    assert d.code == "E-SCAN" and d.actual == "f32 (4 20 2)"


@pytest.mark.parametrize("name", ["'decay", "#'decay"])
def test_a_function_named_by_a_symbol_is_called(tmp_path: Path, name: str) -> None:
    """A function designator, as funcall takes: 'decay is the global function."""
    body = f"(hs (scan {name} h0 xs)))\n  (head (nn:flatten hs)"
    path = tmp_path / "run.sx"
    path.write_text("(defun decay (h x) (+ (* 0.5 h) (sum x)))\n" + HEAD + body + TAIL)
    step = compile_file(str(path)).graphs.step
    inputs, out = _run(step)
    xs = inputs["data/x"].astype(np.float64).reshape(4, 20, 2)
    h, states = np.zeros((4, 3)), []
    for t in range(20):
        h = 0.5 * h + xs[:, t].sum()
        states.append(h)
    assert float(out["loss"]) == pytest.approx(_loss(inputs, np.stack(states, 1)), rel=1e-5)


def _loss(inputs: dict, hs: np.ndarray) -> float:
    """The model's cross-entropy from its hidden states (B T H), in float64."""
    w, b = (inputs[f"head/{k}"].astype(np.float64) for k in ("weight", "bias"))
    logits = hs.reshape(len(hs), -1) @ w.T + b
    logits -= logits.max(1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    y = inputs["data/y"]
    return float(-logp[np.arange(len(y)), y].mean())


def test_an_unknown_function_name_is_e_undefined_function(tmp_path: Path) -> None:
    d = _error(tmp_path, "(hs (scan 'no-such-step h0 xs)))\n  (head (nn:flatten hs)")
    assert d.code == "E-UNDEFINED-FUNCTION"


@pytest.mark.parametrize("call, wanted", [
    ("(scan 3 h0 xs)", "a function of (carry x)"),
    ("(scan (lambda (h x) h) h0 5)", "a tensor with a time axis"),
    ("(scan (lambda (h x) h) h0 xs :axes 1)", ":axis :reverse"),
])
def test_malformed_arguments_are_e_arg(tmp_path: Path, call: str, wanted: str) -> None:
    d = _error(tmp_path, f"(hs {call}))\n  (head (nn:flatten hs)")
    assert d.code == "E-ARG" and d.expected == wanted
