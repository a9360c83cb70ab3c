"""Optimizers at trace time: `defoptimizer` values, parameter groups (path globs and
facts), schedules as functions of `ctx`, global-norm clipping, and the update rule of
each group traced per parameter into the step graph."""

from __future__ import annotations

import re
from typing import Any

from sexpgpu.diagnostics import Span, define_code, error
from sexpgpu.ir import build, scalars
from sexpgpu.ir.graph import Graph, Node, Value, live_nodes
from sexpgpu.ir.reference import run_reference
from sexpgpu.lisp.types import NIL, Foreign, Symbol, T, to_py
from sexpgpu.record import factory, record
from sexpgpu.suggest import did_you_mean
from sexpgpu.trace import args as A
from sexpgpu.trace.model import ParamSpec
from sexpgpu.trace.tensor import TracedTensor

E_OPTIMIZER = define_code(
    "E-OPTIMIZER", "bad optimizer configuration",
    "`optimizer` takes a value made by a `defoptimizer` (e.g. `(optim:adamw :lr 1e-3)`), "
    "`:groups` and `:clip` (a positive number). A group override must name a "
    "hyperparameter the optimizer has; a hyperparameter is a number (or a schedule) or, "
    "when its default is t/nil, a flag; an update rule must return a tensor shaped like "
    "its parameter.",
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

E_LR = define_code(
    "E-LR", "learning rate is not positive",
    "A learning rate of zero changes nothing and a negative one climbs the loss. `check` "
    "rejects an :lr that is a number <= 0, and a schedule whose value (computed at "
    "compile time when it depends only on the step) is negative at some step or zero at "
    "every step. A schedule that reaches zero at its end is fine. To freeze parameters "
    "or ascend on purpose, say so: `(optimizer ... :allow-nonpositive-lr t)`.",
)

CTX_FIELDS = ("step", "microstep", "epoch", "samples", "tokens", "stage")
# the ctx fields a schedule may read and still be computed at compile time
STEP_FIELDS = ("ctx/step", "ctx/microstep")
LR_SAMPLES = 33  # steps at which a schedule is computed: evenly spaced, ends included


@record
class OptimizerDef:
    """What `(optim:adamw :lr ...)` returns: hyperparameters, state slots, update rule."""

    name: str
    hypers: dict[str, Any]                        # in lambda-list order; Lisp values
    states: list[tuple[str, dict[str, Any]]]      # (name, options)
    update: Any                                   # Lisp closure (p g ctx *states *hypers)
    kinds: dict[str, str] = factory(dict)  # hyper -> "number" | "flag"

    def live_states(self) -> list[str]:
        """The state slots a parameter has: each, but one `:unless-zero H` while the
        hyperparameter H is the number 0 (plain SGD keeps no momentum buffer)."""
        return [name for name, opts in self.states
                if not _is_zero(self.hypers.get(opts.get("unless-zero")))]

    def with_overrides(self, overrides: dict[str, Any], span: Span | None) -> OptimizerDef:
        for key in overrides:
            if key not in self.hypers:
                raise error(E_OPTIMIZER, f"{self.name} has no hyperparameter :{key}", span,
                            expected=" ".join(f":{h}" for h in self.hypers), actual=f":{key}",
                            fix=did_you_mean(key, list(self.hypers)))
        return OptimizerDef(self.name, {**self.hypers, **overrides}, self.states, self.update,
                            self.kinds)


class OptimizerValue(Foreign):
    """The Lisp-visible wrapper of an OptimizerDef."""

    __slots__ = ("spec",)

    def __init__(self, spec: OptimizerDef):
        self.spec = spec

    def __repr__(self) -> str:
        return f"#<optimizer {self.spec.name}>"


@record
class Group:
    select: str | None
    facts: dict[str, Any]
    optimizer: OptimizerDef
    span: Span | None = None
    params: list[str] = factory(list)

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


@record
class OptimizerSetup:
    """The run file's `(optimizer ...)`: a default optimizer, groups, clipping."""

    default: OptimizerDef
    groups: list[Group]
    clip: float | None = None
    span: Span | None = None
    allow_nonpositive_lr: bool = False   # :allow-nonpositive-lr t: freezing/ascent on purpose

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


def make_optimizer(name: Any, hypers: Any, states: Any, update: Any,
                   defaults: Any = NIL) -> OptimizerValue:
    """%make-optimizer, the expansion of defoptimizer; `defaults`: each hyperparameter's
    default form as written, which gives its kind (a number literal: numeric; t or nil:
    a flag). `lr` is numeric whatever its default: the step reports it."""
    plist = to_py(hypers)
    hyper = {A.local_name(k): v for k, v in zip(plist[::2], plist[1::2])}
    kinds = {}
    for key, default in zip(hyper, to_py(defaults)):
        if A.is_number(default):
            kinds[key] = "number"
        elif default is T or default is NIL:
            kinds[key] = "flag"
    if "lr" in hyper:
        kinds["lr"] = "number"
    label = A.local_name(name) if isinstance(name, Symbol) else str(name)
    slots = [_state_slot(label, entry, hyper) for entry in to_py(states)]
    return OptimizerValue(OptimizerDef(label, hyper, slots, update, kinds))


def _state_slot(optimizer: str, entry: Any, hypers: dict[str, Any]) -> tuple[str, dict]:
    """(name, options) of `(defstate NAME [:unless-zero HYPER])`: with :unless-zero
    the slot exists only while that hyperparameter is not the number 0 (SGD's
    momentum buffer). A mistake is reported at the defstate where the reader saw it."""
    items, span = to_py(entry)[1:], getattr(entry, "span", None)
    name = A.local_name(items[0])
    opts = {A.kw_name(k): v for k, v in zip(items[1::2], items[2::2])}
    unknown = sorted(set(opts) - {"unless-zero"})
    if unknown or len(items) % 2 == 0:
        raise error(E_OPTIMIZER, f"{optimizer}: defstate {name} has an unknown option", span,
                    expected="(defstate NAME) or (defstate NAME :unless-zero HYPER)",
                    actual=" ".join(A.show(x).lower() for x in items),
                    fix=f"(defstate {name})")
    hyper = opts.get("unless-zero")
    if hyper is not None:
        hyper = A.local_name(hyper) if isinstance(hyper, Symbol) else None
        if hyper not in hypers:
            raise error(E_OPTIMIZER, f"{optimizer}: defstate {name} :unless-zero names "
                        "no hyperparameter", span, expected=" ".join(hypers),
                        actual=A.show(opts["unless-zero"]).lower(),
                        fix=did_you_mean(str(hyper), list(hypers)))
        opts["unless-zero"] = hyper
    return name, opts


# -- tracing the update ---------------------------------------------------------


def is_schedule(value: Any) -> bool:
    """A hyperparameter given as a function (of ctx) rather than a value."""
    return A.is_function(value)


def resolve_hyper(interp: Any, value: Any, ctx: Ctx) -> Any:
    """A schedule is traced over ctx; any other value (a number, t, nil) stays."""
    return interp.call(value, ctx) if is_schedule(value) else value


def check_hyper(group: Group, name: str, value: Any) -> Any:
    """A resolved hyperparameter is what its default says: a number or a scalar tensor
    (from a schedule) for a numeric one, t or nil for a flag; either, when the default
    does not tell."""
    kind = group.optimizer.kinds.get(name)
    scheduled = is_schedule(group.optimizer.hypers[name])
    numeric = A.is_number(value) or (isinstance(value, TracedTensor) and value.shape == ())
    flag = value is T or value is NIL
    if (kind == "number" and numeric) or (kind == "flag" and flag) or (kind is None and
                                                                         (numeric or flag)):
        return value
    what = "a schedule returned " if scheduled else ""
    if kind == "flag":
        raise error(E_OPTIMIZER, f"{group.optimizer.name} :{name} is a flag", group.span,
                    expected="t or nil", actual=what + A.show(value).lower(),
                    fix=f":{name} t")
    raise error(E_OPTIMIZER, f"{group.optimizer.name} :{name} is not a number", group.span,
                expected="a number, or a schedule giving a scalar"
                + ("" if kind == "number" else " (or t/nil for a flag)"),
                actual=what + A.show(value).lower(),
                fix=f":{name} 1e-3, or a schedule like (optim:cosine ...)")


def check_lr(group: Group, lr: Any, g: Graph, steps: int, microbatches: int) -> None:
    """E-LR unless a group's resolved :lr is positive: a number directly; a schedule by
    its values at LR_SAMPLES steps, when it depends on nothing but the step (negative
    at one of them, or zero at all of them, is an error)."""
    if A.is_number(lr):
        values = {0: float(lr)}
        what = f":lr {float(lr):g}"
    elif isinstance(lr, TracedTensor) and lr.shape == ():
        values = _schedule_values(g, lr.value, steps, microbatches)
        if values is None:  # reads the data or the parameters: only known at run time
            return
        what = "the :lr schedule"
    else:
        return
    bad = {step: v for step, v in values.items() if not v > 0.0}
    negative = {step: v for step, v in bad.items() if not v >= 0.0}  # NaN counts too
    if not negative and len(bad) < len(values):
        return
    step, value = min((negative or bad).items())
    at = f" at step {step}" if what.startswith("the") else ""
    actual = f"{value:g}{at}" + ("" if negative else " (zero at every step)")
    owner = group.optimizer.name + (f" (group {group.label()})" if group.select or group.facts
                                    else "")
    raise error(E_LR, f"{what} of {owner} is {'negative' if negative else 'zero'}",
                group.span, expected="a learning rate > 0 (a schedule may reach 0 at its end)",
                actual=actual, fix="give a positive :lr; to freeze parameters or ascend on "
                "purpose add :allow-nonpositive-lr t to (optimizer ...)")


def _schedule_values(g: Graph, lr: Value, steps: int,
                     microbatches: int) -> dict[int, float] | None:
    """The schedule's value at LR_SAMPLES evenly spaced steps, or None when it reads
    anything but ctx/step and ctx/microstep."""
    last = max(steps - 1, 0)
    samples = sorted({round(i * last / (LR_SAMPLES - 1)) for i in range(LR_SAMPLES)})
    return schedule_values(g, lr, samples, microbatches, exact=False)


def schedule_values(g: Graph, value: Value, at: list[int], microbatches: int,
                    exact: bool = True) -> dict[int, float] | None:
    """A traced schedule's value at the steps `at` (reference interpreter), or None when
    it reads anything but ctx/step and ctx/microstep (then only a run knows it).
    `exact=False` (a check of its sign) computes it in plain Python where it can
    (`ir/scalars.py`: libm's functions may differ from numpy's f32 ones in the last
    bit), so that checking a file need not import numpy."""
    nodes = live_nodes(g, [value])
    made = {o.id for node in nodes for o in node.outputs}
    inputs = {v.id: v for node in nodes for v in node.inputs if v.id not in made}
    if value.node is None or any(v.name not in STEP_FIELDS for v in inputs.values()):
        return None
    sub = Graph("schedule")
    sub.inputs, sub.nodes, sub.outputs = list(inputs.values()), nodes, {"value": value}
    values: dict[int, float] = {}
    for step in at:
        feed = {"ctx/step": float(step), "ctx/microstep": float(step * microbatches)}
        known = None if exact else scalars.evaluate(
            nodes, {v.id: feed[v.name] for v in sub.inputs}, value)
        if known is None:
            out = run_reference(sub, {v.name: feed[v.name] for v in sub.inputs},
                                apply_updates=False)
            known = float(out["value"])
        values[step] = known
    return values


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


@record
class _Traced:
    """One parameter's traced update, which another of the same type repeats."""

    param: Value
    grad: Value
    states: list[Value]
    nodes: list[Node]


def trace_updates(interp: Any, g: Graph, group: Group, pairs: list[tuple[Value, Value]],
                  ctx: Ctx, hypers: list[Any]) -> None:
    """Every (parameter, gradient) of a group: the rule is traced for the first
    parameter of each type (shape and dtype) and its nodes are copied for the others
    (the graph is the same, node for node: the rule sees the parameter's type, the
    ctx and the group's hyperparameters, never its name; a char-GPT's 27 parameters
    have 8 types). A rule that draws random numbers (a stream per call) is traced for
    every parameter; Lisp side effects of a rule (printing) happen once per type."""
    traced: dict[tuple[Any, Any], _Traced] = {}
    for param, grad in pairs:
        key = (param.type, grad.type)
        done = traced.get(key)
        if done is not None:
            _replay_update(g, group, done, param, grad)
            continue
        start = len(g.nodes)
        states = trace_update(interp, g, group, param, grad, ctx, hypers)
        nodes = _repeatable(g, g.nodes[start:])
        if nodes is not None:
            traced[key] = _Traced(param, grad, states, nodes)


def _repeatable(g: Graph, nodes: list[Node]) -> list[Node] | None:
    """The nodes a copy of this update makes (the scalar constants it made are shared
    by a second trace, which asks `build.scalar` again and gets them), or None when a
    copy would differ from tracing again: a random draw (each call its own stream),
    a transpose (`build.transpose` keeps one per value and axes)."""
    scalars, transposes = build.shared(g)
    if any(build.draws(n) or n.outputs[0].id in transposes for n in nodes):
        return None
    return [n for n in nodes if n.outputs[0].id not in scalars]


def _replay_update(g: Graph, group: Group, done: _Traced, param: Value, grad: Value) -> None:
    states = _state_inputs(g, group, param)
    mapping = g.replay(done.nodes, [(done.param, param), (done.grad, grad),
                                    *zip(done.states, states)])
    for old, new in ((done.param, param), *zip(done.states, states)):
        value = g.updates[old]
        g.update(new, mapping.get(value.id, value))


def _state_inputs(g: Graph, group: Group, param: Value) -> list[Value]:
    return [g.input(f"opt/{param.name}/{name}", param.shape, "f32", role="state")
            for name in group.optimizer.live_states()]


def _is_zero(value: Any) -> bool:
    return A.is_number(value) and value == 0


def trace_update(interp: Any, g: Graph, group: Group, param: Value, grad: Value,
                 ctx: Ctx, hypers: list[Any]) -> list[Value]:
    """One parameter's update: state inputs, the rule, and g.update for param and
    state. Returns the state inputs."""
    opt = group.optimizer
    states = _state_inputs(g, group, param)
    live = dict(zip(opt.live_states(), states))
    # a slot that does not exist is nil in the rule, and what it sets it to is dropped
    slots = [live.get(name) for name, _opts in opt.states]
    result = interp.call(opt.update, TracedTensor(param), TracedTensor(grad), ctx,
                         *[NIL if s is None else TracedTensor(s) for s in slots], *hypers)
    items = to_py(result)
    new_param = _as_value(g, items[0], param, f"{opt.name}'s update of {param.name}")
    g.update(param, new_param)
    for state, new in zip(slots, items[1:]):
        if state is not None:
            g.update(state, _as_value(g, new, state, f"{opt.name}'s state {state.name}"))
    return states


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
