"""Kernels of the fused attention ops (sexpgpu/ir/ops/attention.py), reading q, k, v
and dO where they lie when they are strided views (heads split off one projection).

CPU: per batch entry (a head), the products are sgemm calls (kernels/sgemm.py) on
the head's matrices where they lie (f32 scratch only for an operand that is not f32
rows), a block of causal rows at a time (up to the block's last visible key), and
the softmax is a vectorised loop over each row's keys; the (T, S) scores live in
scratch for one head at a time, never in a graph buffer.
Why sgemm calls and not numba loops: at the char-GPT's head (T = S = 64, D = 32) the
best loop nest found (every inner loop a contiguous multiply-add) took 4x the time
of OpenBLAS's sgemms, even though these also compute some scores a causal row skips,
and our own (kernels/vgemm.py) runs these products 3x faster than OpenBLAS did.
CUDA: one thread per output element, recomputing the scores it needs: simple and
correct, not fast."""

from __future__ import annotations

from math import prod
from typing import NamedTuple

from sexpgpu.kernels import threads
from sexpgpu.kernels.lower import reads_in_place
from sexpgpu.kernels.source import (
    KernelCode,
    affine,
    literal,
    load,
    store,
    strides,
    trip_count,
    trip_counts,
)

from sexpgpu.ir.graph import Node, Value
from sexpgpu.ir.ops.attention import scale_of

_F0 = "np.float32(0.0)"
_NEG_INF = "np.float32(-math.inf)"


class _Layout:
    """Where the elements of the op's values lie: `at(x, row, col)` is the offset
    of x[batch..., row, col] (batch the loop variables i0, i1, ...)."""

    def __init__(self, node: Node, names) -> None:
        self.node, self.names = node, names
        q = node.inputs[0]
        self.batch = [f"i{d}" for d in range(len(q.shape) - 2)]
        self.outer = list(zip(self.batch, q.shape[:-2]))

    def buf(self, x: Value) -> str:
        view = self._view(x)
        return self.names.buf(view.root if view is not None else x)

    def _view(self, x: Value):
        view = self.names.program.view(x)
        return view if view is not None and reads_in_place(self.node.op, view) else None

    def at(self, x: Value, *index: str) -> str:
        full = self.batch + list(index)
        view = self._view(x)
        if view is not None:
            return view.at(full)
        return affine(list(zip(full, strides(x.shape))))

    def load(self, x: Value, *index: str) -> str:
        return load(self.buf(x), x.dtype, self.at(x, *index))

    def store(self, x: Value, expr: str, *index: str) -> str:
        return store(self.buf(x), x.dtype, self.at(x, *index), expr)

    def row(self, x: Value, row: str) -> str:
        """Row `row` of x (its last axis) as a slice of its buffer. Why: indexed
        by a range variable alone, LLVM knows the index is not negative and drops
        numba's wraparound test; an offset holding an integer argument kept it, and
        the loads of a vectorised loop became gathers."""
        view = self._view(x)
        step = view.strides[-1] if view is not None else 1
        start = self.at(x, row, "0")
        n = x.shape[-1]
        if step == 1:
            return f"{self.buf(x)}[{start}:{start} + {n}]"
        return f"{self.buf(x)}[{start}:{start} + {max(n - 1, 0) * step + 1}:{step}]"


def _sizes(node: Node) -> tuple[int, int, int, int, str]:
    """T, S, D, E and the scale literal."""
    q, k, v = node.inputs[:3]
    scale = literal(scale_of(node.attrs, q.shape[-1]), "f32")
    return q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1], scale


def _keys(node: Node, row: str, s: int) -> str:
    """The keys query `row` sees: j in range(this)."""
    return f"min({row} + 1, {s})" if node.attrs.get("causal") else str(s)


# causal rows are taken in blocks of this many: block b's sgemms stop at the last
# key its last row sees, so the hidden upper blocks are never multiplied (the
# forward ran 14% faster than with every key; 16 gained nothing more)
BLOCK = 32


