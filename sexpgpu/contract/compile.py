"""The compiler's front half: read the run file, check its shape, bind the selection,
evaluate it with the contract forms and tensor builtins installed, then trace the
training and evaluate graphs. `check`, `explain`, `ir` and `run` all start here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sexpgpu import gcpause
from sexpgpu.contract.collect import E_LOADER, E_RUN, Collector
from sexpgpu.contract.compiled import CompiledExperiment
from sexpgpu.contract.experiment import Experiment
from sexpgpu.contract.fields import Field, batch_fields
from sexpgpu.contract.forms import FileShape, check_shape, read_forms
from sexpgpu.contract.indices import check_declared_ranges, loader_bounds
from sexpgpu.data.spec import LoaderSpec
from sexpgpu.diagnostics import Diagnostic, Span, error
from sexpgpu.lisp.interp import Interpreter
from sexpgpu.lisp.types import intern
from sexpgpu.record import replace
from sexpgpu.selection import Binder, Selection
from sexpgpu.suggest import did_you_mean
from sexpgpu.trace.builtins import BUILTINS, generic, numbers_first
from sexpgpu.trace.expect import EXPECT_BUILTINS
from sexpgpu.trace.health import DIAGNOSTIC_BUILTINS, trace_diagnostics
from sexpgpu.trace.model import ModelBuilder
from sexpgpu.trace.numerics import NUMERICS_BUILTINS
from sexpgpu.trace.optimizer import check_lr, ctx_ref, expect_rank
from sexpgpu.trace.scan import scan
from sexpgpu.trace.site import site_provider
from sexpgpu.trace.step import Tracer
from sexpgpu.trace.tensor import TracedTensor, set_site_provider

PACKAGE = Path(__file__).resolve().parent.parent
FORMS_FILE = PACKAGE / "contract" / "forms.sx"


def make_interpreter(stdout: Any = None) -> Interpreter:
    """An interpreter with the tensor builtins, the generic-op hook and the contract forms."""
    interp = Interpreter(stdout=stdout if stdout is not None else sys.stderr)
    for name, fn in {**BUILTINS, **DIAGNOSTIC_BUILTINS, **EXPECT_BUILTINS,
                     **NUMERICS_BUILTINS}.items():
        previous = interp.functions.get(intern(name.upper()))
        # a tensor op named as a CL function (floor, round, sort) is CL's on numbers
        interp.builtin(name)(fn if previous is None else numbers_first(fn, previous, interp))
    interp.builtin("ctx-ref")(ctx_ref)
    interp.builtin("expect-rank")(expect_rank)
    interp.builtin("scan", interp=True)(scan)
    fallback = interp.generic_op

    def generic_op(name: str, args: list, span: Any) -> Any:
        for a in args:  # (a loop, not any(): arithmetic on tensors comes through here)
            if isinstance(a, TracedTensor):
                return generic(name, *args)
        return fallback(name, args, span)

    interp.generic_op = generic_op
    set_site_provider(site_provider(interp))
    interp.load(FORMS_FILE.read_text(encoding="utf-8"), str(FORMS_FILE), library=True)
    return interp


def evaluate_file(path: str, selection: Selection | None = None
                  ) -> tuple[Experiment, Collector, FileShape, Interpreter]:
    """Read, check the file's shape, bind the selection and evaluate every form."""
    selection = selection or Selection()
    text, forms = read_forms(path)
    shape = check_shape(forms, path)
    binder = Binder(shape.decls, selection)
    interp = make_interpreter()
    interp.sources[path] = text
    exp = Experiment(path, shape.decls, spans=shape.spans)
    collector = Collector(exp, binder, interp)
    collector.install()
    interp.eval_forms(forms)
    return exp, collector, shape, interp


def compile_file(path: str, selection: Selection | None = None, *, trace: bool = True,
                 diagnostics: list[str] | None = None, data_base: Path | None = None,
                 predict_batch: int | None = None) -> CompiledExperiment:
    """Evaluate the run file, then (unless `trace` is false) trace every graph;
    `diagnostics`: the `--diag` patterns, traced into one more graph. `data_base`: where
    relative data paths start (default: the run file's directory; a run directory's
    copy of the source names the original's). `predict_batch`: the rows of the
    defpredict graph (default: the training loader's batch)."""
    with gcpause.paused():  # many objects, few cycles: the collector's passes are waste
        return _compile(path, selection or Selection(), trace, diagnostics, data_base,
                        predict_batch)


