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
