"""An update rule is traced once per parameter type in a group and copied for the
other parameters of that type (trace/optimizer.py, `trace_updates`): the step graph
is the one tracing every parameter gives, node for node and numbered alike."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sexpgpu.contract.compile import compile_file
from sexpgpu.trace import optimizer

RUN = """(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defoptimizer noisy (&key (lr 0.01))
  (optimizer-update (p g)
    (- p (* lr (+ g (rand (shape p)))))))
(defloader train :source (synthetic :task :classes :n 64 :dim 8 :classes 8 :split :train)
  :batch 16)
(defmodel net ()
  (defchild l1 (nn:linear 8 8))
  (defchild l2 (nn:linear 8 8))
  (defchild l3 (nn:linear 8 8))
  (lambda (x) (l3 (relu (l2 (relu (l1 x)))))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
(optimizer {optimizer})
(defrun :steps 3)
"""
OPTIMIZERS = [
    "(optim:adam :lr (optim:cosine :peak 1e-3 :warmup 2 :steps 3))",
    "(optim:adamw :lr 1e-3) :groups ((:ndim 1 :weight-decay 0.0)) :clip 1.0",
    "(optim:sgd-momentum :lr 0.1 :nesterov t :weight-decay 1e-4)",
    "(optim:lion :lr 1e-4)",
    "(optim:sgd :lr 0.1) :groups ((:ndim 2 :optimizer (optim:muon :lr 0.02)))",
    "(noisy :lr 0.1)",
]


def _text(tmp_path: Path, optimizer_form: str) -> str:
    """The step graph's text, values renumbered in order of appearance (ids count on
    across compiles in one process)."""
    path = tmp_path / "run.sx"
    path.write_text(RUN.format(optimizer=optimizer_form))
    text = str(compile_file(str(path)).graphs.step)
    numbers: dict[str, str] = {}
    return re.sub(r"%(\d+)\b", lambda m: "%" + numbers.setdefault(m.group(1),
                                                                  str(len(numbers))), text)


@pytest.mark.parametrize("optimizer_form", OPTIMIZERS)
def test_copied_updates_are_the_traced_ones(tmp_path: Path, optimizer_form: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    copied = _text(tmp_path, optimizer_form)
    monkeypatch.setattr(optimizer, "_repeatable", lambda g, nodes: None)  # trace each
    assert copied == _text(tmp_path, optimizer_form)


def test_the_rule_is_traced_once_per_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    calls: list[tuple[int, ...]] = []
    trace = optimizer.trace_update

    def counted(interp, g, group, param, *rest):  # noqa: ANN001, ANN202 - a spy
        calls.append(param.shape)
        return trace(interp, g, group, param, *rest)

    monkeypatch.setattr(optimizer, "trace_update", counted)
    _text(tmp_path, OPTIMIZERS[0])
    assert sorted(calls) == [(8,), (8, 8)]  # 3 weights and 3 biases: two types
    calls.clear()
    text = _text(tmp_path, "(noisy :lr 0.1)")  # a random draw: every parameter traced
    assert len(calls) == 6
    assert len(set(re.findall(r":stream (\d+)", text))) == 6
