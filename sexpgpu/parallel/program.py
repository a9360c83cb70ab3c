"""The TrainingProgram of one process of a data-parallel run: its shard's gradients
accumulated, summed across the processes by the Collective, then one optimizer update
that every process computes alike (the apply graph divides by all the step's
microbatches, so the sum becomes the mean). Parameters stay identical on every rank.
The same code serves the CPU's KernelProgram (host gradients, MPI) and the GPU's
DeviceProgram (device gradients: NCCL, or MPI through host buffers)."""

from __future__ import annotations

import time
from typing import Any

from sexpgpu.parallel.collective import Collective
from sexpgpu.runtime.program import Batch


class DataParallelProgram:
    """Wraps a program compiled from `CompiledExperiment.data_parallel()`; `engine`
    sums its gradients (parallel/select.py; the world's MPI when not given)."""

    def __init__(self, program: Any, world: Collective, engine: Any = None):
        self.program = program
        self.world = world
        self.engine = engine if engine is not None else world
        self._reduce_ms = 0.0
        self._staged = (0, 0)  # bytes the engine moved through the host this step

    def __getattr__(self, name: str) -> Any:
        # params, state, evaluate, rng_state, device_info...: the wrapped program's own
        return getattr(self.program, name)

    @property
    def collective(self) -> str:
        """The `open` event's `collective`: mpi, mpi-host or nccl."""
        return self.engine.name

    def train_step(self, microbatches: list[Batch], ctx: dict[str, Any]) -> dict[str, float]:
        # this rank's microbatches are numbered after the lower ranks': rank r's i-th
        # is the (r * len + i)-th of the global batch, so dropout draws the same masks
        # as one process taking the whole batch in procs x microbatches pieces
        first = self.world.rank * len(microbatches)
        losses = self.program.accumulate(microbatches, ctx, first)
        t0 = time.perf_counter()
        before = _moved(self.engine)
        self.engine.allreduce_sum(self.program.gradients())
        after = _moved(self.engine)
        self._staged = (after[0] - before[0], after[1] - before[1])
        losses = self.world.mean(losses)
        self._reduce_ms = (time.perf_counter() - t0) * 1000.0
        return {**losses, **self.program.apply(ctx)}

    def transfers(self) -> dict[str, Any]:
        """The step event's share of the collective: the all-reduce's milliseconds, and
        on a GPU the program's transfers plus the engine's copies through the host."""
        fields: dict[str, Any] = {}
        if callable(getattr(self.program, "transfers", None)):
            moved = self.program.transfers()
            fields.update(h2d_bytes=moved["h2d_bytes"] + self._staged[0],
                          d2h_bytes=moved["d2h_bytes"] + self._staged[1])
        # NCCL returns once the all-reduce is queued: its time is the GPU's
        timed = getattr(self.engine, "device_ms", None)
        fields["allreduce_ms"] = round(timed() if timed else self._reduce_ms, 4)
        return fields


def _moved(engine: Any) -> tuple[int, int]:
    return getattr(engine, "h2d_bytes", 0), getattr(engine, "d2h_bytes", 0)
