"""Kernel renderers of the structured ops (all but elementwise, reduction and view
ops), keyed by op name: each renders a body run once per output element (or row),
shared by the CPU and CUDA launchers; matmul also renders a CPU BLAS call."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from math import prod
from typing import NamedTuple

from sexpgpu.kernels import gemm, threads
from sexpgpu.kernels import views as strided
from sexpgpu.kernels.attention import render_attention, render_attention_backward
from sexpgpu.kernels.lower import reads_in_place
from sexpgpu.kernels.norm import render_layer_norm, render_layer_norm_backward
from sexpgpu.kernels.source import (
    ERR,
    MASK_HEX,
    KernelCode,
    affine,
    convert,
    literal,
    load,
    store,
    strides,
    trip_count,
    trip_counts,
)
from sexpgpu.kernels.views import View

from sexpgpu.ir.graph import Node, Value
from sexpgpu.ir.ops.shape import slice_bounds
from sexpgpu.ir.shapes import axis as norm_axis

Renderer = Callable[[Node, "object", str, list[str]], KernelCode]
RENDERERS: dict[str, Renderer] = {  # tests/test_kernels_ops.py checks every op has one
    "attention": render_attention, "attention_backward": render_attention_backward,
    "layer_norm": render_layer_norm, "layer_norm_backward": render_layer_norm_backward}


def renderer(*ops: str):
    def wrap(fn: Renderer) -> Renderer:
        for op in ops:
            RENDERERS[op] = fn
        return fn
    return wrap


def render_op(node: Node, names, name: str, params: list[str]) -> KernelCode:
    try:
        fn = RENDERERS[node.op]
    except KeyError:
        raise NotImplementedError(f"no kernel renderer for op {node.op}") from None
    return fn(node, names, name, params)


def _elementwise(node: Node, name: str, params: list[str], body: list[str],
                 work: int = 1) -> KernelCode:
    """A body over the output's multi-index i0.., with `lin` its row-major offset."""
    out = node.outputs[0]
    index = [f"i{d}" for d in range(len(out.shape))]
    lin = affine(list(zip(index, strides(out.shape))))
    outer = [(i, n) for i, n in zip(index, out.shape)] or [("i_", 1)]
    return KernelCode(name, params, outer, [f"lin = {lin}"] + body,
                      work=prod(out.shape) * work)


# -- moving elements -------------------------------------------------------------

def _located(names, x: Value, index: list[str]) -> tuple[str, str]:
    """(buffer, offset) of `x` at multi-index `index`: through its strided view
    (kernels.views) when x is one, else in x's own buffer row-major."""
    view = names.program.view(x) or strided.whole(x, x)
    return names.buf(view.root), view.at(index)


def render_view_copy(node: Node, view: View, names, name: str,
                     params: list[str]) -> KernelCode:
    """A strided view copied into its own buffer: one kernel for a chain of slices,
    permutes and reshapes."""
    out = node.outputs[0]
    if view.grid is None:
        index = [f"i{d}" for d in range(len(out.shape))]
        return _elementwise(node, name, params, [
            store(names.buf(out), out.dtype, "lin",
                  load(names.buf(view.root), out.dtype, view.at(index)))])
    # a reshape no strides describe (heads merged after a permute): `out` is the
    # strided grid row-major, so a loop over the grid's axes writes it in order and
    # reads it by strides, where a loop over `out`'s axes divides every index
    index = [f"i{d}" for d in range(len(view.grid))]
    lin = _Offset(list(zip(index, strides(view.grid))))
    at = _strided_offset(view, index)
    code = KernelCode(name, params, list(zip(index, view.grid)) or [("i_", 1)],
                      [f"lin = {lin.text()}",
                       store(names.buf(out), out.dtype, "lin",
                             load(names.buf(view.root), out.dtype, at.text()))],
                      work=prod(out.shape))
    if index:
        code.cpu = _copy_nest(list(zip(index, view.grid)), (names.buf(out), out.dtype, lin),
                              (names.buf(view.root), out.dtype, at))
    return code


@renderer("permute", "slice")
def _permute_or_slice(node, names, name, params):
    """A permute or slice the lowering copies: the copy of its strided view."""
    x = node.inputs[0]
    view = strided.apply(strided.whole(x, x), node)
    return render_view_copy(node, view, names, name, params)


@renderer("slice_scatter")
def _slice_scatter(node, names, name, params):
    src, out = node.inputs[0], node.outputs[0]
    sl = slice_bounds(out.shape, node.attrs)
    lines = ["inside = True"]
    for d, (start, _, step) in enumerate(sl):
        n = src.shape[d]
        lines += [f"t{d} = i{d} - {start}",
                  f"if t{d} < 0 or t{d} % {step} != 0 or t{d} // {step} >= {n}:",
                  "    inside = False"]
    offset = affine([(f"(i{d} - {start}) // {step}", s)
                     for d, ((start, _, step), s) in enumerate(zip(sl, strides(src.shape)))])
    lines += ["if inside:",
              "    " + store(names.buf(out), out.dtype, "lin",
                             load(names.buf(src), src.dtype, offset)),
              "else:",
              "    " + store(names.buf(out), out.dtype, "lin", literal(0, out.dtype))]
    return _elementwise(node, name, params, lines)


@renderer("concat")
def _concat(node, names, name, params):
    out = node.outputs[0]
    ax = norm_axis(node.attrs.get("axis", 0), len(out.shape))
    out_at = strides(out.shape)
    lines: list[str] = []
    start = 0
    parts = []
    for k, x in enumerate(node.inputs):
        # the input's own index: the output's, shifted back along the axis (an input
        # may be a strided view, read where its elements lie)
        index = [f"i{d}" if d != ax else f"(i{d} - {start})" for d in range(len(x.shape))]
        buf, offset = _located(names, x, index)
        keyword = "if" if k == 0 else "elif"
        lines += [f"{keyword} i{ax} < {start + x.shape[ax]}:",
                  "    " + store(names.buf(out), out.dtype, "lin", load(buf, x.dtype, offset))]
        # CPU: each input's loops over its own elements (no test per element)
        loops, (src, at), to = _concat_part(names, x, out_at, start * out_at[ax])
        parts.append((loops, (names.buf(out), out.dtype, to), (src, x.dtype, at)))
        start += x.shape[ax]
    code = _elementwise(node, name, params, lines)
    stacked = _stacked(node, names, ax)
    code.cpu = stacked or _rows_copied(parts, ax) or [
        line for loops, dst, src in parts for line in _copy_nest(loops, dst, src)]
    # a stack's sizes as arguments: an RNN's stacks of gates, of states and of the
    # eval batch's states then share one function (three of 0.25 s each to compile
    # for the GRU example); a copy gains little from literal counts
    code.sizes_as_args = stacked is not None
    return code


