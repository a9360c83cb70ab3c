"""Example graphs shared by the tests, the benchmarks and docs/kernels.md: an
MLP training step (cross-entropy, Adam) built through `autodiff`, and the same
step written by hand in numpy as the baseline to beat."""

from __future__ import annotations

from typing import Any

import numpy as np

from sexpgpu import autodiff as ad


def mlp_step(batch: int = 100, sizes: tuple[int, ...] = (40, 256, 256, 10), lr: float = 1e-3,
             seed: int = 0) -> Any:
    """An `autodiff.Function` whose graph is one full training step."""
    fn = ad.Function("mlp-step", seed=seed)
    x = fn.input("x", (batch, sizes[0]))
    y = fn.input("y", (batch,), "i64")
    h = x
    for k, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = fn.param(f"l{k}/w", (n_in, n_out), ad.init.normal(1.0 / np.sqrt(n_in)))
        b = fn.param(f"l{k}/b", (n_out,), ad.init.constant(0.0))
        h = h @ w + b                                              # (batch, n_out)
        if k < len(sizes) - 2:
            h = h.relu()
    fn.minimize(ad.cross_entropy(h, y), ad.optim.Adam(lr=lr))
    return fn


def batch(seed: int, n: int = 100, d: int = 40, classes: int = 10) -> dict[str, np.ndarray]:
    """A learnable toy batch: the class is the argmax of a fixed projection."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    proj = np.random.default_rng(1234).standard_normal((d, classes)).astype(np.float32)
    return {"x": x, "y": np.argmax(x @ proj, axis=1).astype(np.int64)}


class NumpyMLP:
    """The same step by hand in numpy: forward, backward, Adam (the baseline)."""

    def __init__(self, params: dict[str, np.ndarray], lr: float = 1e-3, b1: float = 0.9,
                 b2: float = 0.999, eps: float = 1e-8):
        self.p = {k: v.copy() for k, v in params.items()}
        self.m = {k: np.zeros_like(v) for k, v in self.p.items()}
        self.v = {k: np.zeros_like(v) for k, v in self.p.items()}
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0
        self.layers = len(params) // 2

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        p, acts = self.p, [x]
        for k in range(self.layers):
            z = acts[-1] @ p[f"l{k}/w"] + p[f"l{k}/b"]
            acts.append(np.maximum(z, 0) if k < self.layers - 1 else z)
        logits = acts[-1]
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        n = len(y)
        loss = -logp[np.arange(n), y].mean()
        d = np.exp(logp)
        d[np.arange(n), y] -= 1.0
        d /= n
        grads = {}
        for k in reversed(range(self.layers)):
            grads[f"l{k}/w"] = acts[k].T @ d
            grads[f"l{k}/b"] = d.sum(axis=0)
            if k:
                d = (d @ p[f"l{k}/w"].T) * (acts[k] > 0)
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for k, g in grads.items():
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * g * g
            p[k] -= self.lr * (self.m[k] / c1) / (np.sqrt(self.v[k] / c2) + self.eps)
        return float(loss)
