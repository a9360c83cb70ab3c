"""The selection: which knob values a compilation binds (`--set K=V`, `--variant NAME`,
a sweep point), checked against the file's `defknob`/`defvariant`/`defsweep` declarations
before the file is evaluated."""

from __future__ import annotations

import itertools
from typing import Any

from sexpgpu.devices import check_device
from sexpgpu.diagnostics import Span, define_code, error
from sexpgpu.record import factory, record
from sexpgpu.suggest import did_you_mean

E_KNOB_UNKNOWN = define_code(
    "E-KNOB-UNKNOWN", "no knob by that name",
    "The selection (`--set`, a `defvariant` or a `defsweep`) names a knob the file does not "
    "declare with `defknob`. The diagnostic lists the declared knobs and the nearest name.",
)
E_KNOB_TYPE = define_code(
    "E-KNOB-TYPE", "knob value has the wrong type or is out of range",
    "A knob's type comes from its default: an integer knob takes integers, a float knob "
    "numbers, a string knob strings, a keyword knob keywords, a boolean knob t/nil. "
    "`:choices` and `:range` restrict the values further.",
)
E_VARIANT_UNKNOWN = define_code(
    "E-VARIANT-UNKNOWN", "no variant by that name",
    "`--variant NAME` (or a sweep) names a variant the file does not declare with "
    "`defvariant`. The diagnostic lists the declared ones and the nearest name.",
)
E_RUN_FLAG = define_code(
    "E-RUN-FLAG", "a run setting flag without a valid value",
    "`--checkpoint-every N` and `--log-every N` take a number of steps (0 turns the "
    "cadence off); like `--device`, they override `defrun` and never change results. "
    "`--precision` takes f32 or bf16; it overrides `defrun :precision` and does change "
    "results, so it is part of the run's plan hash.",
)
E_SWEEP = define_code(
    "E-SWEEP", "malformed or unknown sweep",
    "`defsweep NAME :knob (v1 v2 ...) ...` declares a grid (cartesian product, or with "
    "`:zip t` the values taken side by side, which needs lists of equal length). "
    "Selecting a sweep that does not exist, or a point past its end, is this error.",
)


# --------------------------------------------------------------------------
# Declarations (collected from the file's header before evaluation)


@record
class KnobDecl:
    name: str
    default: Any                      # a Python value: int, float, str, Keyword, bool
    doc: str = ""
    choices: list[Any] | None = None
    range: tuple[float, float] | None = None
    span: Span | None = None

    @property
    def kind(self) -> str:
        return value_kind(self.default)


@record
class VariantDecl:
    name: str
    values: dict[str, Any]
    span: Span | None = None
    value_spans: dict[str, Span] = factory(dict)


@record
class SweepDecl:
    name: str
    axes: dict[str, list[Any]]
    zip: bool = False
    variant: str | None = None
    span: Span | None = None
    value_spans: dict[str, Span] = factory(dict)

    def points(self) -> list[dict[str, Any]]:
        names = list(self.axes)
        if self.zip:
            columns = [self.axes[n] for n in names]
            return [dict(zip(names, row)) for row in zip(*columns)]
        grid = itertools.product(*(self.axes[n] for n in names))
        return [dict(zip(names, row)) for row in grid]


class Keyword(str):
    """A keyword knob value (`:relu`), kept apart from strings; the name without colon."""

    def __repr__(self) -> str:
        return f":{str(self)}"


def a_kind(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def value_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, Keyword):
        return "keyword"
    if isinstance(value, str):
        return "string"
    return "list"


def show(value: Any) -> str:
    if isinstance(value, bool):
        return "t" if value else "nil"
    if isinstance(value, Keyword):
        return f":{value}"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "(" + " ".join(show(v) for v in value) + ")"
    return repr(value)


# --------------------------------------------------------------------------
# The selection


