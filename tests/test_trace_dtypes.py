"""The tensor builtins keep the dtype rules of the ops they build: an integer tensor
given to a float-only op is E-DTYPE at the user's line, never silently cast. The
table is generated from the op registry, so a new unary op is covered as soon as
its entry exists, and its declared integer rule must be what its shape rule does."""

from __future__ import annotations

import pytest

from sexpgpu.contract.compile import make_interpreter
from sexpgpu.diagnostics import SexpError
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.ops.registry import OPS, get_op
from sexpgpu.ir.shapes import ShapeRuleError
from sexpgpu.ir.types import TensorType
from sexpgpu.trace.tensor import Trace, TracedTensor, tracing

# every Lisp name of a one-input elementwise op: (- y) is neg, (/ y) recip
UNARY_BUILTINS = sorted((lisp, op.name) for op in OPS.values()
                        if op.kind == "elementwise" and len(op.inputs) == 1 and not op.args
                        for lisp in op.lisp)


def _accepts(op: str, dtype: str) -> bool:
    """What the op's own registry rule says about `dtype`."""
    try:
        get_op(op).infer([TensorType((4,), dtype)], {})
    except ShapeRuleError:
        return False
    return True


def trace(expr: str, dtype: str = "i64", shape: tuple[int, ...] = (4,)) -> TracedTensor:
    """Evaluate EXPR with `y` bound to a symbolic tensor of `dtype`, in a trace."""
    interp = make_interpreter()
    g = Graph("t")
    with tracing(Trace(g)):
        interp.set_global("Y", TracedTensor(g.input("y", shape, dtype)), special=False)
        return interp.load(expr, "t.sx")


@pytest.mark.parametrize("name,op", UNARY_BUILTINS, ids=[n for n, _ in UNARY_BUILTINS])
@pytest.mark.parametrize("dtype", ["i64", "bool"])
def test_unary_builtins_follow_their_ops_dtype_rule(name: str, op: str, dtype: str) -> None:
    expr = f"({name} y)"
    if _accepts(op, dtype):
        want = get_op(op).infer([TensorType((4,), dtype)], {}).dtype  # isnan: bool
        assert trace(expr, dtype).dtype == want
        return
    with pytest.raises(SexpError) as info:
        trace(expr, dtype)
    diag = info.value.diagnostic
    assert diag.code == "E-DTYPE", diag.message
    assert (diag.span.file, diag.span.line, diag.span.col) == ("t.sx", 1, 1)
    assert diag.actual == dtype and "cast" in diag.fix


def test_float_only_ops_are_the_documented_ones() -> None:
    """An entry's integer rule (which docs/tensors.md shows) is what its rule does."""
    float_only = sorted({op for _, op in UNARY_BUILTINS
                         if not _accepts(op, "i64") and not _accepts(op, "bool")})
    declared = sorted({op for _, op in UNARY_BUILTINS if OPS[op].integers == "reject"})
    assert float_only == declared
    assert {"exp", "log", "sigmoid", "sqrt"} <= set(float_only)


@pytest.mark.parametrize("expr", ["(softmax y)", "(log-softmax y)", "(logsumexp y)"])
def test_compositions_of_exp_reject_integers(expr: str) -> None:
    with pytest.raises(SexpError) as info:
        trace(expr)
    assert info.value.diagnostic.code == "E-DTYPE"
    assert info.value.diagnostic.message.startswith(expr[1:].split()[0])


@pytest.mark.parametrize("expr", ["(mean y)", "(var y)"])
def test_mean_and_var_of_integers_are_floats(expr: str) -> None:
    assert trace(expr).dtype == "f32"


def test_plain_numbers_are_float_constants_for_float_only_ops() -> None:
    assert trace("(+ y (sigmoid 0))", "f32").dtype == "f32"


def test_one_hot_takes_integer_indices() -> None:
    assert trace("(one-hot y 10)").shape == (4, 10)
    with pytest.raises(SexpError) as info:
        trace("(one-hot y 10)", "f32")
    assert info.value.diagnostic.code == "E-DTYPE"
    assert "(cast x :i64)" in info.value.diagnostic.fix


def test_python_api_mean_of_integers_is_not_truncated() -> None:
    import numpy as np

    from sexpgpu import autodiff as ad

    fn = ad.Function()
    y = fn.input("y", (4,), "i64")
    fn.output("m", y.mean())
    fn.output("v", y.var())
    out = fn.compile("reference")(y=np.array([1, 2, 3, 4]))
    assert float(out["m"]) == 2.5 and float(out["v"]) == 1.25
