"""Render one kernel's body as source lines: a fused elementwise loop (its ops'
`scalar` bodies substituted into one statement each), a fused reduction, or a
structured op through its renderer in `kernels.structured`."""

from __future__ import annotations

import keyword
import math
import re
from math import prod
from typing import NamedTuple

from sexpgpu.kernels.lower import Kernel, KernelPlan
from sexpgpu.kernels.source import (
    ERR,
    MASK_HEX,
    KernelCode,
    Reduction,
    affine,
    broadcast_offset,
    convert,
    literal,
    literal_text,
    load,
    store,
    strides,
)
from sexpgpu.kernels.structured import (
    render_batch_sum_matmul,
    render_matmul_sum,
    render_op,
    render_view_copy,
)
from sexpgpu.kernels.views import View

from sexpgpu.ir.graph import Node, Value
from sexpgpu.ir.ops.registry import get_op
from sexpgpu.ir.shapes import axes as norm_axes

_OPERAND = re.compile(r"\bx(\d+)\b")
_INDEX_VAR = re.compile(r"\bi\d+\b")  # a loop variable of the domain
# the accumulator update of each reduction combine
_COMBINE = {"add": "{acc} + {x}", "mul": "{acc} * {x}", "max": "max({acc}, {x})",
            "min": "min({acc}, {x})"}
# float max/min propagate NaN, as numpy's: max(acc, x) keeps acc when x is NaN
# (numba's max is `x if x > acc else acc`), so the update takes a NaN x itself
# and a NaN acc then stays (no x compares greater than it)
_NAN_COMBINE = {"max": "(max({acc}, {x}) if {x} == {x} else {x})",
                "min": "(min({acc}, {x}) if {x} == {x} else {x})"}
_INT_INIT = {"add": 0, "mul": 1, "max": -(2 ** 63), "min": 2 ** 63 - 1}


# names the generated code itself uses (modules, helpers, loop and temporary
# variables): a buffer named after an IR value never takes one of them
_RESERVED = frozenset(keyword.kwlist) | frozenset({
    "math", "np", "numba", "prange", "cuda", "step", "kernel", "copy_", "index_error",
    "range", "max", "min", "abs", "float", "int", "bool", "lin", "acc", "best", "arg", "inside",
    "ok", "xr", "tid_", "rem_", "err_"})
_LOCAL = re.compile(r"[a-z]{1,2}\d*_?|(?:acc|nan|xr)\d*_?|(?:fast|rng)_\w*|f32_to_bf16|bf16_to_f32")


class Names:
    """Stable names: values numbered in graph order, so the same graph always
    generates the same text (global Value ids differ between processes); buffers
    named after what they hold, for a reader of the step module (a graph input by
    its name, `l1/weight` as `l1_weight`; an output by its name; any other value
    by its op and number, `matmul_15`)."""

    def __init__(self, program: KernelPlan):
        self.program = program
        self.index: dict[Value, int] = {}
        for v in program.graph.inputs:
            self.index[v] = len(self.index)
        for node in program.graph.nodes:
            for v in node.outputs:
                self.index[v] = len(self.index)
        self._buffers = self._buffer_names(program)

    def _buffer_names(self, program: KernelPlan) -> dict[Value, str]:
        outputs: dict[Value, str] = {}
        for name, v in program.graph.outputs.items():
            outputs.setdefault(v, name)
        names: dict[Value, str] = {}
        taken: set[str] = set()
        for v, k in self.index.items():
            if v.node is None:
                text = _identifier(v.name or f"input_{k}", "in_")
            elif v in outputs:
                text = _identifier(outputs[v], "out_")
            else:
                text = f"{v.node.op}_{k}"
            if text in taken:
                text = f"{text}_{k}"
            taken.add(text)
            names[v] = text
        return names

    def base(self, value: Value) -> Value:
        return self.program.base(value)

    def home(self, value: Value) -> Value:
        """The value whose buffer holds `value` (see KernelPlan.home)."""
        return self.program.home(value)

    def buf(self, value: Value) -> str:
        return self._buffers[self.home(value)]

    def var(self, value: Value) -> str:
        return f"v{self.index[value]}"