@record
class Selection:
    """What the command line asked for; strings until checked against the declarations."""

    sets: dict[str, str] = factory(dict)
    variant: str | None = None
    sweep: str | None = None
    point: int | None = None
    # run settings the command line overrides (`--device cuda` -> {"device": "cuda"});
    # they win over defrun's and stay out of to_json: the resolved RunSpec carries them,
    # and the one that changes results (`--precision`) reaches the plan hash through it
    run: dict[str, str] = factory(dict)

    @classmethod
    def from_args(cls, sets: list[str] | None = None, variant: str | None = None,
                  sweep: str | None = None, point: int | None = None,
                  run: dict[str, str] | None = None) -> Selection:
        parsed: dict[str, str] = {}
        for item in sets or []:
            if "=" not in item:
                raise error(E_KNOB_TYPE, f"`--set {item}` is not KNOB=VALUE",
                            expected="--set NAME=VALUE", actual=f"--set {item}",
                            fix=f"write --set {item}=VALUE")
            key, _, raw = item.partition("=")
            parsed[key.strip()] = raw.strip()
        return cls(parsed, variant, sweep, point, dict(run or {}))

    def run_overrides(self) -> dict[str, Any]:
        """The command line's run settings as RunSpec fields, checked: a device name,
        a precision, non-negative cadences."""
        from sexpgpu.ir.precision import check_precision  # the IR's op set, only when asked

        out: dict[str, Any] = {}
        for flag, raw in self.run.items():
            if flag == "device":
                out["device"] = check_device(raw, "--device")
                continue
            if flag == "precision":
                out["precision"] = check_precision(raw, "--precision", code=E_RUN_FLAG)
                continue
            if not raw.isdigit():
                what = "processes" if flag == "procs" else "steps"
                raise error(E_RUN_FLAG, f"--{flag} {raw}: not a number of {what}",
                            expected="an integer >= 0", actual=raw,
                            fix=f"--{flag} 100 (0 turns it off)")
            out[flag.replace("-", "_")] = int(raw)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"set": dict(self.sets), "variant": self.variant, "sweep": self.sweep,
                "point": self.point}


def parse_cli_value(knob: KnobDecl, raw: str) -> Any:
    """A `--set` string read as the knob's type (the type of its default)."""
    kind = knob.kind
    value: Any
    try:
        if kind == "integer":
            value = int(raw)
        elif kind == "float":
            value = float(raw)
        elif kind == "boolean":
            lowered = raw.lower()
            if lowered not in ("t", "nil", "true", "false", "1", "0"):
                raise ValueError(raw)
            value = lowered in ("t", "true", "1")
        elif kind == "keyword":
            value = Keyword(raw[1:] if raw.startswith(":") else raw)
        elif kind == "string":
            value = raw
        else:
            raise ValueError(raw)
    except ValueError:
        raise error(E_KNOB_TYPE, f"knob `{knob.name}` takes {a_kind(kind)}, not `{raw}`", knob.span,
                    expected=f"{a_kind(kind)} like {show(knob.default)}", actual=raw,
                    fix=f"--set {knob.name}={show(knob.default)}") from None
    return value


def check_value(knob: KnobDecl, value: Any, span: Span | None) -> Any:
    """`value` (from a variant, sweep or --set) fits the knob's type, choices and range."""
    kind = knob.kind
    actual_kind = value_kind(value)
    if kind == "float" and actual_kind == "integer":
        value, actual_kind = float(value), "float"
    if actual_kind != kind:
        raise error(E_KNOB_TYPE,
                    f"knob `{knob.name}` takes {a_kind(kind)}, not {a_kind(actual_kind)}", span,
                    expected=f"{a_kind(kind)} like {show(knob.default)}", actual=show(value),
                    fix=f"give `{knob.name}` {a_kind(kind)} value")
    if knob.choices is not None and value not in knob.choices:
        options = " ".join(show(c) for c in knob.choices)
        raise error(E_KNOB_TYPE, f"knob `{knob.name}` is not one of its choices", span,
                    expected=f"one of {options}", actual=show(value),
                    fix=f"pick one of {options}")
    if knob.range is not None and isinstance(value, (int, float)):
        low, high = knob.range
        if not (low <= value <= high):
            raise error(E_KNOB_TYPE, f"knob `{knob.name}` is out of its range", span,
                        expected=f"{low} <= {knob.name} <= {high}", actual=show(value),
                        fix=f"pick a value between {low} and {high}")
    return value


@record
class Declarations:
    knobs: dict[str, KnobDecl] = factory(dict)
    variants: dict[str, VariantDecl] = factory(dict)
    sweeps: dict[str, SweepDecl] = factory(dict)


def _unknown_knob(name: str, decls: Declarations, span: Span | None) -> Exception:
    names = list(decls.knobs)
    return error(E_KNOB_UNKNOWN, f"no knob named `{name}`", span,
                 expected=f"one of: {', '.join(names) or '(no knobs declared)'}", actual=name,
                 fix=did_you_mean(name, names))


