"""`(scan fn init xs &key (axis 1) reverse)`: a recurrence over the steps of xs. Each
step calls `(fn carry x)` with x the step's slice of xs (that axis dropped) and takes
the carry fn returns for the next; scan returns the first tensor of each step's carry
stacked along `axis` in time order (an RNN's hidden states), and the last carry as
its second value.

fn is traced once, at the first step, and its nodes are copied for the others, as
JAX's `lax.scan` traces its body once: an unrolled GRU's check traced the same cell
80 times. The copy is the graph tracing again would have made (the same ops on the
same types), except that nodes not depending on the carry or the step's input
(a transposed weight, a constant) are made once and shared. Lisp side effects of fn
(printing, setting outer variables) therefore happen once; a body that draws random
numbers (dropout: a stream per call) or records a metric is traced at every step,
and a step whose carry holds one tensor twice (h0 = c0) is traced, not recorded."""

from __future__ import annotations

from typing import Any

from sexpgpu.diagnostics import Note, define_code, error
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph, Node, Value
from sexpgpu.lisp.types import MV, NIL, Symbol, keyword, lisp_list, to_py
from sexpgpu.trace import args as A
from sexpgpu.trace.builtins import dispatch
from sexpgpu.trace.tensor import Site, Trace, TracedTensor, current, site

E_SCAN = define_code(
    "E-SCAN", "scan's step function changed the carry",
    "`(scan fn init xs)` calls `(fn carry x)` at every step of xs and passes what fn "
    "returns on as the next carry, so fn must return a carry of the same form as INIT: "
    "a tensor of the same shape and dtype, or a list of as many tensors, each of the "
    "same shape and dtype as INIT's. XS must have at least one step along :axis.",
)

Carry = Any  # a TracedTensor or a Lisp list of them


def scan(interp: Any, fn: Any, init: Carry, xs: Any, *options: Any) -> MV:
    """(scan fn init xs &key (axis 1) reverse): (fn carry x) over the steps of xs;
    the first tensor of each step's carry stacked along axis in time order, and the
    last carry as a second value."""
    _, kw = A.split("scan", options, ("axis", "reverse"), max_pos=0)
    axis = A.integer("scan", kw.get("axis", 1), ":axis")
    reverse = A.flag(kw.get("reverse", NIL))
    trace = current("scan")
    call = site()  # after fn has run, the site is the last form it evaluated
    if isinstance(fn, Symbol) and not fn.is_keyword and fn is not NIL:
        fn = interp.function_of(fn, None, call[0])  # a function designator, as funcall's
    if not A.is_function(fn):
        raise A.fail("scan: the step function is not a function",
                     expected="a function of (carry x)", actual=A.show(fn),
                     fix="(scan (lambda (h x) ...) h0 xs)")
    kinds = _carry_types(init, "INIT", call)
    steps = _steps(xs, axis)
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    carry, outs, recorded = init, [], None
    for t in order:
        x = _step_input(trace.graph, xs, axis, t, call)
        if recorded is None:
            carry, recorded = _traced_step(interp, trace, fn, carry, x, kinds, call)
        else:
            carry = recorded.replay(trace.graph, carry, x)
        outs.append(_first(carry))
    stacked = dispatch("stack", (lisp_list(outs[::-1] if reverse else outs),
                                 keyword("AXIS"), axis))
    return MV([stacked, carry])


class _Recording:
    """The nodes of a step that depend on its carry or input (`inputs`), and the
    carry they produced: replayed for each later step on that step's values."""

    def __init__(self, nodes: list[Node], inputs: list[Value], out: Carry):
        self.nodes, self.inputs, self.out = nodes, inputs, out

    def replay(self, g: Graph, carry: Carry, x: TracedTensor) -> Carry:
        return _mapped(self.out, g.replay(self.nodes, zip(self.inputs, _values(carry, x))))


def _traced_step(interp: Any, trace: Trace, fn: Any, carry: Carry, x: TracedTensor,
                 kinds: list[tuple], call: Site) -> tuple[Carry, _Recording | None]:
    """Call fn on (carry x) and check the carry it returns; with the recording of its
    nodes when they can be copied for the next step, else None (trace it again)."""
    g = trace.graph
    start, before = len(g.nodes), _effects(trace)
    out = interp.apply(fn, [carry, x])
    if type(out) is MV:
        out = out[0] if out else NIL
    returned, _ = site()
    got = _carry_types(out, "the carry fn returns", call)
    if got != kinds:
        raise _fail("scan: the step function returned a carry unlike INIT",
                    _show_kinds(kinds), _show_kinds(got), _CARRY_FIX, call,
                    Note("the step function returned it here", returned))
    nodes = g.nodes[start:]
    if _effects(trace) != before or any(build.draws(n) for n in nodes):
        return out, None
    inputs = _values(carry, x)
    # one value twice in the carry (h0 = c0 = zeros): a copy could not tell its uses apart
    if len({v.id for v in inputs}) < len(inputs):
        return out, None
    return out, _Recording(_dependent(nodes, inputs), inputs, out)


