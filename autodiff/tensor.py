"""`Tensor`: a symbolic value in a graph with Python operators and methods, so
models read like numpy code (`(x @ w + b).relu().sum()`). Nothing computes
here: every call appends IR nodes to the tensor's graph. The methods (and the
functions of autodiff.functional) are generated from the op registry: an entry's
`method` (or `function`) name, inputs and arguments make its Python signature."""

from __future__ import annotations

import inspect
import os
import sys
from numbers import Number
from typing import Any

from sexpgpu.diagnostics import Span, error
from sexpgpu.ir import build
from sexpgpu.ir.call import ArgError, call
from sexpgpu.ir.graph import Graph, OfValue, Value
from sexpgpu.ir.ops.opdef import OpDef
from sexpgpu.ir.ops.registry import OPS
from sexpgpu.ir.shapes import ShapeRuleError

_HERE = os.path.dirname(os.path.abspath(__file__))
_IR = os.path.dirname(os.path.abspath(build.__file__))


def caller_span() -> Span | None:
    """The first frame outside autodiff and the IR: the user's line, for diagnostics."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(_HERE) or path.startswith(_IR)):
            return Span(frame.f_code.co_filename, frame.f_lineno, 1)
        frame = frame.f_back
    return None


class Tensor(OfValue):
    """A Value plus the graph it lives in. Its op methods (relu, sum, reshape, ...)
    and operators (+, @, <, ...) are generated from the registry below the class."""

    __slots__ = ("graph", "value")
    __array_priority__ = 1000  # numpy scalars on the left defer to our operators

    def __init__(self, graph: Graph, value: Value):
        self.graph = graph
        self.value = value

    # -- facts (shape and dtype from OfValue) ----------------------------------
    @property
    def ndim(self) -> int:
        return len(self.value.shape)

    def __repr__(self) -> str:
        return f"Tensor({self.value!r})"

    # -- building ---------------------------------------------------------------
    def apply(self, op: str, *others: Any, **attrs: Any) -> Tensor:
        """Append IR op `op` on self and `others` (tensors or Python numbers)."""
        return apply(self.graph, op, self, *others, **attrs)

    def _lift(self, other: Any) -> Tensor:
        return lift(self.graph, other, self.dtype)

    def __pow__(self, o: Any) -> Tensor:
        # x ** 2 is the cheaper, integer-friendly square
        if isinstance(o, int) and not isinstance(o, bool) and o == 2:
            return self.square()
        return _METHODS["pow"](self, o)

    # == and != stay Python identity (tensors are dict keys); use eq / ne
    __hash__ = object.__hash__

    def __getitem__(self, index: Any) -> Tensor:
        return getitem(self, index)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a rank-0 tensor")
        return self.shape[0]

    def __iter__(self):
        # rows along the first axis (unpacking `a, b = t` works)
        return (self[i] for i in range(len(self)))

    @property
    def T(self) -> Tensor:  # noqa: N802 - numpy's name
        return self.permute(tuple(reversed(range(self.ndim))))


# -- methods and functions from the registry ---------------------------------------

# reflected operators: `2 - x` calls x.__rsub__(2), which is sub(2, x)
REFLECTED = {"__add__": "__radd__", "__sub__": "__rsub__", "__mul__": "__rmul__",
             "__truediv__": "__rtruediv__", "__pow__": "__rpow__",
             "__matmul__": "__rmatmul__"}
# other names for the same methods (numpy's and Python's)
ALIASES = {"astype": "cast", "__abs__": "abs", "repeat": "tile"}


def signature(opdef: OpDef, as_method: bool) -> inspect.Signature:
    """The Python signature of an entry's method (self is its first tensor) or function
    (its tensors first; a `graph` first when it has no tensor at all; einsum's
    subscripts before its operands)."""
    P = inspect.Parameter
    tensors = opdef.tensor_inputs
    ins = []
    for k, t in enumerate(tensors):
        name = "self" if as_method and k == 0 else t.name
        if t.role == "rest":
            ins.append(P(name, P.VAR_POSITIONAL))
        else:
            ins.append(P(name, P.POSITIONAL_OR_KEYWORD,
                         default=None if t.optional else P.empty))
    args = []
    for arg in opdef.args:
        if arg.varargs:
            args.append(P(arg.py_key, P.VAR_POSITIONAL))
        else:
            args.append(P(arg.py_key, P.POSITIONAL_OR_KEYWORD,
                          default=P.empty if arg.required else arg.default))
    rest = any(t.role == "rest" for t in tensors)
    ordered = args + ins if rest else ins + args
    if not tensors and not as_method:
        ordered.insert(0, P("graph", P.POSITIONAL_OR_KEYWORD))
    # Python's order: a parameter without a default after one with a default, and
    # every parameter after *args, is keyword-only
    fixed: list[inspect.Parameter] = []
    loose = starred = False
    for p in ordered:
        if p.kind == P.VAR_POSITIONAL:
            starred = loose = True
        elif starred or (loose and p.default is P.empty):
            p = p.replace(kind=P.KEYWORD_ONLY)
        elif p.default is not P.empty:
            loose = True
        fixed.append(p)
    return inspect.Signature(fixed)


def _graph_of(bound: dict[str, Any]) -> Graph:
    for v in bound.values():
        for t in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(t, Tensor):
                return t.graph
    if isinstance(bound.get("graph"), Graph):
        return bound["graph"]
    raise TypeError("no tensor among the arguments (pass a graph or a Tensor)")


def _value(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.value
    if isinstance(x, (list, tuple)):
        return [_value(t) for t in x]
    if isinstance(x, Number) or x is None or isinstance(x, bool):
        return x
    raise TypeError(f"cannot use {type(x).__name__} as a tensor")


def bind(opdef: OpDef, as_method: bool) -> Any:
    """The Python function (or method) of a registry entry."""
    sig = signature(opdef, as_method)
    names = {t.name: ("self" if as_method and k == 0 else t.name)
             for k, t in enumerate(opdef.tensor_inputs)}

    def op(*args: Any, **kwargs: Any) -> Any:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        g = _graph_of(given)
        tensors = [_value(given[names[t.name]]) for t in opdef.tensor_inputs]
        values = {}
        for arg in opdef.args:
            v = given.get(arg.py_key)
            if arg.varargs and isinstance(v, tuple):
                v = v[0] if len(v) == 1 and not isinstance(v[0], int) else v
            values[arg.name] = v
        with g.at(g._span or caller_span()):
            try:
                out = call(g, opdef, tensors, values)
            except ArgError as exc:
                raise TypeError(f"{opdef.name}: {exc.message} (expected {exc.expected}, "
                                f"got {exc.actual})") from None
            except ShapeRuleError as exc:  # outside any one node: a bad axis, a dtype
                raise error(exc.code, f"{opdef.name}: {exc.message}", g._span,
                            expected=exc.expected, actual=exc.actual, fix=exc.fix,
                            notes=list(g._notes)) from None
        return _wrap(g, out)

    op.__name__ = opdef.method if as_method else opdef.function
    op.__qualname__ = f"Tensor.{op.__name__}" if as_method else op.__name__
    op.__signature__ = sig
    op.__doc__ = opdef.doc
    return op


def _wrap(g: Graph, out: Any) -> Any:
    if isinstance(out, Value):
        return Tensor(g, out)
    return tuple(_wrap(g, v) for v in out)


def _reflected(opdef: OpDef) -> Any:
    def reflected(self: Tensor, other: Any) -> Tensor:
        g = self.graph
        with g.at(g._span or caller_span()):
            return _wrap(g, call(g, opdef, [_value(other), self.value], {}))
    return reflected


def install_methods(cls: type) -> dict[str, Any]:
    """Each entry's method on `cls` (a method written in the class body stays), its
    reflected operator, and the aliases; returns the generated methods by op."""
    made: dict[str, Any] = {}
    for opdef in OPS.values():
        if opdef.method is None:
            continue
        method = bind(opdef, as_method=True)
        made[opdef.name] = method
        if opdef.method not in cls.__dict__:
            setattr(cls, opdef.method, method)
        if opdef.method in REFLECTED:
            setattr(cls, REFLECTED[opdef.method], _reflected(opdef))
    for alias, name in ALIASES.items():
        setattr(cls, alias, getattr(cls, name))
    return made


_METHODS = install_methods(Tensor)


def functions() -> dict[str, Any]:
    """Each entry's function (`sexpgpu.autodiff.<function>`) by name."""
    return {opdef.function: bind(opdef, as_method=False)
            for opdef in OPS.values() if opdef.function is not None}


