"""Ops built as compositions of primitives (sexpgpu.ir.build, reached through the
autodiff Tensor API): each against an independent numpy formulation, and its
gradient against float64 finite differences; the numerically delicate ones
(logsumexp, softmax, log_softmax, cross-entropy's pick, var, mean) also on rows
of special values and at large offsets, on the reference and the CPU kernels."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import scipy.special
from sexpgpu.autodiff.gradcheck import directional

from sexpgpu import autodiff as ad
from sexpgpu import kernels
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.reference import run_reference


def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_conv1d(x, w, stride, pad):
    n, c, length = x.shape
    o, _, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    lo = (length + 2 * pad - k) // stride + 1
    out = np.zeros((n, o, lo))
    for i in range(lo):
        window = xp[:, :, i * stride:i * stride + k]             # (N, C, K)
        out[:, :, i] = np.einsum("nck,ock->no", window, w)
    return out


def _np_conv2d(x, w, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            window = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", window, w)
    return out


def _np_pool1d(x, k, s, fn):
    lo = (x.shape[-1] - k) // s + 1
    return np.stack([fn(x[..., i * s:i * s + k], axis=-1) for i in range(lo)], axis=-1)


def _np_pool2d(x, k, fn):
    n, c, h, w = x.shape
    return fn(x[:, :, :h // k * k, :w // k * k].reshape(n, c, h // k, k, w // k, k), axis=(3, 5))


def _np_cross_entropy(logits, labels):
    logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True))
    logp -= logits.max(-1, keepdims=True)
    return -np.mean(np.take_along_axis(logp, labels[..., None], -1))


# name: (input shapes/kinds, tensor builder, numpy formulation)
CASES = {
    "mean": ([(3, 4)], lambda x: x.mean(axis=1), lambda x: x.mean(axis=1)),
    "mean_all_keep": ([(2, 3, 2)], lambda x: x.mean(keepdims=True),
                      lambda x: x.mean(keepdims=True)),
    "var": ([(4, 5)], lambda x: x.var(axis=0), lambda x: x.var(axis=0)),
    "logsumexp": ([(3, 6)], lambda x: x.logsumexp(axis=-1),
                  lambda x: np.log(np.exp(x).sum(-1))),
    "softmax": ([(2, 3, 5)], lambda x: x.softmax(axis=1), lambda x: _np_softmax(x, 1)),
    "log_softmax": ([(4, 7)], lambda x: x.log_softmax(), lambda x: np.log(_np_softmax(x))),
    "transpose": ([(2, 3, 4)], lambda x: x.transpose(0, 2), lambda x: x.swapaxes(0, 2)),
    "T": ([(2, 3, 4)], lambda x: x.T, lambda x: x.T),
    "squeeze": ([(1, 3, 1)], lambda x: x.squeeze(), lambda x: x.squeeze()),
    "unsqueeze": ([(3, 2)], lambda x: x.unsqueeze(1), lambda x: x[:, None]),
    "index": ([(4, 5, 6)], lambda x: x[1, ::2, -3:], lambda x: x[1, ::2, -3:]),
    "index_ellipsis": ([(4, 5, 6)], lambda x: x[..., 2, None], lambda x: x[..., 2, None]),
    "stack": ([(2, 3), (2, 3)], lambda a, b: ad.stack([a, b], axis=1),
              lambda a, b: np.stack([a, b], axis=1)),
    "matvec": ([(3, 4), (4,)], lambda a, b: a @ b, lambda a, b: a @ b),
    "vecmat": ([(4,), (2, 4, 3)], lambda a, b: a @ b, lambda a, b: a @ b),
    "take_along_axis": ([(3, 5), ("int", (3, 2), 5)],
                        lambda x, i: ad.take_along_axis(x, i, axis=1),
                        lambda x, i: np.take_along_axis(x, i, axis=1)),
    "take_along_axis0": ([(4, 3), ("int", (2, 3), 4)],
                         lambda x, i: ad.take_along_axis(x, i, axis=0),
                         lambda x, i: np.take_along_axis(x, i, axis=0)),
    "one_hot": ([(2, 3), ("int", (2,), 4)],
                lambda x, i: ad.one_hot(i, 4) @ ad.full(x.graph, (4, 3), 1.0) * x,
                lambda x, i: np.eye(4)[i] @ np.ones((4, 3)) * x),
    "masked_fill": ([(3, 3)], lambda x: ad.masked_fill(x, ad.causal_mask(x.graph, 3), -2.0),
                    lambda x: np.where(np.tril(np.ones((3, 3), bool)), -2.0, x)),
    "cross_entropy": ([(5, 4), ("int", (5,), 4)], ad.cross_entropy, _np_cross_entropy),
    "mse": ([(3, 2), (3, 2)], ad.mse, lambda a, b: np.mean((a - b) ** 2)),
    "conv1d": ([(2, 3, 9), (4, 3, 3)], lambda x, w: ad.conv1d(x, w, stride=2, padding=1),
               lambda x, w: _np_conv1d(x, w, 2, 1)),
    "conv2d": ([(2, 2, 5, 6), (3, 2, 3, 2)], lambda x, w: ad.conv2d(x, w, stride=1, padding=1),
               lambda x, w: _np_conv2d(x, w, 1, 1)),
    "max_pool1d": ([(2, 3, 8)], lambda x: ad.max_pool1d(x, 3, 2),
                   lambda x: _np_pool1d(x, 3, 2, np.max)),
    "avg_pool1d": ([(2, 3, 7)], lambda x: ad.avg_pool1d(x, 2),
                   lambda x: _np_pool1d(x, 2, 2, np.mean)),
    "max_pool2d": ([(1, 2, 4, 6)], lambda x: ad.max_pool2d(x, 2),
                   lambda x: _np_pool2d(x, 2, np.max)),
    "avg_pool2d": ([(1, 2, 5, 4)], lambda x: ad.avg_pool2d(x, 2),
                   lambda x: _np_pool2d(x, 2, np.mean)),
    "maximum_scalar": ([(3, 4)], lambda x: ad.maximum(x, 0.1) * 2.0 - 1.0,
                       lambda x: np.maximum(x, 0.1) * 2.0 - 1.0),
}


def _arrays(specs, rng):
    out = []
    for spec in specs:
        if spec[0] == "int":
            out.append(rng.integers(0, spec[2], size=spec[1]))
        else:
            # distinct values: no ties for max pooling
            n = int(np.prod(spec))
            out.append((rng.permutation(n) / n - 0.5).reshape(spec) * 4)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_composite_matches_numpy_and_finite_differences(name: str) -> None:
    specs, build, numpy_fn = CASES[name]
    rng = np.random.default_rng(3)
    arrays = _arrays(specs, rng)
    fn = ad.Function(name)
    xs = [fn.input(f"x{i}", a.shape, "i64" if a.dtype.kind == "i" else "f32")
          for i, a in enumerate(arrays)]
    y = build(*xs)
    fn.output("y", y)
    feed = {f"x{i}": a for i, a in enumerate(arrays)}
    got = fn.compile("reference64")(**feed)["y"]
    np.testing.assert_allclose(got, numpy_fn(*arrays), rtol=1e-10, atol=1e-10)

    v = fn.input("v", y.shape)
    loss = fn.output("loss", (y * v).sum())
    floats = [x for x in xs if x.dtype == "f32"]
    grads = fn.grad(loss, floats)
    for x in floats:
        fn.output(f"d_{x.value.name}", grads[x])
    feed["v"] = rng.standard_normal(y.shape)
    analytic, numeric = directional(fn.graph, feed, "loss",
                                    {x.value.name: f"d_{x.value.name}" for x in floats})
    assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-7)


# -- special values: compositions on the reference and the compiled kernels ------

INF, NAN = np.inf, np.nan
# rows of 4: all -inf, +inf inside, NaN inside, -inf masks, two +inf, logits near
# 1e4, near the f32 limit, subnormals and zeros, a wide spread
SPECIAL_ROWS = np.array([[-INF, -INF, -INF, -INF], [1, INF, 2, 0], [NAN, 1, 2, 3],
                         [-INF, 0, 1, -INF], [INF, INF, 1, 2],
                         [1e4, 1e4 + 1, 1e4 - 2, 1e4 + 0.5], [3e38, 3e38, 0, -3e38],
                         [-3e38, -3e38, -3e38, -3e38], [1e-40, -1e-40, 0, -0.0],
                         [-1e4, 0, 1e4, 1.5]])
LABELS = np.array([0, 2, 1, 2, 3, 1, 0, 3, 2, 1])


def _np_log_softmax(x):
    # scipy's: the max taken as 0 where it is not finite
    with np.errstate(all="ignore"):
        m = np.max(x, axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        return (x - m) - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))


def _np_softmax_plain(x):
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


# name: (graph builder over x (10, 4) f32 and labels (10,) i64, float64 oracle)
SPECIAL_COMPOSITIONS = {
    "logsumexp": (lambda g, x, y: build.logsumexp(g, x, (1,)),
                  lambda x, y: scipy.special.logsumexp(x, axis=1)),
    "softmax": (lambda g, x, y: build.softmax(g, x, 1), lambda x, y: _np_softmax_plain(x)),
    "log_softmax": (lambda g, x, y: build.log_softmax(g, x, 1), lambda x, y: _np_log_softmax(x)),
    "cross_entropy_rows": (
        lambda g, x, y: build.take_along_axis(g, build.log_softmax(g, x, 1),
                                              build.unsqueeze(g, y, 1), 1),
        lambda x, y: np.take_along_axis(_np_log_softmax(x), y[:, None], 1)),
    # the var rows leave out 3e38s, whose f32 sum overflows or not by order
    "var": (lambda g, x, y: g.apply("concat", *[build.var(g, build.index(g, x, (rows,)), (1,))
                                               for rows in (slice(1, 6), slice(8, 10))]),
            lambda x, y: np.var(x[[1, 2, 3, 4, 5, 8, 9]], axis=1)),
    "mean": (lambda g, x, y: build.mean(g, x, (1,)),
             lambda x, y: np.where(np.abs(x).max(1) >= 3e38, np.nan, x.mean(1))),
}


@pytest.mark.parametrize("backend", ["reference", "kernels"])
@pytest.mark.parametrize("name", sorted(SPECIAL_COMPOSITIONS))
def test_composition_special_rows_match_numpy(name: str, backend: str) -> None:
    """Rows of -inf, +inf, NaN, masks, logits near 1e4 and near the f32 limit give
    scipy's/numpy's results: logsumexp -inf for a row of -inf and +inf for a row
    holding +inf, log_softmax (x - m) - log sum, softmax NaN as PyTorch's."""
    builder, oracle = SPECIAL_COMPOSITIONS[name]
    g = Graph(f"special-{name}")
    x, y = g.input("x", SPECIAL_ROWS.shape), g.input("y", LABELS.shape, "i64")
    g.output("out", builder(g, x, y))
    feed = {"x": SPECIAL_ROWS.astype(np.float32), "y": LABELS}
    run = kernels.compile(g).run if backend == "kernels" else partial(run_reference, g)
    got = run(feed)["out"].astype(np.float64)
    with np.errstate(all="ignore"):  # exact, then rounded to f32 (-6e38 is -inf)
        want = oracle(SPECIAL_ROWS.astype(np.float32).astype(np.float64), LABELS)
        want = np.asarray(want).astype(np.float32).astype(np.float64)
    if name == "mean":  # a sum through 3e38 overflows f32 in any order
        want = np.where(np.isnan(want), got, want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    np.testing.assert_allclose(got[finite], want[finite], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("backend", ["reference", "kernels"])
def test_log_softmax_and_var_keep_f32_precision_at_large_offsets(backend: str) -> None:
    """log_softmax of logits near 1e4 within 2e-6 of float64 (x - (m + log sum)
    lost 1e-4), var of values near 1e4 with std 0.1 within 1e-5 relative (the
    uncorrected two-pass lost 1e-4), rows reduced along the last axis and the first."""
    rng = np.random.default_rng(0)
    logits = (1e4 + rng.standard_normal((6, 50))).astype(np.float32)
    data = (1e4 + 0.1 * rng.standard_normal((4096, 3))).astype(np.float32)
    g = Graph("offsets")
    xl, xd = g.input("logits", logits.shape), g.input("data", data.shape)
    g.output("lsm", build.log_softmax(g, xl, -1))
    g.output("var0", build.var(g, xd, (0,)))
    g.output("var1", build.var(g, build.transpose(g, xd), (1,)))
    feed = {"logits": logits, "data": data}
    run = kernels.compile(g).run if backend == "kernels" else partial(run_reference, g)
    got = run(feed)
    np.testing.assert_allclose(got["lsm"], _np_log_softmax(logits.astype(np.float64)),
                               rtol=0, atol=2e-6)
    exact = data.astype(np.float64).var(axis=0)
    np.testing.assert_allclose(got["var0"], exact, rtol=1e-4)
    np.testing.assert_allclose(got["var1"], exact, rtol=1e-5)


@pytest.mark.parametrize("backend", ["reference", "kernels"])
def test_mean_of_integers_is_f32(backend: str) -> None:
    g = Graph("int-mean")
    x = g.input("x", (2, 3), "i64")
    m = build.mean(g, x, (1,))
    assert m.dtype == "f32"
    g.output("m", m)
    g.output("v", build.var(g, x, None))
    g.output("lse", build.logsumexp(g, g.input("b", (3,), "bool"), None))
    feed = {"x": np.array([[1, 2, 4], [-3, 0, 0]]), "b": np.array([True, False, True])}
    run = kernels.compile(g).run if backend == "kernels" else partial(run_reference, g)
    got = run(feed)
    np.testing.assert_allclose(got["m"], [7 / 3, -1.0], rtol=1e-6)
    np.testing.assert_allclose(got["v"], np.var(feed["x"]), rtol=1e-6)
    np.testing.assert_allclose(got["lse"], np.log(2 * np.e + 1), rtol=1e-6)
