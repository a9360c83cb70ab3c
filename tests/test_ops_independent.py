"""Op references checked against independent formulations (loops, adjoint
identities), and every elementwise op's kernel body (its `scalar` template)
evaluated in plain Python against its numpy reference."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import expit

from sexpgpu.ir.ops._sampling import SPECIAL_VALUES
from sexpgpu.ir.ops.registry import OPS, get_op
from sexpgpu.ir.reference import hold
from sexpgpu.ir.types import TensorType

get_op("add")
ELEMENTWISE = sorted(n for n, op in OPS.items() if op.kind == "elementwise")


def _out_type(name: str, arrays: list, attrs: dict) -> TensorType:
    def kind(a):
        a = np.asarray(a)
        return "bool" if a.dtype == np.bool_ else ("i64" if a.dtype.kind == "i" else "f32")
    types = [TensorType(np.shape(a), kind(a)) for a in arrays]
    return OPS[name].infer(types, attrs)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_scalar_body_agrees_with_reference(name: str) -> None:
    opdef = OPS[name]
    assert opdef.scalar, f"elementwise op {name} has no scalar body"
    for arrays, attrs in opdef.samples(np.random.default_rng(1)):
        out = _out_type(name, arrays, attrs)
        body = opdef.body(attrs).format(**attrs)
        code = compile(body, f"<{name}>", "eval")
        # an elementwise kernel reads every input broadcast to the output's shape
        args = [np.broadcast_to(np.asarray(a), out.shape) for a in arrays]
        got = np.empty(out.shape, dtype=object)
        for idx in np.ndindex(*out.shape):
            env = {f"x{i}": a[idx].item() for i, a in enumerate(args)}
            got[idx] = eval(code, {"math": math}, env)  # noqa: S307 - our own templates
        want = hold(opdef.reference(*arrays, **attrs), out.dtype, f64=True)
        got = hold(got.astype(np.float64), out.dtype, f64=True)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_unfold_matches_loops() -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 7))
    attrs = {"kernel": (3, 2), "stride": (2, 3), "padding": (1, 0)}
    cols = OPS["unfold"].reference(x, **attrs)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 0)))
    assert cols.shape == (2, 3, 3, 2, 3, 2)
    for i, j, a, b in itertools.product(range(3), range(2), range(3), range(2)):
        np.testing.assert_array_equal(cols[:, :, i, j, a, b], xp[:, :, a * 2 + i, b * 3 + j])


@pytest.mark.parametrize("forward, backward, attrs, shape", [
    ("unfold", "fold", {"kernel": (3,), "stride": (2,), "padding": (1,)}, (2, 3, 9)),
    ("slice", "slice_scatter", {"starts": (1, None), "stops": (5, None), "steps": (2, 3)},
     (6, 7)),
])
def test_transpose_pairs_are_adjoint(forward: str, backward: str, attrs: dict,
                                     shape: tuple) -> None:
    """<F x, c> == <x, F^T c>: each op's VJP partner is its exact transpose."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape)
    fx = OPS[forward].reference(x, **attrs)
    c = rng.standard_normal(fx.shape)
    ftc = OPS[backward].reference(c, shape=shape, **attrs)
    assert np.sum(fx * c) == pytest.approx(np.sum(x * ftc), rel=1e-12)


def test_scatter_add_matches_a_loop() -> None:
    rng = np.random.default_rng(3)
    idx = np.array([[0, 3, 3], [1, 0, 4]])
    src = rng.standard_normal((2, 3, 4))
    got = OPS["scatter_add"].reference(src, idx, axis=0, size=5)
    want = np.zeros((5, 4))
    for i, j in np.ndindex(*idx.shape):
        want[idx[i, j]] += src[i, j]
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_iota_and_full() -> None:
    np.testing.assert_array_equal(OPS["iota"].reference((2, 3), "i64", axis=1),
                                  np.indices((2, 3))[1])
    assert OPS["full"].reference((2,), "f32", 2.5).tolist() == [2.5, 2.5]


def test_gelu_is_exact_and_its_tanh_form_close() -> None:
    """gelu is x Phi(x) (PyTorch's approximate='none'); approximate='tanh' is GPT-2's
    form, within 1e-3 of it."""
    x = np.linspace(-4, 4, 17)
    erf_gelu = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    np.testing.assert_allclose(OPS["gelu"].reference(x), erf_gelu, rtol=1e-14, atol=1e-15)
    tanh_gelu = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(OPS["gelu"].reference(x, approximate="tanh"), tanh_gelu,
                               rtol=1e-14)
    np.testing.assert_allclose(tanh_gelu, erf_gelu, atol=1e-3)


