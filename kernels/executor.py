"""The executor, the folder's entry point: `compile(graph)` lowers, plans memory,
generates and imports the modules; `CompiledGraph.run(inputs)` is one call into the
generated `step`."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np
from numba import cuda
from numba.core.errors import NumbaPerformanceWarning
from sexpgpu.kernels.bf16 import from_bf16, to_bf16
from sexpgpu.kernels.blas import set_threads as set_blas_threads
from sexpgpu.kernels.cache import load_module, module_path, record
from sexpgpu.kernels.codegen import Generated, generate
from sexpgpu.kernels.lower import KernelPlan, lower
from sexpgpu.kernels.memplan import MemoryPlan, plan_memory
from sexpgpu.kernels.render import Names
from sexpgpu.kernels.source import storage

from sexpgpu import env
from sexpgpu.devices import DEVICES
from sexpgpu.diagnostics import define_code, error
from sexpgpu.ir.graph import Graph, Value
from sexpgpu.ir.ops.indexing import index_error

E_RUN_INPUT = define_code(
    "E-RUN-INPUT", "compiled graph given a wrong input",
    "`CompiledGraph.run` needs one numpy array per graph input, with the input's shape. "
    "An input the graph updates in place (a parameter or optimizer state) must already "
    "be a C-contiguous array of the storage dtype (float32, uint16 for bf16, int32, "
    "int64, bool), because the update is written into that very array.",
)


@dataclass
class _Input:
    value: Value
    dtype: np.dtype
    updated: bool


class CompiledGraph:
    """A compiled graph: `run(inputs) -> outputs`, applying `graph.updates` in place.

    The caller owns every input array: updates are written into the caller's
    arrays (so params and optimizer state live in the training loop's dicts);
    buffers for intermediates belong to the CompiledGraph and are reused between
    calls; outputs are returned as fresh arrays."""

    def __init__(self, program: KernelPlan, plan: MemoryPlan, generated: Generated, module: Any,
                 device: str):
        self.program, self.plan, self.generated = program, plan, generated
        self.module, self.device = module, device
        self.source = generated.source
        self._step = module.step
        names = Names(program)
        updated = set(program.graph.updates)
        self._inputs = [_Input(v, np.dtype(storage(v)), v in updated)
                        for v in program.graph.inputs]
        slots = plan.allocate()
        if device == "cuda":
            slots = [cuda.to_device(s) for s in slots]
        # each stored value is a view of its slot, made once
        self._fixed = [slots[plan.slot_of[v]][:max(1, prod(v.shape))] for v in plan.slot_of]
        stored = {v: k for k, v in enumerate(plan.slot_of)}
        self._outputs: list[tuple[str, Value, int | None, int | None]] = []
        input_pos = {v: k for k, v in enumerate(program.graph.inputs)}
        for name, v in program.outputs.items():
            base = names.home(v)
            self._outputs.append((name, v, stored.get(base), input_pos.get(base)))
        # the error buffer [where, value] of kernels that check indices (E-INDEX)
        self._checks = generated.index_checks
        self._err = np.zeros(2, np.int64)
        self._errs = []
        if self._checks:
            self._errs = [cuda.to_device(self._err) if device == "cuda" else self._err]

    @property
    def peak_bytes(self) -> int:
        return self.plan.peak_bytes

    def _prepare(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        arrays = []
        for spec in self._inputs:
            v = spec.value
            try:
                x = inputs[v.name]
            except KeyError:
                raise error(E_RUN_INPUT, f"no array for input {v.name!r}",
                            expected=f"{v.name}: {v.type}", actual="missing",
                            fix=f"pass inputs[{v.name!r}]") from None
            if tuple(np.shape(x)) != v.shape:
                raise error(E_RUN_INPUT, f"input {v.name!r} has the wrong shape",
                            expected=str(v.shape), actual=str(tuple(np.shape(x))))
            if spec.updated:
                if not (isinstance(x, np.ndarray) and x.dtype == spec.dtype
                        and x.flags.c_contiguous):
                    raise error(E_RUN_INPUT, f"input {v.name!r} is updated in place",
                                expected=f"a C-contiguous {spec.dtype} array",
                                actual=f"{type(x).__name__} of {np.asarray(x).dtype}",
                                fix=f"np.ascontiguousarray(x, dtype=np.{spec.dtype})")
                arrays.append(x.reshape(-1) if x.ndim else x.reshape(1))
            else:
                arrays.append(_flat(x, v.dtype, spec.dtype))
        return arrays

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One step: outputs by name; updated inputs are overwritten in place."""
        arrays = self._prepare(inputs)
        if self.device == "cuda":
            return self._run_cuda(inputs, arrays)
        self._step(*arrays, *self._fixed, *self._errs)
        self._raise_bad_index()
        return {name: self._read(v, arrays, s, i) for name, v, s, i in self._outputs}

    def _raise_bad_index(self) -> None:
        """E-INDEX when a kernel reported an index outside its axis (kernels read
        nothing for it, so the step's results and updates are not meaningful)."""
        if not self._checks:
            return
        if self.device == "cuda":
            self._errs[0].copy_to_host(self._err)
        where, value = (int(v) for v in self._err)
        if where == 0:
            return
        self._err[:] = 0
        if self.device == "cuda":
            self._errs[0].copy_to_device(self._err)
        node, size = self._checks[where]
        raise index_error(node, value, size)

    def _read(self, v: Value, arrays, stored: int | None, input_pos: int | None) -> np.ndarray:
        flat = self._fixed[stored] if stored is not None else arrays[input_pos]
        if self.device == "cuda":
            flat = flat.copy_to_host()
        out = np.array(flat[:prod(v.shape)]).reshape(v.shape)
        # bf16 values come back as float32 (exact), as the reference interpreter gives them
        return from_bf16(out) if v.dtype == "bf16" else out

    __call__ = run  # a CompiledGraph is an autodiff backend runner

    def _run_cuda(self, inputs, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
        device_arrays = [cuda.to_device(a) for a in arrays]
        self._step(*device_arrays, *self._fixed, *self._errs)
        self._raise_bad_index()
        for spec, host, dev in zip(self._inputs, arrays, device_arrays):
            if spec.updated:
                dev.copy_to_host(host)
        return {name: self._read(v, device_arrays, s, i) for name, v, s, i in self._outputs}


def _flat(x: Any, dtype: str, store: np.dtype) -> np.ndarray:
    """A read-only input as a flat array of its storage dtype (bf16 given as
    floats is rounded to nearest even; given as uint16 it is taken as patterns)."""
    x = np.asarray(x)
    if dtype == "bf16" and x.dtype != np.uint16:
        x = to_bf16(x)
    if x.ndim == 0:
        return x.astype(store).reshape(1)
    return np.ascontiguousarray(x, dtype=store).reshape(-1)


def compile(graph: Graph, outputs: list[str] | None = None, device: str = "cpu") -> CompiledGraph:
    """Compile `graph` (its `outputs`, default all, and its updates) for `device`."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    if device == "cpu":
        set_blas_threads(env.blas_threads())
        _quiet_view_packing()
    program = lower(graph, outputs)
    plan = plan_memory(program)
    generated = generate(program, plan, device)
    new = not module_path(generated.source).exists()
    for source in generated.kernel_sources:
        load_module(source)  # registered in sys.modules: the step module imports them
    module = load_module(generated.source)
    if new:  # the cache's index.jsonl: which kernels this graph uses, from which lines
        record(generated.index, f"{graph.name} ({device})", generated.source)
    return CompiledGraph(program, plan, generated, module, device)


def _quiet_view_packing() -> None:
    """numba warns, when compiling, that np.dot packs non-contiguous operands:
    strided views (kernels.views) are read that way on purpose, since packing one
    small matrix inside the call costs less than a kernel copying the whole tensor."""
    warnings.filterwarnings("ignore", message=r".*np\.vdot\(\) is faster on contiguous",
                            category=NumbaPerformanceWarning)


# -- one op at a time, for experiments ---------------------------------------------------

_NUMPY_DTYPES = {"b": "bool", "f": "f32"}


class OpKernel:
    """One registry op compiled by these kernels as a function of arrays:
    `kernels.op("gelu")(x)`, `kernels.op("sum", axes=(1,))(x)`. A call compiles (once
    per shapes and dtypes, through the cache) a graph of that one op, runs it and
    returns its result (a tuple for several); `compiled(*arrays)` is that graph's
    CompiledGraph, whose `source` and `generated.kernel_sources` are the code."""

    def __init__(self, name: str, device: str = "cpu", **attrs: Any):
        from sexpgpu.ir.ops.registry import get_op

        self.opdef = get_op(name)
        self.device, self.attrs = device, attrs
        self._compiled: dict[tuple, CompiledGraph] = {}

    def compiled(self, *arrays: Any) -> CompiledGraph:
        arrays = [np.asarray(a) for a in arrays]
        key = tuple((a.shape, _ir_dtype(a)) for a in arrays)
        if key not in self._compiled:
            g = Graph(f"op-{self.opdef.name}")
            inputs = [g.input(f"x{i}", shape, dtype) for i, (shape, dtype) in enumerate(key)]
            out = self.opdef.apply_case(g, inputs, self.attrs)
            for k, v in enumerate(out if isinstance(out, tuple) else (out,)):
                g.output(f"y{k}", v)
            self._compiled[key] = compile(g, device=self.device)
        return self._compiled[key]

    def __call__(self, *arrays: Any) -> Any:
        step = self.compiled(*arrays)
        out = step.run({f"x{i}": np.asarray(a) for i, a in enumerate(arrays)})
        results = tuple(out[f"y{k}"] for k in range(len(out)))
        return results[0] if len(results) == 1 else results


def _ir_dtype(a: np.ndarray) -> str:
    if a.dtype.kind in "iu":
        return "i32" if a.dtype == np.int32 else "i64"
    return _NUMPY_DTYPES.get(a.dtype.kind, "f32")


def op(name: str, device: str = "cpu", **attrs: Any) -> OpKernel:
    """One registry op as a compiled function of arrays (see OpKernel)."""
    return OpKernel(name, device, **attrs)
