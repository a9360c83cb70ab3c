"""Tests generated from the op registry, so no op can skip them: every op's
samples build, their shapes match the reference, and every differentiable op's
VJP matches float64 central finite differences of <v, f(x)>."""

from __future__ import annotations

import numpy as np
import pytest
from sexpgpu.autodiff.grad import grad
from sexpgpu.autodiff.gradcheck import directional

from sexpgpu.diagnostics import SexpError
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.ops._sampling import index_error_samples, special_samples
from sexpgpu.ir.ops.registry import OPS, get_op
from sexpgpu.ir.reference import run_reference
from sexpgpu.ir.types import FLOAT_DTYPES

get_op("add")  # registers every family
ALL_OPS = sorted(OPS)


def ir_dtype(array: np.ndarray) -> str:
    if array.dtype == np.bool_:
        return "bool"
    if np.issubdtype(array.dtype, np.integer):
        return "i64"
    return "f32"


def build(name: str, arrays: list, attrs: dict) -> tuple[Graph, list, object]:
    g = Graph(name)
    xs = [g.input(f"x{i}", np.shape(a), ir_dtype(np.asarray(a))) for i, a in enumerate(arrays)]
    return g, xs, g.apply(name, *xs, **attrs)


def cases(name: str) -> list:
    opdef = OPS[name]
    assert opdef.samples is not None, f"{name} has no samples"
    return opdef.samples(np.random.default_rng(sum(map(ord, name))))


@pytest.mark.parametrize("name", ALL_OPS)
def test_forward_matches_reference(name: str) -> None:
    for arrays, attrs in cases(name):
        g, xs, y = build(name, arrays, attrs)
        g.output("y", y)
        feed = {x.name: np.asarray(a) for x, a in zip(xs, arrays)}
        got = run_reference(g, feed, dtype_override="f64")["y"]
        with np.errstate(all="ignore"):
            want = OPS[name].reference(*[np.asarray(a) for a in arrays], **attrs)
        assert got.shape == y.shape
        if y.dtype in FLOAT_DTYPES:
            np.testing.assert_allclose(got, np.asarray(want, dtype=np.float64), rtol=1e-12,
                                       atol=1e-12)
        else:
            np.testing.assert_array_equal(got, np.asarray(want).astype(got.dtype))
        # f32 mode agrees with f64 mode to f32 precision
        low = run_reference(g, feed)["y"]
        if y.dtype == "f32":
            np.testing.assert_allclose(low, got, rtol=2e-5, atol=2e-5)


def _differentiable(name: str) -> bool:
    return OPS[name].vjp is not None and OPS[name].extra.get("fd_check", True)


def _float_inputs(arrays: list) -> list[int]:
    return [i for i, a in enumerate(arrays) if ir_dtype(np.asarray(a)) == "f32"]


@pytest.mark.parametrize("name", [n for n in ALL_OPS if _differentiable(n)])
def test_vjp_matches_finite_differences(name: str) -> None:
    rng = np.random.default_rng(7)
    checked = 0
    for arrays, attrs in cases(name):
        g, xs, y = build(name, arrays, attrs)
        if y.dtype not in FLOAT_DTYPES:
            continue
        floats = _float_inputs(arrays)
        v_in = g.input("v", y.shape, y.dtype)
        loss = g.apply("sum", g.apply("mul", y, v_in), axes=None, keepdims=False)
        grads = grad(g, loss, [xs[i] for i in floats])
        for i in floats:
            g.output(f"d{i}", grads[xs[i]])
        g.output("loss", loss)
        feed = {x.name: np.asarray(a) for x, a in zip(xs, arrays)}
        feed["v"] = rng.standard_normal(y.shape)
        analytic, numeric = directional(g, feed, "loss", {f"x{i}": f"d{i}" for i in floats},
                                        seed=checked)
        assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-6), (name, attrs)
        checked += 1
    assert checked, f"{name}: no sample exercised the VJP"


@pytest.mark.parametrize("name", ALL_OPS)
def test_entry_is_complete(name: str) -> None:
    """Every op documents itself, and every op that can output floats from inputs
    can be differentiated (a missing VJP must be a decision, not an accident)."""
    opdef = OPS[name]
    assert opdef.doc
    assert opdef.kind in ("elementwise", "reduce", "view", "opaque")
    if opdef.kind == "elementwise":
        assert opdef.scalar
    if opdef.kind == "reduce":
        assert opdef.extra["combine"] in ("add", "max", "min") and "init" in opdef.extra
    float_outputs = any(
        OPS[name].infer([_type(a) for a in arrays], attrs).dtype in FLOAT_DTYPES
        for arrays, attrs in cases(name) if arrays)
    if float_outputs:
        assert opdef.vjp is not None, f"{name} outputs floats but has no VJP"


def _type(array):
    from sexpgpu.ir.types import TensorType

    return TensorType(np.shape(array), ir_dtype(np.asarray(array)))


@pytest.mark.parametrize("name", ALL_OPS)
def test_special_value_cases_cover_the_op(name: str) -> None:
    """The special-value variant (tests/test_kernels_ops.py and the CUDA simulator
    run it) exists for every op: an op with float inputs meets NaN, both
    infinities, a subnormal and -0 in them; an op with index inputs meets
    negative indices, and out-of-range ones that are E-INDEX in the reference."""
    opdef = OPS[name]
    specials = special_samples(opdef, np.random.default_rng(1))
    assert specials, name
    floats = np.concatenate([np.ravel(a) for arrays, _ in specials for a in arrays
                             if np.asarray(a).dtype.kind == "f"] or [np.zeros(0)])
    if floats.size:
        assert np.isnan(floats).any() and np.isposinf(floats).any() \
            and np.isneginf(floats).any(), name
        assert (np.abs(floats) == 1e-40).any() and np.signbit(floats[floats == 0]).any(), name
    if "indices" in opdef.extra:
        assert any((np.asarray(a) < 0).any() for arrays, attrs in specials
                   for j, a in enumerate(arrays) if j in opdef.extra["indices"](arrays, attrs))
        for arrays, attrs in index_error_samples(opdef, np.random.default_rng(1)):
            g, xs, y = build(name, arrays, attrs)
            g.output("y", y)
            with pytest.raises(SexpError) as info:
                run_reference(g, {x.name: np.asarray(a) for x, a in zip(xs, arrays)})
            assert info.value.diagnostic.code == "E-INDEX"