def _identifier(name: str, prefix: str) -> str:
    """An IR name as a Python identifier that no generated name can shadow."""
    text = re.sub(r"\W+", "_", name).strip("_") or "value"
    if text[0].isdigit() or text in _RESERVED or _LOCAL.fullmatch(text):
        text = prefix + text
    return text


def _template(node: Node) -> str:
    template = get_op(node.op).body(node.attrs)
    if template is None:
        raise NotImplementedError(f"elementwise op {node.op} has no scalar body")
    if "{" not in template:
        return template
    # attrs formatted into a body (full's value) as literals of the output dtype:
    # -inf as -math.inf, an f32 as its shortest decimal
    dtype = node.outputs[0].dtype
    return template.format(**{k: literal_text(v, dtype) if isinstance(v, (bool, int, float))
                              else v for k, v in node.attrs.items()})


def scalar_expr(node: Node, operands: list[str], template: str | None = None) -> str:
    """The op's scalar body with operand expressions in place of x0, x1, ..."""
    if template is None:
        # libm's exp, tanh, erf and log stop a loop vectorising; these forms are equal
        # after rounding to f32 (kernels/mathfn.py)
        template = _template(node).replace("math.tanh(", "fast_tanh(")
        template = template.replace("math.exp(", "fast_exp(")
        template = template.replace("math.erf(", "fast_erf(")
        template = template.replace("math.log(", "fast_log(")
    return _OPERAND.sub(lambda m: f"({operands[int(m.group(1))]})", template)


_FLOAT_LITERAL = re.compile(r"(?<![\w.])(?:\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+)(?![\w.])")
_INT_LITERAL = re.compile(r"(?<![\w.])\d+(?![\w.])")


# a sigmoid of an operand in a template: one f32 helper (its exponential needs no
# subnormal results: `mathfn.exp32_scaled`)
_SIGMOID = re.compile(r"1\.0 / \(1\.0 \+ math\.exp\(-(x\d+)\)\)")


def _f32_template(node: Node, out: Value) -> str | None:
    """The body in f32 arithmetic, for an op whose operands and result are f32 and
    whose body uses only float literals, exp, tanh and erf (gelu, sigmoid, silu, exp,
    tanh, erf): literals as f32 constants, exp, tanh and erf by their f32 helpers. As in
    PyTorch, such an op is then a few f32 ulp from the exact result instead of
    one rounding from an f64 evaluation, and its loop runs 16 lanes instead of 8."""
    if out.dtype != "f32" or any(v.dtype != "f32" for v in node.inputs):
        return None
    body = _SIGMOID.sub(r"fast_sigmoid32(\1)", _template(node)).replace("math.exp(", "fast_exp32(")
    body = body.replace("math.tanh(", "fast_tanh32(").replace("math.erf(", "fast_erf32(")
    if "math." in body or "fast_" not in body \
            or _INT_LITERAL.search(_FLOAT_LITERAL.sub("", body)):
        return None
    return _FLOAT_LITERAL.sub(lambda m: f"np.float32({m.group(0)})", body)


_F32_ONLY = re.compile(r"^[\sx0-9+\-*/()]*$")


def _stays_f32(node: Node, out: Value) -> bool:
    """f32 arithmetic (+ - * / on f32 operands, no literals or calls) is f32 in
    numba already: no conversion call to type."""
    template = get_op(node.op).body(node.attrs) or ""
    return (out.dtype == "f32" and all(v.dtype == "f32" for v in node.inputs)
            and bool(_F32_ONLY.match(template)) and not re.search(r"(?<!x)\d", template))


