"""sgemm written as LLVM vector IR, the body of kernels/sgemm.py's calls: C = op(A) B
+ beta C on f32 matrices anywhere in flat buffers (first element's pointer, row
stride), row-major.

Why our own: OpenBLAS (numpy's and scipy's wheels) ran at about half this CPU's FMA
rate on one core (its AVX2 kernels; ~110 GFLOP/s on the GPT's projections), and
paid a packing and dispatch cost per call that dominated the small products of an
attention head (50-80 GFLOP/s at 32x32x64). This loop nest of 512-bit FMAs with
its accumulators in registers ran 170-240 GFLOP/s on both (docs/kernels.md).

The loop nest: rows in panels of MC (their A panel stays in the L2 cache; more rows
when k < KC, the panel's bytes the same, or all of up to 384), k in panels of KC
(a row panel's every k panel inside each column panel when its whole A is small),
columns in panels of two vectors (16 lanes each with AVX-512, 8 with AVX2; lanes
past n masked, in the last panel only), then the rows in blocks of MR (8; 6 with
AVX2; the rest in blocks of 4, 2, 1), each block's 2 * MR vector
accumulators in registers across its k loop. Every element of C is one chain of
FMAs over k in order, started from beta * C (0 when beta is 0: C is then never
read, so a NaN there does not leak) and carried through C between k panels,
whatever the blocking: its bits do not depend on how a caller cuts the rows or
columns into chunks. B is copied a panel at a time (KC x 32, 32 KB on the stack)
into k-major order first, so the loads of a k step are two contiguous vectors and
a row stride of B never maps a panel's rows onto the same cache sets; a B stored
transposed (n x k) is transposed on the way, in lanes x lanes tiles in registers
(16 x 16 with AVX-512). An A stored transposed, read by enough column panels, is
copied a panel (KC x MC) at a time into micro-panels of a block's MR rows, k-major,
so that a block's k steps read adjacent f32 (`a_source`, `pack_a`)."""

from __future__ import annotations

import functools
from typing import NamedTuple

import numba
from llvmlite import binding, ir
from numba import cfunc, types
from numba.core import cgutils
from numba.extending import intrinsic

KC = 256                    # k of a panel (KC x NR f32: 32 KB with 16 lanes, L1-resident)
MC = 256                    # rows of an A panel (MC x KC f32: 256 KB, L2-resident)
ONE_PANEL = 3 * MC // 2     # ... or all rows of an A this short (`_Emit.panel_rows`)
NV = 2                      # vectors per row of a block
UNROLL = 4                  # k steps per trip of a block's inner loop
# A stored transposed is copied a panel (KC x MC) at a time (`_Emit.pack_a`) when
# PACK_PANELS column panels or more read it
PACK_PANELS = 3
# rows whose whole A (rows x k f32) is at most this stay in L2 across the column
# panels: their k panels then run inside each column panel (`_Emit.k_span`)
A_WHOLE = ONE_PANEL * KC


class Shape(NamedTuple):
    """A block: MR rows of NV vectors of `lanes` f32, its 2 * MR accumulators held in
    registers (16 of 32 with AVX-512; 12 of 16 with AVX2, the other 4 for B's two
    vectors and A's broadcast: a k step's 12 FMAs to its 8 loads, where 4 rows
    gave 8 to 6 and ran at two thirds of the rate on an AMD Zen 3)."""

    lanes: int
    mr: int

    @property
    def nr(self) -> int:
        return self.lanes * NV


WIDE, NARROW = Shape(16, 8), Shape(8, 6)


@functools.cache
def host_shape() -> Shape:
    """The block for the CPU numba compiles for: 512-bit vectors with AVX-512, else
    256-bit ones (more accumulators than registers would spill in the inner loop).
    That CPU is this one unless NUMBA_CPU_NAME / NUMBA_CPU_FEATURES name another (a
    cache built for other machines): then its features, and the narrow block for a
    named CPU without them."""
    features = numba.config.CPU_FEATURES
    if features is None and numba.config.CPU_NAME is not None:
        return NARROW
    if features is None:
        features = binding.get_host_cpu_features().flatten()
    return WIDE if "+avx512f" in features.split(",") else NARROW


