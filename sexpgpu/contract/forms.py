"""The run file read (not evaluated) and its shape checked: contract forms in their order,
none missing, none duplicated; the header's declarations (knobs, variants, sweeps)
collected so the selection can be bound before anything is evaluated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sexpgpu.contract.values import knob_value, to_python
from sexpgpu.diagnostics import Span, define_code, error
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.reader import read_all
from sexpgpu.lisp.types import Cons, Symbol, to_py
from sexpgpu.record import factory, record
from sexpgpu.selection import Declarations, KnobDecl, SweepDecl, VariantDecl

E_FILE = define_code(
    "E-FILE", "cannot read the run file",
    "The path given on the command line does not exist or is not a readable text file.",
)

E_FORM_ORDER = define_code(
    "E-FORM-ORDER", "contract form out of order",
    "A run file states its parts in one order: header (require, defknob, defvariant, "
    "defsweep, helper defun/defmacro), defloader, defmodel, defobjective/defevaluate/"
    "defpredict, optimizer, defeval, deftarget, and last defrun. A form that comes after a later "
    "section's form is this error; move it up.",
)
E_FORM_MISSING = define_code(
    "E-FORM-MISSING", "required contract form missing",
    "A run file needs at least one defloader and defmodel, exactly one defobjective, "
    "one optimizer and one defrun.",
)
E_FORM_DUPLICATE = define_code(
    "E-FORM-DUPLICATE", "contract form given twice",
    "defobjective, defpredict, optimizer and defrun appear once; knobs, variants, sweeps, loaders, "
    "models, evaluate functions, evals and targets each have distinct names.",
)
E_FORM_SYNTAX = define_code(
    "E-FORM-SYNTAX", "malformed contract form",
    "A contract form is missing its name or has the wrong shape, e.g. `(defknob)`, "
    "`(defknob lr 0.1 :range (0))`, `(defvariant small :hidden)` (a knob without a "
    "value) or `(defobjective (model x y) ...)` (batch fields go after &key).",
)

SECTIONS: dict[str, int] = {
    "require": 0, "defknob": 0, "defvariant": 0, "defsweep": 0,
    "defloader": 1, "defmodel": 2, "defobjective": 3, "defevaluate": 3, "defpredict": 3,
    "optimizer": 4, "defeval": 5, "deftarget": 6, "defrun": 7,
}
SECTION_NAMES = ("header (require, defknob, defvariant, defsweep)", "defloader", "defmodel",
                 "defobjective/defevaluate/defpredict", "optimizer", "defeval", "deftarget",
                 "defrun")
REQUIRED = ("defloader", "defmodel", "defobjective", "optimizer", "defrun")
ONCE = ("defobjective", "defpredict", "optimizer", "defrun")
NAMED = ("defknob", "defvariant", "defsweep", "defloader", "defmodel", "defeval",
         "deftarget")


@record
class FileShape:
    """What the prepass learned: declarations, spans of contract forms, model names."""

    decls: Declarations = factory(Declarations)
    spans: dict[tuple[str, str], Span] = factory(dict)
    models: list[str] = factory(list)
    first: dict[str, Span] = factory(dict)


def head_of(form: Any) -> str | None:
    if type(form) is Cons and isinstance(form.car, Symbol) and not form.car.is_keyword:
        return form.car.name.lower()
    return None


def _name_of(form: Cons, head: str) -> str:
    if head == "defevaluate":
        second = form.cdr.car if type(form.cdr) is Cons else None
        return second.name.lower() if isinstance(second, Symbol) and second.name != "NIL" \
            else "default"
    if head in ("defobjective", "defpredict", "optimizer", "defrun", "require"):
        return head
    items = to_py(form.cdr)
    if not items or not isinstance(items[0], Symbol) or items[0].is_keyword:
        raise error(E_FORM_SYNTAX, f"{head} needs a name", form.span,
                    expected=f"({head} NAME ...)", actual=_show(form),
                    fix=f"give the {head} a name right after `{head}`")
    return items[0].name.lower()


def _show(form: Any) -> str:
    text = prin1_to_string(form).lower()
    return text if len(text) < 80 else text[:77] + "..."


def read_forms(path: str) -> tuple[str, list[Any]]:
    """The text of the run file and its forms, read but not evaluated."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(E_FILE, f"cannot read {path}", expected="a readable .sx file",
                    actual=type(exc).__name__, fix="check the path") from None
    return text, read_all(text, path)