def _operand(value: Value, op: str, kernel: Kernel, program: KernelPlan, names: Names,
             domain: tuple[int, ...], index: list[str],
             shapes: dict[Value, tuple[int, ...]] | None = None,
             bases: dict[Value, tuple[int, str]] | None = None) -> str:
    """How `op`'s loop reads `value`: a literal, its own variable, or a load (from a
    buffer the loop also stores into, at the stores' base: `_store_bases`)."""
    value = program.source(value)
    base = names.base(value)
    const = program.const(base)
    if const is not None:
        return literal(const.attrs["value"], base.dtype)
    if base in kernel.values:
        return names.var(base)
    view = program.loop_view(value, op)
    if view is not None:
        return load(names.buf(view.root), value.dtype,
                    _view_offset(view, domain, index, (bases or {}).get(view.root)))
    shape = shapes[value] if shapes else value.shape
    if shape == domain and index:
        offset = "lin"
    else:
        offset = broadcast_offset(shape, domain, index)
    return load(names.buf(value), value.dtype, offset)


def _view_offset(view: View, domain: tuple[int, ...], index: list[str],
                 base: tuple[int, str] | None = None) -> str:
    """Where a loop over `domain` finds an element of a strided view read or written
    in place (broadcast, right-aligned, into the domain); a flat loop's index is `lin`.

    The view's offset becomes a kernel argument (the same loop at each time step
    shares one function): masked with MASK_HEX, with the innermost variable (stride
    1) added after the mask, LLVM sees an index that is not negative and steps by
    one, so numba's wraparound test folds away and the loads stay vector loads (the
    hidden-128 LSTM's gates loop ran 1.5x slower unmasked). Given `base` (an offset
    and the variable that holds it: `_store_bases`), the offset is that variable plus
    a literal: views the loop stores into one buffer (a cell's four gate gradients)
    then lie at distances LLVM knows, and their stores vectorise (at four unknown
    offsets it cannot rule out overlap: the loop ran 3x slower)."""
    if len(domain) == 1:
        index = ["lin"]
    lead = len(domain) - len(view.shape)
    terms = [(index[lead + j], st) for j, (d, st) in enumerate(zip(view.shape, view.strides))
             if d != 1]
    at, name = base if base is not None else (view.offset, None)
    inner = terms.pop() if at and terms and terms[-1][1] == 1 else None
    if not at:
        parts = [affine(terms)]
    else:
        start = affine(terms, at) if name is None else affine(terms + [(name, 1)])
        parts = [f"(({start}) & {MASK_HEX})"]
    parts += [f"{view.offset - at:#x}"] if view.offset != at else []
    return " + ".join(parts + ([inner[0]] if inner else []))


def _read(kernel: Kernel, program: KernelPlan, names: Names, members: list[Node]) -> list[Value]:
    """The values the members load from buffers (neither constants nor the loop's own)."""
    out = []
    for node in members:
        for v in node.inputs:
            v = program.source(v)
            base = names.base(v)
            if program.const(base) is None and base not in kernel.values and v not in out:
                out.append(v)
    return out


def _strided(kernel: Kernel, program: KernelPlan) -> bool:
    """Whether the loop reads a strided view where it lies (`KernelPlan.loop_view`)
    or stores a result through one (`KernelPlan.stored_ahead`)."""
    return any(program.loop_view(program.source(v), n.op) is not None
               for n in kernel.nodes for v in n.inputs) or any(
        program.stored_ahead(v, kernel) is not None for v in kernel.values)


class _Joined(NamedTuple):
    """A loop nest with adjacent axes joined (`_collapsed`): its axes, the reduced
    ones among them, and each operand's shape over them."""

    domain: tuple[int, ...]
    axes: tuple[int, ...]
    shapes: dict[Value, tuple[int, ...]]


