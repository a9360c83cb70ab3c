"""The graphs of a run: the training step (forward, backward, clipping, optimizer
update), or for microbatches > 1 an accumulate graph and an apply graph; and one
evaluate graph per defeval. Inputs carry roles: param, state, data, ctx, rng."""

from __future__ import annotations

from typing import Any

from sexpgpu.autodiff.grad import Backward, backward
from sexpgpu.diagnostics import Diagnostic, Note, SexpError, Span, define_code, error
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph, Value
from sexpgpu.lisp.types import keyword
from sexpgpu.record import factory, record
from sexpgpu.trace.args import E_ARG, show
from sexpgpu.trace.model import ModelBuilder
from sexpgpu.trace.optimizer import (
    Ctx,
    Group,
    OptimizerSetup,
    check_hyper,
    clip_grads,
    resolve_hyper,
    trace_updates,
)
from sexpgpu.trace.tensor import Trace, TracedTensor, tracing

E_LOSS = define_code(
    "E-LOSS", "objective does not return a scalar loss",
    "`defobjective` must return the loss to minimise: a float tensor of shape (). "
    "Reduce per-example losses with `mean` (or `sum`).",
)
E_METRIC = define_code(
    "E-METRIC", "bad metric",
    "`(metric NAME EXPR)` records a scalar: EXPR must reduce to shape (); a name is used "
    "once per function; metrics only appear inside defobjective and defevaluate.",
)
E_NO_GRADIENT = define_code(
    "E-NO-GRADIENT", "the loss has no gradient path to any parameter",
    "Training follows the gradient of the loss with respect to the parameters. This "
    "loss does not depend on any parameter through differentiable ops: it is computed "
    "from the data alone, or every path from the model's output passes through argmax, "
    "a comparison, a cast to an integer, stop-gradient or another op whose gradient is "
    "zero. The step would run with grad_norm 0 and change nothing.",
)
E_PREDICT = define_code(
    "E-PREDICT", "no usable defpredict",
    "`sample`, `predict` and `load_run` run the forward alone: the run file's "
    "`(defpredict (model &key x) (model x))`, which must return one tensor whose first "
    "axis is the batch (a language model's logits (B T vocab), a classifier's (B classes)).",
)
W_PARAM_NO_GRADIENT = define_code(
    "W-PARAM-NO-GRADIENT", "parameter gets no gradient",
    "The loss has no gradient path to this parameter (it is not used by the objective, "
    "or only through ops without a gradient), so training never changes it. Intended "
    "for a frozen parameter; otherwise a sign that part of the model is disconnected.",
)

Fields = dict[str, tuple[tuple[int, ...], str]]


@record
class Sections:
    """Where forward ends and backward ends in a step graph's node list (for `ir`)."""

    forward: int = 0
    backward: int = 0


@record
class StepGraphs:
    step: Graph | None = None            # microbatches == 1
    accumulate: Graph | None = None      # microbatches > 1
    apply: Graph | None = None
    sections: dict[str, Sections] = factory(dict)
    groups: list[Group] = factory(list)
    learning_rates: list[tuple[Group, Any]] = factory(list)  # resolved :lr


