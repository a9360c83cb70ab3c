"""The Experiment: everything a run file declared, collected while it was evaluated
(Lisp closures for the model, objective and evaluate functions; plain specs for the rest)."""

from __future__ import annotations

from typing import Any

from sexpgpu.data.spec import LoaderSpec
from sexpgpu.diagnostics import Span
from sexpgpu.record import factory, record
from sexpgpu.runtime.spec import EvalSpec, RunSpec, TargetSpec
from sexpgpu.selection import Declarations
from sexpgpu.trace.optimizer import OptimizerSetup


@record
class Experiment:
    file: str
    decls: Declarations
    knobs: dict[str, Any] = factory(dict)
    loaders: list[LoaderSpec] = factory(list)
    models: dict[str, Any] = factory(dict)      # name -> constructor
    top_model: str = ""
    objective: Any = None
    evaluates: dict[str, Any] = factory(dict)   # name -> Lisp function
    predict: Any = None  # defpredict: the forward alone (sample, predict, load_run)
    optimizer: OptimizerSetup | None = None
    evals: list[EvalSpec] = factory(list)
    eval_functions: dict[str, str] = factory(dict)  # eval -> defevaluate name
    targets: list[TargetSpec] = factory(list)
    target_sources: dict[str, dict[str, Any]] = factory(dict)
    run: RunSpec | None = None
    spans: dict[tuple[str, str], Span] = factory(dict)

    def loader(self, name: str) -> LoaderSpec | None:
        for spec in self.loaders:
            if spec.name == name:
                return spec
        return None

    def span(self, head: str, name: str | None = None) -> Span | None:
        return self.spans.get((head, name or head))