# -- helpers shared with autodiff.functional --------------------------------------


def lift(graph: Graph, x: Any, dtype: str) -> Tensor:
    """A Tensor as is; a Python number as a rank-0 constant of `dtype`."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, Number):
        with graph.at(graph._span or caller_span()):
            return Tensor(graph, build.scalar(graph, x, dtype))
    raise TypeError(f"cannot use {type(x).__name__} as a tensor (build constants with full)")


def apply(graph: Graph, op: str, *args: Any, **attrs: Any) -> Tensor:
    """g.apply on Tensors and numbers, with the user's line as the span."""
    dtype = next((a.dtype for a in args if isinstance(a, Tensor)), "f32")
    values = [lift(graph, a, dtype).value for a in args]
    with graph.at(graph._span or caller_span()):
        out = graph.apply(op, *values, **attrs)
    return _wrap(graph, out)


def compose(fn: Any, x: Tensor, *args: Any) -> Tensor:
    """Run a `sexpgpu.ir.build` composition on a Tensor."""
    g = x.graph
    with g.at(g._span or caller_span()):
        return Tensor(g, build.checked(fn, g, x.value, *args))


def getitem(x: Tensor, index: Any) -> Tensor:
    """Basic indexing: ints, slices (positive steps), `...` and None."""
    g = x.graph
    with g.at(g._span or caller_span()):
        return Tensor(g, build.checked(build.index, g, x.value, index))