def check_shape(forms: list[Any], file: str) -> FileShape:
    shape = FileShape()
    latest = -1
    latest_form: tuple[str, Span | None] = ("", None)
    for form in forms:
        head = head_of(form)
        span = form.span if type(form) is Cons else None
        if span is not None and span.file != file:
            continue
        if head is None or head not in SECTIONS:
            if latest == 7:
                raise error(E_FORM_ORDER, "nothing may follow defrun", span,
                            expected="defrun as the last form", actual=_show(form),
                            fix="move this form above the defrun")
            continue
        section = SECTIONS[head]
        if section < latest:
            prev_head, prev_span = latest_form
            raise error(E_FORM_ORDER, f"{head} comes after {prev_head}", span,
                        expected=f"{SECTION_NAMES[section]} before {SECTION_NAMES[latest]}",
                        actual=f"{head} after {prev_head}"
                        + (f" (line {prev_span.line})" if prev_span else ""),
                        fix=f"move this {head} above the {prev_head}")
        if section > latest:
            latest, latest_form = section, (head, span)
        name = _name_of(form, head)
        key = (head if head != "defevaluate" else "defevaluate", name)
        if head != "require" and key in shape.spans:
            first = shape.spans[key]
            what = head if head in ONCE else f"{head} {name}"
            raise error(E_FORM_DUPLICATE, f"{what} appears twice", span,
                        expected=f"one {what}", actual=f"another at line {first.line}",
                        fix=f"remove or rename one of the two (first at line {first.line})")
        if span is not None:
            shape.spans[key] = span
            shape.first.setdefault(head, span)
        if head == "defmodel":
            shape.models.append(name)
        _declare(shape.decls, head, name, form, span)
    for head in REQUIRED:
        if head not in shape.first:
            raise _missing(head, forms, file)
    return shape


def _missing(head: str, forms: list[Any], file: str) -> Exception:
    """Point at the form the missing one should come before (or the last form)."""
    want = SECTIONS[head]
    where = None
    for form in forms:
        h = head_of(form)
        if h in SECTIONS and SECTIONS[h] > want and form.span is not None:
            where = form.span
            break
    if where is None:
        spans = [f.span for f in forms if type(f) is Cons and f.span is not None]
        where = spans[-1] if spans else Span(file, 1, 1)
    examples = {"defloader": "(defloader train :source (mnist1d :split :train) :batch 100)",
                "defmodel": "(defmodel net () (defchild l (nn:linear 40 10)) (lambda (x) (l x)))",
                "defobjective": "(defobjective (model &key x y) (nn:cross-entropy (model x) y))",
                "optimizer": "(optimizer (optim:adam :lr 1e-3))",
                "defrun": "(defrun :steps 1000)"}
    return error(E_FORM_MISSING, f"the run file has no {head}", where,
                 expected=f"a {head} form", actual=f"no {head} in the file",
                 fix=f"add {examples[head]}")


