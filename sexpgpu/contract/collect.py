"""The %-builtins the contract macros expand into: each checks its arguments and
records one part of the Experiment (knobs, loaders, models, objective, optimizer,
evals, targets, run)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from sexpgpu.contract.experiment import Experiment
from sexpgpu.contract.forms import E_FORM_SYNTAX
from sexpgpu.contract.values import knob_value, plist, to_lisp, to_python
from sexpgpu.data.spec import SOURCE_OPTIONS, LoaderSpec, Option, StageSpec, option_problem
from sexpgpu.devices import check_device
from sexpgpu.diagnostics import define_code, error
from sexpgpu.ir import build
from sexpgpu.ir.precision import check_precision
from sexpgpu.lisp.types import NIL, Cons, Symbol, T, to_py
from sexpgpu.runtime.spec import EvalSpec, RunSpec, TargetSpec
from sexpgpu.selection import Binder
from sexpgpu.suggest import did_you_mean, nearest
from sexpgpu.trace import args as A
from sexpgpu.trace.model import E_MODEL, ModelBuilder
from sexpgpu.trace.optimizer import (
    E_OPTIMIZER,
    Group,
    OptimizerSetup,
    OptimizerValue,
    make_optimizer,
)
from sexpgpu.trace.step import E_METRIC
from sexpgpu.trace.tensor import TracedTensor, current

E_LOADER = define_code(
    "E-LOADER", "bad loader declaration",
    "`defloader NAME :source (SOURCE args...) :batch N :order O`: the source must be one of "
    "mnist1d, npz, npy, tokens, text, synthetic, with only the options it reads, each of "
    "its kind (data/spec.py, SOURCE_OPTIONS); the batch a positive integer; the order "
    "one of :sequential, :shuffle, :random-windows; :fields and :stages plists.",
)
E_RUN = define_code(
    "E-RUN", "bad defrun, defeval or deftarget",
    "`defrun` needs a positive :steps; :microbatches must divide the training batch; "
    ":precision is :f32 or :bf16 (:f16 is E-PRECISION); its other settings are integers "
    ">= 0. `defeval` names a declared loader and evaluate function; `deftarget` names a "
    "metric an eval reports, with :>= or :<= and a number.",
)

SOURCES = ("mnist1d", "npz", "npy", "tokens", "text", "synthetic")
ORDERS = ("sequential", "shuffle", "random-windows")


class Collector:
    """Fills an Experiment from the %-builtins; one per compilation."""

    def __init__(self, experiment: Experiment, binder: Binder, interp: Any):
        self.exp = experiment
        self.binder = binder
        self.interp = interp
        self.models = ModelBuilder()
        self.models.model_span = lambda name: experiment.span("defmodel", name)
        self._slots: list[Any] = []   # the defchild slots being filled, innermost last

    def install(self) -> None:
        table = {
            "%defknob": self.defknob, "%defvariant": self.noop, "%defsweep": self.noop,
            "%defloader": self.defloader, "%enter-model": self.enter_model,
            "%leave-model": self.models.leave_model, "%defparam": self.defparam,
            "%defchild-begin": self.defchild_begin, "%defchild-end": self.defchild_end,
            "child-param": self.child_param, "%defobjective": self.defobjective,
            "%model-form-error": model_form_error, "%child-name-error": child_name_error,
            "%defevaluate": self.defevaluate, "%metric": self.metric,
            "%defpredict": self.defpredict,
            "%optimizer": self.optimizer, "%make-optimizer": make_optimizer,
            "%defeval": self.defeval, "%deftarget": self.deftarget, "%defrun": self.defrun,
        }
        for name, fn in table.items():
            self.interp.builtin(name)(_Bound(fn) if hasattr(fn, "__self__") else fn)

    @staticmethod
    def noop(name: Any, *_: Any) -> Any:
        return name

    # -- header ---------------------------------------------------------------

    def defknob(self, name: Symbol, default: Any, _options: Any) -> Any:
        key = name.name.lower()
        value = self.binder.value(key, knob_value(default))
        self.exp.knobs[key] = value
        self.interp.set_global(name, to_lisp(value, like=default), special=False)
        return name

    # -- data -------------------------------------------------------------------

    def defloader(self, name: Symbol, *args: Any) -> Any:
        label = name.name.lower()
        _, kw = A.split(f"defloader {label}", args,
                        ("source", "batch", "order", "fields", "stages"), max_pos=0)
        span = self.exp.span("defloader", label)
        if "source" not in kw:
            raise error(E_LOADER, f"defloader {label} has no :source", span,
                        expected=":source (mnist1d :split :train) or (text PATH ...)",
                        actual="no :source", fix="add a :source")
        source, options = self._source(label, kw["source"], span)
        batch = kw.get("batch", 1)
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise error(E_LOADER, f"defloader {label}: :batch must be a positive integer", span,
                        expected="a positive integer", actual=A.show(batch), fix=":batch 32")
        order = to_python(kw.get("order", NIL)) or "sequential"
        if order not in ORDERS:
            raise error(E_LOADER, f"defloader {label}: unknown order :{order}", span,
                        expected=" ".join(f":{o}" for o in ORDERS), actual=f":{order}",
                        fix=did_you_mean(str(order), list(ORDERS)))
        fields = {}
        for key, value in _keyword_plist(f"defloader {label}: :fields", kw.get("fields", NIL),
                                         span, None, "(:x x_train :y y_train)"):
            if not isinstance(value, (str, Symbol)) or value is NIL or A.is_keyword(value):
                raise error(E_LOADER, f"defloader {label}: :fields maps a field to an array name",
                            span, expected="(:FIELD ARRAY ...), e.g. (:x x_test :y y_test)",
                            actual=f":{key} {_show(value)}", fix=f":{key} x")
            fields[key] = str(to_python(value))
        stages_form = kw.get("stages", NIL)
        if stages_form is not NIL and type(stages_form) is not Cons:
            raise error(E_LOADER, f"defloader {label}: :stages takes a list of stages", span,
                        expected="((:from STEP :source (...)) ...)",
                        actual=f":stages {_show(stages_form)}", fix=":stages ((:from 1000 ...))")
        stages = [self._stage(label, st, span) for st in to_py(stages_form)]
        self.exp.loaders.append(LoaderSpec(label, source, options, batch, order, fields, stages))
        return name

    def _source(self, label: str, form: Any, span: Any) -> tuple[str, dict[str, Any]]:
        items = to_py(form) if type(form) is Cons else [form]
        head = items[0]
        source = head.name.lower() if isinstance(head, Symbol) else A.show(head)
        if source not in SOURCES:
            raise error(E_LOADER, f"defloader {label}: unknown source `{source}`", span,
                        expected=", ".join(SOURCES), actual=source,
                        fix=did_you_mean(source, list(SOURCES)))
        rest = items[1:]
        written: dict[str, Any] = {}  # the Lisp values, for diagnostics
        if rest and not A.is_keyword(rest[0]):
            written["path"] = rest[0]
            rest = rest[1:]
        if len(rest) % 2 or not all(A.is_keyword(k) for k in rest[::2]):
            raise error(E_LOADER, f"defloader {label}: ({source} ...) takes :option value pairs",
                        span, expected=f"({source} [PATH] :option value ...)",
                        actual=_show(form), fix="give every :option one value")
        for key, value in plist(rest):
            written[key.replace("-", "_")] = value
        options = {key: _option(value) for key, value in written.items()}
        _check_source_options(label, source, options, written, span)
        return source, options

    def _stage(self, label: str, stage: Any, span: Any) -> StageSpec:
        """`(:from STEP [:source S] [:name TEXT] [:batch N])`."""
        kw = dict(_keyword_plist(f"defloader {label}: a stage", stage, span,
                                 ("from", "source", "name", "batch"),
                                 "(:from STEP [:source (SOURCE ...)] [:name TEXT])"))
        start = kw.get("from", 0)
        if not _is_count(start):
            raise error(E_LOADER, f"defloader {label}: a stage's :from must be a step number",
                        span, expected="an integer >= 0", actual=f":from {_show(start)}",
                        fix="(:from 1000 :source (...))")
        out = StageSpec(start, str(to_python(kw.get("name", NIL)) or ""))
        if "source" in kw:
            out.source, out.options = self._source(label, kw["source"], span)
        if "batch" in kw:
            batch = kw["batch"]
            if not _is_count(batch) or batch < 1:
                raise error(E_LOADER, f"defloader {label}: a stage's :batch must be a positive "
                            "integer", span, expected="a positive integer",
                            actual=f":batch {_show(batch)}",
                            fix="drop :batch (the stage keeps the loader's)")
            out.batch = batch
        return out

    # -- models -------------------------------------------------------------------

    def enter_model(self, name: Symbol) -> Any:
        self.models.enter_model(A.local_name(name))
        return NIL

    def defparam(self, name: Symbol, shape: Any, *args: Any) -> TracedTensor:
        label = A.local_name(name)
        _, kw = A.split(f"defparam {label}", args, ("init", "tie", "dtype"), max_pos=0)
        return self.models.defparam(label, shape, kw.get("init"), kw.get("tie"), kw.get("dtype"))

    def defchild_begin(self, name: Symbol) -> Any:
        self._slots.append(self.models.open_child(A.local_name(name)))
        return NIL

    def defchild_end(self, name: Symbol, value: Any) -> Any:
        slot = self._slots.pop()
        return self.models.defchild(A.local_name(name), value, slot)

    def child_param(self, child: Any, name: Any) -> TracedTensor:
        label = A.local_name(name) if isinstance(name, Symbol) else str(name)
        return self.models.child_param(child, label)

    # -- objective and evaluate ---------------------------------------------------

    def defobjective(self, fn: Any) -> Any:
        _check_batch_lambda("defobjective", fn, self.exp.span("defobjective"))
        self.exp.objective = fn
        return NIL

    def defevaluate(self, name: Symbol, fn: Any) -> Any:
        label = name.name.lower()
        _check_batch_lambda("defevaluate", fn, self.exp.span("defevaluate", label))
        self.exp.evaluates[label] = fn
        return name

    def defpredict(self, fn: Any) -> Any:
        _check_batch_lambda("defpredict", fn, self.exp.span("defpredict"))
        self.exp.predict = fn
        return NIL

    def metric(self, name: Symbol, value: Any) -> Any:
        trace = current("metric")
        label = name.name.lower()
        if label in trace.metrics:
            raise error(E_METRIC, f"metric {label} recorded twice",
                        expected="one (metric NAME ...) per name", actual=f"a second {label}",
                        fix="give the second metric another name")
        if isinstance(value, TracedTensor):
            v = value.value
            if v.shape != ():
                raise error(E_METRIC, f"metric {label} is not a scalar", expected="shape ()",
                            actual=f"shape {v.shape}", fix="reduce it with mean or sum")
        elif A.is_number(value):
            v = build.scalar(trace.graph, float(value), "f32")
        else:
            raise error(E_METRIC, f"metric {label} is not a tensor", expected="a scalar tensor",
                        actual=A.show(value), fix="(metric loss (mean ...))")
        trace.metrics[label] = v
        return value

    # -- optimizer ------------------------------------------------------------------

    def optimizer(self, opt: Any, *args: Any) -> Any:
        span = self.exp.span("optimizer")
        if not isinstance(opt, OptimizerValue):
            raise error(E_OPTIMIZER, "optimizer needs an optimizer value", span,
                        expected="(optimizer (optim:adamw :lr 1e-3) ...)", actual=A.show(opt),
                        fix="call one of sexpgpu/optim's optimizers")
        _, kw = A.split("optimizer", args, ("groups", "clip", "allow-nonpositive-lr"),
                        max_pos=0)
        entries = kw.get("groups", NIL)
        if entries is not NIL and type(entries) is not Cons:
            raise error(E_OPTIMIZER, ":groups takes a list of groups", span,
                        expected="((:select GLOB key value ...) ...)",
                        actual=f":groups {_show(entries)}",
                        fix=":groups ((:ndim 1 :weight-decay 0.0))")
        groups = [self._group(entry, opt, span) for entry in to_py(entries)]
        clip = kw.get("clip")
        clip_v = None if clip is None or clip is NIL else _finite("optimizer", ":clip", clip, span)
        if clip_v is not None and clip_v <= 0:
            raise error(E_OPTIMIZER, "optimizer :clip must be a positive gradient norm", span,
                        expected="a number > 0 (or nil: no clipping)", actual=f":clip {clip_v}",
                        fix=":clip 1.0")
        allow = A.flag(kw.get("allow-nonpositive-lr"))
        self.exp.optimizer = OptimizerSetup(opt.spec, groups, clip_v, span, allow)
        return NIL

    def _group(self, entry: Any, base: OptimizerValue, span: Any) -> Group:
        items = to_py(entry) if type(entry) is Cons else None
        if not items or len(items) % 2 or not all(A.is_keyword(k) for k in items[::2]):
            raise error(E_OPTIMIZER, "a group is a plist of selectors and settings", span,
                        expected="(:select GLOB :ndim N key value ...)", actual=A.show(entry),
                        fix='e.g. :groups ((:ndim 1 :weight-decay 0.0))')
        select, facts, overrides = None, {}, {}
        spec = base.spec
        for key, value in plist(items):
            if key == "select":
                if not isinstance(value, str):
                    raise error(E_OPTIMIZER, ":select takes a path glob string", span,
                                expected='a string like "**/bias"', actual=A.show(value),
                                fix='quote the glob: :select "blocks/*/attn/**"')
                select = value
            elif key in ("ndim", "min-ndim"):
                facts[key] = A.integer("optimizer group", value, f":{key}")
            elif key == "optimizer":
                if not isinstance(value, OptimizerValue):
                    raise error(E_OPTIMIZER, "a group's :optimizer must be an optimizer",
                                span, expected="(optim:sgd :lr 0.1)", actual=A.show(value))
                spec = value.spec
            else:
                overrides[key] = value
        return Group(select, facts, spec.with_overrides(overrides, span), span)

    # -- evals, targets, run -----------------------------------------------------------

    def defeval(self, name: Symbol, *args: Any) -> Any:
        label = name.name.lower()
        span = self.exp.span("defeval", label)
        _, kw = A.split(f"defeval {label}", args, ("loader", "every", "batches", "evaluate"),
                        max_pos=0)
        loader = _name(f"defeval {label}", ":loader", kw, span) or label
        if self.exp.loader(loader) is None:
            names = [spec.name for spec in self.exp.loaders]
            raise error(E_RUN, f"defeval {label}: no loader named `{loader}`", span,
                        expected=f"one of: {', '.join(names)}", actual=str(loader),
                        fix=did_you_mean(str(loader), names))
        evaluate = _name(f"defeval {label}", ":evaluate", kw, span) or "default"
        if evaluate not in self.exp.evaluates:
            names = list(self.exp.evaluates)
            raise error(E_RUN, f"defeval {label}: no defevaluate named `{evaluate}`", span,
                        expected=f"one of: {', '.join(names) or '(no defevaluate)'}",
                        actual=str(evaluate), fix="add a (defevaluate (model &key x y) ...)")
        every = _setting(f"defeval {label}", ":every", kw.get("every", 0), 0, span)
        batches = kw.get("batches")
        spec = EvalSpec(label, str(loader), every,
                        None if batches is None or batches is NIL
                        else _setting(f"defeval {label}", ":batches", batches, 1, span))
        self.exp.eval_functions[label] = str(evaluate)
        self.exp.evals.append(spec)
        return name

    def deftarget(self, metric: Symbol, *args: Any) -> Any:
        label = metric.name.lower()
        span = self.exp.span("deftarget", label)
        _, kw = A.split(f"deftarget {label}", args,
                        (">=", "<=", ">", "<", "note", "published", "source"), max_pos=0)
        ops = [op for op in (">=", "<=", ">", "<") if op in kw]
        if len(ops) != 1:
            raise error(E_RUN, f"deftarget {label} needs one comparison", span,
                        expected=":>= VALUE or :<= VALUE", actual=" ".join(ops) or "none",
                        fix=f"(deftarget {label} :>= 0.9)")
        self._check_metric_name(label, span)
        value = _finite(f"deftarget {label}", f":{ops[0]}", kw[ops[0]], span)
        note = str(to_python(kw.get("note", NIL)) or "")
        self.exp.targets.append(TargetSpec(label, ops[0], value, note))
        published = kw.get("published")
        self.exp.target_sources[label] = {
            "published": None if published is None or published is NIL
            else _finite(f"deftarget {label}", ":published", published, span),
            "source": str(to_python(kw.get("source", NIL)) or ""),
        }
        return metric

    def _check_metric_name(self, label: str, span: Any) -> None:
        evals = [e.name for e in self.exp.evals]
        head = label.split("/", 1)[0]
        if "/" in label and head not in evals and head != "train":
            raise error(E_RUN, f"deftarget {label}: no defeval named `{head}`", span,
                        expected=f"EVAL/METRIC with EVAL one of: {', '.join(evals + ['train'])}",
                        actual=head, fix=did_you_mean(head, evals + ["train"]))

    def defrun(self, *args: Any) -> Any:
        span = self.exp.span("defrun")
        _, kw = A.split("defrun", args, ("steps", "microbatches", "seed", "precision",
                                         "checkpoint-every", "keep-checkpoints", "log-every",
                                         "device", "train", "model", "diag-every", "procs"),
                       max_pos=0)
        steps = kw.get("steps")
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise error(E_RUN, "defrun needs a positive :steps", span,
                        expected=":steps N with N >= 1", actual=A.show(steps),
                        fix="(defrun :steps steps) with a steps knob")
        precision = check_precision(to_python(kw.get("precision", NIL)) or "f32",
                                    "defrun :precision", span, code=E_RUN)
        train = _name("defrun", ":train", kw, span) or "train"
        loader = self.exp.loader(train)
        if loader is None:
            names = [spec.name for spec in self.exp.loaders]
            raise error(E_RUN, f"defrun: no training loader `{train}`", span,
                        expected=f"one of: {', '.join(names)}", actual=str(train),
                        fix=f"name a loader `train`, or (defrun :train {names[0]} ...)"
                        if names else "declare a defloader")
        micro = _setting("defrun", ":microbatches", kw.get("microbatches", 1), 1, span)
        if micro < 1 or loader.batch % micro:
            raise error(E_RUN, f"defrun: :microbatches {micro} does not divide the batch "
                        f"{loader.batch}", span, expected=f"a divisor of {loader.batch}",
                        actual=str(micro), fix="pick microbatches that divide the batch")
        model = _name("defrun", ":model", kw, span)
        if model is not None:
            self.exp.top_model = str(model)
        # the defaults live in RunSpec alone: pass only what the file wrote
        given = {key.replace("-", "_"): _setting("defrun", f":{key}", kw[key], 0, span, high)
                 for key, high in _INTEGER_SETTINGS.items() if key in kw}
        if "device" in kw:
            given["device"] = check_device(to_python(kw["device"]), "defrun :device", span)
        given["precision"] = precision
        given.update(self.binder.selection.run_overrides())  # the command line wins
        self.exp.run = RunSpec(steps=steps, microbatches=micro, train_loader=str(train),
                               **given)
        _check_procs(self.exp.run.procs, micro, loader.batch, span)
        return NIL


def _check_procs(procs: int, micro: int, batch: int, span: Any) -> None:
    """Each of `procs` processes takes batch/procs rows, split into `micro` microbatches."""
    if procs < 1 or batch % (procs * micro):
        per = f" x :microbatches {micro}" if micro > 1 else ""
        raise error(E_RUN, f"defrun: {procs} processes{per} do not divide the batch {batch}",
                    span, expected=f"procs{' x microbatches' if micro > 1 else ''} dividing "
                    f"{batch}", actual=f"{procs}{per} = {procs * micro}",
                    fix="pick a process count that divides the batch (each process takes "
                    "batch/procs rows), or change the batch")


# defrun's integer settings, each >= 0, with an upper bound where one exists (the seed
# is an int64 in the kernels)
_INTEGER_SETTINGS: dict[str, int | None] = {
    "seed": 2**63 - 1, "checkpoint-every": None, "keep-checkpoints": None, "log-every": None,
    "diag-every": None, "procs": 4096,
}


def _name(form: str, key: str, kw: dict[str, Any], span: Any) -> str | None:
    """A name given to a contract form (`:loader test`, `:model gpt`); None when absent."""
    value = kw.get(key.lstrip(":"), NIL)
    if value is NIL:
        return None
    if isinstance(value, str) or (isinstance(value, Symbol) and value is not T):
        return str(to_python(value))
    raise error(E_RUN, f"{form}: {key} takes a name", span, expected=f"{key} NAME",
                actual=f"{key} {_show(value)}", fix=f"name a declared one, unquoted: {key} NAME")


def _setting(form: str, key: str, value: Any, low: int, span: Any,
             high: int | None = None) -> int:
    """An integer setting of a contract form, in [low, high]: E-RUN otherwise."""
    if (not isinstance(value, int) or isinstance(value, bool) or value < low
            or (high is not None and value > high)):
        bound = f"an integer >= {low}" + (f" and <= {high}" if high is not None else "")
        raise error(E_RUN, f"{form}: {key} must be {bound}", span, expected=bound,
                    actual=f"{key} {_show(value)}", fix=f"{key} {max(low, 1)}")
    return value


def _finite(form: str, key: str, value: Any, span: Any) -> float:
    """A finite number given to a contract form (a target, a clip norm)."""
    # A.number: a single float as the file wrote it (0.29, not 0.28999999165534973)
    number = float(A.number(form, value)) if A.is_number(value) else None
    if number is None or not math.isfinite(number):
        raise error(E_RUN if form.startswith("deftarget") else E_OPTIMIZER,
                    f"{form}: {key} must be a number", span, expected="a finite number",
                    actual=f"{key} {_show(value)}", fix=f"{key} 1.0")
    return number


def _check_batch_lambda(head: str, fn: Any, span: Any) -> None:
    """An objective or evaluate function takes the model, then the batch fields by
    keyword: `(model &key x y)`. Fields are passed as keywords, so positional ones
    could never be filled."""
    ll = getattr(fn, "ll", None)
    if ll is None or (len(ll.required) == 1 and not ll.optional):
        return
    fields = [A.show(p).lower() for p in [*ll.required[1:], *(o[0] for o in ll.optional)]]
    wanted = "(model &key " + " ".join(fields or ["x", "y"]) + ")"
    raise error(E_FORM_SYNTAX, f"{head} takes the model, then the batch fields after &key",
                span, expected=wanted, actual=ll.describe().lower(),
                fix=f"write ({head} {wanted} ...)")


def _show(value: Any) -> str:
    return A.show(value).lower()


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _keyword_plist(what: str, form: Any, span: Any, keys: tuple[str, ...] | None,
                   example: str) -> list[tuple[str, Any]]:
    """A plist `(:key value ...)` written in a loader; `keys`: the ones allowed (None: any)."""
    items = to_py(form) if (form is NIL or type(form) is Cons) else None
    if items is None or len(items) % 2 or not all(A.is_keyword(k) for k in items[::2]):
        raise error(E_LOADER, f"{what} is a plist of :key value", span, expected=example,
                    actual=_show(form), fix=f"write it as {example}")
    pairs = [(A.kw_name(k), v) for k, v in zip(items[::2], items[1::2])]
    for key, _ in pairs:
        if keys is not None and key not in keys:
            raise error(E_LOADER, f"{what} has no option :{key}", span,
                        expected=" ".join(f":{k}" for k in keys), actual=f":{key}",
                        fix=did_you_mean(key, list(keys)) or f"drop :{key}")
    return pairs


def _check_source_options(label: str, source: str, options: dict[str, Any],
                          written: dict[str, Any], span: Any) -> None:
    """Every option of a `:source` is one the source reads, with a value of its kind
    (data/spec.py's SOURCE_OPTIONS), so a run never starts to fail on it."""
    table = SOURCE_OPTIONS[source]
    known = [name.replace("_", "-") for name in table]
    for key, value in options.items():
        shown = key.replace("_", "-")
        if key not in table:
            raise error(E_LOADER, f"defloader {label}: {source} has no option :{shown}", span,
                        expected=" ".join(f":{k}" for k in known), actual=f":{shown}",
                        fix=did_you_mean(shown, known))
        wanted = option_problem(table[key], value)
        if wanted is not None:
            raise error(E_LOADER, f"defloader {label}: {source} :{shown} takes {wanted}",
                        span, expected=wanted, actual=f":{shown} {_show(written[key])}",
                        fix=_option_fix(shown, table[key], value))
    for key, option in table.items():
        if option.required and key not in options:
            shown = key.replace("_", "-")
            raise error(E_LOADER, f"defloader {label}: {source} needs :{shown}", span,
                        expected=f":{shown} ({option_problem(option, None)})",
                        actual=f"no :{shown}", fix=_option_fix(shown, option, None))


def _option_fix(shown: str, option: Option, value: Any) -> str:
    """A near choice first (`:split :tset` -> `test`), then the option's example."""
    near = nearest(value, option.choices) if isinstance(value, str) else None
    if near is not None:
        return f"did you mean `{near}`?"
    if option.example:
        return f":{shown} {option.example}"
    if option.choices:
        return "use one of: " + ", ".join(option.choices)
    return f"write :{shown} as {option_problem(option, None)}"


def _option(value: Any) -> Any:
    """A source option as Python; a plist ('(:x "x.npy" :y "y.npy")) becomes a dict."""
    items = to_py(value) if type(value) is Cons else None
    if items and len(items) % 2 == 0 and all(A.is_keyword(k) for k in items[::2]):
        return {A.kw_name(k): to_python(v) for k, v in zip(items[::2], items[1::2])}
    return to_python(value)


def child_name_error(name: Symbol) -> Any:
    """A defchild named after a special operator (`block`, `function`): a call of it
    would be that special form, so the child could never be called."""
    shown = name.name.lower()
    raise error(E_MODEL, f"a child cannot be named `{shown}`",
                expected="a name that is not a Common Lisp special operator",
                actual=f"`{shown}`, a special operator: ({shown} x) is that special form, "
                       "never a call of the child",
                fix=f"rename it, e.g. (defchild {shown}-1 ...)")


def model_form_error(head: str, syntax: str) -> Any:
    """A defparam or defchild without its name and form (raised where it is written)."""
    raise error(E_MODEL, f"malformed {head}", expected=syntax, actual=f"({head} ...)",
                fix=f"write it as {syntax}")


class _Bound:
    """A bound method as a Lisp builtin: the interpreter reads arity from `__code__`
    and `__defaults__`, where a bound method's code would also count `self`."""

    def __init__(self, method: Any):
        code = method.__func__.__code__
        self.method = method
        self.__code__ = SimpleNamespace(co_argcount=code.co_argcount - 1,
                                        co_varnames=code.co_varnames[1:],
                                        co_flags=code.co_flags)
        self.__defaults__ = method.__func__.__defaults__

    def __call__(self, *args: Any) -> Any:
        return self.method(*args)
