"""The Experiment: everything a run file declared, collected while it was evaluated
(Lisp closures for the model, objective and evaluate functions; plain specs for the rest)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sexpgpu.data.spec import LoaderSpec
from sexpgpu.diagnostics import Span
from sexpgpu.runtime.spec import EvalSpec, RunSpec, TargetSpec
from sexpgpu.selection import Declarations
from sexpgpu.trace.optimizer import OptimizerSetup


@dataclass
class Experiment:
    file: str
    decls: Declarations
    knobs: dict[str, Any] = field(default_factory=dict)
    loaders: list[LoaderSpec] = field(default_factory=list)
    models: dict[str, Any] = field(default_factory=dict)      # name -> constructor
    top_model: str = ""
    objective: Any = None
    evaluates: dict[str, Any] = field(default_factory=dict)   # name -> Lisp function
    predict: Any = None  # defpredict: the forward alone (sample, predict, load_run)
    optimizer: OptimizerSetup | None = None
    evals: list[EvalSpec] = field(default_factory=list)
    eval_functions: dict[str, str] = field(default_factory=dict)  # eval -> defevaluate name
    targets: list[TargetSpec] = field(default_factory=list)
    target_sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    run: RunSpec | None = None
    spans: dict[tuple[str, str], Span] = field(default_factory=dict)

    def loader(self, name: str) -> LoaderSpec | None:
        for spec in self.loaders:
            if spec.name == name:
                return spec
        return None

    def span(self, head: str, name: str | None = None) -> Span | None:
        return self.spans.get((head, name or head))
