"""`Tensor`: a symbolic value in a graph with Python operators and methods, so
models read like numpy code (`(x @ w + b).relu().sum()`). Nothing computes
here: every call appends IR nodes to the tensor's graph."""

from __future__ import annotations

import os
import sys
from numbers import Number
from typing import Any

from sexpgpu.diagnostics import Span
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph, OfValue, Value

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
    """A Value plus the graph it lives in."""

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
        """Append `op` on self and `others` (tensors or Python numbers)."""
        return apply(self.graph, op, self, *others, **attrs)

    def _lift(self, other: Any) -> Tensor:
        return lift(self.graph, other, self.dtype)

    # arithmetic: Python numbers become constants of this tensor's dtype
    def __add__(self, o: Any) -> Tensor: return self.apply("add", o)
    def __radd__(self, o: Any) -> Tensor: return self._lift(o).apply("add", self)
    def __sub__(self, o: Any) -> Tensor: return self.apply("sub", o)
    def __rsub__(self, o: Any) -> Tensor: return self._lift(o).apply("sub", self)
    def __mul__(self, o: Any) -> Tensor: return self.apply("mul", o)
    def __rmul__(self, o: Any) -> Tensor: return self._lift(o).apply("mul", self)
    def __truediv__(self, o: Any) -> Tensor: return self.apply("div", o)
    def __rtruediv__(self, o: Any) -> Tensor: return self._lift(o).apply("div", self)
    def __pow__(self, o: Any) -> Tensor:
        return self.square() if isinstance(o, int) and o == 2 else self.apply("pow", o)
    def __rpow__(self, o: Any) -> Tensor: return self._lift(o).apply("pow", self)
    def __neg__(self) -> Tensor: return self.apply("neg")
    def __abs__(self) -> Tensor: return self.apply("abs")
    def __matmul__(self, o: Tensor) -> Tensor: return matmul(self, o)
    def __lt__(self, o: Any) -> Tensor: return self.apply("lt", o)
    def __le__(self, o: Any) -> Tensor: return self.apply("le", o)
    def __gt__(self, o: Any) -> Tensor: return self.apply("gt", o)
    def __ge__(self, o: Any) -> Tensor: return self.apply("ge", o)
    # == and != stay Python identity (tensors are dict keys); use eq / ne
    def eq(self, o: Any) -> Tensor: return self.apply("eq", o)
    def ne(self, o: Any) -> Tensor: return self.apply("ne", o)
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

    # unary math and activations
    def relu(self) -> Tensor: return self.apply("relu")
    def gelu(self) -> Tensor: return self.apply("gelu")
    def silu(self) -> Tensor: return self.apply("silu")
    def tanh(self) -> Tensor: return self.apply("tanh")
    def sigmoid(self) -> Tensor: return self.apply("sigmoid")
    def exp(self) -> Tensor: return self.apply("exp")
    def log(self) -> Tensor: return self.apply("log")
    def sqrt(self) -> Tensor: return self.apply("sqrt")
    def rsqrt(self) -> Tensor: return self.apply("rsqrt")
    def square(self) -> Tensor: return self.apply("square")
    def sin(self) -> Tensor: return self.apply("sin")
    def cos(self) -> Tensor: return self.apply("cos")
    def sign(self) -> Tensor: return self.apply("sign")
    def abs(self) -> Tensor: return self.apply("abs")
    def recip(self) -> Tensor: return self.apply("recip")
    def logical_not(self) -> Tensor: return self.apply("logical_not")
    def stop_gradient(self) -> Tensor: return self.apply("stop_gradient")
    def cast(self, dtype: str) -> Tensor: return self.apply("cast", dtype=dtype)
    astype = cast

    # reductions (axis: int, tuple or None for all)
    def sum(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return self._reduce("sum", axis, keepdims)

    def amax(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return self._reduce("amax", axis, keepdims)

    def amin(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return self._reduce("amin", axis, keepdims)

    def _reduce(self, op: str, axis: Any, keepdims: bool) -> Tensor:
        # the IR always holds the explicit, non-negative, sorted axes
        return compose(build.reduce, self, op, _axes(axis), keepdims)

    def argmax(self, axis: int = -1, keepdims: bool = False) -> Tensor:
        axis = axis + self.ndim if -self.ndim <= axis < 0 else axis  # bad ones fail: E-SHAPE
        return self.apply("argmax", axis=axis, keepdims=keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return compose(build.mean, self, _axes(axis), keepdims)

    def var(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return compose(build.var, self, _axes(axis), keepdims)

    def logsumexp(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return compose(build.logsumexp, self, _axes(axis), keepdims)

    def softmax(self, axis: int = -1) -> Tensor:
        return compose(build.softmax, self, axis)

    def log_softmax(self, axis: int = -1) -> Tensor:
        return compose(build.log_softmax, self, axis)

    # shapes
    def reshape(self, *shape: Any) -> Tensor:
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self.apply("reshape", shape=_infer_minus_one(shape, self.value.type.size))

    def permute(self, *perm: Any) -> Tensor:
        perm = tuple(perm[0]) if len(perm) == 1 and not isinstance(perm[0], int) else perm
        return self.apply("permute", perm=perm)

    def transpose(self, a: int = -2, b: int = -1) -> Tensor:
        return compose(build.transpose, self, a, b)

    @property
    def T(self) -> Tensor:  # noqa: N802 - numpy's name
        return self.permute(tuple(reversed(range(self.ndim))))

    def squeeze(self, axis: Any = None) -> Tensor:
        return compose(build.squeeze, self, axis)

    def unsqueeze(self, axis: int) -> Tensor:
        return compose(build.unsqueeze, self, axis)

    def broadcast_to(self, shape: tuple[int, ...]) -> Tensor:
        return self.apply("broadcast_to", shape=tuple(shape))


# -- helpers shared with autodiff.functional --------------------------------------

def _axes(axis: Any) -> tuple[int, ...] | None:
    if axis is None:
        return None
    return (axis,) if isinstance(axis, int) else tuple(axis)


def _infer_minus_one(shape: tuple[int, ...], size: int) -> tuple[int, ...]:
    """numpy's -1 in a reshape: the one size that keeps the element count."""
    if -1 not in shape:
        return tuple(shape)
    known = 1
    for d in shape:
        if d != -1:
            known *= d
    fill = size // known if known else 0
    return tuple(fill if d == -1 else d for d in shape)


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
    return Tensor(graph, out)


def compose(fn: Any, x: Tensor, *args: Any) -> Tensor:
    """Run a `sexpgpu.ir.build` composition on a Tensor."""
    g = x.graph
    with g.at(g._span or caller_span()):
        return Tensor(g, build.checked(fn, g, x.value, *args))


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """a @ b with numpy's 1-D rules: a vector is unsqueezed, then squeezed back."""
    g = a.graph
    with g.at(g._span or caller_span()):
        return Tensor(g, build.checked(build.matmul, g, a.value, b.value))


def getitem(x: Tensor, index: Any) -> Tensor:
    """Basic indexing: ints, slices (positive steps), `...` and None."""
    g = x.graph
    with g.at(g._span or caller_span()):
        return Tensor(g, build.checked(build.index, g, x.value, index))