def _blocks(node: Node) -> tuple[int, int]:
    """The row blocks' size and count."""
    t = node.inputs[0].shape[-2]
    size = BLOCK if node.attrs.get("causal") else max(t, 1)
    return size, -(-t // size)


def _last_block_keys(node: Node) -> int:
    """The keys the last row block sees (all of them but where T < S, causal)."""
    s = node.inputs[1].shape[-2]
    if not node.attrs.get("causal"):
        return s
    size, count = _blocks(node)
    return min(count * size, s)


def _row_blocks(node: Node, last_first: bool = False) -> tuple[list[str], int]:
    """Lines opening a loop over row blocks (`last_first`: from the last), setting
    r0 (the first row), nr (rows) and w (the keys the block's rows see at most),
    and its depth."""
    t, s = node.inputs[0].shape[-2], node.inputs[1].shape[-2]
    bs, blocks = _blocks(node)
    order = f"{blocks} - 1, -1, -1" if last_first else f"{blocks}"
    return [f"for bi in range({order}):",
            f"    r0 = bi * {bs}",
            f"    nr = min({bs}, {t} - r0)",
            f"    w = min(r0 + {bs}, {s})" if node.attrs.get("causal") else f"    w = {s}"], 1


def _sees(node: Node, query: str, key: str) -> str:
    """Whether query `query` sees key `key` (a condition)."""
    return f"{key} <= {query}" if node.attrs.get("causal") else "True"


def _nest(outer: list[tuple[str, int]], body: list[str]) -> list[str]:
    """`body` inside loops over `outer`."""
    lines = ["    " * k + f"for {var} in range({n}):" for k, (var, n) in enumerate(outer)]
    return lines + ["    " * len(outer) + line for line in body]


def _heads(outer: list[tuple[str, int]], scratch: list[str], body: list[str],
           work: int) -> list[str]:
    """`body` for every head (batch entry) of `outer`, with its `scratch`: in one
    parallel loop over the heads when the work pays for the pool's threads (each
    head its own scratch and outputs: the bits of any thread count), else in
    serial loops sharing one scratch."""
    heads = prod(n for _, n in outer)
    if heads < 2 or not threads.parallel_worth(work):
        return scratch + _nest(outer, body)
    # the launcher makes the loop's chunks (kernels/codegen.py's _chunked)
    lines = [f"for h_ in prange({heads}):"]
    inner = heads
    for var, n in outer:
        inner //= n
        lines.append(f"    {var} = h_ // {inner} % {n}" if inner > 1 else f"    {var} = h_ % {n}")
    return lines + _indented(scratch + body)


def _indented(lines: list[str], depth: int = 1) -> list[str]:
    return ["    " * depth + line for line in lines]


def _dot(lay: _Layout, a: Value, ra: str, b: Value, rb: str, n: int, acc: str) -> list[str]:
    return [f"{acc} = {_F0}",
            f"for e in range({n}):",
            f"    {acc} = {acc} + {lay.load(a, ra, 'e')} * {lay.load(b, rb, 'e')}"]


# -- CPU: sgemm per head, on the operands where they lie -----------------------------

class _Matrix(NamedTuple):
    """A head's matrix of an operand or result as sgemm reads or writes it: its flat
    f32 buffer, the offset of its row 0, its row stride, and, when it cannot be used
    in place, the f32 scratch it takes and the lines that fill it (an operand) or
    empty it (a result)."""

    buf: str
    at: str
    ld: int
    copy: list[str]
    scratch: int = 0

    def row(self, r: str) -> str:
        return f"{self.at} + {r if r.isidentifier() else f'({r})'} * {self.ld}"

    def slice(self, r: str, n: int) -> str:
        """Row r as a slice (indexed by a loop variable alone: _Layout.row says why)."""
        return f"{self.buf}[{self.row(r)}:{self.row(r)} + {n}]"


def _in_place(lay: _Layout, x: Value) -> int | None:
    """x's row stride when sgemm can use its matrices where they lie (f32, unit
    column stride, rows that do not overlap), else None."""
    rows, cols = x.shape[-2:]
    view = lay._view(x)
    if x.dtype != "f32" or (view is not None and view.strides[-1] != 1):
        return None
    ld = view.strides[-2] if view is not None and rows > 1 else cols
    return ld if ld >= cols else None


def _matrix(lay: _Layout, x: Value, scratch: str, result: bool = False) -> _Matrix:
    """Operand (or `result`) x's matrix: in place, else `scratch`, copied."""
    ld = _in_place(lay, x)
    if ld is not None:
        return _Matrix(lay.buf(x), lay.at(x, "0", "0"), ld, [])
    rows, cols = x.shape[-2:]
    copy = (_copy_out(lay, x, f"{scratch}[j * {cols} + c]") if result
            else _copy_in(lay, x, scratch))
    return _Matrix(scratch, "0", cols, copy, rows * cols)


def _scratch(matrices: list[_Matrix], *named: tuple[str, int]) -> list[str]:
    """f32 scratch of the `named` sizes and of the matrices that are copied."""
    sizes = dict(named) | {m.buf: m.scratch for m in matrices if m.scratch}
    return [f"{name} = np.empty({size}, np.float32)" for name, size in sizes.items()]


def _row_length(x: Value) -> str:
    """The length of x's rows as a variable (set by _row_lengths), for the loops
    over a row (`source.trip_count` says why)."""
    return trip_count(x.shape[-1])


def _row_lengths(*xs: Value) -> list[str]:
    return trip_counts(*(x.shape[-1] for x in xs))


def _copy_in(lay: _Layout, x: Value, scratch: str) -> list[str]:
    """This head's matrix of x into its f32 scratch, row-major."""
    rows, cols = x.shape[-2:]
    return [f"for j in range({rows}):",
            f"    xj_ = {lay.row(x, 'j')}",
            f"    for c in range({_row_length(x)}):",
            f"        {scratch}[j * {cols} + c] = {load('xj_', x.dtype, 'c')}"]


def _copy_out(lay: _Layout, x: Value, value: str) -> list[str]:
    """`value` (of j, c) into this head's matrix of output x."""
    rows = x.shape[-2]
    return [f"for j in range({rows}):",
            f"    xj_ = {lay.row(x, 'j')}",
            f"    for c in range({_row_length(x)}):",
            "        " + store("xj_", x.dtype, "c", value)]


def _blas(code: KernelCode, node: Node, lines: list[str]) -> None:
    """Give `code` its CPU sgemm form, unless a size is 0 (BLAS takes no empty
    matrix; the per-element body then runs as loops)."""
    t, s, d, e, _ = _sizes(node)
    if t * s * d * e > 0:
        code.cpu = lines


# -- forward ------------------------------------------------------------------------

def render_attention(node: Node, names, name: str, params: list[str]) -> KernelCode:
    q, k, v = node.inputs
    lay = _Layout(node, names)
    t, s, d, e, scale = _sizes(node)
    code = KernelCode(name, params, lay.outer + [("r", t), ("c", max(e, 1))],
                      _forward_thread(node, lay), work=prod(q.shape[:-1]) * s * (d + e))
    mats = [_matrix(lay, q, "qs_"), _matrix(lay, k, "ks_"), _matrix(lay, v, "vs_"),
            _matrix(lay, node.outputs[0], "os_", result=True)]
    _blas(code, node, _row_lengths(q, k, v) + _heads(
        lay.outer, _scratch(mats, ("sb_", t * s), ("ls_", t), ("ms_", t)),
        _forward_head(node, lay, *mats), code.work))
    return code


def _forward_head(node: Node, lay: _Layout, q: _Matrix, k: _Matrix, v: _Matrix,
                  out: _Matrix) -> list[str]:
    """CPU: one head, a block of rows at a time: scores by sgemm, each row's softmax
    over the keys it sees (their max known before any exponential: nothing to
    rescale; the others get weight 0), the weighted values by sgemm into the
    output's rows, divided there by the rows' sums."""
    lse = node.outputs[1]
    t, s, d, e, scale = _sizes(node)
    keys = _keys(node, "r", s)
    blocks, depth = _row_blocks(node)
    return q.copy + k.copy + v.copy + blocks + _indented([
        f"gemm_nt({q.buf}, {q.row('r0')}, {q.ld}, {k.buf}, {k.at}, {k.ld}, "
        f"sb_, 0, w, nr, {d}, w, 0.0)",
        "for rr in range(nr):",
        "    r = r0 + rr",
        "    sr_ = sb_[rr * w:rr * w + w]",
        *_indented(_row_max(keys, scale)),
        # One loop over the block's keys weighs them and sums the weights, a hidden
        # key's weight 0 by a select: 10% less time than exponentials up to whole
        # vectors, then zeros, then the sum, in loops of their own
        f"    vis_ = {keys}",
        f"    l_ = {_F0}",
        *_indented(_runs(s, "j", "w", [f"p_ = fast_exp32(sr_[j] * {scale} - m_)",
                                          f"p_ = p_ if j < vis_ else {_F0}",
                                          "sr_[j] = p_",
                                          "l_ = l_ + p_"])),
        "    ls_[r] = l_",
        "    ms_[rr] = m_",
        # log after the rows, in a loop that vectorises (libm's logf, once a row,
        # was a fifth of the softmax's time); fast_log is logf after rounding
        "for rr in range(nr):",
        "    r = r0 + rr",
        "    " + lay.store(lse, "ms_[rr] + np.float32(fast_log(np.float64(ls_[r])))", "r"),
        f"gemm_nn(sb_, 0, w, {v.buf}, {v.at}, {v.ld}, {out.buf}, {out.row('r0')}, {out.ld}, "
        f"nr, w, {e}, 0.0)",
        "for rr in range(nr):",
        f"    or_ = {out.slice('r0 + rr', e)}",
        "    l_ = ls_[r0 + rr]",
        f"    for c in range({_row_length(node.outputs[0])}):",
        "        or_[c] = or_[c] / l_",
    ], depth) + out.copy


# a row's keys are weighed in runs of this many: a loop of a literal trip count
# LLVM vectorises whole, where over a variable count (with a sum) it went scalar
# below 64 keys (0.92 ns a key at 32 against 0.45 in runs)
RUN = 32


def _runs(keys: int, var: str, count: str, body: list[str]) -> list[str]:
    """`for var in range(count): body` as runs of RUN (each run's bounds in a form
    whose RUN codegen keeps a literal), then the rest, unless every row block's keys
    are whole runs (the `keys` S a multiple of RUN, as the char-GPT's 64): LLVM compiled
    the rest's vectorised exponentials for nothing (0.2-0.35 s of each kernel's cold
    compile)."""
    runs = [f"for kr_ in range({count} // {RUN}):",
            f"    for {var} in range(kr_ * {RUN}, (kr_ + 1) * {RUN}):",
            *_indented(body, 2)]
    if keys % RUN == 0 and BLOCK % RUN == 0:
        return runs
    return runs + [f"for {var} in range({count} // {RUN} * {RUN}, {count}):", *_indented(body)]


# f32 bits as an int32 that orders as the floats do (negative ones' magnitude bits
# flipped; the map is its own inverse). Hex literals: codegen makes decimal ones
# arguments of the kernel function, and LLVM then knows neither shift nor bound
def _ordered(x: str) -> str:
    return f"{x} ^ (({x} >> np.int32(0x1f)) & np.int32(0x7fffffff))"


def _row_max(keys: str, scale: str) -> list[str]:
    """m_ = the max of row sr_'s first `keys` scores times `scale`, as the max of
    their bits ordered as ints: an integer max the loop vectorises (a float one it
    does not without assuming no NaN), 2.5-4x faster over 16-64 keys. A NaN may
    come out as the max, or not: either way its e^(s - m) makes the row NaN."""
    return ["mk_ = np.int32(-0x80000000)",
            f"for j in range({keys}):",
            f"    x_ = np.float32(sr_[j] * {scale}).view(np.int32)",
            f"    mk_ = max(mk_, {_ordered('x_')})",
            f"m_ = np.int32({_ordered('mk_')}).view(np.float32)"]


def _no_weight() -> list[str]:
    # every visible score -inf: NaN, as softmax's 0/0 (the reference's)
    return [f"if l_ == {_F0}:", "    l_ = np.float32(math.nan)"]


def _forward_thread(node: Node, lay: _Layout) -> list[str]:
    """CUDA: output element (r, c): the row's max and sum (online: rescaled as the
    max grows), then the weighted sum of column c of the values (the scores
    computed twice)."""
    q, k, v = node.inputs
    out, lse = node.outputs
    t, s, d, e, scale = _sizes(node)
    return [
        f"m_ = {_NEG_INF}",
        f"l_ = {_F0}",
        f"for j in range({_keys(node, 'r', s)}):",
        *_indented(_dot(lay, q, "r", k, "j", d, "dt_")),
        f"    s_ = dt_ * {scale}",
        "    if s_ > m_:",
        "        l_ = l_ * math.exp(m_ - s_)",
        "        m_ = s_",
        f"    l_ = l_ + (math.exp(s_ - m_) if m_ != {_NEG_INF} else {_F0})",
        *_no_weight(),
        f"if c < {e}:",
        f"    acc = {_F0}",
        f"    for j in range({s}):",
        f"        p_ = {_F0}",
        f"        if {_sees(node, 'r', 'j')} and m_ != {_NEG_INF}:",
        *_indented(_dot(lay, q, "r", k, "j", d, "dt_"), 3),
        f"            p_ = math.exp(dt_ * {scale} - m_)",
        f"        acc = acc + p_ * {lay.load(v, 'j', 'c')}",
        "    " + lay.store(out, "acc / l_", "r", "c"),
        "if c == 0:",
        "    " + lay.store(lse, "m_ + math.log(l_)", "r"),
    ]


# -- backward -----------------------------------------------------------------------

def render_attention_backward(node: Node, names, name: str, params: list[str]) -> KernelCode:
    q, k, v, out, d_out = node.inputs[:5]
    lay = _Layout(node, names)
    t, s, d, e, scale = _sizes(node)
    outer = lay.outer + [("r", max(t, s)), ("c", max(d, e, 1))]
    code = KernelCode(name, params, outer, _backward_thread(node, lay),
                      work=prod(q.shape[:-1]) * s * (2 * d + 2 * e))
    mats = [_matrix(lay, q, "qs_"), _matrix(lay, k, "ks_"), _matrix(lay, v, "vs_"),
            _matrix(lay, d_out, "os_")] + [
        _matrix(lay, x, f"g{x_}_", result=True) for x, x_ in zip(node.outputs, "qkv")]
    _blas(code, node, _row_lengths(q, k, v, out) + _heads(
        lay.outer, _scratch(mats, ("sb_", t * s), ("db_", t * s)),
        _backward_head(node, lay, *mats), code.work))
    return code


def _backward_head(node: Node, lay: _Layout, q: _Matrix, k: _Matrix, v: _Matrix,
                   d_out: _Matrix, dq: _Matrix, dk: _Matrix, dv: _Matrix) -> list[str]:
    """CPU: one head, a block of rows at a time: scores and dP = dO v^T by sgemm; on
    the keys each row sees p = e^(s - lse) and ds = p (dP - delta) * scale (0 on
    the others), delta = rowsum(dO * O) - dlse; then dq = ds k by sgemm into dq's
    rows, and dv += p^T dO, dk += ds^T q by sgemm into dv's and dk's rows, set by
    the first block taken (the last) and accumulated (beta 1) by the others."""
    out, _, lse, d_lse = node.inputs[3:]
    t, s, d, e, scale = _sizes(node)
    keys = _keys(node, "r", s)
    # the last block first: it sees every key (but past T, causal, where T < S),
    # so its products set dk and dv (beta 0), which the others add to, and only the
    # keys no query sees are zeroed (the zeroing of all took 6% of the kernel)
    blocks, depth = _row_blocks(node, last_first=True)
    first = _last_block_keys(node)
    accumulate = f"np.float32(bi < {_blocks(node)[1] - 1})"
    zero = [] if first >= s else [f"for j in range({first}, {s}):",
            f"    zk_ = {dk.slice('j', d)}",
            f"    zv_ = {dv.slice('j', e)}",
            f"    for c in range({_row_length(node.outputs[1])}):",
            f"        zk_[c] = {_F0}",
            f"    for c in range({_row_length(node.outputs[2])}):",
            f"        zv_[c] = {_F0}"]
    return q.copy + k.copy + v.copy + d_out.copy + zero + blocks + _indented([
        f"gemm_nt({q.buf}, {q.row('r0')}, {q.ld}, {k.buf}, {k.at}, {k.ld}, "
        f"sb_, 0, w, nr, {d}, w, 0.0)",
        f"gemm_nt({d_out.buf}, {d_out.row('r0')}, {d_out.ld}, {v.buf}, {v.at}, {v.ld}, "
        f"db_, 0, w, nr, {e}, w, 0.0)",
        "for rr in range(nr):",
        "    r = r0 + rr",
        f"    lr_ = {lay.load(lse, 'r')}",
        f"    xr_ = {lay.row(out, 'r')}",
        f"    gr_ = {d_out.slice('r', e)}",
        f"    dr_ = -{lay.load(d_lse, 'r')}",
        f"    for c in range({_row_length(out)}):",
        f"        dr_ = dr_ + gr_[c] * {load('xr_', out.dtype, 'c')}",
        "    sr_ = sb_[rr * w:rr * w + w]",
        "    br_ = db_[rr * w:rr * w + w]",
        # every key of the block in runs, a hidden one's p and ds 0 by a select (its
        # dP may be inf from a later value): 2% faster than the visible keys
        # padded to whole vectors, then the rest zeroed by slices
        f"    vis_ = {keys}",
        *_indented(_runs(s, "j", "w", [f"p_ = fast_exp32(sr_[j] * {scale} - lr_)",
                                          f"ds_ = p_ * (br_[j] - dr_) * {scale}",
                                          f"sr_[j] = p_ if j < vis_ else {_F0}",
                                          f"br_[j] = ds_ if j < vis_ else {_F0}"])),
        f"gemm_nn(db_, 0, w, {k.buf}, {k.at}, {k.ld}, {dq.buf}, {dq.row('r0')}, {dq.ld}, "
        f"nr, w, {d}, 0.0)",
        f"gemm_tn(sb_, 0, w, {d_out.buf}, {d_out.row('r0')}, {d_out.ld}, "
        f"{dv.buf}, {dv.at}, {dv.ld}, w, nr, {e}, {accumulate})",
        f"gemm_tn(db_, 0, w, {q.buf}, {q.row('r0')}, {q.ld}, "
        f"{dk.buf}, {dk.at}, {dk.ld}, w, nr, {d}, {accumulate})",
    ], depth) + dq.copy + dk.copy + dv.copy


def _backward_thread(node: Node, lay: _Layout) -> list[str]:
    """CUDA: element (r, c) of dq (query r), dk and dv (key r): each sums over every
    key (query), a pair the causal rule hides taking weight 0, recomputing p and
    dO . v where it is seen."""
    q, k, v, out, d_out, lse, d_lse = node.inputs
    dq, dk, dv = node.outputs
    t, s, d, e, scale = _sizes(node)

    def delta(qi: str) -> list[str]:
        """de_ = dO . O - dlse of query qi."""
        return _dot(lay, d_out, qi, out, qi, e, "de_") + [f"de_ = de_ - {lay.load(d_lse, qi)}"]

    def pair(qi: str, kj: str, hoisted: bool) -> list[str]:
        """p_ and ds_ of the pair (query qi, key kj), both 0 where it is hidden; the
        query's delta de_ computed before (hoisted, a fixed query) or here."""
        return [f"p_ = {_F0}",
                f"ds_ = {_F0}",
                f"if {_sees(node, qi, kj)}:",
                *_indented(_dot(lay, q, qi, k, kj, d, "dt_")
                           + [f"p_ = math.exp(dt_ * {scale} - {lay.load(lse, qi)})"]
                           + _dot(lay, d_out, qi, v, kj, e, "dp_")
                           + ([] if hoisted else delta(qi))
                           + ["ds_ = p_ * (dp_ - de_)"])]

    # the dq part's query is fixed: its delta once, not per key (fewer live
    # registers too: the kernel spilled on sm_80 with it inside the loop)
    return [
        f"if r < {t} and c < {d}:",
        *_indented(delta("r")),
        f"    acc = {_F0}",
        f"    for j in range({s}):",
        *_indented(pair("r", "j", True), 2),
        f"        acc = acc + ds_ * {lay.load(k, 'j', 'c')}",
        "    " + lay.store(dq, f"acc * {scale}", "r", "c"),
        f"if r < {s}:",
        f"    acc = {_F0}",
        f"    ac2 = {_F0}",
        f"    for i in range({t}):",
        *_indented(pair("i", "r", False), 2),
        f"        if c < {d}:",
        f"            acc = acc + ds_ * {lay.load(q, 'i', 'c')}",
        f"        if c < {e}:",
        f"            ac2 = ac2 + p_ * {lay.load(d_out, 'i', 'c')}",
        f"    if c < {d}:",
        "        " + lay.store(dk, f"acc * {scale}", "r", "c"),
        f"    if c < {e}:",
        "        " + lay.store(dv, "ac2", "r", "c"),
    ]
