"""The executor, the folder's entry point: `compile(graph)` lowers, plans memory,
generates and imports the modules; `CompiledGraph.run(inputs)` is one call into the
generated `step` (on CUDA a `kernels.device_graph.DeviceGraph`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from math import prod
from typing import Any

import numba
import numpy as np
from numba.core.dispatcher import Dispatcher
from numba.core.errors import NumbaPerformanceWarning
from sexpgpu.kernels import compile_pool, fpmode, threads
from sexpgpu.kernels.bf16 import from_bf16
from sexpgpu.kernels.cache import load_module, module_path
from sexpgpu.kernels.cache import record as record_index
from sexpgpu.kernels.codegen import Generated, cpu_plan
from sexpgpu.kernels.generate import generate
from sexpgpu.kernels.inputs import E_RUN_INPUT, _flat, _Input, given
from sexpgpu.kernels.lower import KernelPlan, lower
from sexpgpu.kernels.memplan import MemoryPlan, plan_memory
from sexpgpu.kernels.render import Names
from sexpgpu.kernels.source import storage

from sexpgpu.devices import DEVICES, require_usable
from sexpgpu.diagnostics import error
from sexpgpu.ir.graph import Graph, Value
from sexpgpu.ir.ops.indexing import index_error
from sexpgpu.ir.ops.registry import get_op


class CompiledGraph:
    """A graph compiled for the CPU: `run(inputs) -> outputs`, applying `graph.updates`
    in place.

    The caller owns every input array: updates are written into the caller's
    arrays (so params and optimizer state live in the training loop's dicts);
    buffers for intermediates belong to the CompiledGraph and are reused between
    calls; outputs are returned as fresh arrays. With `flush_denormals` set (a run
    sets it), its kernels compute with subnormals flushed to zero (kernels/fpmode.py).
    """

    flush_denormals = False

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
        # an updated input's flat view, kept while the caller passes the same array:
        # the step then gets the same objects each time, so its launches reuse their
        # packed blocks (kernels.parallel.Launches) instead of packing them again
        self._flats: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(self._inputs)
        arena = plan.allocate()
        # each stored value is a view of its bytes in the arena, made once
        self._fixed = [plan.view(arena, v) for v in plan.slot_of]
        stored = {v: k for k, v in enumerate(plan.slot_of)}
        self._outputs: list[tuple[str, Value, int | None, int | None]] = []
        input_pos = {v: k for k, v in enumerate(program.graph.inputs)}
        for name, v in program.outputs.items():
            base = names.home(v)
            self._outputs.append((name, v, stored.get(base), input_pos.get(base)))
        # the error buffer [where, value] of kernels that check indices (E-INDEX)
        self._checks = generated.index_checks
        self._err = np.zeros(2, np.int64)
        self._errs = [self._err] if self._checks else []
        if device == "cpu":
            # the process's thread policy, made now: it keeps the BLAS to one thread
            # even in a step with no parallel kernel (which never asks for threads)
            threads.policy()

    @property
    def peak_bytes(self) -> int:
        return self.plan.peak_bytes

    def _prepare(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        arrays = []
        for k, spec in enumerate(self._inputs):
            v = spec.value
            last = self._flats[k]
            if last is not None and last[0] is inputs.get(v.name) \
                    and last[0].shape == v.shape and last[0].dtype == spec.dtype:
                # the array checked the step before (a parameter, an optimizer state:
                # 42 -> 18 us a GPT step, 12 -> 6 an MLP's); its shape and dtype can
                # be reassigned in place, so they are checked again
                arrays.append(last[1])
                continue
            x = given(inputs, v)
            if spec.updated:
                if not (isinstance(x, np.ndarray) and x.dtype == spec.dtype
                        and x.flags.c_contiguous):
                    raise error(E_RUN_INPUT, f"input {v.name!r} is updated in place",
                                expected=f"a C-contiguous {spec.dtype} array",
                                actual=f"{type(x).__name__} of {np.asarray(x).dtype}",
                                fix=f"np.ascontiguousarray(x, dtype=np.{spec.dtype})")
                arrays.append(self._flat_view(k, x))
            else:
                arrays.append(_flat(x, v.dtype, spec.dtype))
        return arrays

    def _flat_view(self, k: int, x: np.ndarray) -> np.ndarray:
        """Updated input k as a flat view of the caller's array (checked by `given`
        and `_prepare` to have its shape, dtype and layout), kept for `_prepare` to
        take while the caller passes the same array."""
        flat = x.reshape(-1) if x.ndim else x.reshape(1)
        self._flats[k] = (x, flat)
        return flat

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One step: outputs by name; updated inputs are overwritten in place."""
        arrays = self._prepare(inputs)
        self._launch([*arrays, *self._fixed, *self._errs])
        self._raise_bad_index()
        return {name: self._read(v, arrays, s, i) for name, v, s, i in self._outputs}

    def kernels_on(self, inputs: dict[str, np.ndarray]) -> Callable[[], None]:
        """A call of the step's kernels alone on `inputs`, as `run` makes it, but with
        neither its checks of the inputs nor its copies of the outputs (a product's
        1.5 MB result copied out took a fifth of its time): for timing the kernels
        (bench/). The outputs stay in the graph's buffers."""
        args = [*self._prepare(inputs), *self._fixed, *self._errs]
        return lambda: self._launch(args)

    def _launch(self, args: list[Any]) -> None:
        """The generated step on `args`, subnormals flushed if `flush_denormals`."""
        before = fpmode.flush() if self.flush_denormals else None
        try:
            self._step(*args)
        finally:
            if before is not None:
                fpmode.restore(before)

    def _raise_bad_index(self) -> None:
        """E-INDEX when a kernel reported an index outside its axis (kernels read
        nothing for it, so the step's results and updates are not meaningful)."""
        if not self._checks:
            return
        where, value = (int(v) for v in self._err)
        if where == 0:
            return
        self._err[:] = 0
        node, size = self._checks[where]
        raise index_error(node, value, size)

    def _read(self, v: Value, arrays, stored: int | None, input_pos: int | None) -> np.ndarray:
        flat = self._fixed[stored] if stored is not None else arrays[input_pos]
        out = np.array(flat[:prod(v.shape)]).reshape(v.shape)
        # bf16 values come back as float32 (exact), as the reference interpreter gives them
        return from_bf16(out) if v.dtype == "bf16" else out

    __call__ = run  # a CompiledGraph is an autodiff backend runner


