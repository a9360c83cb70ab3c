"""Kernels of the fused layer norm ops (sexpgpu/ir/ops/norm.py), a row (the last
axis) at a time, in f32 whatever the input's dtype.

CPU: per row, the loops over its elements run over a slice of the row (indexed by
the loop variable alone, so they vectorise: `attention._Layout.row` says why),
the row staying in cache between them: the forward reads x twice and writes y
once, where the unfused ops' three kernels read and wrote it three times each. The
rows are shared by the pool's threads when the work pays for them: the forward's
one by one, the backward's in dweight's blocks (`weight_blocks`), each block's sum
in an f32 row of its own, its rows in order (one order for any thread count).
CUDA: one thread per element (r, c), recomputing its row's sums: simple and
correct, not fast; the backward's block sums by the threads of the first rows,
each over its block."""

from __future__ import annotations

from math import prod

from sexpgpu.kernels import threads
from sexpgpu.kernels.source import KernelCode, literal, load, store, trip_count, trip_counts

from sexpgpu.ir.graph import Node, Value
from sexpgpu.ir.ops.norm import weight_blocks

_F0 = "np.float32(0.0)"


class _Rows:
    """The op's (rows, C) view of its input x and the names of its loops."""

    def __init__(self, node: Node, names) -> None:
        x = node.inputs[0]
        self.names = names
        self.rows, self.c = prod(x.shape[:-1]), x.shape[-1]
        self.n = literal(self.c, "f32")
        self.eps = literal(node.attrs.get("eps", 1e-5), "f32")
        self.width = trip_count(self.c)  # the loops over a row: set by trip_counts

    def buf(self, v: Value) -> str:
        return self.names.buf(v)

    def row(self, v: Value, r: str) -> str:
        """Row r of v as a slice of its buffer."""
        return f"{self.buf(v)}[{r} * {self.c}:{r} * {self.c} + {self.c}]"

    def total(self, acc: str, term: str, var: str = "c") -> list[str]:
        """acc = the sum of `term` over the row's elements (loop variable `var`)."""
        return [f"{acc} = {_F0}", f"for {var} in range({self.width}):",
                f"    {acc} = {acc} + ({term})"]


def _statistics(rows: _Rows, x: str, dtype: str, at: str = "c") -> list[str]:
    """mu_, sh_ (the mean's rounding error) and rs_ of the row `x` (a slice, or a
    buffer indexed by `at`), as nn:layer-norm's unfused form computes them."""
    xv = load(x, dtype, at)
    return [*rows.total("s_", xv, _var(at)),
            f"mu_ = s_ / {rows.n}",
            f"sq_ = {_F0}",
            f"sh_ = {_F0}",
            f"for {_var(at)} in range({rows.width}):",
            f"    d_ = {xv} - mu_",
            "    sq_ = sq_ + d_ * d_",
            "    sh_ = sh_ + d_",
            f"sh_ = sh_ / {rows.n}",
            f"v_ = sq_ / {rows.n} - sh_ * sh_",
            f"rs_ = np.float32(1.0 / math.sqrt(v_ + {rows.eps}))"]


def _var(at: str) -> str:
    """The loop variable of an element offset `r * C + j` or `c`."""
    return at.split()[-1]


# -- forward ------------------------------------------------------------------------

def render_layer_norm(node: Node, names, name: str, params: list[str]) -> KernelCode:
    x, weight = node.inputs
    y, mean, rstd = node.outputs
    rows = _Rows(node, names)
    work = rows.rows * rows.c * 8
    code = KernelCode(name, params, [("r", max(rows.rows, 1)), ("c", rows.c)],
                      _forward_thread(rows, node), work=work)
    loop = "prange" if rows.rows > 1 and threads.parallel_maybe(work, code.size) else "range"
    code.marginal = not threads.parallel_worth(work)
    w = rows.buf(weight)
    code.cpu = [*trip_counts(rows.c), f"for r in {loop}({rows.rows}):"] + [
        "    " + line for line in [
            f"xr_ = {rows.row(x, 'r')}",
            *_statistics(rows, "xr_", x.dtype),
            f"yr_ = {rows.row(y, 'r')}",
            f"for c in range({rows.width}):",
            "    " + store("yr_", y.dtype, "c", f"(({load('xr_', x.dtype, 'c')} - mu_) - sh_)"
                                               f" * rs_ * {load(w, weight.dtype, 'c')}"),
            store(rows.buf(mean), "f32", "r", "mu_"),
            store(rows.buf(rstd), "f32", "r", "rs_")]]
    return code


def _forward_thread(rows: _Rows, node: Node) -> list[str]:
    x, weight = node.inputs
    y, mean, rstd = node.outputs
    xb, c = rows.buf(x), rows.c
    return [*trip_counts(c),
            f"if r < {rows.rows}:",
            *["    " + line for line in _statistics(rows, xb, x.dtype, f"r * {c} + j")],
            "    " + store(rows.buf(y), y.dtype, f"r * {c} + c",
                           f"(({load(xb, x.dtype, f'r * {c} + c')} - mu_) - sh_) * rs_ * "
                           f"{load(rows.buf(weight), weight.dtype, 'c')}"),
            "    if c == 0:",
            "        " + store(rows.buf(mean), "f32", "r", "mu_"),
            "        " + store(rows.buf(rstd), "f32", "r", "rs_")]


