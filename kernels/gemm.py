"""A matrix product as data: where each operand's matrices lie in its flat buffer
(`Gemm`), from which the CUDA launcher renders its tiled kernel and derives the
cuBLAS call (`blas_call`), and which numpy can replay exactly as cuBLAS reads it
(`emulate`), so the call is tested on machines without a GPU."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
from sexpgpu.kernels.lower import reads_in_place
from sexpgpu.kernels.source import affine, strides

from sexpgpu.ir.graph import Node, Value

# cuBLAS's operation codes (cublasOperation_t)
OP_N, OP_T = 0, 1


@dataclass(frozen=True)
class Operand:
    """One operand's matrices in a flat buffer: element (r, c) of batch index
    (i0, i1, ...) lies at offset + sum(i * batch) + r * rows + c * cols."""

    buf: str                    # the step's buffer name (b3)
    dtype: str
    offset: int
    batch: tuple[int, ...]      # element stride per output batch axis (0: broadcast)
    rows: int                   # element stride from one row to the next
    cols: int                   # ... from one column to the next

    def at(self, bidx: list[str], r: str, c: str) -> str:
        """The element offset as source text (batch variables `bidx`)."""
        return affine(list(zip(bidx, self.batch)) + [(r, self.rows), (c, self.cols)],
                      self.offset)


@dataclass(frozen=True)
class Gemm:
    """out[b, r, c] = sum over j of a[b, r, j] * b[b, j, c], for every batch index b."""

    batch: tuple[int, ...]      # the output's batch shape
    m: int
    n: int
    k: int
    a: Operand
    b: Operand
    c: Operand

    @property
    def count(self) -> int:
        return prod(self.batch)


def _broadcast(shape: tuple[int, ...], batch: tuple[int, ...], block: int) -> tuple[int, ...]:
    """Strides over the output batch of an operand with batch `shape` (right-aligned,
    size-1 axes broadcast), each of its matrices `block` elements."""
    lead = len(batch) - len(shape)
    st = strides(shape)
    out = [0] * len(batch)
    for j, d in enumerate(shape):
        if d != 1:
            out[lead + j] = st[j] * block
    return tuple(out)


def _operand(names, v: Value, batch: tuple[int, ...], rows: int, cols: int,
             in_place_view: bool) -> Operand:
    """Where matmul operand `v` (logically rows x cols per matrix) lies: a strided
    view read in place, a transposed buffer, or its own buffer row-major."""
    program = names.program
    if in_place_view:
        view = program.view(v)
        lead = len(batch) - (len(view.shape) - 2)
        bstrides = [0] * len(batch)
        for j, (d, st) in enumerate(zip(view.shape[:-2], view.strides[:-2])):
            if d != 1:
                bstrides[lead + j] = st
        return Operand(names.buf(view.root), v.dtype, view.offset, tuple(bstrides),
                       view.strides[-2], view.strides[-1])
    source = program.transposed(v)
    bstrides = _broadcast(v.shape[:-2], batch, rows * cols)
    if source is not None:  # stored (cols, rows): read transposed
        return Operand(names.buf(source), v.dtype, 0, bstrides, 1, rows)
    return Operand(names.buf(v), v.dtype, 0, bstrides, cols, 1)


def of_matmul(node: Node, names, a_view: bool, b_view: bool) -> Gemm:
    """The Gemm of a matmul kernel (operands as `kernels.structured._matmul` reads them)."""
    a, b = node.inputs
    out = node.outputs[0]
    batch = out.shape[:-2]
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    return Gemm(batch, m, n, k, _operand(names, a, batch, m, k, a_view),
                _operand(names, b, batch, k, n, b_view),
                Operand(names.buf(out), out.dtype, 0, _broadcast(batch, batch, m * n), n, 1))


def stacked(names, v: Value) -> tuple[str, int]:
    """The buffer and element offset of `v`'s elements, row-major without gaps: its
    own buffer (or its copy's), or its root's when a matmul reads it in place (a
    view laid out so: kernels.lower._fold_batch_sum)."""
    view = names.program.view(v)
    if view is not None and reads_in_place("matmul", view):
        return names.buf(view.root), view.offset
    return names.buf(v), 0


def of_batch_sum(mm: Node, total: Node, names) -> Gemm:
    """`sum(matmul(permute(a), b), batch axes)`: one product over the stacked rows,
    a stored (rows*k, m) and read transposed, b stored (rows*k, n)."""
    a, b = mm.inputs
    out = total.outputs[0]
    rows = prod(a.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    source = names.program.transposed(a)
    b_buf, b_at = stacked(names, b)
    return Gemm((), m, n, rows * k, Operand(names.buf(source), a.dtype, 0, (), 1, m),
                Operand(b_buf, b.dtype, b_at, (), n, 1),
                Operand(names.buf(out), out.dtype, 0, (), n, 1))


# -- the cuBLAS call ---------------------------------------------------------------

@dataclass(frozen=True)
class BlasCall:
    """One cuBLAS sgemm (column-major): C' = op(P) op(Q), with C' = out transposed
    (n x m), P = b transposed and Q = a transposed, so that row-major data needs no
    copy. Element offsets, not bytes. `strided`: one sgemm_strided_batched with the
    batch strides (sp, sq, sc); else `offsets` lists each batch's (p, q, c) offsets
    for sgemm_batched's pointer arrays."""

    transp: int
    transq: int
    m: int
    n: int
    k: int
    p: str
    ldp: int
    q: str
    ldq: int
    c: str
    ldc: int
    count: int
    strided: tuple[int, int, int] | None
    offsets: tuple[tuple[int, int, int], ...]


def _lead(rows: int, cols: int, count_rows: int, count_cols: int) -> tuple[int, int] | None:
    """(op, ld) reading a logical (count_rows x count_cols) matrix whose element
    (i, j) lies at i * rows + j * cols as cuBLAS's op(X), or None when neither
    stride is 1 (or the leading dimension is too small for cuBLAS)."""
    if rows == 1 or count_rows == 1:
        ld = cols if count_cols > 1 else count_rows
        if ld >= count_rows:
            return OP_N, max(ld, 1)
    if cols == 1 or count_cols == 1:
        ld = rows if count_rows > 1 else count_cols
        if ld >= count_cols:
            return OP_T, max(ld, 1)
    return None


def _single_stride(batch: tuple[int, ...], st: tuple[int, ...]) -> int | None:
    """The one stride s with offset(i0, i1, ...) == flat index * s, if there is one."""
    dims = [(d, s) for d, s in zip(batch, st) if d != 1]
    if not dims:
        return 0
    inner = dims[-1][1]
    expect = inner
    for d, s in reversed(dims):
        if s != expect:
            return None
        expect = s * d
    return inner


def blas_call(g: Gemm) -> BlasCall | None:
    """The cuBLAS sgemm computing `g`, or None when it cannot (not all f32, an empty
    product, or an operand whose matrices have no unit stride)."""
    if any(x.dtype != "f32" for x in (g.a, g.b, g.c)) or g.m * g.n * g.k == 0:
        return None
    if g.c.cols != 1 and g.n > 1:
        return None
    # op(P)[i, l] = b[l, i]: (n x k) with element strides (b.cols, b.rows)
    p = _lead(g.b.cols, g.b.rows, g.n, g.k)
    # op(Q)[l, j] = a[j, l]: (k x m) with element strides (a.cols, a.rows)
    q = _lead(g.a.cols, g.a.rows, g.k, g.m)
    ldc = g.c.rows if g.m > 1 else g.n
    if p is None or q is None or ldc < g.n:
        return None
    count = g.count
    shared_right = (count > 1 and all(s == 0 for s in g.b.batch)
                    and q[0] == OP_N and g.a.cols == 1 and g.a.rows == g.k
                    and _single_stride(g.batch, g.a.batch) == g.m * g.k
                    and g.c.rows == g.n and _single_stride(g.batch, g.c.batch) == g.m * g.n)
    if shared_right:
        # a weight shared by every batch: the batch's rows are one (count*m, k) matrix
        return BlasCall(p[0], q[0], g.n, count * g.m, g.k, g.b.buf, p[1], g.a.buf, q[1],
                        g.c.buf, ldc, 1, (0, 0, 0), ((g.b.offset, g.a.offset, g.c.offset),))
    singles = [_single_stride(g.batch, x.batch) for x in (g.b, g.a, g.c)]
    strided = tuple(singles) if all(s is not None for s in singles) else None
    offsets = []
    for index in np.ndindex(*g.batch) if g.batch else [()]:
        offsets.append(tuple(x.offset + sum(i * s for i, s in zip(index, x.batch))
                             for x in (g.b, g.a, g.c)))
    return BlasCall(p[0], q[0], g.n, g.m, g.k, g.b.buf, p[1], g.a.buf, q[1], g.c.buf, ldc,
                    count, strided, tuple(offsets))


def emulate(call: BlasCall, buffers: dict[str, np.ndarray]) -> None:
    """Do what cuBLAS does for `call` on flat numpy buffers (column-major reads and
    writes at the call's offsets and leading dimensions): the tests check the call
    against the CPU launcher without a GPU."""
    def matrix(buf: np.ndarray, at: int, op: int, rows: int, cols: int, ld: int) -> np.ndarray:
        # op(X) as a (rows x cols) array: N reads X[i + j*ld], T reads X[j + i*ld]
        i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        flat = at + (i + j * ld if op == OP_N else j + i * ld)
        return buf[flat].astype(np.float64)

    for b in range(call.count):
        if call.strided is not None:
            sp, sq, sc = call.strided
            po, qo, co = (call.offsets[0][0] + b * sp, call.offsets[0][1] + b * sq,
                          call.offsets[0][2] + b * sc)
        else:
            po, qo, co = call.offsets[b]
        p = matrix(buffers[call.p], po, call.transp, call.m, call.k, call.ldp)
        q = matrix(buffers[call.q], qo, call.transq, call.k, call.n, call.ldq)
        out = (p @ q).astype(np.float32)
        i, j = np.meshgrid(np.arange(call.m), np.arange(call.n), indexing="ij")
        buffers[call.c][co + i + j * call.ldc] = out
