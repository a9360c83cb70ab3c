"""Model instantiation: scopes give parameters their paths (`blocks/0/attn/w-q`),
`defparam` makes a parameter (a graph input of role "param") with its initialiser,
`defchild` names a child model or a list of them, `:tie` shares one parameter."""

from __future__ import annotations

from collections.abc import Callable
from math import prod, sqrt
from typing import Any

from sexpgpu.diagnostics import Span, define_code, error
from sexpgpu.ir.graph import Value
from sexpgpu.lisp.types import NIL, Cons, Symbol, keyword, to_py
from sexpgpu.record import factory, record
from sexpgpu.suggest import did_you_mean
from sexpgpu.trace import args as A
from sexpgpu.trace.tensor import TracedTensor, current, site

E_MODEL = define_code(
    "E-MODEL", "malformed model",
    "`defmodel` bodies declare parameters with `defparam`, children with `defchild` and "
    "end in a `lambda` (the forward function). This error covers a `defparam`/`defchild` "
    "outside a model, a model constructor called without `defchild` to name it, two "
    "parameters or children with the same path, a shape that is not a list of positive "
    "integers, and a body that does not return a function.",
)
E_INIT = define_code(
    "E-INIT", "bad initialiser",
    "`:init` takes :zeros, :ones, (constant v), (normal std [mean]), (uniform low high), "
    "(xavier-uniform [gain]), (xavier-normal [gain]), (kaiming-uniform [gain]) or "
    "(kaiming-normal [gain]); a standard deviation must be >= 0 and low <= high.",
)

INIT_KINDS = ("zeros", "ones", "constant", "normal", "uniform", "xavier-uniform",
              "xavier-normal", "kaiming-uniform", "kaiming-normal")


@record(frozen=True)
class InitSpec:
    """How the runtime fills a parameter: `dist` is zeros, ones, constant, normal or
    uniform with `params` (value / mean, std / low, high); `kind` is what the user wrote."""

    kind: str
    dist: str
    params: dict[str, float] = factory(dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "dist": self.dist, **self.params}


@record
class ParamSpec:
    path: str
    shape: tuple[int, ...]
    dtype: str
    init: InitSpec
    span: Span | None = None
    tied: list[str] = factory(list)   # alias paths sharing this parameter

    @property
    def count(self) -> int:
        return prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)


class Scope:
    """A node of the model tree: a child slot (`defchild NAME`) or a model instance."""

    def __init__(self, name: str | None, parent: Scope | None, kind: str):
        self.name = name
        self.parent = parent
        self.kind = kind                      # "root", "child" or "instance"
        self.instances: list[Scope] = []      # for child slots: constructors called inside
        self.is_list = False
        self.locals: dict[str, Any] = {}      # instance: local name -> TracedTensor or child value
        self.model: str = ""

    def parts(self) -> list[str]:
        if self.parent is None:
            return []
        up = self.parent.parts()
        if self.kind == "child":
            return up + [self.name] if self.name else up
        slot = self.parent
        if slot.is_list or len(slot.instances) > 1:
            return up + [str(slot.instances.index(self))]
        return up

    def path(self, name: str) -> str:
        return "/".join(self.parts() + [name])


@record
class _Pending:
    scope: Scope
    name: str
    value: Value
    span: Span | None
    init: InitSpec | None = None
    tie: Value | None = None


