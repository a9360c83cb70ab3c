"""Run diagnostics at trace time (training-health numbers, docs/diagnostics.md; not the
error reports of sexpgpu.diagnostics): `(diagnostic NAME EXPR :reduce R)`, the built-in set
and the one extra graph computing what `--diag` selects; no other graph gains a node."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fnmatch import fnmatchcase
from typing import Any

from sexpgpu.diagnostics import Diagnostic, Span, define_code, error
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph, Value
from sexpgpu.ir.types import FLOAT_DTYPES
from sexpgpu.lisp.types import MV, NIL, Symbol
from sexpgpu.record import factory, record
from sexpgpu.suggest import did_you_mean, nearest
from sexpgpu.trace import args as A
from sexpgpu.trace.builtins import registrar
from sexpgpu.trace.model import ModelBuilder
from sexpgpu.trace.optimizer import Group, OptimizerSetup, clip_grads
from sexpgpu.trace.step import Fields, Tracer
from sexpgpu.trace.tensor import TracedTensor, current, site

E_DIAG = define_code(
    "E-DIAG", "bad diagnostic",
    "`(diagnostic NAME EXPR :reduce R)` records EXPR, reduced to one number, when `--diag` "
    "selects it. NAME is a symbol; EXPR a tensor (or a number); R one of :mean :rms :max "
    ":min :norm :none, where :none needs EXPR to be a scalar already. `--diag-every N` "
    "needs a positive N and at least one `--diag PATTERN`.",
)
W_DIAG_NOMATCH = define_code(
    "W-DIAG-NOMATCH", "--diag pattern matches no diagnostic",
    "A `--diag PATTERN` (a glob over diagnostic names such as `grad-norm/*`) matched none "
    "of the diagnostics this run file offers. The run goes on with the other patterns; the "
    "warning lists the families that exist (see docs/diagnostics.md for the names).",
)

REDUCES = ("mean", "rms", "max", "min", "norm", "none")

# the `diagnostic` macro's builtins; the contract compiler installs them with the others
DIAGNOSTIC_BUILTINS: dict[str, Callable[..., Any]] = {}
builtin = registrar(DIAGNOSTIC_BUILTINS)


# -- recording while the diagnostics graph is traced ----------------------------


@record
class _Series:
    """One diagnostic name: a partial value per time its site ran, combined at the end."""

    reduce: str
    parts: list[Value] = factory(list)
    span: Span | None = None


class Recorder:
    """Collects diagnostics while the forward pass of the diagnostics graph is traced;
    `scopes` is the model path of each child forward currently running."""

    def __init__(self, interp: Any):
        self.interp = interp
        self.series: dict[str, _Series] = {}
        self.scopes: list[str] = []

    def name(self, label: str) -> str:
        """NAME, then the scope of the child model it ran in: `attn-entropy/blocks/0/attn`."""
        scope = self.scopes[-1] if self.scopes else ""
        return f"{label}/{scope}" if scope else label

    def add(self, name: str, value: Value, reduce: str, span: Span | None) -> None:
        g = current("diagnostic").graph
        series = self.series.setdefault(name, _Series(reduce, span=span))
        if series.reduce != reduce:
            raise error(E_DIAG, f"diagnostic {name} recorded with two reductions", span,
                        expected=f":reduce :{series.reduce}", actual=f":reduce :{reduce}",
                        fix="give the two diagnostics different names")
        with g.at(span):
            series.parts.append(_partial(g, _as_float(g, value), reduce))

    def finish(self, g: Graph, name: str) -> Value:
        """Combine the partials of every call (a cell run per time step, a shared layer)."""
        series = self.series[name]
        with g.at(series.span):
            return _combine(g, series.parts, series.reduce)


_ACTIVE: list[Recorder] = []


@contextmanager
def recording(recorder: Recorder, models: ModelBuilder) -> Iterator[Recorder]:
    """`diagnostic` forms record into `recorder`, and each child model's forward is
    wrapped to keep its scope on the recorder (see `_Forward`)."""
    _ACTIVE.append(recorder)
    models.forward_hook = lambda forward, scope: _Forward(recorder, forward, scope)
    try:
        yield recorder
    finally:
        models.forward_hook = None
        _ACTIVE.pop()


def active_recorder() -> Recorder | None:
    return _ACTIVE[-1] if _ACTIVE else None


def _as_float(g: Graph, v: Value) -> Value:
    return v if v.dtype == "f32" else g.apply("cast", v, dtype="f32")


def _all(g: Graph, op: str, v: Value) -> Value:
    return g.apply(op, v, axes=None, keepdims=False)


def _partial(g: Graph, v: Value, reduce: str) -> Value:
    """What one call contributes: mean, mean square (rms), sum of squares (norm), ..."""
    if reduce == "mean":
        return build.mean(g, v)
    if reduce == "rms":
        return build.mean(g, g.apply("square", v))
    if reduce == "norm":
        return _all(g, "sum", g.apply("square", v))
    if reduce == "max":
        return _all(g, "amax", v)
    if reduce == "min":
        return _all(g, "amin", v)
    return v  # none: already a scalar (checked by the builtin)


def _combine(g: Graph, parts: list[Value], reduce: str) -> Value:
    if reduce in ("max", "min"):
        out = parts[0]
        for part in parts[1:]:
            out = g.apply("maximum" if reduce == "max" else "minimum", out, part)
        return out
    total = parts[0]
    for part in parts[1:]:
        total = g.apply("add", total, part)
    if reduce != "norm" and len(parts) > 1:  # the mean over calls
        total = g.apply("div", total, build.scalar(g, float(len(parts)), "f32"))
    return g.apply("sqrt", total) if reduce in ("rms", "norm") else total


# -- the builtins the `diagnostic` macro expands into ------------------------------


def _label(name: Any) -> str:
    if isinstance(name, Symbol) and not name.is_keyword:
        return name.name.lower()
    if isinstance(name, str) and name:
        return name
    span, notes = site()
    raise error(E_DIAG, "diagnostic name must be a symbol", span, expected="(diagnostic NAME "
                "EXPR ...) with NAME a symbol", actual=A.show(name),
                fix="(diagnostic h-rms h :reduce :rms)", notes=list(notes))


def _reduce(reduce: Any) -> str:
    label = A.kw_name(reduce) if A.is_keyword(reduce) else None
    if label in REDUCES:
        return label
    span, notes = site()
    raise error(E_DIAG, "unknown diagnostic reduction", span,
                expected=" ".join(f":{r}" for r in REDUCES),
                actual=f":{label}" if label is not None else A.show(reduce),
                fix=did_you_mean(str(label or A.show(reduce)), list(REDUCES)), notes=list(notes))


@builtin("%diagnostic-wanted")
def diagnostic_wanted(name: Any, reduce: Any) -> Any:
    """True only while the diagnostics graph is traced: otherwise the `diagnostic` form
    does not even evaluate its EXPR, so the step graph gains no node."""
    _label(name)
    _reduce(reduce)
    return A.boolean(active_recorder() is not None)


@builtin("%diagnostic")
def diagnostic(name: Any, value: Any, reduce: Any) -> Any:
    recorder = active_recorder()
    if recorder is None:
        return NIL
    label, how = _label(name), _reduce(reduce)
    span, notes = site()
    if isinstance(value, TracedTensor):
        v = value.value
    elif A.is_number(value):
        v = build.scalar(current("diagnostic").graph, float(value), "f32")
    else:
        raise error(E_DIAG, f"diagnostic {label} is not a tensor", span,
                    expected="a tensor or a number", actual=A.show(value),
                    fix=f"(diagnostic {label} (mean x)) with x a tensor", notes=list(notes))
    if how == "none" and v.shape != ():
        raise error(E_DIAG, f"diagnostic {label} with :reduce :none is not a scalar", span,
                    expected="shape ()", actual=f"shape {v.shape}",
                    fix=":reduce :mean (or :rms, :max, :min, :norm)", notes=list(notes))
    recorder.add(recorder.name(label), v, how, span)
    return NIL


# -- child forwards: act-rms and the scope of user diagnostics ---------------------------


class _Forward:
    """A child model's forward function, traced inside the diagnostics graph: it keeps
    the child's path on the recorder while it runs and records the RMS of its output."""

    def __init__(self, recorder: Recorder, fn: Any, scope: Any):
        self.recorder, self.fn, self.scope = recorder, fn, scope

    def __call__(self, *args: Any) -> Any:
        path = "/".join(self.scope.parts())  # known once construction finished
        self.recorder.scopes.append(path)
        try:
            out = self.recorder.interp.apply(self.fn, list(args))
        finally:
            self.recorder.scopes.pop()
        first = out[0] if type(out) is MV and out else out
        if path and isinstance(first, TracedTensor) and first.dtype in FLOAT_DTYPES:
            self.recorder.add(f"act-rms/{path}", first.value, "rms", site()[0])
        return out