def _unknown_variant(name: str, decls: Declarations, span: Span | None) -> Exception:
    names = list(decls.variants)
    return error(E_VARIANT_UNKNOWN, f"no variant named `{name}`", span,
                 expected=f"one of: {', '.join(names) or '(no variants declared)'}",
                 actual=name, fix=did_you_mean(name, names))


class Binder:
    """Binds each knob as its `defknob` is evaluated: default < variant < sweep point < --set.

    Names are checked up front (before evaluation); values when the knob's default, and
    so its type, is known."""

    def __init__(self, decls: Declarations, selection: Selection):
        self.decls = decls
        self.selection = selection
        self.bound: dict[str, Any] = {}
        for variant in decls.variants.values():
            for key in variant.values:
                if key not in decls.knobs:
                    raise _unknown_knob(key, decls, variant.value_spans.get(key, variant.span))
        for sweep in decls.sweeps.values():
            self._check_sweep_shape(sweep)
        self.point: dict[str, Any] = {}
        variant_name = selection.variant
        if selection.sweep is not None:
            sweep = self._sweep(selection.sweep)
            points = sweep.points()
            index = selection.point or 0
            if not 0 <= index < len(points):
                raise error(E_SWEEP, f"sweep `{sweep.name}` has no point {index}", sweep.span,
                            expected=f"0 <= point < {len(points)}", actual=str(index),
                            fix=f"pick a point below {len(points)}")
            self.point = points[index]
            variant_name = variant_name or sweep.variant
        self.variant = None
        if variant_name is not None:
            if variant_name not in decls.variants:
                raise _unknown_variant(variant_name, decls, None)
            self.variant = decls.variants[variant_name]
        for key in selection.sets:
            if key not in decls.knobs:
                raise _unknown_knob(key, decls, None)

    def _sweep(self, name: str) -> SweepDecl:
        sweep = self.decls.sweeps.get(name)
        if sweep is None:
            names = list(self.decls.sweeps)
            raise error(E_SWEEP, f"no sweep named `{name}`",
                        expected=f"one of: {', '.join(names) or '(no sweeps declared)'}",
                        actual=name, fix=did_you_mean(name, names))
        return sweep

    def _check_sweep_shape(self, sweep: SweepDecl) -> None:
        if sweep.variant is not None and sweep.variant not in self.decls.variants:
            raise _unknown_variant(sweep.variant, self.decls, sweep.span)
        lengths = {len(v) for v in sweep.axes.values()}
        if sweep.zip and len(lengths) > 1:
            raise error(E_SWEEP, f"zipped sweep `{sweep.name}` has lists of different lengths",
                        sweep.span, expected="lists of equal length with :zip t",
                        actual=", ".join(f"{k}: {len(v)}" for k, v in sweep.axes.items()),
                        fix="give every knob the same number of values, or drop :zip")
        for key in sweep.axes:
            if key not in self.decls.knobs:
                raise _unknown_knob(key, self.decls, sweep.value_spans.get(key, sweep.span))

    def value(self, name: str, default: Any) -> Any:
        """The bound value of knob `name` whose evaluated default is `default`."""
        knob = self.decls.knobs[name]
        knob.default = default
        check_value(knob, default, knob.span)
        for variant in self.decls.variants.values():
            if name in variant.values:
                check_value(knob, variant.values[name], variant.value_spans.get(name))
        for sweep in self.decls.sweeps.values():
            for value in sweep.axes.get(name, ()):
                check_value(knob, value, sweep.value_spans.get(name))
        value = default
        if self.variant is not None and name in self.variant.values:
            value = check_value(knob, self.variant.values[name], self.variant.span)
        if name in self.point:
            value = check_value(knob, self.point[name], None)
        if name in self.selection.sets:
            value = check_value(knob, parse_cli_value(knob, self.selection.sets[name]),
                                knob.span)
        if knob.kind == "float" and isinstance(value, int):
            value = float(value)
        self.bound[name] = value
        return value


RUN_FLAGS = ("device", "checkpoint-every", "log-every", "precision", "procs")


def from_docopt(args: dict[str, Any]) -> Selection:
    """The selection flags every verb shares: --set K=V (repeatable), --variant NAME, and
    the run settings a verb accepts (--device, --checkpoint-every, --log-every,
    --precision)."""
    run = {flag: args[f"--{flag}"] for flag in RUN_FLAGS if args.get(f"--{flag}") is not None}
    return Selection.from_args(args.get("--set") or [], args.get("--variant"), run=run)
