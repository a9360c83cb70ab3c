"""The Collective over MPI (mpi4py, the `sexpgpu[mpi]` extra, on the system's MPI):
gradients all-reduced on host buffers, one non-blocking request per bucket. Every wait
polls against a deadline, so a process that died ends the job with E-RANK-LOST
instead of a hang."""

from __future__ import annotations

import pickle
import time
from typing import Any

import numpy as np

from sexpgpu.diagnostics import SexpError
from sexpgpu.parallel.collective import buckets, lost

SPIN_S = 5e-3  # test without sleeping this long: most waits end within it


def _poll(test: Any, what: str, rank: int, size: int, timeout_s: float) -> Any:
    """Call `test()` (-> (done, value)) until done or the deadline: E-RANK-LOST.
    Tests without pause for SPIN_S (MPI progresses the request inside `test`), then
    sleeps up to 1 ms between tests: a long wait leaves the cores to the ranks still
    computing."""
    start = time.monotonic()
    pause = 0.0
    while True:
        done, value = test()
        if done:
            return value
        waited = time.monotonic() - start
        if waited > timeout_s:
            raise lost(what, rank, size, timeout_s)
        if waited > SPIN_S:
            pause = min(max(pause * 2, 2e-5), 1e-3)
            time.sleep(pause)


class MpiCollective:
    """MPI.COMM_WORLD as the runtime's Collective."""

    name = "mpi"

    def __init__(self, timeout_s: float):
        # mpi4py initialises MPI on import: only once a run has several processes
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.timeout_s = timeout_s
        # the ranks sharing this machine, found now while every rank is here (later,
        # rank 0 compiles alone while the others wait)
        self._local_rank = self.comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
        self.reduce_s = 0.0  # seconds spent in allreduce_sum, for the step events
        self.broken = False

    def _wait(self, request: Any, what: str, timeout_s: float | None = None) -> None:
        try:
            _poll(lambda: (request.Test(), None), what, self.rank, self.size,
                  timeout_s or self.timeout_s)
        except SexpError:
            self.broken = True  # a process is lost: the job must end by abort
            raise

    def allreduce_sum(self, arrays: list[np.ndarray]) -> None:
        t0 = time.perf_counter()
        groups = buckets(arrays)
        flats = [np.concatenate([arrays[i].ravel() for i in group]) for group in groups]
        for group, total in zip(groups, self.reduce_buckets(flats)):
            offset = 0
            for i in group:
                n = arrays[i].size
                arrays[i][...] = total[offset:offset + n].reshape(arrays[i].shape)
                offset += n
        self.reduce_s += time.perf_counter() - t0

    def reduce_buckets(self, flats: list[np.ndarray]) -> list[np.ndarray]:
        """Each flat host array's sum over the ranks (new arrays), every request issued
        at once: MPI progresses them together."""
        pending = []
        for flat in flats:
            total = np.empty_like(flat)
            pending.append((total, self.comm.Iallreduce(flat, total, op=self.MPI.SUM)))
        for _, request in pending:
            self._wait(request, "the gradient all-reduce")
        return [total for total, _ in pending]

    def local_rank(self) -> int:
        """This process's place among the ranks on its own machine (its GPU's index)."""
        return self._local_rank

    def mean(self, values: dict[str, float]) -> dict[str, float]:
        names = sorted(values)
        local = np.array([values[k] for k in names], np.float64)
        total = np.empty_like(local)
        self._wait(self.comm.Iallreduce(local, total, op=self.MPI.SUM), "the step's losses")
        return {k: float(v) / self.size for k, v in zip(names, total)}

    def broadcast(self, value: Any, timeout_s: float | None = None) -> Any:
        data = pickle.dumps(value) if self.rank == 0 else b""
        length = np.array([len(data)], np.int64)
        self._wait(self.comm.Ibcast(length, root=0), "a broadcast from rank 0", timeout_s)
        buf = np.frombuffer(data, np.uint8).copy() if self.rank == 0 else np.empty(
            int(length[0]), np.uint8)
        self._wait(self.comm.Ibcast(buf, root=0), "a broadcast from rank 0")
        return value if self.rank == 0 else pickle.loads(buf.tobytes())

    def gather(self, value: Any) -> list[Any] | None:
        data = np.frombuffer(pickle.dumps(value), np.uint8)
        lengths = np.empty(self.size, np.int64)
        self._wait(self.comm.Iallgather(np.array([data.size], np.int64), lengths),
                   "a gather to rank 0")
        out = np.empty(int(lengths.sum()), np.uint8) if self.rank == 0 else None
        spec = [out, (lengths, np.concatenate([[0], np.cumsum(lengths)[:-1]])),
                self.MPI.BYTE] if self.rank == 0 else None
        self._wait(self.comm.Igatherv(data, spec, root=0), "a gather to rank 0")
        if self.rank != 0:
            return None
        ends = np.cumsum(lengths)
        return [pickle.loads(out[end - n:end].tobytes()) for n, end in zip(lengths, ends)]

    def barrier(self, timeout_s: float | None = None) -> None:
        self._wait(self.comm.Ibarrier(), "a barrier", timeout_s)

    def abort(self, code: int) -> None:
        self.comm.Abort(code)
