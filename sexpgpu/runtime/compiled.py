"""The TrainingProgram the training loop drives, made from a compiled run file: the step
graphs go through `kernels.compile` once, and each call is one dispatch into the
generated step function. Parameters are initialised from the counter-based RNG."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from sexpgpu import env, kernels
from sexpgpu.ir import rng
from sexpgpu.ir.graph import Graph
from sexpgpu.kernels import hostmem
from sexpgpu.runtime.health import DiagSampler
from sexpgpu.runtime.program import Batch

NP_DTYPES = {"f32": np.float32, "i32": np.int32, "i64": np.int64, "bool": np.bool_,
             "bf16": np.uint16, "f16": np.float16}


def stream_of(path: str) -> int:
    """A parameter's RNG stream: a stable 63-bit hash of its path."""
    return int.from_bytes(hashlib.sha256(path.encode()).digest()[:8], "little") >> 1


def init_param(spec: Any, seed: int) -> np.ndarray:
    """Fill one parameter as its InitSpec says, from (seed, stream of its path), in
    an array on a cache line (kernels/hostmem.py: the update's vector loops)."""
    shape, dist, p = tuple(spec.shape), spec.init.dist, spec.init.params
    if dist == "zeros":
        out = np.zeros(shape, np.float32)
    elif dist == "ones":
        out = np.ones(shape, np.float32)
    elif dist == "constant":
        out = np.full(shape, p["value"], np.float32)
    elif dist == "normal":
        out = rng.normal_array(seed, stream_of(spec.path), shape) * p["std"] + p.get("mean", 0.0)
    elif dist == "uniform":
        u = rng.uniform_array(seed, stream_of(spec.path), shape)
        out = u * (p["high"] - p["low"]) + p["low"]
    else:
        raise ValueError(f"unknown initialiser distribution {dist!r}")
    return hostmem.copy(out, np.float32)


def _zeros_for(graph: Graph, role: str) -> dict[str, np.ndarray]:
    return {v.name: hostmem.zeros(v.shape, NP_DTYPES[v.dtype])
            for v in graph.inputs if v.role == role}


class GraphProgram:
    """What a TrainingProgram over compiled graphs does alike on every device:
    evaluation graphs run synchronously, diagnostics come from the sampler, and no
    RNG state needs saving. Subclasses set `_evals`, `_diag` and `_inputs`."""

    _evals: dict[str, tuple[Any, list[str]]]
    _diag: DiagSampler | None
    _microbatches: int | None  # 1: one step graph; None: accumulate and apply

    def evaluate(self, batch: Batch, ctx: dict[str, Any], name: str | None = None
                 ) -> dict[str, float]:
        compiled, ctx_names = self._evals[name] if name else next(iter(self._evals.values()))
        return _floats(compiled.run(self._inputs(batch, ctx, ctx_names)))

    def diagnostics(self, ctx: dict[str, Any]) -> dict[str, float]:
        """The values sampled before this step's update (empty on other steps)."""
        return self._diag.take() if self._diag is not None else {}

    def rng_state(self) -> None:
        return None  # all randomness is counters of (seed, step, microstep)

    def _step_programs(self) -> list[Any]:
        """The compiled graphs of one optimizer step: the step, or accumulate and apply."""
        return [self._step] if self._microbatches == 1 else [self._accumulate, self._apply]

    def step_buffer_bytes(self) -> dict[str, int]:
        """Each step graph's buffers as its compiled memory plan holds them (batch bands
        included), by graph name: what a run's plan.json records."""
        return {g.program.graph.name: g.peak_bytes for g in self._step_programs()}

    def _inputs(self, batch: Batch, ctx: dict[str, Any], ctx_names: list[str]
                ) -> dict[str, Any]:
        raise NotImplementedError


