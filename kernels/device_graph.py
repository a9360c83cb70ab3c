"""A graph compiled for CUDA whose buffers live on the device: every memory-plan slot,
fixed input buffers filled from one host staging buffer per call, and inputs bound
to arrays that stay on the device for a whole run (parameters, optimizer state).
It counts every byte it moves (`h2d_bytes`, `d2h_bytes`)."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np
from sexpgpu.kernels import cuda_backend as be
from sexpgpu.kernels.bf16 import from_bf16
from sexpgpu.kernels.codegen import Generated
from sexpgpu.kernels.inputs import E_RUN_INPUT, _flat, _Input, given
from sexpgpu.kernels.lower import KernelPlan
from sexpgpu.kernels.memplan import MemoryPlan
from sexpgpu.kernels.render import Names
from sexpgpu.kernels.source import ERR, storage

from sexpgpu.diagnostics import SexpError, define_code, error
from sexpgpu.ir.graph import Value
from sexpgpu.ir.ops.indexing import index_error

E_CUDA_KERNEL = define_code(
    "E-CUDA-KERNEL", "a kernel failed on the GPU",
    "A CUDA kernel (or a cuBLAS call) of the step failed on the device: an illegal "
    "address, a launch the device refused, a driver error. The diagnostic names the "
    "kernel and the run-file line its ops came from. Errors the device reports later, "
    "at the next synchronisation, cannot name their kernel: rerun with "
    "SEXPGPU_CUDA_SYNC=1, which synchronises after every launch, to find it.",
)

ALIGN = 256  # each staged input starts on a 256-byte boundary


@dataclass
class _Staged:
    spec: _Input
    offset: int                # bytes into the staging buffers
    nbytes: int
    host: np.ndarray           # its view of the host staging buffer
    device: Any                # its view of the device input buffer


class DeviceGraph:
    """`launch(inputs)` runs one step on the device and returns at once; `read()`
    copies outputs back, `read_record()` the record's few numbers. `run(inputs)`
    does all three (and copies updated inputs that are not bound back into the
    caller's arrays), as `CompiledGraph.run` does on the CPU."""

    device = "cuda"

    def __init__(self, program: KernelPlan, plan: MemoryPlan, generated: Generated,
                 module: Any):
        self.program, self.plan, self.generated, self.module = program, plan, generated, module
        self.source = generated.source
        self.names = Names(program)
        updated = set(program.graph.updates)
        self._inputs = [_Input(v, np.dtype(storage(v)), v in updated)
                        for v in program.graph.inputs]
        self._arena = be.device_array(plan.size, np.uint8)  # every slot, as bytes
        self._stored = {self.names.buf(v): plan.view(self._arena, v) for v in plan.slot_of}
        self._bound: dict[str, Any] = {}          # input name -> a resident device array
        self._staged: list[_Staged] | None = None
        self._step: be.Step | None = None
        self._copied: Any = None                  # event: the staging copy has been read
        self._err = be.to_device(np.zeros(2, np.int64)) if ERR in generated.params else None
        n = len(generated.record)
        self._rec = be.to_device(np.zeros(n + 3, np.float64)) if generated.record else None
        self.h2d_bytes = 0
        self.d2h_bytes = 0
        self.launches_run = 0

    # -- memory --------------------------------------------------------------------

    @property
    def peak_bytes(self) -> int:
        return self.plan.peak_bytes

    def bind(self, arrays: dict[str, Any]) -> None:
        """Inputs that live on the device (flat arrays of the storage dtype): the
        step reads and updates them there, and they are never staged."""
        if self._staged is not None:
            raise RuntimeError("bind() must come before the first launch")
        for spec in self._inputs:
            name = spec.value.name
            if name in arrays:
                self._bound[name] = arrays[name]

    def _stage_layout(self) -> None:
        """One host staging buffer and one device input buffer for every input not
        bound: a step's inputs go over in a single copy."""
        staged, offset = [], 0
        for spec in self._inputs:
            if spec.value.name in self._bound:
                continue
            nbytes = max(1, prod(spec.value.shape)) * spec.dtype.itemsize
            staged.append((spec, offset, nbytes))
            offset += -(-nbytes // ALIGN) * ALIGN
        self._host = be.host_staging(offset)
        self._device = be.device_array(offset, np.uint8)
        self._staged = [
            _Staged(spec, off, nbytes, self._host[off:off + nbytes].view(spec.dtype),
                    self._device[off:off + nbytes].view(spec.dtype))
            for spec, off, nbytes in staged]
        self.staging_bytes = offset

    def device_bytes(self) -> int:
        """Device memory this graph holds beyond the bound arrays."""
        staged = getattr(self, "staging_bytes", 0)
        return self.plan.peak_bytes + staged + (16 if self._err is not None else 0) \
            + (self._rec.size * 8 if self._rec is not None else 0)

    # -- running -------------------------------------------------------------------

    def _buffers(self) -> dict[str, Any]:
        buffers: dict[str, Any] = {}
        for spec in self._inputs:
            name = spec.value.name
            buffers[self.names.buf(spec.value)] = self._bound.get(name)
        for s in self._staged:
            buffers[self.names.buf(s.spec.value)] = s.device
        buffers.update(self._stored)
        if self._err is not None:
            buffers[ERR] = self._err
        return buffers

    def _build(self) -> None:
        self._stage_layout()
        buffers = self._buffers()
        args = [buffers[p] for p in self.generated.params]
        if self._rec is not None:
            args.append(self._rec)
        entries = self.module.launches(*args)
        calls = be.gemm_calls(self.generated.codes)
        self._step = be.Step(entries, calls, buffers, self._describe)

    def launch(self, inputs: dict[str, Any]) -> None:
        """Copy the inputs that are not bound into the fixed input buffers (one copy)
        and run the step's launches; returns without waiting for the device."""
        if self._step is None:
            self._build()
        if self._copied is not None:
            self._copied.synchronize()  # the previous step's copy has read the staging
        for s in self._staged:
            self._pack(s, inputs)
        stream = be.backend().stream
        if self._staged:
            self._device.copy_to_device(self._host[:self.staging_bytes], stream=stream)
            self.h2d_bytes += self.staging_bytes
            if not be.simulated():
                self._copied = self._copied or be.backend().event()
                self._copied.record(stream)
        self._step.run()
        self.launches_run += len(self._step.entries)

    def _pack(self, s: _Staged, inputs: dict[str, Any]) -> None:
        v = s.spec.value
        flat = _flat(given(inputs, v), v.dtype, s.spec.dtype)
        s.host[:flat.size] = flat  # an empty input keeps its one-element buffer

    def read(self, names: list[str] | None = None) -> dict[str, np.ndarray]:
        """Outputs by name, copied to the host (waits for the step)."""
        out = {}
        for name in names if names is not None else list(self.program.outputs):
            v = self.program.outputs[name]
            out[name] = self._copy_out(v)
        return out

    def _copy_out(self, v: Value) -> np.ndarray:
        home = self.names.home(v)
        buf = self.names.buf(home)
        if buf in self._stored:
            flat = self._stored[buf]
        else:
            flat = self._bound.get(home.name)
            if flat is None:
                flat = next(s.device for s in self._staged if s.spec.value is home)
        host = flat.copy_to_host(stream=be.backend().stream)
        be.backend().synchronize()
        self.d2h_bytes += host.nbytes
        out = np.array(host[:prod(v.shape)]).reshape(v.shape)
        return from_bf16(out) if v.dtype == "bf16" else out

    def read_record(self) -> tuple[dict[str, float], int, int]:
        """(the record's values by output name, the call that first had a non-finite
        guarded output or 0, calls so far); raises E-INDEX when a kernel reported a
        bad index. Resets nothing."""
        rec = self._rec.copy_to_host(stream=be.backend().stream)
        be.backend().synchronize()
        self.d2h_bytes += rec.nbytes
        n = len(self.generated.record)
        if rec[n + 2]:
            self._raise_bad_index()
        values = {name: float(rec[k]) for k, name in enumerate(self.generated.record)}
        return values, int(rec[n + 1]), int(rec[n])

    def reset_sums(self) -> None:
        """Zero the record's values (a step of microbatches sums into them), keeping
        its counters: one small launch, no copy."""
        n = len(self.generated.record)
        if n:
            self.module.zero_[1, 32, be.backend().stream](self._rec[:n])

    def run(self, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
        """One step: outputs by name; updated inputs that are not bound are copied
        back into the caller's arrays."""
        for spec in self._inputs:
            if spec.updated and spec.value.name not in self._bound:
                _check_updated(spec, inputs)
        self.launch(inputs)
        if self._err is not None:
            self._raise_bad_index()
        for s in self._staged:
            if s.spec.updated:
                host = s.device.copy_to_host(stream=be.backend().stream)
                be.backend().synchronize()
                self.d2h_bytes += host.nbytes
                target = inputs[s.spec.value.name]
                target.reshape(-1)[...] = host
        return self.read()

    __call__ = run

    def _raise_bad_index(self) -> None:
        err = self._err.copy_to_host(stream=be.backend().stream)
        be.backend().synchronize()
        self.d2h_bytes += err.nbytes
        where, value = (int(x) for x in err)
        if where == 0:
            return
        self._err.copy_to_device(np.zeros(2, np.int64), stream=be.backend().stream)
        node, size = self.generated.index_checks[where]
        raise index_error(node, value, size)

    # -- reports -------------------------------------------------------------------

    @property
    def mode(self) -> tuple[str, str]:
        """("graph" | "launches", why)."""
        if self._step is None:
            backend = be.backend()
            return ("graph" if backend.graphs else "launches"), backend.graph_reason
        return self._step.mode, self._step.reason or be.backend().graph_reason

    def _describe(self, name: str | None, exc: Exception) -> SexpError:
        """E-CUDA-KERNEL for a failure in launch `name` (None: in a replayed graph)."""
        if isinstance(exc, SexpError):
            return exc
        if name is None:
            return error(E_CUDA_KERNEL, f"the step of graph {self.program.graph.name!r} "
                         f"failed on the GPU: {type(exc).__name__}: {exc}",
                         expected="every kernel to finish", actual=str(exc),
                         fix="rerun with SEXPGPU_CUDA_SYNC=1 to name the kernel")
        index = next((c for c, code in enumerate(self.generated.codes)
                      if code.name == name.split(".")[0]), None)
        kernel = self.program.kernels[index] if index is not None else None
        span = next((n.span for n in kernel.nodes if n.span is not None), None) \
            if kernel is not None else None
        ops = "+".join(n.op for n in kernel.nodes) if kernel is not None else name
        return error(E_CUDA_KERNEL, f"kernel {name} ({ops}) failed on the GPU", span,
                     expected=f"kernel {name} to run", actual=f"{type(exc).__name__}: {exc}",
                     fix="rerun with SEXPGPU_CUDA_SYNC=1; if it persists, please report "
                         "it with this run file")


def _check_updated(spec: _Input, inputs: dict[str, Any]) -> None:
    x = inputs.get(spec.value.name)
    if x is None:
        return  # _pack reports it
    if not (isinstance(x, np.ndarray) and x.dtype == spec.dtype and x.flags.c_contiguous):
        raise error(E_RUN_INPUT, f"input {spec.value.name!r} is updated in place",
                    expected=f"a C-contiguous {spec.dtype} array",
                    actual=f"{type(x).__name__} of {np.asarray(x).dtype}",
                    fix=f"np.ascontiguousarray(x, dtype=np.{spec.dtype})")
