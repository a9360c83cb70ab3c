"""Code generation's entry point: the step module of a graph and its kernel modules for
one launcher, from the pieces both share (codegen.step_parts): codegen.py writes the
CPU's, cuda_codegen.py the CUDA device's."""

from __future__ import annotations

from sexpgpu.kernels.codegen import Generated, generate_cpu, step_parts
from sexpgpu.kernels.cuda_codegen import generate_cuda
from sexpgpu.kernels.lower import KernelPlan
from sexpgpu.kernels.memplan import MemoryPlan
from sexpgpu.kernels.source import KernelCode


def generate(program: KernelPlan, plan: MemoryPlan, device: str,
             record: tuple[list[str], str] | None = None,
             codes: list[KernelCode] | None = None) -> Generated:
    """The step module (and its kernel modules) of `program` for `device`; `record`
    (CUDA only): see kernels.cuda_codegen.generate_cuda; `codes` its kernels' code when
    rendered already (codegen.cpu_plan)."""
    parts = step_parts(program, plan, codes)
    if device == "cuda":
        return generate_cuda(program, plan, parts.names, parts.codes, parts.digest,
                             parts.params, parts.copies, record)
    return generate_cpu(program, parts, device)