class KernelProgram(GraphProgram):
    """Implements the runtime's TrainingProgram protocol over kernels compiled from the graphs."""

    def __init__(self, compiled: Any, seed: int, device: str = "cpu", diag_every: int = 0,
                 progress: Any = None):
        """`progress`: told as each graph is lowered (`lowering(name)`) and each kernel
        is compiled ahead of the first step (`kernel(done, total, cached)`). The graphs
        are those after the precision pass: under :bf16 the parameters stay f32 masters
        (the inputs below) and the forward and backward run on bf16 copies."""
        self._progress = progress
        graphs = compiled.lowered()
        self._params = {spec.path: init_param(spec, seed) for spec in compiled.params}
        self._state: dict[str, np.ndarray] = {}
        for g in graphs.step_graphs():
            self._state.update(_zeros_for(g, "state"))
        self._seed = np.int64(seed)
        self._microbatches = 1 if graphs.step is not None else None
        if graphs.step is not None:
            self._step = self._compile(graphs.step, device)
            self._step_ctx = _ctx_names(graphs.step)
        else:
            self._accumulate = self._compile(graphs.accumulate, device)
            self._apply = self._compile(graphs.apply, device)
            self._acc_ctx = _ctx_names(graphs.accumulate)
            self._apply_ctx = _ctx_names(graphs.apply)
        self._evals = {name: (self._compile(g, device), _ctx_names(g))
                       for name, g in graphs.evaluates.items() if not name.startswith("(")}
        self._diag = None  # the `--diag` graph, sampled before the update (diagnostics.md)
        if graphs.diagnostics is not None and diag_every > 0:
            if progress is not None:
                progress.lowering(graphs.diagnostics.name)
            self._diag = DiagSampler(graphs.diagnostics, _ctx_names(graphs.diagnostics),
                                     diag_every, device)
        self._warm()

    def _compile(self, graph: Graph, device: str) -> Any:
        if self._progress is not None:
            self._progress.lowering(graph.name)
        compiled = kernels.compile(graph, device=device)
        compiled.flush_denormals = env.flush_denormals()  # a CPU graph's kernels obey it
        return compiled

    def _warm(self) -> None:
        """Every kernel of every graph compiled now, counted, rather than inside the
        first step and the first eval (numba compiles on first call)."""
        from sexpgpu.kernels import executor  # numba: only once a run compiles

        graphs = [g for g in (getattr(self, "_step", None), getattr(self, "_accumulate", None),
                              getattr(self, "_apply", None)) if g is not None]
        graphs += [c for c, _ in self._evals.values()]
        if self._diag is not None:
            graphs.append(self._diag.compiled)
        total = len({name for g in graphs for name in executor.kernel_functions(g)})
        ready: set[str] = set()

        def on_kernel(name: str, cached: bool) -> None:
            if name not in ready:
                ready.add(name)
                if self._progress is not None:
                    self._progress.kernel(len(ready), total, cached)

        executor.warm(graphs, on_kernel)
        if self._progress is not None:
            self._progress.compiled()

    # -- the TrainingProgram protocol ---------------------------------------------------

    def params(self) -> dict[str, np.ndarray]:
        return self._params

    def state(self) -> dict[str, np.ndarray]:
        return self._state

    def train_step(self, microbatches: list[Batch], ctx: dict[str, Any]) -> dict[str, float]:
        if self._microbatches == 1:
            self._sample(microbatches, ctx)
            (batch,) = microbatches
            out = self._step.run(self._inputs(batch, ctx, self._step_ctx))
            return _floats(out)
        losses = self.accumulate(microbatches, ctx)
        return {**losses, **self.apply(ctx)}

    def _sample(self, microbatches: list[Batch], ctx: dict[str, Any]) -> None:
        """The diagnostics' copy of this step's inputs, before it updates them."""
        if self._diag is not None:
            self._diag.before_step(microbatches[0], ctx, self._inputs)

    def accumulate(self, microbatches: list[Batch], ctx: dict[str, Any], first: int = 0
                   ) -> dict[str, float]:
        """Forward and backward of each microbatch, the gradients added into the
        `grad/` buffers; the mean of their losses and metrics. `first`: the microstep of
        the first one (a data-parallel rank's place among all the step's microbatches)."""
        self._sample(microbatches, ctx)
        losses: dict[str, float] = {}
        for i, batch in enumerate(microbatches):
            ctx_i = {**ctx, "microstep": first + i}
            out = _floats(self._accumulate.run(self._inputs(batch, ctx_i, self._acc_ctx)))
            for name, value in out.items():
                losses[name] = losses.get(name, 0.0) + value / len(microbatches)
        return losses

    def apply(self, ctx: dict[str, Any]) -> dict[str, float]:
        """The optimizer update from the mean of the accumulated gradients (then zeroed)."""
        return _floats(self._apply.run(self._inputs({}, ctx, self._apply_ctx)))

    def gradients(self) -> list[np.ndarray]:
        """The accumulated gradient buffers, in one order every process shares."""
        return [self._state[name] for name in gradient_names(self._state)]

    # -- inputs -------------------------------------------------------------------

    def _inputs(self, batch: Batch, ctx: dict[str, Any], ctx_names: list[str]
                ) -> dict[str, Any]:
        inputs: dict[str, Any] = {**self._params, **self._state}
        for name, array in batch.items():
            inputs[f"data/{name}"] = array
        for name in ctx_names:
            inputs[f"ctx/{name}"] = np.float32(ctx[name])
        inputs["rng/seed"] = self._seed
        return inputs


def gradient_names(state: Any) -> list[str]:
    """The accumulated gradients among the state's names, in the order every process
    of a data-parallel run sums them."""
    return sorted(name for name in state if name.startswith("grad/"))


def _ctx_names(graph: Graph) -> list[str]:
    return [v.name.removeprefix("ctx/") for v in graph.inputs if v.role == "ctx"]


def _floats(outputs: dict[str, np.ndarray]) -> dict[str, float]:
    return {name: float(value) for name, value in outputs.items() if np.ndim(value) == 0}
