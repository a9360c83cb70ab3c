"""Gradient checking against float64 central finite differences, on the
reference interpreter: compares <grad, dx> with (L(x + eps dx) - L(x - eps dx)) / 2eps
along a random direction dx (two extra runs, whatever the number of inputs)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sexpgpu.ir.graph import Graph
from sexpgpu.ir.reference import run_reference


def directional(graph: Graph, inputs: dict[str, Any], loss: str, grads: dict[str, str],
                seed: int = 0, eps: float = 1e-6) -> tuple[float, float]:
    """(analytic, numeric) directional derivatives of output `loss`; `grads` maps
    each perturbed input's name to the output holding its gradient. Updates are
    not applied, so a training-step graph can be checked as is."""
    rng = np.random.default_rng(seed)
    base = {k: np.asarray(v, dtype=np.float64) if np.asarray(v).dtype.kind == "f"
            else np.asarray(v) for k, v in inputs.items()}
    out = run_reference(graph, base, dtype_override="f64", apply_updates=False)
    dx = {name: rng.standard_normal(base[name].shape) for name in grads}
    analytic = sum(float(np.sum(out[grads[name]] * dx[name])) for name in grads)

    def loss_at(sign: float) -> float:
        shifted = dict(base)
        for name in grads:
            shifted[name] = base[name] + sign * eps * dx[name]
        result = run_reference(graph, shifted, dtype_override="f64", apply_updates=False)
        return float(result[loss])

    numeric = (loss_at(1.0) - loss_at(-1.0)) / (2 * eps)
    return analytic, numeric