def _collapsed(domain: tuple[int, ...], axes: tuple[int, ...], read: list[Value]
               ) -> _Joined | None:
    """The loop nest with adjacent axes joined where both are reduced (in `axes`) or
    both kept, and every operand walks along all of them or is broadcast over all of
    them, an axis of 1 joining either way (a bias (C, 1, 1) over N C H W: H and W
    one axis of H*W; a bias gradient's sum over N, H and W: H and W one reduced
    axis); None when no two axes join. Why: innermost loops of 14 or 28 ran 16-lane
    vectors once and the rest scalar (a 2-d CNN's relu, max-pool and bias-gradient
    loops: 0.62 -> 0.24 and 0.83 -> 0.40 ms)."""
    rank = len(domain)
    aligned = {v: (1,) * (rank - len(v.shape)) + v.shape for v in read}

    def kind(s: tuple[int, ...], d: int) -> str:
        """How an operand walks axis d: along it, broadcast over it, or either (an
        axis of 1)."""
        return "either" if domain[d] == 1 else ("along" if s[d] == domain[d] else "over")

    groups = [[0]]
    held = {v: kind(s, 0) for v, s in aligned.items()}  # each operand's, in the group
    for d in range(1, rank):
        kinds = {v: kind(s, d) for v, s in aligned.items()}
        if (d in axes) == (d - 1 in axes) and \
                all("either" in (held[v], k) or held[v] == k for v, k in kinds.items()):
            groups[-1].append(d)
            held = {v: k if held[v] == "either" else held[v] for v, k in kinds.items()}
        else:
            groups.append([d])
            held = kinds
    if len(groups) == rank:
        return None
    return _Joined(tuple(prod(domain[d] for d in g) for g in groups),
                   tuple(k for k, g in enumerate(groups) if g[0] in axes),
                   {v: tuple(prod(s[d] for d in g) for g in groups) for v, s in aligned.items()})


def _statements(kernel: Kernel, program: KernelPlan, names: Names, index: list[str],
                members: list[Node], domain: tuple[int, ...] | None = None,
                shapes: dict[Value, tuple[int, ...]] | None = None) -> list[str]:
    """One assignment per member node, then the stores of values read elsewhere
    (over `domain` with operands of `shapes`: a joined loop nest, `_collapsed`)."""
    bases = _store_bases(kernel, program)
    lines = [f"{name} = {at}" for at, name in bases.values() if at]
    for node in members:
        operands = [_operand(v, node.op, kernel, program, names, domain or kernel.domain,
                             index, shapes, bases)
                    for v in node.inputs]
        out = node.outputs[0]
        f32_body = _f32_template(node, out)
        expr = scalar_expr(node, operands, f32_body)
        if out.dtype == "bf16":
            # a bf16 value is rounded where it is made, even if it never leaves the loop
            expr = f"bf16_to_f32(f32_to_bf16({expr}))"
        elif f32_body is None and not _stays_f32(node, out):
            expr = convert(out.dtype, expr)
        lines.append(f"{names.var(out)} = {expr}")
        ahead = program.stored_ahead(out, kernel)
        if ahead is not None:  # into the concat's buffer it is part of
            lines.append(store(names.buf(ahead.root), out.dtype,
                               _view_offset(ahead, domain or kernel.domain, index,
                                            bases[ahead.root]),
                               names.var(out)))
        elif out in kernel.outputs:
            lines.append(store(names.buf(out), out.dtype, "lin", names.var(out)))
    return lines


def _store_bases(kernel: Kernel, program: KernelPlan) -> dict[Value, tuple[int, str]]:
    """For each buffer the loop stores results into through views, the smallest
    offset of those views and of the views it reads there, and the variable that
    holds it (`_view_offset`'s base: one kernel argument, however many views). Reads
    count too: a loop that reads one time step's slot of a stack and stores the next
    step's (a GRU's hidden state) then has both at a distance LLVM knows; at two
    unknown offsets in one buffer it tested them for overlap at run time, and the
    64-unit GRU's gates loop ran 1.3x slower."""
    views = [program.stored_ahead(v, kernel) for v in kernel.values]
    stored = {view.root for view in views if view is not None}
    views += [program.loop_view(program.source(v), node.op)
              for node in kernel.nodes for v in node.inputs]
    bases: dict[Value, int] = {}
    for view in views:
        if view is not None and view.root in stored:
            bases[view.root] = min(bases.get(view.root, view.offset), view.offset)
    return {root: (at, f"at{k}_") for k, (root, at) in enumerate(bases.items())}


def _linear(index: list[str], shape: tuple[int, ...]) -> str:
    return affine(list(zip(index, strides(shape))))


