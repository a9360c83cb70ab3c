"""The one interface between a training step and the engine that moves gradients
between processes: rank and size, a bucketed all-reduce of arrays, the mean of a
step's scalars, and small objects broadcast or gathered (checkpoint paths, loader
positions). `Single` is the world of one process; MPI and NCCL implement the rest."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from sexpgpu.diagnostics import SexpError, define_code, error

E_RANK_LOST = define_code(
    "E-RANK-LOST", "a process of a multi-process run stopped answering",
    "A data-parallel run waits at every step for all its processes to add their "
    "gradients together. One of them did not arrive within the collective timeout "
    "(SEXPGPU_COLLECTIVE_TIMEOUT, default 20 s): it was killed, crashed or hangs. The "
    "whole job ends (exit 3) instead of waiting forever; `--resume latest` continues "
    "from the last checkpoint with the same number of processes.",
)

BUCKET_BYTES = 4 << 20  # gradients go out in buckets of about this size (as DDP's 25 MB)


class Collective(Protocol):
    """What the runtime asks of the processes' engine."""

    rank: int
    size: int
    name: str

    def allreduce_sum(self, arrays: list[np.ndarray]) -> None:
        """Replace each array (same names, shapes and order on every rank) by its sum
        over the ranks, in buckets of about BUCKET_BYTES."""
        ...

    def mean(self, values: dict[str, float]) -> dict[str, float]:
        """The mean of each scalar over the ranks (same keys on every rank)."""
        ...

    def broadcast(self, value: Any, timeout_s: float | None = None) -> Any:
        """Rank 0's `value` on every rank (a small picklable object)."""
        ...

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's `value` on rank 0, in rank order (None on the others)."""
        ...

    def barrier(self, timeout_s: float | None = None) -> None:
        """Wait for every rank (`timeout_s`: longer than the step timeout, for startup)."""
        ...

    def local_rank(self) -> int:
        """This process's place among the ranks on its own machine."""
        ...

    def abort(self, code: int) -> None:
        """End every process of the job with `code` (one may be gone or hang)."""
        ...


class Single:
    """The world of one process: every collective is the identity."""

    rank = 0
    size = 1
    name = "none"

    def allreduce_sum(self, arrays: list[np.ndarray]) -> None:
        return None

    def mean(self, values: dict[str, float]) -> dict[str, float]:
        return dict(values)

    def broadcast(self, value: Any, timeout_s: float | None = None) -> Any:
        return value

    def gather(self, value: Any) -> list[Any] | None:
        return [value]

    def barrier(self, timeout_s: float | None = None) -> None:
        return None

    def local_rank(self) -> int:
        return 0

    def abort(self, code: int) -> None:
        raise SystemExit(code)


def buckets(arrays: list[np.ndarray], limit: int = BUCKET_BYTES) -> list[list[int]]:
    """The arrays' indices grouped in order into buckets of at most `limit` bytes (an
    array larger than that is a bucket of its own), all of one dtype per bucket."""
    out: list[list[int]] = []
    size, dtype = 0, None
    for i, array in enumerate(arrays):
        if out and size + array.nbytes <= limit and array.dtype == dtype:
            out[-1].append(i)
            size += array.nbytes
        else:
            out.append([i])
            size, dtype = array.nbytes, array.dtype
    return out


def lost(what: str, rank: int, size: int, timeout_s: float) -> SexpError:
    """E-RANK-LOST: a collective did not complete within its timeout."""
    return error(E_RANK_LOST, f"rank {rank} of {size} waited {timeout_s:g} s for the other "
                 f"processes at {what}", expected=f"all {size} processes at every step",
                 actual=f"no answer within {timeout_s:g} s (a process was killed, crashed "
                 "or hangs)",
                 fix="`sexpgpu run FILE --procs N --resume latest` continues from the last "
                 "checkpoint; raise SEXPGPU_COLLECTIVE_TIMEOUT if steps are that slow")


class RankEnded(Exception):
    """A rank other than 0 ends because rank 0 ended the run (and said why): it exits
    with `code` and writes nothing."""

    def __init__(self, code: int):
        super().__init__(f"rank 0 ended the run (exit {code})")
        self.code = code
