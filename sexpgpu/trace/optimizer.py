"""Optimizers at trace time: `defoptimizer` values, parameter groups (path globs and
facts), schedules as functions of `ctx`, global-norm clipping, and the update rule of
each group traced per parameter into the step graph."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sexpgpu.diagnostics import Span, define_code, error
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph, Value
from sexpgpu.lisp.types import Foreign, Symbol, to_py
from sexpgpu.trace import args as A
from sexpgpu.trace.model import ParamSpec
from sexpgpu.trace.tensor import TracedTensor

E_OPTIMIZER = define_code(
    "E-OPTIMIZER", "bad optimizer configuration",
    "`optimizer` takes a value made by a `defoptimizer` (e.g. `(optim:adamw :lr 1e-3)`), "
    "`:groups` and `:clip`. A group override must name a hyperparameter the optimizer "
    "has; an update rule must return a tensor shaped like its parameter.",
)
E_GROUP_EMPTY = define_code(
    "E-GROUP-EMPTY", "parameter group selects nothing",
    "A `:groups` entry's selector (`:select GLOB` over parameter paths and facts such as "
    "`:ndim 1`) matched no parameter that an earlier group had not already taken. "
    "`sexpgpu explain` lists the parameter paths.",
)
E_CTX = define_code(
    "E-CTX", "unknown ctx field",
    "Schedules and update rules read the training context with `(ctx-ref ctx :field)`; "
    "the fields are :step, :microstep, :epoch, :samples, :tokens and :stage.",
)

CTX_FIELDS = ("step", "microstep", "epoch", "samples", "tokens", "stage")


@dataclass
class OptimizerDef:
    """What `(optim:adamw :lr ...)` returns: hyperparameters, state slots, update rule."""

    name: str
    hypers: dict[str, Any]                        # in lambda-list order; Lisp values
    states: list[tuple[str, dict[str, Any]]]      # (name, options)
    update: Any                                   # Lisp closure (p g ctx *states *hypers)

    def with_overrides(self, overrides: dict[str, Any], span: Span | None) -> OptimizerDef:
        for key in overrides:
            if key not in self.hypers:
                from sexpgpu.selection import did_you_mean

                raise error(E_OPTIMIZER, f"{self.name} has no hyperparameter :{key}", span,
                            expected=" ".join(f":{h}" for h in self.hypers), actual=f":{key}",
                            fix=did_you_mean(key, list(self.hypers)))
        return OptimizerDef(self.name, {**self.hypers, **overrides}, self.states, self.update)


class OptimizerValue(Foreign):
    """The Lisp-visible wrapper of an OptimizerDef."""

    __slots__ = ("spec",)

    def __init__(self, spec: OptimizerDef):
        self.spec = spec

    def __repr__(self) -> str:
        return f"#<optimizer {self.spec.name}>"


@dataclass
class Group:
    select: str | None
    facts: dict[str, Any]
    optimizer: OptimizerDef
    span: Span | None = None
    params: list[str] = field(default_factory=list)

    def matches(self, spec: ParamSpec) -> bool:
        if self.select is not None and not glob_match(self.select, spec.path):
            return False
        for fact, want in self.facts.items():
            if fact == "ndim" and spec.ndim != want:
                return False
            if fact == "min-ndim" and spec.ndim < want:
                return False
        return True

    def label(self) -> str:
        parts = [f":select {self.select!r}"] if self.select else []
        parts += [f":{k} {v}" for k, v in self.facts.items()]
        return " ".join(parts) or "(all other parameters)"


@dataclass
class OptimizerSetup:
    """The run file's `(optimizer ...)`: a default optimizer, groups, clipping."""

    default: OptimizerDef
    groups: list[Group]
    clip: float | None = None
    span: Span | None = None

    def assign(self, specs: list[ParamSpec]) -> list[Group]:
        """Each parameter to the first group that selects it; the rest to the default."""
        rest = Group(None, {}, self.default, self.span)
        for group in self.groups:
            group.params = []
        for spec in specs:
            for group in self.groups:
                if group.matches(spec):
                    group.params.append(spec.path)
                    break
            else:
                rest.params.append(spec.path)
        for group in self.groups:
            if not group.params:
                raise error(E_GROUP_EMPTY, f"group {group.label()} selects no parameter",
                            group.span, expected="a selector matching at least one parameter",
                            actual="paths: " + ", ".join(s.path for s in specs[:8])
                            + (" ..." if len(specs) > 8 else ""),
                            fix="fix the glob or the facts (`sexpgpu explain` lists paths)")
        return self.groups + ([rest] if rest.params else [])