@pytest.mark.parametrize("front_end", [True, False])
def test_exact_gelu_gradients_match_the_formula(front_end: bool) -> None:
    """The exact GELU as the front ends build it (x * normal_cdf(x): the backward
    reads the forward's Phi) and as the primitive (its VJP recomputes Phi), compiled
    in f32: the gradient equals Phi(x) + x phi(x) in float64 at 0, -0, tiny, large
    and non-finite x, and the second derivative phi(x) (2 - x^2) too."""
    from sexpgpu.autodiff.grad import grad

    from sexpgpu import kernels
    from sexpgpu.ir.call import call
    from sexpgpu.ir.graph import Graph

    xs = np.array([0.0, -0.0, 1e-30, -1e-30, 1e-3, -0.5, 0.92, -3, 3, -12, -20, 8, 40,
                   np.inf, -np.inf, np.nan], np.float32)
    g = Graph("gelu-grad")
    x = g.input("x", xs.shape)
    y = call(g, get_op("gelu"), [x], {}) if front_end else g.apply("gelu", x)
    assert ({n.op for n in g.nodes} == {"mul", "normal_cdf"}) == front_end
    dx = grad(g, g.apply("sum", y, axes=None, keepdims=False), [x])[x]
    g.output("y", y)
    g.output("dx", dx)
    g.output("ddx", grad(g, g.apply("sum", dx, axes=None, keepdims=False), [x])[x])
    got = kernels.compile(g).run({"x": xs})
    x64 = xs.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        cdf = 0.5 * (1 + np.vectorize(math.erf)(x64 / math.sqrt(2)))
        pdf = np.exp(-x64 * x64 / 2) / math.sqrt(2 * math.pi)
        want = {"y": x64 * cdf, "dx": cdf + x64 * pdf, "ddx": pdf * (2 - x64 * x64)}
    for key, value in want.items():  # NaN where NaN (inf * 0 at the infinities)
        np.testing.assert_allclose(got[key], value, rtol=2e-6, atol=1e-37, err_msg=key)


def test_broadcast_rule_agrees_with_numpy() -> None:
    from sexpgpu.ir.shapes import ShapeRuleError, broadcast

    rng = np.random.default_rng(4)
    for _ in range(300):
        a, b = (tuple(int(d) for d in rng.choice([0, 1, 2, 3], size=rng.integers(0, 4)))
                for _ in range(2))
        try:
            want = np.broadcast_shapes(a, b)
        except ValueError:
            with pytest.raises(ShapeRuleError):
                broadcast(a, b)
        else:
            assert broadcast(a, b) == want


def test_low_precision_rounds_after_every_op() -> None:
    from sexpgpu.ir.graph import Graph
    from sexpgpu.ir.reference import round_bf16, run_reference

    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 50)).astype(np.float32)
    for dtype, rounded, storage in (("bf16", round_bf16, np.float32),
                                    ("f16", lambda x: x.astype(np.float16), np.float16)):
        g = Graph()
        x, y = g.input("x", (50,), dtype), g.input("y", (50,), dtype)
        g.output("z", g.apply("exp", g.apply("mul", x, y)))
        got = run_reference(g, {"x": a, "y": b})["z"]
        ra, rb = (rounded(v).astype(np.float32) for v in (a, b))
        want = rounded(np.exp(rounded(ra * rb).astype(np.float32)))
        assert got.dtype == storage
        np.testing.assert_array_equal(got, want)


# references written as formulas rather than one numpy call, against numpy and
# scipy on the special values (the kernels are tested against these references)
SPECIAL_ORACLES = {
    "sigmoid": lambda x: expit(x),
    "silu": lambda x: x * expit(x),
    "rsqrt": lambda x: np.reciprocal(np.sqrt(x)),
    "recip": np.reciprocal,
    "relu": lambda x: np.where(x > 0, x, np.where(np.isnan(x), x, 0.0)),
    "sign": np.sign,
}


@pytest.mark.parametrize("name", sorted(SPECIAL_ORACLES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_formula_references_on_special_values(name: str, dtype) -> None:
    x = np.asarray(SPECIAL_VALUES, dtype=dtype)
    with np.errstate(all="ignore"):
        got, want = OPS[name].reference(x), SPECIAL_ORACLES[name](x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
