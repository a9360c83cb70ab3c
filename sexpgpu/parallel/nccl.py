"""The Collective over NCCL for CUDA runs: gradients all-reduced where they live, on
the GPU, one NCCL communicator per process bootstrapped over MPI (rank 0 makes the
unique id and broadcasts it). Written against the same interface as mpi.py, through
CuPy's NCCL binding (`cupy.cuda.nccl`, where the CUDA extra provides it).

UNTESTED ON HARDWARE: no machine with several GPUs has run it yet, and `sexpgpu run`
does not choose it (a CUDA run with --procs is refused, E-PROCS); see docs/devices.md.
"""

from __future__ import annotations

import time
from typing import Any

from sexpgpu.parallel.collective import buckets
from sexpgpu.parallel.mpi import MpiCollective


class NcclCollective(MpiCollective):
    """Device arrays (anything with `__cuda_array_interface__`) summed by NCCL; the
    small objects and the step's scalars still go over MPI."""

    name = "nccl"

    def __init__(self, timeout_s: float):
        super().__init__(timeout_s)
        # CuPy's NCCL binding: only on a GPU run with several processes
        from cupy.cuda import nccl

        self.nccl = nccl
        uid = self.broadcast(nccl.get_unique_id() if self.rank == 0 else None)
        self.nccl_comm = nccl.NcclCommunicator(self.size, uid, self.rank)

    def allreduce_sum(self, arrays: list[Any]) -> None:
        """Each bucket in place on the current stream; NCCL groups them in one launch."""
        t0 = time.perf_counter()
        nccl = self.nccl
        nccl.groupStart()
        for group in buckets(arrays):
            for i in group:
                array = arrays[i]
                pointer = array.__cuda_array_interface__["data"][0]
                self.nccl_comm.allReduce(pointer, pointer, array.size, _dtype(nccl, array),
                                         nccl.NCCL_SUM, 0)
        nccl.groupEnd()
        self.reduce_s += time.perf_counter() - t0


def _dtype(nccl: Any, array: Any) -> int:
    return {"float32": nccl.NCCL_FLOAT32, "float16": nccl.NCCL_FLOAT16,
            "float64": nccl.NCCL_FLOAT64}[str(array.dtype)]