def _declare(decls: Declarations, head: str, name: str, form: Cons, span: Span | None) -> None:
    items = to_py(form.cdr)
    if head == "defknob":
        if len(items) < 2:
            raise error(E_FORM_SYNTAX, f"defknob {name} needs a default value", span,
                        expected="(defknob NAME DEFAULT [DOC] [:choices (...)] [:range (LO HI)])",
                        actual=_show(form), fix=f"(defknob {name} 1.0 \"what it sets\")")
        decls.knobs[name] = _knob_decl(name, items[1:], span)
    elif head == "defvariant":
        values = _pairs(head, name, items[1:], span)
        decls.variants[name] = VariantDecl(name, {k: knob_value(v) for k, v in values},
                                           span, {k: span for k, _ in values})
    elif head == "defsweep":
        pairs = _pairs(head, name, items[1:], span)
        axes: dict[str, list[Any]] = {}
        zipped, variant = False, None
        for key, value in pairs:
            if key == "zip":
                zipped = value is not None and to_python(value) is not None
            elif key == "variant":
                variant = to_python(value)
            else:
                if type(value) is not Cons:
                    raise error(E_FORM_SYNTAX, f"defsweep {name}: :{key} needs a list of values",
                                span, expected=f":{key} (v1 v2 ...)", actual=_show(value),
                                fix=f"write :{key} ({_show(value)})")
                axes[key] = [knob_value(v) for v in to_py(value)]
        decls.sweeps[name] = SweepDecl(name, axes, zipped, variant, span,
                                       {k: span for k in axes})


def _knob_decl(name: str, rest: list[Any], span: Span | None) -> KnobDecl:
    default = knob_value(rest[0]) if type(rest[0]) is not Cons else None
    decl = KnobDecl(name, default, span=span)
    options = rest[1:]
    if options and isinstance(options[0], str):
        decl.doc = options[0]
        options = options[1:]
    for key, value in _pairs("defknob", name, options, span):
        if key == "choices":
            decl.choices = _knob_choices(name, value, span)
        elif key == "range":
            decl.range = _knob_range(name, value, default, span)
        elif key == "doc":
            decl.doc = str(value)
        else:
            raise error(E_FORM_SYNTAX, f"defknob {name}: unknown option :{key}", span,
                        expected="[DOC] :choices (...) :range (LOW HIGH)", actual=f":{key}",
                        fix="drop the option")
    return decl


def _knob_choices(name: str, value: Any, span: Span | None) -> list[Any]:
    """`:choices (v1 v2 ...)`: a non-empty list of plain values (numbers, strings, keywords)."""
    items = to_py(value) if type(value) is Cons else None
    if not items or any(type(v) is Cons for v in items):
        raise error(E_FORM_SYNTAX, f"defknob {name}: :choices needs a list of values", span,
                    expected=":choices (v1 v2 ...) of numbers, strings or keywords",
                    actual=f":choices {_show(value)}", fix=f":choices ({_show(value)})")
    return [knob_value(v) for v in items]


def _knob_range(name: str, value: Any, default: Any, span: Span | None) -> tuple[float, float]:
    """`:range (LOW HIGH)`: two numbers, LOW <= HIGH, for a numeric knob."""
    items = to_py(value) if type(value) is Cons else None
    bounds = [to_python(v) for v in items] if items else []
    numeric = [b for b in bounds if isinstance(b, (int, float)) and not isinstance(b, bool)]
    if len(bounds) != 2 or len(numeric) != 2 or numeric[0] > numeric[1]:
        raise error(E_FORM_SYNTAX, f"defknob {name}: :range needs two numbers, low then high",
                    span, expected=":range (LOW HIGH) with LOW <= HIGH",
                    actual=f":range {_show(value)}", fix=":range (0 1)")
    computed = default is None  # a default written as a form: its value is not known yet
    if not computed and not (isinstance(default, (int, float)) and not isinstance(default, bool)):
        raise error(E_FORM_SYNTAX, f"defknob {name}: :range is for a numeric knob", span,
                    expected="a number as the default", actual=_show(default),
                    fix="drop :range, or use :choices for other values")
    return numeric[0], numeric[1]


def _pairs(head: str, name: str, items: list[Any], span: Span | None) -> list[tuple[str, Any]]:
    if len(items) % 2 or not all(isinstance(k, Symbol) and k.is_keyword for k in items[::2]):
        raise error(E_FORM_SYNTAX, f"{head} {name}: expected :key value pairs", span,
                    expected=f"({head} {name} :knob value ...)",
                    actual=" ".join(_show(i) for i in items),
                    fix="give every :key a value")
    return [(k.name.lower(), v) for k, v in zip(items[::2], items[1::2])]
