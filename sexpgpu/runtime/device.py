"""The training program on a GPU: parameters, optimizer state and the seed are copied
to the device once and stay there for the whole run. A step sends its batch and
counters (one copy) and returns at once; its numbers stay in a small device-side
record that the loop reads only on the steps it logs, evaluates or checkpoints.
Checkpoints copy the state to the host when written; a resume loads it straight
back to the device."""

from __future__ import annotations

from math import ceil
from pathlib import Path
from typing import Any

import numpy as np

from sexpgpu import kernels
from sexpgpu.devices import require_usable
from sexpgpu.diagnostics import define_code, error
from sexpgpu.kernels.lower import lower
from sexpgpu.kernels.memplan import plan_memory
from sexpgpu.kernels.source import storage
from sexpgpu.runtime import checkpoint as ckpt
from sexpgpu.runtime.compiled import (
    GraphProgram,
    _ctx_names,
    _zeros_for,
    gradient_names,
    init_param,
)
from sexpgpu.runtime.health import DiagSampler
from sexpgpu.runtime.program import Batch

GUARDED = ["loss", "grad_norm"]  # what the loop's finite guard watches
WORKSPACE = 32 << 20             # cuBLAS's workspace (kernels.cuda_backend.WORKSPACE)
ALIGN = 256                      # staged inputs' alignment (kernels.device_graph.ALIGN)

E_DEVICE_MEMORY = define_code(
    "E-DEVICE-MEMORY", "the run does not fit in the GPU's free memory",
    "A cuda run holds its parameters, optimizer state, every graph's memory-plan slots, "
    "its input buffers and cuBLAS's workspace on the device for the whole run. Before "
    "anything is allocated that total (`sexpgpu explain --device cuda`, `sexpgpu doctor "
    "--device cuda`) is compared with the device's free memory, and a run that cannot fit "
    "is refused. Lower the batch size or the model, free the GPU, or use a larger one.",
)


