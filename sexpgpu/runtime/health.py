"""Run diagnostics during training (training-health numbers, docs/diagnostics.md):
sampling the compiled `--diag` graph at the cadence the run sets.

On each sampled step the graph sees that step's (first micro)batch, parameters and
optimizer state as they were before the update; the loop reads the values through
`TrainingProgram.diagnostics(ctx)` and writes a `diag` event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sexpgpu import kernels
from sexpgpu.diagnostics import error
from sexpgpu.runtime.evals import due
from sexpgpu.trace.health import E_DIAG

Inputs = Callable[[dict[str, np.ndarray], dict[str, Any], list[str]], dict[str, Any]]


def cadence(diag_every: str | None, patterns: list[str], run_every: int, log_every: int) -> int:
    """Steps between samples: `--diag-every`, else defrun's :diag-every, else the log
    cadence; 0 (never) when no `--diag` pattern is given."""
    if diag_every is not None:
        try:
            every = int(diag_every)
        except ValueError:
            every = 0
        if every < 1:
            raise error(E_DIAG, f"--diag-every {diag_every} is not a positive step count",
                        expected="a positive integer", actual=diag_every, fix="--diag-every 10")
        if not patterns:
            raise error(E_DIAG, "--diag-every without --diag samples nothing",
                        expected="at least one --diag PATTERN", actual="none",
                        fix="--diag 'grad-norm*' --diag-every " + diag_every)
        return every
    if not patterns:
        return 0
    return run_every if run_every > 0 else max(1, log_every)


class DiagSampler:
    """The compiled diagnostics graph. On a sampled step `before_step` copies the inputs
    the graph reads (parameters, optimizer state, the batch) before the update; `take`
    runs the graph on that copy after the step, so the step's own timing stays clean."""

    def __init__(self, graph: Any, ctx_names: list[str], every: int, device: str = "cpu"):
        self.compiled = kernels.compile(graph, device=device)
        self.names = list(graph.outputs)
        self.reads = {v.name for v in graph.inputs}
        self.ctx_names = ctx_names
        self.every = every
        self._pending: dict[str, Any] | None = None

    def before_step(self, batch: dict[str, np.ndarray], ctx: dict[str, Any],
                    inputs: Inputs) -> None:
        """Keep this step's inputs if the loop will ask after it (ctx["step"] counts the
        steps before this one)."""
        if not due(self.every, ctx["step"] + 1):
            return
        given = inputs(batch, {**ctx, "microstep": 0}, self.ctx_names)
        self._pending = {name: np.array(given[name], copy=True) for name in self.reads}

    def take(self) -> dict[str, float]:
        """The diagnostics of the last kept step, once (empty when none was kept)."""
        if self._pending is None:
            return {}
        out = self.compiled.run(self._pending)
        self._pending = None
        return {name: float(out[name]) for name in self.names}