# -- the diagnostics graph -----------------------------------------------------------


@record
class DiagGraph:
    """What `--diag` selected: `graph` (None when nothing matched) outputs exactly `names`
    and updates nothing; `available` is every name the run file offers."""

    graph: Graph | None
    names: list[str]
    available: list[str]
    warnings: list[Diagnostic] = factory(list)


def _norm(g: Graph, v: Value) -> Value:
    return g.apply("sqrt", _all(g, "sum", g.apply("square", v)))


def trace_diagnostics(tracer: Tracer, objective: Any, setup: OptimizerSetup,
                      groups: list[Group], fields: Fields, batch: int, span: Span | None,
                      patterns: list[str]) -> DiagGraph:
    """Forward and backward of the objective on one (micro)batch, with every diagnostic
    site recording; then outputs for the names `patterns` select, and only their nodes."""
    g = Graph("diagnostics")
    recorder = Recorder(tracer.interp)
    with recording(recorder, tracer.models):
        _, _, params, grads = tracer.forward_backward(g, objective, fields, batch, span)
    updates: dict[Value, Value] = {}

    def updated(p: Value) -> Value:
        """The optimizer's new value of `p` this step (traced once, for all parameters)."""
        if not updates:
            tracer.update(g, setup, params, grads, groups)
            updates.update(g.updates)
            g.updates.clear()  # the diagnostics graph never writes back
        return updates[p]

    def ratio(p: Value) -> Value:
        return g.apply("div", _norm(g, g.apply("sub", updated(p), p)), _norm(g, p))

    makers: dict[str, Callable[[], Value]] = {"grad-norm": lambda: clip_grads(g, grads, None)[1]}
    for p, gr in zip(params, grads):
        makers[f"grad-norm/{p.name}"] = lambda gr=gr: _norm(g, gr)
        makers[f"update-ratio/{p.name}"] = lambda p=p: ratio(p)
        makers[f"weight-norm/{p.name}"] = lambda p=p: _norm(g, p)
    for name, series in recorder.series.items():
        if name in makers:
            raise error(E_DIAG, f"diagnostic {name} shadows a built-in one", series.span,
                        expected="a name that is not a built-in diagnostic",
                        actual=name, fix=f"rename it, e.g. my-{name}")
        makers[name] = lambda name=name: recorder.finish(g, name)
    available = list(makers)
    selected = [n for n in available if any(fnmatchcase(n, pat) for pat in patterns)]
    warnings = [_no_match(pat, available) for pat in patterns
                if not any(fnmatchcase(n, pat) for n in available)]
    if not selected:
        return DiagGraph(None, [], available, warnings)
    outputs = {}
    with g.at(span):
        for name in selected:
            outputs[name] = makers[name]()
    g.outputs = outputs
    return DiagGraph(prune(g), selected, available, warnings)


