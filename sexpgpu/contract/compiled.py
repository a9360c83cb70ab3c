"""CompiledExperiment: what compiling a run file yields (the Experiment, the selection,
parameters and traced graphs); `compile` builds it, `plan` and the commands read it.
`lowered(precision)` gives the graphs after the precision pass, which `ir`, `explain`
and the runtime all compile from."""

from __future__ import annotations

from sexpgpu.contract.experiment import Experiment
from sexpgpu.diagnostics import Diagnostic
from sexpgpu.ir.bounds import IndexBound
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.precision import lower_precision
from sexpgpu.record import factory, record, replace
from sexpgpu.selection import Selection
from sexpgpu.trace.health import DiagGraph
from sexpgpu.trace.model import ParamSpec
from sexpgpu.trace.step import Sections, StepGraphs


@record
class LoweredGraphs:
    """The graphs of one precision (the traced ones where the pass changed nothing)."""

    precision: str
    step: Graph | None = None
    accumulate: Graph | None = None
    apply: Graph | None = None
    sections: dict[str, Sections] = factory(dict)
    evaluates: dict[str, Graph] = factory(dict)
    unused_evaluates: dict[str, Graph] = factory(dict)
    diagnostics: Graph | None = None

    def step_graphs(self) -> list[Graph]:
        return [x for x in (self.step, self.accumulate, self.apply) if x is not None]


@record
class CompiledExperiment:
    """Everything the compiler learned: the Experiment, parameters and graphs."""

    experiment: Experiment
    selection: Selection
    params: list[ParamSpec] = factory(list)
    aliases: dict[str, str] = factory(dict)
    graphs: StepGraphs | None = None
    evaluates: dict[str, Graph] = factory(dict)         # defeval name -> graph
    unused_evaluates: dict[str, Graph] = factory(dict)  # checked, never run
    predict: Graph | None = None  # defpredict: the forward alone
    sources: dict[str, str] = factory(dict)
    fields: dict[str, dict[str, tuple[tuple[int, ...], str]]] = factory(dict)
    diagnostics: DiagGraph | None = None  # when `--diag` selected any
    warnings: list[Diagnostic] = factory(list)  # W- codes: reported, not fatal
    # loader -> batch field -> the values the model can index with it (see contract.indices)
    bounds: dict[str, dict[str, IndexBound]] = factory(dict)
    # procs > 1: the step traced as procs x microbatches accumulations and one apply,
    # which the processes share (runtime/parallel.py); the plan shows `graphs`
    parallel: StepGraphs | None = None
    _lowered: dict[str, LoweredGraphs] = factory(dict)

    def data_parallel(self) -> CompiledExperiment:
        """This experiment with the data-parallel step in place of the plan's."""
        return replace(self, graphs=self.parallel, parallel=None, _lowered={})

    def step_graphs(self) -> list[Graph]:
        g = self.graphs
        if g is None:
            return []
        return [x for x in (g.step, g.accumulate, g.apply) if x is not None]

    @property
    def precision(self) -> str:
        run = self.experiment.run
        return run.precision if run is not None else "f32"

    def lowered(self, precision: str | None = None) -> LoweredGraphs:
        """Every graph after the precision pass (`ir/precision.py`) for `precision`
        (default: the run's): the step's forward and backward in that precision, its
        optimizer update in f32."""
        precision = precision or self.precision
        if precision in self._lowered:
            return self._lowered[precision]
        out = LoweredGraphs(precision)
        graphs = self.graphs
        if graphs is not None:
            for name in ("step", "accumulate"):
                g = getattr(graphs, name)
                if g is None:
                    continue
                bounds = graphs.sections.get(g.name, Sections(len(g.nodes), len(g.nodes)))
                low = lower_precision(g, precision, bounds.forward, bounds.backward)
                setattr(out, name, low.graph)
                out.sections[g.name] = Sections(low.forward_end, low.update_from)
            if graphs.apply is not None:  # the optimizer alone: f32
                out.apply = lower_precision(graphs.apply, precision, 0, 0).graph
        out.evaluates = {k: lower_precision(g, precision).graph for k, g in self.evaluates.items()}
        out.unused_evaluates = {k: lower_precision(g, precision).graph
                                for k, g in self.unused_evaluates.items()}
        if self.diagnostics is not None and self.diagnostics.graph is not None:
            out.diagnostics = lower_precision(self.diagnostics.graph, precision).graph
        self._lowered[precision] = out
        return out