def glob_match(pattern: str, path: str) -> bool:
    """`*` stays inside a path segment, `**` crosses them; a pattern without `/`
    matches the parameter's own name (the last segment)."""
    if "/" not in pattern:
        path = path.rsplit("/", 1)[-1]
    regex = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            regex += ".*"
            i += 2
        elif pattern[i] == "*":
            regex += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            regex += "[^/]"
            i += 1
        else:
            regex += re.escape(pattern[i])
            i += 1
    return re.fullmatch(regex, path) is not None


# -- ctx ------------------------------------------------------------------------


class Ctx(Foreign):
    """The training context: each field a scalar graph input (role "ctx", f32)."""

    __slots__ = ("graph", "values")

    def __init__(self, graph: Graph):
        self.graph = graph
        self.values: dict[str, Value] = {}

    def get(self, name: str) -> Value:
        if name not in CTX_FIELDS:
            from sexpgpu.selection import did_you_mean

            raise error(E_CTX, f"ctx has no field :{name}",
                        expected=" ".join(f":{f}" for f in CTX_FIELDS), actual=f":{name}",
                        fix=did_you_mean(name, list(CTX_FIELDS)))
        if name not in self.values:
            self.values[name] = self.graph.input(f"ctx/{name}", (), "f32", role="ctx")
        return self.values[name]

    def __repr__(self) -> str:
        return "#<ctx>"


def ctx_ref(ctx: Any, field_: Any) -> TracedTensor:
    if not isinstance(ctx, Ctx):
        raise A.fail("ctx-ref: expected the ctx", expected="the ctx argument of a schedule",
                     actual=A.show(ctx))
    name = A.kw_name(field_) if A.is_keyword(field_) else A.show(field_)
    return TracedTensor(ctx.get(name))


def expect_rank(param: Any, rank: Any, who: Any) -> Any:
    """(expect-rank p 2 "muon"): an update rule that only fits some parameters says so."""
    if isinstance(param, TracedTensor) and len(param.shape) == rank:
        return param
    shape = _fmt(param.shape) if isinstance(param, TracedTensor) else A.show(param)
    name = param.value.name if isinstance(param, TracedTensor) else "?"
    raise error(E_OPTIMIZER, f"{who} updates parameters of rank {rank}, not `{name}`",
                expected=f"a parameter with {rank} dimensions", actual=f"{name} {shape}",
                fix="give it another optimizer with a group, e.g. :groups ((:ndim 1 "
                    ":optimizer (optim:adamw :lr 3e-4)))")


def make_optimizer(name: Any, hypers: Any, states: Any, update: Any) -> OptimizerValue:
    """%make-optimizer, the expansion of defoptimizer."""
    plist = to_py(hypers)
    hyper = {A.local_name(k): v for k, v in zip(plist[::2], plist[1::2])}
    slots = []
    for entry in to_py(states):
        items = to_py(entry)
        opts = {A.kw_name(k): v for k, v in zip(items[1::2], items[2::2])}
        slots.append((A.local_name(items[0]), opts))
    label = A.local_name(name) if isinstance(name, Symbol) else str(name)
    return OptimizerValue(OptimizerDef(label, hyper, slots, update))


# -- tracing the update ---------------------------------------------------------


