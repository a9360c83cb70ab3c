"""The gradient all-reduce of a CUDA run over NCCL (`collective: nccl`): the device
gradients summed where they live, in place, on the step's stream, in one NCCL group
per step; no copy to the host. One communicator per process, bootstrapped over MPI:
rank 0 makes the unique id and MPI broadcasts it. The library comes through ctypes
(libnccl.py). The step's scalars and small objects still go over MPI.

UNTESTED ON HARDWARE: no machine with several GPUs has run it yet (docs/devices.md);
bench/gpu_check.py's multi-GPU section is the check to run first."""

from __future__ import annotations

import time
from typing import Any

from sexpgpu.parallel.collective import buckets
from sexpgpu.parallel.libnccl import Nccl


class NcclReducer:
    """`allreduce_sum` of device arrays (anything with `__cuda_array_interface__`) on
    `program`'s stream, timed there by two CUDA events (`device_ms`)."""

    name = "nccl"
    h2d_bytes = d2h_bytes = 0  # nothing goes through the host

    def __init__(self, world: Any, nccl: Nccl, program: Any):
        self.world, self.nccl = world, nccl
        self.stream, self.handle = program.stream(), program.stream_handle()
        self._start, self._end = program.event(), program.event()
        uid = world.broadcast(nccl.unique_id() if world.rank == 0 else None)
        self.comm = nccl.init_rank(world.size, uid, world.rank)
        self.reduce_s = 0.0

    def allreduce_sum(self, arrays: list[Any]) -> None:
        """Enqueued behind the backward on the step's stream; the apply graph, on the
        same stream, runs after it. Returns without waiting for the device."""
        t0 = time.perf_counter()
        self._start.record(self.stream)
        self.nccl.group_start()
        try:
            for group in buckets(arrays):
                for i in group:
                    array = arrays[i]
                    pointer = int(array.__cuda_array_interface__["data"][0])
                    self.nccl.all_reduce_sum(pointer, array.size, str(array.dtype),
                                             self.comm, self.handle)
        finally:
            self.nccl.group_end()
        self._end.record(self.stream)
        self.reduce_s += time.perf_counter() - t0

    def device_ms(self) -> float:
        """The last all-reduce's time on the GPU, the wait for the other GPUs included
        (valid once the stream has passed it: the step's numbers were read)."""
        return float(self._start.elapsed_time(self._end))
