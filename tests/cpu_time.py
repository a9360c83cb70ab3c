"""The CPU time of one call on this thread, with the objects a long test process
already holds frozen out of the garbage collector's passes: a deep recursion's
allocations set off full collections that scanned them all (2.0-2.2 s of this
thread late in a suite run for what takes 0.27 s in a process of its own)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def thread_cpu(fn: Callable[[], T]) -> tuple[T, float]:
    """fn's result and the seconds of this thread's CPU it took (not the wall clock
    of a busy machine, nor the other threads a long test process has started)."""
    gc.collect()
    gc.freeze()
    try:
        start = time.thread_time()
        result = fn()
        return result, time.thread_time() - start
    finally:
        gc.unfreeze()