def _compile(path: str, selection: Selection, trace: bool, diagnostics: list[str] | None,
             data_base: Path | None, predict_batch: int | None) -> CompiledExperiment:
    exp, collector, shape, interp = evaluate_file(path, selection)
    compiled = CompiledExperiment(exp, selection, sources=dict(interp.sources))
    if not trace:
        return compiled
    model_name = exp.top_model or shape.models[-1]
    constructor = _model(interp, exp, shape, model_name)
    models: ModelBuilder = collector.models
    tracer = Tracer(interp, models, constructor, model_name)
    run = exp.run
    assert run is not None and exp.optimizer is not None  # required forms, checked
    base = Path(data_base or Path(path).resolve().parent)
    train_loader = exp.loader(run.train_loader)
    assert train_loader is not None
    for spec in exp.loaders:
        span = exp.span("defloader", spec.name)
        compiled.fields[spec.name] = batch_fields(spec, base, span, compiled.warnings)
        _check_stages(spec, compiled.fields[spec.name], base, span, compiled.warnings)
    compiled.graphs = tracer.train(exp.objective, exp.optimizer,
                                   compiled.fields[train_loader.name], train_loader.batch,
                                   run.microbatches, exp.span("defobjective"))
    if run.procs > 1:  # data parallel: each process accumulates its shard's gradients,
        # the apply graph averages the sum over every process's microbatches
        compiled.parallel = tracer.train(exp.objective, exp.optimizer,
                                         compiled.fields[train_loader.name], train_loader.batch,
                                         run.microbatches * run.procs,
                                         exp.span("defobjective"))
    if not exp.optimizer.allow_nonpositive_lr:
        update_graph = compiled.graphs.step or compiled.graphs.apply
        for group, lr in compiled.graphs.learning_rates:
            check_lr(group, lr, update_graph, run.steps, run.microbatches)
    if diagnostics:  # `--diag` patterns: one more graph, only for the selected names
        compiled.diagnostics = trace_diagnostics(
            tracer, exp.objective, exp.optimizer, compiled.graphs.groups,
            # one process's first microbatch (with several, rank 0 samples its own)
            compiled.fields[train_loader.name],
            train_loader.batch // (run.microbatches * run.procs),
            exp.span("defobjective"), diagnostics)
    traced: set[str] = set()
    for spec in exp.evals:
        fn_name = exp.eval_functions.get(spec.name, "default")
        loader = exp.loader(spec.loader)
        assert loader is not None
        compiled.evaluates[spec.name] = tracer.evaluate(
            spec.name, exp.evaluates[fn_name], compiled.fields[loader.name], loader.batch,
            exp.span("defevaluate", fn_name))
        traced.add(fn_name)
    for fn_name, fn in exp.evaluates.items():
        if fn_name not in traced:  # no defeval runs it: still check it, on a training batch
            compiled.unused_evaluates[fn_name] = tracer.evaluate(
                fn_name, fn, compiled.fields[train_loader.name], train_loader.batch,
                exp.span("defevaluate", fn_name))
    if exp.predict is not None:
        compiled.predict = tracer.predict(exp.predict, compiled.fields[train_loader.name],
                                          predict_batch or train_loader.batch,
                                          exp.span("defpredict"))
    compiled.params = list(models.specs.values())
    compiled.aliases = dict(models.aliases)
    compiled.warnings += tracer.warnings
    _check_targets(exp, compiled)
    compiled.bounds = loader_bounds(exp, compiled)
    check_declared_ranges(exp, compiled.bounds)
    return compiled


def _check_targets(exp: Experiment, compiled: CompiledExperiment) -> None:
    """A target names a metric the run reports: `EVAL/NAME` an output of that eval's
    graph, `train/NAME` (or `NAME`) an output of the training step. Otherwise it would
    end every run with `actual: null`."""
    step = sorted({name for g in compiled.step_graphs() for name in g.outputs})
    known = [f"train/{name}" for name in step] + step
    for spec in exp.evals:
        known += [f"{spec.name}/{name}" for name in compiled.evaluates[spec.name].outputs]
    for target in exp.targets:
        if target.metric in known:
            continue
        head, _, name = target.metric.rpartition("/")
        family = [k for k in known if k.startswith(f"{head or 'train'}/")]
        started = [k for k in family if k.rpartition("/")[2].startswith(name)]
        fix = (f"did you mean `{started[0]}`?" if len(started) == 1
               else did_you_mean(target.metric, family or known))
        raise error(E_RUN, f"deftarget {target.metric}: no metric `{target.metric}`",
                    exp.span("deftarget", target.metric),
                    expected="one of: " + ", ".join(family or known), actual=target.metric,
                    fix=fix)


def _check_stages(spec: LoaderSpec, fields: dict[str, Field], base: Path,
                  span: Span | None, warnings: list[Diagnostic]) -> None:
    """A curriculum stage may switch the source, not the shape of a sample: the step
    graph is compiled once."""
    for stage in spec.stages:
        if stage.batch is not None and stage.batch != spec.batch:
            raise error(E_LOADER, f"defloader {spec.name}: stage from step {stage.start} "
                        "changes the batch", span, expected=f":batch {spec.batch}",
                        actual=f":batch {stage.batch}",
                        fix="keep the batch; change :microbatches in defrun instead")
        if stage.source is None:
            continue
        staged = batch_fields(replace(spec, source=stage.source, options=stage.options,
                                      stages=[]), base, span, warnings)
        if staged != fields:
            raise error(E_LOADER, f"defloader {spec.name}: stage from step {stage.start} "
                        "changes the batch fields", span, expected=_show_fields(fields),
                        actual=_show_fields(staged),
                        fix="keep every stage's samples the same shape (e.g. the same :context)")


def _show_fields(fields: dict[str, Field]) -> str:
    return ", ".join(f"{k} {d}{list(s)}" for k, (s, d) in fields.items())


def _model(interp: Interpreter, exp: Experiment, shape: FileShape, name: str) -> Any:
    fn = interp.functions.get(intern(name.upper()))
    if fn is None or name not in shape.models:
        raise error(E_RUN, f"no defmodel named `{name}` in the run file", exp.span("defrun"),
                    expected=f"one of: {', '.join(shape.models)}", actual=name,
                    fix=did_you_mean(name, shape.models))
    return fn