# -- backward -----------------------------------------------------------------------

def _dxc(x: str, dy: str, w: str) -> str:
    """rstd g - rstd^3 (x - mean) mean(g a) of one element (g = dy w)."""
    return f"rs_ * {dy} * {w} - rs3_ * ({x} - mu_) * ga_"


def _shift(rows: _Rows, xv: str, j: str) -> list[str]:
    """sh_, the mean of x - mean over a row whose elements are `xv` (loop variable j)."""
    return [*rows.total("sh_", f"{xv} - mu_", j), f"sh_ = sh_ / {rows.n}"]


def _row_backward(rows: _Rows, node: Node, xr: str, gr: str, at: str) -> list[str]:
    """sh_, ga_ (the mean of g a) and sd_ (the mean of dxc) of a row whose x and dy
    elements are `xr`, `gr` at offset `at` (mu_ and rs_ set)."""
    x, weight, _, _, dy = node.inputs
    j = _var(at)
    xv, gv = load(xr, x.dtype, at), load(gr, dy.dtype, at)
    wv = load(rows.buf(weight), weight.dtype, j)
    return [*_shift(rows, xv, j),
            *rows.total("ga_", f"{gv} * {wv} * (({xv} - mu_) - sh_)", j),
            f"ga_ = ga_ / {rows.n}",
            "rs3_ = rs_ * rs_ * rs_",
            *rows.total("sd_", _dxc(xv, gv, wv), j),
            f"sd_ = sd_ / {rows.n}"]


def render_layer_norm_backward(node: Node, names, name: str, params: list[str]) -> KernelCode:
    x, weight, mean, rstd, dy = node.inputs
    dx, sums = node.outputs
    rows = _Rows(node, names)
    blocks, per = weight_blocks(rows.rows)
    work = rows.rows * rows.c * 12
    code = KernelCode(name, params, [("r", max(rows.rows, 1)), ("c", rows.c)],
                      _backward_thread(rows, node), work=work)
    xv, gv = load("xr_", x.dtype, "c"), load("gr_", dy.dtype, "c")
    wv = load(rows.buf(weight), weight.dtype, "c")
    loop = "prange" if blocks > 1 and threads.parallel_maybe(work, code.size) else "range"
    code.marginal = not threads.parallel_worth(work)
    # block b's rows: b * per + i for i below per (or the rest), all provably >= 0
    code.cpu = [*trip_counts(rows.c), f"for b in {loop}({blocks}):"] + ["    " + line for line in [
        f"sr_ = {rows.buf(sums)}[b * {rows.c}:b * {rows.c} + {rows.c}]",
        f"for c in range({rows.width}):",
        f"    sr_[c] = {_F0}",
        f"for i_ in range(min({per}, {rows.rows} - b * {per})):"] + ["    " + line for line in [
            f"r = b * {per} + i_",
            f"xr_ = {rows.row(x, 'r')}",
            f"gr_ = {rows.row(dy, 'r')}",
            f"mu_ = {rows.buf(mean)}[r]",
            f"rs_ = {rows.buf(rstd)}[r]",
            *_row_backward(rows, node, "xr_", "gr_", "c"),
            f"dr_ = {rows.row(dx, 'r')}",
            f"for c in range({rows.width}):",
            "    " + store("dr_", dx.dtype, "c", f"{_dxc(xv, gv, wv)} - sd_"),
            f"    sr_[c] = sr_[c] + {gv} * (({xv} - mu_) - sh_) * rs_"]]]
    return code


def _backward_thread(rows: _Rows, node: Node) -> list[str]:
    x, weight, mean, rstd, dy = node.inputs
    dx, sums = node.outputs
    xb, gb, c = rows.buf(x), rows.buf(dy), rows.c
    xv, gv = load(xb, x.dtype, f"r * {c} + c"), load(gb, dy.dtype, f"r * {c} + c")
    wv = load(rows.buf(weight), weight.dtype, "c")
    xi, gi = load(xb, x.dtype, f"i * {c} + c"), load(gb, dy.dtype, f"i * {c} + c")
    blocks, per = weight_blocks(rows.rows)
    return [*trip_counts(c),
            f"if r < {rows.rows}:",
            f"    mu_ = {rows.buf(mean)}[r]",
            f"    rs_ = {rows.buf(rstd)}[r]",
            *["    " + line for line in _row_backward(rows, node, xb, gb, f"r * {c} + j")],
            "    " + store(rows.buf(dx), dx.dtype, f"r * {c} + c",
                           f"{_dxc(xv, gv, wv)} - sd_"),
            f"if r < {blocks}:",  # row r's thread sums block r
            f"    acc = {_F0}",
            f"    for i in range(r * {per}, min(r * {per} + {per}, {rows.rows})):",
            f"        mu_ = {rows.buf(mean)}[i]",
            f"        rs_ = {rows.buf(rstd)}[i]",
            *["        " + line
              for line in _shift(rows, load(xb, x.dtype, f"i * {c} + j"), "j")],
            f"        acc = acc + {gi} * (({xi} - mu_) - sh_) * rs_",
            "    " + store(rows.buf(sums), "f32", f"r * {c} + c", "acc")]
