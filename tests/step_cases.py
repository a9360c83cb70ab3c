"""A training step built by hand in a test: the traced loss, its backward and a plain
SGD update of the parameters, with where the forward and the backward end (the
precision pass needs both)."""

from __future__ import annotations

from sexpgpu.autodiff.grad import backward

from sexpgpu.ir.graph import Graph, Value


def sgd_step(g: Graph, loss: Value, params: list[Value], lr: float
             ) -> tuple[int, int, dict[Value, Value]]:
    """Append the backward of `loss` and `p <- p - lr * grad p` for each parameter:
    (nodes of the forward, nodes before the update, the gradients)."""
    forward = len(g.nodes)
    grads = backward(g, loss, params).grads
    update = len(g.nodes)
    rate = g.apply("full", shape=(), dtype="f32", value=lr)
    for p in params:
        g.update(p, g.apply("sub", p, g.apply("mul", grads[p], rate)))
    return forward, update, grads
