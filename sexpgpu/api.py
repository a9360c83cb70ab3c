"""The Python entry points for embedding SexpGPU: compile a run file into the
RunPlan and the TrainingProgram the training loop drives (benchmarks and tools use these)."""

from __future__ import annotations

from typing import Any

from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import run_plan
from sexpgpu.record import replace
from sexpgpu.runtime.programs import make_program, record_memory
from sexpgpu.selection import Selection


def _selection(selection: Selection | dict[str, Any] | None) -> Selection:
    if isinstance(selection, Selection):
        return selection
    return Selection({k: str(v) for k, v in (selection or {}).items()})


def load_program(path: str, selection: Selection | dict[str, Any] | None = None,
                 device: str | None = None, precision: str | None = None
                 ) -> tuple[Any, Any]:
    """Compile `path` under `selection` ({knob: value}); returns (RunPlan, TrainingProgram).
    `device` and `precision` override `defrun` as `--device` and `--precision` do."""
    selection = _selection(selection)
    flags = {k: v for k, v in (("device", device), ("precision", precision)) if v is not None}
    if flags:
        selection = replace(selection, run={**selection.run, **flags})
    compiled = compile_file(path, selection)
    plan = run_plan(compiled, memory=False)
    program = make_program(compiled, plan.run.seed, device=plan.run.device)
    record_memory(plan, program)
    return plan, program