def _rows_copied(parts: list[tuple], ax: int) -> list[str] | None:
    """CPU lines of a concat along an inner axis whose inputs loop over the same
    outer axes (the same variables and counts): one loop nest over those, each
    input's part of a row copied inside it, every input's elements copied as its own
    nest would. A recurrent step's gate gradients joined per batch row then keep to
    their rows, so the step's kernels can run in batch bands (kernels/bands.py),
    where one loop nest per input did not."""
    outer = parts[0][0][:ax]
    if ax == 0 or any(loops[:ax] != outer or len(loops) == ax for loops, _, _ in parts):
        return None
    return _loop_heads(outer) + ["    " * ax + line for loops, dst, src in parts
                                 for line in _copy_nest(loops[ax:], dst, src)]


def _loop_heads(loops: list[tuple[str, int]]) -> list[str]:
    """The `for` lines of a loop nest, each indented inside the one before."""
    return ["    " * d + f"for {i} in range({n}):" for d, (i, n) in enumerate(loops)]


# a concat of this many like inputs or more copies them in one loop over the inputs
STACKED_PARTS = 8


def _stacked(node: Node, names, ax: int) -> list[str] | None:
    """CPU lines copying a concat's inputs in a loop over a tuple of their buffers, when
    there are many, all buffers of one shape and dtype (an unrolled RNN's hidden
    states stacked): one loop nest for numba to compile, where one per input made the
    GRU's 40-input concats take 4 s each."""
    x, out = node.inputs[0], node.outputs[0]
    if len(node.inputs) < STACKED_PARTS or any(
            v.shape != x.shape or v.dtype != x.dtype or names.program.view(v) is not None
            for v in node.inputs):
        return None
    out_at = strides(out.shape)
    loops, (_, at), to = _concat_part(names, x, out_at, 0)
    to = _Offset(to.terms + [("k_", x.shape[ax] * out_at[ax])], to.const)
    buffers = ", ".join(names.buf(v) for v in node.inputs)
    return [f"parts_ = ({buffers},)",
            f"for k_ in range({len(node.inputs)}):",
            "    x_ = parts_[k_]",
            *["    " + line for line in _copy_nest(loops, (names.buf(out), out.dtype, to),
                                                    ("x_", x.dtype, at))]]


def _concat_part(names, x: Value, out_at: tuple[int, ...], base: int):
    """One concat input's CPU loop nest: (loops, (buffer, read offset), write offset),
    each offset an _Offset. An input that merges the axes of a strided grid (heads
    merged after a permute) is looped over the grid, so no index is divided; any
    other over its own axes."""
    view = names.program.view(x)
    groups = strided.merged_axes(x.shape, view.grid) if view and view.grid else None
    if groups is None:
        own = [f"i{d}" for d in range(len(x.shape))]
        view = view or strided.whole(x, x)
        # a reshape no strides describe and no grid loop undoes: divided indices
        at = view.at(own) if view.grid else _strided_offset(view, own)
        return (list(zip(own, x.shape)), (names.buf(view.root), at),
                _Offset(list(zip(own, out_at)), base))
    index = [f"i{g}" for g in range(len(view.grid))]
    terms = [(index[g], stride * inner) for group, stride in zip(groups, out_at)
             for g, inner in zip(group, strides(tuple(view.grid[g] for g in group)))]
    return (list(zip(index, view.grid)), (names.buf(view.root), _strided_offset(view, index)),
            _Offset(terms, base))


class _Offset(NamedTuple):
    """An affine element offset: (loop variable, coefficient) terms and a constant."""

    terms: list[tuple[str, int]]
    const: int = 0

    def text(self, drop: str | None = None) -> str:
        """The offset, or with loop variable `drop` at 0."""
        return affine([(i, c) for i, c in self.terms if i != drop], self.const)

    def unit(self, var: str) -> bool:
        """`var` steps it by one element."""
        return sum(c for i, c in self.terms if i == var) == 1


def _strided_offset(view: View, index: list[str]) -> _Offset:
    """The offset of `index` by view's strides (over its grid's axes when it has one)."""
    return _Offset(list(zip(index, view.strides)), view.offset)


def _copy_nest(loops: list[tuple[str, int]], dst: tuple, src: tuple) -> list[str]:
    """CPU loops copying `src` (buffer, dtype, offset) into `dst` (likewise; offsets
    are _Offsets or texts). When the innermost loop steps both by one element, it
    copies a row slice to a row slice, indexed by the loop variable alone: an offset
    holding a kernel argument (a concat input's start) kept numba's wraparound test
    and the copy was a scalar gather, twice as slow (_Layout.row in
    kernels/attention.py says the same of the attention's rows)."""
    (dbuf, dtype, to), (sbuf, stype, at) = dst, src
    head = _loop_heads(loops)
    inner, n = loops[-1] if loops else ("", 0)
    if not (isinstance(to, _Offset) and isinstance(at, _Offset)
            and to.unit(inner) and at.unit(inner)):
        to_, at_ = (o.text() if isinstance(o, _Offset) else o for o in (to, at))
        return head + ["    " * len(loops) + store(dbuf, dtype, to_, load(sbuf, stype, at_))]
    pad = "    " * (len(loops) - 1)
    return head[:-1] + [pad + f"d_ = {dbuf}[{to.text(inner)}:{to.text(inner)} + {n}]",
                        pad + f"s_ = {sbuf}[{at.text(inner)}:{at.text(inner)} + {n}]",
                        head[-1],
                        pad + "    " + store("d_", dtype, inner, load("s_", stype, inner))]


# -- indexed ops: the index rule of ir/ops/indexing.py -----------------------------

def _index_rule(node: Node, names, var: str, size: int) -> tuple[list[str], dict]:
    """Lines applying the index rule to `var`, an index just loaded: one in
    [-size, size) ends in [0, size) with `ok` true; any other sets `ok` false and
    reports itself to the error buffer (the launcher raises E-INDEX after the
    step), and the caller then reads and writes nothing for it. Also the check's
    entry for KernelCode.index_checks."""
    where = names.index[node.outputs[0]] + 1   # the node, stable within its graph
    lines = [f"ok = {var} >= -{size} and {var} < {size}",
             "if not ok:",
             f"    index_error({ERR}, {where}, {var})",
             f"elif {var} < 0:",
             f"    {var} += {size}"]
    return lines, {where: (node, size)}


