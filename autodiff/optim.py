"""Optimizers as IR: each builds its update into the step graph with
`graph.update(param, new)`, its per-parameter state as inputs of role "state"."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sexpgpu.autodiff.function import Function
    from sexpgpu.autodiff.tensor import Tensor


class SGD:
    """p -= lr * (g + weight_decay p), with optional (heavy-ball) momentum."""

    def __init__(self, lr: float, momentum: float = 0.0, weight_decay: float = 0.0):
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay

    def build(self, fn: Function, grads: dict[Tensor, Tensor]) -> None:
        for p, g in grads.items():
            if self.weight_decay:
                g = g + p * self.weight_decay
            if self.momentum:
                buf = fn.state(f"{p.value.name}/momentum", p.shape)
                g = buf * self.momentum + g
                fn.update(buf, g)
            fn.update(p, p - g * self.lr)


class Adam:
    """Adam with bias correction; weight_decay is decoupled (AdamW)."""

    def __init__(self, lr: float = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                 weight_decay: float = 0.0):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.weight_decay = weight_decay

    def build(self, fn: Function, grads: dict[Tensor, Tensor]) -> None:
        t = fn.state("adam/t", ())                                   # steps taken so far
        t1 = t + 1.0
        fn.update(t, t1)
        # the bias corrections, shared by every parameter
        c1 = 1.0 - fn.constant(self.b1) ** t1
        c2 = 1.0 - fn.constant(self.b2) ** t1
        for p, g in grads.items():
            m = fn.state(f"{p.value.name}/m", p.shape)
            v = fn.state(f"{p.value.name}/v", p.shape)
            m1 = m * self.b1 + g * (1.0 - self.b1)
            v1 = v * self.b2 + g.square() * (1.0 - self.b2)
            fn.update(m, m1)
            fn.update(v, v1)
            step = (m1 / c1) / ((v1 / c2).sqrt() + self.eps) * self.lr
            if self.weight_decay:
                step = step + p * (self.lr * self.weight_decay)
            fn.update(p, p - step)
