"""Batch fields used as indices: which field of which loader indexes into what size
(from the traced graphs, `ir.bounds`), checked at `check` against what a loader's
declaration says about its values (mnist1d's 10 labels, a text's :vocab-size), and
handed to the runtime, whose loaders check the data itself as it enters."""

from __future__ import annotations

from sexpgpu.contract.compiled import CompiledExperiment
from sexpgpu.contract.experiment import Experiment
from sexpgpu.data.errors import E_DATA
from sexpgpu.data.spec import FieldBound, LoaderSpec
from sexpgpu.diagnostics import Note, error
from sexpgpu.ir.bounds import IndexBound, both, index_bounds
from sexpgpu.ir.graph import Graph

MNIST1D_CLASSES = 10
TEXT_BYTES = 256


def loader_bounds(exp: Experiment, compiled: CompiledExperiment
                  ) -> dict[str, dict[str, IndexBound]]:
    """Loader name -> batch field -> the tightest bound any graph fed by it puts on it."""
    fed: list[tuple[str, Graph]] = []
    if exp.run is not None:
        fed += [(exp.run.train_loader, g) for g in compiled.step_graphs()]
    fed += [(spec.loader, compiled.evaluates[spec.name]) for spec in exp.evals
            if spec.name in compiled.evaluates]
    out: dict[str, dict[str, IndexBound]] = {}
    for loader, graph in fed:
        data = {v.name for v in graph.inputs if v.role == "data"}
        for name, bound in index_bounds(graph).items():
            if name not in data:
                continue
            field = name.removeprefix("data/")
            fields = out.setdefault(loader, {})
            fields[field] = both(fields.get(field), bound)
    return out


def runtime_bounds(bounds: dict[str, dict[str, IndexBound]]) -> dict[str, dict[str, FieldBound]]:
    """The same bounds as plain data for the RunPlan (the loaders check with them)."""
    return {loader: {field: FieldBound(b.low, b.high, b.use, str(b.span) if b.span else "")
                     for field, b in fields.items()}
            for loader, fields in bounds.items()}


def declared_ranges(spec: LoaderSpec) -> dict[str, tuple[int, int, str]]:
    """Batch field -> (low, high, what) for the integer fields whose values the
    declaration alone bounds, without reading data."""
    opts = spec.options
    src: dict[str, tuple[int, int, str]] = {}
    if spec.source == "mnist1d":
        src["y"] = (0, MNIST1D_CLASSES, "mnist1d's digit labels")
    elif spec.source == "synthetic" and str(opts.get("task", "")) == "classes":
        k = int(opts.get("classes", 4))
        src["y"] = (0, k, f"the labels of synthetic :classes {k}")
    elif spec.source == "synthetic" and str(opts.get("task", "")) == "parity":
        src["y"] = (0, 2, "parity labels")
    elif spec.source in ("text", "tokens"):
        vocab = opts.get("vocab_size")
        if vocab is not None:
            what = (0, int(vocab), f"token ids of :vocab-size {int(vocab)}")
        elif spec.source == "text" and str(opts.get("vocab", "char")) == "byte":
            what = (0, TEXT_BYTES, "byte ids (:vocab :byte)")
        else:
            return {}
        src = {"x": what, "y": what}
    if spec.fields:
        return {out: src[name] for out, name in spec.fields.items() if name in src}
    return src


def check_declared_ranges(exp: Experiment, bounds: dict[str, dict[str, IndexBound]]) -> None:
    """E-DATA at check when a loader's declared values do not fit what the model indexes
    with them (labels 0..9 into a one-hot of 8, a :vocab-size above the embedding's rows)."""
    for spec in exp.loaders:
        declared = declared_ranges(spec)
        for field, bound in bounds.get(spec.name, {}).items():
            if field not in declared:
                continue
            low, high, what = declared[field]
            if bound.low <= low and high <= bound.high:
                continue
            raise error(
                E_DATA, f"defloader {spec.name}: `{field}` takes values {low}..{high - 1} "
                f"({what}), but the model uses it as a {bound.use}", bound.span,
                expected=f"`{field}` in {bound.low}..{bound.high - 1}",
                actual=f"{low}..{high - 1} ({what})",
                fix=f"size the model for {high} (the knob that sets the classes or vocabulary), "
                f"or map the values into {bound.low}..{bound.high - 1}",
                notes=[*bound.notes, Note(f"the data comes from loader {spec.name}",
                                          exp.span("defloader", spec.name))])