class ModelBuilder:
    """Instantiates models into the graph being traced and keeps the parameter table."""

    def __init__(self) -> None:
        self.specs: dict[str, ParamSpec] = {}
        self.aliases: dict[str, str] = {}     # tied path -> owner path
        self._stack: list[Scope] = []
        self._pending: list[_Pending] = []
        self._children: dict[int, Scope] = {}  # id(child value) -> its instance scope
        # the run file's own defmodel forms by name (library models report at the caller)
        self.model_span: Callable[[str], Span | None] = lambda name: None
        # set by trace.health while the diagnostics graph is traced: wraps each forward
        self.forward_hook: Callable[[Any, Scope], Any] | None = None

    # -- called from the defmodel expansion ----------------------------------

    def enter_model(self, name: str) -> None:
        parent = self._stack[-1] if self._stack else None
        if parent is None or parent.kind != "child":
            span, notes = site()
            raise error(E_MODEL, f"model `{name}` constructed outside defchild", span,
                        expected=f"(defchild NAME ({name} ...)) inside a defmodel",
                        actual=f"({name} ...) called directly",
                        fix=f"name it: (defchild my-{name} ({name} ...))", notes=list(notes))
        scope = Scope(None, parent, "instance")
        scope.model = name
        parent.instances.append(scope)
        self._stack.append(scope)

    def leave_model(self, forward: Any) -> Any:
        scope = self._stack.pop()
        if not A.is_function(forward):
            span, notes = site()
            span = span or self.model_span(scope.model)
            raise error(E_MODEL, f"defmodel `{scope.model}` must return its forward function",
                        span, expected="the body's last form is (lambda (x ...) ...)",
                        actual=A.show(forward), fix="end the defmodel body with a lambda",
                        notes=list(notes))
        self._children[id(forward)] = scope
        if self.forward_hook is None:
            return forward
        wrapped = self.forward_hook(forward, scope)
        self._children[id(wrapped)] = scope
        return wrapped

    def _instance(self, form: str) -> Scope:
        scope = self._stack[-1] if self._stack else None
        if scope is None or scope.kind != "instance":
            span, notes = site()
            raise error(E_MODEL, f"{form} outside defmodel", span,
                        expected=f"{form} inside a defmodel body", actual="top level",
                        fix="move it into the defmodel that owns it", notes=list(notes))
        return scope

    def _claim(self, scope: Scope, name: str, form: str) -> None:
        if name in scope.locals:
            span, notes = site()
            raise error(E_MODEL, f"`{name}` declared twice in model `{scope.model}`", span,
                        expected="distinct names for parameters and children",
                        actual=f"a second {form} {name}", fix=f"rename one of the two `{name}`",
                        notes=list(notes))

    def defparam(self, name: str, shape: Any, init: Any, tie: Any, dtype: Any) -> TracedTensor:
        scope = self._instance("defparam")
        self._claim(scope, name, "defparam")
        span, _ = site()
        trace = current("defparam")
        if tie is not None and tie is not NIL:
            if not isinstance(tie, TracedTensor) or tie.value.role != "param":
                raise A.fail(f"defparam {name}: :tie needs a parameter", expected="a parameter "
                             "such as (child-param wte 'weight)", actual=A.show(tie))
            if shape is not None and shape is not NIL and _shape(name, shape) != tie.shape:
                raise error(E_MODEL, f"defparam {name}: tied parameter has another shape", span,
                            expected=str(_shape(name, shape)), actual=str(tie.shape),
                            fix="tie parameters of the same shape (transpose at the use)")
            self._pending.append(_Pending(scope, name, tie.value, span, tie=tie.value))
            scope.locals[name] = tie
            return tie
        dims = _shape(name, shape)
        kind = A.dtype("defparam", dtype) if dtype is not None and dtype is not NIL else "f32"
        spec_init = parse_init(init, dims)
        value = trace.graph.input(name, dims, kind, role="param")
        self._pending.append(_Pending(scope, name, value, span, init=spec_init))
        tensor = TracedTensor(value)
        scope.locals[name] = tensor
        return tensor

    def defchild(self, name: str, thunk_result: Any, slot: Scope) -> Any:
        """Called after the child form ran under `slot` (see `open_child`)."""
        self._stack.pop()
        parent = self._stack[-1]
        self._claim(parent, name, "defchild")
        if thunk_result is NIL or type(thunk_result) is Cons or isinstance(thunk_result, list):
            slot.is_list = True
        parent.locals[name] = thunk_result
        return thunk_result

    def open_child(self, name: str) -> Scope:
        parent = self._instance("defchild")
        slot = Scope(name, parent, "child")
        self._stack.append(slot)
        return slot

    def child_param(self, child: Any, name: str) -> TracedTensor:
        scope = self._children.get(id(child))
        found = scope.locals.get(name) if scope is not None else None
        if not isinstance(found, TracedTensor):
            known = sorted(k for k, v in (scope.locals.items() if scope else ())
                           if isinstance(v, TracedTensor))
            raise A.fail(f"child-param: no parameter `{name}`",
                         expected=f"one of: {', '.join(known) or '(not a model child)'}",
                         actual=name)
        return found

    # -- the top level ---------------------------------------------------------

    def instantiate(self, constructor: Any, call: Any, model_name: str) -> Any:
        """Run the top model's constructor under the root; name every parameter."""
        root = Scope(None, None, "root")
        slot = Scope(None, root, "child")
        slot.parent = root
        self._stack = [root, slot]
        self._pending = []
        forward = call(constructor)
        self._stack = []
        self._finish()
        return forward

    def _finish(self) -> None:
        owners: dict[int, str] = {}
        for p in self._pending:
            if p.tie is None:
                path = p.scope.path(p.name)
                p.value.name = path
                owners[p.value.id] = path
                if path in self.specs and self.specs[path].shape != p.value.shape:
                    raise error(E_MODEL, f"parameter `{path}` declared twice", p.span,
                                expected="one parameter per path",
                                actual=f"shapes {self.specs[path].shape} and {p.value.shape}",
                                fix="give one of them another name")
                if path not in self.specs:
                    assert p.init is not None
                    self.specs[path] = ParamSpec(path, p.value.shape, p.value.dtype, p.init,
                                                 p.span)
        for p in self._pending:
            if p.tie is not None:
                alias, owner = p.scope.path(p.name), owners.get(p.tie.id, p.tie.name or "")
                self.aliases[alias] = owner
                spec = self.specs.get(owner)
                if spec is not None and alias not in spec.tied:
                    spec.tied.append(alias)


