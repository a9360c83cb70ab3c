"""How many threads a CPU step's matmuls (the BLAS) and parallel kernels use.

Each matmul asks for its threads by its size, and the answer depends on how many
cores the machine leaves free: a parallel sgemm waits for all of its threads, and a
thread the scheduler parks costs a whole tick. Measured on 2 cores with other work
running, a 100x256x256 matmul took 0.57 ms on one thread and 7.5 ms on two; on a quiet
box two threads gain little below ~2^24 FLOPs (100x256x256, 13 MFLOP: 1.2x; the GPT's
768x128x128 projections, 25 MFLOP: 1.85x). So a second thread is given only to a
matmul that big, and only while the last measurement window saw a free core.

The free cores are measured, not guessed from the load average (a minute late, and
it counts this process's own threads): over each window of REFRESH_S, the machine's
idle CPU time (/proc/stat) plus this process's own CPU time, per second of wall time,
is the number of cores this process could have had. A process that cannot read
/proc/stat keeps one thread.

Results do not depend on the thread count: OpenBLAS splits a product's rows and
columns between threads, never its inner dimension, and a parallel kernel's threads
each own whole outputs (tests/test_threads.py checks both bit for bit).

SEXPGPU_BLAS_THREADS=n fixes every matmul at n threads (no policy).
"""

from __future__ import annotations

import os
import time
from typing import Any

from sexpgpu.kernels import blas

from sexpgpu import env

MIN_FLOPS_PER_THREAD = 1 << 24  # below this a second BLAS thread does not pay
REFRESH_S = 0.25  # how often the free cores are measured (a /proc/stat read, ~20 us)
FREE_MARGIN = 0.2  # cores needed beyond the threads' count: n threads need n - 0.2 free


def _idle_seconds() -> float | None:
    """Seconds all cores spent idle since boot (/proc/stat), None where unreadable."""
    try:
        with open("/proc/stat", "rb") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu" or len(fields) < 6:
        return None
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return (int(fields[4]) + int(fields[5])) / ticks  # idle + iowait


class Policy:
    """The thread counts of one process's CPU steps (one per process: `policy()`)."""

    def __init__(self, cap: int, fixed: int | None = None) -> None:
        self.cap = max(1, cap)
        self.fixed = fixed
        self.allowed = 1  # threads a big matmul may have now; 1 until measured
        self.current: int | None = None  # what the BLAS was last set to
        self.kernel_threads: int | None = None  # what numba's parallel kernels were
        self._mark: tuple[float, float, float] | None = None
        self._next = 0.0
        self.windows = 0  # measurement windows so far (for the record)

    def free_cores(self, wall: float, idle: float, ours: float) -> float:
        """Cores this process could have used over a window: idle plus its own."""
        return (idle + ours) / wall if wall > 0 else 0.0

    def refresh(self, now: float | None = None) -> None:
        """Measure the window since the last refresh, at most every REFRESH_S."""
        now = time.monotonic() if now is None else now
        if now < self._next:
            return
        self._next = now + REFRESH_S
        idle = _idle_seconds()
        if idle is None:
            return
        ours = time.process_time()
        if self._mark is not None:
            wall = now - self._mark[0]
            free = self.free_cores(wall, idle - self._mark[1], ours - self._mark[2])
            self.allowed = max(1, min(self.cap, int(free + FREE_MARGIN)))
            self.windows += 1
        self._mark = (now, idle, ours)

    def threads_for(self, flops: int) -> int:  # depends on flops only by size_class
        if self.fixed is not None:
            return self.fixed
        return max(1, min(self.allowed, flops // MIN_FLOPS_PER_THREAD))

    def matmul(self, flops: int) -> None:
        """Set the BLAS threads for a matmul of `flops` per BLAS call."""
        self.refresh()
        n = self.threads_for(flops)
        if n != self.current:
            blas.set_threads(n)
            self.current = n

    def parallel(self) -> None:
        """Set the threads of the parallel kernel about to run: those the last window
        allows (or the fixed count), at most numba's."""
        self.refresh()
        n = min(self.fixed if self.fixed is not None else self.allowed, numba_threads())
        if n != self.kernel_threads:
            # OpenMP reads this when numba's pool starts, on this first call: its
            # idle threads sleep instead of spinning on the core the next parallel
            # sgemm's second thread needs (with them spinning, a two-thread
            # 768x128x512 sgemm after a parallel kernel took 8x as long on 2 cores)
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            # numba's thread pool starts on first use: only a step with a parallel
            # kernel pays for it
            import numba
            numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))
            self.kernel_threads = n

    def describe(self) -> dict[str, Any]:
        """What the `open` event records (and `sexpgpu diff` compares)."""
        return {"blas": blas.name(), "policy": "fixed" if self.fixed is not None else "auto",
                "blas_threads": self.fixed if self.fixed is not None else self.cap,
                "numba_threads": numba_threads(),
                "min_flops_per_thread": MIN_FLOPS_PER_THREAD}


def size_class(flops: int) -> int:
    """Matmuls of one class get the same threads from any policy (`threads_for`
    reads the size only as flops // MIN_FLOPS_PER_THREAD, and no machine has more
    than 64 cores' worth): a step asks again only where the class changes."""
    return min(flops // MIN_FLOPS_PER_THREAD, 64)


def numba_threads() -> int:
    """The threads numba's parallel kernels may use (its own setting, read without
    starting its thread pool)."""
    value = os.environ.get("NUMBA_NUM_THREADS")
    return int(value) if value else env.num_threads() or env.usable_cores()


_POLICY: list[Policy] = []


def policy() -> Policy:
    """This process's policy, made from the environment on first use."""
    if not _POLICY:
        _POLICY.append(Policy(env.thread_cap(), env.blas_threads_fixed()))
    return _POLICY[0]


def matmul(flops: int) -> None:
    """What a generated CPU step calls before a matmul kernel whose size class
    differs from the previous one's (`size_class`)."""
    policy().matmul(flops)


def parallel() -> None:
    """What a generated CPU step calls before each parallel kernel."""
    policy().parallel()


def reset() -> None:
    """Forget the policy (tests change the environment between runs)."""
    _POLICY.clear()
