"""Kernels of the fused attention ops (sexpgpu/ir/ops/attention.py). The CPU loops
go over the batch and query rows, with every inner loop over D (or E) contiguous
so LLVM vectorises it; q, k, v and dO are read where they lie when they are
strided views (heads split off one projection). CUDA runs one thread per output
element, recomputing the scores it needs: simple and correct, not fast."""

from __future__ import annotations

from math import prod

from sexpgpu.kernels.lower import reads_in_place
from sexpgpu.kernels.source import KernelCode, affine, literal, load, store, strides

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


def _sizes(node: Node) -> tuple[int, int, int, int, str]:
    """T, S, D, E and the scale literal."""
    q, k, v = node.inputs[:3]
    scale = literal(scale_of(node.attrs, q.shape[-1]), "f32")
    return q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1], scale


def _keys(node: Node, row: str, s: int) -> str:
    """The keys query `row` sees: j in range(this)."""
    return f"min({row} + 1, {s})" if node.attrs.get("causal") else str(s)


def _queries(node: Node, key: str, t: int) -> str:
    """The queries that see key `key`: i in range(this)."""
    return f"{key}, {t}" if node.attrs.get("causal") else str(t)


def _nest(outer: list[tuple[str, int]], body: list[str]) -> list[str]:
    """`body` inside loops over `outer`."""
    lines = ["    " * k + f"for {var} in range({n}):" for k, (var, n) in enumerate(outer)]
    return lines + ["    " * len(outer) + line for line in body]


def _dot(lay: _Layout, a: Value, ra: str, b: Value, rb: str, n: int, acc: str) -> list[str]:
    return [f"{acc} = {_F0}",
            f"for e in range({n}):",
            f"    {acc} = {acc} + {lay.load(a, ra, 'e')} * {lay.load(b, rb, 'e')}"]


def _indented(lines: list[str], depth: int = 1) -> list[str]:
    return ["    " * depth + line for line in lines]


# -- forward ------------------------------------------------------------------------

def render_attention(node: Node, names, name: str, params: list[str]) -> KernelCode:
    q, k, v = node.inputs
    out, lse = node.outputs
    lay = _Layout(node, names)
    t, s, d, e, scale = _sizes(node)
    code = KernelCode(name, params, lay.outer + [("r", t), ("c", max(e, 1))],
                      _forward_thread(node, lay), work=prod(q.shape[:-1]) * s * (d + e))
    code.cpu = [f"a_ = np.empty({max(e, 1)}, np.float32)"] + _nest(
        lay.outer + [("r", t)], _forward_row(node, lay))
    return code


def _forward_row(node: Node, lay: _Layout) -> list[str]:
    """CPU: one query row, online softmax: the running max m_, the sum l_ of
    e^(s - m_) and the weighted sum of values a_ rescale when the max grows."""
    q, k, v = node.inputs
    out, lse = node.outputs
    t, s, d, e, scale = _sizes(node)
    return [
        f"m_ = {_NEG_INF}",
        f"l_ = {_F0}",
        f"for c in range({e}):",
        f"    a_[c] = {_F0}",
        f"for j in range({_keys(node, 'r', s)}):",
        *_indented(_dot(lay, q, "r", k, "j", d, "dt_")),
        f"    s_ = dt_ * {scale}",
        "    if s_ > m_:",
        "        al_ = fast_exp32(m_ - s_)",
        "        m_ = s_",
        "        l_ = l_ * al_",
        f"        for c in range({e}):",
        "            a_[c] = a_[c] * al_",
        # while every score so far is -inf, nothing has weight (e^(-inf - -inf) is NaN)
        f"    p_ = fast_exp32(s_ - m_) if m_ != {_NEG_INF} else {_F0}",
        "    l_ = l_ + p_",
        f"    for c in range({e}):",
        f"        a_[c] = a_[c] + p_ * {lay.load(v, 'j', 'c')}",
        *_no_weight(),
        f"for c in range({e}):",
        "    " + lay.store(out, "a_[c] / l_", "r", "c"),
        lay.store(lse, "m_ + math.log(l_)", "r"),
    ]


def _no_weight() -> list[str]:
    # every visible score -inf: NaN, as softmax's 0/0 (the reference's)
    return [f"if l_ == {_F0}:", "    l_ = np.float32(math.nan)"]


def _forward_thread(node: Node, lay: _Layout) -> list[str]:
    """CUDA: output element (r, c): the row's max and sum, then the weighted sum of
    column c of the values (the scores computed twice)."""
    q, k, v = node.inputs
    out, lse = node.outputs
    t, s, d, e, scale = _sizes(node)
    keys = _keys(node, "r", s)
    return [
        f"m_ = {_NEG_INF}",
        f"l_ = {_F0}",
        f"for j in range({keys}):",
        *_indented(_dot(lay, q, "r", k, "j", d, "dt_")),
        f"    s_ = dt_ * {scale}",
        "    if s_ > m_:",
        "        l_ = l_ * math.exp(m_ - s_)",
        "        m_ = s_",
        f"    l_ = l_ + (math.exp(s_ - m_) if m_ != {_NEG_INF} else {_F0})",
        *_no_weight(),
        f"if c < {e}:",
        f"    acc = {_F0}",
        f"    for j in range({keys}):",
        *_indented(_dot(lay, q, "r", k, "j", d, "dt_"), 2),
        f"        p_ = math.exp(dt_ * {scale} - m_) if m_ != {_NEG_INF} else {_F0}",
        f"        acc = acc + p_ * {lay.load(v, 'j', 'c')}",
        "    " + lay.store(out, "acc / l_", "r", "c"),
        "if c == 0:",
        "    " + lay.store(lse, "m_ + math.log(l_)", "r"),
    ]