def device_need(compiled: Any) -> dict[str, int]:
    """The device memory a cuda run of `compiled` holds, from its memory plans (nothing
    compiled, numba not imported): resident arrays, each graph's slots, input buffers,
    records, and cuBLAS's workspace."""

    resident: dict[str, int] = {"rng/seed": 8}
    for spec in compiled.params:
        resident[spec.path] = 4 * max(1, int(np.prod(spec.shape)))
    graphs = [*compiled.step_graphs(),
              *(g for name, g in compiled.evaluates.items() if not name.startswith("("))]
    for g in compiled.step_graphs():
        for v in g.inputs:
            if v.role == "state":
                resident[v.name] = max(1, int(np.prod(v.shape))) * np.dtype(storage(v)).itemsize
    slots = staging = records = 0
    for g in graphs:
        program = lower(g, device="cuda")
        slots += plan_memory(program).peak_bytes
        for v in g.inputs:
            if v.name not in resident:
                nbytes = max(1, int(np.prod(v.shape))) * np.dtype(storage(v)).itemsize
                staging += -(-nbytes // ALIGN) * ALIGN
        records += 8 * (sum(1 for v in g.outputs.values() if v.shape == ()) + 3) + 16
    need = {"resident_bytes": sum(resident.values()), "buffers_bytes": slots,
            "staging_bytes": staging + records, "workspace_bytes": WORKSPACE}
    need["total_bytes"] = sum(need.values())
    return need


def check_fits(compiled: Any, free: int | None) -> dict[str, int]:
    """`device_need(compiled)`, or E-DEVICE-MEMORY when it exceeds `free` bytes."""
    need = device_need(compiled)
    if free is not None and need["total_bytes"] > free:
        mib = 1 << 20
        raise error(E_DEVICE_MEMORY, "the run needs more GPU memory than is free",
                    compiled.experiment.span("defrun") if compiled.experiment.run else None,
                    expected=f"at most {free / mib:.1f} MiB (free on the GPU)",
                    actual=f"{need['total_bytes'] / mib:.1f} MiB: parameters and state "
                    f"{need['resident_bytes'] / mib:.1f}, buffers "
                    f"{need['buffers_bytes'] / mib:.1f}, inputs {need['staging_bytes'] / mib:.1f}"
                    f", cuBLAS workspace {need['workspace_bytes'] / mib:.1f}",
                    fix="a smaller batch or model, or free the GPU (`nvidia-smi`)")
    return need


class Pending:
    """A step's numbers, still on the device: `read()` brings them over (one small
    copy per graph) with the step at which the finite guard first failed, if any.
    Indexing it (`out["loss"]`, as the Python API's callers do) reads it once."""

    def __init__(self, program: DeviceProgram, parts: list[tuple[Any, int]]):
        self.program, self.parts = program, parts
        self._numbers: dict[str, float] | None = None

    def __getitem__(self, name: str) -> float:
        if self._numbers is None:
            self._numbers, _ = self.read()
        return self._numbers[name]

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def read(self) -> tuple[dict[str, float], int | None]:
        numbers: dict[str, float] = {}
        bad: int | None = None
        first = self.program.first_step
        for graph, microbatches in self.parts:
            values, bad_call, _ = graph.read_record()
            for name, value in values.items():
                numbers[name] = value / microbatches
            if bad_call:
                at = first + ceil(bad_call / microbatches)
                bad = at if bad is None else min(bad, at)
        return numbers, bad


class DeviceProgram(GraphProgram):
    """The TrainingProgram protocol over DeviceGraphs sharing one set of resident
    arrays; `transfers()` gives the bytes the last step moved each way."""

    def __init__(self, compiled: Any, seed: int, device: str = "cuda", diag_every: int = 0):
        require_usable(device)
        from sexpgpu.kernels import cuda_backend as be  # numba-cuda: only once a GPU program runs

        self._be = be
        self.need = check_fits(compiled, be.probe().free_bytes)  # before anything is allocated
        graphs = compiled.lowered()  # after the precision pass, as on the CPU
        params = {spec.path: init_param(spec, seed) for spec in compiled.params}
        state: dict[str, np.ndarray] = {}
        for g in graphs.step_graphs():
            state.update(_zeros_for(g, "state"))
        self._shapes = {name: (a.shape, a.dtype) for name, a in {**params, **state}.items()}
        self._param_names, self._state_names = list(params), list(state)
        # every resident array, flat, by graph input name (parameters, state, the seed)
        self._resident = {name: be.to_device(a.reshape(-1) if a.ndim else a.reshape(1))
                          for name, a in {**params, **state}.items()}
        self._resident["rng/seed"] = be.to_device(np.array([seed], np.int64))
        self.setup_h2d = sum(a.nbytes for a in {**params, **state}.values()) + 8
        self._other_d2h = 0          # checkpoints and diagnostics, outside any step
        self._microbatches = 1 if graphs.step is not None else None
        if graphs.step is not None:
            self._step = self._compile(graphs.step, (GUARDED, "last"))
            self._step_ctx = _ctx_names(graphs.step)
        else:
            self._accumulate = self._compile(graphs.accumulate, (GUARDED, "sum"))
            self._apply = self._compile(graphs.apply, (GUARDED, "last"))
            self._acc_ctx = _ctx_names(graphs.accumulate)
            self._apply_ctx = _ctx_names(graphs.apply)
        self._evals = {name: (self._compile(g), _ctx_names(g))
                       for name, g in graphs.evaluates.items() if not name.startswith("(")}
        self._diag = None
        if graphs.diagnostics is not None and diag_every > 0:
            self._diag = DiagSampler(graphs.diagnostics, _ctx_names(graphs.diagnostics),
                                     diag_every, device)
        self.first_step = 0
        self._started = False
        self._mark = (0, 0)

    def _compile(self, graph: Any, record: tuple[list[str], str] | None = None) -> Any:
        compiled = kernels.compile(graph, device="cuda", record=record)
        compiled.bind(self._resident)
        return compiled

    def _graphs(self) -> list[Any]:
        return self._step_programs() + [g for g, _ in self._evals.values()] + \
            ([self._diag.compiled] if self._diag is not None else [])

    # -- the TrainingProgram protocol ---------------------------------------------------

    def params(self) -> dict[str, np.ndarray]:
        """Host copies of the parameters (a checkpoint is being written)."""
        return self._host(self._param_names)

    def state(self) -> dict[str, np.ndarray]:
        return self._host(self._state_names)

    def _host(self, names: list[str]) -> dict[str, np.ndarray]:
        out = {}
        for name in names:
            shape, dtype = self._shapes[name]
            out[name] = self._resident[name].copy_to_host().reshape(shape)
            self._other_d2h += out[name].nbytes
        return out

    def restore(self, params: dict[str, np.ndarray], state: dict[str, np.ndarray],
                path: Path) -> None:
        """A checkpoint's arrays straight into the resident device arrays (E-CHECKPOINT
        when they do not fit)."""
        for kind, names, saved in (("params", self._param_names, params),
                                   ("state", self._state_names, state)):
            live = {name: np.empty(self._shapes[name][0], self._shapes[name][1])
                    for name in names}
            ckpt.restore_arrays(kind, live, saved, path, copy=self._upload)

    def _upload(self, name: str, array: np.ndarray) -> None:
        self._resident[name].copy_to_device(np.ascontiguousarray(array).reshape(-1))

    def train_step(self, microbatches: list[Batch], ctx: dict[str, Any]) -> Pending:
        self._begin(microbatches, ctx)
        if self._microbatches == 1:
            (batch,) = microbatches
            self._step.launch(self._inputs(batch, ctx, self._step_ctx))
            return Pending(self, [(self._step, 1)])
        self._launch_accumulate(microbatches, ctx, 0)
        self._apply.launch(self._inputs({}, ctx, self._apply_ctx))
        return Pending(self, [(self._accumulate, len(microbatches)), (self._apply, 1)])

    def _begin(self, microbatches: list[Batch], ctx: dict[str, Any]) -> None:
        """What every step does first: its transfer mark, the diagnostics' sample."""
        if not self._started:
            self.first_step, self._started = int(ctx["step"]), True
        self._mark = self._moved()
        if self._diag is not None:
            self._diag.before_step(microbatches[0], ctx, self._diag_inputs)

    def _launch_accumulate(self, microbatches: list[Batch], ctx: dict[str, Any],
                           first: int) -> None:
        self._accumulate.reset_sums()
        for i, batch in enumerate(microbatches):
            self._accumulate.launch(self._inputs(batch, {**ctx, "microstep": first + i},
                                                 self._acc_ctx))

    # -- a data-parallel step: accumulate, the collective, apply ------------------------
    # the same three calls as the CPU's KernelProgram, so parallel/program.py serves both

    def accumulate(self, microbatches: list[Batch], ctx: dict[str, Any], first: int = 0
                   ) -> dict[str, float]:
        """Forward and backward of each microbatch into the resident `grad/` arrays;
        the mean of their losses and metrics (read now: the ranks average them)."""
        self._begin(microbatches, ctx)
        self._launch_accumulate(microbatches, ctx, first)
        numbers, _ = Pending(self, [(self._accumulate, len(microbatches))]).read()
        return numbers

    def apply(self, ctx: dict[str, Any]) -> dict[str, float]:
        """The optimizer update from the summed gradients (then zeroed), read back."""
        self._apply.launch(self._inputs({}, ctx, self._apply_ctx))
        numbers, _ = Pending(self, [(self._apply, 1)]).read()
        return numbers

    def gradients(self) -> list[Any]:
        """The accumulated gradients: flat device arrays, resident, in one order every
        process shares; the collective sums them in place between accumulate and apply."""
        return [self._resident[name] for name in gradient_names(self._state_names)]

    def stream(self) -> Any:
        """The stream every launch of the step runs on (numba's)."""
        return self._be.backend().stream

    def stream_handle(self) -> int:
        """The same stream as a CUstream pointer, for NCCL."""
        return self._be.backend().stream_handle()

    def event(self) -> Any:
        """A CUDA event that can time a stretch of the stream."""
        return self._be.backend().event()

    def host_buffer(self, nbytes: int) -> np.ndarray:
        """A host buffer for copies to and from the device (page-locked on a GPU)."""
        return self._be.host_staging(nbytes)

    # -- what the loop reports ----------------------------------------------------

    def _moved(self) -> tuple[int, int]:
        graphs = self._graphs()
        return (sum(g.h2d_bytes for g in graphs),
                sum(g.d2h_bytes for g in graphs) + self._other_d2h)

    def transfers(self) -> dict[str, int]:
        """Bytes the last step moved host->device and device->host (its batch and
        counters; its record, when it was read)."""
        h2d, d2h = self._moved()
        return {"h2d_bytes": h2d - self._mark[0], "d2h_bytes": d2h - self._mark[1]}

    def launches_per_step(self) -> int:
        if self._microbatches == 1:
            return len(self._step.generated.launches)
        return len(self._apply.generated.launches)  # + one accumulate list per microbatch

    def device_info(self) -> dict[str, Any]:
        """The `open` event's `gpu`: the device, its versions and how steps launch."""
        info = self._be.probe().to_json()
        for key in ("usable", "looked_for", "fix"):
            info.pop(key, None)
        graph = self._step if self._microbatches == 1 else self._apply
        mode, why = graph.mode
        backend = self._be.backend()
        info.update(launch=mode, launch_reason=why,
                    matmul="cublas" if backend.blas() is not None else "tiled",
                    launches_per_step=self.launches_per_step(),
                    resident_bytes=self.setup_h2d,
                    device_bytes=self.setup_h2d + sum(g.device_bytes() for g in self._graphs()))
        if backend.blas_reason:
            info["matmul_reason"] = backend.blas_reason
        return info

    # -- inputs -------------------------------------------------------------------

    def _inputs(self, batch: Batch, ctx: dict[str, Any], ctx_names: list[str]
                ) -> dict[str, Any]:
        """What a step sends: its batch and counters (the rest is resident)."""
        inputs: dict[str, Any] = {f"data/{name}": array for name, array in batch.items()}
        for name in ctx_names:
            inputs[f"ctx/{name}"] = np.float32(ctx[name])
        return inputs

    def _diag_inputs(self, batch: Batch, ctx: dict[str, Any], ctx_names: list[str]
                     ) -> dict[str, Any]:
        """The diagnostics graph's inputs on the host (sampled steps only)."""
        seed = self._resident["rng/seed"].copy_to_host()[0]
        return {**self.params(), **self.state(), **self._inputs(batch, ctx, ctx_names),
                "rng/seed": seed}
