"""What `check` knows about targets and learning rates: a target names a metric the run
reports (an eval's output, or a training-step output), and every group's learning rate
is positive, schedules included when their values are known at compile time."""

from __future__ import annotations

from pathlib import Path

import pytest

from sexpgpu.contract.compile import compile_file
from sexpgpu.diagnostics import SexpError

RUN = """(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defknob steps 100 "training steps")
(defloader train :source (mnist1d :split :train) :batch 10)
(defloader test :source (mnist1d :split :test) :batch 100)
(defmodel net ()
  (defchild l1 (nn:linear 40 10))
  (lambda (x) (l1 x)))
(defobjective (model &key x y)
  (let ((logits (model x)))
    (metric acc (nn:accuracy logits y))
    (nn:cross-entropy logits y)))
(defevaluate (model &key x y)
  (metric accuracy (nn:accuracy (model x) y)))
(optimizer {optimizer})
(defeval test :loader test)
(deftarget {target} :>= 0.5)
(defrun :steps steps :microbatches {micro})
"""


def compile_with(tmp_path: Path, target: str = "test/accuracy",
                 optimizer: str = "(optim:adam :lr 1e-3)", micro: int = 1):  # noqa: ANN201
    path = tmp_path / "run.sx"
    path.write_text(RUN.format(target=target, optimizer=optimizer, micro=micro))
    return compile_file(str(path))


@pytest.mark.parametrize("micro", [1, 2])
@pytest.mark.parametrize("target,fix", [
    ("test/accuracy", None), ("train/acc", None), ("acc", None), ("train/loss", None),
    ("loss", None), ("train/grad_norm", None), ("train/lr", None),
    ("test/acc", "did you mean `test/accuracy`?"),
    ("test/acuracy", "did you mean `test/accuracy`?"),
    ("train/accuracy", "use one of: train/acc,"),
    ("test/loss", "use one of: test/accuracy"),
])
def test_a_target_names_a_reported_metric(tmp_path: Path, target: str, fix: str | None,
                                          micro: int) -> None:
    if fix is None:
        compile_with(tmp_path, target, micro=micro)
        return
    with pytest.raises(SexpError) as info:
        compile_with(tmp_path, target, micro=micro)
    diag = info.value.diagnostic
    assert diag.code == "E-RUN" and diag.span.line == 17 and diag.actual == target
    assert diag.fix.startswith(fix)


@pytest.mark.parametrize("micro", [1, 2])
@pytest.mark.parametrize("optimizer,problem", [
    ("(optim:adam :lr 1e-3)", None),
    ("(optim:adam :lr 0.0)", "zero"),
    ("(optim:sgd :lr -0.1)", "negative"),
    ("(optim:adam :lr 1e-3) :groups ((:ndim 1 :lr 0.0))", "zero"),
    ("(optim:adam :lr (optim:constant 0.0))", "zero"),
    ("(optim:adam :lr (optim:cosine :peak 1e-3 :steps 100))", None),      # 0 only past the end
    ("(optim:adam :lr (optim:cosine :peak 1e-3 :steps 50))", None),       # 0 from step 50: ok
    ("(optim:adam :lr (optim:cosine :peak -1e-3 :steps 100))", "negative"),
    ("(optim:adam :lr (optim:cosine :peak 1e-3 :final -1e-4 :steps 100))", "negative"),
    ("(optim:adam :lr (optim:linear-warmup :peak 0.0 :warmup 10))", "zero"),
    ("(optim:adam :lr (optim:step-schedule :peak 1e-3 :milestones '(50) :gamma -1.0))",
     "negative"),
    ("(optim:adam :lr 0.0) :allow-nonpositive-lr t", None),
    ("(optim:sgd :lr (optim:cosine :peak -1.0 :steps 100)) :allow-nonpositive-lr t", None),
])
def test_learning_rates_are_positive(tmp_path: Path, optimizer: str, problem: str | None,
                                     micro: int) -> None:
    if problem is None:
        compile_with(tmp_path, optimizer=optimizer, micro=micro)
        return
    with pytest.raises(SexpError) as info:
        compile_with(tmp_path, optimizer=optimizer, micro=micro)
    diag = info.value.diagnostic
    assert diag.code == "E-LR" and diag.span.line == 15
    assert diag.message.endswith(problem) and ":allow-nonpositive-lr t" in diag.fix


def test_a_schedule_that_reads_the_parameters_is_left_to_run_time(tmp_path: Path) -> None:
    from sexpgpu.ir.graph import Graph
    from sexpgpu.trace.optimizer import _schedule_values

    g = Graph("t")
    w = g.input("w", (), "f32", role="param")
    step = g.input("ctx/step", (), "f32", role="ctx")
    assert _schedule_values(g, g.apply("mul", w, step), 10, 1) is None
    assert _schedule_values(g, g.apply("add", step, step), 10, 1)[9] == 18.0
