"""Fan-out: the cotangent of a value read several times is the sum of its parts;
parts that are slice VJPs of disjoint windows along one axis join in one `concat`."""

from __future__ import annotations

from sexpgpu.ir.graph import Graph, Value
from sexpgpu.ir.ops.shape import slice_bounds

# A slice VJP (`slice_scatter`) is zeros with the part written in one window. Joining
# such parts as one `concat`, with zeros only in the gaps, makes splitting a fused
# projection into pieces (attention's q, k and v from one matmul) cost one copy
# backwards, not a zero-filled tensor per piece and the adds between them.


def sum_parts(g: Graph, parts: list[Value]) -> Value:
    """The sum of `parts` (one value's cotangents, in the order they were made)."""
    by_axis: dict[int, list[Value]] = {}
    for part in parts:
        axis = _window_axis(part)
        if axis is not None:
            by_axis.setdefault(axis, []).append(part)
    for axis, windows in by_axis.items():
        joined = _concat_windows(g, windows, axis) if len(windows) >= 2 else None
        if joined is not None:
            parts = [joined] + [p for p in parts if p not in windows]
    total = parts[0]
    for part in parts[1:]:
        total = g.apply("add", total, part)
    return total


def _window_axis(v: Value) -> int | None:
    """The one axis a slice_scatter's window narrows (with step 1), else None."""
    node = v.node
    if node is None or node.op != "slice_scatter":
        return None
    bounds = slice_bounds(v.shape, node.attrs)
    narrowed = [ax for ax, (start, stop, step) in enumerate(bounds)
                if (start, stop, step) != (0, v.shape[ax], 1)]
    if len(narrowed) != 1 or bounds[narrowed[0]][2] != 1:
        return None
    return narrowed[0]


def _concat_windows(g: Graph, windows: list[Value], axis: int) -> Value | None:
    """concat of the windows' sources in axis order, zeros between; None if any overlap."""
    spans = sorted((slice_bounds(w.shape, w.node.attrs)[axis][:2], w) for w in windows)
    shape, dtype = windows[0].shape, windows[0].dtype
    pieces: list[Value] = []
    at = 0
    for (start, stop), w in spans:
        if start < at:
            return None
        if start > at:
            pieces.append(_zeros(g, shape, axis, start - at, dtype))
        pieces.append(w.node.inputs[0])
        at = stop
    if at < shape[axis]:
        pieces.append(_zeros(g, shape, axis, shape[axis] - at, dtype))
    with g.at(windows[0].node.span, windows[0].node.notes):
        return g.apply("concat", *pieces, axis=axis)


def _zeros(g: Graph, shape: tuple[int, ...], axis: int, size: int, dtype: str) -> Value:
    gap = shape[:axis] + (size,) + shape[axis + 1:]
    return g.apply("full", shape=gap, dtype=dtype, value=0.0)