@renderer("take")
def _take(node, names, name, params):
    x, idx = node.inputs
    out = node.outputs[0]
    ax = norm_axis(node.attrs.get("axis", 0), len(x.shape))
    k = len(idx.shape)
    xs, ist = strides(x.shape), strides(idx.shape)
    pick = affine([(f"i{ax + j}", ist[j]) for j in range(k)])
    rest = [(f"i{d}", xs[d]) for d in range(ax)]
    rest += [(f"i{d + k - 1}", xs[d]) for d in range(ax + 1, len(x.shape))]
    rule, checks = _index_rule(node, names, "t", x.shape[ax])
    code = _elementwise(node, name, params, [f"t = {names.buf(idx)}[{pick}]"] + rule + [
        "if ok:",
        "    " + store(names.buf(out), out.dtype, "lin",
                       load(names.buf(x), x.dtype, affine(rest + [("t", xs[ax])]))),
        "else:",
        "    " + store(names.buf(out), out.dtype, "lin", literal(0, out.dtype)),
    ])
    code.index_checks = checks
    code.cpu = _take_rows(node, names, ax, pick, rule)
    return code


def _take_rows(node: Node, names, ax: int, pick: str, rule: list[str]) -> list[str] | None:
    """CPU: `take` as a loop over the picked slices, each index loaded and checked
    once and its slice (the axes after `ax`, contiguous in x and in the output)
    copied by a loop that vectorises. Why: checked element by element, the
    char-GPT's token embedding (768 rows of 128) took 0.11 ms, scalar."""
    x, idx = node.inputs
    out = node.outputs[0]
    row = prod(x.shape[ax + 1:])
    if row < 2:
        return None
    lead = [f"i{d}" for d in range(ax + len(idx.shape))]
    sizes = out.shape[:len(lead)]
    xs = strides(x.shape)
    x_at = affine([(f"i{d}", xs[d]) for d in range(ax)] + [("t", xs[ax])])
    out_at = affine(list(zip(lead, strides(sizes))))
    copy = [f"xr_ = {names.buf(x)}[{x_at}:{x_at} + {row}]",
            f"or_ = {names.buf(out)}[({out_at}) * {row}:({out_at}) * {row} + {row}]",
            "if ok:",
            f"    for c in range({trip_count(row)}):",
            "        " + store("or_", out.dtype, "c", load("xr_", x.dtype, "c")),
            "else:",
            f"    for c in range({trip_count(row)}):",
            "        " + store("or_", out.dtype, "c", literal(0, out.dtype))]
    lines = trip_counts(row)
    for depth, (var, n) in enumerate(zip(lead, sizes)):
        lines.append("    " * depth + f"for {var} in range({n}):")
    body = [f"t = {names.buf(idx)}[{pick}]", *rule, *copy]
    return lines + ["    " * len(lead) + line for line in body]


@renderer("check_index")
def _check_index(node, names, name, params):
    idx, out = node.inputs[0], node.outputs[0]
    rule, checks = _index_rule(node, names, "t", node.attrs["size"])
    code = _elementwise(node, name, params, [f"t = {names.buf(idx)}[lin]"] + rule + [
        store(names.buf(out), out.dtype, "lin", "t if ok else 0")])
    code.index_checks = checks
    return code


@renderer("scatter_add")
def _scatter_add(node, names, name, params):
    # one output element gathers every source element whose index hits it:
    # deterministic on every launcher, no atomics (costs |out| * |idx|)
    src, idx = node.inputs
    out = node.outputs[0]
    ax = norm_axis(node.attrs.get("axis", 0), len(out.shape))
    size = node.attrs["size"]
    k = len(idx.shape)
    ss = strides(src.shape)
    lead = [(f"i{d}", ss[d]) for d in range(ax)]
    tail = [(f"i{d}", ss[d + k - 1]) for d in range(ax + 1, len(out.shape))]
    # the index tensor's axes sit contiguously in src: position j is j * (inner stride)
    src_offset = affine(lead + [("j", ss[ax + k - 1] if k else 0)] + tail)
    rule, checks = _index_rule(node, names, "t", size)
    lines = [f"acc = {literal(0, out.dtype)}",
             f"for j in range({prod(idx.shape)}):",
             f"    t = {names.buf(idx)}[j]"]
    lines += ["    " + line for line in rule]
    lines += [f"    if ok and t == i{ax}:",
              f"        acc = acc + {load(names.buf(src), src.dtype, src_offset)}",
              store(names.buf(out), out.dtype, "lin", "acc")]
    code = _elementwise(node, name, params, lines, work=max(1, prod(idx.shape)))
    code.index_checks = checks
    if out.dtype != "bf16":
        # CPU: zero the output, then add each source row where its index points:
        # |src| work instead of |out| * |idx|, each element summed in the same
        # order (j ascending) as the gather above, so bit-identical
        os_ = strides(out.shape)
        out_at = affine([(f"i{d}", os_[d]) for d in range(ax)] + [("t", os_[ax])]
                        + [(f"i{d}", os_[d]) for d in range(ax + 1, len(out.shape))])
        O = names.buf(out)
        cpu = [f"for o in range({prod(out.shape)}):",
               "    " + store(O, out.dtype, "o", literal(0, out.dtype))]
        loops = [(f"i{d}", out.shape[d]) for d in range(ax)] + [("j", prod(idx.shape))]
        for depth, (var, size_) in enumerate(loops):
            cpu.append("    " * depth + f"for {var} in range({size_}):")
        depth = len(loops)
        cpu += ["    " * depth + line for line in [f"t = {names.buf(idx)}[j]"] + rule
                + ["if ok:"]]
        depth += 1
        row = prod(out.shape[ax + 1:])
        if row > 1:
            # the axes after `ax` are contiguous in out and in src: one loop over the
            # row, of a variable length so that it vectorises (a literal one LLVM
            # unrolled; the char-GPT's token embedding gradient 0.048 -> 0.013 ms)
            o_at = affine([(f"i{d}", os_[d]) for d in range(ax)] + [("t", os_[ax])])
            s_at = affine(lead + [("j", ss[ax + k - 1] if k else 0)])
            cpu = trip_counts(row) + cpu
            cpu += ["    " * depth + line for line in [
                f"or_ = {O}[{o_at}:{o_at} + {row}]",
                f"sr_ = {names.buf(src)}[{s_at}:{s_at} + {row}]",
                f"for c in range({trip_count(row)}):",
                "    " + store("or_", out.dtype, "c",
                               f"{load('or_', out.dtype, 'c')} + {load('sr_', src.dtype, 'c')}")]]
        else:
            add = f"{load(O, out.dtype, out_at)} + {load(names.buf(src), src.dtype, src_offset)}"
            cpu.append("    " * depth + store(O, out.dtype, out_at, add))
        code.cpu = cpu
    if out.dtype in ("f32", "i32", "i64"):
        # CUDA: a thread per source element adds it where its index points (atomics:
        # |src| work; the order of the additions, and so the last bits, may vary)
        points = [(f"i{d}", out.shape[d]) for d in range(ax)] + [("j", prod(idx.shape))]
        points += [(f"i{d}", out.shape[d]) for d in range(ax + 1, len(out.shape))]
        value = load(names.buf(src), src.dtype, src_offset)
        body = [f"t = {names.buf(idx)}[j]"] + rule + [
            "if ok:", f"    cuda.atomic.add({O}, {out_at}, {convert(out.dtype, value)})"]
        code.atomic = (points, body, [O])
    return code