def _dependent(nodes: list[Node], inputs: list[Value]) -> list[Node]:
    """The nodes reading (through others) one of the step's `inputs`: the rest
    compute the same value at every step, and later steps share them."""
    reached = {v.id for v in inputs}
    out = []
    for node in nodes:
        for v in node.inputs:
            if v.id in reached:
                out.append(node)
                reached.update(o.id for o in node.outputs)
                break
    return out


def _effects(trace: Trace) -> tuple:
    """What a step can change besides adding nodes (a metric, a random stream, a
    graph output or update): a step that changed any is traced again, not copied."""
    g = trace.graph
    return (len(trace.metrics), trace.streams, len(g.outputs),
            tuple(map(id, g.updates.values())))


# -- the carry and the steps -----------------------------------------------------------

def _values(carry: Carry, x: TracedTensor) -> list[Value]:
    """The IR values a step reads: the carry's tensors, then its input."""
    tensors = [carry] if isinstance(carry, TracedTensor) else to_py(carry)
    return [t.value for t in (*tensors, x)]


def _carry_types(carry: Any, what: str, call: Site) -> list[tuple]:
    """(shape, dtype) of each tensor of a carry; E-SCAN unless it is a tensor or a
    non-empty list of tensors."""
    if isinstance(carry, TracedTensor):
        return [(carry.shape, carry.dtype)]
    items = to_py(carry)
    if not items or not all(isinstance(x, TracedTensor) for x in items):
        raise _fail(f"scan: {what} is not a tensor or a list of tensors",
                    "a tensor, or a list of tensors", A.show(carry), _CARRY_FIX, call)
    return [(x.shape, x.dtype) for x in items]


def _show_kinds(kinds: list[tuple]) -> str:
    shown = [f"{dtype} ({' '.join(map(str, shape))})" for shape, dtype in kinds]
    return shown[0] if len(shown) == 1 else "(" + ", ".join(shown) + ")"


def _mapped(carry: Carry, mapping: dict[int, Value]) -> Carry:
    if isinstance(carry, TracedTensor):
        return TracedTensor(mapping.get(carry.value.id, carry.value))
    return lisp_list([_mapped(x, mapping) for x in to_py(carry)])


def _first(carry: Carry) -> TracedTensor:
    return carry if isinstance(carry, TracedTensor) else carry.car


def _steps(xs: Any, axis: int) -> int:
    if not isinstance(xs, TracedTensor):
        raise A.fail("scan: XS is not a tensor", expected="a tensor with a time axis",
                     actual=A.show(xs), fix="pass the sequence as a tensor, e.g. (B T I)")
    rank = len(xs.shape)
    if not -rank <= axis < rank or xs.shape[axis] == 0:
        raise _fail(f"scan: XS has no steps along :axis {axis}",
                    f"at least one step along axis {axis}",
                    f"{xs.dtype} ({' '.join(map(str, xs.shape))})",
                    "name XS's time axis with :axis (1 for (B T I)); it must not be empty",
                    site())
    return xs.shape[axis]


def _step_input(g: Graph, xs: TracedTensor, axis: int, t: int, call: Site) -> TracedTensor:
    """Step t of xs, the axis dropped: the slice and reshape `(reshape (slice xs :axis
    AXIS :start t :end (1+ t)) ...)` makes, built here at the scan call's line (through
    the Lisp builtins they were a fifth of a GRU's check)."""
    span, notes = call
    if span is None:  # no site to give (the span the caller set stays)
        return _sliced(g, xs, axis, t)
    with g.at(span, notes):
        return _sliced(g, xs, axis, t)


def _sliced(g: Graph, xs: TracedTensor, axis: int, t: int) -> TracedTensor:
    part = build.slice_axis(g, xs.value, axis, t, t + 1)
    shape = tuple(d for i, d in enumerate(xs.shape) if i != axis % len(xs.shape))
    return TracedTensor(g.apply("reshape", part, shape=shape))


_CARRY_FIX = ("return a carry of the same form as INIT: the same number of tensors, each "
              "of the same shape and dtype")


def _fail(message: str, expected: str, actual: str, fix: str, where: Site,
          *more: Note) -> Exception:
    span, notes = where
    return error(E_SCAN, message, span, expected=expected, actual=actual, fix=fix,
                 notes=[*more, *notes])