class Tracer:
    """Traces the experiment's functions into graphs with one ModelBuilder."""

    def __init__(self, interp: Any, models: ModelBuilder, constructor: Any, model_name: str):
        self.interp = interp
        self.models = models
        self.constructor = constructor
        self.model_name = model_name
        self.warnings: list[Diagnostic] = []  # W- diagnostics found while tracing

    def _forward(self) -> Any:
        return self.models.instantiate(self.constructor, self.interp.call, self.model_name)

    def _data(self, g: Graph, fields: Fields, batch: int, fn: Any,
              span: Span | None) -> list[Any]:
        """The batch fields as keyword arguments: those the function's lambda list
        names (all of them when it takes &allow-other-keys or is not a closure)."""
        wanted = _keywords(fn)
        if wanted is not None:
            missing = [k for k in wanted if k not in fields]
            if missing:
                raise error(E_ARG, f"the function takes :{missing[0]}, which no batch field "
                            "provides", span, expected="keywords among: "
                            + " ".join(f":{k}" for k in fields), actual=f":{missing[0]}",
                            fix="name the loader's fields with :fields, or drop the keyword")
        args: list[Any] = []
        for name, (shape, dtype) in fields.items():
            if wanted is not None and name not in wanted:
                continue
            value = g.input(f"data/{name}", (batch,) + tuple(shape), dtype, role="data")
            args += [keyword(name.upper()), TracedTensor(value)]
        return args

    def _loss(self, g: Graph, fn: Any, forward: Any, data: list[Any], span: Span | None) -> Value:
        loss = self.interp.call(fn, forward, *data)
        if not isinstance(loss, TracedTensor) or loss.shape != () or not loss.value.type.is_float:
            actual = (f"{loss.dtype} tensor of shape {loss.shape}" if isinstance(loss, TracedTensor)
                      else show(loss))
            raise error(E_LOSS, "the objective must return a float scalar", span,
                        expected="a float tensor of shape ()", actual=actual,
                        fix="reduce the per-example losses with (mean ...)")
        return loss.value

    # -- training ---------------------------------------------------------------

    def forward_backward(self, g: Graph, objective: Any, fields: Fields, batch: int,
                         span: Span | None) -> tuple[Trace, Value, list[Value], list[Value]]:
        trace = Trace(g, "train")
        with tracing(trace):
            forward = self._forward()
            data = self._data(g, fields, batch, objective, span)
            loss = self._loss(g, objective, forward, data, span)
        params = g.params()
        with g.at(span):
            result = backward(g, loss, params)
        self._gradient_paths(result, params, span)
        return trace, loss, params, [result.grads[p] for p in params]

    def _gradient_paths(self, result: Backward, params: list[Value], span: Span | None) -> None:
        """E-NO-GRADIENT when no parameter has a gradient path to the loss (training
        would change nothing); W-PARAM-NO-GRADIENT for each parameter that has none."""
        if not result.unreached:
            return
        notes = [Note(f"the gradient stops at {node.op}", node.span)
                 for node in result.cuts[:3]]
        stops = sorted({node.op for node in result.cuts})
        why = (f"every path from the parameters passes through {', '.join(stops)} (no "
               "gradient)" if stops else "the loss does not use the parameters")
        if len(result.unreached) == len(params):
            raise error(E_NO_GRADIENT, "the loss has no gradient path to any parameter",
                        span, expected="a loss computed from the model's output through "
                        "differentiable ops", actual=why,
                        fix="return a differentiable loss such as (nn:cross-entropy "
                        "logits y); record argmax-based numbers with (metric NAME ...)",
                        notes=notes)
        for value in result.unreached:
            spec = self.models.specs.get(value.name or "")
            warning = Diagnostic(
                W_PARAM_NO_GRADIENT, f"parameter {value.name} gets no gradient: "
                "training never changes it", spec.span if spec is not None else span,
                expected="a gradient path from the parameter to the loss",
                actual=("used only through " + ", ".join(stops)) if stops
                else "not used by the loss",
                fix="use it in the forward pass, or remove it (stop-gradient freezes on "
                "purpose and leaves this warning)", notes=notes)
            if all(w.message != warning.message for w in self.warnings):
                self.warnings.append(warning)

    def _outputs(self, g: Graph, trace: Trace, loss: Value) -> None:
        g.output("loss", loss)
        for name, value in trace.metrics.items():
            if name != "loss":
                g.output(name, value)

    def update(self, g: Graph, setup: OptimizerSetup, params: list[Value], grads: list[Value],
               groups: list[Group]) -> list[tuple[Group, Any]]:
        """Clip the gradients, then trace each group's update rule per parameter.
        Returns each group's resolved :lr (a number or a traced schedule)."""
        lrs: list[tuple[Group, Any]] = []
        with g.at(setup.span), _at_optimizer(setup.span, self.interp):
            grads, norm = clip_grads(g, grads, setup.clip)
            g.output("grad_norm", norm)
            ctx = Ctx(g)
            by_path = {p.name: (p, gr) for p, gr in zip(params, grads)}
            trace = Trace(g, "train")
            with tracing(trace):
                lr_out: Value | None = None
                for group in groups:
                    hypers = {name: check_hyper(group, name, resolve_hyper(self.interp, v, ctx))
                              for name, v in group.optimizer.hypers.items()}
                    if "lr" in hypers:
                        lrs.append((group, hypers["lr"]))
                    if lr_out is None and "lr" in hypers:
                        lr_out = _scalar(g, hypers["lr"])
                    trace_updates(self.interp, g, group, [by_path[p] for p in group.params],
                                  ctx, list(hypers.values()))
            g.output("lr", lr_out if lr_out is not None else build.scalar(g, 0.0, "f32"))
        return lrs

    def train(self, objective: Any, setup: OptimizerSetup, fields: Fields, batch: int,
              microbatches: int, span: Span | None) -> StepGraphs:
        out = StepGraphs()
        if microbatches == 1:
            g = Graph("train_step")
            trace, loss, params, grads = self.forward_backward(g, objective, fields, batch, span)
            out.sections["train_step"] = Sections(_forward_end(g, loss), len(g.nodes))
            out.groups = setup.assign(list(self.models.specs.values()))
            self._outputs(g, trace, loss)
            out.learning_rates = self.update(g, setup, params, grads, out.groups)
            out.step = g
            return out
        # accumulate: forward + backward on batch/microbatches samples, grads into buffers
        acc = Graph("accumulate")
        trace, loss, params, grads = self.forward_backward(acc, objective, fields,
                                                           batch // microbatches, span)
        out.sections["accumulate"] = Sections(_forward_end(acc, loss), len(acc.nodes))
        for param, grad_ in zip(params, grads):
            buf = acc.input(f"grad/{param.name}", param.shape, param.dtype, role="state")
            acc.update(buf, acc.apply("add", buf, grad_))
        self._outputs(acc, trace, loss)
        out.accumulate = acc
        # apply: the mean of the accumulated gradients through the optimizer, then zero
        app = Graph("apply")
        out.groups = setup.assign(list(self.models.specs.values()))
        app_params, app_grads = [], []
        for param in params:
            p = app.input(param.name or "", param.shape, param.dtype, role="param")
            buf = app.input(f"grad/{param.name}", param.shape, param.dtype, role="state")
            with app.at(span):
                app_grads.append(app.apply("mul", buf, build.scalar(app, 1.0 / microbatches,
                                                                    param.dtype)))
                app.update(buf, build.zeros_like(app, buf))
            app_params.append(p)
        out.learning_rates = self.update(app, setup, app_params, app_grads, out.groups)
        out.apply = app
        return out

    # -- evaluation -------------------------------------------------------------

    def evaluate(self, name: str, fn: Any, fields: Fields, batch: int,
                 span: Span | None) -> Graph:
        g = Graph(f"evaluate/{name}")
        trace = Trace(g, "eval")
        with tracing(trace):
            forward = self._forward()
            data = self._data(g, fields, batch, fn, span)
            self.interp.call(fn, forward, *data)
        if not trace.metrics:
            raise error(E_METRIC, f"evaluate function for `{name}` records no metric", span,
                        expected="(metric NAME EXPR) in the defevaluate body",
                        actual="no metric", fix="(metric accuracy (nn:accuracy logits y))")
        for metric, value in trace.metrics.items():
            g.output(metric, value)
        return g


    def predict(self, fn: Any, fields: Fields, batch: int, span: Span | None) -> Graph:
        """The forward alone (no loss, no backward, no optimizer): the tensor `fn`
        returns for a batch of `batch` rows, as the graph's one output `output`."""
        g = Graph("predict")
        trace = Trace(g, "eval")  # eval mode: dropout off
        with tracing(trace):
            forward = self._forward()
            data = self._data(g, fields, batch, fn, span)
            out = self.interp.call(fn, forward, *data)
        if not isinstance(out, TracedTensor) or len(out.shape) == 0 or out.shape[0] != batch:
            actual = (f"{out.dtype} tensor of shape {out.shape}" if isinstance(out, TracedTensor)
                      else show(out))
            raise error(E_PREDICT, "defpredict must return a tensor with the batch first",
                        span, expected=f"a tensor of shape ({batch} ...)", actual=actual,
                        fix="return the model's output: (defpredict (model &key x) (model x))")
        g.output("output", out.value)
        return g


def _scalar(g: Graph, value: Any) -> Value:
    return value.value if isinstance(value, TracedTensor) else build.scalar(g, float(value), "f32")


class _at_optimizer:  # noqa: N801 - a context manager, used like one
    """Errors raised inside library optimizer code (called from Python, so no user
    form is on the evaluator's stack) are reported at the run file's `optimizer`."""

    def __init__(self, span: Span | None, interp: Any):
        self.span, self.library = span, interp.library_files

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if not isinstance(exc, SexpError) or self.span is None:
            return
        diag = exc.diagnostic
        if diag.span is None or diag.span.file in self.library:
            if diag.span is not None:
                diag.notes.insert(0, Note("in library code", diag.span))
            diag.span = self.span


def _keywords(fn: Any) -> list[str] | None:
    """The keyword names a Lisp closure accepts; None when it accepts any."""
    ll = getattr(fn, "ll", None)
    if ll is None or ll.allow_other or ll.rest is not None:
        return None
    return [key.name.lower() for key, *_ in ll.keys]


def _forward_end(g: Graph, loss: Value) -> int:
    for i, node in enumerate(g.nodes):
        if loss in node.outputs:
            return i + 1
    return len(g.nodes)