def compile(graph: Graph, outputs: list[str] | None = None, device: str = "cpu",
            record: tuple[list[str], str] | None = None) -> Any:
    """Compile `graph` (its `outputs`, default all, and its updates) for `device`: a
    CompiledGraph, or on CUDA a DeviceGraph. `record` (CUDA): (the scalar outputs the
    finite guard watches, "last" | "sum"), for a step whose numbers stay on the device."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    if device == "cpu":
        _quiet_view_packing()
    else:
        require_usable(device)  # E-DEVICE-UNAVAILABLE before anything is generated
    program = lower(graph, outputs, device)
    program, plan, codes = cpu_plan(program) if device == "cpu" else (
        program, plan_memory(program), None)
    generated = generate(program, plan, device, record, codes)
    new = not module_path(generated.source).exists()
    for source in generated.kernel_sources:
        load_module(source)  # registered in sys.modules: the step module imports them
    module = load_module(generated.source)
    if new:  # the cache's index.jsonl: which kernels this graph uses, from which lines
        record_index(generated.index, f"{graph.name} ({device})", generated.source)
    if device == "cuda":
        from sexpgpu.kernels.device_graph import DeviceGraph  # numba-cuda: GPU runs only

        return DeviceGraph(program, plan, generated, module)
    return CompiledGraph(program, plan, generated, module, device)


def _quiet_view_packing() -> None:
    """numba warns, when compiling, that np.dot packs non-contiguous operands:
    strided views (kernels.views) are read that way on purpose, since packing one
    small matrix inside the call costs less than a kernel copying the whole tensor."""

    warnings.filterwarnings("ignore", message=r".*np\.vdot\(\) is faster on contiguous",
                            category=NumbaPerformanceWarning)


# -- compiling ahead of the first call, with progress --------------------------------


def kernel_functions(compiled: CompiledGraph) -> dict[str, Any]:
    """The numba functions `step` calls, by the module that holds each (a kernel text's
    module is shared by every graph that has it, so these names count distinct
    compiles across graphs). Empty on CUDA, whose kernels compile at first launch."""
    if compiled.device != "cpu":
        return {}
    return {fn.py_func.__module__: fn for fn in vars(compiled.module).values()
            if isinstance(fn, Dispatcher)}


def warm(graphs: list[CompiledGraph], on_kernel: Any = None) -> None:
    """Compile (or load from numba's disk cache) every kernel of `graphs` for the
    argument types their `run` passes, running none of them, so the first step does
    not pay for it; kernels not in the cache are compiled by several processes
    (kernels/compile_pool.py). `on_kernel(module_name, cached)` is called as each one
    is ready: the caller shows progress (this package prints nothing). A kernel ready
    before is skipped."""
    pending = list(dict.fromkeys(call for compiled in graphs for call in _kernel_calls(compiled)))
    report = on_kernel or (lambda name, cached: None)
    compile_pool.compile_all(pending, lambda fn, cached: report(fn.py_func.__module__, cached))


class _FirstChunks:
    """The step module's `launch` while its calls are recorded: each chunk function
    called once with (chunk, block) integers, which its recorder notes."""

    def start(self) -> None:
        pass

    def __call__(self, fn: Any, chunks: int, *args: Any) -> None:
        fn(0, 0)

    def bands(self, bands: int, *calls: tuple) -> None:
        for call in calls:
            call[0](0, 0)


def _kernel_calls(compiled: CompiledGraph) -> list[tuple[Any, tuple]]:
    """(dispatcher, argument types) of every kernel call of `compiled`'s step not
    compiled yet, found by running the step with the kernels replaced by recorders
    (only its copies run)."""
    functions = kernel_functions(compiled)
    if not functions:
        return []
    scratch = [np.zeros(max(1, prod(spec.value.shape)), spec.dtype)
               for spec in compiled._inputs]  # what _prepare gives: flat, writable
    namespace = vars(compiled.module)
    originals = {name: fn for name, fn in namespace.items()
                 if getattr(fn, "py_func", None) is not None and fn in functions.values()}
    calls: dict[tuple[Any, tuple], None] = {}  # in call order, each once

    def recorder(fn: Any) -> Any:
        def record(*args: Any) -> None:
            signature = tuple(numba.typeof(a) for a in args)
            if signature not in fn.overloads:
                calls.setdefault((fn, signature))
        return record

    launcher = namespace.get("launch")
    try:
        for name, fn in originals.items():
            namespace[name] = recorder(fn)
        if launcher is not None:  # a chunk function's arguments: (chunk, its block)
            namespace["launch"] = _FirstChunks()
        compiled._step(*scratch, *compiled._fixed, *compiled._errs)
    finally:
        namespace.update(originals)
        if launcher is not None:
            namespace["launch"] = launcher
    return list(calls)


# -- one op at a time, for experiments ---------------------------------------------------

_NUMPY_DTYPES = {"b": "bool", "f": "f32"}


class OpKernel:
    """One registry op compiled by these kernels as a function of arrays:
    `kernels.op("gelu")(x)`, `kernels.op("sum", axes=(1,))(x)`. A call compiles (once
    per shapes and dtypes, through the cache) a graph of that one op, runs it and
    returns its result (a tuple for several); `compiled(*arrays)` is that graph's
    CompiledGraph, whose `source` and `generated.kernel_sources` are the code."""

    def __init__(self, name: str, device: str = "cpu", **attrs: Any):
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