# a call of a math function (an exponential, erf, a square root) counts as this many
# element-operations (the polynomials of kernels/mathfn.py) in the parallel decision.
# Its loop is compute-bound: the threads split arithmetic, not memory that one core's
# cache holds, so it pays for them well below a memory-bound loop's size. At 128 the
# LSTM's gates loop at 128 units (12800 units x 5 calls, 50 us on one thread, 29 us on
# two: the step 0.8 ms faster) is shared, at 64 units (25 us, no faster shared) is
# not; at 16 neither was. No benchmark model's loops change (their math loops are
# either that small or already shared).
CALL_WORK = 128
_CALL = re.compile(r"\b(?:math\.\w+|fast_\w+|np\.(?:exp|log|tanh|sqrt|power|sin|cos))\(")


def _work(domain: tuple[int, ...], nodes: int, body: list[str]) -> int:
    """A loop kernel's element-operations, for the CPU's parallel decision."""
    calls = sum(len(_CALL.findall(line)) for line in body)
    return prod(domain) * (nodes + CALL_WORK * calls)


def render_loop(kernel: Kernel, program: KernelPlan, names: Names, name: str,
                params: list[str]) -> KernelCode:
    domain = kernel.domain
    index = [f"i{d}" for d in range(len(domain))]
    members = [n for n in kernel.nodes if n not in kernel.reductions]
    body = _statements(kernel, program, names, index, members)
    if kernel.reduce is None and (not _INDEX_VAR.search("\n".join(body)) or len(domain) <= 1):
        # every operand is read at the loop's own position: one flat loop
        return KernelCode(name, params, [("lin", prod(domain))], body,
                          work=_work(domain, len(members), body))
    axes = () if kernel.reduce is None else norm_axes(kernel.reduce.attrs.get("axes"),
                                                       len(domain))
    # a view read or written in place keeps the loop's axes: its strides join none
    loop = (None if _strided(kernel, program)
            else _collapsed(domain, axes, _read(kernel, program, names, kernel.nodes))) \
        or _Joined(domain, axes, {})
    if loop.domain != domain:
        index = index[:len(loop.domain)]
        body = _statements(kernel, program, names, index, members, loop.domain, loop.shapes)
    if kernel.reduce is None:
        return KernelCode(name, params, [(i, d) for i, d in zip(index, loop.domain)],
                          [f"lin = {_linear(index, loop.domain)}"] + body,
                          work=_work(domain, len(members), body))
    return _render_reduce(kernel, program, names, name, params, loop, index, body)