def families(names: list[str]) -> list[str]:
    """`grad-norm/l1/weight`, `grad-norm/l2/weight` -> `grad-norm/* (2)`."""
    counts: dict[str, int] = {}
    for name in names:
        head, sep, _ = name.partition("/")
        key = f"{head}/*" if sep else head
        counts[key] = counts.get(key, 0) + 1
    return [k if n == 1 and not k.endswith("/*") else f"{k} ({n})" for k, n in counts.items()]


def _no_match(pattern: str, available: list[str]) -> Diagnostic:
    heads = sorted({n.partition("/")[0] for n in available})
    near = nearest(pattern.partition("/")[0].rstrip("*"), heads)
    fix = (f"did you mean `{near}*`?" if near else
           "quote the pattern so the shell does not expand it: --diag 'grad-norm/*'")
    return Diagnostic(W_DIAG_NOMATCH, f"--diag {pattern} matches no diagnostic",
                      expected=", ".join(families(available)), actual=pattern, fix=fix)


def prune(g: Graph) -> Graph:
    """A graph of only the nodes and inputs the outputs need (a copy; the nodes are shared)."""
    needed: set[int] = set()
    stack = [v.node for v in g.outputs.values() if v.node is not None]
    while stack:
        node = stack.pop()
        if node.id not in needed:
            needed.add(node.id)
            stack.extend(v.node for v in node.inputs if v.node is not None)
    out = Graph(g.name)
    out.nodes = [n for n in g.nodes if n.id in needed]
    used = {id(v) for n in out.nodes for v in n.inputs if v.node is None}
    used |= {id(v) for v in g.outputs.values() if v.node is None}
    out.inputs = [v for v in g.inputs if id(v) in used]
    out.outputs = dict(g.outputs)
    return out
