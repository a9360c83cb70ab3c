"""Whole models through the public Python API: a 3-layer MLP, a 1-D conv net, a
GRU unrolled over 40 steps and a causal self-attention block. Each builds,
differentiates (gradients vs float64 finite differences) and trains 20 Adam
steps with a decreasing loss. The backend is a parameter: compiled backends
join BACKENDS and run the same tests."""

from __future__ import annotations

import numpy as np
import pytest
from sexpgpu.autodiff.gradcheck import directional

from sexpgpu import autodiff as ad

BACKENDS = ["reference"]


def linear(fn: ad.Function, name: str, x: ad.Tensor, n_in: int, n_out: int) -> ad.Tensor:
    w = fn.param(f"{name}/w", (n_in, n_out), ad.init.kaiming(1.0))
    b = fn.param(f"{name}/b", (n_out,), ad.init.zeros)
    return x @ w + b


def mlp(fn: ad.Function, rng: np.random.Generator) -> tuple[ad.Tensor, dict]:
    x, y = fn.input("x", (20, 16)), fn.input("y", (20,), "i64")
    h = linear(fn, "l1", x, 16, 32).relu()
    h = h + linear(fn, "l2", h, 32, 32).gelu()                      # (20, 32)
    logits = linear(fn, "l3", h, 32, 5)
    data = {"x": rng.standard_normal((20, 16)), "y": rng.integers(0, 5, 20)}
    return ad.cross_entropy(logits, y), data


def conv_net(fn: ad.Function, rng: np.random.Generator) -> tuple[ad.Tensor, dict]:
    x, y = fn.input("x", (8, 2, 24)), fn.input("y", (8,), "i64")
    w1 = fn.param("c1/w", (4, 2, 3), ad.init.kaiming())
    b1 = fn.param("c1/b", (4, 1), ad.init.zeros)
    h = (ad.conv1d(x, w1, padding=1) + b1).relu()                   # (8, 4, 24)
    h = ad.max_pool1d(h, 2)                                         # (8, 4, 12)
    w2 = fn.param("c2/w", (6, 4, 3), ad.init.kaiming())
    h = ad.conv1d(h, w2, stride=2).silu()                           # (8, 6, 5)
    h = ad.avg_pool1d(h, 5).reshape(8, 6)
    logits = linear(fn, "head", h, 6, 3)
    data = {"x": rng.standard_normal((8, 2, 24)), "y": rng.integers(0, 3, 8)}
    return ad.cross_entropy(logits, y), data


def gru(fn: ad.Function, rng: np.random.Generator, steps: int = 40) -> tuple[ad.Tensor, dict]:
    batch, n_in, hidden = 4, 3, 8
    xs = fn.input("xs", (steps, batch, n_in))
    target = fn.input("target", (batch, 1))
    gates = {}
    for gate in ("z", "r", "n"):
        gates[gate] = (fn.param(f"{gate}/wx", (n_in, hidden), ad.init.xavier()),
                       fn.param(f"{gate}/wh", (hidden, hidden), ad.init.xavier()),
                       fn.param(f"{gate}/b", (hidden,), ad.init.zeros))
    h = ad.zeros(fn.graph, (batch, hidden))
    for t in range(steps):
        x = xs[t]                                                   # (B, n_in)
        wx, wh, b = gates["z"]
        z = (x @ wx + h @ wh + b).sigmoid()
        wx, wh, b = gates["r"]
        r = (x @ wx + h @ wh + b).sigmoid()
        wx, wh, b = gates["n"]
        n = (x @ wx + (r * h) @ wh + b).tanh()
        h = (1.0 - z) * n + z * h                                   # (B, hidden)
    pred = linear(fn, "out", h, hidden, 1)
    data = {"xs": rng.standard_normal((steps, batch, n_in)), "target": rng.standard_normal((4, 1))}
    return ad.mse(pred, target), data


def layer_norm(fn: ad.Function, name: str, x: ad.Tensor) -> ad.Tensor:
    d = x.shape[-1]
    gain = fn.param(f"{name}/g", (d,), ad.init.ones)
    mu, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
    return (x - mu) * (var + 1e-5).rsqrt() * gain


def attention(fn: ad.Function, rng: np.random.Generator) -> tuple[ad.Tensor, dict]:
    b, t, d, heads, vocab = 2, 6, 8, 2, 11
    tokens, targets = fn.input("tokens", (b, t), "i64"), fn.input("targets", (b, t), "i64")
    seed = fn.input("seed", (), "i64", role="rng")
    emb = fn.param("emb", (vocab, d), ad.init.normal(0.5))          # tied with the head
    pos = fn.param("pos", (t, d), ad.init.normal(0.1))
    x = ad.take(emb, tokens) + pos                                  # (B, T, D)
    h = layer_norm(fn, "ln1", x)
    qkv = linear(fn, "qkv", h, d, 3 * d)                            # (B, T, 3D)
    q, k, v = (qkv[:, :, i * d:(i + 1) * d].reshape(b, t, heads, d // heads).permute(0, 2, 1, 3)
               for i in range(3))                                   # (B, H, T, hd)
    att = (q @ k.transpose()) * (1.0 / np.sqrt(d // heads))         # (B, H, T, T)
    att = ad.masked_fill(att, ad.causal_mask(fn.graph, t).logical_not(), -1e9).softmax(-1)
    att = ad.dropout(att, seed, p=0.1)
    y = (att @ v).permute(0, 2, 1, 3).reshape(b, t, d)              # (B, T, D)
    x = x + linear(fn, "proj", y, d, d)
    logits = layer_norm(fn, "ln2", x) @ emb.T                       # (B, T, V)
    data = {"tokens": rng.integers(0, vocab, (b, t)), "targets": rng.integers(0, vocab, (b, t)),
            "seed": np.array(5)}
    return ad.cross_entropy(logits, targets), data


MODELS = {"mlp": mlp, "conv_net": conv_net, "gru": gru, "attention": attention}


def _build(name: str, optimizer=None) -> tuple[ad.Function, dict, dict]:
    fn = ad.Function(name, seed=1)
    loss, data = MODELS[name](fn, np.random.default_rng(0))
    grads = fn.minimize(loss, optimizer or ad.optim.Adam(lr=1e-2))
    return fn, data, grads


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gradients_match_finite_differences(name: str) -> None:
    fn, data, grads = _build(name)
    for p, g in grads.items():
        fn.output(f"grad/{p.value.name}", g)
    inputs = {**fn.initial, **data}
    names = {p.value.name: f"grad/{p.value.name}" for p in grads}
    analytic, numeric = directional(fn.graph, inputs, "loss", names, seed=2)
    assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_adam_decreases_the_loss(name: str, backend: str) -> None:
    fn, data, _ = _build(name)
    step = fn.compile(backend)
    before = {k: v.copy() for k, v in step.params.items()}
    losses = [float(step(**data)["loss"]) for _ in range(20)]
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.9 * losses[0], losses
    assert sum(b < a for a, b in zip(losses, losses[1:])) >= 15, losses
    assert all((step.params[k] != before[k]).any() for k in before)


def test_tied_embedding_appears_once() -> None:
    fn, _, grads = _build("attention")
    assert [p.value.name for p in grads].count("emb") == 1
    assert sum(1 for v in fn.graph.params() if v.name == "emb") == 1