def _render_reduce(kernel: Kernel, program: KernelPlan, names: Names, name: str,
                   params: list[str], loop: _Joined, index: list[str],
                   body: list[str]) -> KernelCode:
    """The loop nest over the reduced axes inside one thread per kept point, one
    accumulator per reduction (the kernel's and its siblings')."""
    domain, axes = loop.domain, loop.axes
    kept = [i for d, i in enumerate(index) if d not in axes]
    kept_shape = tuple(n for d, n in enumerate(domain) if d not in axes)
    out_at = _linear(kept, kept_shape)
    inner = [f"lin = {_linear(index, domain)}"] + body
    start, finish, cpu_start, cpu_updates = [], [], [], []
    accs = []
    for k, node in enumerate(kernel.reductions):
        acc, nan, xr = ("acc", "nan_", "xr") if k == 0 else (f"acc{k}", f"nan{k}_", f"xr{k}")
        x, out = node.inputs[0], node.outputs[0]
        combine = get_op(node.op).extra["combine"]
        init = get_op(node.op).extra["init"] if out.dtype in ("f32", "bf16") \
            else _INT_INIT[combine]
        value = _operand(x, node.op, kernel, program, names, domain, index, loop.shapes)
        # a float max/min notes a NaN in a flag beside its plain max (numpy's max is
        # NaN then): the or-reduction and the max both vectorise, where a select on
        # each element (_NAN_COMBINE) ran the row max of a softmax 1.8x slower
        nan_flag = combine in _NAN_COMBINE and out.dtype in ("f32", "bf16")
        if nan_flag:
            inner += [f"{xr} = {value}", f"{acc} = {_COMBINE[combine].format(acc=acc, x=xr)}",
                      f"{nan} = {nan} or {xr} != {xr}"]
            start += [f"{acc} = {literal(init, out.dtype)}", f"{nan} = False"]
            finish += [f"if {nan}:", f"    {acc} = {literal(math.nan, out.dtype)}"]
        else:
            inner += [f"{acc} = {_COMBINE[combine].format(acc=acc, x=value)}"]
            start += [f"{acc} = {literal(init, out.dtype)}"]
        finish.append(store(names.buf(out), out.dtype, out_at, acc))
        accs.append((acc, nan if nan_flag else None, combine, out.dtype))
        # the CPU walk of leading axes below accumulates in the output itself
        o = names.buf(out)
        update = (_NAN_COMBINE if nan_flag else _COMBINE)[combine].format(
            acc=f"{o}[{out_at}]", x=value)
        cpu_start.append(f"    {o}[o] = {literal(init, out.dtype)}")
        cpu_updates.append(f"{o}[{out_at}] = {convert(out.dtype, update)}")
    reduced = [(index[a], domain[a]) for a in axes]
    if not kept and not _INDEX_VAR.search("\n".join(inner[1:])):
        # a whole tensor summed where it lies (a gradient's squared norm, a loss's
        # mean): one loop over its elements, in the same order, so that the same
        # sum over tensors of other shapes can share one function (kernels.codegen)
        reduced, inner = [("lin", prod(domain))], inner[1:]
    lines = list(start)
    for depth, (var, size) in enumerate(reduced):
        lines.append("    " * depth + f"for {var} in range({size}):")
    lines += ["    " * len(reduced) + line for line in inner] + finish
    code = KernelCode(name, params, [(i, domain[d]) for d, i in enumerate(index)
                                     if d not in axes],
                      lines, work=_work(domain, len(kernel.nodes), inner),
                      domain_size=prod(domain))
    code.reduction = Reduction(reduced, start, inner, finish, accs)
    if kept and max(axes) < min(d for d in range(len(domain)) if d not in axes) \
            and all(n.outputs[0].dtype != "bf16" for n in kernel.reductions):
        # reducing leading axes (a bias gradient): on the CPU walk the input
        # row-major and accumulate into the output, instead of striding down columns
        cpu = [f"for o in range({prod(kept_shape)}):"] + cpu_start
        loops = [(index[d], domain[d]) for d in range(len(domain))]
        for depth, (var, size) in enumerate(loops):
            cpu.append("    " * depth + f"for {var} in range({size}):")
        cpu += ["    " * len(loops) + line for line in [inner[0]] + body + cpu_updates]
        code.cpu = cpu
    return code


def render(kernel: Kernel, program: KernelPlan, names: Names, name: str) -> KernelCode:
    """The source of `kernel`, parameters being its input then output buffers."""
    # an in-place update reads and stores one buffer: one parameter, so that LLVM
    # sees a single array (two that may overlap stop it vectorising)
    params = list(dict.fromkeys([names.buf(v) for v in kernel.inputs]
                                + [names.buf(v) for v in kernel.outputs]))
    if kernel.view is not None:
        code = render_view_copy(kernel.nodes[0], kernel.view, names, name, params)
    elif kernel.kind == "loop":
        code = render_loop(kernel, program, names, name, params)
    elif kernel.nodes[-1].op == "add":  # a sum of matmuls (`_Grouper.plan_sums`)
        code = render_matmul_sum([n for n in kernel.nodes if n.op == "matmul"],
                                 kernel.nodes[-1].outputs[0], names, name, params)
    elif len(kernel.nodes) == 2:
        code = render_batch_sum_matmul(kernel.nodes[0], kernel.nodes[1], names, name, params)
    else:
        code = render_op(kernel.nodes[0], names, name, params)
    if code.index_checks:
        code.params.append(ERR)  # the step's error buffer, last
    code.comment = [f"{n.op} at {n.span}" if n.span else n.op for n in kernel.nodes]
    code.reads = [names.buf(v) for v in kernel.inputs]
    code.writes = [names.buf(v) for v in kernel.outputs]
    return code
