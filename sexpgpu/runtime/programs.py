"""The TrainingProgram a run gets for its device: host-fed kernels on the CPU
(runtime/compiled.py), state resident on the GPU for CUDA (runtime/device.py)."""

from __future__ import annotations

from typing import Any

from sexpgpu.runtime.compiled import KernelProgram
from sexpgpu.runtime.device import DeviceProgram


def make_program(compiled: Any, seed: int, device: str = "cpu", diag_every: int = 0,
                 progress: Any = None) -> Any:
    """The training program for `device`: kernels fed from host arrays on the CPU; on
    CUDA a DeviceProgram, whose state stays on the GPU (runtime/device.py), and whose
    kernels compile at their first launch (so no compile count is shown)."""
    if device == "cuda":
        return DeviceProgram(compiled, seed, device, diag_every)
    return KernelProgram(compiled, seed, device=device, diag_every=diag_every,
                         progress=progress)


def record_memory(plan: Any, program: Any) -> None:
    """A run's plan (`run_plan(..., memory=False)`) records the step buffers its compiled
    program holds, in its own precision and batch bands included, where `explain`
    estimates both precisions: lowering every step graph once more per precision
    took a GRU's run about a second at each start."""
    by_graph = program.step_buffer_bytes()
    plan.plan_json["memory_by_precision"] = {plan.run.precision: {
        "step_buffer_bytes": max(by_graph.values(), default=0), "by_graph": by_graph}}
