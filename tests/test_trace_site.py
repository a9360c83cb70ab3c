"""The site of every traced node (the user's line it came from) is what a walk of the
evaluator's stack says, though tracing now reads it from two facts the evaluator
keeps: on every example, on a user cell that calls library layers inside a loop, and on
a library macro whose expansion holds the user's forms (defobjective's)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from sexpgpu.contract import compile as compile_module
from sexpgpu.selection import Selection
from sexpgpu.trace import site

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.sx"))

CELL = """
(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defknob steps 2 "steps")
(defloader train :source (mnist1d :split :train) :batch 8)
(defun cell (l x h)
  (tanh (+ (funcall l x) (* 0.5 h))))
(defmodel tiny ()
  (defchild l (nn:linear 40 40))
  (defchild out (nn:linear 40 10))
  (lambda (x)
    (let ((h (zeros (shape x))))
      (dotimes (i 3)
        (setf h (cell #'l x h)))
      (out (relu h)))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
(optimizer (optim:adam :lr 1e-3))
(defrun :steps steps)
"""


def _checked_provider(found: list[tuple[Any, Any]]):  # noqa: ANN202 - a factory
    def make(interp: Any):  # noqa: ANN202 - a provider
        fast = site.site_provider(interp)

        def provider() -> Any:
            answer = fast()
            found.append((answer[0], site.stack_site(interp.library_files,
                                                     sys._getframe(2))))
            return answer
        return provider
    return make


def _key(span: Any) -> Any:
    return None if span is None else (span.file, span.line, span.col)


def _sites(monkeypatch: pytest.MonkeyPatch, path: str,
           selection: Selection | None = None) -> list[tuple[Any, Any]]:
    found: list[tuple[Any, Any]] = []
    monkeypatch.setattr(compile_module, "site_provider", _checked_provider(found))
    compile_module.compile_file(path, selection)
    return found


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_sites_equal_the_stack_walk(example: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    text = tmp_path / "input.txt"
    text.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n" * 40)
    selection = Selection.from_args([f"data={text}"]) \
        if example.stem == "shakespeare-char" else None
    found = _sites(monkeypatch, str(example), selection)
    assert len(found) > 50
    # the optimizer's nodes (most of them) have no user form on the stack
    assert sum(fast is not None for fast, _ in found) >= 20
    assert [_key(fast) for fast, _ in found] == [_key(walk) for _, walk in found]


def test_a_user_cell_in_a_loop_gets_its_own_lines(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cell.sx"
    path.write_text(CELL)
    found = _sites(monkeypatch, str(path))
    assert [_key(fast) for fast, _ in found] == [_key(walk) for _, walk in found]
    lines = {fast.line for fast, _ in found if fast is not None}
    # the cell's body (line 7), the output layer's call (15), the loss (17)
    assert {7, 15, 17}.issubset(lines), sorted(lines)
