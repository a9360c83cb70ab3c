"""Strided views: a slice, permute or reshape of a buffer (or of such a view) as
offset, shape and strides into the buffer, so that a matmul (BLAS on an
`as_strided` array) or a concat reads it in place, with no kernel copying it."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from sexpgpu.kernels.source import affine
from sexpgpu.kernels.source import strides as c_strides

from sexpgpu.ir.graph import Node, Value
from sexpgpu.ir.ops.shape import slice_bounds


@dataclass(frozen=True)
class View:
    """Where a view's elements lie in `root`'s buffer. Attention's q, k and v are
    slices of one projection split into heads: as views they cost no kernel."""

    root: Value                  # the value whose buffer holds the elements
    offset: int                  # in elements
    shape: tuple[int, ...]
    strides: tuple[int, ...]     # in elements, of `grid`'s axes when there is one
    # a reshape no strides describe (heads merged back after a permute): `shape` is
    # then a row-major reshape of this strided shape, read by index arithmetic
    grid: tuple[int, ...] | None = None

    def contiguous(self) -> bool:
        """Whether the elements lie row-major without gaps from `offset` (a buffer's
        layout)."""
        return self.grid is None and tuple(self.strides) == tuple(c_strides(self.shape))

    def at(self, index: list[str]) -> str:
        """The element offset of multi-index `index` (loop variables over `shape`)."""
        if self.grid is None:
            return affine(list(zip(index, self.strides)), self.offset)
        # leading axes the reshape kept are indexed directly; the rest, merged or
        # split, by dividing their row-major offset (constant divisors)
        keep = 0
        while keep < min(len(self.shape), len(self.grid)) - 1 \
                and self.shape[keep] == self.grid[keep]:
            keep += 1
        terms = list(zip(index[:keep], self.strides[:keep]))
        lin = affine(list(zip(index[keep:], c_strides(self.shape[keep:]))))
        grid = self.grid[keep:]
        terms += [(f"(({lin}) // {inner} % {size})", st)
                  for size, inner, st in zip(grid, c_strides(grid), self.strides[keep:])
                  if size != 1]
        return affine(terms, self.offset)


def merged_axes(shape: tuple[int, ...], grid: tuple[int, ...]) -> list[list[int]] | None:
    """For each axis of `shape`, the run of `grid`'s axes it merges (row-major), or
    None when `shape` splits a grid axis: then `shape`'s index is not affine in the
    grid's and a loop over the grid cannot address it."""
    groups: list[list[int]] = []
    g = 0
    for size in shape:
        group, covered = [], 1
        while g < len(grid) and (covered < size or (grid[g] == 1 and not group)):
            group.append(g)
            covered *= grid[g]
            g += 1
        if covered != size:
            return None
        groups.append(group)
    return groups if g == len(grid) else None


def whole(value: Value, root: Value) -> View:
    """`value` read row-major from `root`'s buffer (itself, or what it reshapes)."""
    return View(root, 0, value.shape, c_strides(value.shape))


def apply(view: View, node: Node) -> View | None:
    """The view of `node`'s output (a slice, permute or reshape of `view`); None for
    a slice or permute of a reshape that no strides describe."""
    out = node.outputs[0].shape
    if view.grid is not None:
        if node.op != "reshape":
            return None
        return View(view.root, view.offset, out, view.strides, view.grid)
    if node.op == "permute":
        perm = node.attrs["perm"]
        return View(view.root, view.offset, out, tuple(view.strides[p] for p in perm))
    if node.op == "slice":
        bounds = slice_bounds(view.shape, node.attrs)
        offset = view.offset + sum(start * s for (start, _, _), s in zip(bounds, view.strides))
        return View(view.root, offset, out,
                    tuple(s * step for (_, _, step), s in zip(bounds, view.strides)))
    if node.op == "reshape":
        strides = reshaped_strides(view.shape, view.strides, out)
        if strides is None:
            return View(view.root, view.offset, out, view.strides, view.shape)
        return View(view.root, view.offset, out, strides)
    return None


def reshaped_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                     new: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides that read `new` row-major over the elements of (shape, strides), or
    None: each run of axes that is contiguous in memory is split or merged on its
    own (the rule PyTorch's `view` follows)."""
    if prod(shape) == 0 or not shape:
        return c_strides(new) if prod(shape) == prod(new) else None
    result = [0] * len(new)
    d_new = len(new) - 1
    base = strides[-1]
    size_old = size_new = 1
    for d in range(len(shape) - 1, -1, -1):
        size_old *= shape[d]
        run_ends = d == 0 or (shape[d - 1] != 1 and strides[d - 1] != size_old * base)
        if not run_ends:
            continue
        while d_new >= 0 and (size_new < size_old or new[d_new] == 1):
            result[d_new] = size_new * base
            size_new *= new[d_new]
            d_new -= 1
        if size_new != size_old:
            return None
        if d > 0:
            base, size_old, size_new = strides[d - 1], 1, 1
    return tuple(result) if d_new == -1 else None


def leading(rc: tuple[int, ...] | list[int], rows: int, cols: int) -> tuple[bool, int] | None:
    """How sgemm reads a (rows, cols) matrix whose (row, column) strides are `rc`:
    (stored transposed, leading dimension) when its rows (or its columns) step by one
    element and do not overlap; None otherwise (the matrix must be packed first)."""
    if rc[1] == 1 and rc[0] >= cols:
        return False, rc[0]
    if rc[0] == 1 and rc[1] >= rows:
        return True, rc[1]
    return None
