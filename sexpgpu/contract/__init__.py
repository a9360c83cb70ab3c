"""The contract: a run file's forms (knobs, loaders, model, objective, optimizer,
evals, targets, run) collected into an Experiment, then traced into graphs.
`compile_file(path, selection)` is the entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sexpgpu.contract.compile import CompiledExperiment


def compile_file(path: str, selection: Any = None, *, trace: bool = True,
                 diagnostics: list[str] | None = None) -> CompiledExperiment:
    """Compile a run file under a selection (see `sexpgpu.contract.compile`);
    `diagnostics`: `--diag` patterns, traced into one more graph."""
    from sexpgpu.contract.compile import compile_file as _compile

    return _compile(path, selection, trace=trace, diagnostics=diagnostics)
