"""How many threads a CPU step uses, and how its matmuls are cut for them.

One pool: numba's threads run every parallel part of a step, the matmuls' chunks,
the parallel loops and the runs of batch bands (kernels/bands.py), each a chunk
function (kernels/parallel.py), and the BLAS runs one thread inside each chunk. Two
pools on the same cores fight: with OpenBLAS's threads beside numba's, one pool's idle
threads spin where the other's must run (a parallel GELU between two-thread sgemms
gained nothing on 2 cores, and with numba's threads spinning a two-thread sgemm took
8x as long). With one pool the char-GPT's attention, GELU and matmuls all run on both
cores.

How many threads depends on how many cores the machine leaves free: a parallel loop
waits for all of its threads, and a thread the scheduler parks costs a whole tick
(on 2 cores with other work running, a 100x256x256 matmul took 0.57 ms on one
thread and 7.5 ms on two). The free cores are measured, not guessed from the load
average (a minute late, and it counts this process's own threads): over each window
of REFRESH_S, the machine's idle CPU time (/proc/stat) plus this process's own CPU
time, per second of wall time, is the number of cores this process could have had.
A process that cannot read /proc/stat keeps one thread.

Results do not depend on the thread count: a matmul is cut into chunks by its shape
and the machine's cores (`matmul_chunks`), a loop by its size, and one thread runs the
same chunks in turn; a chunk owns whole outputs, so no sum is split differently
(tests/test_threads.py checks the bits with one thread and with two).

SEXPGPU_THREADS=n fixes the count (no policy); SEXPGPU_BLAS_THREADS is its old name.
"""

from __future__ import annotations

import os
import time
from typing import Any

from sexpgpu.kernels import blas

from sexpgpu import env

# below this a matmul chunk does not pay for its thread; a matmul of twice this splits
# in two (the char-GPT's 768x128x128 projections, 2^24.6 FLOPs: 0.25 ms on one thread,
# and the step 2-4 ms faster with them and their gradients' matmuls in two chunks).
# From 2^22 (was 2^23) the MNIST-1D MLP's 100x256x256 products split too: its quiet
# step 0.49 -> 0.39-0.41 ms, under four busy processes 1.20-1.31 -> 1.30-1.34 ms
# (the policy then runs the chunks on one thread), the GPT's lm head 1% of its step
MIN_FLOPS_PER_THREAD = 1 << 22
# element-operations from which a kernel's outer loop is shared by the pool's threads
# (below it, waking them costs more than they save)
PARALLEL_WORK = 1 << 22
# ... or from this many elements written or read (a row reduction's: its rows times
# their length), when the kernel reads a buffer that a
# parallel kernel has just written (kernels/codegen.py's `_spread_reads`): each
# thread then finds its part in its own core's cache, where one thread would fetch
# the other core's half (the char-GPT's residual adds and layer norms between its
# two-chunk matmuls, 98304 elements: ~1 ms of a 23 ms step; from 2^15, its AdamW
# updates of the 49152-element qkv weights too: 0.16 ms of a 20 ms step, twice,
# once the buffers sat on cache lines; the loss's row reductions over the 768x65
# logits, counted by what they read: 0.13 -> 0.09 ms). After a serial kernel the same
# loops ran slower shared (the CNN's unfolds, the GRU's adds: 3-8% a step)
PARALLEL_ELEMENTS = 1 << 15
MIN_CHUNK_DIM = 32  # rows (or columns) of a matmul chunk at least
MAX_CHUNKS = 8  # a chunk re-packs the shared operand: more cost more than they gain
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
    """The thread count of one process's parallel kernels (one per process: `policy()`)."""

    def __init__(self, cap: int, fixed: int | None = None) -> None:
        self.cap = max(1, cap)
        self.fixed = fixed
        self.allowed = 1  # threads a parallel kernel may have now; 1 until measured
        self.kernel_threads: int | None = None  # what numba's pool was last set to
        self._mark: tuple[float, float, float] | None = None
        self._next = 0.0
        self.windows = 0  # measurement windows so far (for the record)
        # one pool: the BLAS never starts threads of its own (two pools on the same
        # cores fight: one's idle threads spin where the other's must run)
        blas.set_threads(1)

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

    def threads(self) -> int:
        """The threads a parallel kernel gets now: the fixed count, else those the
        last window allows, at most numba's."""
        return min(self.fixed if self.fixed is not None else self.allowed, numba_threads())

    def parallel(self) -> None:
        """Set the threads of the step's parallel kernels (those the last window
        allows, or the fixed count)."""
        self.refresh()
        n = self.threads()
        if n != self.kernel_threads:
            # numba's thread pool starts on first use: only a step with a parallel
            # kernel pays for it
            import numba
            numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))
            self.kernel_threads = n

    def describe(self) -> dict[str, Any]:
        """What the `open` event records (and `sexpgpu diff` compares)."""
        # numba and llvmlite: only once a run is under way (not for `--device tpu`)
        from sexpgpu.kernels import vectorwidth, vgemm

        return {"sgemm": vgemm.describe(), "loop_vectors": vectorwidth.describe(),
                "blas": blas.name(),
                "policy": "fixed" if self.fixed is not None else "auto",
                "threads": self.fixed if self.fixed is not None else self.cap,
                "blas_threads": 1, "numba_threads": numba_threads(),
                "min_flops_per_thread": MIN_FLOPS_PER_THREAD, "parallel_work": PARALLEL_WORK,
                "parallel_elements": PARALLEL_ELEMENTS,
                "denormals": "flushed" if env.flush_denormals() else "kept"}


def parallel_worth(work: int) -> bool:
    """Whether a kernel of `work` element-operations runs its outer loop in parallel."""
    return work >= PARALLEL_WORK


def parallel_maybe(work: int, elements: int) -> bool:
    """Whether a kernel of `work` over `elements` outputs may run in parallel: it
    does when its work pays (`parallel_worth`) or when it reads what a parallel kernel
    wrote (the step's generator knows, PARALLEL_ELEMENTS says why)."""
    return parallel_worth(work) or elements >= PARALLEL_ELEMENTS


def matmul_chunks(flops: int, dim: int) -> tuple[int, int]:
    """How a matmul of `flops` is split along an output dimension of `dim` for the
    pool's threads: (chunks, rows or columns per chunk). It depends on the shape and
    the machine's cores, never on the threads a step gets: one thread runs the same
    chunks in turn, so the bits do not change (a sgemm's output element is a dot over
    the whole inner dimension in every chunk)."""
    chunks = min(MAX_CHUNKS, env.usable_cores(), flops // MIN_FLOPS_PER_THREAD,
                 dim // MIN_CHUNK_DIM)
    if chunks < 2:
        return 1, dim
    size = -(-dim // chunks)
    size = -(-size // 16) * 16  # whole row blocks (8) and vectors (16) of the sgemm
    return -(-dim // size), size


def numba_threads() -> int:
    """The threads numba's parallel kernels may use (its own setting, read without
    starting its thread pool)."""
    return env.count("NUMBA_NUM_THREADS") or env.num_threads() or env.usable_cores()


_POLICY: list[Policy] = []


def policy() -> Policy:
    """This process's policy, made from the environment on first use."""
    if not _POLICY:
        _POLICY.append(Policy(env.thread_cap(), env.threads_fixed()))
    return _POLICY[0]


def parallel() -> None:
    """What a generated CPU step with parallel kernels calls first, once a step."""
    policy().parallel()


def reset() -> None:
    """Forget the policy (tests change the environment between runs)."""
    _POLICY.clear()