# -- creation --------------------------------------------------------------------

@renderer("iota")
def _iota(node, names, name, params):
    out = node.outputs[0]
    ax = norm_axis(node.attrs.get("axis", 0), len(out.shape))
    return _elementwise(node, name, params, [store(names.buf(out), out.dtype, "lin", f"i{ax}")])


@renderer("const")
def _const(node, names, name, params):
    out = node.outputs[0]
    values = node.attrs["value"]
    # the literal values, in the text: a chain of tests is fine for the small
    # constants graphs hold (big arrays are inputs)
    lines = []
    for k, v in enumerate(values):
        keyword = "if" if k == 0 else "elif"
        lines += [f"{keyword} lin == {k}:",
                  "    " + store(names.buf(out), out.dtype, "lin", literal(v, out.dtype))]
    return _elementwise(node, name, params, lines)


# -- reductions that are not a plain combine -------------------------------------

@renderer("argmax", "argmin")
def _argmax(node, names, name, params):
    x, out = node.inputs[0], node.outputs[0]
    ax = norm_axis(node.attrs.get("axis", -1), len(x.shape))
    xs = strides(x.shape)
    keep = node.attrs.get("keepdims", False)
    outer_dims = [d for d in range(len(x.shape)) if d != ax]
    # output index variables i0.. map to x's axes without `ax` (or with it, size 1)
    names_x = {d: f"i{k}" for k, d in enumerate(outer_dims)} if not keep else \
        {d: f"i{d}" for d in outer_dims}
    base = affine([(names_x[d], xs[d]) for d in outer_dims])
    # the first maximum (minimum), or the first NaN (numpy's argmax and argmin): a
    # NaN is taken as the best and the search stops there
    better = ">" if node.op == "argmax" else "<"
    lines = [f"best = {load(names.buf(x), x.dtype, base)}",
             "arg = 0",
             f"for j in range(1, {x.shape[ax]}):",
             "    if best != best:",
             "        break",
             f"    v = {load(names.buf(x), x.dtype, base + f' + j * {xs[ax]}')}",
             f"    if v {better} best or v != v:",
             "        best = v",
             "        arg = j",
             store(names.buf(out), out.dtype, "lin", "arg")]
    return _elementwise(node, name, params, lines, work=x.shape[ax])


@renderer("flip")
def _flip(node, names, name, params):
    x, out = node.inputs[0], node.outputs[0]
    flipped = set(node.attrs["axes"])
    terms = [(f"({n - 1} - i{d})" if d in flipped else f"i{d}", s)
             for d, (n, s) in enumerate(zip(x.shape, strides(x.shape)))]
    return _elementwise(node, name, params, [
        store(names.buf(out), out.dtype, "lin", load(names.buf(x), x.dtype, affine(terms)))])


# -- along one axis: scans and sorts ---------------------------------------------

def _rows(node: Node, x: Value) -> tuple[list[tuple[str, int]], str, int, int]:
    """One thread per row along attrs axis: the loop variables over the other axes,
    the row's first element, the row's stride and its length."""
    ax = norm_axis(node.attrs.get("axis", -1), len(x.shape))
    st = strides(x.shape)
    others = [d for d in range(len(x.shape)) if d != ax]
    outer = [(f"i{d}", x.shape[d]) for d in others] or [("i_", 1)]
    return outer, affine([(f"i{d}", st[d]) for d in others]), st[ax], x.shape[ax]


@renderer("cumsum", "cumprod")
def _scan(node, names, name, params):
    x, out = node.inputs[0], node.outputs[0]
    outer, base, step, n = _rows(node, x)
    j = f"({n - 1} - j)" if node.attrs.get("reverse") else "j"
    at = f"{base} + {j} * {step}"
    op, init = ("+", 0) if node.op == "cumsum" else ("*", 1)
    lines = [f"acc = {literal(init, out.dtype)}",
             f"for j in range({n}):",
             f"    acc = acc {op} {load(names.buf(x), x.dtype, at)}",
             "    " + store(names.buf(out), out.dtype, at, "acc")]
    return KernelCode(name, params, outer, lines, work=prod(x.shape))


@renderer("sort")
def _sort(node, names, name, params):
    """An insertion sort per row, stable, NaN the largest: each element moves left
    past the ones it sorts before (values and indices move together)."""
    x = node.inputs[0]
    vals, idx = node.outputs
    outer, base, step, n = _rows(node, x)
    X, V, I = names.buf(x), names.buf(vals), names.buf(idx)

    def at(k: str) -> str:
        return f"{base} + {k} * {step}"

    if node.attrs.get("descending"):
        before = "(v > w or (v != v and w == w))"
    else:
        before = "(v < w or (w != w and v == v))"
    lines = [f"for j in range({n}):",
             f"    v = {load(X, x.dtype, at('j'))}",
             "    k = j",
             "    while k > 0:",
             f"        w = {load(V, vals.dtype, at('(k - 1)'))}",
             f"        if not {before}:",
             "            break",
             "        " + store(V, vals.dtype, at("k"), "w"),
             "        " + store(I, idx.dtype, at("k"), f"{I}[{at('(k - 1)')}]"),
             "        k -= 1",
             "    " + store(V, vals.dtype, at("k"), "v"),
             "    " + store(I, idx.dtype, at("k"), "j")]
    return KernelCode(name, params, outer, lines, work=prod(x.shape) * max(n, 1))


# -- windows ---------------------------------------------------------------------

def _window_attrs(node: Node, shape: tuple[int, ...]):
    kernel = tuple(node.attrs["kernel"])
    nsp = len(kernel)
    stride = tuple(node.attrs.get("stride") or (1,) * nsp)
    padding = tuple(node.attrs.get("padding") or (0,) * nsp)
    out = tuple((s + 2 * p - k) // st + 1
                for s, k, st, p in zip(shape[2:], kernel, stride, padding))
    return kernel, stride, padding, out