def is_schedule(value: Any) -> bool:
    """A hyperparameter given as a function (of ctx) rather than a value."""
    from sexpgpu.lisp.closures import Closure
    from sexpgpu.lisp.registry import Builtin

    return isinstance(value, (Closure, Builtin))


def resolve_hyper(interp: Any, value: Any, ctx: Ctx) -> Any:
    """A schedule is traced over ctx; any other value (a number, t, nil) stays."""
    return interp.call(value, ctx) if is_schedule(value) else value


def check_hyper(group: Group, name: str, value: Any) -> Any:
    """A resolved hyperparameter is a number, a scalar tensor or t/nil (a flag)."""
    from sexpgpu.lisp.types import NIL, T

    if A.is_number(value) or value is T or value is NIL:
        return value
    if isinstance(value, TracedTensor) and value.shape == ():
        return value
    what = "a schedule returned " if is_schedule(group.optimizer.hypers[name]) else ""
    raise error(E_OPTIMIZER, f"{group.optimizer.name} :{name} is not a number", group.span,
                expected="a number, t/nil, or a schedule giving a scalar",
                actual=what + A.show(value),
                fix=f":{name} 1e-3, or a schedule like (optim:cosine ...)")


def clip_grads(g: Graph, grads: list[Value], clip: float | None) -> tuple[list[Value], Value]:
    """Global-norm clipping (PyTorch's clip_grad_norm_): scale by min(1, clip/(norm+1e-6))."""
    total = None
    for grad in grads:
        sq = g.apply("sum", g.apply("square", grad), axes=None, keepdims=False)
        total = sq if total is None else g.apply("add", total, sq)
    norm = g.apply("sqrt", total) if total is not None else build.scalar(g, 0.0, "f32")
    if clip is None:
        return grads, norm
    coef = g.apply("minimum", build.scalar(g, 1.0, "f32"),
                   g.apply("div", build.scalar(g, float(clip), "f32"),
                           g.apply("add", norm, build.scalar(g, 1e-6, "f32"))))
    return [g.apply("mul", grad, coef) for grad in grads], norm


def trace_update(interp: Any, g: Graph, group: Group, param: Value, grad: Value,
                 ctx: Ctx, hypers: list[Any]) -> dict[str, Value]:
    """One parameter's update: state inputs, the rule, and g.update for param and state."""
    opt = group.optimizer
    states = []
    for name, _opts in opt.states:
        states.append(g.input(f"opt/{param.name}/{name}", param.shape, "f32", role="state"))
    result = interp.call(opt.update, TracedTensor(param), TracedTensor(grad), ctx,
                         *[TracedTensor(s) for s in states], *hypers)
    items = to_py(result)
    new_param = _as_value(g, items[0], param, f"{opt.name}'s update of {param.name}")
    g.update(param, new_param)
    for state, new in zip(states, items[1:]):
        g.update(state, _as_value(g, new, state, f"{opt.name}'s state {state.name}"))
    return {"param": new_param}


def _as_value(g: Graph, x: Any, like: Value, what: str) -> Value:
    if isinstance(x, TracedTensor):
        v = x.value
    elif A.is_number(x):
        v = build.scalar(g, float(x), like.dtype)
    else:
        raise error(E_OPTIMIZER, f"{what} is not a tensor", expected=str(like.type),
                    actual=A.show(x), fix="the update must return the new parameter")
    if v.dtype != like.dtype:
        v = g.apply("cast", v, dtype=like.dtype)
    if v.shape != like.shape:
        try:
            v = g.apply("broadcast_to", v, shape=like.shape)
        except Exception:  # noqa: BLE001 - reported below with both shapes
            raise error(E_OPTIMIZER, f"{what} has the wrong shape", expected=str(like.type),
                        actual=str(v.type), fix="return a tensor shaped like the parameter") \
                from None
    return v


def _fmt(shape: tuple[int, ...]) -> str:
    return "(" + " ".join(str(d) for d in shape) + ")"
