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
    return g, xs, OPS[name].apply_case(g, xs, attrs)


def cases(name: str) -> list:
    opdef = OPS[name]
    assert opdef.samples is not None, f"{name} has no samples"
    return opdef.samples(np.random.default_rng(sum(map(ord, name))))


@pytest.mark.parametrize("name", ALL_OPS)
def test_forward_matches_reference(name: str) -> None:
    for arrays, attrs in cases(name):
        g, xs, y = build(name, arrays, attrs)
        outs = _outputs(y)
        for k, out in enumerate(outs):
            g.output(f"y{k}", out)
        feed = {x.name: np.asarray(a) for x, a in zip(xs, arrays)}
        got64 = run_reference(g, feed, dtype_override="f64")
        low = run_reference(g, feed)
        with np.errstate(all="ignore"):
            wants = OPS[name].reference(*[np.asarray(a) for a in arrays], **attrs)
        wants = list(wants) if isinstance(y, tuple) else [wants]
        assert len(wants) == len(outs), name
        for k, (out, want) in enumerate(zip(outs, wants)):
            got = got64[f"y{k}"]
            assert got.shape == out.shape, (name, attrs)
            if out.dtype in FLOAT_DTYPES:
                np.testing.assert_allclose(got, np.asarray(want, dtype=np.float64), rtol=1e-12,
                                           atol=1e-12, err_msg=f"{name} {attrs}")
            else:
                np.testing.assert_array_equal(got, np.asarray(want).astype(got.dtype),
                                              err_msg=f"{name} {attrs}")
            # f32 mode agrees with f64 mode to f32 precision
            if out.dtype == "f32":
                np.testing.assert_allclose(low[f"y{k}"], got, rtol=2e-5, atol=2e-5)


def _float_inputs(arrays: list) -> list[int]:
    return [i for i, a in enumerate(arrays) if ir_dtype(np.asarray(a)) == "f32"]


def _differentiable(name: str) -> bool:
    """A VJP to check: a primitive's rule, or a composition's (its primitives'), on
    some case with a float input."""
    opdef = OPS[name]
    has_rule = opdef.vjp is not None or opdef.kind == "composite"
    return has_rule and opdef.extra.get("fd_check", True) and any(
        _float_inputs(arrays) and any(v.dtype in FLOAT_DTYPES
                                      for v in _outputs(build(name, arrays, attrs)[2]))
        for arrays, attrs in cases(name))


def _outputs(y) -> list:
    return list(y) if isinstance(y, tuple) else [y]


@pytest.mark.parametrize("name", [n for n in ALL_OPS if _differentiable(n)])
def test_vjp_matches_finite_differences(name: str) -> None:
    rng = np.random.default_rng(7)
    checked = 0
    for arrays, attrs in cases(name):
        g, xs, y = build(name, arrays, attrs)
        outs = [v for v in _outputs(y) if v.dtype in FLOAT_DTYPES]
        floats = _float_inputs(arrays)
        if not outs or not floats:
            continue
        feed = {x.name: np.asarray(a) for x, a in zip(xs, arrays)}
        terms = []
        for k, out in enumerate(outs):
            v_in = g.input(f"v{k}", out.shape, out.dtype)
            feed[f"v{k}"] = rng.standard_normal(out.shape)
            terms.append(g.apply("sum", g.apply("mul", out, v_in), axes=None, keepdims=False))
        loss = terms[0]
        for term in terms[1:]:
            loss = g.apply("add", loss, term)
        grads = grad(g, loss, [xs[i] for i in floats])
        for i in floats:
            g.output(f"d{i}", grads[xs[i]])
        g.output("loss", loss)
        analytic, numeric = directional(g, feed, "loss", {f"x{i}": f"d{i}" for i in floats},
                                        seed=checked)
        assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-6), (name, attrs)
        checked += 1
    assert checked, f"{name}: no sample exercised the VJP"


@pytest.mark.parametrize("name", ALL_OPS)
def test_entry_is_complete(name: str) -> None:
    """Every op documents itself, and every primitive that can output floats from
    inputs can be differentiated (a missing VJP must be a decision, not an
    accident); a composition has a build and no kernel of its own."""
    opdef = OPS[name]
    assert opdef.doc
    assert opdef.kind in ("elementwise", "reduce", "view", "opaque", "composite")
    if opdef.kind == "composite":
        assert opdef.build is not None and opdef.scalar is None and opdef.vjp is None
        return
    if opdef.kind == "elementwise":
        assert opdef.scalar
    if opdef.kind == "reduce":
        assert opdef.extra["combine"] in ("add", "max", "min", "mul") and "init" in opdef.extra
    float_outputs = any(
        t.dtype in FLOAT_DTYPES
        for arrays, attrs in cases(name) if arrays
        for t in _types(OPS[name].infer([_type(a) for a in arrays], attrs)))
    if float_outputs:
        assert opdef.vjp is not None, f"{name} outputs floats but has no VJP"


def _types(out) -> tuple:
    return out if isinstance(out, tuple) else (out,)


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
            for k, out in enumerate(_outputs(y)):
                g.output(f"y{k}", out)
            with pytest.raises(SexpError) as info:
                run_reference(g, {x.name: np.asarray(a) for x, a in zip(xs, arrays)})
            assert info.value.diagnostic.code == "E-INDEX"
