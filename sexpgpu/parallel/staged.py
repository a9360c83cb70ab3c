"""The gradient all-reduce of a CUDA run over MPI on host memory (`collective:
mpi-host`): each bucket of device gradients is copied to one host buffer, summed
across the ranks by MPI, and copied back, all on the step's stream. It works with
any MPI and any GPU, and in numba's CUDA simulator; NCCL (nccl.py) avoids the two
copies where every rank has a GPU and the library."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from sexpgpu.parallel.collective import buckets


class HostStaged:
    """`allreduce_sum` of device arrays through `world.reduce_buckets` (MpiCollective);
    `h2d_bytes` and `d2h_bytes` count the copies, as a DeviceGraph counts its own."""

    name = "mpi-host"

    def __init__(self, world: Any, stream: Any, host_buffer: Callable[[int], np.ndarray]):
        self.world = world
        self.stream = stream            # the stream the step's kernels run on
        self.host_buffer = host_buffer  # bytes -> a host buffer (page-locked on a GPU)
        self._host: list[np.ndarray] = []
        self.h2d_bytes = 0
        self.d2h_bytes = 0
        self.reduce_s = 0.0

    def _flat(self, k: int, group: list[int], arrays: list[Any]) -> np.ndarray:
        """Bucket k's host buffer, made once (the buckets are the same every step)."""
        if k == len(self._host):
            nbytes = sum(arrays[i].nbytes for i in group)
            self._host.append(self.host_buffer(nbytes)[:nbytes].view(arrays[group[0]].dtype))
        return self._host[k]

    def allreduce_sum(self, arrays: list[Any]) -> None:
        t0 = time.perf_counter()
        groups = buckets(arrays)
        flats = []
        for k, group in enumerate(groups):  # device -> host, queued behind the backward
            flat, offset = self._flat(k, group, arrays), 0
            for i in group:
                n = arrays[i].size
                arrays[i].copy_to_host(flat[offset:offset + n], stream=self.stream)
                offset += n
            flats.append(flat)
            self.d2h_bytes += flat.nbytes
        self.stream.synchronize()
        for group, total in zip(groups, self.world.reduce_buckets(flats)):
            offset = 0
            for i in group:
                n = arrays[i].size
                arrays[i].copy_to_device(total[offset:offset + n], stream=self.stream)
                offset += n
            self.h2d_bytes += total.nbytes
        self.stream.synchronize()  # the sums are host arrays that the copies read
        self.reduce_s += time.perf_counter() - t0
