"""`load_run(DIR)`: a run directory compiled again from its own copy of the source and
selection, with the `defpredict` graph (the forward alone: no autodiff, no optimizer)
lowered to kernels and fed a checkpoint's parameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sexpgpu.atomic import read_json
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.compiled import CompiledExperiment
from sexpgpu.diagnostics import error
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.precision import lower_precision
from sexpgpu.runtime import checkpoint as ckpt
from sexpgpu.runtime.compiled import NP_DTYPES
from sexpgpu.selection import Selection
from sexpgpu.trace.step import E_PREDICT


@dataclass
class LoadedRun:
    """A run as the forward sees it: `plan` (plan.json), `params` by path (from the
    checkpoint), and `forward(**fields)`, the defpredict output for any number of rows."""

    run_dir: Path
    plan: dict[str, Any]
    compiled: CompiledExperiment
    checkpoint: Path
    params: dict[str, np.ndarray]
    graph: Graph | None  # the defpredict graph; None when the run file has none
    device: str = "cpu"
    _kernels: Any = field(default=None, repr=False)

    @property
    def batch(self) -> int:
        """Rows per launch of the forward graph (inputs are cut and padded to it)."""
        return int(self.predict_graph().outputs["output"].shape[0])

    def predict_graph(self) -> Graph:
        """The defpredict graph; E-PREDICT when the run file has no defpredict."""
        if self.graph is not None:
            return self.graph
        copy = source_file(self.run_dir, self.plan)
        raise error(E_PREDICT, f"run {self.run_dir.name} has no defpredict",
                    self.compiled.experiment.span("defobjective"),
                    expected="a (defpredict (model &key x) (model x)) form in the run file",
                    actual="no defpredict", fix="add (defpredict (model &key x) (model x)) "
                    f"after the defevaluate forms of {copy} (the copy this reads) and of "
                    "the run file")

    def data_inputs(self) -> list[Any]:
        return [v for v in self.predict_graph().inputs if v.role == "data"]

    def fields(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """The forward's inputs: field name -> (shape of one row, dtype)."""
        return {v.name.removeprefix("data/"): (tuple(v.shape[1:]), v.dtype)
                for v in self.data_inputs()}

    def forward(self, **fields: np.ndarray) -> np.ndarray:
        """The defpredict output for every row of the given fields, launched in
        chunks of `batch` rows (the last one padded with zeros, its padding dropped)."""
        wanted = self.fields()
        if sorted(fields) != sorted(wanted):
            shown = ", ".join(f"{k}=<{len(s) + 1}-d {d}>" for k, (s, d) in wanted.items())
            raise error(E_PREDICT, "forward takes the fields defpredict names",
                        expected=f"forward({shown})",
                        actual=f"forward({', '.join(sorted(fields)) or 'nothing'})",
                        fix="pass each field by name, rows first")
        rows = len(next(iter(fields.values())))
        outs = []
        for start in range(0, rows, self.batch):
            chunk = {k: _padded(np.asarray(v)[start:start + self.batch], self.batch)
                     for k, v in fields.items()}
            outs.append(self._launch(chunk)[: min(self.batch, rows - start)])
        return np.concatenate(outs) if outs else np.zeros((0,))

    __call__ = forward

    def _launch(self, chunk: dict[str, np.ndarray]) -> np.ndarray:
        if self._kernels is None:
            # numba loads only once a forward runs (load_run alone stays light)
            from sexpgpu import kernels

            self._kernels = kernels.compile(self.predict_graph(), device=self.device)
        inputs: dict[str, Any] = dict(self.params)
        for v in self.predict_graph().inputs:
            if v.role == "data":
                name = v.name.removeprefix("data/")
                inputs[v.name] = np.ascontiguousarray(chunk[name], NP_DTYPES[v.dtype])
            elif v.role == "ctx":  # the forward of a finished run: step and counters 0
                inputs[v.name] = np.float32(0.0)
        inputs["rng/seed"] = np.int64(self.plan["run"]["seed"])
        return np.asarray(self._kernels.run(inputs)["output"], np.float32)


def _padded(array: np.ndarray, rows: int) -> np.ndarray:
    if len(array) == rows:
        return array
    pad = np.zeros((rows - len(array),) + array.shape[1:], array.dtype)
    return np.concatenate([array, pad])


def selection_of(plan: dict[str, Any]) -> Selection:
    """The run's selection as `--set` strings: every knob's value, resolved (variants
    and sweep points included), so the source compiles to the same plan."""
    return Selection({name: _cli(value) for name, value in plan["selection"].items()})


def _cli(value: Any) -> str:
    if isinstance(value, bool):
        return "t" if value else "nil"
    return str(value)


def source_file(run_dir: Path, plan: dict[str, Any]) -> Path:
    """The run directory's own copy of the run file (source/NAME.sx)."""
    return run_dir / "source" / Path(plan["file"]).name


def data_base(run_dir: Path, plan: dict[str, Any]) -> Path:
    """Where the run's relative data paths start: the original run file's directory
    when it still exists, else the copy under source/."""
    original = Path(plan["file"]).parent
    return original if original.is_dir() else run_dir / "source"


def load_run(run_dir: str | Path, checkpoint: str | None = None, *, batch: int | None = None,
             device: str = "cpu", runs: str = "runs") -> LoadedRun:
    """A finished (or stopped) run, ready to run forward: `checkpoint` is latest (the
    default), a step, step-NNNNNN or a checkpoint path; `batch`: rows per launch
    (default: the training loader's batch)."""
    found = ckpt.find_run(str(run_dir), runs)
    plan = read_json(found / "plan.json")
    path = ckpt.pick(found, checkpoint)
    saved = ckpt.load_checkpoint(path)
    compiled = compile_file(str(source_file(found, plan)), selection_of(plan),
                            data_base=data_base(found, plan), predict_batch=batch)
    graph = (lower_precision(compiled.predict, compiled.precision).graph
             if compiled.predict is not None else None)
    params = {spec.path: saved.params[spec.path] for spec in compiled.params}
    return LoadedRun(found, plan, compiled, path, params, graph, device)
