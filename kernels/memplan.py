"""The memory plan: every value a kernel stores gets a slot (one flat buffer);
slots are reused once the values in them are dead, and the peak is reported."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
from sexpgpu.kernels.lower import KernelPlan
from sexpgpu.kernels.source import storage

from sexpgpu.ir.graph import Value

_FOREVER = 1 << 60


@dataclass
class MemoryPlan:
    slots: list[tuple[str, int]]      # (numpy storage dtype, elements) per slot
    slot_of: dict[Value, int]         # stored value -> its slot
    naive_bytes: int                  # one buffer per value, no reuse

    @property
    def peak_bytes(self) -> int:
        return sum(n * np.dtype(dt).itemsize for dt, n in self.slots)

    def allocate(self) -> list[np.ndarray]:
        return [np.empty(n, dtype=dt) for dt, n in self.slots]


def plan_memory(program: KernelPlan) -> MemoryPlan:
    """Greedy interval allocation in run order: a value lives from the kernel that
    stores it to the last kernel that reads it (outputs and updates: forever)."""
    kept = {program.base(v) for v in program.outputs.values()}
    kept |= {program.base(v) for v in program.graph.updates.values()}
    last_read = program.last_reads()
    in_place = program.in_place
    slots: list[tuple[str, int]] = []
    free_after: list[int] = []
    slot_of: dict[Value, int] = {}
    naive = 0
    for kernel in program.kernels:
        for v in kernel.outputs:
            if v in in_place:
                continue  # stored into the input it updates
            dtype, size = storage(v), max(1, prod(v.shape))
            naive += size * np.dtype(dtype).itemsize
            end = _FOREVER if v in kept else max(kernel.index, last_read.get(v, kernel.index))
            slot = _pick(slots, free_after, dtype, size, kernel.index)
            if slot is None:
                slots.append((dtype, size))
                free_after.append(end)
                slot = len(slots) - 1
            else:
                slots[slot] = (dtype, max(size, slots[slot][1]))
                free_after[slot] = end
            slot_of[v] = slot
    return MemoryPlan(slots, slot_of, naive)


def _pick(slots, free_after, dtype, size, now) -> int | None:
    """The free slot of `dtype` that fits best: the smallest big enough, else the largest."""
    free = [i for i, (dt, _) in enumerate(slots) if dt == dtype and free_after[i] < now]
    if not free:
        return None
    fitting = [i for i in free if slots[i][1] >= size]
    if fitting:
        return min(fitting, key=lambda i: slots[i][1])
    return max(free, key=lambda i: slots[i][1])