def _shape(name: str, shape: Any) -> tuple[int, ...]:
    items = to_py(shape) if (shape is NIL or type(shape) is Cons) else (
        shape if isinstance(shape, list) else [shape])
    if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in items):
        span, notes = site()
        raise error(E_MODEL, f"defparam {name}: shape must be a list of positive integers", span,
                    expected="e.g. (list n-embd vocab)", actual=A.show(shape),
                    fix="compute the shape from integer knobs and constructor arguments",
                    notes=list(notes))
    return tuple(items)


def _fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """PyTorch's convention: weights are (out, in, *kernel)."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def parse_init(init: Any, shape: tuple[int, ...]) -> InitSpec:
    """`:zeros`, or (KIND arg... :gain g ...) as built by the defparam macro."""
    if init is None or init is NIL:
        init = _default_init(shape)
    if A.is_keyword(init):
        kind, items = A.kw_name(init), []
    elif type(init) is Cons and isinstance(init.car, Symbol):
        kind, items = init.car.name.lower(), to_py(init.cdr)
    else:
        raise _init_error("an initialiser", init, "a keyword like :zeros or (normal 0.02)")
    if kind not in INIT_KINDS:
        span, notes = site()
        raise error(E_INIT, f"unknown initialiser `{kind}`", span,
                    expected=", ".join(INIT_KINDS), actual=kind,
                    fix=did_you_mean(kind, list(INIT_KINDS)), notes=list(notes))
    pos, kw = A.split(kind, tuple(items), ("gain", "std", "mean", "low", "high", "value"))
    nums = [A.number(kind, x) for x in pos]
    fan_in, fan_out = _fans(shape)
    gain = float(A.number(kind, kw.get("gain", 1.0), ":gain"))
    if kind in ("zeros", "ones"):
        return InitSpec(kind, kind)
    if kind == "constant":
        value = nums[0] if nums else kw.get("value")
        if value is None:
            raise _init_error(kind, init, "(constant VALUE)")
        return InitSpec(kind, "constant", {"value": float(A.number(kind, value))})
    if kind == "normal":
        std = float(nums[0] if nums else A.number(kind, kw.get("std", 1.0)))
        mean = float(nums[1] if len(nums) > 1 else A.number(kind, kw.get("mean", 0.0)))
        if std < 0:
            raise _init_error(kind, init, "a standard deviation >= 0")
        return InitSpec(kind, "normal", {"mean": mean, "std": std})
    if kind == "uniform":
        low = float(nums[0] if nums else A.number(kind, kw.get("low", -1.0)))
        high = float(nums[1] if len(nums) > 1 else A.number(kind, kw.get("high", 1.0)))
        if low > high:
            raise _init_error(kind, init, "low <= high")
        return InitSpec(kind, "uniform", {"low": low, "high": high})
    if nums:
        gain = float(nums[0])
    if kind.startswith("xavier"):
        std = gain * sqrt(2.0 / (fan_in + fan_out))
    else:
        std = gain / sqrt(fan_in)
    if kind.endswith("uniform"):
        bound = sqrt(3.0) * std
        return InitSpec(kind, "uniform", {"low": -bound, "high": bound})
    return InitSpec(kind, "normal", {"mean": 0.0, "std": std})


def _default_init(shape: tuple[int, ...]) -> Any:
    return keyword("ZEROS") if len(shape) <= 1 else keyword("XAVIER-UNIFORM")


def _init_error(kind: str, init: Any, expected: str) -> Exception:
    span, notes = site()
    return error(E_INIT, f"bad arguments to the `{kind}` initialiser", span,
                 expected=expected, actual=A.show(init),
                 fix="see docs/models.md for the initialisers and their arguments",
                 notes=list(notes))
