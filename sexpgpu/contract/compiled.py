"""CompiledExperiment: what compiling a run file yields (the Experiment, the selection,
parameters and traced graphs); `compile` builds it, `plan` and the commands read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from sexpgpu.contract.experiment import Experiment
from sexpgpu.diagnostics import Diagnostic
from sexpgpu.ir.bounds import IndexBound
from sexpgpu.ir.graph import Graph
from sexpgpu.selection import Selection
from sexpgpu.trace.health import DiagGraph
from sexpgpu.trace.model import ParamSpec
from sexpgpu.trace.step import StepGraphs


@dataclass
class CompiledExperiment:
    """Everything the compiler learned: the Experiment, parameters and graphs."""

    experiment: Experiment
    selection: Selection
    params: list[ParamSpec] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    graphs: StepGraphs | None = None
    evaluates: dict[str, Graph] = field(default_factory=dict)         # defeval name -> graph
    unused_evaluates: dict[str, Graph] = field(default_factory=dict)  # checked, never run
    sources: dict[str, str] = field(default_factory=dict)
    fields: dict[str, dict[str, tuple[tuple[int, ...], str]]] = field(default_factory=dict)
    diagnostics: DiagGraph | None = None  # when `--diag` selected any
    warnings: list[Diagnostic] = field(default_factory=list)  # W- codes: reported, not fatal
    # loader -> batch field -> the values the model can index with it (see contract.indices)
    bounds: dict[str, dict[str, IndexBound]] = field(default_factory=dict)

    def step_graphs(self) -> list[Graph]:
        g = self.graphs
        if g is None:
            return []
        return [x for x in (g.step, g.accumulate, g.apply) if x is not None]