@renderer("unfold")
def _unfold(node, names, name, params):
    # out [N, C, *K, *S']: x[n, c, o * stride + k - pad] or 0 outside
    x, out = node.inputs[0], node.outputs[0]
    kernel, stride, padding, _ = _window_attrs(node, x.shape)
    nsp = len(kernel)
    xs = strides(x.shape)
    lines = ["inside = True"]
    terms = [("i0", xs[0]), ("i1", xs[1])]
    for d in range(nsp):
        k, o = f"i{2 + d}", f"i{2 + nsp + d}"
        lines += [f"s{d} = {o} * {stride[d]} + {k} - {padding[d]}",
                  f"if s{d} < 0 or s{d} >= {x.shape[2 + d]}:",
                  "    inside = False"]
        terms.append((f"s{d}", xs[2 + d]))
    lines += ["if inside:",
              "    " + store(names.buf(out), out.dtype, "lin",
                             load(names.buf(x), x.dtype, affine(terms))),
              "else:",
              "    " + store(names.buf(out), out.dtype, "lin", literal(0, out.dtype))]
    code = _elementwise(node, name, params, lines)
    x_buf, cols_buf = names.buf(x), names.buf(out)

    def copy(x_at: str, cols_at: str) -> str:
        return store(cols_buf, out.dtype, cols_at, load(x_buf, x.dtype, x_at))

    code.cpu = _window_rows(code, _Windows(node, x.shape, copy, (cols_buf, out.dtype)))
    return code


@renderer("fold")
def _fold(node, names, name, params):
    # out [N, C, *S]: sum over window offsets k with (s + pad - k) = o * stride
    cols, out = node.inputs[0], node.outputs[0]
    kernel, stride, padding, osp = _window_attrs(node, out.shape)
    nsp = len(kernel)
    cs = strides(cols.shape)
    lines = [f"acc = {literal(0, out.dtype)}"]
    for offset in itertools.product(*(range(k) for k in kernel)):
        cond, terms = [], [("i0", cs[0]), ("i1", cs[1])]
        for d, k in enumerate(offset):
            t = f"(i{2 + d} + {padding[d] - k})"
            cond += [f"{t} >= 0", f"{t} % {stride[d]} == 0", f"{t} // {stride[d]} < {osp[d]}"]
            terms.append((f"({t} // {stride[d]})", cs[2 + nsp + d]))
        const = sum(k * cs[2 + d] for d, k in enumerate(offset))
        lines += [f"if {' and '.join(cond)}:",
                  f"    acc = acc + {load(names.buf(cols), cols.dtype, affine(terms, const))}"]
    lines.append(store(names.buf(out), out.dtype, "lin", "acc"))
    code = _elementwise(node, name, params, lines, work=prod(kernel))
    if out.dtype == "f32":  # sums in the buffer: other dtypes keep their f32 accumulator
        x_buf, cols_buf = names.buf(out), names.buf(cols)

        def add(x_at: str, cols_at: str) -> str:
            return f"{x_buf}[{x_at}] = {x_buf}[{x_at}] + {cols_buf}[{cols_at}]"

        code.cpu = _window_rows(code, _Windows(node, out.shape, add, None), zero=x_buf)
    return code


# The CPU's windows: a row (n, c) at a time, a window offset at a time, over the
# output positions o whose input position o * stride + k - pad lies inside. Those
# bounds are worked out once per offset, so the inner loops have no test in them
# (element by element, the index tests and the division by the stride kept a fold's
# loop scalar: the CNN's stride-2 fold took 0.11 ms of its 0.95 ms step). The last
# axis's offsets are unrolled, its bounds constants (the innermost loop's count a
# literal: the CNN's fold 0.083 ms with them computed, 0.020 unrolled); the other
# axes' offsets are loops (all of a 7x7 window's 49 unrolled took numba 15 s to
# compile). A computed offset is masked with MASK_HEX (non-negative already: the
# mask shows LLVM it is, so numba's negative-index test folds away); constant ones
# are hex literals, which the kernel text's parametrisation leaves alone.


class _Windows(NamedTuple):
    """An unfold's or fold's windows over x: `pair(x_at, cols_at)` is the statement
    for one inside element pair; `outside` (an unfold's cols buffer and dtype) gets
    zeros where the window lies in the padding."""

    node: Node
    x_shape: tuple[int, ...]
    pair: Callable[[str, str], str]
    outside: tuple[str, str] | None


class _Span(NamedTuple):
    """One axis's inside positions for the current offset: lo .. hi - 1, and x_at,
    the x offset of lo's input; source text (names, or literals of constants)."""

    lo: str
    hi: str
    x_at: str
    count: str


def _window_rows(code: KernelCode, w: _Windows, zero: str | None = None) -> list[str]:
    """The CPU loop nest: rows (n, c) shared by the pool's threads when the work
    pays, each row first zeroed in buffer `zero` (a fold's sums) if given."""
    kernel, _, _, osp = _window_attrs(w.node, w.x_shape)
    rows, size_x = prod(w.x_shape[:2]), prod(w.x_shape[2:])
    lines = [f"xr_ = r * {size_x}", f"cr_ = r * {prod(kernel) * prod(osp)}"]
    if zero is not None:
        lines += [f"for j in range({size_x}):", f"    {zero}[xr_ + j] = np.float32(0.0)"]
    lines += _window_offsets(w, 0, [])
    loop = "prange" if rows > 1 and threads.parallel_maybe(code.work, code.size) else "range"
    code.marginal = not threads.parallel_worth(code.work)
    return [f"for r in {loop}({rows}):"] + ["    " + line for line in lines]


