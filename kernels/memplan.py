"""The memory plan: every value a kernel stores gets a place in one arena (a flat byte
buffer, viewed as the value's storage dtype) for the kernels from the one that stores
it to the last that reads it; values whose lifetimes do not overlap share bytes,
whatever their dtypes (a bf16 step mixes uint16 and float32 buffers). The arena's
size is the peak reported."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np
from sexpgpu.kernels import hostmem
from sexpgpu.kernels.lower import KernelPlan
from sexpgpu.kernels.source import storage

from sexpgpu.ir.graph import Value

_FOREVER = 1 << 60
_ALIGN = 64  # every value starts on a cache line (and any dtype's view stays aligned)


@dataclass
class MemoryPlan:
    slot_of: dict[Value, int]         # stored value -> its byte offset in the arena
    size: int                         # the arena's bytes: the peak
    naive_bytes: int                  # one buffer per value, no reuse

    @property
    def peak_bytes(self) -> int:
        return self.size

    def allocate(self) -> np.ndarray:
        # on a cache line, so that each value's 64-byte offset puts it on one too
        return hostmem.empty_bytes(self.size)

    def view(self, arena: Any, value: Value) -> Any:
        """`value`'s elements in the arena (a host or device byte array), flat."""
        dtype = np.dtype(storage(value))
        start = self.slot_of[value]
        return arena[start:start + max(1, prod(value.shape)) * dtype.itemsize].view(dtype)


@dataclass
class Together:
    """A run of batch bands (kernels/bands.py): its kernels `first` .. `last` and the
    bytes of a row of each stored value it touches (0: read whole)."""

    first: int
    last: int
    rows: dict[Value, int]


def plan_memory(program: KernelPlan, together: list[Together] = ()) -> MemoryPlan:
    """Offsets by "greedy by size": the largest values first, each at the lowest offset
    where it overlaps no value already placed that is alive at the same time (a value
    lives from the kernel that stores it to the last kernel that reads it; outputs and
    updates to the end). With mixed sizes this packs close to the most bytes alive at
    once, where reusing whole slots best-fit left half of each bf16 slot empty.

    The values a run of batch bands touches (`together`) live through the whole run:
    its bands do not wait for each other, so band 1 of one value must never lie on
    band 0 of another. Only values of one size and one row length share bytes there,
    at one offset (`_band_slots`): band c of each is then band c of the others."""
    kept = {program.base(v) for v in program.outputs.values()}
    kept |= {program.base(v) for v in program.graph.updates.values()}
    last_read = program.last_reads()
    in_place = program.in_place
    values: list[tuple[int, int, int, Value]] = []  # (bytes, first kernel, last kernel, v)
    naive = 0
    stored: set[Value] = set()
    for kernel in program.kernels:
        for v in kernel.outputs:
            if v in in_place or v in stored:
                continue  # stored into the input it updates, or filled by several loops
            stored.add(v)
            size = max(1, prod(v.shape)) * np.dtype(storage(v)).itemsize
            naive += size
            end = _FOREVER if v in kept else max(kernel.index, last_read.get(v, kernel.index))
            values.append((-(-size // _ALIGN) * _ALIGN, kernel.index, end, v))
    groups = _band_slots(values, together)
    order = sorted(range(len(groups)), key=lambda i: (-groups[i][0], groups[i][1], i))
    # the groups placed so far, in placing order: offset, end, first and last kernel
    placed = np.zeros((4, len(groups)), np.int64)
    slot_of: dict[Value, int] = {}
    for count, i in enumerate(order):
        size, first, last, members = groups[i]
        offset, end, a, b = placed[:, :count]
        live = (a <= last) & (first <= b)
        by_start = np.argsort(offset[live], kind="stable")
        offset = _lowest_gap(size, offset[live][by_start], end[live][by_start])
        placed[:, count] = (offset, offset + size, first, last)
        slot_of.update(dict.fromkeys(members, offset))
    top = int(placed[1].max(initial=0))
    # in the order kernels store them: codegen numbers the buffers by this order
    return MemoryPlan({v: slot_of[v] for _, _, _, v in values}, top, naive)


Group = tuple[int, int, int, list[Value]]  # (bytes, first kernel, last kernel, values)


def _band_slots(values: list[tuple[int, int, int, Value]], together: list[Together]) -> list[Group]:
    """The values as groups that share one offset: alone, except in a run of batch
    bands, where values of one size and row length whose lives do not overlap share a
    slot (an unrolled recurrence's per-step temporaries: one slot, not one a step);
    every group a run touches lives through the run."""
    runs_of: dict[Value, list[Together]] = {}
    for run in together:
        for v in run.rows:
            runs_of.setdefault(v, []).append(run)
    groups: list[Group] = []
    slots: dict[tuple[int, int, int], list[dict]] = {}  # (run, bytes, row bytes) -> slots
    for size, born, last, v in sorted(values, key=lambda item: item[1]):
        runs = runs_of.get(v, [])
        first = min([born] + [run.first for run in runs])
        end = max([last] + [run.last for run in runs])
        if len(runs) != 1 or not runs[0].rows[v]:
            groups.append((size, first, end, [v]))
            continue
        kind = slots.setdefault((id(runs[0]), size, runs[0].rows[v]), [])
        slot = next((s for s in kind if s["free"] < born), None)  # its last reader done
        if slot is None:
            kind.append({"free": last, "first": first, "end": end, "members": [v]})
        else:
            slot["free"], slot["end"] = max(slot["free"], last), max(slot["end"], end)
            slot["members"].append(v)
    groups += [(size, s["first"], s["end"], s["members"])
               for (_, size, _), kind in slots.items() for s in kind]
    return groups


def _lowest_gap(size: int, starts: np.ndarray, ends: np.ndarray) -> int:
    """The lowest offset where `size` bytes fit between the ranges [starts, ends),
    sorted by start: before the first range that begins `size` or more bytes past
    the end of all before it, else past them all. (Vectorised: a GRU's thousand
    values made a Python loop over every placed one the most of its run's plan.)"""
    if not len(ends):
        return 0
    reach = np.maximum.accumulate(ends)
    before = np.concatenate(([0], reach[:-1]))
    fits = np.flatnonzero(starts >= before + size)
    return int(before[fits[0]] if len(fits) else reach[-1])
