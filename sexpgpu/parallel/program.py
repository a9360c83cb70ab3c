"""The TrainingProgram of one process of a data-parallel run: its shard's gradients
accumulated, summed across the processes by the Collective, then one optimizer update
that every process computes alike (the apply graph divides by all the step's
microbatches, so the sum becomes the mean). Parameters stay identical on every rank."""

from __future__ import annotations

import time
from typing import Any

from sexpgpu.parallel.collective import Collective
from sexpgpu.runtime.program import Batch


class DataParallelProgram:
    """Wraps a KernelProgram compiled from `CompiledExperiment.data_parallel()`."""

    def __init__(self, program: Any, world: Collective):
        self.program = program
        self.world = world
        self._reduce_ms = 0.0

    def __getattr__(self, name: str) -> Any:
        # params, state, evaluate, rng_state...: the wrapped program's own
        return getattr(self.program, name)

    def train_step(self, microbatches: list[Batch], ctx: dict[str, Any]) -> dict[str, float]:
        # this rank's microbatches are numbered after the lower ranks': rank r's i-th
        # is the (r * len + i)-th of the global batch, so dropout draws the same masks
        # as one process taking the whole batch in procs x microbatches pieces
        first = self.world.rank * len(microbatches)
        losses = self.program.accumulate(microbatches, ctx, first)
        t0 = time.perf_counter()
        self.world.allreduce_sum(self.program.gradients())
        losses = self.world.mean(losses)
        self._reduce_ms = (time.perf_counter() - t0) * 1000.0
        return {**losses, **self.program.apply(ctx)}

    def transfers(self) -> dict[str, Any]:
        """The step event's share of the collective: the all-reduce's milliseconds."""
        return {"allreduce_ms": round(self._reduce_ms, 4)}