def _window_offsets(w: _Windows, d: int, spans: list[_Span]) -> list[str]:
    """The window offsets k_d of axes d.., in the references' order: a loop over
    each axis's but the last, whose offsets are unrolled."""
    kernel, stride, padding, osp = _window_attrs(w.node, w.x_shape)
    st, pad, n, size = stride[d], padding[d], osp[d], w.x_shape[2 + d]
    xs = strides(w.x_shape[2:])[d]
    if d < len(kernel) - 1:
        k = f"k{d}"
        span = _Span(f"lo{d}", f"hi{d}", f"xs{d}", f"hi{d} - lo{d}")
        body = [f"lo{d} = min({n}, max(0, ({pad + st - 1} - {k}) // {st})) & {MASK_HEX}",
                f"hi{d} = max(lo{d}, min({n}, ({size - 1 + pad} - {k}) // {st} + 1)) & {MASK_HEX}",
                f"xs{d} = ((lo{d} * {st} + {k} - {pad}) & {MASK_HEX}) * {xs}",
                *_window_offsets(w, d + 1, spans + [span])]
        return [f"for {k} in range({kernel[d]}):"] + ["    " + line for line in body]
    lines = []
    outer = affine([(f"k{a}", st_) for a, st_ in enumerate(strides(kernel)[:-1])])
    for k in range(kernel[d]):
        lo = min(n, max(0, -(-(pad - k) // st)))
        hi = max(lo, min(n, (size - 1 + pad - k) // st + 1))
        span = _Span(f"{lo:#x}", f"{hi:#x}", f"{(lo * st + k - pad) * xs if hi > lo else 0:#x}",
                     str(hi - lo))
        lines += [f"cb_ = cr_ + ({outer} + {k:#x}) * {prod(osp)}",
                  *_window_positions(w, 0, spans + [span], [], [])]
    return lines


def _window_positions(w: _Windows, d: int, spans: list[_Span], x_terms: list,
                      c_terms: list) -> list[str]:
    """The loops over axes d.. of one offset's output positions: the inside ones, and
    (`outside`: an unfold's zeros) those before lo and from hi."""
    _, stride, _, osp = _window_attrs(w.node, w.x_shape)
    if d == len(spans):
        x_at = " + ".join(["xr_"] + [s.x_at for s in spans] + [affine(x_terms)])
        return [w.pair(x_at, " + ".join(["cb_", affine(c_terms)]))]
    span, o = spans[d], f"o{d}"
    xs, os_ = strides(w.x_shape[2:])[d], strides(osp)[d]
    inner = _window_positions(w, d + 1, spans, x_terms + [(o, stride[d] * xs)],
                              c_terms + [(f"({span.lo} + {o})", os_)])
    lines = [f"for {o} in range({span.count}):"] + ["    " + line for line in inner]
    if w.outside is not None:
        buf, dtype = w.outside
        block = prod(osp[d + 1:])  # the cols elements of one position of axis d
        before = " + ".join(["cb_", affine(c_terms), "z_"])
        after = " + ".join(["cb_", affine(c_terms), f"{span.hi} * {os_}", "z_"])
        lines += [f"for z_ in range({span.lo} * {block}):",
                  "    " + store(buf, dtype, before, literal(0, dtype)),
                  f"for z_ in range(({osp[d]} - {span.hi}) * {block}):",
                  "    " + store(buf, dtype, after, literal(0, dtype))]
    return lines


# -- random ----------------------------------------------------------------------

@renderer("dropout")
def _dropout(node, names, name, params):
    x, seed = node.inputs
    out = node.outputs[0]
    p = float(node.attrs["p"])
    stream = int(node.attrs.get("stream", 0))
    scale = 1.0 / (1.0 - p)
    return _elementwise(node, name, params, [
        f"u = rng_uniform({names.buf(seed)}[0], {stream}, lin)",
        f"if u >= {literal(p, 'f32')}:",
        "    " + store(names.buf(out), out.dtype, "lin",
                       f"{load(names.buf(x), x.dtype, 'lin')} * {literal(scale, 'f32')}"),
        "else:",
        "    " + store(names.buf(out), out.dtype, "lin", literal(0, out.dtype)),
    ])


@renderer("rand", "randn", "randint")
def _draw(node, names, name, params):
    seed, out = node.inputs[0], node.outputs[0]
    stream = int(node.attrs.get("stream", 0))
    s = f"{names.buf(seed)}[0]"
    if node.op == "randint":
        low, high = int(node.attrs["low"]), int(node.attrs["high"])
        # uint64 arithmetic stays uint64; np.int64 before meeting a signed number
        value = (f"np.int64(rng_bits({s}, {stream}, lin) % np.uint64({high - low})) "
                 f"+ np.int64({low})")
    else:
        fn = "rng_uniform" if node.op == "rand" else "rng_normal"
        value = f"{fn}({s}, {stream}, lin)"
    return _elementwise(node, name, params, [store(names.buf(out), out.dtype, "lin", value)])


# -- matmul ----------------------------------------------------------------------

def _batch_offsets(node: Node) -> tuple[list[str], str, str, str]:
    """Loop variables over the output batch and the a/b/out offsets of one batch."""
    a, b = node.inputs
    out = node.outputs[0]
    batch = out.shape[:-2]
    bidx = [f"i{d}" for d in range(len(batch))]
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]

    def offset(shape: tuple[int, ...], block: int) -> str:
        # batch axes broadcast (right-aligned) into the output's batch
        lead = len(batch) - len(shape)
        st = strides(shape)
        return affine([(bidx[lead + j], st[j] * block) for j, d in enumerate(shape) if d != 1])

    return bidx, offset(a.shape[:-2], m * k), offset(b.shape[:-2], k * n), \
        offset(batch, m * n)


def _matrix(names, v) -> tuple[str, bool]:
    """The buffer holding matmul operand `v`, and whether it is stored transposed
    (the operand is a lowered-away permute of the last two axes)."""
    source = names.program.transposed(v)
    if source is not None:
        return names.buf(source), True
    return names.buf(v), False


def _view_operand(names, v, batch: tuple[int, ...], bidx: list[str]) -> tuple[str, str, int, int]:
    """A strided-view operand (kernels.views): its root's buffer, the offset of one
    batch's matrix and the matrix's row and column strides, in elements."""
    view = names.program.view(v)
    lead = len(batch) - (len(view.shape) - 2)
    terms = [(bidx[lead + j], st) for j, (d, st) in enumerate(zip(view.shape[:-2],
                                                                  view.strides[:-2])) if d != 1]
    return names.buf(view.root), affine(terms, view.offset), view.strides[-2], view.strides[-1]


def _read_in_place(names, v) -> bool:
    """Whether matmul operand `v` is a strided view read where its elements lie."""
    view = names.program.view(v)
    return view is not None and reads_in_place("matmul", view)


@renderer("matmul")
def _matmul(node, names, name, params):
    a, b = node.inputs
    out = node.outputs[0]
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    bidx, ao, bo, oo = _batch_offsets(node)
    O = names.buf(out)
    a_op, b_op = _operands(names, node, out.shape[:-2], bidx, ao, bo)
    (A, ao, a_rc, ta, a_view), (B, bo, b_rc, tb, b_view) = a_op, b_op
    # the shared body (CUDA): one output element, a dot over k (a simple loop,
    # not tiled: numba-cuda has no cuBLAS binding)
    body = [f"acc = {literal(0, out.dtype)}", *_dot(node, (A, ao, a_rc), (B, bo, b_rc)),
            store(O, out.dtype, f"{oo} + r * {n} + c", "acc")]
    outer = [(i, d) for i, d in zip(bidx, out.shape[:-2])] + [("r", m), ("c", n)]
    code = KernelCode(name, params, outer, body, work=prod(out.shape) * k)
    code.gemm = gemm.of_matmul(node, names, a_view, b_view)
    if a.dtype == "f32" and b.dtype == "f32" and m * n * k > 0:
        # CPU: BLAS sgemm on 2-D views of the flat buffers (a transposed operand
        # is an F-ordered view: BLAS takes it through its transpose flag; a strided
        # view is an as_strided array, which numba's dot packs for BLAS)
        a2 = _cpu_matrix(A, ao, m, k, ta, a_rc if a_view else None)
        b2 = _cpu_matrix(B, bo, k, n, tb, b_rc if b_view else None)
        rows = prod(out.shape[:-2])
        # a view whose rows (or columns) step by one element is a BLAS matrix with a
        # leading dimension: sgemm reads it where it lies (a row-major view without
        # gaps is, element for element, the C-ordered copy np.dot would pack it into:
        # the same arguments, the same bits); any other view np.dot packs
        (ta, lda), (tb, ldb) = a_op.leading(m, k), b_op.leading(k, n)
        plain = lda > 0 and ldb > 0 and (m > 1 and n > 1 or (
            (not a_view or tuple(a_rc) == (k, 1)) and (not b_view or tuple(b_rc) == (n, 1))))
        if rows > 1 and not ta and not a_view and a.shape[:-2] == out.shape[:-2] and bo == "0":
            # a shared right operand (a weight): the batch's rows are one
            # contiguous (batch * m, k) matrix, so one sgemm does them all
            gemm_args = ((A, "0", False), (B, "0", tb), (O, "0"), (rows * m, k, n), (k, ldb))
            lines = _cpu_gemm(*gemm_args) \
                if plain else [
                     f"np.dot({A}[0:{rows * m * k}].reshape(({rows * m}, {k})), {b2}, "
                     f"{O}[0:{rows * m * n}].reshape(({rows * m}, {n})))"]
        else:
            # a batch's matmuls one after another: each whole (a chunked one would
            # wake the pool once per matrix)
            gemm_args = ((A, ao, ta), (B, bo, tb), (O, oo), (m, k, n), (lda, ldb))
            lines = _cpu_gemm(*gemm_args, split=not bidx) \
                if plain else [f"np.dot({a2}, {b2}, {O}[{oo}:{oo} + {m * n}].reshape(({m}, {n})))"]
            for i, d in reversed(list(zip(bidx, out.shape[:-2]))):
                lines = [f"for {i} in range({d}):"] + ["    " + line for line in lines]
        code.cpu = lines
        code.sizes_as_args = True
        if plain and lines[0].startswith("for c in prange("):  # one sgemm, split
            code.serial_cpu = _cpu_gemm(*gemm_args, split=False)  # for a band (kernels/bands.py)
    return code


class _Operand(NamedTuple):
    """How a matmul's kernel reads one operand: the buffer, the element offset of
    (one batch's) matrix, its (row, column) strides, whether it is stored transposed
    (a lowered-away permute) and whether it is a strided view read in place."""

    buf: str
    at: str
    rc: tuple[int, int] | list[int]
    flipped: bool
    view: bool

    def leading(self, rows: int, cols: int) -> tuple[bool, int]:
        """(stored transposed, leading dimension) of this (rows, cols) operand for
        sgemm: a buffer's from its layout, a view's when its rows (or columns) step by
        one element (`views.leading`); a leading dimension of 0 when they do not
        (np.dot packs the view)."""
        if not self.view:
            return self.flipped, _stored_row(rows, cols, self.flipped)
        return strided.leading(self.rc, rows, cols) or (False, 0)


def _operands(names, node: Node, batch: tuple[int, ...], bidx: list[str], ao: str = "0",
              bo: str = "0") -> tuple[_Operand, _Operand]:
    """Matmul `node`'s operands as its kernel reads them, `ao` and `bo` the offsets of
    one batch's matrices in buffers laid out as the operands are."""
    a, b = node.inputs
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    (A, ta), (B, tb) = _matrix(names, a), _matrix(names, b)
    # (row, column) strides of each operand matrix; views have their own
    a_rc, b_rc = ((1, m) if ta else (k, 1)), ((1, k) if tb else (n, 1))
    a_view, b_view = (_read_in_place(names, v) for v in (a, b))
    if a_view:
        A, ao, *a_rc = _view_operand(names, a, batch, bidx)
    if b_view:
        B, bo, *b_rc = _view_operand(names, b, batch, bidx)
    return _Operand(A, ao, a_rc, ta, a_view), _Operand(B, bo, b_rc, tb, b_view)


def _dot(node: Node, a: tuple, b: tuple) -> list[str]:
    """The shared body's dot over k for one output element (r, c) of matmul `node`,
    from operands (buffer, offset, (row, column) strides)."""
    (A, ao, a_rc), (B, bo, b_rc) = a, b
    x, y = node.inputs
    return [f"for j in range({x.shape[-1]}):",
            f"    acc = acc + {load(A, x.dtype, f'{ao} + r * {a_rc[0]} + j * {a_rc[1]}')}"
            f" * {load(B, y.dtype, f'{bo} + j * {b_rc[0]} + c * {b_rc[1]}')}"]


def _stored_row(rows: int, cols: int, flipped: bool) -> int:
    """The leading dimension of a (rows, cols) matrix stored row-major in its buffer,
    or stored transposed (`flipped`): the length of a stored row."""
    return rows if flipped else cols


def _cpu_gemm(a: tuple[str, str, bool], b: tuple[str, str, bool], out: tuple[str, str],
              mkn: tuple[int, int, int], lds: tuple[int, int] | None = None,
              split: bool = True) -> list[str]:
    """out = a @ b as one sgemm call on flat buffers (kernels/sgemm.py): each operand is
    (buffer, element offset, stored transposed), out (buffer, offset); `lds` their
    leading dimensions when not their layouts' (views). A vector operand (m or n of 1)
    of a buffer goes through np.dot, which calls gemv or dot for it, so every matmul
    keeps the BLAS routine, and the bits, it always had."""
    (A, ao, ta), (B, bo, tb), (O, oo) = a, b, out
    m, k, n = mkn
    # row strides as np.dot derives them from the layouts: the same BLAS call
    layouts = _stored_row(m, k, ta), _stored_row(k, n, tb)
    lds = lds or layouts
    if m == 1 or n == 1:
        assert lds == layouts  # buffers only
        operands = [_cpu_matrix(A, ao, m, k, ta, None), _cpu_matrix(B, bo, k, n, tb, None),
                    f"{O}[{oo}:{oo} + {m * n}].reshape(({m}, {n}))"]
        return [f"np.dot({', '.join(operands)})"]
    by_rows = m >= n
    chunks, size = threads.matmul_chunks(2 * m * k * n, m if by_rows else n) if split else (1, 0)
    term = _GemmTerm(a, b, lds, k)
    if chunks == 1:
        return [_sgemm(term, (O, oo), (m, n), None)]
    return [f"for c in prange({chunks}):",
            "    " + _sgemm(term, (O, oo), (m, n), (by_rows, size))]


class _GemmTerm(NamedTuple):
    """One product of an sgemm call: its operands (buffer, element offset, stored
    transposed), their leading dimensions and its inner dimension."""

    a: tuple[str, str, bool]
    b: tuple[str, str, bool]
    lds: tuple[int, int]
    k: int


def _sgemm(term: _GemmTerm, out: tuple[str, str], mn: tuple[int, int],
           part: tuple[bool, int] | None, beta: str = "0.0") -> str:
    """The sgemm call computing `term` into out (+ beta out), or with `part` (by rows,
    chunk size) chunk c's rows or columns of it: numba's threads share the chunks (a
    chunk function: kernels/parallel.py), chunk c starting c * step elements further
    into the split operand and into out."""
    (A, ao, ta), (B, bo, tb), (O, oo) = term.a, term.b, out
    (lda, ldb), (m, n), k = term.lds, mn, term.k
    call = f"gemm_{'t' if ta else 'n'}{'t' if tb else 'n'}"
    by_rows, size = part or (False, 0)
    if part is None:
        a_at, b_at, o_at, dims = ao, bo, oo, f"{m}, {k}, {n}"
    elif by_rows:
        a_at, b_at, o_at = f"{ao} + c * {size * (1 if ta else lda)}", bo, f"{oo} + c * {size * n}"
        dims = f"min({size}, {m} - c * {size}), {k}, {n}"
    else:
        a_at, b_at, o_at = ao, f"{bo} + c * {size * (ldb if tb else 1)}", f"{oo} + c * {size}"
        dims = f"{m}, {k}, min({size}, {n} - c * {size})"
    return f"{call}({A}, {a_at}, {lda}, {B}, {b_at}, {ldb}, {O}, {o_at}, {n}, {dims}, {beta})"


def _cpu_matrix(buf: str, at: str, rows: int, cols: int, flipped: bool,
                view: list[int] | None) -> str:
    """A (rows, cols) matrix of a flat buffer as a numba array expression."""
    if view is not None:
        return (f"np.lib.stride_tricks.as_strided({buf}[{at}:], shape=({rows}, {cols}), "
                f"strides=({view[0] * 4}, {view[1] * 4}))")
    if flipped:
        return f"{buf}[{at}:{at} + {rows * cols}].reshape(({cols}, {rows})).T"
    return f"{buf}[{at}:{at} + {rows * cols}].reshape(({rows}, {cols}))"


def render_batch_sum_matmul(mm: Node, total: Node, names, name: str,
                            params: list[str]) -> KernelCode:
    """`sum(matmul(permute(a), b), batch axes)` with `a` stored (batch, k, m) and
    `b` (batch, k, n): out[r, c] = sum over (i, j) of a[i, j, r] * b[i, j, c]
    (a weight gradient, lowered by `kernels.lower._fold_batch_sum`)."""
    a, b = mm.inputs
    out = total.outputs[0]
    rows = prod(a.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    (A, ta), O = _matrix(names, a), names.buf(out)
    B, at = gemm.stacked(names, b)
    assert ta
    body = [f"acc = {literal(0, out.dtype)}",
            f"for i in range({rows}):",
            f"    for j in range({k}):",
            f"        acc = acc + {load(A, a.dtype, f'i * {k * m} + j * {m} + r')}"
            f" * {load(B, b.dtype, f'{at} + i * {k * n} + j * {n} + c')}",
            store(O, out.dtype, f"r * {n} + c", "acc")]
    code = KernelCode(name, params, [("r", m), ("c", n)], body, work=prod(out.shape) * k * rows)
    code.gemm = gemm.of_batch_sum(mm, total, names)
    if m * n * k > 0:
        # CPU: one sgemm over the batch's stacked rows, (m, rows*k) x (rows*k, n)
        code.cpu = _cpu_gemm((A, "0", True), (B, str(at), False), (O, "0"), (m, rows * k, n))
        code.sizes_as_args = True
    return code


def render_matmul_sum(terms: list[Node], out: Value, names, name: str,
                      params: list[str]) -> KernelCode:
    """`out`, a sum of 2-D f32 matmuls of its shape (`kernels.lower._Grouper.plan_sums`:
    a weight's gradient in an unrolled RNN, one product per time step), as one kernel:
    the first product's sgemm stores into out, each next one's adds to it (beta 1), in
    the sum's order. On the CPU the products share one split of out's rows or columns
    among the pool's threads (by their total size: `threads.matmul_chunks`), so a
    product too small to split alone is split with the rest."""
    m, n = out.shape
    O = names.buf(out)
    body = [f"acc = {literal(0, out.dtype)}"]
    gemms = []
    for mm in terms:
        k = mm.inputs[0].shape[-1]
        a, b = _operands(names, mm, (), [])
        body += _dot(mm, (a.buf, a.at, a.rc), (b.buf, b.at, b.rc))
        (ta, lda), (tb, ldb) = a.leading(m, k), b.leading(k, n)
        assert lda > 0 and ldb > 0, "plan_sums takes products sgemm reads in place"
        gemms.append(_GemmTerm((a.buf, a.at, ta), (b.buf, b.at, tb), (lda, ldb), k))
    body.append(store(O, out.dtype, f"r * {n} + c", "acc"))
    inner = sum(t.k for t in gemms)
    code = KernelCode(name, params, [("r", m), ("c", n)], body, work=m * n * inner)
    by_rows = m >= n
    chunks, size = threads.matmul_chunks(2 * m * inner * n, m if by_rows else n)
    part = (by_rows, size) if chunks > 1 else None
    calls = [_sgemm(t, (O, "0"), (m, n), part, "1.0" if i else "0.0") for i, t in enumerate(gemms)]
    code.cpu = calls if part is None else [f"for c in prange({chunks}):"] + [
        "    " + call for call in calls]
    code.sizes_as_args = True
    return code