# -- backward -----------------------------------------------------------------------

def render_attention_backward(node: Node, names, name: str, params: list[str]) -> KernelCode:
    q, k, v = node.inputs[:3]
    lay = _Layout(node, names)
    t, s, d, e, scale = _sizes(node)
    outer = lay.outer + [("r", max(t, s)), ("c", max(d, e, 1))]
    code = KernelCode(name, params, outer, _backward_thread(node, lay),
                      work=prod(q.shape[:-1]) * s * (2 * d + 2 * e))
    code.cpu = [f"g_ = np.empty({max(d, 1)}, np.float32)",
                f"gk_ = np.empty({max(s * d, 1)}, np.float32)",
                f"gv_ = np.empty({max(s * e, 1)}, np.float32)"] + _nest(
        lay.outer, _backward_batch(node, lay))
    return code


def _backward_batch(node: Node, lay: _Layout) -> list[str]:
    """CPU: one batch entry; each visible (query r, key j) pair once: p from the
    scores and the logsumexp, ds = p (dO_r . v_j - delta_r), then dq_r, dk_j and
    dv_j gain their terms (dk and dv summed in f32 scratch, stored at the end)."""
    q, k, v, d_out, lse, delta = node.inputs
    dq, dk, dv = node.outputs
    t, s, d, e, scale = _sizes(node)
    return [
        f"for x_ in range({s * d}):",
        f"    gk_[x_] = {_F0}",
        f"for x_ in range({s * e}):",
        f"    gv_[x_] = {_F0}",
        f"for r in range({t}):",
        f"    ls_ = {lay.load(lse, 'r')}",
        f"    de_ = {lay.load(delta, 'r')}",
        f"    for c in range({d}):",
        f"        g_[c] = {_F0}",
        f"    for j in range({_keys(node, 'r', s)}):",
        *_indented(_dot(lay, q, "r", k, "j", d, "dt_"), 2),
        f"        p_ = fast_exp32(dt_ * {scale} - ls_)",
        *_indented(_dot(lay, d_out, "r", v, "j", e, "dp_"), 2),
        f"        ds_ = p_ * (dp_ - de_) * {scale}",
        f"        for c in range({e}):",
        f"            gv_[j * {e} + c] = gv_[j * {e} + c] + p_ * {lay.load(d_out, 'r', 'c')}",
        f"        for c in range({d}):",
        f"            g_[c] = g_[c] + ds_ * {lay.load(k, 'j', 'c')}",
        f"            gk_[j * {d} + c] = gk_[j * {d} + c] + ds_ * {lay.load(q, 'r', 'c')}",
        f"    for c in range({d}):",
        "        " + lay.store(dq, "g_[c]", "r", "c"),
        f"for j in range({s}):",
        f"    for c in range({d}):",
        "        " + lay.store(dk, f"gk_[j * {d} + c]", "j", "c"),
        f"    for c in range({e}):",
        "        " + lay.store(dv, f"gv_[j * {e} + c]", "j", "c"),
    ]


def _backward_thread(node: Node, lay: _Layout) -> list[str]:
    """CUDA: element (r, c) of dq (query r), dk and dv (key r): each sums over the
    pairs it takes part in, recomputing p and dO . v there."""
    q, k, v, d_out, lse, delta = node.inputs
    dq, dk, dv = node.outputs
    t, s, d, e, scale = _sizes(node)

    def pair(qi: str, kj: str, depth: int) -> list[str]:
        """p_ and ds_ of the pair (query qi, key kj)."""
        return _indented(_dot(lay, q, qi, k, kj, d, "dt_")
                         + [f"p_ = math.exp(dt_ * {scale} - {lay.load(lse, qi)})"]
                         + _dot(lay, d_out, qi, v, kj, e, "dp_")
                         + [f"ds_ = p_ * (dp_ - {lay.load(delta, qi)})"], depth)

    return [
        f"if r < {t} and c < {d}:",
        f"    acc = {_F0}",
        f"    for j in range({_keys(node, 'r', s)}):",
        *pair("r", "j", 2),
        f"        acc = acc + ds_ * {lay.load(k, 'j', 'c')}",
        "    " + lay.store(dq, f"acc * {scale}", "r", "c"),
        f"if r < {s}:",
        f"    acc = {_F0}",
        f"    ac2 = {_F0}",
        f"    for i in range({_queries(node, 'r', t)}):",
        *pair("i", "r", 2),
        f"        if c < {d}:",
        f"            acc = acc + ds_ * {lay.load(q, 'i', 'c')}",
        f"        if c < {e}:",
        f"            ac2 = ac2 + p_ * {lay.load(d_out, 'i', 'c')}",
        f"    if c < {d}:",
        "        " + lay.store(dk, f"acc * {scale}", "r", "c"),
        f"    if c < {e}:",
        "        " + lay.store(dv, "ac2", "r", "c"),
    ]
