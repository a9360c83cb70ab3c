"""A graph of f32 and bool scalars computed in plain Python, for the few values a
check needs (a learning-rate schedule at 33 steps) without importing numpy.

Each node is its op's elementwise body (the text the CPU kernels compile, e.g.
`math.cos(x0)`) evaluated in double and rounded to f32, as the kernels compute it;
the reference interpreter (`ir/reference.py`) computes in numpy's f32, the same
value for + - * / and within an ulp for libm's functions. Any other node (a tensor,
an integer, an op with no body, a math domain error) answers None: the caller then
runs the reference interpreter."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from types import CodeType
from typing import Any

from sexpgpu.ir.graph import Node, Value
from sexpgpu.ir.ops.registry import get_op

_DTYPES = ("f32", "bool")
_CODE: dict[str, CodeType] = {}  # a body's text -> its compiled expression
_GLOBALS = {"math": math}


def _f32(x: float) -> float:
    # array("f") rounds a double to the nearest f32 (overflowing to inf, as numpy does)
    return array("f", (x,))[0]


def _held(x: Any, dtype: str) -> float | bool:
    return bool(x) if dtype == "bool" else _f32(float(x))


def _scalar(value: Value) -> bool:
    return value.shape == () and value.dtype in _DTYPES


def _compiled(body: str) -> CodeType:
    code = _CODE.get(body)
    if code is None:
        code = _CODE[body] = compile(body, f"<{body}>", "eval")
    return code


def _node_value(node: Node, args: list[float | bool]) -> float | bool | None:
    out = node.outputs[0]
    if node.op == "full":
        return _held(node.attrs["value"], out.dtype)
    opdef = get_op(node.op)
    body = opdef.body(node.attrs) if opdef.kind == "elementwise" else None
    if body is None or "{" in body:
        return None
    try:
        result = eval(_compiled(body), _GLOBALS, {f"x{i}": a for i, a in enumerate(args)})
    except (ArithmeticError, ValueError):  # numpy gives inf/nan: the reference decides
        return None
    return _held(result, out.dtype)


def evaluate(nodes: Iterable[Node], feed: dict[int, float], value: Value) -> float | None:
    """`value` computed from the nodes in order, the graph's inputs given by value id
    in `feed`; None when a node is not a scalar elementwise op on f32 and bools."""
    env: dict[int, float | bool] = {vid: _f32(x) for vid, x in feed.items()}
    for node in nodes:
        if len(node.outputs) != 1 or not all(map(_scalar, (*node.inputs, *node.outputs))):
            return None
        result = _node_value(node, [env[v.id] for v in node.inputs])
        if result is None:
            return None
        env[node.outputs[0].id] = result
    return float(env[value.id]) if value.id in env else None