def describe() -> str:
    """What the `open` event records: the block and the vector width."""
    shape = host_shape()
    return (f"sexpgpu vgemm {shape.mr}x{shape.nr} blocks of "
            f"{'AVX-512' if shape == WIDE else 'AVX2'} f32 vectors")


_F32 = ir.FloatType()
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_PTR = _F32.as_pointer()
_I8P = ir.IntType(8).as_pointer()
_ALIGN = ir.Constant(_I32, 4)
SIGNATURE = ir.FunctionType(ir.VoidType(), [_PTR, _I64, _PTR, _I64, _PTR, _I64,
                                            _I64, _I64, _I64, _F32])


def _int(value: int) -> ir.Constant:
    return ir.Constant(_I64, value)


def _declared(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, fnty, name)


def _splat(builder: ir.IRBuilder, x: ir.Value, vty: ir.VectorType) -> ir.Value:
    one = builder.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(_I32, 0))
    return builder.shuffle_vector(one, ir.Constant(vty, ir.Undefined),
                                  ir.Constant(ir.VectorType(_I32, vty.count), [0] * vty.count))


def _transposed(builder: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """The transpose of a square tile held as vectors (rows[i][j] -> out[j][i]): for
    h = n/2, ..., 1, rows i and i + h (bit h of i clear) swap their off-diagonal
    h-lane halves, one shuffle each (log2(n) rounds of n shuffles)."""
    n = len(rows)
    out = list(rows)
    h = n // 2
    while h:
        for i in range(n):
            if i & h:
                continue
            top, bottom = out[i], out[i + h]
            lo = [lane if not lane & h else n + lane - h for lane in range(n)]
            hi = [lane + h if not lane & h else n + lane for lane in range(n)]
            out[i] = builder.shuffle_vector(top, bottom, ir.Constant(
                ir.VectorType(_I32, n), lo))
            out[i + h] = builder.shuffle_vector(top, bottom, ir.Constant(
                ir.VectorType(_I32, n), hi))
        h //= 2
    return out


class _Emit:
    """The IR of one variant (A stored transposed or not, B likewise)."""

    def __init__(self, fn: ir.Function, a_t: bool, b_t: bool, shape: Shape) -> None:
        self.a_t, self.b_t, self.shape = a_t, b_t, shape
        lanes = shape.lanes
        self.vec = vec = ir.VectorType(_F32, lanes)
        self.mask_t = mask = ir.VectorType(ir.IntType(1), lanes)
        self.ivec = ir.VectorType(_I64, lanes)
        self.a, self.lda, self.b, self.ldb, self.c, self.ldc, self.m, self.k, self.n, \
            self.beta = fn.args
        self.builder = ir.IRBuilder(fn.append_basic_block("entry"))
        module = fn.module
        self._load = _declared(module, f"llvm.masked.load.v{lanes}f32.p0", ir.FunctionType(
            vec, [vec.as_pointer(), _I32, mask, vec]))
        self._store = _declared(module, f"llvm.masked.store.v{lanes}f32.p0", ir.FunctionType(
            ir.VoidType(), [vec, vec.as_pointer(), _I32, mask]))
        self._fma = _declared(module, f"llvm.fma.v{lanes}f32", ir.FunctionType(vec, [vec] * 3))
        self._prefetch = _declared(module, "llvm.prefetch.p0", ir.FunctionType(
            ir.VoidType(), [_I8P, _I32, _I32, _I32]))
        b = self.builder
        self.acc = {(r, v): cgutils.alloca_once(b, vec)
                    for r in range(shape.mr) for v in range(NV)}
        self.panel = cgutils.alloca_once(b, _F32, size=KC * shape.nr)
        # on a cache line: the blocks load two vectors of it every k step, and at
        # f32's alignment each 64-byte load spanned two lines (one core, 384x128x384:
        # 160 -> 181 GFLOP/s)
        self.panel.align = 64
        if a_t:  # MC rows as micro-panels of MR, and the last column vector's lanes
            micro = -(-MC // shape.mr) * KC * shape.mr
            self.a_panel = cgutils.alloca_once(b, _F32, size=micro + lanes)
            self.a_panel.align = 64
        self.lane_index = ir.Constant(self.ivec, list(range(lanes)))
        self.n_vec = _splat(b, self.n, self.ivec)
        self.beta_vec = _splat(b, self.beta, vec)
        self.beta_zero = b.fcmp_ordered("==", self.beta, ir.Constant(_F32, 0.0))

    # -- pieces --------------------------------------------------------------------

    def load(self, ptr: ir.Value, mask: ir.Value, whole: ir.Value) -> ir.Value:
        """The lanes of `mask` at ptr (the others 0); a plain load when `whole` (every
        lane in range). Why both: AVX2's masked moves (vmaskmovps) cost an AMD Zen 3
        a third of the matmuls' time, and most panels are whole."""
        b = self.builder
        vptr = b.bitcast(ptr, self.vec.as_pointer())
        with b.if_else(whole) as (plain, masked):
            with plain:
                in_full, from_full = b.load(vptr, align=4), b.block
            with masked:
                in_part = b.call(self._load, [vptr, _ALIGN, mask, ir.Constant(self.vec, None)])
                from_part = b.block
        value = b.phi(self.vec)
        value.add_incoming(in_full, from_full)
        value.add_incoming(in_part, from_part)
        return value

    def store(self, value: ir.Value, ptr: ir.Value, mask: ir.Value, whole: ir.Value) -> None:
        """`load`'s store."""
        b = self.builder
        vptr = b.bitcast(ptr, self.vec.as_pointer())
        with b.if_else(whole) as (plain, masked):
            with plain:
                b.store(value, vptr, align=4)
            with masked:
                b.call(self._store, [value, vptr, _ALIGN, mask])

    def at(self, base: ir.Value, row: ir.Value, ld: ir.Value, col: ir.Value) -> ir.Value:
        b = self.builder
        return b.gep(base, [b.add(b.mul(row, ld), col)])

    def lane(self, x: ir.Value, v: int) -> ir.Value:
        """x plus the offset of vector v of a block row."""
        return self.builder.add(x, _int(v * self.shape.lanes))

    def a_elem(self, row: ir.Value, kk: ir.Value) -> ir.Value:
        if self.a_t:
            return self.at(self.a, kk, self.lda, row)
        return self.at(self.a, row, self.lda, kk)

    def a_source(self, ic, rows, k0, kc) -> tuple[ir.Value, ir.Value, ir.Value | None]:
        """Where the blocks of rows ic.. read A's k panel k0.. from: (the pointer to
        element (ic, k0), the stride from one k to the next, whether it is the copy).
        For A stored transposed and read by PACK_PANELS column panels or more, a copy
        of the panel (`pack_a`), made once for them all."""
        b = self.builder
        if not self.a_t:
            return self.a_elem(ic, k0), _int(1), None
        packed = b.icmp_signed(">=", self.n, _int(PACK_PANELS * self.shape.nr))
        with b.if_then(packed):
            self.pack_a(ic, rows, k0, kc)
        origin = b.select(packed, self.a_panel, self.a_elem(ic, k0))
        return origin, b.select(packed, _int(self.shape.mr), self.lda), packed

    def pack_a(self, ic, rows, k0, kc) -> None:
        """A^T's rows k0..k0+kc, columns ic..ic+rows, into the panel as micro-panels of
        MR columns (a block's rows), each k-major (KC x MR f32): a block's k steps then
        read its MR elements from adjacent f32, a new line every few steps, where in
        A^T itself, or in a copy keeping its rows, each k step read a line of its own
        (and rows a power of two apart put them in a few L1 sets). One core, A/B in one
        process: the weight gradients of the char-GPT (128x768x384, A^T's rows 128
        apart, read in place before) 77.8 -> 85.0 GFLOP/s, of a 384-wide GPT
        (384x1024x1536) 77.1 -> 85.5, a copy in rows (1536x1024x384) 78.5 -> 87.2,
        MKL 86-91 on each. The bits are the same: each element's FMAs run over k in
        order. A column's vector is stored whole: its lanes past MR land on the next
        k's place, written after it (or on the next micro-panel's first k, written
        later; the panel has room past the last)."""
        b, lanes, mr = self.builder, self.shape.lanes, self.shape.mr
        rows_vec = _splat(b, rows, self.ivec)
        with cgutils.for_range_slice(b, _int(0), rows, _int(mr), _I64) as (p0, _):
            mask = b.icmp_signed("<", b.add(_splat(b, p0, self.ivec), self.lane_index),
                                 rows_vec)
            whole = b.icmp_signed("<=", b.add(p0, _int(lanes)), rows)
            micro = b.gep(self.a_panel, [self.in_copy(p0)])
            with cgutils.for_range(b, kc, intp=_I64) as kk:
                value = self.load(self.a_elem(b.add(ic, p0), b.add(k0, kk.index)), mask, whole)
                dst = b.gep(micro, [b.mul(kk.index, _int(mr))])
                b.store(value, b.bitcast(dst, self.vec.as_pointer()), align=4)

    # -- the nest ------------------------------------------------------------------

    def emit(self) -> None:
        """Rows in panels (`panel_rows`: their A panel stays in L2 across the column
        panels), k in spans of panels of KC (`k_span`), columns in panels of two
        vectors, a span's k panels, then the rows' blocks."""
        b = self.builder
        nr = _int(self.shape.nr)
        # one k panel at least: with k = 0, C is beta * C (0 when beta is 0)
        k_panels = self.at_least(self.k, 1)
        mc = self.panel_rows(k_panels)
        with cgutils.for_range_slice(b, _int(0), self.m, mc, _I64) as (ic, _):
            rows = self.at_most(b.sub(self.m, ic), mc)
            span = self.k_span(rows, k_panels)
            with cgutils.for_range_slice(b, _int(0), k_panels, span, _I64) as (kb, _):
                k_end = self.at_most(b.add(kb, span), k_panels)
                # A^T's copy is one k panel's: its spans are one panel long
                a_src = self.a_source(ic, rows, kb, self.at_most(b.sub(self.k, kb), KC)) \
                    if self.a_t else None
                with cgutils.for_range_slice(b, _int(0), self.n, nr, _I64) as (j0, _):
                    # lane l of vector v is column j0 + v * lanes + l: written where < n
                    masks = [b.icmp_signed("<", b.add(_splat(b, self.lane(j0, v), self.ivec),
                                                      self.lane_index), self.n_vec)
                             for v in range(NV)]
                    whole = b.icmp_signed("<=", b.add(j0, nr), self.n)
                    with cgutils.for_range_slice(b, kb, k_end, _int(KC), _I64) as (k0, _):
                        kc = self.at_most(b.sub(self.k, k0), KC)
                        src = a_src if a_src is not None else \
                            self.a_source(ic, rows, k0, kc)
                        panel = self.panel_of(j0, k0, kc, masks, whole)
                        self.row_blocks(ic, rows, j0, k0, kc, src, panel, masks, whole)
        b.ret_void()

    def k_span(self, rows: ir.Value, k: ir.Value) -> ir.Value:
        """The k panels a row panel runs inside each column panel: all of them when the
        rows' whole A is at most A_WHOLE f32, else one (the column panels inside each
        k panel). Why: C's panel then takes its partial sums from one k panel to the
        next while they are in L1, where otherwise a C wider than L2 came back from
        memory for every k panel (one core, 512x384x1536 with B stored transposed:
        166-172 -> 176-180 GFLOP/s, 512x384x1152 168-171 -> 180; no change at n = 384
        or at the char-GPT's shapes, whose A is too deep for it or k one panel).
        Not for A^T, whose copy is one k panel's. The bits are the same either way:
        each element's FMAs still run over k in order. `k`: at least 1."""
        b = self.builder
        if self.a_t:
            return _int(KC)
        fits = b.icmp_signed("<=", b.mul(rows, k), _int(A_WHOLE))
        return b.select(fits, k, _int(KC))

    def panel_rows(self, k: ir.Value) -> ir.Value:
        """Rows of an A panel: MC; for k under KC as many more as keep the panel MC x KC
        f32 (k = 128: 512 rows); and all of them up to ONE_PANEL rows. Why: B's panels
        are copied (a stored-transposed B's transposed) once per row panel, and fewer
        copies paid at the char-GPT's shapes, where a thread's chunk is 384 rows (one
        core: 384x128 products 185-188 -> 191-194 GFLOP/s, 384x512x128 +2-3%,
        384x768x384 +1-4%); 512 rows at n = 1024 was 7.6% slower, its A panel crowding
        B's lines out of L2. Not when A is stored transposed: its copy (`pack_a`)
        holds MC rows. `k`: at least 1."""
        if self.a_t:
            return _int(MC)
        b = self.builder
        rows = b.mul(_int(MC), self.at_least(b.sdiv(_int(KC), k), 1))
        whole = b.and_(b.icmp_signed("<=", self.m, _int(ONE_PANEL)),
                       b.icmp_signed(">", self.m, rows))
        return b.select(whole, self.m, rows)

    def at_most(self, x: ir.Value, bound: int | ir.Value) -> ir.Value:
        b = self.builder
        bound = _int(bound) if isinstance(bound, int) else bound
        return b.select(b.icmp_signed("<", x, bound), x, bound)

    def at_least(self, x: ir.Value, bound: int) -> ir.Value:
        b = self.builder
        return b.select(b.icmp_signed(">", x, _int(bound)), x, _int(bound))

    def panel_of(self, j0: ir.Value, k0: ir.Value, kc: ir.Value,
                 masks: list[ir.Value], whole: ir.Value) -> ir.Value:
        """B's rows k0..k0+kc, columns j0..j0+NR copied into the stack panel, row
        stride NR: contiguous loads for the blocks, none of B's row stride's cache
        set conflicts (a 4 KB stride put a panel's 256 rows in the same L1 sets)."""
        b = self.builder
        nr = _int(self.shape.nr)
        if not self.b_t:
            with cgutils.for_range(b, kc, intp=_I64) as row:
                src = self.at(self.b, b.add(k0, row.index), self.ldb, j0)
                dst = self.at(self.panel, row.index, nr, _int(0))
                for v in range(NV):
                    value = self.load(b.gep(src, [self.lane(_int(0), v)]), masks[v], whole)
                    b.store(value, b.bitcast(b.gep(dst, [self.lane(_int(0), v)]),
                                             self.vec.as_pointer()), align=4)
            return self.panel
        lanes = self.shape.lanes
        kc_vec = _splat(b, kc, self.ivec)
        with cgutils.for_range_slice(b, _int(0), kc, _int(lanes), _I64) as (kt, _):
            # lanes x lanes tiles: each of `lanes` columns of B^T (rows of B, k along
            # the lanes) loaded as a vector, transposed in registers, stored as rows
            in_k = b.icmp_signed("<", b.add(_splat(b, kt, self.ivec), self.lane_index), kc_vec)
            whole_k = b.and_(whole, b.icmp_signed("<=", b.add(kt, _int(lanes)), kc))
            for v in range(NV):
                tile = []
                for c in range(lanes):
                    col = b.add(self.lane(j0, v), _int(c))
                    valid = _splat(b, b.icmp_signed("<", col, self.n), self.mask_t)
                    src = self.at(self.b, col, self.ldb, b.add(k0, kt))
                    tile.append(self.load(src, b.and_(in_k, valid), whole_k))
                for r, row in enumerate(_transposed(b, tile)):
                    dst = self.at(self.panel, b.add(kt, _int(r)), nr, self.lane(_int(0), v))
                    b.store(row, b.bitcast(dst, self.vec.as_pointer()), align=4)
        return self.panel

    def row_blocks(self, i0, rows, j0, k0, kc, a_src, panel, masks, whole) -> None:
        """Rows i0 .. i0 + rows, MR at a time, then the rest."""
        b, mr = self.builder, self.shape.mr
        rest = b.srem(rows, _int(mr))
        full = b.add(i0, b.sub(rows, rest))
        with cgutils.for_range_slice(b, i0, full, _int(mr), _I64) as (r0, _):
            self.block(r0, mr, i0, j0, k0, kc, a_src, panel, masks, whole)
        # the rest (fewer than MR) as blocks of the powers of 2 its count is made of:
        # few block bodies to compile, and none of one row unless the count is odd
        start = full
        size = 1 << (mr - 1).bit_length() - 1
        while size:
            take = b.icmp_signed("!=", b.and_(rest, _int(size)), _int(0))
            with b.if_then(take):
                self.block(start, size, i0, j0, k0, kc, a_src, panel, masks, whole)
            start = b.select(take, b.add(start, _int(size)), start)
            size //= 2

    def block(self, i0, rows, ic, j0, k0, kc, a_src, panel, masks, whole) -> None:
        """Rows i0.. (of the panel from row ic, A's k panel at `a_src`) by the columns
        of `panel`."""
        b = self.builder
        cells = [(self.acc[r, v], self.at(self.c, b.add(i0, _int(r)), self.ldc,
                                          self.lane(j0, v)), masks[v])
                 for r in range(rows) for v in range(NV)]
        self.start(cells, b.icmp_signed("==", k0, _int(0)), whole)
        # k steps UNROLL at a time: the loop's count and A's row addresses once per
        # UNROLL steps, not beside every step's FMAs (one core of a Sapphire Rapids:
        # 137-145 GFLOP/s before, 147-158 after, at the char-GPT's shapes)
        origin, step, packed = a_src
        a_rows = self.a_rows(origin, b.sub(i0, ic), rows, packed)
        unroll = UNROLL if rows == self.shape.mr else 1   # the rest's blocks: little time
        rest = b.srem(kc, _int(unroll))
        with cgutils.for_range_slice(b, _int(0), b.sub(kc, rest), _int(unroll), _I64) as (kk, _):
            for u in range(unroll):
                self.k_step(b.add(kk, _int(u)), rows, a_rows, step, panel)
        if unroll > 1:
            with cgutils.for_range_slice(b, b.sub(kc, rest), kc, _int(1), _I64) as (kk, _):
                self.k_step(kk, rows, a_rows, step, panel)
        for acc, ptr, mask in cells:
            self.store(b.load(acc), ptr, mask, whole)

    def a_rows(self, origin: ir.Value, local: ir.Value, rows: int,
               packed: ir.Value | None) -> list[ir.Value]:
        """Where a block's rows read their first k, `local` its first row in the panel:
        rows apart by A's row stride, by one in A^T, or in A^T's copy at the block's
        place in its micro-panel (`pack_a`; a rest block starts inside one)."""
        b = self.builder
        if not self.a_t:
            return [b.gep(origin, [b.mul(b.add(local, _int(r)), self.lda)]) for r in range(rows)]
        first = b.select(packed, self.in_copy(local), local)
        return [b.gep(origin, [b.add(first, _int(r))]) for r in range(rows)]

    def in_copy(self, local: ir.Value) -> ir.Value:
        """The place of row `local` of a panel's rows (its first k) in A^T's copy: its
        micro-panel's first element and its place among that one's MR rows."""
        b, mr = self.builder, _int(self.shape.mr)
        return b.add(b.mul(b.sdiv(local, mr), _int(KC * self.shape.mr)), b.srem(local, mr))

    def prefetch_for_writing(self, pointers: list[ir.Value]) -> None:
        """Ask for the block's lines of C, to be written, before its k loop: a line
        not in cache is then fetched while the FMAs run, not when the block's stores
        miss at its end. Why: with C cold (a step's output buffers, last touched a
        step ago), the char-GPT's k = 128 products ran at 221 GFLOP/s on two cores
        instead of 304, where cold A or B cost 1-2%; with all three cold, 193-209 ->
        228-233. A prefetch never faults, so the lanes past n need no mask."""
        b = self.builder
        args = [ir.Constant(_I32, 1), ir.Constant(_I32, 3), ir.Constant(_I32, 1)]
        for ptr in pointers:
            b.call(self._prefetch, [b.bitcast(ptr, _I8P), *args])

    def k_step(self, kk, rows, a_rows, step, panel) -> None:
        """One k of a block: A's column kk broadcast times the panel's row kk."""
        b = self.builder
        # the panel's every lane is written (0 past n): plain vector loads
        row = b.bitcast(b.gep(panel, [b.mul(kk, _int(self.shape.nr))]), self.vec.as_pointer())
        bv = [b.load(b.gep(row, [_int(v)]), align=4) for v in range(NV)]
        at = b.mul(kk, step)
        for r in range(rows):
            av = _splat(b, b.load(b.gep(a_rows[r], [at])), self.vec)
            for v in range(NV):
                acc = self.acc[r, v]
                b.store(b.call(self._fma, [av, bv[v], b.load(acc)]), acc)

    def start(self, cells, first: ir.Value, whole: ir.Value) -> None:
        """The accumulators' first values: C's partial sums after the first k panel;
        before it beta * C, or 0 when beta is 0 (C not read, but its lines asked for:
        `prefetch_for_writing`)."""
        b = self.builder
        with b.if_else(b.and_(first, self.beta_zero)) as (fresh, carried):
            with fresh:
                for acc, _, _ in cells:
                    b.store(ir.Constant(self.vec, None), acc)
                self.prefetch_for_writing([ptr for _, ptr, _ in cells])
            with carried:
                for acc, ptr, mask in cells:
                    old = self.load(ptr, mask, whole)
                    b.store(b.select(first, b.fmul(self.beta_vec, old), old), acc)


def function(module: ir.Module, a_t: bool, b_t: bool,
             shape: Shape | None = None) -> ir.Function:
    """The variant's function in `module` (defined on first use): (a, lda, b, ldb, c,
    ldc, m, k, n, beta), pointers at each matrix's first element; blocks of `shape`,
    by default the host's."""
    shape = shape or host_shape()
    name = f"sexpgpu_vgemm_{'t' if a_t else 'n'}{'t' if b_t else 'n'}_{shape.lanes}x{shape.mr}"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, SIGNATURE, name)
        fn.linkage = "internal"
        # a frame of its own: inlined into the shared function, the four variants'
        # stack panels made one 674 KB frame for every call, the copy of A^T's
        # 272 KB among them even for an nn product
        fn.attributes.add("noinline")
        _Emit(fn, a_t, b_t, shape).emit()
    return fn


# -- the four variants as one C-callable, compiled once --------------------------------

SYMBOL = "sexpgpu_sgemm"
# its LLVM type: the variant (variant()), then function()'s arguments
SHARED = ir.FunctionType(ir.VoidType(), [_I64, *SIGNATURE.args])
_P32 = types.CPointer(types.float32)


def variant(a_t: bool, b_t: bool) -> int:
    return 2 * a_t + b_t


def call(builder: ir.IRBuilder, a_t: bool, b_t: bool, operands: tuple,
         shape: Shape | None = None) -> None:
    """Emit C = op(A) op(B) + beta C with function()'s `operands`: a call of the shared
    function (resolved by its symbol), or with `shape` of the body, inlined."""
    if shape is not None:
        builder.call(function(builder.module, a_t, b_t, shape), operands)
        return
    fn = _declared(builder.module, SYMBOL, SHARED)
    builder.call(fn, (_int(variant(a_t, b_t)), *operands))


@intrinsic
def _variants(typingctx, code, a, lda, b, ldb, c, ldc, m, k, n, beta):  # noqa: ARG001
    """The host's four functions, the one of variant `code` called."""
    def codegen(context, builder, sig, args):  # noqa: ARG001
        switch = builder.switch(args[0], builder.append_basic_block("none"))
        done = builder.append_basic_block("done")
        for a_t in (False, True):
            for b_t in (False, True):
                block = builder.append_basic_block(f"v{variant(a_t, b_t)}")
                switch.add_case(variant(a_t, b_t), block)
                builder.position_at_end(block)
                builder.call(function(builder.module, a_t, b_t), args[1:])
                builder.branch(done)
        builder.position_at_end(switch.default)
        builder.branch(done)
        builder.position_at_end(done)
        return context.get_dummy_value()

    return types.none(code, a, lda, b, ldb, c, ldc, m, k, n, beta), codegen


# defined here, in the file that makes its IR: numba's cache checks the defining file's
# timestamp, so an edit of this module compiles it anew (1.2-1.9 s, once per install)
@cfunc(types.void(types.intp, _P32, types.intp, _P32, types.intp, _P32, types.intp,
                  types.intp, types.intp, types.intp, types.float32),
       cache=True, error_model="numpy")
def shared(code, a, lda, b, ldb, c, ldc, m, k, n, beta):  # noqa: ANN001, ANN201
    _variants(code, a, lda, b, ldb, c, ldc, m, k, n, beta)


binding.add_symbol(SYMBOL, shared.address)
